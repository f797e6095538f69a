package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
)

// Defaults for the reader's limits, the same as Redis's.
const (
	// DefaultMaxBulkLen is proto-max-bulk-len: the longest bulk string.
	DefaultMaxBulkLen = 512 << 20
	// DefaultMaxQueryBuf is client-query-buffer-limit: the most bytes one
	// unfinished request may hold before the connection is closed.
	DefaultMaxQueryBuf = 1 << 30
	// MaxInlineLen bounds an inline request line and a multibulk or bulk
	// count line, as Redis's PROTO_INLINE_MAX_SIZE does.
	MaxInlineLen = 64 << 10
	// Unauthenticated clients may not send more arguments or longer bulk
	// strings than this, so they cannot make the server buffer much.
	maxUnauthArgs    = 10
	maxUnauthBulkLen = 16384

	initialBufSize  = 16 << 10
	maxArgsPrealloc = 1024
)

// ErrQueryBufferLimit means one request grew past the query buffer limit.
// Redis closes such a connection without a reply, and so do we.
var ErrQueryBufferLimit = errors.New("resp: request exceeds client-query-buffer-limit")

// ProtocolError is a malformed request. Its Error text is the one Redis
// replies with (after "ERR "); the connection must be closed after it.
type ProtocolError struct {
	Msg string // what is wrong, e.g. "invalid bulk length"
}

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

func protoErr(msg string) error { return &ProtocolError{Msg: msg} }

// Limits bound what one request may cost before it is refused.
type Limits struct {
	MaxBulkLen  int64 // proto-max-bulk-len; 0 means DefaultMaxBulkLen
	MaxQueryBuf int   // client-query-buffer-limit; 0 means DefaultMaxQueryBuf
}

// Reader parses requests from a connection. It is not safe for concurrent
// use. Argument slices returned by Next alias the reader's buffer: they are
// valid until the next Fill, so a caller may parse a whole pipeline first
// and execute it afterwards.
type Reader struct {
	rd     io.Reader
	buf    []byte
	start  int // first byte of the request being parsed
	end    int // end of the bytes read so far
	Limits Limits
	// RequireAuth applies Redis's tighter limits for clients that have
	// not authenticated yet (at most 10 arguments of at most 16 KiB).
	RequireAuth bool

	// State of a multibulk request that is not complete yet, kept across
	// Fill calls so a huge request is parsed once, not once per read.
	pos      int      // parse position in buf
	argsLeft int      // bulk strings still to parse; 0 when between requests
	bulkLen  int      // length of the bulk being read, -1 before its header
	offs     []int    // start and end of each parsed argument, relative to start
	arena    [][]byte // argument slices of every request parsed since the last Fill
}

// NewReader returns a Reader over rd with Redis's default limits.
func NewReader(rd io.Reader) *Reader {
	return &Reader{rd: rd, buf: make([]byte, initialBufSize), bulkLen: -1}
}

// Buffered reports how many bytes have been read but not yet consumed.
func (r *Reader) Buffered() int { return r.end - r.start }

// Next parses the next complete request out of the buffer. It returns
// ok == false when the buffer holds no complete request: call Fill. Empty
// requests (blank lines, "*0") are skipped. After a *ProtocolError the
// reader is unusable.
func (r *Reader) Next() (argv [][]byte, ok bool, err error) {
	for r.pos < r.end || r.argsLeft > 0 {
		if r.argsLeft == 0 && r.buf[r.pos] != '*' {
			argv, ok, err = r.parseInline()
		} else {
			argv, ok, err = r.parseMultibulk()
		}
		if err != nil || !ok {
			return nil, false, err
		}
		if len(argv) > 0 {
			return argv, true, nil
		}
	}
	return nil, false, nil
}

