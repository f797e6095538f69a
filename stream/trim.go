package stream

import (
	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/radix"
)

// Delete removes the live entry id (XDEL) and reports whether there was
// one. The entry is flagged deleted in its node; a node left without
// live entries is removed from the tree.
func (s *Stream) Delete(id ID) bool {
	if !s.deleteEntry(id) {
		return false
	}
	if id.Compare(s.maxDeletedID) > 0 {
		s.maxDeletedID = id
	}
	s.fixFirst(id)
	return true
}

// fixFirst updates the first ID after the entry id was deleted.
func (s *Stream) fixFirst(id ID) {
	if s.length == 0 {
		s.firstID = ID{}
	} else if id == s.firstID {
		s.firstID, _ = s.edgeID(false, false)
	}
}

// deleteEntry flags the live entry id deleted (removing its node if it
// was the node's last live entry) and counts it out of the length.
func (s *Stream) deleteEntry(id ID) bool {
	k := id.Key()
	rit := s.rax.Seek(radix.LE, k[:])
	if !rit.Next() {
		return false
	}
	key := append([]byte(nil), rit.Key()...)
	n := rit.Value()
	off, flags, ok := findEntry(n, IDFromKey(key), id)
	if !ok {
		return false
	}
	s.markDeleted(key, n, off, flags, 1)
	s.length--
	return true
}

// findEntry returns the offset and flags of live entry id in node n.
func findEntry(n *node, mid, id ID) (off int, flags int64, ok bool) {
	m := readMaster(n.lp)
	for p := m.firstOff; p >= 0; {
		e := readEntry(n.lp, p, mid, &m)
		switch c := e.id.Compare(id); {
		case c > 0:
			return 0, 0, false
		case c == 0:
			return p, e.flags, !e.deleted()
		}
		p = e.nextOff(n.lp)
	}
	return 0, 0, false
}

// markDeleted flags the entry at off (whose flags are flags) deleted and
// moves it from the node's live count to its deleted count; when that
// was the node's last live entry, the node is removed instead.
func (s *Stream) markDeleted(key []byte, n *node, off int, flags int64, count int64) {
	m := readMaster(n.lp)
	if m.live <= count {
		s.removeNode(key, n)
		return
	}
	n = s.edit(key, n)
	lp := n.lp.ReplaceInt(off, flags|flagDeleted)
	s.setLP(n, setCounts(lp, m.live-count, m.deleted+count))
}

// setCounts rewrites a node's live and deleted counts.
func setCounts(lp listpack.Listpack, live, deleted int64) listpack.Listpack {
	p := lp.First()
	lp = lp.ReplaceInt(p, live)
	return lp.ReplaceInt(lp.Next(p), deleted)
}

func (s *Stream) removeNode(key []byte, n *node) {
	s.rax.Delete(key)
	s.nodeBytes -= int64(cap(n.lp)) + nodeOverhead
	s.forgetTail(n)
}

// edgeID returns the first (or, with last, the last) entry's ID, skipping
// deleted entries unless tombstones is set; ok is false when there is
// none.
func (s *Stream) edgeID(last, tombstones bool) (ID, bool) {
	it := s.Range(MinID, MaxID, last)
	if tombstones {
		it.IncludeDeleted()
	}
	if !it.Next() {
		return ID{}, false
	}
	defer it.Close()
	return it.ID(), true
}

// LastEntryID returns the ID of the last live entry; ok is false when the
// stream is empty.
func (s *Stream) LastEntryID() (ID, bool) { return s.edgeID(true, false) }

// FirstEntryID returns the ID of the first entry, counting deleted ones
// still stored in a node when tombstones is set; ok is false if none.
func (s *Stream) FirstEntryID(tombstones bool) (ID, bool) { return s.edgeID(false, tombstones) }

// Strategy selects how Trim picks entries to remove.
type Strategy uint8

// Trim strategies.
const (
	TrimNone   Strategy = iota
	TrimMaxLen          // keep at most MaxLen entries
	TrimMinID           // remove entries with IDs below MinID
)

// Trim says what to trim (XTRIM and XADD's MAXLEN/MINID options).
type Trim struct {
	Strategy Strategy
	MaxLen   uint64
	MinID    ID
	// Approx removes whole nodes only ("~"): it stops at the first node
	// it cannot remove entirely, leaving a few entries more than asked.
	Approx bool
	// Limit stops trimming before it removes more than Limit entries; 0
	// means no limit. Redis checks it node by node.
	Limit int64
	// Refs says what happens to PEL references to trimmed entries (XADD
	// and XTRIM KEEPREF, DELREF, ACKED). With no groups all three trim
	// alike.
	Refs RefPolicy
}

// Trim removes entries from the head of the stream as t says and returns
// how many it removed. Whole nodes go first; with Approx that is all, or
// else the entries of the last node reached are flagged deleted one by
// one.
func (s *Stream) Trim(t Trim) int64 {
	switch {
	case t.Strategy == TrimNone:
		return 0
	case t.Refs == Acked && s.groups.Len() > 0:
		return s.trimAcked(&t)
	}
	s.dropRefs = t.Refs == DelRef && !s.pelsEmpty()
	defer func() { s.dropRefs = false }()
	if s.scan == nil {
		s.scan = s.rax.Seek(radix.First, nil)
	} else {
		s.scan.Seek(radix.First, nil)
	}
	var removed int64
	for s.scan.Next() {
		if t.Strategy == TrimMaxLen && s.length <= t.MaxLen {
			break
		}
		done, n := s.trimNode(&t, removed)
		removed += n
		if done {
			break
		}
	}
	if s.length == 0 {
		s.firstID = ID{}
	} else if removed > 0 {
		s.firstID, _ = s.edgeID(false, false)
	}
	return removed
}

