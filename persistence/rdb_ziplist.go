package persistence

import (
	"encoding/binary"
	"strconv"
)

// Ziplists are the compact encoding listpacks replaced (RDB versions up
// to 9 store list nodes as ziplists). Layout, little-endian:
//
//	zlbytes u32 | zltail u32 | zllen u16 | entry ... | 0xFF
//
// zltail is the offset of the last entry, zllen the entry count (0xFFFF:
// count by walking). Each entry is prevlen | encoding | data, where
// prevlen is the previous entry's size in one byte, or 0xFE and four bytes
// when 254 or more. The encoding's first byte:
//
//	00xxxxxx              string of up to 63 bytes
//	01xxxxxx yyyyyyyy     string of up to 16383 bytes (14 bits, big-endian)
//	10000000 + 4 bytes    string, 32-bit big-endian length
//	11000000              int16     11010000  int32     11100000  int64
//	11110000              int24     11111110  int8
//	1111xxxx              0 to 12, stored as xxxx-1 (xxxx from 0001 to 1101)
const (
	zlHeader = 10
	zlEnd    = 0xff
	zlBigLen = 0xfe
)

// zlEntry is one decoded ziplist entry.
type zlEntry struct {
	str   []byte // the string, when isInt is false
	n     int64
	isInt bool
	size  int // whole entry, prevlen included
}

// walkZiplist validates zl completely (header, every entry within bounds
// and agreeing with its successor's prevlen, zltail, count, terminator)
// and calls fn with each entry. It never reads outside zl.
func walkZiplist(zl []byte, fn func(e zlEntry)) error {
	if len(zl) < zlHeader+1 || binary.LittleEndian.Uint32(zl) != uint32(len(zl)) || zl[len(zl)-1] != zlEnd {
		return rdbCorruptf("ziplist header or terminator is invalid (%d bytes)", len(zl))
	}
	tail := int(binary.LittleEndian.Uint32(zl[4:]))
	count := int(binary.LittleEndian.Uint16(zl[8:]))
	off, prev, last, n := zlHeader, 0, zlHeader, 0
	for zl[off] != zlEnd {
		e, err := zlEntryAt(zl, off)
		if err != nil {
			return err
		}
		if got := zlPrevLen(zl, off); got != prev {
			return rdbCorruptf("ziplist entry at %d says the previous is %d bytes, it is %d", off, got, prev)
		}
		fn(e)
		last, prev, off, n = off, e.size, off+e.size, n+1
	}
	if off != len(zl)-1 || tail != last || (count != 0xffff && count != n) {
		return rdbCorruptf("ziplist ends, tail or count disagree with its %d entries", n)
	}
	return nil
}

// zlPrevLen reads the prevlen field at off (already bounds-checked).
func zlPrevLen(zl []byte, off int) int {
	if zl[off] < zlBigLen {
		return int(zl[off])
	}
	return int(binary.LittleEndian.Uint32(zl[off+1:]))
}

// zlEntryAt decodes the entry at off, checking that it ends before the
// terminator.
func zlEntryAt(zl []byte, off int) (zlEntry, error) {
	end := len(zl) - 1 // the terminator
	bad := rdbCorruptf("ziplist entry at %d runs past the end", off)
	p := off + 1
	if zl[off] == zlBigLen {
		p = off + 5
	}
	if p >= end {
		return zlEntry{}, bad
	}
	hdr, dlen, isInt, err := zlEncoding(zl[p:end])
	if err != nil {
		return zlEntry{}, rdbCorruptf("ziplist entry at %d: %v", off, err)
	}
	start := p + hdr
	if dlen > end-start {
		return zlEntry{}, bad
	}
	e := zlEntry{size: start + dlen - off, isInt: isInt}
	if isInt {
		e.n = zlInt(zl[p], zl[start:start+dlen])
	} else {
		e.str = zl[start : start+dlen]
	}
	return e, nil
}

// zlEncoding decodes an encoding at the start of b: the header size, the
// data size and whether it is an integer.
func zlEncoding(b []byte) (hdr, dlen int, isInt bool, err error) {
	c := b[0]
	switch c >> 6 {
	case 0:
		return 1, int(c & 0x3f), false, nil
	case 1:
		if len(b) < 2 {
			return 0, 0, false, strconv.ErrRange
		}
		return 2, int(c&0x3f)<<8 | int(b[1]), false, nil
	case 2:
		if c != 0x80 || len(b) < 5 {
			return 0, 0, false, strconv.ErrSyntax
		}
		return 5, int(binary.BigEndian.Uint32(b[1:])), false, nil
	}
	switch {
	case c == 0xc0:
		return 1, 2, true, nil
	case c == 0xd0:
		return 1, 4, true, nil
	case c == 0xe0:
		return 1, 8, true, nil
	case c == 0xf0:
		return 1, 3, true, nil
	case c == 0xfe:
		return 1, 1, true, nil
	case c >= 0xf1 && c <= 0xfd:
		return 1, 0, true, nil
	}
	return 0, 0, false, strconv.ErrSyntax
}

// zlInt decodes the integer of encoding c from its data bytes.
func zlInt(c byte, d []byte) int64 {
	switch c {
	case 0xc0:
		return int64(int16(binary.LittleEndian.Uint16(d)))
	case 0xd0:
		return int64(int32(binary.LittleEndian.Uint32(d)))
	case 0xe0:
		return int64(binary.LittleEndian.Uint64(d))
	case 0xf0:
		return int64(int32(uint32(d[0])<<8|uint32(d[1])<<16|uint32(d[2])<<24) >> 8)
	case 0xfe:
		return int64(int8(d[0]))
	}
	return int64(c&0x0f) - 1
}
