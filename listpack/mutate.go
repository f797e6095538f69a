package listpack

import (
	"encoding/binary"
	"math"
)

// splice replaces the del bytes at off with add bytes of room (contents
// unspecified), moves the rest of the listpack to suit, and stores the new
// total in the header. It grows in place when capacity allows. The value
// being written must not alias lp: the move may overwrite it.
func (lp Listpack) splice(off, del, add int) Listpack {
	old := len(lp)
	n := old - del + add
	if uint64(n) > math.MaxUint32 {
		panic("listpack: would exceed 4 GiB, the format's limit")
	}
	if n > old {
		if n > cap(lp) {
			lp = append(lp[:old], make([]byte, n-old)...)
		}
		lp = lp[:n]
	}
	copy(lp[off+add:], lp[off+del:old])
	lp = lp[:n]
	binary.LittleEndian.PutUint32(lp, uint32(n))
	return lp
}

// putEntry writes the entry for v (encoding, data, back-length) at
// lp[off:], which must have room for entrySize(v) bytes.
func (lp Listpack) putEntry(off int, v []byte, n int64, isInt bool) {
	var l int
	if isInt {
		l = putInt(lp[off:], n)
	} else {
		l = putStr(lp[off:], v)
	}
	putBacklen(lp[off+l:], uint64(l))
}

// insert stores a new entry before the entry (or terminator) at off. When
// isInt is true n is stored and v is ignored.
func (lp Listpack) insert(off int, v []byte, n int64, isInt bool) Listpack {
	var l int
	if isInt {
		l = intEncLen(n)
	} else {
		l = strEncLen(len(v))
	}
	size := l + backlenSize(uint64(l))
	lp = lp.splice(off, 0, size)
	lp.putEntry(off, v, n, isInt)
	lp.addCount(1)
	return lp
}

// Insert stores v as a new entry before the entry at off; off may also be
// the terminator's offset, len(lp)-1, to append. A v that is a canonical
// int64 string is stored with the smallest integer encoding, as Redis does.
// v must not point into lp's own bytes. After the call the new entry
// starts at off.
func (lp Listpack) Insert(off int, v []byte) Listpack {
	n, isInt := parseInt(v)
	return lp.insert(off, v, n, isInt)
}

// Append stores v after the last entry.
func (lp Listpack) Append(v []byte) Listpack {
	return lp.Insert(len(lp)-1, v)
}

// AppendInt stores the integer n after the last entry.
func (lp Listpack) AppendInt(n int64) Listpack {
	return lp.insert(len(lp)-1, nil, n, true)
}

// Prepend stores v before the first entry.
func (lp Listpack) Prepend(v []byte) Listpack {
	return lp.Insert(hdrSize, v)
}

// replace overwrites the entry at off with a new value; the count does
// not change.
func (lp Listpack) replace(off int, v []byte, n int64, isInt bool) Listpack {
	var l int
	if isInt {
		l = intEncLen(n)
	} else {
		l = strEncLen(len(v))
	}
	size := l + backlenSize(uint64(l))
	lp = lp.splice(off, lp.entryEnd(off)-off, size)
	lp.putEntry(off, v, n, isInt)
	return lp
}

// Replace overwrites the entry at off with v. v must not point into lp's
// own bytes. The entry keeps its position: afterwards it starts at off.
func (lp Listpack) Replace(off int, v []byte) Listpack {
	n, isInt := parseInt(v)
	return lp.replace(off, v, n, isInt)
}

// ReplaceInt overwrites the entry at off with the integer n. Streams use
// it to update counters in a node's master entry.
func (lp Listpack) ReplaceInt(off int, n int64) Listpack {
	return lp.replace(off, nil, n, true)
}

// Delete removes the entry at off. The entry that followed it, if any,
// now starts at off; if the deleted entry was the last one, off is now the
// terminator's offset, len(lp)-1.
func (lp Listpack) Delete(off int) Listpack {
	lp = lp.splice(off, lp.entryEnd(off)-off, 0)
	lp.addCount(-1)
	return lp
}

// DeleteRange removes up to count entries starting with the one at off,
// stopping early at the end of the listpack. Like Delete, it leaves the
// first surviving entry, or the terminator, at off. When the header count
// was the "unknown" marker it is recomputed, as Redis does, since a range
// delete may bring a huge listpack back within range.
func (lp Listpack) DeleteRange(off, count int) Listpack {
	end, k := off, 0
	for ; k < count && lp[end] != eof; k++ {
		end = lp.entryEnd(end)
	}
	if k == 0 {
		return lp
	}
	lp = lp.splice(off, end-off, 0)
	if lp.headerCount() == countUnkwn {
		lp.setCount(lp.Len())
	} else {
		lp.addCount(-k)
	}
	return lp
}

// at returns off if an entry starts at off, or -1 if off is the
// terminator. It turns the position left by Delete into an entry offset.
func (lp Listpack) at(off int) int {
	if lp[off] == eof {
		return -1
	}
	return off
}

// Concat appends the entries of b after those of a and returns the result
// in a's place (growing a as needed). Quicklist uses it to merge nodes;
// the bytes equal those Redis produces when it merges two listpacks.
func Concat(a, b Listpack) Listpack {
	n := a.Len() + b.Len()
	body := b[hdrSize:] // b's entries and its terminator
	a = a.splice(len(a)-1, 1, len(body))
	copy(a[len(a)-len(body):], body)
	a.setCount(n)
	return a
}

// concatFront puts the entries of a before those of b, working in b's
// backing array: merging onto the bigger node moves fewer bytes.
func concatFront(a, b Listpack) Listpack {
	n := a.Len() + b.Len()
	body := a[hdrSize : len(a)-1] // a's entries, no terminator
	b = b.splice(hdrSize, 0, len(body))
	copy(b[hdrSize:], body)
	b.setCount(n)
	return b
}
