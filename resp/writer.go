package resp

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// Writer appends encoded replies to a buffer. Proto selects RESP2 (2, the
// default) or RESP3 (3); each method writes the richest type the protocol
// has. The zero value is ready to use.
type Writer struct {
	buf   []byte
	Proto int
}

// Bytes returns the encoded replies written since the last Reset.
func (w *Writer) Bytes() []byte { return w.buf }

// Len is the number of encoded bytes waiting.
func (w *Writer) Len() int { return len(w.buf) }

// Grow makes room for n more bytes, so that a reply of a known size is
// built without the buffer doubling its way there.
func (w *Writer) Grow(n int) { w.buf = slices.Grow(w.buf, n) }

// Reset empties the buffer, keeping its memory.
func (w *Writer) Reset() { w.buf = w.buf[:0] }

// Truncate drops everything written after mark (see Mark).
func (w *Writer) Truncate(mark int) { w.buf = w.buf[:mark] }

// Mark returns the current position, for InsertLen.
func (w *Writer) Mark() int { return len(w.buf) }

// RESP3 reports whether the client speaks RESP3.
func (w *Writer) RESP3() bool { return w.Proto == 3 }

func (w *Writer) header(kind byte, n int) {
	w.buf = append(w.buf, kind)
	w.buf = strconv.AppendInt(w.buf, int64(n), 10)
	w.buf = append(w.buf, '\r', '\n')
}

// Array starts an array of n elements.
func (w *Writer) Array(n int) { w.header('*', n) }

// Map starts a map of n key/value pairs (a flat array of 2n in RESP2).
func (w *Writer) Map(n int) {
	if w.RESP3() {
		w.header('%', n)
	} else {
		w.header('*', 2*n)
	}
}

// Set starts a set of n elements (an array in RESP2).
func (w *Writer) Set(n int) {
	if w.RESP3() {
		w.header('~', n)
	} else {
		w.header('*', n)
	}
}

// Push starts an out-of-band push message of n elements.
func (w *Writer) Push(n int) {
	if w.RESP3() {
		w.header('>', n)
	} else {
		w.header('*', n)
	}
}

// InsertLen inserts an aggregate header for n elements at mark, for
// replies whose length is known only after their elements are written.
// kind is '*' (array), '%' (map, n pairs) or '~' (set).
func (w *Writer) InsertLen(mark int, kind byte, n int) {
	if !w.RESP3() && kind != '*' {
		if kind == '%' {
			n *= 2
		}
		kind = '*'
	}
	var hdr [24]byte
	h := append(hdr[:0], kind)
	h = strconv.AppendInt(h, int64(n), 10)
	h = append(h, '\r', '\n')
	w.buf = append(w.buf, h...) // grow by len(h)
	copy(w.buf[mark+len(h):], w.buf[mark:len(w.buf)-len(h)])
	copy(w.buf[mark:], h)
}

// Bulk writes a bulk string.
func (w *Writer) Bulk(b []byte) {
	w.header('$', len(b))
	w.buf = append(w.buf, b...)
	w.buf = append(w.buf, '\r', '\n')
}

// BulkString writes a bulk string.
func (w *Writer) BulkString(s string) {
	w.header('$', len(s))
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
}

// BulkInt writes n as a bulk string (as Redis does for some IDs and
// counters that clients expect as strings).
func (w *Writer) BulkInt(n int64) {
	var tmp [20]byte
	w.Bulk(strconv.AppendInt(tmp[:0], n, 10))
}

// Status writes a simple string such as OK. s must not hold CR or LF.
func (w *Writer) Status(s string) {
	w.buf = append(w.buf, '+')
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
}

// OK writes +OK.
func (w *Writer) OK() { w.buf = append(w.buf, "+OK\r\n"...) }

// Error writes an error reply. msg is the whole text including its code
// ("ERR syntax error", "WRONGTYPE Operation ..."). Newlines, which would
// break the protocol, become spaces, as in Redis.
func (w *Writer) Error(msg string) {
	w.buf = append(w.buf, '-')
	start := len(w.buf)
	w.buf = append(w.buf, msg...)
	for i := start; i < len(w.buf); i++ {
		if w.buf[i] == '\r' || w.buf[i] == '\n' {
			w.buf[i] = ' '
		}
	}
	w.buf = append(w.buf, '\r', '\n')
}

