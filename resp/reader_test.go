package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// oneByteReader hands out its data one byte per Read, so every frame is
// split at every byte boundary across Fill calls.
type oneByteReader struct{ data []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = r.data[0]
	r.data = r.data[1:]
	return 1, nil
}

// chunkReader hands out its data in chunks of 1..max bytes, sized by a
// seeded random source (max <= 0: exactly -max bytes each).
type chunkReader struct {
	data []byte
	rng  *rand.Rand
	max  int
}

func newChunkReader(data []byte, seed uint64, max int) *chunkReader {
	return &chunkReader{data: data, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), max: max}
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := -r.max
	if r.max > 0 {
		n = 1 + r.rng.IntN(r.max)
	}
	n = min(n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// parseAll reads every request from rd, copying each argv at once (the
// slices are only valid until the next Fill). It stops at the first
// error; io.EOF after the last complete request is not an error.
func parseAll(rd io.Reader, setup func(*Reader)) (cmds [][]string, err error) {
	r := NewReader(rd)
	if setup != nil {
		setup(r)
	}
	for fills := 0; ; fills++ {
		for {
			argv, ok, err := r.Next()
			if err != nil {
				return cmds, err
			}
			if !ok {
				break
			}
			if len(argv) == 0 {
				return cmds, errors.New("Next returned ok with an empty argv")
			}
			cmds = append(cmds, words(argv))
		}
		if err := r.Fill(); err != nil {
			if err == io.EOF {
				return cmds, nil
			}
			return cmds, err
		}
		if fills > 1<<26 {
			return cmds, errors.New("reader makes no progress")
		}
	}
}

// feeds are the ways a test feeds the same bytes to a Reader: in one
// piece, one byte at a time, and in random chunks of several sizes.
func feeds(data []byte) []struct {
	name string
	rd   io.Reader
} {
	out := []struct {
		name string
		rd   io.Reader
	}{
		{"whole", bytes.NewReader(data)},
		{"bytewise", &oneByteReader{data: data}},
	}
	for seed := uint64(1); seed <= 4; seed++ {
		out = append(out, struct {
			name string
			rd   io.Reader
		}{fmt.Sprintf("chunks%d", seed), newChunkReader(data, seed, 7)})
	}
	out = append(out, struct {
		name string
		rd   io.Reader
	}{"chunks4k", newChunkReader(data, 9, 4096)})
	return out
}

// expectGood checks that input parses into exactly want, however it is
// split across reads.
func expectGood(t *testing.T, input string, want [][]string, setup func(*Reader)) {
	t.Helper()
	for _, f := range feeds([]byte(input)) {
		got, err := parseAll(f.rd, setup)
		if err != nil {
			t.Errorf("%q (%s): error %v after %q; want %q", clipQ(input), f.name, err, got, want)
			return
		}
		if !equalCmds(got, want) {
			t.Errorf("%q (%s): got %q, want %q", clipQ(input), f.name, got, want)
			return
		}
	}
}

// expectBad checks that input yields the commands before, then the
// protocol error msg (the text after "Protocol error: "), however it is
// split across reads.
func expectBad(t *testing.T, input string, msg string, before [][]string, setup func(*Reader)) {
	t.Helper()
	for _, f := range feeds([]byte(input)) {
		got, err := parseAll(f.rd, setup)
		var pe *ProtocolError
		switch {
		case !errors.As(err, &pe):
			t.Errorf("%q (%s): got %q, err %v; want protocol error %q", clipQ(input), f.name, got, err, msg)
		case pe.Msg != msg:
			t.Errorf("%q (%s): protocol error %q, want %q", clipQ(input), f.name, pe.Msg, msg)
		case pe.Error() != "Protocol error: "+msg:
			t.Errorf("%q (%s): Error() = %q, want %q", clipQ(input), f.name, pe.Error(), "Protocol error: "+msg)
		case !equalCmds(got, before):
			t.Errorf("%q (%s): commands before the error %q, want %q", clipQ(input), f.name, got, before)
		default:
			continue
		}
		return // one report per input is enough
	}
}

func clipQ(s string) string {
	if len(s) > 80 {
		return s[:80] + fmt.Sprintf("...(%d bytes)", len(s))
	}
	return s
}

func equalCmds(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equalWords(a[i], b[i]) {
			return false
		}
	}
	return true
}

