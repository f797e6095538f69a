// Package lzf is the LZF compressor and decompressor Redis uses for
// compressed RDB strings and compressed quicklist nodes.
package lzf

import (
	"errors"
	"fmt"
	"sync"
)

// LZF is the byte-oriented LZ77 variant Redis uses for compressed RDB
// strings and list nodes. A compressed block is a sequence of items, each starting with a
// control byte:
//
//	000LLLLL  + L+1 bytes          literal run of 1..32 bytes
//	LLLOOOOO  OOOOOOOO             back reference, L in 1..6: copy L+2 bytes
//	111OOOOO  LLLLLLLL  OOOOOOOO   back reference: copy L+9 bytes
//
// A back reference copies from O+1 bytes behind the output position, where
// O is 13 bits (the low five bits of the control byte, then the last byte
// of the item), so it reaches back at most 8 KiB. The copy may overlap
// its own output, which repeats short patterns. There is no header: the
// RDB string (or the list node) around the block stores both lengths.
//
// Compress produces the same bytes as the compressor Redis ships (the
// "very fast" variant with a 2^16-slot hash table), so a string written by
// us compresses exactly as Redis would compress it.

// ErrCorrupt is wrapped by every error Decompress returns.
var ErrCorrupt = errors.New("invalid LZF data")

// MaxRatio bounds how many times larger than its compressed form an
// input can be: a decoder can refuse a claimed size past it.
const MaxRatio = lzfMaxRef/3 + 1

const (
	lzfHashLog  = 16
	lzfMaxLit   = 1 << 5          // longest literal run
	lzfMaxOff   = 1 << 13         // farthest back a reference reaches
	lzfMaxRef   = 1<<8 + 1<<3     // longest back reference
	lzfMaxInput = 1<<31 - 1       // larger inputs are left uncompressed
	lzfSlots    = 1 << lzfHashLog // hash table size
	lzfSlotMask = lzfSlots - 1
	lzfBaseMax  = 1<<31 - 1 // highest base before the table is wiped
)

// lzfState is the compressor's hash table: for each hash of three bytes,
// the last input position that had it. Positions are stored as base+pos+1,
// and base grows by the input length on every call, so entries left by
// earlier inputs compare below base and count as empty: the table needs
// wiping only when base nears the top of uint32, not on every call.
type lzfState struct {
	tab  [lzfSlots]uint32
	base uint32
}

var lzfPool = sync.Pool{New: func() any { return new(lzfState) }}

// lzfHash folds the three bytes ending at the low byte of h into a table
// slot, with the arithmetic Redis's compressor uses.
func lzfHash(h uint32) uint32 {
	return (h>>(3*8-lzfHashLog) - h*5) & lzfSlotMask
}

// Compress compresses src into dst and returns the compressed length,
// or 0 if src is empty, larger than 2 GiB, or the result would not fit in
// len(dst). Redis gives it a dst of len(src)-4 bytes, so that compression
// is kept only when it saves at least four bytes.
func Compress(dst, src []byte) int {
	if len(src) == 0 || len(dst) == 0 || len(src) > lzfMaxInput {
		return 0
	}
	st := lzfPool.Get().(*lzfState)
	defer lzfPool.Put(st)
	if st.base > lzfBaseMax-uint32(len(src)) {
		st.tab = [lzfSlots]uint32{}
		st.base = 0
	}
	n := st.compress(dst, src)
	st.base += uint32(len(src)) + 1
	return n
}

// lzfOut is the compressor's output cursor. op is where the next byte
// goes; lit counts the literal bytes of the open run, whose control byte
// sits at op-lit-1.
type lzfOut struct {
	dst     []byte
	op, lit int
}

// closeRun writes the control byte of the open literal run, or gives back
// the byte reserved for it if the run is empty.
func (o *lzfOut) closeRun() {
	if o.lit == 0 {
		o.op--
		return
	}
	o.dst[o.op-o.lit-1] = byte(o.lit - 1)
}

// literal appends one literal byte, closing the run when it is full. It
// reports false when dst is full.
func (o *lzfOut) literal(b byte) bool {
	if o.op >= len(o.dst) {
		return false
	}
	o.dst[o.op] = b
	o.op++
	o.lit++
	if o.lit == lzfMaxLit {
		o.closeRun()
		o.lit = 0
		o.op++
	}
	return true
}

// backref closes the literal run and appends a reference of length l (the
// match length minus 2) at distance off+1, then reserves the next run's
// control byte. It reports false when dst has no room.
func (o *lzfOut) backref(l, off int) bool {
	empty := 0
	if o.lit == 0 {
		empty = 1
	}
	if o.op-empty+3+1 >= len(o.dst) {
		return false
	}
	o.closeRun()
	if l < 7 {
		o.dst[o.op] = byte(off>>8 + l<<5)
		o.op++
	} else {
		o.dst[o.op] = byte(off>>8 + 7<<5)
		o.dst[o.op+1] = byte(l - 7)
		o.op += 2
	}
	o.dst[o.op] = byte(off)
	o.op += 2
	o.lit = 0
	return true
}