// Fill reads more bytes from the connection, making room first. It
// invalidates every argument slice Next returned before.
func (r *Reader) Fill() error {
	if err := r.makeRoom(); err != nil {
		return err
	}
	clear(r.arena) // the requests parsed so far are invalid from here on
	r.arena = r.arena[:0]
	n, err := r.rd.Read(r.buf[r.end:])
	r.end += n
	limit := r.Limits.MaxQueryBuf
	if limit <= 0 {
		limit = DefaultMaxQueryBuf
	}
	// Like Redis, count only the bytes not yet parsed: arguments already
	// parsed out of a long request are the command's, not the buffer's.
	if r.end-r.pos > limit {
		return ErrQueryBufferLimit
	}
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// makeRoom moves the unparsed bytes to the front of the buffer and grows
// it when it is full. Growth doubles at most, so memory follows the bytes
// that really arrived, whatever length a header announced.
func (r *Reader) makeRoom() error {
	if r.start > 0 && (r.end == len(r.buf) || r.start == r.end) {
		n := copy(r.buf, r.buf[r.start:r.end])
		r.pos -= r.start
		r.end, r.start = n, 0
	}
	if r.end < len(r.buf) {
		return nil
	}
	size := 2 * len(r.buf)
	if need := r.pendingBulkEnd(); need > len(r.buf) && need < size {
		size = need // a known bulk needs exactly this much
	}
	grown := make([]byte, size)
	copy(grown, r.buf[:r.end])
	r.buf = grown
	return nil
}

// pendingBulkEnd is where the bulk being read ends, or 0 if unknown.
func (r *Reader) pendingBulkEnd() int {
	if r.argsLeft == 0 || r.bulkLen < 0 {
		return 0
	}
	return r.pos + r.bulkLen + 2
}

// Shrink releases a large buffer when the reader holds no partial
// request, so an idle connection that once sent a big value does not keep
// its memory.
func (r *Reader) Shrink() {
	if len(r.buf) > initialBufSize && r.start == r.end && r.argsLeft == 0 {
		r.buf = make([]byte, initialBufSize)
		r.start, r.end, r.pos = 0, 0, 0
	}
}

func (r *Reader) parseMultibulk() (argv [][]byte, ok bool, err error) {
	if r.argsLeft == 0 {
		n, ok, err := r.countLine('*', "too big mbulk count string")
		if err != nil || !ok {
			return nil, false, err
		}
		if n > math.MaxInt32 {
			return nil, false, protoErr("invalid multibulk length")
		}
		if n > maxUnauthArgs && r.RequireAuth {
			return nil, false, protoErr("unauthenticated multibulk length")
		}
		if n <= 0 {
			r.start = r.pos
			return nil, true, nil
		}
		r.argsLeft = int(n)
		r.offs = r.offs[:0]
		if cap(r.offs) < 2*min(r.argsLeft, maxArgsPrealloc) {
			r.offs = make([]int, 0, 2*min(r.argsLeft, maxArgsPrealloc))
		}
	}
	for r.argsLeft > 0 {
		if r.bulkLen < 0 {
			if err := r.bulkHeader(); err != nil || r.bulkLen < 0 {
				return nil, false, err
			}
		}
		if r.end-r.pos < r.bulkLen+2 {
			return nil, false, nil
		}
		r.offs = append(r.offs, r.pos-r.start, r.pos-r.start+r.bulkLen)
		r.pos += r.bulkLen + 2
		r.bulkLen = -1
		r.argsLeft--
	}
	return r.finish(), true, nil
}

// bulkHeader parses "$<len>\r\n" into r.bulkLen, leaving it -1 when the
// line has not fully arrived.
func (r *Reader) bulkHeader() error {
	if r.pos < r.end && r.buf[r.pos] != '$' && bytes.IndexByte(r.buf[r.pos:r.end], '\r') >= 0 {
		return protoErr("expected '$', got '" + string(r.buf[r.pos:r.pos+1]) + "'") // the raw byte, as Redis sends it
	}
	n, ok, err := r.countLine('$', "too big bulk count string")
	if err != nil || !ok {
		return err
	}
	maxLen := r.Limits.MaxBulkLen
	if maxLen <= 0 {
		maxLen = DefaultMaxBulkLen
	}
	if n < 0 || n > maxLen {
		return protoErr("invalid bulk length")
	}
	if n > maxUnauthBulkLen && r.RequireAuth {
		return protoErr("unauthenticated bulk length")
	}
	r.bulkLen = int(n)
	return nil
}

// countLine parses "<prefix><integer>\r\n" at r.pos. ok is false when the
// line is not complete yet.
func (r *Reader) countLine(prefix byte, tooBig string) (n int64, ok bool, err error) {
	cr := bytes.IndexByte(r.buf[r.pos:r.end], '\r')
	if cr < 0 {
		if r.end-r.pos > MaxInlineLen {
			return 0, false, protoErr(tooBig)
		}
		return 0, false, nil
	}
	if r.pos+cr+2 > r.end {
		return 0, false, nil // the '\n' has not arrived
	}
	line := r.buf[r.pos+1 : r.pos+cr]
	n, valid := ParseInt(line)
	if !valid {
		if prefix == '*' {
			return 0, false, protoErr("invalid multibulk length")
		}
		return 0, false, protoErr("invalid bulk length")
	}
	r.pos += cr + 2
	return n, true, nil
}

// finish turns the parsed offsets into argument slices and consumes the
// request.
func (r *Reader) finish() [][]byte {
	first := len(r.arena)
	base := r.buf[r.start:]
	for i := 0; i < len(r.offs); i += 2 {
		s, e := r.offs[i], r.offs[i+1]
		r.arena = append(r.arena, base[s:e:e])
	}
	r.start = r.pos
	return r.arena[first:len(r.arena):len(r.arena)]
}

func (r *Reader) parseInline() (argv [][]byte, ok bool, err error) {
	nl := bytes.IndexByte(r.buf[r.pos:r.end], '\n')
	if nl < 0 {
		if r.end-r.pos > MaxInlineLen {
			return nil, false, protoErr("too big inline request")
		}
		return nil, false, nil
	}
	line := r.buf[r.pos : r.pos+nl]
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i] // Redis splits a C string: it ends at NUL
	}
	first := len(r.arena)
	args, valid := SplitArgs(r.arena, line)
	if !valid {
		return nil, false, protoErr("unbalanced quotes in request")
	}
	r.arena = args
	r.pos += nl + 1
	r.start = r.pos
	return args[first:len(args):len(args)], true, nil
}

