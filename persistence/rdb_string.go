package persistence

import (
	"encoding/binary"
	"strconv"

	"github.com/redstream/redstream/lzf"
)

// str reads a string in any of its encodings: raw (length and bytes), an
// 8, 16 or 32-bit integer, or LZF-compressed.
func (r *rdbReader) str(what string) ([]byte, error) {
	start := r.off
	n, enc, err := r.length(what)
	if err != nil {
		return nil, err
	}
	if !enc {
		b, err := r.bytes(n, what)
		r.itemOff = start
		return b, err
	}
	var b []byte
	switch n {
	case encInt8, encInt16, encInt32:
		var v int64
		v, err = r.intEnc(n, what)
		b = strconv.AppendInt(nil, v, 10)
	case encLZF:
		b, err = r.lzf(what)
	default:
		err = rdbCorruptf("unknown string encoding %d in %s", n, what)
	}
	r.itemOff = start
	return b, err
}

// intEnc reads the payload of an integer-encoded string.
func (r *rdbReader) intEnc(enc uint64, what string) (int64, error) {
	size := 1 << enc // 1, 2 or 4 bytes, little-endian
	p, err := r.fixed(size, what)
	if err != nil {
		return 0, err
	}
	switch size {
	case 1:
		return int64(int8(p[0])), nil
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(p))), nil
	}
	return int64(int32(binary.LittleEndian.Uint32(p))), nil
}

// lzfLens reads the compressed and uncompressed lengths of an LZF string
// and rejects an uncompressed length the compressed bytes cannot produce,
// before anything is allocated for it.
func (r *rdbReader) lzfLens(what string) (clen, ulen uint64, err error) {
	if clen, err = r.count(what + " (compressed length)"); err != nil {
		return 0, 0, err
	}
	if ulen, err = r.count(what + " (length)"); err != nil {
		return 0, 0, err
	}
	if ulen/lzf.MaxRatio > clen {
		return 0, 0, rdbCorruptf("%s claims %d bytes once expanded from %d LZF-compressed bytes", what, ulen, clen)
	}
	return clen, ulen, nil
}

// lzf reads the rest of an LZF string: the two lengths, then the
// compressed bytes, which must expand to exactly the stated length.
func (r *rdbReader) lzf(what string) ([]byte, error) {
	clen, ulen, err := r.lzfLens(what)
	if err != nil {
		return nil, err
	}
	c, err := r.bytes(clen, what)
	if err != nil {
		return nil, err
	}
	out := make([]byte, ulen)
	n, err := lzf.Decompress(out, c)
	if err != nil {
		return nil, corruptWrap(err, "%s", what)
	}
	if uint64(n) != ulen {
		return nil, rdbCorruptf("%s expands from LZF to %d bytes, its header says %d", what, n, ulen)
	}
	return out, nil
}

// skipStr steps over a string without decoding it, for skipped values.
func (r *rdbReader) skipStr(what string) error {
	n, enc, err := r.length(what)
	switch {
	case err != nil:
		return err
	case !enc:
		return r.discard(n, what)
	case n <= encInt32:
		_, err = r.intEnc(n, what)
		return err
	case n == encLZF:
		clen, _, err := r.lzfLens(what)
		if err != nil {
			return err
		}
		return r.discard(clen, what)
	}
	return rdbCorruptf("unknown string encoding %d in %s", n, what)
}

// parseStrictInt parses s as Redis's string2ll does: the canonical
// decimal form of an int64 only (no sign but a leading '-', no leading
// zeros, no spaces, not "-0").
func parseStrictInt(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	if len(s) == 1 && s[0] == '0' {
		return 0, true
	}
	digits := s
	if s[0] == '-' {
		digits = s[1:]
	}
	if len(digits) == 0 || digits[0] < '1' || digits[0] > '9' {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(string(s), 10, 64)
	return v, err == nil
}
