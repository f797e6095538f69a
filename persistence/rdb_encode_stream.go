package persistence

// stream writes a stream in the RDB_TYPE_STREAM_LISTPACKS_2 layout:
//
//	nodes | (master ID, listpack) ... | length | last ID | first ID |
//	max deleted ID | entries added | groups | group ...
//
// where each group is its name, last delivered ID, entries read, global
// PEL (ID, delivery time, delivery count) and consumers (name, seen time,
// the IDs of its PEL).
func (e *Encoder) stream(s *Stream) {
	w := e.w
	w.length(uint64(len(s.Nodes)))
	for _, n := range s.Nodes {
		key := n.Master.bytes()
		w.str(key[:])
		w.str(n.Listpack)
	}
	w.length(s.Length)
	e.id(s.LastID)
	e.id(s.FirstID)
	e.id(s.MaxDeletedID)
	w.length(s.EntriesAdded)
	w.length(uint64(len(s.Groups)))
	for i := range s.Groups {
		e.group(&s.Groups[i])
	}
}

// id writes an ID as two lengths.
func (e *Encoder) id(id StreamID) {
	e.w.length(id.Ms)
	e.w.length(id.Seq)
}

func (e *Encoder) group(g *Group) {
	w := e.w
	w.str(g.Name)
	e.id(g.LastID)
	w.length(uint64(g.EntriesRead)) // -1 (unknown) is stored as 2^64-1, as Redis does
	w.length(uint64(len(g.PEL)))
	for _, p := range g.PEL {
		w.rawID(p.ID)
		w.ms(p.DeliveryTime)
		w.length(p.DeliveryCount)
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
