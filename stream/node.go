package stream

import (
	"fmt"

	"github.com/redstream/redstream/listpack"
)

// Entry flags, the first element of every entry in a node.
const (
	flagDeleted    = 1 << 0 // a tombstone: skipped by readers, counted in "deleted"
	flagSameFields = 1 << 1 // the entry's field names are the master's: only values follow
)

// maxNodeBytes caps a node whatever stream-node-max-bytes says: a
// listpack's header counts its size in 32 bits, and Redis stops at 1 GiB.
const maxNodeBytes = 1 << 30

// preallocBytes is the room a new node gets at once (less when the byte
// limit is lower), so that filling it does not reallocate on every add.
const preallocBytes = 4096

// node is one listpack of entries, stored in the radix tree under the ID
// of its first entry (the master ID). A snapshot shares nodes with the
// stream: epoch says which generation of the stream owns the node, and a
// node from an older generation is copied before it is written (see
// Stream.edit).
type node struct {
	lp    listpack.Listpack
	epoch uint64
}

// master describes a node's master entry.
type master struct {
	countOff int // offset of the live-entries count, the node's first element
	live     int64
	deleted  int64
	nfields  int // number of master field names
	fieldOff int // offset of the first master field (or the 0 terminator)
	firstOff int // offset of the first entry's flags, -1 if there is none
}

// readMaster decodes the master entry of a node our code wrote or that
// passed ValidateNode.
func readMaster(lp listpack.Listpack) master {
	var m master
	m.countOff = lp.First()
	m.live = getInt(lp, m.countOff)
	p := lp.Next(m.countOff)
	m.deleted = getInt(lp, p)
	p = lp.Next(p)
	m.nfields = int(getInt(lp, p))
	m.fieldOff = lp.Next(p)
	p = m.fieldOff
	for range m.nfields {
		p = lp.Next(p)
	}
	m.firstOff = lp.Next(p) // skip the master's 0 terminator
	return m
}

// getInt reads an integer element; stream nodes only hold integers where
// this is used (validated nodes guarantee it).
func getInt(lp listpack.Listpack, off int) int64 {
	n, _ := lp.GetInt(off)
	return n
}

// entry is the decoded header of one entry.
type entry struct {
	flagsOff int // offset of the flags element
	flags    int64
	id       ID
	nfields  int
	dataOff  int // offset of the first field (or value, with same fields)
}

func (e *entry) deleted() bool { return e.flags&flagDeleted != 0 }
func (e *entry) same() bool    { return e.flags&flagSameFields != 0 }

// readEntry decodes the entry whose flags are at off in a node with
// master ID mid and master m.
func readEntry(lp listpack.Listpack, off int, mid ID, m *master) entry {
	e := entry{flagsOff: off, flags: getInt(lp, off)}
	p := lp.Next(off)
	e.id.Ms = mid.Ms + uint64(getInt(lp, p))
	p = lp.Next(p)
	e.id.Seq = mid.Seq + uint64(getInt(lp, p))
	p = lp.Next(p)
	if e.same() {
		e.nfields = m.nfields
	} else {
		e.nfields = int(getInt(lp, p))
		p = lp.Next(p)
	}
	e.dataOff = p
	return e
}

// elems is the number of field and value elements the entry stores.
func (e *entry) elems() int {
	if e.same() {
		return e.nfields
	}
	return 2 * e.nfields
}

// nextOff returns the offset of the entry after e, or -1 at the node's end.
func (e *entry) nextOff(lp listpack.Listpack) int {
	p := e.dataOff
	for range e.elems() {
		p = lp.Next(p)
	}
	return lp.Next(p) // skip lp-count
}

// lpCount is the number of elements an entry has before its lp-count
// element: flags, ms-diff, seq-diff, then the values, and when the field
// names are not the master's, num-fields and the names too.
func lpCount(nfields int, same bool) int64 {
	n := int64(nfields) + 3
	if !same {
		n += int64(nfields) + 1
	}
	return n
}

