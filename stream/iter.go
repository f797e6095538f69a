package stream

import (
	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/radix"
)

// Iterator walks the entries of a stream whose IDs lie in a closed range,
// in ascending or descending order, hiding the radix tree and listpack
// pair underneath. XRANGE, XREVRANGE, XREAD, XINFO and (later) the AOF
// rewrite all read through it:
//
//	it := s.Range(start, end, false)
//	defer it.Close()
//	for it.Next() {
//		id := it.ID()
//		for range it.NumFields() {
//			field, value := it.Pair()
//			...
//		}
//	}
//
// Values returned by Pair point into the node or into the iterator's own
// buffers: they are valid until the next call to Pair or Next, and only
// while the stream is not modified. The stream must not be modified while
// an iterator is in use.
type Iterator struct {
	s          *Stream
	rit        *radix.Iterator[*node]
	lent       bool // rit is the stream's reader, to give back
	start, end ID
	rev        bool
	tombstones bool // report deleted entries too
	started    bool
	primed     bool // rit is on the first node to load
	done       bool

	lp  listpack.Listpack // the current node; nil between nodes
	mid ID                // its master ID
	m   master
	pos int // forward: next entry's flags; backward: an lp-count; -1: node done

	cur      entry
	left     int // pairs not yet read by Pair
	fieldPtr int // next field name (the master's when same fields)
	valuePtr int // next value (or field, without same fields)

	fbuf, vbuf [listpack.IntBufLen]byte
}

// Range returns an iterator over the live entries with start <= ID <=
// end, in ascending order or, with rev, descending.
func (s *Stream) Range(start, end ID, rev bool) *Iterator {
	return &Iterator{s: s, start: start, end: end, rev: rev}
}

// IncludeDeleted makes the iterator report deleted entries (tombstones)
// too; Deleted tells them apart. Call it before the first Next.
func (it *Iterator) IncludeDeleted() { it.tombstones = true }

// Next moves to the next entry in range and reports whether there is one.
func (it *Iterator) Next() bool {
	if it.done {
		return false
	}
	if !it.started {
		it.started = true
		if !it.seek() {
			it.Close()
			return false
		}
	}
	it.finishEntry()
	for {
		if it.lp == nil && !it.nextNode() {
			it.Close()
			return false
		}
		ok, stop := it.nextInNode()
		switch {
		case stop:
			it.Close()
			return false
		case ok:
			return true
		}
		it.lp = nil // node exhausted
	}
}

// Close ends the iteration early; Next returns false from then on. An
// iterator run to its end closes itself. Closing lets the stream lend the
// same buffers to the next Range, so readers should close what they stop
// reading early (it is not required for correctness).
func (it *Iterator) Close() {
	it.done = true
	if it.lent {
		it.lent = false
		it.s.readerBusy = false
	}
	it.rit = nil
}

// seek positions the radix iterator on the node where the walk begins:
// the last node whose master ID is <= the first ID wanted (start going
// forward, end going backward). Going forward from before every node
// begins at the first node; going backward from before every node finds
// nothing. The node found is loaded by the first nextNode.
func (it *Iterator) seek() bool {
	from := it.start
	if it.rev {
		from = it.end
	}
	k := from.Key()
	it.rit, it.lent = it.s.borrowReader(k[:])
	if it.rev {
		it.primed = it.rit.Prev()
		return it.primed
	}
	if it.primed = it.rit.Next(); !it.primed {
		it.rit.Seek(radix.First, nil)
		it.primed = it.rit.Next()
	}
	return it.primed
}

// borrowReader returns a radix iterator seeked to the last key <= k: the
// stream's own when it is free (an XREAD or XRANGE then allocates nothing
// for it), a new one otherwise.
func (s *Stream) borrowReader(k []byte) (rit *radix.Iterator[*node], lent bool) {
	switch {
	case s.readerBusy:
		return s.rax.Seek(radix.LE, k), false
	case s.reader == nil:
		s.reader = s.rax.Seek(radix.LE, k)
	default:
		s.reader.Seek(radix.LE, k)
	}
	s.readerBusy = true
	return s.reader, true
}

// nextNode loads the next node in the walk's direction.
func (it *Iterator) nextNode() bool {
	switch {
	case it.primed:
		it.primed = false
	case it.rev && !it.rit.Prev(), !it.rev && !it.rit.Next():
		return false
	}
	it.lp = it.rit.Value().lp
	it.mid = IDFromKey(it.rit.Key())
	it.m = readMaster(it.lp)
	switch {
	case it.rev:
		it.pos = it.lp.Last()
	case it.mid.Less(it.start):
		it.pos = seekInNode(it.lp, it.mid, &it.m, it.start)
	default:
		it.pos = it.m.firstOff
	}
	return true
}

