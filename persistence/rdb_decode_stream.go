package persistence

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/redstream/redstream/stream"
)

// stream reads a stream of any of the three layouts, attaches the
// extension field held for key (files write it before the key) and
// builds the stream.
func (d *Decoder) stream(t byte, key []byte) (Value, error) {
	start := d.r.off
	st, err := d.streamState(t)
	if err != nil {
		return nil, err
	}
	if e := d.takeExt(key); e != nil {
		if err := applyExt(st, e); err != nil {
			return nil, err
		}
		d.stats.RedstreamExts++
	}
	v, err := loadStream(t, st)
	if err != nil {
		d.r.itemOff = start // the stream as a whole is wrong
	}
	return v, err
}

// loadStream builds a decoded stream with stream.FromState, which checks
// every node (listpack and stream node layout), the order of nodes and
// entries, the counters against the nodes, and the groups' PELs. A
// version 1 stream has no read counters: each group gets Redis's
// estimate, as Redis gives it on loading one.
func loadStream(t byte, st *stream.State) (Value, error) {
	for i := range st.Groups {
		disownReleased(&st.Groups[i])
	}
	s, err := stream.FromState(st)
	if err != nil {
		return nil, corruptWrap(err, "stream value")
	}
	if t == typeStreamListpacks {
		s.EachGroup(func(g *stream.Group) bool {
			s.SetGroupID(g, g.LastID(), s.EstimateEntriesRead(g.LastID()))
			return true
		})
	}
	return Stream{s}, nil
}

// disownReleased turns the entries of the reserved consumer (see
// ownReleased) back into released ones, in release order.
func disownReleased(g *stream.GroupState) {
	i := slices.IndexFunc(g.Consumers, func(c stream.ConsumerState) bool {
		return bytes.Equal(c.Name, releasedConsumer) && c.SeenTime == releasedMark
	})
	if i < 0 {
		return
	}
	released := make(map[stream.ID]bool, len(g.Consumers[i].PEL))
	for _, id := range g.Consumers[i].PEL {
		released[id] = true
	}
	g.Consumers = slices.Delete(g.Consumers, i, i+1)
	var order []stream.PendingState
	for j := range g.PEL {
		if released[g.PEL[j].ID] {
			order = append(order, g.PEL[j])
			g.PEL[j].DeliveryTime = 0
		}
	}
	slices.SortStableFunc(order, func(a, b stream.PendingState) int { return cmp.Compare(a.DeliveryTime, b.DeliveryTime) })
	for _, p := range order {
		g.Released = append(g.Released, p.ID)
	}
}

// streamState reads a stream's nodes, counters and groups as they are in
// the file; loadStream checks them.
func (d *Decoder) streamState(t byte) (*stream.State, error) {
	st := &stream.State{}
	if err := d.streamNodes(st); err != nil {
		return nil, err
	}
	if err := d.streamMeta(st, t); err != nil {
		return nil, err
	}
	return st, d.streamGroups(st, t)
}

// streamNodes reads the node count and each node: its 16-byte master ID
// and its listpack.
func (d *Decoder) streamNodes(st *stream.State) error {
	n, err := d.r.count("a stream's node count")
	if err != nil {
		return err
	}
	if err := d.r.countFits(n, 25, "a stream's node count"); err != nil {
		return err
	}
	st.Nodes = make([]stream.Node, 0, min(n, 1024))
	for range n {
		key, err := d.r.str("a stream node key")
		if err != nil {
			return err
		}
		if len(key) != 16 {
			return rdbCorruptf("stream node key is %d bytes, not 16", len(key))
		}
		lp, err := d.r.str("a stream node listpack")
		if err != nil {
			return err
		}
		st.Nodes = append(st.Nodes, stream.Node{Master: stream.IDFromKey(key), Listpack: lp})
	}
	return nil
}

// streamMeta reads the length and IDs after the nodes. Version 1 streams
// lack the first ID, the tombstone and the added counter; like Redis we
// take entries-added from the length (the first ID is always recomputed
// from the nodes).
func (d *Decoder) streamMeta(st *stream.State, t byte) error {
	var err error
	if st.Length, err = d.r.count("a stream's length"); err != nil {
		return err
	}
	if st.LastID, err = d.streamID("a stream's last ID"); err != nil {
		return err
	}
	if t == typeStreamListpacks {
		st.EntriesAdded = st.Length
		return nil
	}
	if st.FirstID, err = d.streamID("a stream's first ID"); err != nil {
		return err
	}
	if st.MaxDeletedID, err = d.streamID("a stream's max deleted ID"); err != nil {
		return err
	}
	st.EntriesAdded, err = d.r.count("a stream's entries-added counter")
	return err
}

