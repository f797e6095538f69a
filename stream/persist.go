package stream

import (
	"fmt"
	"slices"

	"github.com/redstream/redstream/listpack"
)

// What RDB files carry of a stream: its nodes verbatim (the layout is
// Redis's, so no entry is re-encoded either way), the counters beside
// them and the IDMP state.

// Node is one node as RDB stores it: its master ID and its listpack.
type Node struct {
	Master   ID
	Listpack listpack.Listpack
}

// Meta is what RDB stores beside a stream's nodes.
type Meta struct {
	Length       uint64 // live entries
	LastID       ID
	FirstID      ID // first live entry, 0-0 when none
	MaxDeletedID ID
	EntriesAdded uint64
}

// EachNode calls fn with each node in ID order until fn returns false. The
// listpacks are the stream's own: call it on a Snapshot (whose nodes are
// never written again) when the bytes must outlive the lock.
func (s *Stream) EachNode(fn func(Node) bool) {
	for k, n := range s.rax.All() {
		if !fn(Node{Master: IDFromKey(k), Listpack: n.lp}) {
			return
		}
	}
}

// Meta returns the stream's counters.
func (s *Stream) Meta() Meta {
	return Meta{Length: s.length, LastID: s.lastID, FirstID: s.firstID,
		MaxDeletedID: s.maxDeletedID, EntriesAdded: s.entriesAdded}
}

// FromNodes builds a stream from nodes and counters read from an RDB
// file, taking ownership of the listpacks. Every node must pass
// ValidateNode, node IDs must increase, and the counters must agree with
// the nodes; otherwise the error wraps ErrCorrupt.
func FromNodes(nodes []Node, meta Meta) (*Stream, error) {
	s := New()
	var live uint64
	var prevLast ID
	for i, nd := range nodes {
		if err := ValidateNode(nd.Listpack, nd.Master); err != nil {
			return nil, fmt.Errorf("node %s: %w", nd.Master, err)
		}
		last, ok := lastEntryID(nd.Listpack, nd.Master)
		if !ok || (i > 0 && nd.Master.Compare(prevLast) <= 0) || last.Compare(meta.LastID) > 0 {
			return nil, nodeError("node %s is empty, out of order or past the last ID %s", nd.Master, meta.LastID)
		}
		prevLast = last
		live += uint64(readMaster(nd.Listpack).live)
		k := nd.Master.Key()
		s.rax.Insert(k[:], &node{lp: nd.Listpack, epoch: s.epoch})
		s.nodeHint = len(nd.Listpack)
	}
	if live != meta.Length || meta.EntriesAdded < meta.Length {
		return nil, nodeError("length %d and entries added %d, nodes hold %d live entries", meta.Length, meta.EntriesAdded, live)
	}
	s.length, s.lastID, s.maxDeletedID, s.entriesAdded = meta.Length, meta.LastID, meta.MaxDeletedID, meta.EntriesAdded
	s.firstID, _ = s.FirstEntryID(false) // recomputed: the nodes are the truth
	return s, nil
}

// IDMPState is a stream's idempotent-producer state, for RDB files.
type IDMPState struct {
	Duration   int64 // seconds
	MaxSize    int64
	Added      uint64
	Duplicates uint64
	Producers  []IDMPProducer // ordered by PID
}

// IDMPProducer is one producer's remembered iids, oldest first.
type IDMPProducer struct {
	PID  []byte
	IIDs []IDMPRecord
}

// IDMPRecord is one remembered iid: the entry it added, and when.
type IDMPRecord struct {
	IID  []byte
	ID   ID
	Time int64 // ms
}

// IDMP returns the stream's IDMP state.
func (s *Stream) IDMP() IDMPState {
	d := &s.idmp
	st := IDMPState{Duration: d.duration, MaxSize: d.maxSize, Added: d.added, Duplicates: d.duplicates}
	for pid, p := range d.producers {
		pr := IDMPProducer{PID: []byte(pid)}
		for _, it := range p.queue[p.head:] {
			pr.IIDs = append(pr.IIDs, IDMPRecord{IID: []byte(it.iid), ID: p.ids[it.iid], Time: it.at})
		}
		st.Producers = append(st.Producers, pr)
	}
	slices.SortFunc(st.Producers, func(a, b IDMPProducer) int { return compareBytes(a.PID, b.PID) })
	return st
}

// SetIDMP replaces the stream's IDMP state (loading an RDB file). Settings
// out of range are taken as the defaults.
func (s *Stream) SetIDMP(st IDMPState) {
	d := &s.idmp
	d.init()
	if st.Duration >= 1 && st.Duration <= MaxIDMPDuration {
		d.duration = st.Duration
	}
	if st.MaxSize >= 1 && st.MaxSize <= MaxIDMPMaxSize {
		d.maxSize = st.MaxSize
	}
	d.producers = nil
	for _, pr := range st.Producers {
		for _, r := range pr.IIDs {
			s.IDMPRecord(pr.PID, r.IID, r.ID, r.Time)
		}
	}
	d.added, d.duplicates = st.Added, st.Duplicates
}

func compareBytes(a, b []byte) int {
	switch sa, sb := string(a), string(b); {
	case sa < sb:
		return -1
	case sa > sb:
		return 1
	}
	return 0
}
