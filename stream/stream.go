package stream

import (
	"unsafe"

	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/radix"
)

// Limits bound the size of a node, as stream-node-max-bytes and
// stream-node-max-entries do in Redis. A new entry goes into a fresh node
// once the tail node holds MaxEntries entries (deleted ones included) or
// would reach MaxBytes bytes. Zero means no limit (MaxBytes is still
// capped at 1 GiB). The server passes the configured values on every add,
// so a CONFIG SET applies from the next entry on.
type Limits struct {
	MaxBytes   int
	MaxEntries int
}

// DefaultLimits are Redis's defaults: 4096 bytes, 100 entries.
var DefaultLimits = Limits{MaxBytes: 4096, MaxEntries: 100}

// Stream is one stream value: its entries, in listpack nodes indexed by a
// radix tree, and the counters Redis keeps beside them.
//
// A Stream is not safe for concurrent use; the server calls it with the
// keyspace lock held. The zero value is not ready: use New.
type Stream struct {
	rax          radix.Tree[*node]
	length       uint64 // live entries
	lastID       ID     // the last ID ever added (or set by SetID)
	firstID      ID     // the first live entry, 0-0 when empty
	maxDeletedID ID     // the largest ID deleted by Delete
	entriesAdded uint64 // every entry ever added

	// tail caches the last node, where entries are appended; nil means
	// unknown (look it up), not necessarily that there is none.
	tail    *node
	tailKey [KeyLen]byte
	// scan is a reusable radix iterator for trimming from the head;
	// reader is one for Range, lent to one Iterator at a time (readerBusy).
	scan       *radix.Iterator[*node]
	groupScan  *radix.Iterator[*Group] // reused by MemoryUsage
	reader     *radix.Iterator[*node]
	readerBusy bool
	// epoch is the generation that owns nodes created or copied now; a
	// snapshot starts a new one, leaving every existing node shared.
	epoch uint64
	// nodeHint is how many bytes the last node held when it filled up:
	// the next node is allocated that large, so that a stream of similar
	// entries fills each node's allocation exactly and leaves no garbage.
	nodeHint int
	// nodeBytes is what the nodes take (their allocations, handles and
	// tree slots), kept as nodes come, go and grow, so that the server
	// can count a stream's memory after every write without a walk.
	nodeBytes int64

	idmp      idmpState
	retention Retention // age limit (retention.go)

	// delay holds the entries added with XADD DELAY/AT that are not due
	// yet (delay.go): outside the nodes, so no read sees them.
	delay delayed

	// Consumer groups by name (see group.go), beside the entries their
	// PELs point into. hadGroups remembers that the stream ever had one:
	// XDELEX ACKED treats the entries of a stream that never did as
	// referenced, and those of one whose groups are all gone as free.
	groups    radix.Tree[*Group]
	hadGroups bool
	dropRefs  bool // a DELREF trim is running: drop the PEL references of what it removes
}

// New returns an empty stream.
func New() *Stream {
	s := &Stream{}
	s.idmp.init()
	return s
}

// Len returns the number of live entries.
func (s *Stream) Len() uint64 { return s.length }

// LastID returns the last ID added to the stream (even if the entry has
// since been deleted), or the ID set by SetID.
func (s *Stream) LastID() ID { return s.lastID }

// FirstID returns the ID of the first live entry, 0-0 when there is none
// (XINFO's recorded-first-entry-id).
func (s *Stream) FirstID() ID { return s.firstID }

// MaxDeletedID returns the largest ID removed by Delete (XDEL), 0-0 if
// none was.
func (s *Stream) MaxDeletedID() ID { return s.maxDeletedID }

// EntriesAdded returns how many entries were ever added.
func (s *Stream) EntriesAdded() uint64 { return s.entriesAdded }

// Nodes returns the number of listpack nodes (XINFO's radix-tree-keys).
func (s *Stream) Nodes() int { return s.rax.Len() }

// NextID returns the ID "*" gives at time now (ms): now-0, or the last ID
// plus one when the clock has not moved past it, so IDs keep growing
// even if the clock steps back.
func (s *Stream) NextID(now uint64) (ID, error) {
	if s.lastID == MaxID {
		return ID{}, ErrExhausted
	}
	if now > s.lastID.Ms {
		return ID{Ms: now}, nil
	}
	return s.lastID.Incr()
}

// NextSeq returns the ID "ms-*" gives: ms-0 for a millisecond past the
// last ID's, the last ID plus one in its millisecond.
func (s *Stream) NextSeq(ms uint64) (ID, error) {
	if s.lastID == MaxID {
		return ID{}, ErrExhausted
	}
	if ms != s.lastID.Ms {
		return ID{Ms: ms}, nil
	}
	id, err := s.lastID.Incr()
	if err != nil || id.Ms != ms {
		return ID{}, ErrIDNotGreater
	}
	return id, nil
}