// newNodeBytes builds a node for a first entry id with fields and values
// fv (alternating): the master entry takes the entry's field names, so
// the entry itself is stored with the same-fields flag.
func newNodeBytes(id ID, fv [][]byte, capacity int) listpack.Listpack {
	lp := listpack.New()
	lp = lp.Grow(max(capacity-len(lp), 0)) // capacity bytes in all
	nf := len(fv) / 2
	lp = lp.AppendInt(1) // live entries
	lp = lp.AppendInt(0) // deleted entries
	lp = lp.AppendInt(int64(nf))
	for i := 0; i < len(fv); i += 2 {
		lp = lp.Append(fv[i])
	}
	lp = lp.AppendInt(0) // master terminator: an lp-count of 0
	return appendEntry(lp, ID{}, flagSameFields, fv)
}

// newNodeSize is the exact size of the node newNodeBytes makes.
func newNodeSize(fv [][]byte) int {
	nf := len(fv) / 2
	n := 7 // the listpack header and terminator
	n += listpack.IntEntrySize(1) + listpack.IntEntrySize(0) + listpack.IntEntrySize(int64(nf))
	for i := 0; i < len(fv); i += 2 {
		n += listpack.EntrySize(fv[i])
	}
	n += listpack.IntEntrySize(0) // the master terminator
	return n + entrySize(ID{}, true, fv)
}

// appendEntry appends an entry with the given flags, whose ID is delta
// from the master ID (both parts wrap modulo 2^64, as in Redis).
func appendEntry(lp listpack.Listpack, delta ID, flags int64, fv [][]byte) listpack.Listpack {
	same := flags&flagSameFields != 0
	nf := len(fv) / 2
	lp = lp.AppendInt(flags)
	lp = lp.AppendInt(int64(delta.Ms))
	lp = lp.AppendInt(int64(delta.Seq))
	if !same {
		lp = lp.AppendInt(int64(nf))
	}
	for i := 0; i < len(fv); i += 2 {
		if !same {
			lp = lp.Append(fv[i])
		}
		lp = lp.Append(fv[i+1])
	}
	return lp.AppendInt(lpCount(nf, same))
}

// entrySize is how many bytes appendEntry adds for fv.
func entrySize(delta ID, same bool, fv [][]byte) int {
	nf := len(fv) / 2
	n := listpack.IntEntrySize(flagSameFields) + listpack.IntEntrySize(int64(delta.Ms)) + listpack.IntEntrySize(int64(delta.Seq))
	if !same {
		n += listpack.IntEntrySize(int64(nf))
	}
	for i := 0; i < len(fv); i += 2 {
		if !same {
			n += listpack.EntrySize(fv[i])
		}
		n += listpack.EntrySize(fv[i+1])
	}
	return n + listpack.IntEntrySize(lpCount(nf, same))
}

// sameFields reports whether fv's field names equal the master's.
func sameFields(lp listpack.Listpack, m *master, fv [][]byte) bool {
	if m.nfields != len(fv)/2 {
		return false
	}
	p := m.fieldOff
	for i := 0; i < len(fv); i += 2 {
		if !lp.Equal(p, fv[i]) {
			return false
		}
		p = lp.Next(p)
	}
	return true
}

// lastEntryID returns the ID of the node's last entry, deleted or not;
// ok is false for a node without entries.
func lastEntryID(lp listpack.Listpack, mid ID) (ID, bool) {
	p := lp.Last()
	n := getInt(lp, p)
	if n == 0 {
		return ID{}, false // the master terminator: no entries
	}
	for range n {
		p = lp.Prev(p)
	}
	p = lp.Next(p) // from flags to the ms delta
	id := ID{Ms: mid.Ms + uint64(getInt(lp, p))}
	id.Seq = mid.Seq + uint64(getInt(lp, lp.Next(p)))
	return id, true
}

