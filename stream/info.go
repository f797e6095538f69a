package stream

import (
	"fmt"
	"github.com/redstream/redstream/radix"
	"unsafe"

	"github.com/redstream/redstream/listpack"
)

// SetID changes the stream's last ID, and optionally its entries-added
// counter (entriesAdded >= 0) and its max deleted ID (maxDeleted not
// 0-0), as XSETID does. The last ID may not go below the max deleted ID
// or the last live entry, nor entries-added below the length.
func (s *Stream) SetID(last ID, entriesAdded int64, maxDeleted ID) error {
	if last.Less(s.maxDeletedID) {
		return ErrSetIDBelowMaxDeleted
	}
	if s.length > 0 {
		if top, _ := s.LastEntryID(); last.Less(top) {
			return ErrSetIDBelowTop
		}
		if entriesAdded >= 0 && uint64(entriesAdded) < s.length {
			return ErrEntriesAddedBelowLength
		}
	}
	s.lastID = last
	if entriesAdded >= 0 {
		s.entriesAdded = uint64(entriesAdded)
	}
	if !maxDeleted.IsZero() {
		s.maxDeletedID = maxDeleted
	}
	return nil
}

// RadixNodes returns the number of nodes Redis's rax would use to index
// this stream's listpack nodes (XINFO's radix-tree-nodes), so the reply
// matches Redis's. A rax has a node for the root, for every key, for every
// point where keys branch, and for every child of such a point; runs of
// bytes between them are compressed into one node.
func (s *Stream) RadixNodes() int {
	keys := make([][KeyLen]byte, 0, s.rax.Len())
	for k := range s.rax.All() {
		keys = append(keys, [KeyLen]byte(k))
	}
	if len(keys) == 0 {
		return 1 // an empty rax is its root
	}
	return raxNodes(keys, 0, true)
}

// raxNodes counts the rax nodes at and below the position reached after
// depth bytes of keys (all of which share those bytes). forced says the
// position is a node anyway (the root, or a child of a branching point).
func raxNodes(keys [][KeyLen]byte, depth int, forced bool) int {
	if depth == KeyLen {
		return 1 // a key
	}
	n := 0
	if forced {
		n = 1
	}
	if keys[0][depth] == keys[len(keys)-1][depth] {
		return n + raxNodes(keys, depth+1, false) // sorted: one byte for all
	}
	n = 1 // a branching point is a node
	for start := 0; start < len(keys); {
		end := start + 1
		for end < len(keys) && keys[end][depth] == keys[start][depth] {
			end++
		}
		n += raxNodes(keys[start:end], depth+1, true)
		start = end
	}
	return n
}

// MemoryUsage estimates the bytes the stream holds, for MEMORY USAGE and
// maxmemory: the nodes (counted as they change), the groups, and the
// IDMP maps. It walks no nodes, so the server calls it after every write.
func (s *Stream) MemoryUsage() int64 {
	n := int64(unsafe.Sizeof(Stream{})) + s.nodeBytes + int64(s.idmp.idmpBytes()) + s.delay.bytes
	if s.groups.Len() == 0 {
		return n
	}
	// The server asks after every write: reuse one iterator rather than
	// allocate one per call.
	if s.groupScan == nil {
		s.groupScan = s.groups.Seek(radix.First, nil)
	} else {
		s.groupScan.Seek(radix.First, nil)
	}
	for s.groupScan.Next() {
		n += s.groupScan.Value().memory()
	}
	return n
}

// Clone returns a deep copy of the stream (for COPY).
func (s *Stream) Clone() *Stream {
	c := s.copyHeader()
	for k, nd := range s.rax.All() {
		c.insertNode(k, &node{lp: append(listpack.Listpack(nil), nd.lp...)})
	}
	for k, g := range s.groups.All() {
		c.groups.Insert(k, g.clone())
	}
	c.delay = s.delay.clone()
	return c
}

// Snapshot returns a view of the stream that later writes cannot change,
// for BGSAVE, AOF rewrite and Raft snapshots. It costs a copy of the
// radix tree, not of the entries: the view shares every node, and the
// stream moves to a new epoch, so that its next write to a shared node
// copies that node first (see edit). Consumer groups are frozen the same
// way: the view gets copies of the groups and consumers (a few words
// each) and of their PEL chunk indexes, and shares the chunks, which the
// live PELs copy before their next write (see omap). The view must only
// be read.
func (s *Stream) Snapshot() *Stream {
	c := s.copyHeader()
	for k, nd := range s.rax.All() {
		c.rax.Insert(k, nd)
	}
	c.nodeBytes = s.nodeBytes
	s.epoch++
	c.epoch = s.epoch + 1<<62 // never equal to a live epoch: the view never writes in place
	for k, g := range s.groups.All() {
		c.groups.Insert(k, g.freeze())
	}
	c.delay = s.delay.freeze()
	return c
}

// copyHeader copies everything but the nodes.
func (s *Stream) copyHeader() *Stream {
	return &Stream{
		length: s.length, lastID: s.lastID, firstID: s.firstID,
		maxDeletedID: s.maxDeletedID, entriesAdded: s.entriesAdded,
		idmp: s.idmp.clone(), retention: s.retention, nodeHint: s.nodeHint, hadGroups: s.hadGroups,
	}
}

// Check verifies the stream's invariants: every node valid and in order,
// the counters agreeing with the nodes, the cached tail current. Tests
// and debugging use it; it returns the first problem found.
func (s *Stream) Check() error {
	var live uint64
	var prevLast ID
	var nodeBytes int64
	first := true
	for k, nd := range s.rax.All() {
		nodeBytes += int64(cap(nd.lp)) + nodeOverhead
		mid := IDFromKey(k)
		if err := ValidateNode(nd.lp, mid); err != nil {
			return fmt.Errorf("node %s: %w", mid, err)
		}
		if !first && mid.Compare(prevLast) <= 0 {
			return fmt.Errorf("stream: node %s starts at or before the previous node's end %s", mid, prevLast)
		}
		m := readMaster(nd.lp)
		if last, ok := lastEntryID(nd.lp, mid); ok {
			prevLast, first = last, false
			if last.Compare(s.lastID) > 0 {
				return fmt.Errorf("stream: entry %s after the last ID %s", last, s.lastID)
			}
		}
		live += uint64(m.live)
	}
	if nodeBytes != s.nodeBytes {
		return fmt.Errorf("stream: nodes take %d bytes, %d counted", nodeBytes, s.nodeBytes)
	}
	if err := s.checkCounters(live); err != nil {
		return err
	}
	for _, g := range s.groups.All() {
		if err := g.check(); err != nil {
			return err
		}
	}
	return nil
}

func (s *Stream) checkCounters(live uint64) error {
	if live != s.length {
		return fmt.Errorf("stream: length %d, nodes hold %d live entries", s.length, live)
	}
	if first, ok := s.FirstEntryID(false); ok != (s.length > 0) || first != s.firstID {
		return fmt.Errorf("stream: first ID %s, first entry %s (found %v)", s.firstID, first, ok)
	}
	if s.entriesAdded < s.length {
		return fmt.Errorf("stream: %d entries added, %d live", s.entriesAdded, s.length)
	}
	if s.tail != nil {
		if _, n, _ := s.rax.Max(); n != s.tail {
			return fmt.Errorf("stream: cached tail is not the last node")
		}
	}
	return nil
}
