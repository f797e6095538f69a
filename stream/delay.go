package stream

import (
	"math"
	"strconv"

	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/radix"
)

// delayed holds a stream's delayed entries (XADD DELAY / AT), ordered by
// the IDs reserved for them: a sorted set of listpack nodes, each indexed
// in a radix tree under a base ID no greater than its first entry and
// greater than every entry of the node before it. In a node, each entry
// is its ID relative to the base and its fields and values:
//
//	+---------+----------+------------+---------+---------+-----+---------+---------+
//	| ms-diff | seq-diff | num-fields | field-1 | value-1 | ... | field-N | value-N |
//	+---------+----------+------------+---------+---------+-----+---------+---------+
//
// so an entry costs what it costs in a stream node plus its field names
// (no master entry to share them) and no lp-count; see doc.go for the
// figures. Nodes hold at most delayNodeEntries entries and about
// delayNodeBytes bytes: an insertion walks one node, a full node splits
// in two, so adding and releasing cost O(log n) for the tree plus a
// bounded amount of copying. Snapshots share nodes copy-on-write, by
// epoch, exactly as the stream's own nodes are shared (see Stream.edit).
type delayed struct {
	idx   radix.Tree[*dnode]
	n     int   // entries
	bytes int64 // what the nodes take, as MemoryUsage counts them
	epoch uint64
	it    *radix.Iterator[*dnode] // reused by lookups; never shared with a frozen copy
}

// dnode is one node of delayed entries.
type dnode struct {
	lp    listpack.Listpack
	count int
	last  ID // the ID of its last entry: adding past it, the common case, walks nothing
	epoch uint64
}

// Limits of a node of delayed entries, the same as a stream node's
// defaults: nodes of a few KB keep a split's copy short.
const (
	delayNodeEntries = 128
	delayNodeBytes   = 4096
)

// dnodeOverhead is what a node costs besides its listpack: the handle and
// its slot in the tree.
const dnodeOverhead = 32 + 48

// dentry is one decoded delayed entry.
type dentry struct {
	id ID
	fv [][]byte
}

// dpos is where one entry sits in a node.
type dpos struct {
	off, elems int // offset of its first element; how many elements it has
	id         ID
}

// at decodes the position of the entry at off in a node with base.
func dAt(lp listpack.Listpack, off int, base ID) dpos {
	p := dpos{off: off}
	p.id.Ms = base.Ms + uint64(getInt(lp, off))
	off = lp.Next(off)
	p.id.Seq = base.Seq + uint64(getInt(lp, off))
	off = lp.Next(off)
	p.elems = 3 + 2*int(getInt(lp, off))
	return p
}

// next returns the offset of the entry after p, or -1.
func (p dpos) next(lp listpack.Listpack) int {
	off := p.off
	for range p.elems {
		if off = lp.Next(off); off < 0 {
			return -1
		}
	}
	return off
}

// fields copies the entry's fields and values out of the node.
func (p dpos) fields(lp listpack.Listpack) [][]byte {
	fv := make([][]byte, 0, p.elems-3)
	off := p.off
	for i := range p.elems {
		if i >= 3 {
			fv = append(fv, lp.AppendValue(nil, off))
		}
		off = lp.Next(off)
	}
	return fv
}

// dentryElems returns the elements that store an entry in a node with base.
func dentryElems(base, id ID, fv [][]byte) [][]byte {
	elems := make([][]byte, 0, 3+len(fv))
	elems = append(elems, strconv.AppendInt(nil, int64(id.Ms-base.Ms), 10))
	elems = append(elems, strconv.AppendInt(nil, int64(id.Seq-base.Seq), 10))
	elems = append(elems, strconv.AppendInt(nil, int64(len(fv)/2), 10))
	return append(elems, fv...)
}