// seekInNode returns the offset of the first entry whose ID is >= start
// (deleted or not), or -1 if there is none in the node. It walks back
// from the node's last entry: readers that follow a stream ask for its
// newest entries (XREAD), which it finds in a step or two, and a start
// at random costs what a walk from the front would.
func seekInNode(lp listpack.Listpack, mid ID, m *master, start ID) int {
	pos := -1
	for p := lp.Last(); ; {
		n := getInt(lp, p) // the lp-count of the entry ending at p
		if n == 0 {
			return pos // the master's terminator: every entry is >= start
		}
		off := p
		for range n {
			off = lp.Prev(off)
		}
		if e := readEntry(lp, off, mid, m); e.id.Less(start) {
			return pos
		}
		pos = off
		p = lp.Prev(off)
	}
}

// nextInNode finds the next entry in range within the current node. ok
// means one was found; stop means the walk is past the range.
func (it *Iterator) nextInNode() (ok, stop bool) {
	for {
		e, more := it.step()
		if !more {
			return false, false // node done
		}
		if e.deleted() && !it.tombstones {
			continue
		}
		switch {
		case !it.rev && e.id.Less(it.start), it.rev && e.id.Compare(it.end) > 0:
			continue // not yet in range
		case !it.rev && e.id.Compare(it.end) > 0, it.rev && e.id.Less(it.start):
			return false, true // past the range: so is every later entry
		}
		it.setEntry(e)
		return true, false
	}
}

// step decodes the next entry of the node in the walk's direction; more
// is false at the node's end.
func (it *Iterator) step() (e entry, more bool) {
	if it.pos < 0 {
		return e, false
	}
	if !it.rev {
		e = readEntry(it.lp, it.pos, it.mid, &it.m)
		it.pos = e.nextOff(it.lp)
		return e, true
	}
	n := getInt(it.lp, it.pos) // the lp-count of the entry ending here
	if n == 0 {
		return e, false // the master's terminator
	}
	off := it.pos
	for range n {
		off = it.lp.Prev(off)
	}
	e = readEntry(it.lp, off, it.mid, &it.m)
	it.pos = it.lp.Prev(off)
	return e, true
}

func (it *Iterator) setEntry(e entry) {
	it.cur = e
	it.left = e.nfields
	it.valuePtr = e.dataOff
	if e.same() {
		it.fieldPtr = it.m.fieldOff
	}
}

// finishEntry forgets the current entry (the next entry's position was
// found when it was read, so unread pairs need no skipping).
func (it *Iterator) finishEntry() { it.left = 0 }

// ID returns the current entry's ID.
func (it *Iterator) ID() ID { return it.cur.id }

// NumFields returns the number of field-value pairs of the current entry.
func (it *Iterator) NumFields() int { return it.cur.nfields }

// Deleted reports whether the current entry is a tombstone (only seen
// after IncludeDeleted).
func (it *Iterator) Deleted() bool { return it.cur.deleted() }

// Pair returns the current entry's next field and value; call it
// NumFields times. Integers stored compactly are formatted into the
// iterator's buffers, so Pair does not allocate.
func (it *Iterator) Pair() (field, value []byte) {
	if it.left <= 0 {
		return nil, nil
	}
	it.left--
	lp := it.lp
	if it.cur.same() {
		field = lp.Get(it.fieldPtr, it.fbuf[:0])
		it.fieldPtr = lp.Next(it.fieldPtr)
	} else {
		field = lp.Get(it.valuePtr, it.fbuf[:0])
		it.valuePtr = lp.Next(it.valuePtr)
	}
	value = lp.Get(it.valuePtr, it.vbuf[:0])
	it.valuePtr = lp.Next(it.valuePtr)
	return field, value
}

// Size returns the total length of the current entry's ID text, field
// names and values, without consuming its pairs (XREAD MAXSIZE counts
// replies this way).
func (it *Iterator) Size() int {
	var buf [MaxTextLen]byte
	n := len(it.cur.id.AppendText(buf[:0]))
	lp, f, v := it.lp, it.m.fieldOff, it.cur.dataOff
	for range it.cur.nfields {
		if it.cur.same() {
			n += len(lp.Get(f, it.fbuf[:0]))
			f = lp.Next(f)
		} else {
			n += len(lp.Get(v, it.fbuf[:0]))
			v = lp.Next(v)
		}
		n += len(lp.Get(v, it.fbuf[:0]))
		v = lp.Next(v)
	}
	return n
}

// Fields returns a copy of the current entry's fields and values,
// alternating; it consumes the pairs Pair would return.
func (it *Iterator) Fields() [][]byte {
	out := make([][]byte, 0, 2*it.left)
	for it.left > 0 {
		f, v := it.Pair()
		out = append(out, append([]byte(nil), f...), append([]byte(nil), v...))
	}
	return out
}