// ParseInt parses a decimal int64 the way Redis's string2ll does: an
// optional '-', no '+', no spaces, no leading zeros (except "0" itself),
// no overflow.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	digits := b
	if neg {
		digits = b[1:]
	}
	if len(digits) == 0 || digits[0] < '1' || digits[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// ParseFloat parses a float the way Redis's string2ld (strtold) does:
// the whole string must be a number — decimal, or hex such as 0x1A or
// 0x.8 — with no leading space, no digit separators, at most 5 KiB; NaN,
// overflow and underflow to zero are refused.
func ParseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) >= 5<<10 || isSpace(b[0]) || bytes.IndexByte(b, '_') >= 0 {
		return 0, false
	}
	s := string(b)
	if isHexFloat(s) && !strings.ContainsAny(s, "pP") {
		s += "p0" // strtold takes hex without an exponent; Go wants one
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	if f == 0 && hasNonzeroDigit(b) {
		return 0, false // underflow: strtold reports ERANGE
	}
	return f, true
}

func isHexFloat(s string) bool {
	s = strings.TrimLeft(s, "+-")
	return len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')
}

// hasNonzeroDigit reports whether the mantissa of a number has a digit
// other than zero (the exponent is not looked at).
func hasNonzeroDigit(b []byte) bool {
	hex := isHexFloat(string(b))
	for i, c := range b {
		switch {
		case !hex && (c == 'e' || c == 'E'):
			return false
		case hex && (c == 'p' || c == 'P'):
			return false
		case c >= '1' && c <= '9', hex && i > 1 && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')):
			return true
		}
	}
	return false
}

func isSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return false
}