// appendDEntry appends an entry after a node's last, without allocating
// (but to grow the node).
func appendDEntry(lp listpack.Listpack, base, id ID, fv [][]byte) listpack.Listpack {
	lp = lp.AppendInt(int64(id.Ms - base.Ms))
	lp = lp.AppendInt(int64(id.Seq - base.Seq))
	lp = lp.AppendInt(int64(len(fv) / 2))
	for _, b := range fv {
		lp = lp.Append(b)
	}
	return lp
}

// insertElems inserts elems, in order, before the element at off (or the
// terminator, len(lp)-1).
func insertElems(lp listpack.Listpack, off int, elems [][]byte) listpack.Listpack {
	for _, e := range elems {
		lp = lp.Insert(off, e)
		off += listpack.EntrySize(e)
	}
	return lp
}

// buildDNode encodes entries (in ID order) as a node with base, sized to fit.
func buildDNode(base ID, es []dentry, epoch uint64) *dnode {
	lp := listpack.New()
	for _, e := range es {
		lp = appendDEntry(lp, base, e.id, e.fv)
	}
	return &dnode{lp: append(listpack.Listpack(nil), lp...), count: len(es), last: es[len(es)-1].id, epoch: epoch}
}

// decode returns all of a node's entries.
func (n *dnode) decode(base ID) []dentry {
	es := make([]dentry, 0, n.count)
	for off := n.lp.First(); off >= 0; {
		p := dAt(n.lp, off, base)
		es = append(es, dentry{p.id, p.fields(n.lp)})
		off = p.next(n.lp)
	}
	return es
}

func (n *dnode) full() bool {
	return n.count >= delayNodeEntries || len(n.lp) >= delayNodeBytes
}

// Len returns the number of delayed entries.
func (d *delayed) Len() int { return d.n }

// seekLE returns the node with the greatest base <= id and that base, or
// nil when id is below every base. It leaves d.it on the node.
func (d *delayed) seekLE(id ID) (*dnode, ID) {
	k := id.Key()
	if d.it == nil {
		d.it = d.idx.Seek(radix.LE, k[:])
	} else {
		d.it.Seek(radix.LE, k[:])
	}
	if !d.it.Next() {
		return nil, ID{}
	}
	return d.it.Value(), IDFromKey(d.it.Key())
}

// first returns the first node and its base.
func (d *delayed) first() (*dnode, ID, bool) {
	k, n, ok := d.idx.Min()
	if !ok {
		return nil, ID{}, false
	}
	return n, IDFromKey(k), true
}

// put stores n under base, counting its bytes.
func (d *delayed) put(base ID, n *dnode) {
	k := base.Key()
	if old, ok := d.idx.Get(k[:]); ok {
		d.bytes -= int64(cap(old.lp)) + dnodeOverhead
	}
	d.idx.Insert(k[:], n)
	d.bytes += int64(cap(n.lp)) + dnodeOverhead
}

// drop removes the node under base.
func (d *delayed) drop(base ID) {
	k := base.Key()
	if old, ok := d.idx.Delete(k[:]); ok {
		d.bytes -= int64(cap(old.lp)) + dnodeOverhead
	}
}

// edit returns the node under base ready to be written in place: a node
// a snapshot may share (an older epoch) is copied first.
func (d *delayed) edit(base ID, n *dnode) *dnode {
	if n.epoch == d.epoch {
		return n
	}
	c := &dnode{lp: cloneLP(n.lp), count: n.count, last: n.last, epoch: d.epoch}
	d.put(base, c)
	return c
}

// setLP replaces a node's bytes, counting the difference in allocation.
func (d *delayed) setLP(n *dnode, lp listpack.Listpack) {
	d.bytes += int64(cap(lp) - cap(n.lp))
	n.lp = lp
}

