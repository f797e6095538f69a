package listpack

import (
	"bytes"
	"encoding/binary"
	"strconv"
)

// Listpack is one listpack: the bytes exactly as Redis lays them out.
//
// It is a plain byte slice, not a struct, so that a node can be handed to
// the RDB writer, hashed or compared without conversion, and so that a
// quicklist node costs one slice header. Read methods never write to the
// bytes, so a frozen listpack may be read from several goroutines at once.
// Mutating methods work like append: they return the updated slice, which
// the caller must store in place of the old one; when capacity allows they
// shift bytes in place (the old slice then sees modified bytes), otherwise
// they reallocate with the usual append growth. Callers that want a
// different growth policy reserve capacity first (see Grow and EntrySize).
//
// Entries are addressed by byte offset, as returned by First, Last, Next,
// Prev and Seek. Offsets are only valid until the next mutation, except
// where a method says otherwise. Methods trust the bytes: a listpack that
// came from outside (an RDB file, the network) must pass Validate with
// deep set before any other method is used on it.
type Listpack []byte

// New returns an empty listpack: the 6-byte header and the terminator.
func New() Listpack {
	return newWithCap(emptySize)
}

// newWithCap returns an empty listpack whose backing array has room for c
// bytes (at least the empty size).
func newWithCap(c int) Listpack {
	return Listpack(alloc(max(c, emptySize))).reset()
}

// alloc returns an empty byte slice with capacity for at least c bytes.
// Growing a nil slice by c makes the runtime pick exactly c rounded up to
// its size class, and report that whole class as capacity, whereas
// make([]byte, 0, c) would hide the rounding slack from us.
func alloc(c int) []byte {
	return append([]byte(nil), make([]byte, c)...)[:0]
}

// reset turns lp, whose capacity is at least emptySize, into an empty
// listpack, reusing its backing array.
func (lp Listpack) reset() Listpack {
	lp = lp[:emptySize]
	binary.LittleEndian.PutUint32(lp, emptySize)
	binary.LittleEndian.PutUint16(lp[4:], 0)
	lp[hdrSize] = eof
	return lp
}

// Grow returns lp with room for at least n more bytes, so that the next
// mutations adding up to n bytes do not reallocate. Unlike slices.Grow it
// allocates only len(lp)+n rounded up to the allocator's size class, with
// no doubling: callers that reserve room this way decide how capacity
// grows. The contents are unchanged.
func (lp Listpack) Grow(n int) Listpack {
	if n <= cap(lp)-len(lp) {
		return lp
	}
	return append(Listpack(alloc(len(lp)+n)), lp...)
}

// headerCount returns the element count stored in the header, which is
// countUnkwn when the listpack holds too many elements to say.
func (lp Listpack) headerCount() int {
	return int(binary.LittleEndian.Uint16(lp[4:]))
}

// setCount stores n as the header count, or the "unknown" marker when n
// does not fit, the way Redis does once a listpack passes 65534 entries.
func (lp Listpack) setCount(n int) {
	if n >= countUnkwn {
		n = countUnkwn
	}
	binary.LittleEndian.PutUint16(lp[4:], uint16(n))
}

// addCount adjusts a known header count by d and leaves an unknown count
// unknown: like Redis, we do not recount on every mutation, so a listpack
// that once held 65535 entries keeps the marker until it is rebuilt.
func (lp Listpack) addCount(d int) {
	if c := lp.headerCount(); c != countUnkwn {
		lp.setCount(c + d)
	}
}

// Len returns the number of entries. It reads the header, and walks the
// entries only when the header holds the "unknown" marker. Unlike Redis it
// never writes the walked count back, so it is safe on shared bytes.
func (lp Listpack) Len() int {
	if c := lp.headerCount(); c != countUnkwn {
		return c
	}
	n := 0
	for off := lp.First(); off >= 0; off = lp.Next(off) {
		n++
	}
	return n
}