// Int writes an integer.
func (w *Writer) Int(n int64) {
	w.buf = append(w.buf, ':')
	w.buf = strconv.AppendInt(w.buf, n, 10)
	w.buf = append(w.buf, '\r', '\n')
}

// Null writes the null bulk string ($-1 in RESP2).
func (w *Writer) Null() {
	if w.RESP3() {
		w.buf = append(w.buf, "_\r\n"...)
	} else {
		w.buf = append(w.buf, "$-1\r\n"...)
	}
}

// NullArray writes the null array (*-1 in RESP2), used where Redis
// answers "no result" to a command that otherwise returns an array.
func (w *Writer) NullArray() {
	if w.RESP3() {
		w.buf = append(w.buf, "_\r\n"...)
	} else {
		w.buf = append(w.buf, "*-1\r\n"...)
	}
}

// Bool writes a boolean (an integer 1 or 0 in RESP2).
func (w *Writer) Bool(b bool) {
	switch {
	case w.RESP3() && b:
		w.buf = append(w.buf, "#t\r\n"...)
	case w.RESP3():
		w.buf = append(w.buf, "#f\r\n"...)
	case b:
		w.buf = append(w.buf, ":1\r\n"...)
	default:
		w.buf = append(w.buf, ":0\r\n"...)
	}
}

// Double writes a floating point number (a bulk string in RESP2).
func (w *Writer) Double(f float64) {
	var tmp [32]byte
	s := FormatFloat(tmp[:0], f)
	if w.RESP3() {
		w.buf = append(w.buf, ',')
		w.buf = append(w.buf, s...)
		w.buf = append(w.buf, '\r', '\n')
		return
	}
	w.Bulk(s)
}

// FormatFloat appends f as Redis prints doubles (d2string): integral
// values within ±2^62 as integers, otherwise the shortest digits that
// read back the same, in plain notation for moderate exponents and as
// d.ddde±X beyond; "inf", "-inf", "nan", "-0".
func FormatFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	case f == 0 && math.Signbit(f):
		return append(dst, "-0"...)
	case f >= -(1<<62) && f <= 1<<62 && f == math.Trunc(f):
		return strconv.AppendInt(dst, int64(f), 10)
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	sci := strconv.AppendFloat(nil, f, 'e', -1, 64) // d.ddde±XX: the shortest digits
	mant, expText, _ := strings.Cut(string(sci), "e")
	digits := strings.Replace(mant, ".", "", 1)
	e10, _ := strconv.Atoi(expText)
	return appendDigits(dst, digits, e10-(len(digits)-1))
}

// appendDigits writes digits × 10^k the way Redis's fpconv chooses a form.
func appendDigits(dst []byte, digits string, k int) []byte {
	n := len(digits)
	exp := k + n - 1
	absExp := max(exp, -exp)
	switch {
	case k >= 0 && absExp < n+7:
		dst = append(dst, digits...)
		return append(dst, strings.Repeat("0", k)...)
	case k < 0 && (k > -7 || absExp < 4):
		if point := n + k; point <= 0 {
			dst = append(dst, "0."...)
			dst = append(dst, strings.Repeat("0", -point)...)
			return append(dst, digits...)
		} else {
			dst = append(dst, digits[:point]...)
			dst = append(dst, '.')
			return append(dst, digits[point:]...)
		}
	}
	dst = append(dst, digits[0])
	if n > 1 {
		dst = append(dst, '.')
		dst = append(dst, digits[1:]...)
	}
	dst = append(dst, 'e')
	if exp < 0 {
		dst = append(dst, '-')
	} else {
		dst = append(dst, '+')
	}
	return strconv.AppendInt(dst, int64(absExp), 10)
}

// Verbatim writes text shown as-is by RESP3 clients (a bulk string in
// RESP2). Redis uses it for INFO, CLIENT INFO and CLIENT LIST.
func (w *Writer) Verbatim(s string) {
	if !w.RESP3() {
		w.BulkString(s)
		return
	}
	w.header('=', len(s)+4)
	w.buf = append(w.buf, "txt:"...)
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
}

// Raw appends bytes that are already encoded.
func (w *Writer) Raw(b []byte) { w.buf = append(w.buf, b...) }

// AppendCommand appends argv as a multibulk request, the form commands
// take on the wire and in the append-only file.
func AppendCommand(dst []byte, argv [][]byte) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(argv)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range argv {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// Encode returns argv as a multibulk request.
func Encode(argv [][]byte) []byte { return AppendCommand(nil, argv) }