// streamID reads an ID as two lengths, ms then seq.
func (d *Decoder) streamID(what string) (stream.ID, error) {
	ms, err := d.r.count(what)
	if err != nil {
		return stream.ID{}, err
	}
	seq, err := d.r.count(what)
	return stream.ID{Ms: ms, Seq: seq}, err
}

// rawID reads an ID in its 16-byte big-endian form.
func (d *Decoder) rawID(what string) (stream.ID, error) {
	b, err := d.r.fixed(16, what)
	if err != nil {
		return stream.ID{}, err
	}
	return stream.IDFromKey(b), nil
}

// streamGroups reads the consumer groups.
func (d *Decoder) streamGroups(st *stream.State, t byte) error {
	n, err := d.r.count("a stream's group count")
	if err != nil {
		return err
	}
	if err := d.r.countFits(n, 5, "a stream's group count"); err != nil {
		return err
	}
	for range n {
		g, err := d.group(t)
		if err != nil {
			return err
		}
		st.Groups = append(st.Groups, g)
	}
	return nil
}

// group reads one consumer group: name, last delivered ID, entries-read
// (version 2 on), PEL and consumers.
func (d *Decoder) group(t byte) (stream.GroupState, error) {
	var g stream.GroupState
	var err error
	if g.Name, err = d.r.str("a group name"); err != nil {
		return g, err
	}
	if g.LastID, err = d.streamID("a group's last delivered ID"); err != nil {
		return g, err
	}
	if t != typeStreamListpacks {
		var n uint64
		if n, err = d.r.count("a group's entries-read counter"); err != nil {
			return g, err
		}
		g.EntriesRead = int64(n) // Redis stores -1 as 2^64-1
	}
	if g.PEL, err = d.groupPEL(); err != nil {
		return g, err
	}
	g.Consumers, err = d.consumers(t)
	return g, err
}

// groupPEL reads a group's pending entries: ID, delivery time and count.
func (d *Decoder) groupPEL() ([]stream.PendingState, error) {
	n, err := d.r.count("a group's PEL size")
	if err != nil {
		return nil, err
	}
	if err := d.r.countFits(n, 25, "a group's PEL size"); err != nil {
		return nil, err
	}
	pel := make([]stream.PendingState, 0, min(n, 1024))
	for range n {
		var p stream.PendingState
		if p.ID, err = d.rawID("a pending entry ID"); err != nil {
			return nil, err
		}
		if p.DeliveryTime, err = d.r.ms("a delivery time"); err != nil {
			return nil, err
		}
		count, err := d.r.count("a delivery count")
		if err != nil {
			return nil, err
		}
		p.DeliveryCount = int64(count)
		pel = append(pel, p)
	}
	return pel, nil
}

// consumers reads a group's consumers and their PELs.
func (d *Decoder) consumers(t byte) ([]stream.ConsumerState, error) {
	n, err := d.r.count("a group's consumer count")
	if err != nil {
		return nil, err
	}
	if err := d.r.countFits(n, 10, "a group's consumer count"); err != nil {
		return nil, err
	}
	var out []stream.ConsumerState
	for range n {
		c, err := d.consumer(t)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// consumer reads one consumer: name, seen time, active time (version 3;
// before, Redis's estimate, the seen time) and its PEL IDs.
func (d *Decoder) consumer(t byte) (stream.ConsumerState, error) {
	var c stream.ConsumerState
	var err error
	if c.Name, err = d.r.str("a consumer name"); err != nil {
		return c, err
	}
	if c.SeenTime, err = d.r.ms("a consumer's seen time"); err != nil {
		return c, err
	}
	c.ActiveTime = c.SeenTime
	if t == typeStreamListpacks3 {
		if c.ActiveTime, err = d.r.ms("a consumer's active time"); err != nil {
			return c, err
		}
	}
	n, err := d.r.count("a consumer's PEL size")
	if err != nil {
		return c, err
	}
	if err := d.r.countFits(n, 16, "a consumer's PEL size"); err != nil {
		return c, err
	}
	c.PEL = make([]stream.ID, 0, min(n, 1024))
	for range n {
		id, err := d.rawID("a consumer's pending ID")
		if err != nil {
			return c, err
		}
		c.PEL = append(c.PEL, id)
	}
	return c, nil
}
