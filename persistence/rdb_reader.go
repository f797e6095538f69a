package persistence

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"slices"
)

// rdbReadChunk is the most a read allocates ahead of the bytes it has
// actually received: a length field claiming 4 GiB makes the reader grow
// its buffer chunk by chunk as data arrives, so a short file ends the read
// long before memory does.
const rdbReadChunk = 64 << 10

// rdbReader is the decoder's byte source. It counts the offset, keeps the
// running CRC-64 of every byte consumed, knows (when it can) how many bytes
// remain, and remembers where the last primitive read began so errors can
// point at it.
type rdbReader struct {
	br      *bufio.Reader
	off     int64 // bytes consumed
	itemOff int64 // where the current primitive read began
	size    int64 // total bytes, or -1 if unknown
	crc     uint64
	one     [1]byte
	buf     [16]byte
}

func newRDBReader(r io.Reader, size int64) *rdbReader {
	if size <= 0 {
		size = rdbSizeOf(r)
	}
	return &rdbReader{br: bufio.NewReaderSize(r, 256<<10), size: size}
}

// rdbSizeOf returns how many bytes r holds from its current position, or -1.
func rdbSizeOf(r io.Reader) int64 {
	switch v := r.(type) {
	case interface{ Len() int }: // bytes.Reader, strings.Reader, bytes.Buffer
		return int64(v.Len())
	case *os.File:
		fi, err := v.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return -1
		}
		pos, err := v.Seek(0, io.SeekCurrent)
		if err != nil {
			return -1
		}
		return fi.Size() - pos
	}
	return -1
}

// remaining returns the bytes left, or -1 if unknown.
func (r *rdbReader) remaining() int64 {
	if r.size < 0 {
		return -1
	}
	return r.size - r.off
}

// fits checks, when the size is known, that n more bytes exist.
func (r *rdbReader) fits(n uint64, what string) error {
	if left := r.remaining(); left >= 0 && n > uint64(left) {
		return rdbTruncatedf("%s of %d bytes runs past the end of the file (%d bytes left)", what, n, left)
	}
	return nil
}

// countFits checks, when the size is known, that a count of n items each
// at least min bytes long can be in the file: it rejects absurd counts
// before anything is sized from them.
func (r *rdbReader) countFits(n uint64, min uint64, what string) error {
	if left := r.remaining(); left >= 0 && n > uint64(left)/min {
		return rdbTruncatedf("%s claims %d items, the %d bytes left cannot hold them", what, n, left)
	}
	return nil
}

func (r *rdbReader) eofError(what string, want int) error {
	return rdbTruncatedf("file ends inside %s (%d bytes wanted at offset %d)", what, want, r.itemOff)
}

// u8 reads one byte.
func (r *rdbReader) u8(what string) (byte, error) {
	r.itemOff = r.off
	b, err := r.br.ReadByte()
	if err != nil {
		return 0, r.ioError(err, what, 1)
	}
	r.one[0] = b
	r.crc = UpdateCRC64(r.crc, r.one[:])
	r.off++
	return b, nil
}

func (r *rdbReader) ioError(err error, what string, want int) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return r.eofError(what, want)
	}
	return err
}

// full fills p, which the caller sized (callers keep p small or already
// checked against the file size).
func (r *rdbReader) full(p []byte, what string) error {
	r.itemOff = r.off
	if _, err := io.ReadFull(r.br, p); err != nil {
		return r.ioError(err, what, len(p))
	}
	r.crc = UpdateCRC64(r.crc, p)
	r.off += int64(len(p))
	return nil
}

// fixed reads n (at most 16) bytes into the rdbReader's scratch buffer.
func (r *rdbReader) fixed(n int, what string) ([]byte, error) {
	b := r.buf[:n]
	return b, r.full(b, what)
}

// bytes reads n bytes into a new slice. It never allocates far ahead of
// the data: it starts with at most rdbReadChunk bytes and reads each
// further chunk no larger than what it already holds, so a length field
// claiming gigabytes costs at most twice the bytes actually present.
func (r *rdbReader) bytes(n uint64, what string) ([]byte, error) {
	if err := r.fits(n, what); err != nil {
		r.itemOff = r.off
		return nil, err
	}
	start := r.off
	out := make([]byte, 0, min(n, rdbReadChunk))
	for uint64(len(out)) < n {
		k := min(n-uint64(len(out)), uint64(max(len(out), rdbReadChunk)))
		out = slices.Grow(out, int(k))
		if err := r.full(out[len(out):len(out)+int(k)], what); err != nil {
			r.itemOff = start
			return nil, rdbTruncatedf("file ends inside %s of %d bytes at offset %d", what, n, start)
		}
		out = out[:len(out)+int(k)]
	}
	r.itemOff = start
	return out, nil
}

// discard skips n bytes, still feeding them to the checksum.
func (r *rdbReader) discard(n uint64, what string) error {
	if err := r.fits(n, what); err != nil {
		return err
	}
	start := r.off
	var tmp [4096]byte
	for n > 0 {
		k := min(n, uint64(len(tmp)))
		if err := r.full(tmp[:k], what); err != nil {
			r.itemOff = start
			return rdbTruncatedf("file ends inside %s at offset %d", what, start)
		}
		n -= k
	}
	r.itemOff = start
	return nil
}

// length reads an RDB length. If the first byte's top bits are 11, it
// returns the six-bit encoding number with enc set instead.
func (r *rdbReader) length(what string) (n uint64, enc bool, err error) {
	start := r.off
	b, err := r.u8(what)
	if err != nil {
		return 0, false, err
	}
	defer func() { r.itemOff = start }()
	switch {
	case b>>6 == len6Bit:
		return uint64(b & 0x3f), false, nil
	case b>>6 == len14Bit:
		lo, err := r.u8(what)
		return uint64(b&0x3f)<<8 | uint64(lo), false, err
	case b>>6 == lenEncVal:
		return uint64(b & 0x3f), true, nil
	case b == len32Bit:
		p, err := r.fixed(4, what)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(p)), false, nil
	case b == len64Bit:
		p, err := r.fixed(8, what)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(p), false, nil
	}
	return 0, false, rdbCorruptf("invalid length byte %#02x in %s", b, what)
}

// count reads a plain length (an encoded form is an error).
func (r *rdbReader) count(what string) (uint64, error) {
	n, enc, err := r.length(what)
	if err == nil && enc {
		return 0, rdbCorruptf("%s is an encoded string, not a length", what)
	}
	return n, err
}

// ms reads a little-endian 64-bit millisecond time.
func (r *rdbReader) ms(what string) (int64, error) {
	p, err := r.fixed(8, what)
	if err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(p)), nil
}
