package stream

import (
	"fmt"
	"slices"

	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/radix"
)

// What RDB files and DUMP payloads carry of a stream, as one plain value:
// its nodes verbatim (the layout is Redis's, so no entry is re-encoded
// either way), the counters beside them, the consumer groups and the
// IDMP state. State exports a stream's; FromState builds a stream from
// one, checking everything it was given. Package persistence writes and
// reads this value; it has no stream model of its own.

// State is a whole stream as plain data.
type State struct {
	Nodes        []Node // in ID order
	Length       uint64 // live entries
	LastID       ID     // the last ID ever given (XADD's floor)
	FirstID      ID     // first live entry, 0-0 when none (FromState recomputes it)
	MaxDeletedID ID     // the largest ID deleted, or 0-0
	EntriesAdded uint64 // entries ever added
	Groups       []GroupState
	IDMP         *IDMPState     // nil when at the defaults with nothing recorded
	Retention    Retention      // age limit; zero when none
	Delayed      []DelayedEntry // entries not yet due (XADD DELAY/AT), in ID order
}

// DelayedEntry is one delayed entry: the ID reserved for it and its
// fields and values, alternating.
type DelayedEntry struct {
	ID     ID
	Fields [][]byte
}

// Node is one node: its master ID and its listpack.
type Node struct {
	Master   ID
	Listpack listpack.Listpack
}

// State returns the stream as plain data. The listpacks are the stream's
// own: call it on a Snapshot (whose nodes are never written again) when
// the bytes must outlive the lock.
func (s *Stream) State() State {
	st := State{Length: s.length, LastID: s.lastID, FirstID: s.firstID,
		MaxDeletedID: s.maxDeletedID, EntriesAdded: s.entriesAdded, Groups: s.groupStates(), Retention: s.retention}
	for k, n := range s.rax.All() {
		st.Nodes = append(st.Nodes, Node{Master: IDFromKey(k), Listpack: n.lp})
	}
	if d := &s.idmp; d.added > 0 || d.duplicates > 0 || d.duration != DefaultIDMPDuration || d.maxSize != DefaultIDMPMaxSize {
		idmp := s.idmpState()
		st.IDMP = &idmp
	}
	s.delay.each(func(id ID, fv [][]byte) bool {
		st.Delayed = append(st.Delayed, DelayedEntry{ID: id, Fields: fv})
		return true
	})
	return st
}

// FromState builds a stream from st, taking ownership of the listpacks.
// Every node must pass ValidateNode, node IDs must increase, the counters
// must agree with the nodes, and the groups must keep the PEL invariants
// (see buildGroup); otherwise the error wraps ErrCorrupt. The first ID is
// recomputed from the nodes.
func FromState(st *State) (*Stream, error) {
	s, err := fromNodes(st)
	if err != nil {
		return nil, err
	}
	if err := s.setGroups(st.Groups); err != nil {
		return nil, err
	}
	if st.IDMP != nil {
		s.setIDMP(st.IDMP)
	}
	if !st.Retention.valid() {
		return nil, corruptf("age limit %d ms with reference policy %d", st.Retention.MaxAge, st.Retention.Refs)
	}
	s.retention = st.Retention
	if err := s.setDelayed(st.Delayed); err != nil {
		return nil, err
	}
	return s, nil
}

// setDelayed stores the delayed entries of a state; their IDs must
// ascend and each must have field-value pairs.
func (s *Stream) setDelayed(es []DelayedEntry) error {
	for i, e := range es {
		if i > 0 && e.ID.Compare(es[i-1].ID) <= 0 {
			return corruptf("delayed entry %s out of order", e.ID)
		}
		if len(e.Fields) < 2 || len(e.Fields)%2 != 0 {
			return corruptf("delayed entry %s has %d fields and values", e.ID, len(e.Fields))
		}
		s.delay.add(e.ID, e.Fields)
	}
	return nil
}

func fromNodes(st *State) (*Stream, error) {
	s := New()
	var live uint64
	var prevLast ID
	for i, nd := range st.Nodes {
		if err := ValidateNode(nd.Listpack, nd.Master); err != nil {
			return nil, fmt.Errorf("%w (node %s)", err, nd.Master)
		}
		last, ok := lastEntryID(nd.Listpack, nd.Master)
		switch {
		case !ok:
			return nil, corruptf("node %s has no entries", nd.Master)
		case i > 0 && nd.Master.Compare(prevLast) <= 0:
			return nil, corruptf("node %s does not follow entry %s", nd.Master, prevLast)
		case last.Compare(st.LastID) > 0:
			return nil, corruptf("entry %s is past the last ID %s", last, st.LastID)
		}
		prevLast = last
		live += uint64(readMaster(nd.Listpack).live)
		k := nd.Master.Key()
		s.insertNode(k[:], &node{lp: nd.Listpack, epoch: s.epoch})
		s.nodeHint = len(nd.Listpack)
	}
	if live != st.Length || st.EntriesAdded < st.Length {
		return nil, corruptf("length %d and entries added %d, nodes hold %d live entries", st.Length, st.EntriesAdded, live)
	}
	s.length, s.lastID, s.maxDeletedID, s.entriesAdded = st.Length, st.LastID, st.MaxDeletedID, st.EntriesAdded
	s.firstID, _ = s.FirstEntryID(false) // recomputed: the nodes are the truth
	return s, nil
}

