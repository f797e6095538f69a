package persistence

import (
	"bufio"
	"encoding/binary"
	"github.com/redstream/redstream/stream"
	"io"

	"github.com/redstream/redstream/lzf"
)

// Redis's rule for RDB strings: LZF is tried on strings over 20 bytes and
// kept when it saves at least 4.
const (
	lzfMinLen  = 21
	lzfMinSave = 4
)

// rdbWriter is the encoder's byte sink: it buffers, counts, keeps the
// running CRC-64 (when checksums are on) and remembers the first write
// error so callers can check once per item.
type rdbWriter struct {
	bw       *bufio.Writer
	n        int64
	crc      uint64
	checksum bool
	compress bool
	err      error
	scratch  []byte // length and integer encodings
	lzfBuf   []byte // compression output
}

func newRDBWriter(w io.Writer, checksum, compress bool) *rdbWriter {
	return &rdbWriter{bw: bufio.NewWriterSize(w, 256<<10), checksum: checksum, compress: compress}
}

func (w *rdbWriter) raw(p []byte) {
	if w.err != nil {
		return
	}
	if w.checksum {
		w.crc = UpdateCRC64(w.crc, p)
	}
	_, w.err = w.bw.Write(p)
	w.n += int64(len(p))
}

func (w *rdbWriter) u8(b byte) {
	w.scratch = append(w.scratch[:0], b)
	w.raw(w.scratch)
}

func (w *rdbWriter) length(n uint64) {
	w.scratch = appendLen(w.scratch[:0], n)
	w.raw(w.scratch)
}

func (w *rdbWriter) ms(t int64) {
	w.scratch = binary.LittleEndian.AppendUint64(w.scratch[:0], uint64(t))
	w.raw(w.scratch)
}

// rawID writes an ID in its 16-byte big-endian form.
func (w *rdbWriter) rawID(id stream.ID) {
	b := id.Key()
	w.raw(b[:])
}

// str writes a string the way Redis chooses its form: a canonical decimal
// of at most 11 bytes that fits 32 bits as an integer; with compression on,
// a string over 20 bytes as LZF if that saves at least 4 bytes; otherwise
// raw.
func (w *rdbWriter) str(s []byte) {
	if len(s) <= 11 {
		if v, ok := parseStrictInt(s); ok && v >= -1<<31 && v <= 1<<31-1 {
			w.intStr(v)
			return
		}
	}
	if w.compress && len(s) >= lzfMinLen && w.lzf(s) {
		return
	}
	w.length(uint64(len(s)))
	w.raw(s)
}

// lzfStr writes the LZF data z, which expands to size bytes, as an LZF
// string.
func (w *rdbWriter) lzfStr(z []byte, size int) {
	w.u8(lenEncVal<<6 | encLZF)
	w.length(uint64(len(z)))
	w.length(uint64(size))
	w.raw(z)
}

// intStr writes v in the smallest integer string encoding.
func (w *rdbWriter) intStr(v int64) {
	b := w.scratch[:0]
	switch {
	case v >= -1<<7 && v <= 1<<7-1:
		b = append(b, lenEncVal<<6|encInt8, byte(v))
	case v >= -1<<15 && v <= 1<<15-1:
		b = binary.LittleEndian.AppendUint16(append(b, lenEncVal<<6|encInt16), uint16(v))
	default:
		b = binary.LittleEndian.AppendUint32(append(b, lenEncVal<<6|encInt32), uint32(v))
	}
	w.scratch = b
	w.raw(b)
}

// lzf writes s LZF-compressed if that saves at least lzfMinSave bytes,
// and reports whether it did.
func (w *rdbWriter) lzf(s []byte) bool {
	limit := len(s) - lzfMinSave
	if cap(w.lzfBuf) < limit {
		w.lzfBuf = make([]byte, limit)
	}
	out := w.lzfBuf[:limit]
	n := lzf.Compress(out, s)
	if n == 0 {
		return false
	}
	w.lzfStr(out[:n], len(s))
	if cap(w.lzfBuf) > 4<<20 { // do not keep a huge buffer for one value
		w.lzfBuf = nil
	}
	return true
}
