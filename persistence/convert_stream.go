package persistence

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/redstream/redstream/stream"
)

// fromValueExt and toValueExt convert the value types beyond strings and
// lists between the server's values and the codec's.
func fromValueExt(v Value) (any, error) {
	if s, ok := v.(*Stream); ok {
		return streamFromRDB(s)
	}
	return nil, fmt.Errorf("cannot load a %T value yet", v)
}

func toValueExt(v any) (Value, error) {
	if s, ok := v.(*stream.Stream); ok {
		return streamToRDB(s), nil
	}
	return nil, fmt.Errorf("cannot save a %T value yet", v)
}

// streamToRDB turns a stream's snapshot view into the codec's value: the
// nodes go verbatim (a snapshot's nodes are never written again).
func streamToRDB(s *stream.Stream) *Stream {
	m := s.Meta()
	out := &Stream{Length: m.Length, LastID: rdbID(m.LastID), FirstID: rdbID(m.FirstID),
		MaxDeletedID: rdbID(m.MaxDeletedID), EntriesAdded: m.EntriesAdded}
	s.EachNode(func(n stream.Node) bool {
		out.Nodes = append(out.Nodes, StreamNode{Master: rdbID(n.Master), Listpack: n.Listpack})
		return true
	})
	st := s.IDMP()
	idmp := &IDMP{Duration: uint64(st.Duration), MaxSize: uint64(st.MaxSize), Added: st.Added, Duplicates: st.Duplicates}
	for _, p := range st.Producers {
		pr := IDMPProducer{PID: p.PID}
		for _, r := range p.IIDs {
			pr.Entries = append(pr.Entries, IDMPEntry{IID: r.IID, ID: rdbID(r.ID), Time: r.Time})
		}
		idmp.Producers = append(idmp.Producers, pr)
	}
	if st.Added > 0 || st.Duplicates > 0 || st.Duration != stream.DefaultIDMPDuration || st.MaxSize != stream.DefaultIDMPMaxSize {
		out.IDMP = idmp
	}
	for _, g := range s.Groups() {
		out.Groups = append(out.Groups, groupToRDB(g))
	}
	return out
}

// Entries released by XNACK (Redis 8.8) have no owner, and RDB version
// 10 has no place for an entry without one (Redis 7 refuses such files).
// They are written as owned by a reserved consumer, releasedConsumer,
// whose seen time is releasedMark, and their delivery times are their
// positions in release order (1, 2, ...), which CLAIM follows; loading
// turns them back into released entries with delivery time 0. A real
// consumer of that name and seen time is, in practice, impossible.
var releasedConsumer = []byte("\x00redstream:released")

const releasedMark = math.MinInt64

func groupToRDB(g stream.GroupState) Group {
	out := Group{Name: g.Name, LastID: rdbID(g.LastID), EntriesRead: g.EntriesRead}
	rank := make(map[stream.ID]int64, len(g.Released))
	for i, id := range g.Released {
		rank[id] = int64(i + 1)
	}
	for _, p := range g.PEL {
		t := p.DeliveryTime
		if r, ok := rank[p.ID]; ok {
			t = r
		}
		out.PEL = append(out.PEL, PendingEntry{ID: rdbID(p.ID), DeliveryTime: t, DeliveryCount: uint64(p.DeliveryCount)})
	}
	for _, c := range g.Consumers {
		rc := Consumer{Name: c.Name, SeenTime: c.SeenTime, ActiveTime: c.ActiveTime}
		for _, id := range c.PEL {
			rc.PEL = append(rc.PEL, rdbID(id))
		}
		out.Consumers = append(out.Consumers, rc)
	}
	if len(g.Released) > 0 {
		rc := Consumer{Name: releasedConsumer, SeenTime: releasedMark, ActiveTime: releasedMark}
		for _, p := range g.PEL {
			if _, ok := rank[p.ID]; ok {
				rc.PEL = append(rc.PEL, rdbID(p.ID))
			}
		}
		out.Consumers = insertConsumer(out.Consumers, rc)
	}
	return out
}

// insertConsumer keeps consumers in name order, as Redis writes them.
func insertConsumer(cs []Consumer, c Consumer) []Consumer {
	i, _ := slices.BinarySearchFunc(cs, c.Name, func(e Consumer, name []byte) int { return bytes.Compare(e.Name, name) })
	return slices.Insert(cs, i, c)
}

func groupFromRDB(g Group) stream.GroupState {
	out := stream.GroupState{Name: g.Name, LastID: stream.ID(g.LastID), EntriesRead: g.EntriesRead}
	var released map[stream.ID]bool
	for _, c := range g.Consumers {
		if bytes.Equal(c.Name, releasedConsumer) && c.SeenTime == releasedMark {
			released = make(map[stream.ID]bool, len(c.PEL))
			for _, id := range c.PEL {
				released[stream.ID(id)] = true
			}
			continue
		}
		cs := stream.ConsumerState{Name: c.Name, SeenTime: c.SeenTime, ActiveTime: c.ActiveTime}
		for _, id := range c.PEL {
			cs.PEL = append(cs.PEL, stream.ID(id))
		}
		out.Consumers = append(out.Consumers, cs)
	}
	type rel struct {
		id   stream.ID
		rank int64
	}
	var order []rel
	for _, p := range g.PEL {
		ps := stream.PendingState{ID: stream.ID(p.ID), DeliveryTime: p.DeliveryTime, DeliveryCount: int64(p.DeliveryCount)}
		if released[ps.ID] {
			order = append(order, rel{ps.ID, ps.DeliveryTime})
			ps.DeliveryTime = 0
		}
		out.PEL = append(out.PEL, ps)
	}
	slices.SortStableFunc(order, func(a, b rel) int { return cmp.Compare(a.rank, b.rank) })
	for _, r := range order {
		out.Released = append(out.Released, r.id)
	}
	return out
}

// streamFromRDB builds a stream from a decoded one, groups included.
func streamFromRDB(v *Stream) (*stream.Stream, error) {
	nodes := make([]stream.Node, len(v.Nodes))
	for i, n := range v.Nodes {
		nodes[i] = stream.Node{Master: stream.ID(n.Master), Listpack: n.Listpack}
	}
	s, err := stream.FromNodes(nodes, stream.Meta{Length: v.Length, LastID: stream.ID(v.LastID), FirstID: stream.ID(v.FirstID),
		MaxDeletedID: stream.ID(v.MaxDeletedID), EntriesAdded: v.EntriesAdded})
	if err != nil {
		return nil, err
	}
	if len(v.Groups) > 0 {
		groups := make([]stream.GroupState, len(v.Groups))
		for i, g := range v.Groups {
			groups[i] = groupFromRDB(g)
		}
		if err := s.SetGroups(groups); err != nil {
			return nil, err
		}
	}
	if v.IDMP == nil {
		return s, nil
	}
	st := stream.IDMPState{Duration: int64(v.IDMP.Duration), MaxSize: int64(v.IDMP.MaxSize), Added: v.IDMP.Added, Duplicates: v.IDMP.Duplicates}
	for _, p := range v.IDMP.Producers {
		pr := stream.IDMPProducer{PID: p.PID}
		for _, e := range p.Entries {
			pr.IIDs = append(pr.IIDs, stream.IDMPRecord{IID: e.IID, ID: stream.ID(e.ID), Time: e.Time})
		}
		st.Producers = append(st.Producers, pr)
	}
	s.SetIDMP(st)
	return s, nil
}

func rdbID(id stream.ID) StreamID { return StreamID(id) }