// corruptf wraps ErrCorrupt with what was wrong.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// ValidateNode checks, without ever panicking, that b is a listpack that
// holds a well-formed stream node whose master ID is mid: a master entry
// with non-negative counts, then entries whose flags are known, whose
// field counts and lp-count back-pointers agree, whose IDs ascend from
// mid, and whose deleted flags add up to the master's counts. Nodes
// coming from outside (RDB files) must pass it before any other use.
func ValidateNode(b []byte, mid ID) error {
	if err := listpack.Validate(b, true); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	v := nodeReader{lp: listpack.Listpack(b), p: listpack.Listpack(b).First()}
	live, deleted, nf, err := v.master()
	if err != nil {
		return err
	}
	var seen, seenDeleted int64
	prev, first := ID{}, true
	for v.p >= 0 {
		id, isDeleted, err := v.entry(mid, nf)
		if err != nil {
			return err
		}
		if id.Less(mid) || (!first && id.Compare(prev) <= 0) {
			return corruptf("entry %s out of order", id)
		}
		prev, first = id, false
		seen++
		if isDeleted {
			seenDeleted++
		}
	}
	if seen-seenDeleted != live || seenDeleted != deleted {
		return corruptf("counts %d live, %d deleted; entries say %d, %d", live, deleted, seen-seenDeleted, seenDeleted)
	}
	return nil
}

// nodeReader walks a node's elements for ValidateNode, checking each one
// exists and, where an integer is expected, is one.
type nodeReader struct {
	lp listpack.Listpack
	p  int // the next element, -1 past the end
}

func (r *nodeReader) readInt(what string) (int64, error) {
	if r.p < 0 {
		return 0, corruptf("missing %s", what)
	}
	n, ok := r.lp.GetInt(r.p)
	if !ok {
		return 0, corruptf("%s is not an integer", what)
	}
	r.p = r.lp.Next(r.p)
	return n, nil
}

func (r *nodeReader) skip(n int64, what string) error {
	for ; n > 0; n-- {
		if r.p < 0 {
			return corruptf("missing %s", what)
		}
		r.p = r.lp.Next(r.p)
	}
	return nil
}

// count reads a non-negative count no larger than the node could hold.
func (r *nodeReader) count(what string) (int64, error) {
	n, err := r.readInt(what)
	if err == nil && (n < 0 || n > int64(len(r.lp))) {
		err = corruptf("%s %d out of range", what, n)
	}
	return n, err
}

func (r *nodeReader) master() (live, deleted, nf int64, err error) {
	if live, err = r.count("live count"); err != nil {
		return
	}
	if deleted, err = r.count("deleted count"); err != nil {
		return
	}
	if nf, err = r.count("master field count"); err != nil {
		return
	}
	if err = r.skip(nf, "master field"); err != nil {
		return
	}
	var zero int64
	if zero, err = r.readInt("master terminator"); err == nil && zero != 0 {
		err = corruptf("master terminator is %d", zero)
	}
	return
}

func (r *nodeReader) entry(mid ID, masterNF int64) (id ID, isDeleted bool, err error) {
	flags, err := r.readInt("flags")
	if err != nil {
		return
	}
	if flags&^(flagDeleted|flagSameFields) != 0 {
		return id, false, corruptf("unknown flags %d", flags)
	}
	ms, err := r.readInt("ms delta")
	if err != nil {
		return
	}
	seq, err := r.readInt("seq delta")
	if err != nil {
		return
	}
	id = ID{mid.Ms + uint64(ms), mid.Seq + uint64(seq)}
	same := flags&flagSameFields != 0
	nf := masterNF
	if !same {
		if nf, err = r.count("field count"); err != nil {
			return
		}
	}
	elems := nf
	if !same {
		elems = 2 * nf
	}
	if err = r.skip(elems, "field or value"); err != nil {
		return
	}
	back, err := r.readInt("lp-count")
	if err == nil && back != lpCount(int(nf), same) {
		err = corruptf("lp-count %d, want %d", back, lpCount(int(nf), same))
	}
	return id, flags&flagDeleted != 0, err
}
