package stream

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
)

// ID identifies an entry: a millisecond time and a sequence number that
// tells apart entries of the same millisecond. IDs order by Ms, then Seq.
type ID struct {
	Ms  uint64 // milliseconds, the Unix time of the add for generated IDs
	Seq uint64 // sequence number within the millisecond
}

// The smallest and largest IDs ("-" and "+" in range arguments).
var (
	MinID = ID{}
	MaxID = ID{Ms: math.MaxUint64, Seq: math.MaxUint64}
)

// KeyLen is the length of an ID encoded as a radix tree key.
const KeyLen = 16

// MaxTextLen is the longest text form of an ID ("18446744073709551615-
// 18446744073709551615"); a buffer this large lets AppendText format any
// ID without allocating.
const MaxTextLen = 41

// Key encodes id as 16 big-endian bytes, milliseconds first, so that byte
// order is numeric order: the radix tree keeps nodes sorted by ID.
func (id ID) Key() [KeyLen]byte {
	var k [KeyLen]byte
	binary.BigEndian.PutUint64(k[:8], id.Ms)
	binary.BigEndian.PutUint64(k[8:], id.Seq)
	return k
}

// IDFromKey decodes a key made by Key; b must hold at least 16 bytes.
func IDFromKey(b []byte) ID {
	return ID{Ms: binary.BigEndian.Uint64(b[:8]), Seq: binary.BigEndian.Uint64(b[8:16])}
}

// Compare returns -1, 0 or 1 as id is smaller than, equal to or greater
// than o.
func (id ID) Compare(o ID) int {
	switch {
	case id.Ms < o.Ms:
		return -1
	case id.Ms > o.Ms:
		return 1
	case id.Seq < o.Seq:
		return -1
	case id.Seq > o.Seq:
		return 1
	}
	return 0
}

// Less reports whether id sorts before o.
func (id ID) Less(o ID) bool { return id.Compare(o) < 0 }

// IsZero reports whether id is 0-0.
func (id ID) IsZero() bool { return id == MinID }

// Incr returns the ID right after id. Incrementing MaxID wraps around to
// 0-0 and reports ErrIDOverflow.
func (id ID) Incr() (ID, error) {
	switch {
	case id.Seq < math.MaxUint64:
		return ID{id.Ms, id.Seq + 1}, nil
	case id.Ms < math.MaxUint64:
		return ID{id.Ms + 1, 0}, nil
	}
	return MinID, ErrIDOverflow
}

// Decr returns the ID right before id. Decrementing 0-0 wraps around to
// MaxID and reports ErrIDOverflow.
func (id ID) Decr() (ID, error) {
	switch {
	case id.Seq > 0:
		return ID{id.Ms, id.Seq - 1}, nil
	case id.Ms > 0:
		return ID{id.Ms - 1, math.MaxUint64}, nil
	}
	return MaxID, ErrIDOverflow
}

// AppendText appends id's text form, "ms-seq", to dst.
func (id ID) AppendText(dst []byte) []byte {
	dst = strconv.AppendUint(dst, id.Ms, 10)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, id.Seq, 10)
}

// String returns id as "ms-seq".
func (id ID) String() string {
	var buf [MaxTextLen]byte
	return string(id.AppendText(buf[:0]))
}

// maxArgLen is the longest argument Redis looks at as an ID; anything
// longer is invalid whatever it holds.
const maxArgLen = 127

// ParseID parses an ID argument the way Redis does: "ms-seq"; "ms" alone,
// whose sequence is then missingSeq (0 for a range start, MaxUint64 for a
// range end); "-" for MinID and "+" for MaxID. The numbers are read as C's
// strtoull reads them, so the odd forms Redis accepts (" 5", "+5", "007")
// are accepted here too.
func ParseID(b []byte, missingSeq uint64) (ID, error) {
	id, _, err := parseID(b, missingSeq, false, false)
	return id, err
}

// ParseStrictID is ParseID without "-" and "+": for arguments that must
// name a concrete ID, such as XDEL's or MINID's.
func ParseStrictID(b []byte, missingSeq uint64) (ID, error) {
	id, _, err := parseID(b, missingSeq, true, false)
	return id, err
}

// ParseAddID parses XADD's explicit ID: a strict ID, or "ms-*", for which
// seqGiven is false and the sequence is left for the stream to choose (see
// Stream.NextSeq). A bare "ms" means ms-0.
func ParseAddID(b []byte) (id ID, seqGiven bool, err error) {
	return parseID(b, 0, true, true)
}

// ParseRangeID parses a bound of XRANGE or XREVRANGE: an ID as ParseID
// takes it, or "(" followed by a strict ID for an exclusive bound.
func ParseRangeID(b []byte, missingSeq uint64) (id ID, exclusive bool, err error) {
	if len(b) > 1 && b[0] == '(' {
		id, err = ParseStrictID(b[1:], missingSeq)
		return id, true, err
	}
	id, err = ParseID(b, missingSeq)
	return id, false, err
}

func parseID(b []byte, missingSeq uint64, strict, seqStar bool) (id ID, seqGiven bool, err error) {
	if len(b) > maxArgLen {
		return MinID, false, ErrInvalidID
	}
	// Redis parses a C string: a NUL byte ends the argument.
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		if strict {
			return MinID, false, ErrInvalidID
		}
		if b[0] == '-' {
			return MinID, true, nil
		}
		return MaxID, true, nil
	}
	msPart, seqPart, dash := bytes.Cut(b, []byte{'-'})
	ms, ok := parseUint(msPart)
	if !ok {
		return MinID, false, ErrInvalidID
	}
	if !dash {
		return ID{ms, missingSeq}, true, nil
	}
	if seqStar && len(seqPart) == 1 && seqPart[0] == '*' {
		return ID{ms, 0}, false, nil
	}
	seq, ok := parseUint(seqPart)
	if !ok {
		return MinID, false, ErrInvalidID
	}
	return ID{ms, seq}, true, nil
}

// parseUint reads an unsigned number as Redis's string2ull does: a
// canonical negative integer is refused; anything else is read as C's
// strtoull(s, 10) reads it, whole: optional leading white space, an
// optional sign (a minus negates modulo 2^64), at least one digit, no
// overflow, nothing after the digits.
func parseUint(s []byte) (uint64, bool) {
	if isCanonicalNegative(s) {
		return 0, false
	}
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if i == len(s) {
		return 0, false
	}
	var v uint64
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		v = -v
	}
	return v, true
}

// isCanonicalNegative reports whether s is a negative int64 written the
// way string2ll accepts it: "-", a digit 1-9, more digits, in range.
func isCanonicalNegative(s []byte) bool {
	if len(s) < 2 || len(s) > 20 || s[0] != '-' || s[1] < '1' || s[1] > '9' {
		return false
	}
	n, err := strconv.ParseInt(string(s), 10, 64)
	return err == nil && n < 0
}

func isCSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}