// mb encodes argv as a multibulk request.
func mb(argv ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(argv))
	for _, a := range argv {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

func cmds(c ...[]string) [][]string { return c }
func cmd(argv ...string) []string   { return argv }

func TestReaderGood(t *testing.T) {
	bigValue := strings.Repeat("v", 100_000)
	cases := []struct {
		name  string
		input string
		want  [][]string
	}{
		// Multibulk.
		{"ping", "*1\r\n$4\r\nPING\r\n", cmds(cmd("PING"))},
		{"llen", "*2\r\n$4\r\nLLEN\r\n$5\r\nqueue\r\n", cmds(cmd("LLEN", "queue"))},
		{"empty bulk", "*2\r\n$3\r\nGET\r\n$0\r\n\r\n", cmds(cmd("GET", ""))},
		{"binary bulk", "*2\r\n$4\r\nECHO\r\n$6\r\na\r\n\x00\xffb\r\n", cmds(cmd("ECHO", "a\r\n\x00\xffb"))},
		{"bulk of CRLFs", "*1\r\n$4\r\n\r\n\r\n\r\n", cmds(cmd("\r\n\r\n"))},
		{"star inside bulk", "*2\r\n$1\r\n*\r\n$2\r\n*1\r\n", cmds(cmd("*", "*1"))},
		{"big bulk", mb("SET", "k", bigValue), cmds(cmd("SET", "k", bigValue))},
		{"many args", mb("RPUSH", "q", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"), cmds(cmd("RPUSH", "q", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"))},
		// Redis skips the byte after a count line's CR and the two bytes
		// after a bulk without looking at them.
		{"lenient count LF", "*1\rX$4\r\nPING\r\n", cmds(cmd("PING"))},
		{"lenient bulk CRLF", "*1\r\n$4\r\nPINGxx", cmds(cmd("PING"))},
		{"lenient bulk header LF", "*1\r\n$4\rzPING\r\n", cmds(cmd("PING"))},
		// Empty requests are skipped.
		{"star zero", "*0\r\n*1\r\n$4\r\nPING\r\n", cmds(cmd("PING"))},
		{"star minus one", "*-1\r\n*1\r\n$4\r\nPING\r\n", cmds(cmd("PING"))},
		{"star minus five", "*-5\r\nPING\r\n", cmds(cmd("PING"))},
		{"only empties", "*0\r\n\r\n\n*-1\r\n", nil},
		{"empty lines", "\r\n\n\r\nPING\r\n\n", cmds(cmd("PING"))},
		{"blank inline", "   \r\n\t\nPING\r\n", cmds(cmd("PING"))},
		{"nothing", "", nil},
		{"incomplete at EOF", "*2\r\n$3\r\nGET\r\n$1\r\n", nil},
		{"inline incomplete at EOF", "PING", nil},
		// Inline.
		{"inline crlf", "PING\r\n", cmds(cmd("PING"))},
		{"inline lf", "PING\n", cmds(cmd("PING"))},
		{"inline words", "  SET   k  v  \r\n", cmds(cmd("SET", "k", "v"))},
		{"inline CR inside", "PI\rNG\r\n", cmds(cmd("PI", "NG"))},
		{"inline two CRs", "PING\r\r\n", cmds(cmd("PING"))},
		{"inline double quotes", "SET k \"a b\"\r\n", cmds(cmd("SET", "k", "a b"))},
		{"inline hex escape", "ECHO \"\\x41\\x62\"\r\n", cmds(cmd("ECHO", "Ab"))},
		{"inline escapes", "ECHO \"a\\nb\\tc\\r\\\\\\\"\"\r\n", cmds(cmd("ECHO", "a\nb\tc\r\\\""))},
		{"inline single quotes", "ECHO 'a\\'b \\n'\r\n", cmds(cmd("ECHO", "a'b \\n"))},
		{"inline empty quotes", "ECHO \"\" ''\r\n", cmds(cmd("ECHO", "", ""))},
		{"inline glued quotes", "ECHO a\"b c\"\r\n", cmds(cmd("ECHO", "ab c"))},
		{"inline star later", "ECHO *1\r\n", cmds(cmd("ECHO", "*1"))},
		{"inline dollar", "$4\r\n", cmds(cmd("$4"))},
		{"inline long", "ECHO " + strings.Repeat("x", 60_000) + "\r\n", cmds(cmd("ECHO", strings.Repeat("x", 60_000)))},
		// Pipelines.
		{"pipeline mixed", "*1\r\n$4\r\nPING\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$1\r\nx\r\nECHO \"y z\"\n*0\r\n",
			cmds(cmd("PING"), cmd("PING"), cmd("ECHO", "x"), cmd("ECHO", "y z"))},
		{"pipeline of empties and requests", "\r\n*0\r\nPING\r\n\r\n*1\r\n$4\r\nPING\r\n", cmds(cmd("PING"), cmd("PING"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { expectGood(t, tc.input, tc.want, nil) })
	}
}

func TestReaderPipelineOfManyCommands(t *testing.T) {
	var in strings.Builder
	var want [][]string
	for i := range 3000 {
		k := "key:" + strconv.Itoa(i)
		v := strings.Repeat("v", i%50)
		switch i % 3 {
		case 0:
			in.WriteString(mb("SET", k, v))
			want = append(want, cmd("SET", k, v))
		case 1:
			in.WriteString("GET " + k + "\r\n")
			want = append(want, cmd("GET", k))
		default:
			in.WriteString(mb("LPUSH", k, v, "x"))
			want = append(want, cmd("LPUSH", k, v, "x"))
		}
	}
	expectGood(t, in.String(), want, nil)
}

func TestReaderBad(t *testing.T) {
	tooBigDigits := strings.Repeat("1", MaxInlineLen+1)
	cases := []struct {
		name   string
		input  string
		msg    string
		before [][]string
	}{
		// Multibulk count.
		{"count too big", "*2147483648\r\n", "invalid multibulk length", nil},
		{"count way too big", "*3000000000\r\n", "invalid multibulk length", nil},
		{"count overflow", "*99999999999999999999\r\n", "invalid multibulk length", nil},
		{"count non-numeric", "*abc\r\n", "invalid multibulk length", nil},
		{"count plus", "*+5\r\n", "invalid multibulk length", nil},
		{"count leading zero", "*05\r\n", "invalid multibulk length", nil},
		{"count minus zero", "*-0\r\n", "invalid multibulk length", nil},
		{"count empty", "*\r\n", "invalid multibulk length", nil},
		{"count space", "* 1\r\n", "invalid multibulk length", nil},
		{"count trailing space", "*1 \r\n", "invalid multibulk length", nil},
		{"count minus", "*-\r\n", "invalid multibulk length", nil},
		// Bulk length.
		{"bulk minus one", "*1\r\n$-1\r\n", "invalid bulk length", nil},
		{"bulk minus zero", "*1\r\n$-0\r\n", "invalid bulk length", nil},
		{"bulk leading zero", "*1\r\n$04\r\nPING\r\n", "invalid bulk length", nil},
		{"bulk plus", "*1\r\n$+4\r\nPING\r\n", "invalid bulk length", nil},
		{"bulk empty", "*1\r\n$\r\n", "invalid bulk length", nil},
		{"bulk non-numeric", "*1\r\n$x\r\n", "invalid bulk length", nil},
		{"bulk over max", "*1\r\n$536870913\r\n", "invalid bulk length", nil},
		{"bulk overflow", "*1\r\n$99999999999999999999\r\n", "invalid bulk length", nil},
		// Something other than '$' where a bulk header should be.
		{"expected dollar", "*1\r\nx\r\n", "expected '$', got 'x'", nil},
		{"expected dollar star", "*2\r\n$1\r\na\r\n*1\r\n", "expected '$', got '*'", nil},
		{"expected dollar colon", "*1\r\n:1\r\n", "expected '$', got ':'", nil},
		{"expected dollar high byte", "*1\r\n\xff\r\n", "expected '$', got '\xff'", nil},
		{"expected dollar after good", "PING\r\n*1\r\nPING\r\n", "expected '$', got 'P'", cmds(cmd("PING"))},
		// Count lines with no CR within 64 KiB.
		{"mbulk count string", "*" + tooBigDigits, "too big mbulk count string", nil},
		{"bulk count string", "*1\r\n$" + tooBigDigits, "too big bulk count string", nil},
		{"bulk count string no dollar", "*1\r\n" + tooBigDigits, "too big bulk count string", nil},
		// Inline.
		{"inline too big", strings.Repeat("A", MaxInlineLen+1), "too big inline request", nil},
		{"unbalanced double", "SET k \"v\r\n", "unbalanced quotes in request", nil},
		{"unbalanced single", "SET k 'v\r\n", "unbalanced quotes in request", nil},
		{"quote not followed by space", "SET k \"v\"x\r\n", "unbalanced quotes in request", nil},
		{"single quote not followed by space", "SET k 'v'x\r\n", "unbalanced quotes in request", nil},
		{"unbalanced after good", "PING\r\nECHO \"x\nPING\r\n", "unbalanced quotes in request", cmds(cmd("PING"))},
		{"bad after good multibulk", mb("PING") + "*1\r\n$x\r\n", "invalid bulk length", cmds(cmd("PING"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { expectBad(t, tc.input, tc.msg, tc.before, nil) })
	}
}

// TestReaderLineLimitBoundary checks the 64 KiB limit on lines without
// their terminator: up to MaxInlineLen bytes wait for more, one more byte
// is an error (Redis: "> PROTO_INLINE_MAX_SIZE").
func TestReaderLineLimitBoundary(t *testing.T) {
	for _, tc := range []struct {
		prefix, msg string
	}{
		{"", "too big inline request"},
		{"*", "too big mbulk count string"},
		{"*1\r\n$", "too big bulk count string"},
	} {
		// The limit counts from the start of the line being parsed.
		lineStart := strings.LastIndex(tc.prefix, "\n") + 1
		pad := MaxInlineLen - (len(tc.prefix) - lineStart)
		atLimit := tc.prefix + strings.Repeat("1", pad)
		got, err := parseAll(newChunkReader([]byte(atLimit), 1, 4096), nil)
		if err != nil || len(got) != 0 {
			t.Errorf("%q + %d digits (exactly %d bytes on the line): got %q, %v; want to wait for more", tc.prefix, pad, MaxInlineLen, got, err)
		}
		var pe *ProtocolError
		_, err = parseAll(newChunkReader([]byte(atLimit+"1"), 1, 4096), nil)
		if !errors.As(err, &pe) || pe.Msg != tc.msg {
			t.Errorf("%q + %d digits (%d bytes on the line): err %v; want %q", tc.prefix, pad+1, MaxInlineLen+1, err, tc.msg)
		}
	}
}

func TestReaderRequireAuth(t *testing.T) {
	auth := func(r *Reader) { r.RequireAuth = true }
	args10 := []string{"AUTH", "a", "b", "c", "d", "e", "f", "g", "h", "i"}
	expectGood(t, mb(args10...), cmds(args10), auth)
	expectBad(t, mb(append(args10, "j")...), "unauthenticated multibulk length", nil, auth)
	expectBad(t, "*11\r\n", "unauthenticated multibulk length", nil, auth)

	v16k := strings.Repeat("p", 16384)
	expectGood(t, mb("AUTH", v16k), cmds(cmd("AUTH", v16k)), auth)
	expectBad(t, mb("AUTH", v16k+"p"), "unauthenticated bulk length", nil, auth)
	expectBad(t, "*2\r\n$4\r\nAUTH\r\n$16385\r\n", "unauthenticated bulk length", nil, auth)
	// Bulk lengths over proto-max-bulk-len are "invalid", even before auth.
	expectBad(t, "*1\r\n$536870913\r\n", "invalid bulk length", nil, auth)
	// *-1 and *0 stay harmless.
	expectGood(t, "*-1\r\n*0\r\n"+mb("PING"), cmds(cmd("PING")), auth)
	// Inline requests are bounded by the line limit only.
	line := "ECHO " + strings.Repeat("x ", 20)
	expectGood(t, line+"\r\n", cmds(strings.Fields(line)), auth)
	// Without RequireAuth, neither limit applies.
	expectGood(t, mb(append(args10, "j")...), cmds(append(args10, "j")), nil)
	expectGood(t, mb("SET", v16k+"p"), cmds(cmd("SET", v16k+"p")), nil)
}

func TestReaderMaxBulkLen(t *testing.T) {
	lim := func(r *Reader) { r.Limits.MaxBulkLen = 100 }
	v100 := strings.Repeat("b", 100)
	expectGood(t, mb("SET", "k", v100), cmds(cmd("SET", "k", v100)), lim)
	expectBad(t, mb("SET", "k", v100+"b"), "invalid bulk length", nil, lim)
	// The default is Redis's 512 MB: the header alone is accepted.
	got, err := parseAll(strings.NewReader("*1\r\n$536870912\r\n"), nil)
	if err != nil || len(got) != 0 {
		t.Errorf("$536870912 with the default limit: got %q, %v; want to wait for the data", got, err)
	}
}

// TestReaderQueryBufferLimit checks that an unfinished request larger than
// client-query-buffer-limit ends the reader with ErrQueryBufferLimit,
// while a request under it, and a long pipeline of small requests, do not.
func TestReaderQueryBufferLimit(t *testing.T) {
	const limit = 1 << 20
	setup := func(r *Reader) { r.Limits.MaxQueryBuf = limit }

	over := mb("SET", "k", strings.Repeat("x", limit+100))
	_, err := parseAll(newChunkReader([]byte(over), 1, -4096), setup)
	if !errors.Is(err, ErrQueryBufferLimit) {
		t.Errorf("one %d-byte request with a %d-byte limit: err %v, want ErrQueryBufferLimit", len(over), limit, err)
	}
	under := strings.Repeat("y", limit-100)
	got, err := parseAll(newChunkReader([]byte(mb("SET", "k", under)), 3, -4096), setup)
	if err != nil || len(got) != 1 || got[0][2] != under {
		t.Errorf("a request just under the limit: %d commands, err %v; want it parsed", len(got), err)
	}

	var pipe strings.Builder
	for pipe.Len() < 3*limit {
		pipe.WriteString(mb("SET", "k", strings.Repeat("z", 1000)))
	}
	got, err = parseAll(newChunkReader([]byte(pipe.String()), 4, 65536), setup)
	if err != nil || len(got) == 0 {
		t.Errorf("a %d-byte pipeline of small requests with a %d-byte limit: %d commands, err %v; want all parsed", pipe.Len(), limit, len(got), err)
	}
}

// TestReaderQueryBufferLimitCountsUnparsedBytes: Redis moves each parsed
// argument out of the query buffer, so client-query-buffer-limit bounds
// the bytes not yet parsed, not a whole request: redis-server 7.0 with
// a 1 MB limit accepts a 3.4 MB RPUSH of 200,000 ten-byte values.
func TestReaderQueryBufferLimitCountsUnparsedBytes(t *testing.T) {
	const limit = 1 << 20
	const n = 200_000
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n$5\r\nRPUSH\r\n$3\r\nbig\r\n", n+2)
	for i := range n {
		fmt.Fprintf(&b, "$10\r\n%010d\r\n", i)
	}
	got, err := parseAll(newChunkReader([]byte(b.String()), 5, -65536), func(r *Reader) { r.Limits.MaxQueryBuf = limit })
	if err != nil || len(got) != 1 || len(got[0]) != n+2 {
		t.Errorf("a %d-byte request of %d small arguments with a %d-byte query buffer limit: %d requests, err %v; Redis accepts it", b.Len(), n+2, limit, len(got), err)
	}
}

// TestReaderHugeHeaderDoesNotAllocate checks that announcing a 500 MB bulk
// or two billion arguments costs nothing until the bytes arrive, and that
// the buffer then grows with the bytes that did arrive.
func TestReaderHugeHeaderDoesNotAllocate(t *testing.T) {
	for _, hdr := range []string{
		"*1\r\n$500000000\r\n",
		"*2147483647\r\n",
		"*2147483647\r\n$500000000\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\n",
	} {
		input := []byte(hdr + "abc")
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r := NewReader(bytes.NewReader(input))
		for range 4 {
			if _, ok, err := r.Next(); ok || err != nil {
				t.Fatalf("%q: Next = ok %v, err %v; want to wait for data", hdr, ok, err)
			}
			if err := r.Fill(); err != nil && err != io.EOF {
				t.Fatalf("%q: Fill: %v", hdr, err)
			}
		}
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Errorf("%q: parsing the header allocated %d bytes; want < 1 MiB", hdr, d)
		}
		if len(r.buf) > initialBufSize || cap(r.offs) > 2*maxArgsPrealloc {
			t.Errorf("%q: buffer %d bytes, %d offsets reserved; want at most %d and %d", hdr, len(r.buf), cap(r.offs), initialBufSize, 2*maxArgsPrealloc)
		}
	}

	// Now let 8 MB of the announced 500 MB arrive: the buffer follows the
	// data (doubling at most), not the header.
	const arrived = 8 << 20
	data := append([]byte("*1\r\n$500000000\r\n"), bytes.Repeat([]byte{'x'}, arrived)...)
	r := NewReader(newChunkReader(data, 7, -65536))
	for {
		if _, ok, err := r.Next(); ok || err != nil {
			t.Fatalf("partial 500 MB bulk: ok %v, err %v", ok, err)
		}
		if err := r.Fill(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("Fill: %v", err)
		}
	}
	if len(r.buf) > 2*(arrived+64) {
		t.Errorf("after %d bytes of a 500 MB bulk the buffer is %d bytes; want at most twice what arrived", arrived, len(r.buf))
	}
}

// TestReaderMillionArguments parses a 1,000,000-argument request fed in
// 4 KB reads and checks every argument and that the cost is linear: the
// request is parsed once, not once per read.
func TestReaderMillionArguments(t *testing.T) {
	build := func(n int) []byte {
		b := strconv.AppendInt([]byte{'*'}, int64(n), 10)
		b = append(b, '\r', '\n')
		for i := range n {
			s := strconv.Itoa(i % 1000)
			b = append(b, '$')
			b = strconv.AppendInt(b, int64(len(s)), 10)
			b = append(b, '\r', '\n')
			b = append(b, s...)
			b = append(b, '\r', '\n')
		}
		return b
	}
	const quarter, full = 250_000, 1_000_000
	inputs := map[int][]byte{quarter: build(quarter), full: build(full)}
	run := func(n int) time.Duration {
		start := time.Now()
		r := NewReader(newChunkReader(inputs[n], 1, -4096))
		for {
			argv, ok, err := r.Next()
			if err != nil {
				t.Fatalf("%d args: %v", n, err)
			}
			if ok {
				elapsed := time.Since(start)
				if len(argv) != n {
					t.Fatalf("%d args: got %d", n, len(argv))
				}
				for i, a := range argv {
					if string(a) != strconv.Itoa(i%1000) {
						t.Fatalf("%d args: argv[%d] = %q, want %q", n, i, a, strconv.Itoa(i%1000))
					}
				}
				return elapsed
			}
			if err := r.Fill(); err != nil {
				t.Fatalf("%d args: Fill: %v before the request was complete", n, err)
			}
		}
	}
	// Four times the arguments should cost about 4x; a parser that starts
	// over on every read costs about 16x. Wall time is noisy on a shared
	// machine, so the best of up to three runs counts.
	run(quarter) // warm up
	var small, big time.Duration
	for attempt := range 3 {
		s, b := run(quarter), run(full)
		if attempt == 0 || s < small {
			small = s
		}
		if attempt == 0 || b < big {
			big = b
		}
		if big <= 10*max(small, time.Millisecond) {
			break
		}
	}
	t.Logf("250k args: %v, 1M args: %v (best runs)", small, big)
	if big > 10*max(small, time.Millisecond) {
		t.Errorf("1M arguments took %v, 250k took %v: %.1fx for 4x the input; want linear", big, small, float64(big)/float64(small))
	}
	// About 0.1-0.4 s on a laptop; the bound leaves room for -race.
	if big > 20*time.Second {
		t.Errorf("1M arguments took %v; want well under 2 s (20 s allowed for -race)", big)
	}
}

// TestReaderArgvStableUntilFill checks the documented contract: the
// argument slices of every request returned since the last Fill stay
// valid, and each has its capacity clipped, so appending to one cannot
// overwrite the next request.
func TestReaderArgvStableUntilFill(t *testing.T) {
	input := mb("SET", "a", "1") + "SET b \"2 2\"\r\n" + mb("GET", "c") + "ECHO d\r\n"
	r := NewReader(strings.NewReader(input))
	if err := r.Fill(); err != nil {
		t.Fatal(err)
	}
	var all [][][]byte
	for {
		argv, ok, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		all = append(all, argv)
	}
	want := cmds(cmd("SET", "a", "1"), cmd("SET", "b", "2 2"), cmd("GET", "c"), cmd("ECHO", "d"))
	check := func(when string) {
		t.Helper()
		got := make([][]string, len(all))
		for i, a := range all {
			got[i] = words(a)
		}
		if !equalCmds(got, want) {
			t.Errorf("%s: requests read %q, want %q", when, got, want)
		}
	}
	check("after parsing all")
	for _, argv := range all {
		for i := range argv {
			argv[i] = append(argv[i], "CLOBBER"...)
			argv[i] = argv[i][:len(argv[i])-len("CLOBBER")]
		}
		_ = append(argv, []byte("extra"), []byte("extra"))
	}
	check("after appending to every argument and argv")
}

func TestReaderBufferedAndShrink(t *testing.T) {
	r := NewReader(strings.NewReader(mb("PING") + "*2\r\n$4\r\nECHO\r\n"))
	if err := r.Fill(); err != nil {
		t.Fatal(err)
	}
	if got := r.Buffered(); got != len(mb("PING"))+len("*2\r\n$4\r\nECHO\r\n") {
		t.Errorf("Buffered() before Next = %d", got)
	}
	if _, ok, _ := r.Next(); !ok {
		t.Fatal("Next did not return PING")
	}
	if _, ok, _ := r.Next(); ok {
		t.Fatal("Next returned an incomplete request")
	}
	if got, want := r.Buffered(), len("*2\r\n$4\r\nECHO\r\n"); got != want {
		t.Errorf("Buffered() with a partial request = %d, want %d", got, want)
	}

	// A big request grows the buffer; Shrink gives it back once consumed,
	// and the reader keeps working.
	big := mb("SET", "k", strings.Repeat("x", 1<<20))
	r = NewReader(strings.NewReader(big + mb("PING")))
	var got [][]string
	for len(got) < 2 {
		argv, ok, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			got = append(got, words(argv))
			continue
		}
		r.Shrink() // must not drop a partial request
		if err := r.Fill(); err != nil {
			t.Fatalf("Fill: %v after %d commands", err, len(got))
		}
	}
	if len(got[0]) != 3 || len(got[0][2]) != 1<<20 || got[1][0] != "PING" {
		t.Fatalf("big request then PING: got %d commands, first with %d args", len(got), len(got[0]))
	}
	r.Shrink()
	if len(r.buf) != initialBufSize {
		t.Errorf("after Shrink with nothing buffered the buffer is %d bytes, want %d", len(r.buf), initialBufSize)
	}
	if r.Buffered() != 0 {
		t.Errorf("Buffered() after consuming everything = %d", r.Buffered())
	}
}

// TestReaderFillErrors checks that Fill passes the connection's errors
// through and reports a reader that returns nothing as no progress.
func TestReaderFillErrors(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(readerFunc(func([]byte) (int, error) { return 0, boom }))
	if err := r.Fill(); !errors.Is(err, boom) {
		t.Errorf("Fill over a failing reader = %v, want %v", err, boom)
	}
	r = NewReader(readerFunc(func([]byte) (int, error) { return 0, nil }))
	if err := r.Fill(); !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("Fill over a reader returning (0, nil) = %v, want io.ErrNoProgress", err)
	}
	// Data and an error in the same Read: the data counts.
	sent := false
	r = NewReader(readerFunc(func(p []byte) (int, error) {
		if sent {
			return 0, io.EOF
		}
		sent = true
		return copy(p, "PING\r\n"), io.EOF
	}))
	if err := r.Fill(); err != nil {
		t.Errorf("Fill with data and EOF = %v, want nil (data first)", err)
	}
	if argv, ok, err := r.Next(); !ok || err != nil || string(argv[0]) != "PING" {
		t.Errorf("Next after data+EOF = %q, %v, %v", argv, ok, err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// TestParseInt checks ParseInt against Redis's string2ll rules.
func TestParseInt(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"-1", -1, true},
		{"42", 42, true},
		{"1234567890", 1234567890, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"18446744073709551615", 0, false},
		{"18446744073709551616", 0, false},
		{"99999999999999999999", 0, false},
		{"-99999999999999999999", 0, false},
		{"000000000000000000001", 0, false}, // 21 bytes: too long
		{"", 0, false},
		{"-", 0, false},
		{"+", 0, false},
		{"+1", 0, false},
		{"-0", 0, false},
		{"00", 0, false},
		{"01", 0, false},
		{"-01", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1\x00", 0, false},
		{"1.0", 0, false},
		{"1e3", 0, false},
		{"0x10", 0, false},
		{"--1", 0, false},
		{"1-", 0, false},
		{"١", 0, false}, // a non-ASCII digit
		{"a", 0, false},
	}
	for _, tc := range cases {
		got, ok := ParseInt([]byte(tc.in))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	// Every int64 round-trips through its decimal form.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		v := int64(rng.Uint64())
		if got, ok := ParseInt([]byte(strconv.FormatInt(v, 10))); !ok || got != v {
			t.Fatalf("ParseInt(%d) = %d, %v", v, got, ok)
		}
	}
}

func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-1", "9223372036854775807", "-9223372036854775808", "+1", "01", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ParseInt([]byte(s))
		// string2ll accepts exactly the canonical decimal form of an int64.
		v, err := strconv.ParseInt(s, 10, 64)
		canonical := err == nil && strconv.FormatInt(v, 10) == s
		if ok != canonical || (ok && got != v) {
			t.Fatalf("ParseInt(%q) = %d, %v; canonical int64: %v (%d)", s, got, ok, canonical, v)
		}
	})
}

