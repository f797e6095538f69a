package cli

import (
	"fmt"

	"github.com/redstream/redstream/persistence"
	"github.com/redstream/redstream/stream"
)

// fromRDBValueExt and toRDBValueExt convert the value types beyond
// strings and lists between the server and the RDB codec.
func fromRDBValueExt(v persistence.Value) (any, error) {
	if s, ok := v.(*persistence.Stream); ok {
		return streamFromRDB(s)
	}
	return nil, fmt.Errorf("cannot load a %T value yet", v)
}

func toRDBValueExt(v any) (persistence.Value, error) {
	if s, ok := v.(*stream.Stream); ok {
		return streamToRDB(s), nil
	}
	return nil, fmt.Errorf("cannot save a %T value yet", v)
}

// streamToRDB turns a stream's snapshot view into the codec's value: the
// nodes go verbatim (a snapshot's nodes are never written again).
func streamToRDB(s *stream.Stream) *persistence.Stream {
	m := s.Meta()
	out := &persistence.Stream{Length: m.Length, LastID: rdbID(m.LastID), FirstID: rdbID(m.FirstID),
		MaxDeletedID: rdbID(m.MaxDeletedID), EntriesAdded: m.EntriesAdded}
	s.EachNode(func(n stream.Node) bool {
		out.Nodes = append(out.Nodes, persistence.StreamNode{Master: rdbID(n.Master), Listpack: n.Listpack})
		return true
	})
	st := s.IDMP()
	idmp := &persistence.IDMP{Duration: uint64(st.Duration), MaxSize: uint64(st.MaxSize), Added: st.Added, Duplicates: st.Duplicates}
	for _, p := range st.Producers {
		pr := persistence.IDMPProducer{PID: p.PID}
		for _, r := range p.IIDs {
			pr.Entries = append(pr.Entries, persistence.IDMPEntry{IID: r.IID, ID: rdbID(r.ID), Time: r.Time})
		}
		idmp.Producers = append(idmp.Producers, pr)
	}
	if st.Added > 0 || st.Duplicates > 0 || st.Duration != stream.DefaultIDMPDuration || st.MaxSize != stream.DefaultIDMPMaxSize {
		out.IDMP = idmp
	}
	return out
}

// streamFromRDB builds a stream from a decoded one. Consumer groups come
// with a later change: a file that has some is refused rather than
// loaded without them.
func streamFromRDB(v *persistence.Stream) (*stream.Stream, error) {
	if len(v.Groups) > 0 {
		return nil, fmt.Errorf("stream with %d consumer groups: groups are not supported yet", len(v.Groups))
	}
	nodes := make([]stream.Node, len(v.Nodes))
	for i, n := range v.Nodes {
		nodes[i] = stream.Node{Master: stream.ID(n.Master), Listpack: n.Listpack}
	}
	s, err := stream.FromNodes(nodes, stream.Meta{Length: v.Length, LastID: stream.ID(v.LastID), FirstID: stream.ID(v.FirstID),
		MaxDeletedID: stream.ID(v.MaxDeletedID), EntriesAdded: v.EntriesAdded})
	if err != nil || v.IDMP == nil {
		return s, err
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

func rdbID(id stream.ID) persistence.StreamID { return persistence.StreamID(id) }
