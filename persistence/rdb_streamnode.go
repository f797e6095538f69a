package persistence

import "github.com/redstream/redstream/listpack"

// Stream entry flags, as the first field of each entry in a node.
const (
	streamFlagDeleted    = 1 // a tombstone left by XDEL or trimming
	streamFlagSameFields = 2 // the fields are the master entry's; only values follow
)

// nodeSummary is what checking a stream node learns about it.
type nodeSummary struct {
	live, deleted int64
	first, last   StreamID // first and last entries, tombstones included
	firstLive     StreamID
	hasLive       bool
}

// lpCursor walks a deep-validated listpack one field at a time.
type lpCursor struct {
	lp  listpack.Listpack
	off int
}

func (c *lpCursor) int(what string) (int64, error) {
	if c.off < 0 {
		return 0, rdbCorruptf("stream node ends before %s", what)
	}
	n, ok := c.lp.GetInt(c.off)
	if !ok {
		return 0, rdbCorruptf("stream node %s is not an integer", what)
	}
	c.off = c.lp.Next(c.off)
	return n, nil
}

func (c *lpCursor) count(what string) (int64, error) {
	n, err := c.int(what)
	if err == nil && n < 0 {
		err = rdbCorruptf("stream node %s is negative (%d)", what, n)
	}
	return n, err
}

func (c *lpCursor) skip(n int64, what string) error {
	for ; n > 0; n-- {
		if c.off < 0 {
			return rdbCorruptf("stream node ends inside %s", what)
		}
		c.off = c.lp.Next(c.off)
	}
	return nil
}

// checkStreamNode checks that lp (already deep-validated as a listpack)
// has the layout of a stream node keyed by master: the master entry
//
//	live-count | deleted-count | num-fields | field ... | 0
//
// then live+deleted entries, each
//
//	flags | ms-diff | seq-diff | [num-fields | field value ...] | lp-count
//
// where the bracketed part is just the values when flags has SameFields,
// and lp-count is the number of fields the entry spans minus one. Entry
// IDs (master plus the diffs) must strictly increase from the master ID.
func checkStreamNode(lp listpack.Listpack, master StreamID) (nodeSummary, error) {
	c := &lpCursor{lp: lp, off: lp.First()}
	sum := nodeSummary{last: master}
	live, err := c.count("live count")
	if err != nil {
		return sum, err
	}
	deleted, err := c.count("deleted count")
	if err != nil {
		return sum, err
	}
	masterFields, err := c.count("master field count")
	if err != nil {
		return sum, err
	}
	if err := c.skip(masterFields, "the master fields"); err != nil {
		return sum, err
	}
	if zero, err := c.int("master terminator"); err != nil || zero != 0 {
		return sum, orCorrupt(err, "stream node master entry does not end with 0")
	}
	if live+deleted < live { // overflow
		return sum, rdbCorruptf("stream node counts %d and %d are absurd", live, deleted)
	}
	for i := int64(0); i < live+deleted; i++ {
		if err := checkStreamEntry(c, master, masterFields, &sum); err != nil {
			return sum, err
		}
	}
	switch {
	case c.off >= 0:
		return sum, rdbCorruptf("stream node has fields after its %d entries", live+deleted)
	case sum.live != live || sum.deleted != deleted:
		return sum, rdbCorruptf("stream node header counts %d live and %d deleted, entries have %d and %d",
			live, deleted, sum.live, sum.deleted)
	}
	return sum, nil
}

func orCorrupt(err error, msg string) error {
	if err != nil {
		return err
	}
	return rdbCorruptf("%s", msg)
}

// checkStreamEntry checks one entry and adds it to sum.
func checkStreamEntry(c *lpCursor, master StreamID, masterFields int64, sum *nodeSummary) error {
	flags, err := c.int("entry flags")
	if err != nil {
		return err
	}
	if flags < 0 || flags > streamFlagDeleted|streamFlagSameFields {
		return rdbCorruptf("stream entry flags %d are unknown", flags)
	}
	id, err := entryID(c, master)
	if err != nil {
		return err
	}
	fields, span := masterFields, masterFields+3
	if flags&streamFlagSameFields == 0 {
		if fields, err = c.count("entry field count"); err != nil {
			return err
		}
		span = 2*fields + 4
		err = c.skip(2*fields, "entry fields and values")
	} else {
		err = c.skip(fields, "entry values")
	}
	if err != nil {
		return err
	}
	if lpCount, err := c.int("entry lp-count"); err != nil || lpCount != span {
		return orCorrupt(err, "stream entry lp-count does not match its fields")
	}
	return sum.add(id, flags&streamFlagDeleted != 0)
}

// entryID reads an entry's ms-diff and seq-diff and adds them to master.
func entryID(c *lpCursor, master StreamID) (StreamID, error) {
	ms, err := c.int("entry ms-diff")
	if err != nil {
		return StreamID{}, err
	}
	seq, err := c.int("entry seq-diff")
	if err != nil {
		return StreamID{}, err
	}
	return StreamID{master.Ms + uint64(ms), master.Seq + uint64(seq)}, nil
}

// add records entry id, which must follow the previous one (or, for the
// first, not precede the master ID, passed in as sum.last beforehand).
func (s *nodeSummary) add(id StreamID, deleted bool) error {
	if s.live+s.deleted == 0 {
		if id.Compare(s.last) < 0 {
			return rdbCorruptf("stream entry %s is below its node's master ID %s", id, s.last)
		}
		s.first = id
	} else if id.Compare(s.last) <= 0 {
		return rdbCorruptf("stream entry %s does not follow %s", id, s.last)
	}
	s.last = id
	if deleted {
		s.deleted++
		return nil
	}
	if !s.hasLive {
		s.firstLive, s.hasLive = id, true
	}
	s.live++
	return nil
}
