package stream

import (
	"fmt"
	"slices"

	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/radix"
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
		s.insertNode(k[:], &node{lp: nd.Listpack, epoch: s.epoch})
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

// GroupState is a consumer group as RDB files carry it.
type GroupState struct {
	Name        []byte
	LastID      ID
	EntriesRead int64          // InvalidEntriesRead when unknown
	PEL         []PendingState // in ID order
	Consumers   []ConsumerState
	// Released lists the PEL entries no consumer owns (XNACK), in the
	// order they were released; their delivery time is 0.
	Released []ID
}

// PendingState is one group PEL entry.
type PendingState struct {
	ID            ID
	DeliveryTime  int64 // ms
	DeliveryCount int64
}

// ConsumerState is one consumer and the IDs it owns, in ID order.
type ConsumerState struct {
	Name       []byte
	SeenTime   int64
	ActiveTime int64 // -1: never active
	PEL        []ID
}

// Groups returns the stream's consumer groups in name order. Call it on a
// Snapshot when the result must be built outside the lock.
func (s *Stream) Groups() []GroupState {
	var out []GroupState
	for _, g := range s.groups.All() {
		st := GroupState{Name: g.name, LastID: g.lastID, EntriesRead: g.entriesRead}
		type rel struct {
			id  ID
			seq uint32
		}
		var released []rel
		g.pel.Ascend(MinID, func(id ID, p pending) bool {
			st.PEL = append(st.PEL, PendingState{ID: id, DeliveryTime: p.delivered, DeliveryCount: p.count})
			if p.owner == 0 {
				released = append(released, rel{id, p.seq})
			}
			return true
		})
		slices.SortFunc(released, func(a, b rel) int { return cmpUint32(a.seq, b.seq) })
		for _, r := range released {
			st.Released = append(st.Released, r.id)
		}
		for _, c := range g.consumers.All() {
			cs := ConsumerState{Name: c.name, SeenTime: c.seen, ActiveTime: c.active}
			c.pel.Ascend(MinID, func(id ID, _ struct{}) bool { cs.PEL = append(cs.PEL, id); return true })
			st.Consumers = append(st.Consumers, cs)
		}
		out = append(out, st)
	}
	return out
}

func cmpUint32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// SetGroups replaces the stream's consumer groups with gs (loading an RDB
// file). Every consumer PEL ID must be in its group's PEL and owned by
// one consumer only, and the released IDs must be exactly the entries no
// consumer owns; otherwise the error wraps ErrCorrupt. The time order
// CLAIM follows is rebuilt from the delivery times, released entries
// first in the order given.
func (s *Stream) SetGroups(gs []GroupState) error {
	var groups radix.Tree[*Group]
	for _, st := range gs {
		if _, dup := groups.Get(st.Name); dup {
			return nodeError("group %q twice", st.Name)
		}
		g, err := buildGroup(&st)
		if err != nil {
			return err
		}
		groups.Insert(g.name, g)
	}
	s.groups = groups
	s.hadGroups = groups.Len() > 0
	return nil
}

func buildGroup(st *GroupState) (*Group, error) {
	g := &Group{name: append([]byte(nil), st.Name...), lastID: st.LastID, entriesRead: st.EntriesRead}
	for i, p := range st.PEL {
		if i > 0 && p.ID.Compare(st.PEL[i-1].ID) <= 0 {
			return nil, nodeError("group %q: PEL out of order at %s", st.Name, p.ID)
		}
		g.pel.Set(p.ID, pending{delivered: p.DeliveryTime, count: p.DeliveryCount})
	}
	owned := 0
	for _, cs := range st.Consumers {
		c, created := g.CreateConsumer(cs.Name, cs.SeenTime)
		if !created {
			return nil, nodeError("group %q: consumer %q twice", st.Name, cs.Name)
		}
		c.active = cs.ActiveTime
		for _, id := range cs.PEL {
			p, ok := g.pel.Get(id)
			if !ok || p.owner != 0 {
				return nil, nodeError("group %q: consumer %q owns %s, not a free entry of the group", st.Name, cs.Name, id)
			}
			p.owner = c.handle
			g.pel.Update(id, p)
			c.pel.Set(id, struct{}{})
			owned++
		}
	}
	if owned+len(st.Released) != g.pel.Len() {
		return nil, nodeError("group %q: %d entries owned, %d released, %d pending", st.Name, owned, len(st.Released), g.pel.Len())
	}
	g.released = len(st.Released)
	return g, g.reorder(st.Released)
}

// reorder rebuilds the time order after a load: released entries first,
// as listed, then the others by delivery time (ties in ID order).
func (g *Group) reorder(released []ID) error {
	for _, id := range released {
		p, ok := g.pel.Get(id)
		if !ok || p.owner != 0 || p.seq != 0 {
			return nodeError("group %q: released entry %s is not an unowned entry", g.name, id)
		}
		p.delivered, p.seq = 0, g.nextSeq()
		g.pel.Update(id, p)
	}
	type item struct {
		id ID
		p  pending
	}
	var rest []item
	g.pel.Ascend(MinID, func(id ID, p pending) bool {
		if p.owner != 0 {
			rest = append(rest, item{id, p})
		}
		return true
	})
	slices.SortStableFunc(rest, func(a, b item) int { return compareTime(a.p, b.p) })
	for _, it := range rest {
		it.p.seq = g.nextSeq()
		g.pel.Update(it.id, it.p)
	}
	return nil
}
