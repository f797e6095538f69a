package stream

import (
	"github.com/redstream/redstream/radix"
)

// The stream side of consumer groups: the groups by name, delivery of new
// entries (which moves a group's last ID and read counter), lag, and what
// deleting an entry does to the PELs that reference it.

// NumGroups returns the number of consumer groups.
func (s *Stream) NumGroups() int { return s.groups.Len() }

// Group returns the group called name, or nil.
func (s *Stream) Group(name []byte) *Group {
	g, _ := s.groups.Get(name)
	return g
}

// EachGroup calls fn for each group in name order until it returns false.
func (s *Stream) EachGroup(fn func(*Group) bool) {
	for _, g := range s.groups.All() {
		if !fn(g) {
			return
		}
	}
}

// CreateGroup adds a group whose last delivered ID is last and whose read
// counter is entriesRead (InvalidEntriesRead when unknown). Like Redis
// 8, a counter above the entries ever added is lowered to that number.
func (s *Stream) CreateGroup(name []byte, last ID, entriesRead int64) (*Group, error) {
	if s.Group(name) != nil {
		return nil, ErrGroupExists
	}
	g := &Group{name: append([]byte(nil), name...), lastID: last, entriesRead: s.capRead(entriesRead)}
	s.groups.Insert(g.name, g)
	s.hadGroups = true
	return g, nil
}

func (s *Stream) capRead(n int64) int64 {
	if n != InvalidEntriesRead && uint64(n) > s.entriesAdded {
		return int64(s.entriesAdded)
	}
	return n
}

// DestroyGroup removes the group called name and reports whether it
// existed.
func (s *Stream) DestroyGroup(name []byte) bool {
	_, ok := s.groups.Delete(name)
	return ok
}

// SetGroupID moves a group's last delivered ID (XGROUP SETID) and sets
// its read counter, capped as in CreateGroup.
func (s *Stream) SetGroupID(g *Group, last ID, entriesRead int64) {
	g.lastID, g.entriesRead = last, s.capRead(entriesRead)
}

// Has reports whether a live entry id is in the stream.
func (s *Stream) Has(id ID) bool {
	k := id.Key()
	rit := s.rax.Seek(radix.LE, k[:])
	if !rit.Next() {
		return false
	}
	_, _, ok := findEntry(rit.Value(), IDFromKey(rit.Key()), id)
	return ok
}

// Deliver records that entry id, newer than the group's last delivered
// ID or not, was read by consumer c at now through XREADGROUP ">": the
// group's last ID and read counter move past it, and unless noack it goes
// into the PELs (taken from its former owner if the group's last ID had
// been moved back) with one delivery.
func (s *Stream) Deliver(g *Group, c *Consumer, id ID, now int64, noack bool) {
	if id.Compare(g.lastID) > 0 {
		switch {
		case g.entriesRead != InvalidEntriesRead && g.lastID.Compare(s.firstID) >= 0 && !s.tombstonesFrom(g.lastID):
			// Nothing deleted or trimmed away past the old last ID: one
			// more read. (A group left behind the first entry by a trim
			// counts its reads afresh, as Redis 8 does.)
			g.entriesRead++
		case s.entriesAdded != 0:
			g.entriesRead = s.EstimateEntriesRead(id)
		}
		g.lastID = id
	}
	if noack {
		return
	}
	g.deliver(c, id, now)
	c.active = now
}

// tombstonesFrom reports whether an entry at or after start may have been
// deleted: whether start <= the max deleted ID of a non-empty stream.
func (s *Stream) tombstonesFrom(start ID) bool {
	return s.length > 0 && !s.maxDeletedID.IsZero() && start.Compare(s.maxDeletedID) <= 0
}