// add stores a new entry under id, which must not be stored already.
func (d *delayed) add(id ID, fv [][]byte) {
	d.n++
	n, base := d.seekLE(id)
	if n == nil {
		if n, base, _ = d.first(); n == nil || n.full() {
			d.put(id, buildDNode(id, []dentry{{id, fv}}, d.epoch))
			return
		}
		d.rebase(n, base, id, fv) // id is below every base: the first node takes it
		return
	}
	off := len(n.lp) - 1 // past the last entry, unless id is below it
	for o := n.lp.First(); o >= 0 && id.Less(n.last); {
		p := dAt(n.lp, o, base)
		if id.Less(p.id) {
			off = o
			break
		}
		o = p.next(n.lp)
	}
	if off == len(n.lp)-1 && n.full() {
		// Past the end of a full node (IDs reserved in order, the common
		// case): start a node, leaving this one shrunk to fit.
		if n.epoch == d.epoch { // a node a snapshot shares is left as it is
			d.setLP(n, append(listpack.Listpack(nil), n.lp...))
		}
		d.put(id, buildDNode(id, []dentry{{id, fv}}, d.epoch))
		return
	}
	n = d.edit(base, n)
	if off == len(n.lp)-1 {
		d.setLP(n, appendDEntry(n.lp, base, id, fv))
	} else {
		d.setLP(n, insertElems(n.lp, off, dentryElems(base, id, fv)))
	}
	n.count++
	if n.last.Less(id) {
		n.last = id
	}
	if n.count > delayNodeEntries || len(n.lp) > delayNodeBytes && n.count > 1 {
		d.split(n, base)
	}
}

// rebase rebuilds the first node under the new, lower base id, with the
// new entry first.
func (d *delayed) rebase(n *dnode, base, id ID, fv [][]byte) {
	es := append([]dentry{{id, fv}}, n.decode(base)...)
	d.drop(base)
	d.put(id, buildDNode(id, es, d.epoch))
}

// split replaces an overfull node by two halves.
func (d *delayed) split(n *dnode, base ID) {
	es := n.decode(base)
	half := len(es) / 2
	d.put(base, buildDNode(base, es[:half], d.epoch))
	d.put(es[half].id, buildDNode(es[half].id, es[half:], d.epoch))
}

// floor returns the greatest stored ID <= id.
func (d *delayed) floor(id ID) (ID, bool) {
	n, base := d.seekLE(id)
	if n == nil {
		return ID{}, false
	}
	if !id.Less(n.last) {
		return n.last, true
	}
	found, ok := ID{}, false
	for off := n.lp.First(); off >= 0; {
		p := dAt(n.lp, off, base)
		if id.Less(p.id) {
			break
		}
		found, ok = p.id, true
		off = p.next(n.lp)
	}
	if ok {
		return found, true
	}
	// Every entry of this node is above id (its first ones were
	// released): the answer is the previous node's last entry.
	if !d.it.Prev() {
		return ID{}, false
	}
	return d.it.Value().last, true
}

// lastOf returns the ID of a node's last entry, by walking it.
func lastOf(n *dnode, base ID) ID {
	var last ID
	for off := n.lp.First(); off >= 0; {
		p := dAt(n.lp, off, base)
		last = p.id
		off = p.next(n.lp)
	}
	return last
}

// min returns the smallest stored ID.
func (d *delayed) min() (ID, bool) {
	n, base, ok := d.first()
	if !ok {
		return ID{}, false
	}
	return dAt(n.lp, n.lp.First(), base).id, true
}

// popMin removes the smallest entry and returns it.
func (d *delayed) popMin() (dentry, bool) {
	n, base, ok := d.first()
	if !ok {
		return dentry{}, false
	}
	p := dAt(n.lp, n.lp.First(), base)
	e := dentry{p.id, p.fields(n.lp)}
	d.removeAt(n, base, p)
	return e, true
}

// remove deletes the entry id; it reports whether there was one.
func (d *delayed) remove(id ID) bool {
	n, base := d.seekLE(id)
	if n == nil {
		return false
	}
	for off := n.lp.First(); off >= 0; {
		p := dAt(n.lp, off, base)
		switch p.id.Compare(id) {
		case 0:
			d.removeAt(n, base, p)
			return true
		case 1:
			return false
		}
		off = p.next(n.lp)
	}
	return false
}