// IDMPState is a stream's idempotent-producer state.
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

func (s *Stream) idmpState() IDMPState {
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

// setIDMP replaces the stream's IDMP state. Settings out of range are
// taken as the defaults.
func (s *Stream) setIDMP(st *IDMPState) {
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

// GroupState is a consumer group as plain data.
type GroupState struct {
	Name        []byte
	LastID      ID
	EntriesRead int64          // InvalidEntriesRead when unknown
	PEL         []PendingState // in ID order
	Consumers   []ConsumerState
	// Released lists the PEL entries no consumer owns (XNACK), in the
	// order they were released; their delivery time is 0.
	Released []ID
	Policy   Policy // XGROUP SETPOLICY's; the zero Policy when none
	// DeadLettered counts the entries the group dead-lettered.
	DeadLettered int64
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

// groupStates returns the consumer groups in name order.
func (s *Stream) groupStates() []GroupState {
	var out []GroupState
	for _, g := range s.groups.All() {
		st := GroupState{Name: g.name, LastID: g.lastID, EntriesRead: g.entriesRead,
			Policy: g.policy.clone(), DeadLettered: g.dead}
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

// setGroups replaces the stream's consumer groups with gs. Every consumer PEL ID must be in its group's PEL and owned by
// one consumer only, and the released IDs must be exactly the entries no
// consumer owns; otherwise the error wraps ErrCorrupt. The time order
// CLAIM follows is rebuilt from the delivery times, released entries
// first in the order given.
func (s *Stream) setGroups(gs []GroupState) error {
	var groups radix.Tree[*Group]
	for _, st := range gs {
		if _, dup := groups.Get(st.Name); dup {
			return corruptf("group %q twice", st.Name)
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
	g := &Group{name: append([]byte(nil), st.Name...), lastID: st.LastID, entriesRead: st.EntriesRead,
		policy: st.Policy.clone(), dead: st.DeadLettered}
	if !st.Policy.valid() || st.DeadLettered < 0 {
		return nil, corruptf("group %q: policy %+v or dead-lettered count %d out of range", st.Name, st.Policy, st.DeadLettered)
	}
	for i, p := range st.PEL {
		if i > 0 && p.ID.Compare(st.PEL[i-1].ID) <= 0 {
			return nil, corruptf("group %q: PEL out of order at %s", st.Name, p.ID)
		}
		g.pel.Set(p.ID, pending{delivered: p.DeliveryTime, count: p.DeliveryCount})
	}
	owned := 0
	for _, cs := range st.Consumers {
		c, created := g.CreateConsumer(cs.Name, cs.SeenTime)
		if !created {
			return nil, corruptf("group %q: consumer %q twice", st.Name, cs.Name)
		}
		c.active = cs.ActiveTime
		for _, id := range cs.PEL {
			p, ok := g.pel.Get(id)
			if !ok || p.owner != 0 {
				return nil, corruptf("group %q: consumer %q owns %s, not a free entry of the group", st.Name, cs.Name, id)
			}
			p.owner = c.handle
			g.pel.Update(id, p)
			c.pel.Set(id, struct{}{})
			owned++
		}
	}
	if owned+len(st.Released) != g.pel.Len() {
		return nil, corruptf("group %q: %d entries owned, %d released, %d pending", st.Name, owned, len(st.Released), g.pel.Len())
	}
	g.released = len(st.Released)
	if err := g.reorder(st.Released); err != nil {
		return nil, err
	}
	g.rebuildDue() // its times depend on the order numbers reorder gave
	return g, nil
}

// reorder rebuilds the time order after a load: released entries first,
// as listed, then the others by delivery time (ties in ID order).
func (g *Group) reorder(released []ID) error {
	for _, id := range released {
		p, ok := g.pel.Get(id)
		if !ok || p.owner != 0 || p.seq != 0 {
			return corruptf("group %q: released entry %s is not an unowned entry", g.name, id)
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