// compress is Compress's loop. It walks src hashing each three-byte
// window; when the table names an earlier position with the same three
// bytes within reach, it emits a back reference for the longest match,
// otherwise a literal byte.
func (st *lzfState) compress(dst, src []byte) int {
	n := len(src)
	out := lzfOut{dst: dst, op: 1}
	ip := 0
	var h uint32
	if n >= 2 {
		h = uint32(src[0])<<8 | uint32(src[1])
	}
	for ip < n-2 {
		h = h<<8 | uint32(src[ip+2])
		slot := lzfHash(h)
		ref := int(st.tab[slot]) - int(st.base) - 1 // < 0: empty
		st.tab[slot] = st.base + uint32(ip) + 1
		off := ip - ref - 1
		if ref > 0 && off < lzfMaxOff && src[ref+2] == src[ip+2] &&
			src[ref] == src[ip] && src[ref+1] == src[ip+1] {
			l := matchLen(src, ref, ip)
			if !out.backref(l-2, off) {
				return 0
			}
			ip += l
			if ip >= n-2 {
				break
			}
			h = st.rehash(src, ip)
			continue
		}
		if !out.literal(src[ip]) {
			return 0
		}
		ip++
	}
	return finishLZF(&out, src, ip)
}

// matchLen returns how many bytes from ip repeat those from ref (at least
// 3, known equal), following the reference compressor's bounds exactly:
// at most lzfMaxRef, and normally stopping two bytes short of the end,
// except that its 16-byte unrolled first step may run to the end.
func matchLen(src []byte, ref, ip int) int {
	l := 2
	maxlen := min(len(src)-ip-l, lzfMaxRef)
	if maxlen > 16 {
		for range 16 {
			l++
			if src[ref+l] != src[ip+l] {
				return l
			}
		}
	}
	for {
		l++
		if l >= maxlen || src[ref+l] != src[ip+l] {
			return l
		}
	}
}

// rehash enters the two positions just before ip (the tail of the match)
// into the table, as the "very fast" variant does, and returns the rolling
// hash ready for position ip.
func (st *lzfState) rehash(src []byte, ip int) uint32 {
	p := ip - 2
	h := uint32(src[p])<<8 | uint32(src[p+1])
	h = h<<8 | uint32(src[p+2])
	st.tab[lzfHash(h)] = st.base + uint32(p) + 1
	h = h<<8 | uint32(src[p+3])
	st.tab[lzfHash(h)] = st.base + uint32(p+1) + 1
	return h
}

// finishLZF copies the last (at most two) input bytes as literals and
// closes the final run.
func finishLZF(out *lzfOut, src []byte, ip int) int {
	if out.op+3 > len(out.dst) {
		return 0
	}
	for ; ip < len(src); ip++ {
		out.literal(src[ip])
	}
	out.closeRun()
	return out.op
}

// Decompress expands the LZF block src into dst and returns the number
// of bytes written. It fails, wrapping ErrCorrupt, if src is cut short, a
// reference points before the start of the output, or the output would
// exceed len(dst). It never writes outside dst and never panics.
func Decompress(dst, src []byte) (int, error) {
	ip, op := 0, 0
	for ip < len(src) {
		ctrl := int(src[ip])
		ip++
		if ctrl < lzfMaxLit {
			n := ctrl + 1
			if op+n > len(dst) {
				return op, fmt.Errorf("%w: output exceeds %d bytes", ErrCorrupt, len(dst))
			}
			if ip+n > len(src) {
				return op, fmt.Errorf("%w: literal run of %d bytes cut short at byte %d", ErrCorrupt, n, ip-1)
			}
			op += copy(dst[op:], src[ip:ip+n])
			ip += n
			continue
		}
		var err error
		if ip, op, err = lzfCopyRef(dst, src, ip, op, ctrl); err != nil {
			return op, err
		}
	}
	return op, nil
}

// lzfCopyRef decodes the back reference whose control byte ctrl was just
// read (ip is past it) and copies its bytes to dst at op.
func lzfCopyRef(dst, src []byte, ip, op, ctrl int) (int, int, error) {
	l := ctrl >> 5
	if l == 7 {
		if ip >= len(src) {
			return ip, op, fmt.Errorf("%w: reference cut short at byte %d", ErrCorrupt, ip)
		}
		l += int(src[ip])
		ip++
	}
	if ip >= len(src) {
		return ip, op, fmt.Errorf("%w: reference cut short at byte %d", ErrCorrupt, ip)
	}
	ref := op - (ctrl&0x1f)<<8 - 1 - int(src[ip])
	ip++
	l += 2
	if op+l > len(dst) {
		return ip, op, fmt.Errorf("%w: output exceeds %d bytes", ErrCorrupt, len(dst))
	}
	if ref < 0 {
		return ip, op, fmt.Errorf("%w: reference %d bytes back at output byte %d", ErrCorrupt, op-ref, op)
	}
	// The copy may read its own output (a run repeating the last op-ref
	// bytes): copy what is already there, which doubles each time.
	for n := 0; n < l; {
		n += copy(dst[op+n:op+l], dst[ref:op+n])
	}
	return ip, op + l, nil
}