// EstimateEntriesRead returns the logical read counter of id — how many
// entries precede it and it, counting from the first entry ever added —
// when the counters allow knowing it, else InvalidEntriesRead. It is
// known for the last ID, for IDs before the first entry and for the first
// entry itself when no deletion fragments the stream, and for an empty
// stream. Loading a file older than the read counters (RDB stream
// version 1) gives each group this estimate, as Redis does.
func (s *Stream) EstimateEntriesRead(id ID) int64 {
	added := int64(s.entriesAdded)
	switch {
	case s.entriesAdded == 0:
		return 0
	case s.length == 0 && id.Compare(s.lastID) <= 0:
		return added
	case !id.IsZero() && id.Less(s.maxDeletedID):
		return InvalidEntriesRead // a deletion lies between id and the end
	}
	switch c := id.Compare(s.lastID); {
	case c == 0:
		return added
	case c > 0:
		return InvalidEntriesRead // the future
	}
	if s.maxDeletedID.IsZero() || s.maxDeletedID.Less(s.firstID) {
		switch c := id.Compare(s.firstID); {
		case c < 0:
			return added - int64(s.length)
		case c == 0:
			return added - int64(s.length) + 1
		}
	}
	return InvalidEntriesRead
}

// Lag returns how many entries the group has yet to be delivered, as
// Redis 7 computes it, and false when that cannot be known (deletions
// after the group's last ID and no exact counter).
func (s *Stream) Lag(g *Group) (int64, bool) {
	added := int64(s.entriesAdded)
	switch {
	case s.entriesAdded == 0, s.length == 0:
		return 0, true
	case g.lastID.Less(s.firstID) && s.maxDeletedID.Less(s.firstID):
		// Behind the first entry, with no deletion past it: everything
		// left is to be read.
		return int64(s.length), true
	case g.entriesRead != InvalidEntriesRead && !s.tombstonesFrom(g.lastID):
		return added - g.entriesRead, true
	}
	if n := s.EstimateEntriesRead(g.lastID); n != InvalidEntriesRead {
		return added - n, true
	}
	return 0, false
}

// Referenced reports whether a group may still need entry id: one has
// not been delivered it yet, or holds it in its PEL. A stream that never
// had a group counts every entry as referenced (XDELEX ACKED answers 2
// then, as Redis does); one whose groups were all destroyed, none.
func (s *Stream) Referenced(id ID) bool {
	if s.groups.Len() == 0 {
		return !s.hadGroups
	}
	for _, g := range s.groups.All() {
		if id.Compare(g.lastID) > 0 || g.pel.Has(id) {
			return true
		}
	}
	return false
}

// DropRefs removes id from every group's PEL and reports whether any held
// it.
func (s *Stream) DropRefs(id ID) bool {
	any := false
	for _, g := range s.groups.All() {
		if g.Ack(id) {
			any = true
		}
	}
	return any
}

// pelsEmpty reports whether no group has a pending entry.
func (s *Stream) pelsEmpty() bool {
	for _, g := range s.groups.All() {
		if g.pel.Len() > 0 {
			return false
		}
	}
	return true
}

// Deletion results, as XDELEX and XACKDEL answer them per ID.
const (
	DelNotFound   = -1 // no such entry
	DelDeleted    = 1  // deleted
	DelReferenced = 2  // kept: a group still needs it (ACKED)
)

// DeleteRef deletes entry id under a reference policy (XDELEX): KeepRef
// deletes it as XDEL does; DelRef also drops it from every PEL (even when
// the entry itself is already gone); Acked deletes it only if no group
// needs it. It returns DelNotFound, DelDeleted or DelReferenced, and
// whether the stream or a PEL changed.
func (s *Stream) DeleteRef(id ID, policy RefPolicy) (result int, changed bool) {
	switch policy {
	case DelRef:
		deleted := s.Delete(id)
		dropped := s.DropRefs(id)
		if deleted {
			return DelDeleted, true
		}
		return DelNotFound, dropped
	case Acked:
		if !s.Has(id) {
			return DelNotFound, false
		}
		if s.Referenced(id) {
			return DelReferenced, false
		}
	}
	if s.Delete(id) {
		return DelDeleted, true
	}
	return DelNotFound, false
}