// First returns the offset of the first entry, or -1 if lp is empty.
func (lp Listpack) First() int {
	if lp[hdrSize] == eof {
		return -1
	}
	return hdrSize
}

// Last returns the offset of the last entry, or -1 if lp is empty.
func (lp Listpack) Last() int {
	return lp.Prev(len(lp) - 1)
}

// Next returns the offset of the entry after the one at off, or -1 if the
// entry at off is the last.
func (lp Listpack) Next(off int) int {
	l := encLenAt(lp, off)
	off += l + backlenSize(uint64(l))
	if lp[off] == eof {
		return -1
	}
	return off
}

// Prev returns the offset of the entry before the one at off, or -1 if off
// is the first entry. off may also be the terminator's offset, len(lp)-1,
// which is how Last finds the final entry.
func (lp Listpack) Prev(off int) int {
	if off <= hdrSize {
		return -1
	}
	l, _, _ := readBacklen(lp, off-1, hdrSize)
	return off - int(l) - backlenSize(l)
}

// entryEnd returns the offset just past the entry at off.
func (lp Listpack) entryEnd(off int) int {
	l := encLenAt(lp, off)
	return off + l + backlenSize(uint64(l))
}

// Get returns the value of the entry at off as bytes. A string entry is
// returned as a sub-slice of lp (no copy: valid until lp is mutated, and
// not to be modified). An integer entry is formatted in decimal into
// scratch[:0], which does not allocate when cap(scratch) >= IntBufLen.
func (lp Listpack) Get(off int, scratch []byte) []byte {
	s, n, isStr := decodeAt(lp, off)
	if isStr {
		return s
	}
	return strconv.AppendInt(scratch[:0], n, 10)
}

// AppendValue appends the value of the entry at off to dst and returns the
// extended slice. It is Get for callers that want their own copy.
func (lp Listpack) AppendValue(dst []byte, off int) []byte {
	s, n, isStr := decodeAt(lp, off)
	if isStr {
		return append(dst, s...)
	}
	return strconv.AppendInt(dst, n, 10)
}

// GetInt returns the entry at off as an integer. isInt is true for entries
// with an integer encoding and for string entries that hold a canonical
// int64 (which Redis never writes as strings, but a foreign listpack may);
// it is false for any other string. Streams use it for their numeric
// fields without a round trip through decimal text.
func (lp Listpack) GetInt(off int) (n int64, isInt bool) {
	s, n, isStr := decodeAt(lp, off)
	if isStr {
		return parseInt(s)
	}
	return n, true
}

// Equal reports whether the entry at off holds exactly the bytes v. It
// compares the way strings compare, whatever the stored encoding: an
// integer entry 10 equals "10" but not "010" or "+10".
func (lp Listpack) Equal(off int, v []byte) bool {
	s, n, isStr := decodeAt(lp, off)
	if isStr {
		return bytes.Equal(s, v)
	}
	m, ok := parseInt(v)
	return ok && m == n
}

// Seek returns the offset of the entry at index, counting from 0 at the
// head, or from the tail when index is negative (-1 is the last entry). It
// returns -1 when index is out of range. It walks from whichever end is
// nearer when the header count is known.
func (lp Listpack) Seek(index int) int {
	c := lp.headerCount()
	if c == countUnkwn {
		return lp.seekWalk(index)
	}
	if index < 0 {
		index += c
	}
	if index < 0 || index >= c {
		return -1
	}
	if index > c/2 {
		return lp.seekWalk(index - c)
	}
	return lp.seekWalk(index)
}

// seekWalk walks from the head for index >= 0 and from the tail for
// index < 0, returning -1 if it runs off the end.
func (lp Listpack) seekWalk(index int) int {
	if index >= 0 {
		off := lp.First()
		for ; index > 0 && off >= 0; index-- {
			off = lp.Next(off)
		}
		return off
	}
	off := lp.Last()
	for ; index < -1 && off >= 0; index++ {
		off = lp.Prev(off)
	}
	return off
}