// TestParseFloat checks ParseFloat against Redis's string2ld (strtold on
// x86-64, long double), which INCRBYFLOAT and blocking timeouts use. The
// expectations were checked with INCRBYFLOAT and BLPOP on redis-server.
func TestParseFloat(t *testing.T) {
	cases := []struct {
		in   string
		want float64
		ok   bool
		note string
	}{
		{"1.5", 1.5, true, ""},
		{"-0.5", -0.5, true, ""},
		{"0", 0, true, ""},
		{"-0", math.Copysign(0, -1), true, ""},
		{"10", 10, true, ""},
		{"00012", 12, true, "strtold takes leading zeros"},
		{"+1.5", 1.5, true, "strtold takes a leading '+'"},
		{"1.", 1, true, ""},
		{".5", 0.5, true, ""},
		{"1e+2", 100, true, ""},
		{"1E2", 100, true, ""},
		{"5e-324", 5e-324, true, "smallest subnormal double"},
		{"inf", math.Inf(1), true, ""},
		{"-inf", math.Inf(-1), true, ""},
		{"+inf", math.Inf(1), true, ""},
		{"INF", math.Inf(1), true, ""},
		{"infinity", math.Inf(1), true, ""},
		{"-Infinity", math.Inf(-1), true, ""},
		{"0x1p3", 8, true, "C hex float"},
		{"0x10", 16, true, "strtold reads hex without a binary exponent"},
		{"0X1A", 26, true, "strtold reads hex without a binary exponent"},
		{"0x.8", 0.5, true, "strtold reads hex without a binary exponent"},
		{"nan", 0, false, "NaN is refused"},
		{"NaN", 0, false, ""},
		{"-nan", 0, false, ""},
		{"", 0, false, ""},
		{" 1", 0, false, "leading space"},
		{"\t1", 0, false, "leading space"},
		{"1 ", 0, false, "trailing space"},
		{"1e", 0, false, ""},
		{"e1", 0, false, ""},
		{"1.5.5", 0, false, ""},
		{"abc", 0, false, ""},
		{"1\x002", 0, false, "NUL inside"},
		{"1_0", 0, false, "C has no digit separators"},
		{"1_000.5", 0, false, "C has no digit separators"},
		{"0x1_0p0", 0, false, "C has no digit separators"},
		{"1e400", 0, false, "finite in long double, but no float64 holds it"},
		{"-1e400", 0, false, "finite in long double, but no float64 holds it"},
		{"1e-5000", 0, false, "underflows even a long double: ERANGE with zero"},
		{"0.1" + strings.Repeat("0", 5000), 0.1, true, "long, but under string2ld's 5 KiB"},
		{"0.1" + strings.Repeat("0", 5200), 0, false, "string2ld refuses 5 KiB or more"},
	}
	for _, tc := range cases {
		got, ok := ParseFloat([]byte(tc.in))
		same := got == tc.want && math.Signbit(got) == math.Signbit(tc.want)
		if ok != tc.ok || (ok && !same) {
			t.Errorf("ParseFloat(%q) = %v, %v; want %v, %v (%s)", clipQ(tc.in), got, ok, tc.want, tc.ok, tc.note)
		}
	}
}
