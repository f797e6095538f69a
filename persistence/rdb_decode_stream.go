package persistence

import (
	"math"
	"sort"

	"github.com/redstream/redstream/listpack"
)

// streamScan carries what the node pass learned to the later checks.
type streamScan struct {
	live      uint64
	last      StreamID // last entry, tombstones included
	firstLive StreamID
	hasLive   bool
	any       bool
}

// stream reads a stream of any of the three layouts.
func (d *Decoder) stream(t byte) (*Stream, error) {
	s := &Stream{}
	scan, err := d.streamNodes(s)
	if err != nil {
		return nil, err
	}
	if err := d.streamMeta(s, t, scan); err != nil {
		return nil, err
	}
	return s, d.streamGroups(s, t)
}

// streamNodes reads the node count and each node: its 16-byte master ID
// and its listpack, validated as a listpack and as a stream node.
func (d *Decoder) streamNodes(s *Stream) (streamScan, error) {
	var scan streamScan
	n, err := d.r.count("a stream's node count")
	if err != nil {
		return scan, err
	}
	if err := d.r.countFits(n, 25, "a stream's node count"); err != nil {
		return scan, err
	}
	s.Nodes = make([]StreamNode, 0, min(n, 1024))
	for range n {
		node, sum, err := d.streamNode()
		if err != nil {
			return scan, err
		}
		if scan.any && node.Master.Compare(scan.last) <= 0 {
			return scan, rdbCorruptf("stream node %s does not follow entry %s", node.Master, scan.last)
		}
		scan.add(sum)
		s.Nodes = append(s.Nodes, node)
	}
	return scan, nil
}

func (sc *streamScan) add(sum nodeSummary) {
	sc.any = true
	sc.last = sum.last
	sc.live += uint64(sum.live)
	if sum.hasLive && !sc.hasLive {
		sc.firstLive, sc.hasLive = sum.firstLive, true
	}
}

// streamNode reads and checks one node.
func (d *Decoder) streamNode() (StreamNode, nodeSummary, error) {
	key, err := d.r.str("a stream node key")
	if err != nil {
		return StreamNode{}, nodeSummary{}, err
	}
	if len(key) != 16 {
		return StreamNode{}, nodeSummary{}, rdbCorruptf("stream node key is %d bytes, not 16", len(key))
	}
	b, err := d.r.str("a stream node listpack")
	if err != nil {
		return StreamNode{}, nodeSummary{}, err
	}
	if err := listpack.Validate(b, true); err != nil {
		return StreamNode{}, nodeSummary{}, corruptWrap(err, "stream node")
	}
	if len(b) == 7 { // header and terminator only: no master entry
		return StreamNode{}, nodeSummary{}, rdbCorruptf("stream node listpack is empty")
	}
	node := StreamNode{Master: streamIDFrom(key), Listpack: b}
	sum, err := checkStreamNode(node.Listpack, node.Master)
	return node, sum, err
}

// streamMeta reads the length and IDs after the nodes. Version 1 streams
// lack the first ID, the tombstone and the added counter; like Redis we
// derive them (entries-added from the length, first ID from the nodes).
func (d *Decoder) streamMeta(s *Stream, t byte, scan streamScan) error {
	var err error
	if s.Length, err = d.r.count("a stream's length"); err != nil {
		return err
	}
	if s.LastID, err = d.streamID("a stream's last ID"); err != nil {
		return err
	}
	if t == typeStreamListpacks {
		s.EntriesAdded = s.Length
		s.FirstID = StreamID{math.MaxUint64, math.MaxUint64} // Redis's value for an empty stream
		if scan.hasLive {
			s.FirstID = scan.firstLive
		}
	} else if err := d.streamMeta2(s); err != nil {
		return err
	}
	switch {
	case s.Length != scan.live:
		return rdbCorruptf("stream length %d, its nodes hold %d live entries", s.Length, scan.live)
	case scan.any && s.LastID.Compare(scan.last) < 0:
		return rdbCorruptf("stream last ID %s is below its entry %s", s.LastID, scan.last)
	}
	return nil
}

// streamMeta2 reads what version 2 added: first ID, max deleted ID and
// entries added.
func (d *Decoder) streamMeta2(s *Stream) error {
	var err error
	if s.FirstID, err = d.streamID("a stream's first ID"); err != nil {
		return err
	}
	if s.MaxDeletedID, err = d.streamID("a stream's max deleted ID"); err != nil {
		return err
	}
	s.EntriesAdded, err = d.r.count("a stream's entries-added counter")
	return err
}

// streamID reads an ID as two lengths, ms then seq.
func (d *Decoder) streamID(what string) (StreamID, error) {
	ms, err := d.r.count(what)
	if err != nil {
		return StreamID{}, err
	}
	seq, err := d.r.count(what)
	return StreamID{ms, seq}, err
}

// rawID reads an ID in its 16-byte big-endian form.
func (d *Decoder) rawID(what string) (StreamID, error) {
	b, err := d.r.fixed(16, what)
	if err != nil {
		return StreamID{}, err
	}
	return streamIDFrom(b), nil
}

// streamGroups reads the consumer groups.
func (d *Decoder) streamGroups(s *Stream, t byte) error {
	n, err := d.r.count("a stream's group count")
	if err != nil {
		return err
	}
	if err := d.r.countFits(n, 5, "a stream's group count"); err != nil {
		return err
	}
	seen := map[string]bool{}
	for range n {
		g, err := d.group(s, t)
		if err != nil {
			return err
		}
		if seen[string(g.Name)] {
			return rdbCorruptf("stream has two groups named %q", g.Name)
		}
		seen[string(g.Name)] = true
		s.Groups = append(s.Groups, g)
	}
	return nil
}