// removeAt deletes the entry at p from node n; an emptied node goes. The
// base stays: it is still below the node's first entry.
func (d *delayed) removeAt(n *dnode, base ID, p dpos) {
	d.n--
	if n.count == 1 {
		d.drop(base)
		return
	}
	n = d.edit(base, n)
	lp := n.lp.DeleteRange(p.off, p.elems)
	n.lp, n.count = lp, n.count-1 // same allocation: the byte count stays
	if p.id == n.last {
		n.last = lastOf(n, base)
	}
}

// each calls fn for every entry in ID order, until fn returns false.
func (d *delayed) each(fn func(id ID, fv [][]byte) bool) {
	for k, n := range d.idx.All() {
		base := IDFromKey(k)
		for off := n.lp.First(); off >= 0; {
			p := dAt(n.lp, off, base)
			if !fn(p.id, p.fields(n.lp)) {
				return
			}
			off = p.next(n.lp)
		}
	}
}

// clone returns a deep copy (for COPY).
func (d *delayed) clone() delayed {
	var c delayed
	for k, n := range d.idx.All() {
		c.put(IDFromKey(k), &dnode{lp: append(listpack.Listpack(nil), n.lp...), count: n.count, last: n.last})
	}
	c.n = d.n
	return c
}

// freeze returns a view that shares every node and is never written, and
// moves d to a new epoch so that its next write to a shared node copies
// the node first.
func (d *delayed) freeze() delayed {
	var c delayed
	for k, n := range d.idx.All() {
		c.idx.Insert(k, n)
	}
	c.n, c.bytes, c.epoch = d.n, d.bytes, math.MaxUint64
	d.epoch++
	return c
}

// AddDelayed stores an entry that is to be appended to the stream at
// time due (ms), and returns the ID reserved for it: due-k, k one more
// than the largest ID already reserved in that millisecond, else 0. The
// entry is not part of the stream (its length, ranges, reads) until
// Release appends it.
func (s *Stream) AddDelayed(due uint64, fv [][]byte) (ID, error) {
	total := 0
	for _, b := range fv {
		total += len(b)
	}
	if total > maxNodeBytes {
		return ID{}, ErrTooLarge
	}
	id := ID{Ms: due}
	if last, ok := s.delay.floor(ID{Ms: due, Seq: math.MaxUint64}); ok && last.Ms == due {
		if last.Seq == math.MaxUint64 {
			return ID{}, ErrExhausted
		}
		id.Seq = last.Seq + 1
	}
	s.delay.add(id, fv)
	return id, nil
}

// Release appends, in ID order, every delayed entry due by now (ms): with
// its reserved ID when that is above the stream's last ID, else (an
// explicit ID or SETID went past it) with the next ID after the last. It
// returns how many it appended; it stops early, leaving the rest, only
// when the stream has used its last possible ID.
func (s *Stream) Release(now uint64, lim Limits) (int, error) {
	released := 0
	for {
		id, ok := s.delay.min()
		if !ok || id.Ms > now {
			return released, nil
		}
		if id.Compare(s.lastID) <= 0 {
			next, err := s.lastID.Incr()
			if err != nil {
				return released, ErrExhausted
			}
			id = next
		}
		e, _ := s.delay.popMin()
		if err := s.Add(id, e.fv, lim); err != nil {
			return released, err // not reached: the ID is above the last, the size was checked
		}
		released++
	}
}

// DelayedLen returns the number of delayed entries not yet released.
func (s *Stream) DelayedLen() int { return s.delay.Len() }

// NextDue returns when (ms) the first delayed entry is due; ok is false
// when there is none.
func (s *Stream) NextDue() (due uint64, ok bool) {
	id, ok := s.delay.min()
	return id.Ms, ok
}

// CancelDelayed removes the delayed entry reserved under id (XDEL of a
// reserved ID); it reports whether there was one.
func (s *Stream) CancelDelayed(id ID) bool { return s.delay.remove(id) }
