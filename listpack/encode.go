package listpack

import (
	"encoding/binary"
	"math"
)

// Layout constants. They are fixed by the format Redis writes into RDB
// files, so none of them can change without breaking compatibility.
const (
	hdrSize    = 6    // 4-byte total length + 2-byte element count
	eof        = 0xFF // terminator byte, also the last byte of every listpack
	emptySize  = hdrSize + 1
	countUnkwn = math.MaxUint16 // header count value meaning "walk to count"

	// IntBufLen is the longest decimal form of an int64
	// ("-9223372036854775808"). A scratch buffer with at least this much
	// capacity lets Get format any integer entry without allocating.
	IntBufLen = 20
)

// Encoding bytes. The first byte of an entry selects its encoding; the
// masks say how many high bits are significant for each family.
const (
	enc7BitUint = 0x00 // 0xxxxxxx
	enc6BitStr  = 0x80 // 10xxxxxx
	enc13BitInt = 0xC0 // 110xxxxx yyyyyyyy
	enc12BitStr = 0xE0 // 1110xxxx yyyyyyyy
	enc32BitStr = 0xF0
	enc16BitInt = 0xF1
	enc24BitInt = 0xF2
	enc32BitInt = 0xF3
	enc64BitInt = 0xF4
)

// parseInt reports whether v is the canonical decimal form of an int64
// and returns its value. Canonical means the string survives a round trip
// through the integer unchanged: an optional '-', then either "0" alone or
// a digit 1-9 followed by digits, no '+', no spaces, no leading zeros, no
// "-0", and within int64 range. Only such strings may be stored with an
// integer encoding, because Get must give back the bytes that were put in.
func parseInt(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > IntBufLen {
		return 0, false
	}
	if len(v) == 1 && v[0] == '0' {
		return 0, true
	}
	neg := v[0] == '-'
	if neg {
		v = v[1:]
		if len(v) == 0 {
			return 0, false
		}
	}
	if v[0] < '1' || v[0] > '9' {
		return 0, false
	}
	var u uint64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return int64(-u), true // -(1<<63) wraps to MinInt64, as wanted
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// intEncLen returns the size of the smallest integer encoding that holds n
// (encoding byte plus payload). Redis always picks the smallest, so we
// must too for our bytes to equal Redis's.
func intEncLen(n int64) int {
	switch {
	case n >= 0 && n <= 127:
		return 1
	case n >= -4096 && n <= 4095:
		return 2
	case n >= math.MinInt16 && n <= math.MaxInt16:
		return 3
	case n >= -1<<23 && n <= 1<<23-1:
		return 4
	case n >= math.MinInt32 && n <= math.MaxInt32:
		return 5
	}
	return 9
}

// strEncLen returns the size of a string entry's encoding bytes plus its
// data, for a string of length l.
func strEncLen(l int) int {
	switch {
	case l < 64:
		return 1 + l
	case l < 4096:
		return 2 + l
	}
	return 5 + l
}

// backlenSize returns how many bytes the back-length of an entry whose
// encoding+data occupies l bytes takes. The thresholds are Redis's, which
// are deliberately not the tightest 7-bit-group packing: 16383 takes three
// bytes, not two. Matching them is what keeps the bytes identical.
func backlenSize(l uint64) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// putBacklen writes the back-length of l into dst, which must hold
// backlenSize(l) bytes. The value is split into 7-bit groups; the group
// nearest the entry's end is the least significant and every byte except
// the first (leftmost) has its high bit set, so a reader walking right to
// left knows to continue until it meets a byte with the high bit clear.
func putBacklen(dst []byte, l uint64) int {
	n := backlenSize(l)
	for i := n - 1; i >= 0; i-- {
		b := byte(l & 127)
		if i != 0 {
			b |= 128 // "more bytes to the left"
		}
		dst[i] = b
		l >>= 7
	}
	return n
}

// readBacklen decodes the back-length whose last byte is b[end], reading
// leftwards but never below index lo. It returns the value and the number
// of bytes read, or ok=false if the encoding runs past five bytes or past
// lo, which only happens on corrupt input.
func readBacklen(b []byte, end, lo int) (v uint64, n int, ok bool) {
	var shift uint
	for p := end; p >= lo; p-- {
		c := b[p]
		v |= uint64(c&127) << shift
		n++
		if c&128 == 0 {
			return v, n, true
		}
		shift += 7
		if n == 5 {
			return 0, n, false
		}
	}
	return 0, n, false
}

// putInt writes the entry encoding of n (without back-length) into dst and
// returns its length. Negative values are stored in two's complement of
// the encoding's width, little-endian.
func putInt(dst []byte, n int64) int {
	switch l := intEncLen(n); l {
	case 1:
		dst[0] = byte(n)
		return 1
	case 2:
		u := uint64(n) & (1<<13 - 1)
		dst[0] = enc13BitInt | byte(u>>8)
		dst[1] = byte(u)
		return 2
	case 3:
		dst[0] = enc16BitInt
		binary.LittleEndian.PutUint16(dst[1:], uint16(n))
		return 3
	case 4:
		dst[0] = enc24BitInt
		dst[1], dst[2], dst[3] = byte(n), byte(n>>8), byte(n>>16)
		return 4
	case 5:
		dst[0] = enc32BitInt
		binary.LittleEndian.PutUint32(dst[1:], uint32(n))
		return 5
	}
	dst[0] = enc64BitInt
	binary.LittleEndian.PutUint64(dst[1:], uint64(n))
	return 9
}

// putStr writes the string encoding and data of s into dst and returns the
// length written (without back-length).
func putStr(dst, s []byte) int {
	l := len(s)
	var h int
	switch {
	case l < 64:
		dst[0] = enc6BitStr | byte(l)
		h = 1
	case l < 4096:
		dst[0] = enc12BitStr | byte(l>>8)
		dst[1] = byte(l)
		h = 2
	default:
		dst[0] = enc32BitStr
		binary.LittleEndian.PutUint32(dst[1:], uint32(l))
		h = 5
	}
	return h + copy(dst[h:], s)
}

// entrySize returns the full size of the entry that storing v creates:
// encoding, data and back-length.
func entrySize(v []byte) int {
	var l int
	if n, ok := parseInt(v); ok {
		l = intEncLen(n)
	} else {
		l = strEncLen(len(v))
	}
	return l + backlenSize(uint64(l))
}

// EntrySize returns the number of bytes storing v adds to a listpack:
// encoding, data and back-length. Callers that manage capacity (the
// quicklist, the stream package) use it to reserve room before a write.
func EntrySize(v []byte) int { return entrySize(v) }

// IntEntrySize is EntrySize for a value given as an integer.
func IntEntrySize(n int64) int {
	l := intEncLen(n)
	return l + backlenSize(uint64(l))
}

// encLenAt returns the length of the encoding+data part of the entry that
// starts at off, trusting the bytes (see checkedEncLen for the careful
// version used on untrusted input).
func encLenAt(b []byte, off int) int {
	c := b[off]
	switch {
	case c&0x80 == enc7BitUint:
		return 1
	case c&0xC0 == enc6BitStr:
		return 1 + int(c&0x3F)
	case c&0xE0 == enc13BitInt:
		return 2
	case c&0xF0 == enc12BitStr:
		return 2 + (int(c&0x0F)<<8 | int(b[off+1]))
	}
	switch c {
	case enc16BitInt:
		return 3
	case enc24BitInt:
		return 4
	case enc32BitInt:
		return 5
	case enc64BitInt:
		return 9
	case enc32BitStr:
		return 5 + int(binary.LittleEndian.Uint32(b[off+1:]))
	}
	panic("listpack: invalid encoding byte; validate untrusted listpacks first")
}

// decodeAt returns the value of the entry at off: either the string bytes
// (a sub-slice of b, isStr true) or the integer.
func decodeAt(b []byte, off int) (s []byte, n int64, isStr bool) {
	c := b[off]
	switch {
	case c&0x80 == enc7BitUint:
		return nil, int64(c), false
	case c&0xC0 == enc6BitStr:
		l := int(c & 0x3F)
		return b[off+1 : off+1+l], 0, true
	case c&0xE0 == enc13BitInt:
		u := int64(c&0x1F)<<8 | int64(b[off+1])
		if u >= 1<<12 {
			u -= 1 << 13
		}
		return nil, u, false
	case c&0xF0 == enc12BitStr:
		l := int(c&0x0F)<<8 | int(b[off+1])
		return b[off+2 : off+2+l], 0, true
	}
	p := b[off+1:]
	switch c {
	case enc16BitInt:
		return nil, int64(int16(binary.LittleEndian.Uint16(p))), false
	case enc24BitInt:
		u := int64(p[0]) | int64(p[1])<<8 | int64(p[2])<<16
		if u >= 1<<23 {
			u -= 1 << 24
		}
		return nil, u, false
	case enc32BitInt:
		return nil, int64(int32(binary.LittleEndian.Uint32(p))), false
	case enc64BitInt:
		return nil, int64(binary.LittleEndian.Uint64(p)), false
	case enc32BitStr:
		l := int(binary.LittleEndian.Uint32(p))
		return b[off+5 : off+5+l], 0, true
	}
	panic("listpack: invalid encoding byte; validate untrusted listpacks first")
}