// group reads one consumer group: name, last delivered ID, entries-read
// (version 2 on; estimated as Redis does before), PEL and consumers.
func (d *Decoder) group(s *Stream, t byte) (Group, error) {
	var g Group
	var err error
	if g.Name, err = d.r.str("a group name"); err != nil {
		return g, err
	}
	if g.LastID, err = d.streamID("a group's last delivered ID"); err != nil {
		return g, err
	}
	if t == typeStreamListpacks {
		g.EntriesRead = estimateEntriesRead(s, g.LastID)
	} else {
		var n uint64
		if n, err = d.r.count("a group's entries-read counter"); err != nil {
			return g, err
		}
		g.EntriesRead = int64(n) // Redis stores -1 as 2^64-1
	}
	if g.PEL, err = d.groupPEL(); err != nil {
		return g, err
	}
	owned := make([]bool, len(g.PEL))
	if g.Consumers, err = d.consumers(t, g.PEL, owned); err != nil {
		return g, err
	}
	for i, o := range owned {
		if !o {
			return g, rdbCorruptf("group %q pending entry %s has no consumer", g.Name, g.PEL[i].ID)
		}
	}
	return g, nil
}

// groupPEL reads a group's pending entries: ID, delivery time and count,
// IDs strictly increasing.
func (d *Decoder) groupPEL() ([]PendingEntry, error) {
	n, err := d.r.count("a group's PEL size")
	if err != nil {
		return nil, err
	}
	if err := d.r.countFits(n, 25, "a group's PEL size"); err != nil {
		return nil, err
	}
	pel := make([]PendingEntry, 0, min(n, 1024))
	for i := range n {
		var e PendingEntry
		if e.ID, err = d.rawID("a pending entry ID"); err != nil {
			return nil, err
		}
		if i > 0 && e.ID.Compare(pel[i-1].ID) <= 0 {
			return nil, rdbCorruptf("pending entry %s does not follow %s", e.ID, pel[i-1].ID)
		}
		if e.DeliveryTime, err = d.r.ms("a delivery time"); err != nil {
			return nil, err
		}
		if e.DeliveryCount, err = d.r.count("a delivery count"); err != nil {
			return nil, err
		}
		pel = append(pel, e)
	}
	return pel, nil
}

// consumers reads a group's consumers and their PELs, marking in owned
// which group PEL entries they claim.
func (d *Decoder) consumers(t byte, pel []PendingEntry, owned []bool) ([]Consumer, error) {
	n, err := d.r.count("a group's consumer count")
	if err != nil {
		return nil, err
	}
	if err := d.r.countFits(n, 10, "a group's consumer count"); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []Consumer
	for range n {
		c, err := d.consumer(t, pel, owned)
		if err != nil {
			return nil, err
		}
		if seen[string(c.Name)] {
			return nil, rdbCorruptf("group has two consumers named %q", c.Name)
		}
		seen[string(c.Name)] = true
		out = append(out, c)
	}
	return out, nil
}

// consumer reads one consumer: name, seen time, active time (version 3;
// before, Redis's estimate, the seen time) and its PEL IDs.
func (d *Decoder) consumer(t byte, pel []PendingEntry, owned []bool) (Consumer, error) {
	var c Consumer
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
	c.PEL, err = d.consumerPEL(c.Name, pel, owned)
	return c, err
}

// consumerPEL reads a consumer's pending IDs, each of which must be in the
// group PEL and not claimed by another consumer.
func (d *Decoder) consumerPEL(name []byte, pel []PendingEntry, owned []bool) ([]StreamID, error) {
	n, err := d.r.count("a consumer's PEL size")
	if err != nil {
		return nil, err
	}
	if err := d.r.countFits(n, 16, "a consumer's PEL size"); err != nil {
		return nil, err
	}
	ids := make([]StreamID, 0, min(n, 1024))
	for i := range n {
		id, err := d.rawID("a consumer's pending ID")
		if err != nil {
			return nil, err
		}
		if i > 0 && id.Compare(ids[i-1]) <= 0 {
			return nil, rdbCorruptf("consumer %q pending ID %s does not follow %s", name, id, ids[i-1])
		}
		k := sort.Search(len(pel), func(j int) bool { return pel[j].ID.Compare(id) >= 0 })
		if k == len(pel) || pel[k].ID != id || owned[k] {
			return nil, rdbCorruptf("consumer %q pending ID %s is not a free entry of its group's PEL", name, id)
		}
		owned[k] = true
		ids = append(ids, id)
	}
	return ids, nil
}

// estimateEntriesRead guesses a group's entries-read counter for a
// version 1 stream the way Redis does on upgrade: exact at the stream's
// ends, unknown (-1) in between. Version 1 streams have no tombstone and
// EntriesAdded equals Length.
func estimateEntriesRead(s *Stream, id StreamID) int64 {
	switch {
	case s.EntriesAdded == 0:
		return 0
	case s.Length == 0 && id.Compare(s.LastID) <= 0:
		return int64(s.EntriesAdded)
	case id == s.LastID:
		return int64(s.EntriesAdded)
	case id.Compare(s.LastID) > 0:
		return -1
	case id.Compare(s.FirstID) < 0:
		return int64(s.EntriesAdded - s.Length)
	case id == s.FirstID:
		return int64(s.EntriesAdded-s.Length) + 1
	}
	return -1
}