// Add appends an entry with fields and values fv (alternating field,
// value; at least one pair) under id, which must be greater than the last
// ID. lim bounds the tail node: when it is full the entry starts a new one.
func (s *Stream) Add(id ID, fv [][]byte, lim Limits) error {
	if s.lastID == MaxID {
		return ErrExhausted
	}
	if id.Compare(s.lastID) <= 0 {
		return ErrIDNotGreater
	}
	total := 0
	for _, b := range fv {
		total += len(b)
	}
	if total > maxNodeBytes {
		return ErrTooLarge
	}
	if n, m := s.tailFor(total, lim); n != nil {
		s.appendTo(n, m, id, fv)
	} else {
		s.startNode(id, fv, lim)
	}
	s.length++
	s.entriesAdded++
	s.lastID = id
	if s.length == 1 {
		s.firstID = id
	}
	return nil
}

// edit returns n ready for its bytes to be changed in place. Every change
// to a node goes through here: this is the copy-on-write point. A node a
// snapshot may still share (one from an older epoch) is copied, and the
// copy stored under key, before its first write; so BGSAVE, AOF rewrite
// and Raft snapshots can serialize a frozen view while writes continue.
func (s *Stream) edit(key []byte, n *node) *node {
	if n.epoch == s.epoch {
		return n
	}
	c := &node{lp: cloneLP(n.lp), epoch: s.epoch} // same capacity: nodeBytes stays
	s.rax.Insert(key, c)
	if s.tail == n {
		s.tail = c
	}
	return c
}

// cloneLP copies a listpack, keeping its spare room so the tail node can
// go on growing in place.
func cloneLP(lp listpack.Listpack) listpack.Listpack {
	c := make(listpack.Listpack, len(lp), cap(lp))
	copy(c, lp)
	return c
}

// tailNode returns the last node and its key, or nil.
func (s *Stream) tailNode() *node {
	if s.tail == nil {
		key, n, ok := s.rax.Max()
		if !ok {
			return nil
		}
		s.tail = n
		copy(s.tailKey[:], key)
	}
	return s.tail
}

// tailFor returns the tail node, and its master entry, if an entry of
// total bytes of fields and values may go into it, or nil when a new node
// must start. A node that is left behind full is shrunk to fit, as Redis
// does.
func (s *Stream) tailFor(total int, lim Limits) (*node, master) {
	n := s.tailNode()
	if n == nil {
		return nil, master{}
	}
	maxBytes := lim.MaxBytes
	if maxBytes <= 0 || maxBytes > maxNodeBytes {
		maxBytes = maxNodeBytes
	}
	m := readMaster(n.lp)
	full := len(n.lp)+total >= maxBytes ||
		lim.MaxEntries > 0 && m.live+m.deleted >= int64(lim.MaxEntries)
	if !full {
		return n, m
	}
	s.nodeHint = len(n.lp)
	if cap(n.lp)-len(n.lp) > len(n.lp)/8 {
		// More slack than the allocator's size classes leave: shrink.
		n = s.edit(s.tailKey[:], n)
		s.setLP(n, append(listpack.Listpack(nil), n.lp...))
	}
	return nil, master{}
}

// startNode stores the entry in a new node, which becomes the tail.
func (s *Stream) startNode(id ID, fv [][]byte, lim Limits) {
	capacity := preallocBytes
	if s.nodeHint > 0 {
		capacity = s.nodeHint
	}
	if lim.MaxBytes > 0 && lim.MaxBytes < capacity {
		capacity = lim.MaxBytes
	}
	n := &node{lp: newNodeBytes(id, fv, max(capacity, newNodeSize(fv))), epoch: s.epoch}
	s.tailKey = id.Key()
	s.insertNode(s.tailKey[:], n)
	s.tail = n
}

// nodeOverhead is what a node costs besides its listpack: its handle and
// its slot in the tree.
const nodeOverhead = int64(unsafe.Sizeof(node{})) + 48

// insertNode stores a new node under key, counting its bytes.
func (s *Stream) insertNode(key []byte, n *node) {
	s.rax.Insert(key, n)
	s.nodeBytes += int64(cap(n.lp)) + nodeOverhead
}

// setLP replaces node n's bytes (a copy or a grown slice), counting the
// difference in allocation.
func (s *Stream) setLP(n *node, lp listpack.Listpack) {
	s.nodeBytes += int64(cap(lp) - cap(n.lp))
	n.lp = lp
}

// appendTo appends the entry to the tail node n, whose master entry is m.
func (s *Stream) appendTo(n *node, m master, id ID, fv [][]byte) {
	n = s.edit(s.tailKey[:], n)
	lp := n.lp.ReplaceInt(m.countOff, m.live+1)
	if listpack.IntEntrySize(m.live+1) != listpack.IntEntrySize(m.live) {
		m = readMaster(lp) // the count changed size: the offsets moved
	}
	mid := IDFromKey(s.tailKey[:])
	delta := ID{Ms: id.Ms - mid.Ms, Seq: id.Seq - mid.Seq}
	var flags int64
	if sameFields(lp, &m, fv) {
		flags = flagSameFields
	}
	need := entrySize(delta, flags != 0, fv)
	if cap(lp)-len(lp) < need {
		// Past the preallocation: grow by a quarter, which is geometric
		// (no quadratic copying) yet wastes little once the node is full.
		lp = lp.Grow(max(need, len(lp)/4))
	}
	s.setLP(n, appendEntry(lp, delta, flags, fv))
}

// forgetTail drops the cached tail if it is n (a node being removed).
func (s *Stream) forgetTail(n *node) {
	if s.tail == n {
		s.tail = nil
	}
}
