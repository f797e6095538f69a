package persistence

import (
	"bytes"
	"math"
	"slices"

	"github.com/redstream/redstream/stream"
)

// stream writes a stream in the RDB_TYPE_STREAM_LISTPACKS_2 layout:
//
//	nodes | (master ID, listpack) ... | length | last ID | first ID |
//	max deleted ID | entries added | groups | group ...
//
// where each group is its name, last delivered ID, entries read, global
// PEL (ID, delivery time, delivery count) and consumers (name, seen time,
// the IDs of its PEL). st comes from rdbState.
func (e *Encoder) stream(st *stream.State) {
	w := e.w
	w.length(uint64(len(st.Nodes)))
	for _, n := range st.Nodes {
		key := n.Master.Key()
		w.str(key[:])
		w.str(n.Listpack)
	}
	w.length(st.Length)
	e.id(st.LastID)
	e.id(st.FirstID)
	e.id(st.MaxDeletedID)
	w.length(st.EntriesAdded)
	w.length(uint64(len(st.Groups)))
	for i := range st.Groups {
		e.group(&st.Groups[i])
	}
}

// id writes an ID as two lengths.
func (e *Encoder) id(id stream.ID) {
	e.w.length(id.Ms)
	e.w.length(id.Seq)
}

func (e *Encoder) group(g *stream.GroupState) {
	w := e.w
	w.str(g.Name)
	e.id(g.LastID)
	w.length(uint64(g.EntriesRead)) // -1 (unknown) is stored as 2^64-1, as Redis does
	w.length(uint64(len(g.PEL)))
	for _, p := range g.PEL {
		w.rawID(p.ID)
		w.ms(p.DeliveryTime)
		w.length(uint64(p.DeliveryCount))
	}
	w.length(uint64(len(g.Consumers)))
	for _, c := range g.Consumers {
		w.str(c.Name)
		w.ms(c.SeenTime)
		w.length(uint64(len(c.PEL)))
		for _, id := range c.PEL {
			w.rawID(id)
		}
	}
}

// Entries released by XNACK (Redis 8.8) have no owner, and RDB version
// 10 has no place for an entry without one (Redis 7 refuses such files).
// They are written as owned by a reserved consumer, releasedConsumer,
// whose seen and active times are releasedMark, and their delivery times
// are their positions in release order (1, 2, ...), which CLAIM follows;
// the decoder turns them back into released entries with delivery time
// 0. A real consumer of that name and seen time is, in practice,
// impossible.
var releasedConsumer = []byte("\x00redstream:released")

const releasedMark = math.MinInt64

// rdbState returns what the encoder writes of s: its state with each
// group's released entries owned by the reserved consumer.
func rdbState(s Stream) *stream.State {
	st := s.State()
	for i := range st.Groups {
		if len(st.Groups[i].Released) > 0 {
			ownReleased(&st.Groups[i])
		}
	}
	return &st
}

func ownReleased(g *stream.GroupState) {
	rank := make(map[stream.ID]int64, len(g.Released))
	for i, id := range g.Released {
		rank[id] = int64(i + 1)
	}
	rc := stream.ConsumerState{Name: releasedConsumer, SeenTime: releasedMark, ActiveTime: releasedMark}
	for i := range g.PEL {
		if r, ok := rank[g.PEL[i].ID]; ok {
			g.PEL[i].DeliveryTime = r
			rc.PEL = append(rc.PEL, g.PEL[i].ID)
		}
	}
	i, _ := slices.BinarySearchFunc(g.Consumers, rc.Name, func(c stream.ConsumerState, name []byte) int { return bytes.Compare(c.Name, name) })
	g.Consumers = slices.Insert(g.Consumers, i, rc) // in name order, as Redis writes consumers
	g.Released = nil
}