// trimNode trims the node s.scan is on: it removes it whole if it may,
// else (unless approximate) deletes entries inside it. It returns the
// number removed and whether trimming is over.
func (s *Stream) trimNode(t *Trim, removed int64) (done bool, n int64) {
	key, nd := s.scan.Key(), s.scan.Value()
	m := readMaster(nd.lp)
	if t.Limit > 0 && removed+m.live > t.Limit {
		return true, 0
	}
	mid := IDFromKey(key)
	var whole bool
	if t.Strategy == TrimMaxLen {
		whole = s.length-uint64(m.live) >= t.MaxLen
	} else {
		last, _ := lastEntryID(nd.lp, mid)
		whole = last.Less(t.MinID)
	}
	if whole {
		if s.dropRefs {
			eachLive(nd, mid, func(id ID) { s.DropRefs(id) })
		}
		s.length -= uint64(m.live)
		s.removeNode(append([]byte(nil), key...), nd)
		return false, m.live
	}
	if t.Approx {
		return true, 0
	}
	return true, s.trimInside(append([]byte(nil), key...), nd, mid, t)
}

// trimInside flags deleted the live entries at the head of node nd that
// the trim wants gone, and returns how many.
func (s *Stream) trimInside(key []byte, nd *node, mid ID, t *Trim) int64 {
	nd = s.edit(key, nd)
	lp := nd.lp
	m := readMaster(lp)
	var n int64
	for p := m.firstOff; p >= 0; {
		e := readEntry(lp, p, mid, &m)
		if t.Strategy == TrimMaxLen && s.length <= t.MaxLen ||
			t.Strategy == TrimMinID && e.id.Compare(t.MinID) >= 0 {
			break
		}
		next := e.nextOff(lp)
		if !e.deleted() {
			// Flags are small integers: the rewrite keeps every offset.
			lp = lp.ReplaceInt(p, e.flags|flagDeleted)
			n++
			s.length--
			if s.dropRefs {
				s.DropRefs(e.id)
			}
		}
		p = next
	}
	// Like Redis, a node emptied here stays (with only tombstones) until
	// a later trim or add moves past it.
	s.setLP(nd, setCounts(lp, m.live-n, m.deleted+n))
	return n
}

// eachLive calls fn with the ID of every live entry of node nd, whose
// master ID is mid, in order.
func eachLive(nd *node, mid ID, fn func(ID)) {
	m := readMaster(nd.lp)
	for p := m.firstOff; p >= 0; {
		e := readEntry(nd.lp, p, mid, &m)
		if !e.deleted() {
			fn(e.id)
		}
		p = e.nextOff(nd.lp)
	}
}

// trimAcked trims as t says, but only entries no consumer group still
// needs (ACKED): an entry some group has not yet been delivered, or holds
// in its PEL, is kept, and trimming goes on past it. An approximate trim
// removes whole nodes only, so it stops at the first node holding such an
// entry. Trimming never moves the max deleted ID, except where skipping
// a kept entry leaves a gap behind it: that is a deletion inside the
// stream, which lag must know about.
func (s *Stream) trimAcked(t *Trim) int64 {
	var removed int64
	if t.Approx {
		removed = s.trimAckedNodes(t)
	} else {
		kept := false
		for _, id := range s.trimCandidates(t) {
			if s.Referenced(id) {
				kept = true
				continue
			}
			s.deleteEntry(id)
			removed++
			if kept && id.Compare(s.maxDeletedID) > 0 {
				s.maxDeletedID = id
			}
		}
	}
	if s.length == 0 {
		s.firstID = ID{}
	} else if removed > 0 {
		s.firstID, _ = s.edgeID(false, false)
	}
	return removed
}

// trimCandidates lists the live entries an exact trim would remove.
func (s *Stream) trimCandidates(t *Trim) []ID {
	var ids []ID
	it := s.Range(MinID, MaxID, false)
	defer it.Close()
	switch t.Strategy {
	case TrimMaxLen:
		for n := int64(s.length) - int64(min(t.MaxLen, s.length)); n > 0 && it.Next(); n-- {
			ids = append(ids, it.ID())
		}
	case TrimMinID:
		for it.Next() && it.ID().Less(t.MinID) {
			ids = append(ids, it.ID())
		}
	}
	return ids
}

// trimAckedNodes removes whole nodes from the head while a KEEPREF trim
// would and none of their live entries is referenced.
func (s *Stream) trimAckedNodes(t *Trim) int64 {
	var removed int64
	for {
		key, nd, ok := s.rax.Min()
		if !ok {
			return removed
		}
		m := readMaster(nd.lp)
		if t.Limit > 0 && removed+m.live > t.Limit {
			return removed
		}
		mid := IDFromKey(key)
		var whole bool
		if t.Strategy == TrimMaxLen {
			whole = s.length-uint64(m.live) >= t.MaxLen
		} else {
			last, _ := lastEntryID(nd.lp, mid)
			whole = last.Less(t.MinID)
		}
		referenced := false
		if whole {
			eachLive(nd, mid, func(id ID) { referenced = referenced || s.Referenced(id) })
		}
		if !whole || referenced {
			return removed
		}
		s.length -= uint64(m.live)
		removed += m.live
		s.removeNode(append([]byte(nil), key...), nd)
	}
}
