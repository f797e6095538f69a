package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fzConn is the server's end of an in-memory connection. Reads hand out
// the client's bytes in chunks; once they run out, reads wait for
// `linger` (honouring read deadlines, which blocking commands use) and
// then see EOF, as after a client's half-close. Writes are collected.
type fzConn struct {
	mu       sync.Mutex
	in       []byte
	chunk    int
	linger   time.Duration
	drained  time.Time // when the input ran out
	deadline time.Time
	closed   bool
	kick     chan struct{} // a deadline changed or the conn closed
	out      bytes.Buffer
	dropped  int // bytes written past outLimit
	raddr    net.Addr
	laddr    net.Addr
}

const fzOutLimit = 8 << 20

func newFzConn(in []byte, chunk int, linger time.Duration, port int) *fzConn {
	return &fzConn{
		in: in, chunk: max(chunk, 1), linger: linger, kick: make(chan struct{}, 1),
		raddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port},
		laddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6379},
	}
}

func (c *fzConn) Read(p []byte) (int, error) {
	for {
		c.mu.Lock()
		now := time.Now()
		switch {
		case c.closed:
			c.mu.Unlock()
			return 0, net.ErrClosed
		case !c.deadline.IsZero() && !now.Before(c.deadline):
			c.mu.Unlock()
			return 0, os.ErrDeadlineExceeded
		case len(c.in) > 0:
			n := copy(p, c.in[:min(len(c.in), c.chunk)])
			c.in = c.in[n:]
			if len(c.in) == 0 {
				c.drained = now
			}
			c.mu.Unlock()
			return n, nil
		}
		if c.drained.IsZero() {
			c.drained = now
		}
		wait := c.drained.Add(c.linger).Sub(now)
		if wait <= 0 {
			c.mu.Unlock()
			return 0, io.EOF
		}
		if !c.deadline.IsZero() {
			wait = min(wait, c.deadline.Sub(now))
		}
		c.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-c.kick:
		case <-t.C:
		}
		t.Stop()
	}
}

func (c *fzConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	n := len(p)
	if room := fzOutLimit - c.out.Len(); room < len(p) {
		c.dropped += len(p) - max(room, 0)
		p = p[:max(room, 0)]
	}
	c.out.Write(p)
	return n, nil
}

func (c *fzConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.poke()
	return nil
}

func (c *fzConn) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *fzConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }
func (c *fzConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	c.poke()
	return nil
}
func (c *fzConn) SetWriteDeadline(time.Time) error { return nil }
func (c *fzConn) LocalAddr() net.Addr              { return c.laddr }
func (c *fzConn) RemoteAddr() net.Addr             { return c.raddr }

func (c *fzConn) output() ([]byte, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.out.Bytes()), c.dropped
}

// checkReplies checks that out is a sequence of complete, well-formed
// RESP2/RESP3 replies and returns how many there are.
func checkReplies(out []byte) (int, error) {
	n := 0
	for pos := 0; pos < len(out); n++ {
		next, err := checkReply(out, pos, 0)
		if err != nil {
			return n, fmt.Errorf("reply %d at byte %d: %w (near %q)", n, pos, err, clipBytes(out[pos:], 80))
		}
		pos = next
	}
	return n, nil
}

func clipBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

func checkReply(out []byte, pos, depth int) (int, error) {
	if depth > 64 {
		return 0, errors.New("nested too deep")
	}
	end := bytes.Index(out[pos:], []byte("\r\n"))
	if end < 1 {
		return 0, errors.New("no complete type line")
	}
	kind, line, next := out[pos], out[pos+1:pos+end], pos+end+2
	if bytes.IndexByte(line, '\n') >= 0 || bytes.IndexByte(line, '\r') >= 0 {
		return 0, fmt.Errorf("line %q holds CR or LF", line)
	}
	count := func() (int64, error) {
		v, err := strconv.ParseInt(string(line), 10, 64)
		if err != nil || strconv.FormatInt(v, 10) != string(line) {
			return 0, fmt.Errorf("bad length %q", line)
		}
		return v, nil
	}
	switch kind {
	case '+', '-':
		return next, nil
	case ':', '(':
		_, err := count()
		return next, err
	case '_':
		if len(line) != 0 {
			return 0, fmt.Errorf("null with payload %q", line)
		}
		return next, nil
	case '#':
		if string(line) != "t" && string(line) != "f" {
			return 0, fmt.Errorf("bad boolean %q", line)
		}
		return next, nil
	case ',':
		if len(line) == 0 {
			return 0, errors.New("empty double")
		}
		return next, nil
	case '$', '=', '!':
		v, err := count()
		if err != nil {
			return 0, err
		}
		if v == -1 && kind == '$' {
			return next, nil
		}
		if v < 0 || int64(len(out)-next) < v+2 || string(out[next+int(v):next+int(v)+2]) != "\r\n" {
			return 0, fmt.Errorf("bulk of %d bytes not followed by CRLF", v)
		}
		if kind == '=' && (v < 4 || out[next+3] != ':') {
			return 0, fmt.Errorf("verbatim without a format")
		}
		return next + int(v) + 2, nil
	case '*', '~', '>', '%':
		v, err := count()
		if err != nil {
			return 0, err
		}
		if v == -1 && kind == '*' {
			return next, nil
		}
		if v < 0 {
			return 0, fmt.Errorf("negative aggregate length %d", v)
		}
		if kind == '%' {
			v *= 2
		}
		for range v {
			if next, err = checkReply(out, next, depth+1); err != nil {
				return 0, err
			}
		}
		return next, nil
	}
	return 0, fmt.Errorf("unknown reply type %q", kind)
}

// serveMode decodes the fuzz mode byte: how each connection's bytes are
// chunked and whether its client lingers before closing (so blocking
// commands can time out or be served by the other connection).
func serveMode(mode uint8) (chunkA, chunkB int, lingerA, lingerB time.Duration) {
	sizes := [4]int{1, 3, 64, 1 << 16}
	chunkA, chunkB = sizes[mode&3], sizes[mode>>2&3]
	if mode&0x10 != 0 {
		lingerA = 30 * time.Millisecond
	}
	if mode&0x20 != 0 {
		lingerB = 30 * time.Millisecond
	}
	return
}

var fzLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// serveStreams runs a fresh server and feeds it two concurrent client
// connections, then checks that both end promptly, that each got only
// well-formed replies, that nothing of them is left in the server, and
// that a new client is still answered.
func serveStreams(t *testing.T, dir string, a, b []byte, mode uint8) {
	t.Helper()
	// CONFIG SET proto-max-bulk-len could let SETRANGE allocate 512 MB per
	// input; keep the fuzzer's memory sane.
	if bytes.Contains(bytes.ToLower(a), []byte("proto-max")) || bytes.Contains(bytes.ToLower(b), []byte("proto-max")) {
		return
	}
	cfg := DefaultConfig()
	cfg.Dir = dir
	cfg.ProtoMaxBulkLen = 1 << 20
	s, err := New(cfg, Options{Logger: fzLogger})
	if err != nil {
		t.Fatal(err)
	}
	chunkA, chunkB, lingerA, lingerB := serveMode(mode)
	conns := []*fzConn{newFzConn(bytes.Clone(a), chunkA, lingerA, 40001), newFzConn(bytes.Clone(b), chunkB, lingerB, 40002)}
	runConns(t, s, conns, func() string { return fmt.Sprintf("A=%q B=%q mode=%#x", a, b, mode) })

	for i, c := range conns {
		out, dropped := c.output()
		if dropped > 0 {
			continue // truncated: cannot check the framing
		}
		if _, err := checkReplies(out); err != nil {
			t.Fatalf("A=%q B=%q mode=%#x: connection %c got malformed output: %v", a, b, mode, 'A'+i, err)
		}
	}

	if !lockWithin(&s.shard.mu, 5*time.Second) { // the loop takes it for its passes; a leak holds it for ever
		t.Fatalf("A=%q B=%q mode=%#x: the keyspace lock is still held after every client left", a, b, mode)
	}
	var leftovers []string
	if n := len(s.clients); n != 0 {
		leftovers = append(leftovers, fmt.Sprintf("%d clients", n))
	}
	for _, db := range s.shard.dbs {
		if len(db.waiters) != 0 {
			leftovers = append(leftovers, fmt.Sprintf("db %d waiters on %d keys", db.index, len(db.waiters)))
		}
	}
	if s.stats.blockedClients != 0 {
		leftovers = append(leftovers, fmt.Sprintf("blocked_clients=%d", s.stats.blockedClients))
	}
	if err := checkAccounting(s); err != nil {
		leftovers = append(leftovers, err.Error())
	}
	if len(s.shard.ready) != 0 || len(s.shard.served) != 0 || len(s.shard.pending) != 0 || len(s.shard.resized) != 0 {
		leftovers = append(leftovers, fmt.Sprintf("ready=%d served=%d pending=%d resized=%d", len(s.shard.ready), len(s.shard.served), len(s.shard.pending), len(s.shard.resized)))
	}
	pass, stopping := s.cfg.RequirePass, s.stopping
	s.shard.mu.Unlock()
	if leftovers != nil {
		t.Fatalf("A=%q B=%q mode=%#x: after every client left the server still holds %s", a, b, mode, strings.Join(leftovers, ", "))
	}

	// A new client is still served, unless a SHUTDOWN went through: then
	// no command runs any more.
	in, want := "PING\r\n", "+PONG\r\n"
	if pass != "" {
		in = fmt.Sprintf("*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(pass), pass) + in
		want = "+OK\r\n" + want
	}
	if stopping {
		want = ""
	}
	fresh := newFzConn([]byte(in), 1<<16, 0, 40003)
	runConns(t, s, []*fzConn{fresh}, func() string { return fmt.Sprintf("fresh PING after A=%q B=%q mode=%#x", a, b, mode) })
	if out, _ := fresh.output(); string(out) != want {
		t.Fatalf("A=%q B=%q mode=%#x: a new client sending %q got %q, want %q", a, b, mode, in, out, want)
	}
}

// lockWithin takes mu if it comes free within d.
func lockWithin(mu *sync.Mutex, d time.Duration) bool {
	got := make(chan struct{})
	go func() { mu.Lock(); close(got) }()
	select {
	case <-got:
		return true
	case <-time.After(d):
		go func() { <-got; mu.Unlock() }()
		return false
	}
}

// runConns serves conns concurrently and fails if any is still being
// served after a generous bound.
func runConns(t *testing.T, s *Server, conns []*fzConn, what func() string) {
	t.Helper()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.handleConn(c)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%s: handleConn still running after 10 s\n%s", what(), clipBytes(buf, 30000))
	}
}

// mbCmd encodes argv as a multibulk request.
func mbCmd(argv ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(argv))
	for _, a := range argv {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// serveVocab is what the generated streams are made of: list work,
// transactions, blocking with short timeouts, client and config
// administration, and some mistakes.
var serveVocab = [][]string{
	{"PING"}, {"PING", "hi"}, {"ECHO", "x"},
	{"SET", "k", "v"}, {"GET", "k"}, {"INCR", "n"}, {"INCRBYFLOAT", "f", "1.5"}, {"APPEND", "k", "zz"},
	{"SETRANGE", "k", "3", "abc"}, {"GETRANGE", "k", "0", "-1"}, {"MSET", "a", "1", "b", "2"}, {"MGET", "a", "b", "c"},
	{"GETDEL", "a"}, {"GETEX", "b", "PX", "100"}, {"SETEX", "e", "1", "v"}, {"STRLEN", "k"}, {"SET", "q", "str"},
	{"LPUSH", "q", "a", "b"}, {"RPUSH", "q", "c"}, {"RPUSH", "q2", "d", "e", "f"}, {"LPUSHX", "q", "x"}, {"RPUSHX", "zz", "x"},
	{"LPOP", "q"}, {"RPOP", "q", "2"}, {"LLEN", "q"}, {"LRANGE", "q", "0", "-1"}, {"LINDEX", "q", "1"},
	{"LSET", "q", "0", "z"}, {"LINSERT", "q", "BEFORE", "z", "y"}, {"LREM", "q", "0", "y"}, {"LTRIM", "q", "0", "10"},
	{"LPOS", "q", "c", "RANK", "-1"}, {"LMOVE", "q", "q2", "LEFT", "RIGHT"}, {"RPOPLPUSH", "q2", "q"},
	{"LMPOP", "2", "q", "q2", "LEFT", "COUNT", "2"}, {"LMOVEM", "q", "q2", "LEFT", "RIGHT", "COUNT", "2", "OBO"},
	{"BLPOP", "q", "0.01"}, {"BRPOP", "q", "q2", "0.02"}, {"BLMOVE", "q", "q2", "LEFT", "LEFT", "0.01"},
	{"BRPOPLPUSH", "q", "q2", "0.01"}, {"BLMPOP", "0.01", "1", "q", "RIGHT"},
	{"BLMOVEM", "q", "q2", "LEFT", "RIGHT", "0.01", "EXACTLY", "2", "BULK"}, {"BLPOP", "q", "0"}, {"BRPOP", "w", "0.05"},
	{"MULTI"}, {"EXEC"}, {"DISCARD"}, {"WATCH", "q"}, {"UNWATCH"},
	{"CLIENT", "ID"}, {"CLIENT", "SETNAME", "fz"}, {"CLIENT", "GETNAME"}, {"CLIENT", "LIST"}, {"CLIENT", "INFO"},
	{"CLIENT", "REPLY", "OFF"}, {"CLIENT", "REPLY", "ON"}, {"CLIENT", "REPLY", "SKIP"},
	{"CLIENT", "UNBLOCK", "1"}, {"CLIENT", "UNBLOCK", "2", "ERROR"}, {"CLIENT", "KILL", "ID", "2"},
	{"CLIENT", "KILL", "ADDR", "127.0.0.1:40001"}, {"CLIENT", "KILL", "127.0.0.1:40002"}, {"CLIENT", "NO-EVICT", "on"},
	{"CLIENT", "SETINFO", "lib-name", "fz"},
	{"CONFIG", "SET", "requirepass", "pw"}, {"AUTH", "pw"}, {"AUTH", "default", "nope"}, {"CONFIG", "SET", "maxclients", "1"},
	{"CONFIG", "SET", "timeout", "1"}, {"CONFIG", "GET", "*"}, {"CONFIG", "SET", "slowlog-log-slower-than", "0"},
	{"CONFIG", "SET", "list-max-listpack-size", "2"}, {"CONFIG", "RESETSTAT"}, {"CONFIG", "SET", "hz", "100", "maxmemory", "1mb"},
	{"HELLO", "3"}, {"HELLO", "2"}, {"HELLO", "3", "SETNAME", "x"}, {"RESET"}, {"SELECT", "1"}, {"SELECT", "0"},
	{"QUIT"}, {"SHUTDOWN", "NOSAVE"},
	{"DEL", "q"}, {"EXISTS", "q", "k"}, {"EXPIRE", "q", "1"}, {"PEXPIRE", "k", "5"}, {"TTL", "q"}, {"TYPE", "q"},
	{"KEYS", "*"}, {"SCAN", "0", "MATCH", "q*", "COUNT", "5"}, {"RENAME", "q", "q3"}, {"COPY", "q2", "q4"},
	{"OBJECT", "ENCODING", "q"}, {"MEMORY", "USAGE", "q"}, {"RANDOMKEY"}, {"PERSIST", "q"},
	{"INFO"}, {"INFO", "clients"}, {"TIME"}, {"DBSIZE"}, {"FLUSHDB"}, {"FLUSHALL"}, {"SLOWLOG", "GET"},
	{"SLOWLOG", "RESET"}, {"COMMAND", "COUNT"}, {"COMMAND", "INFO", "get"}, {"COMMAND", "DOCS", "blpop"},
	{"COMMAND", "GETKEYS", "LMPOP", "2", "a", "b", "LEFT"}, {"COMMAND", "LIST", "FILTERBY", "PATTERN", "bl*"},
	{"NOSUCHCMD", "x"}, {"GET"}, {"LPUSH", "q"}, {"CLIENT", "NOPE"}, {"BLPOP", "q", "-1"}, {"BLPOP", "q", "nan"},
	// Streams and consumer groups.
	{"XADD", "s", "*", "f", "v"}, {"XADD", "s", "MAXLEN", "~", "5", "*", "a", "1", "b", "2"}, {"XADD", "s", "1-1", "f", "v"},
	{"XADD", "s", "IDMP", "p", "i1", "*", "f", "v"}, {"XADD", "s", "ACKED", "*", "f", "v"}, {"XADD", "q", "*", "f", "v"},
	{"XRANGE", "s", "-", "+", "COUNT", "3"}, {"XREVRANGE", "s", "+", "(0-1"}, {"XLEN", "s"}, {"XDEL", "s", "1-1"},
	{"XTRIM", "s", "MINID", "0-2"}, {"XDELEX", "s", "DELREF", "IDS", "1", "1-1"}, {"XSETID", "s", "99999999999-0"},
	{"XREAD", "COUNT", "2", "STREAMS", "s", "0"}, {"XREAD", "BLOCK", "20", "STREAMS", "s", "$"}, {"XREAD", "BLOCK", "0", "STREAMS", "s", "+"},
	{"XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"}, {"XGROUP", "CREATE", "s", "g2", "0"}, {"XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "0"},
	{"XGROUP", "CREATECONSUMER", "s", "g", "c"}, {"XGROUP", "DELCONSUMER", "s", "g", "c"}, {"XGROUP", "DESTROY", "s", "g2"},
	{"XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">"}, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"},
	{"XREADGROUP", "GROUP", "g", "d", "BLOCK", "20", "NOACK", "STREAMS", "s", ">"},
	{"XREADGROUP", "GROUP", "g", "d", "CLAIM", "0", "BLOCK", "0", "STREAMS", "s", ">"},
	{"XACK", "s", "g", "1-1", "0-1"}, {"XACKDEL", "s", "g", "ACKED", "IDS", "1", "1-1"}, {"XNACK", "s", "g", "FAIL", "IDS", "1", "1-1"},
	{"XPENDING", "s", "g"}, {"XPENDING", "s", "g", "IDLE", "0", "-", "+", "10", "c"},
	{"XCLAIM", "s", "g", "d", "0", "1-1", "RETRYCOUNT", "3", "JUSTID"}, {"XAUTOCLAIM", "s", "g", "d", "0", "0", "COUNT", "5"},
	{"XINFO", "STREAM", "s", "FULL"}, {"XINFO", "GROUPS", "s"}, {"XINFO", "CONSUMERS", "s", "g"}, {"XCFGSET", "s", "IDMP-DURATION", "5"},
}

// randomStream builds a command stream of n commands from serveVocab,
// some inline, sometimes ending in a corrupted byte or a protocol error.
func randomStream(rng *rand.Rand, n int) []byte {
	var b bytes.Buffer
	for range n {
		argv := serveVocab[rng.IntN(len(serveVocab))]
		if rng.IntN(5) == 0 {
			b.WriteString(strings.Join(argv, " ") + "\r\n")
		} else {
			b.WriteString(mbCmd(argv...))
		}
	}
	out := b.Bytes()
	switch rng.IntN(8) {
	case 0:
		if len(out) > 0 {
			out[rng.IntN(len(out))] = byte(rng.IntN(256))
		}
	case 1:
		out = append(out, "*1\r\n$x\r\n"...)
	case 2:
		out = out[:rng.IntN(len(out)+1)]
	}
	return out
}

// serveSeeds are realistic pairs of concurrent client streams.
func serveSeeds() []struct {
	a, b string
	mode uint8
} {
	return []struct {
		a, b string
		mode uint8
	}{
		{mbCmd("LPUSH", "jobs", "1", "2", "3") + mbCmd("BRPOP", "jobs", "0.01") + mbCmd("LRANGE", "jobs", "0", "-1"), mbCmd("RPUSH", "jobs", "4"), 0x0f},
		{mbCmd("BLPOP", "jobs", "0"), mbCmd("RPUSH", "jobs", "x") + mbCmd("LLEN", "jobs"), 0x10},
		{mbCmd("BLMOVE", "src", "dst", "LEFT", "RIGHT", "0.05") + mbCmd("LRANGE", "dst", "0", "-1"), mbCmd("RPUSH", "src", "a", "b"), 0x30},
		{mbCmd("MULTI") + mbCmd("LPUSH", "q", "a") + mbCmd("BLPOP", "q", "0") + mbCmd("EXEC"), mbCmd("WATCH", "q") + mbCmd("MULTI") + mbCmd("LPOP", "q") + mbCmd("EXEC"), 0x05},
		{mbCmd("MULTI") + mbCmd("NOSUCH") + mbCmd("EXEC") + mbCmd("DISCARD"), "", 0x00},
		{mbCmd("CLIENT", "SETNAME", "worker") + mbCmd("BLPOP", "never", "0"), mbCmd("CLIENT", "UNBLOCK", "1", "ERROR") + mbCmd("CLIENT", "UNBLOCK", "2") + mbCmd("CLIENT", "LIST"), 0x10},
		{mbCmd("BRPOP", "never", "5"), mbCmd("CLIENT", "KILL", "ID", "1") + mbCmd("CLIENT", "KILL", "ADDR", "127.0.0.1:40001", "SKIPME", "no"), 0x10},
		{mbCmd("CONFIG", "SET", "requirepass", "pw") + mbCmd("PING"), mbCmd("AUTH", "pw") + mbCmd("SET", "k", "v") + "*11\r\n", 0x01},
		{mbCmd("CONFIG", "SET", "maxclients", "1") + mbCmd("CONFIG", "GET", "max*"), mbCmd("PING"), 0x00},
		{mbCmd("HELLO", "3") + mbCmd("CLIENT", "INFO") + mbCmd("CONFIG", "GET", "*") + mbCmd("BLPOP", "x", "0.01") + mbCmd("LPOS", "x", "a"), mbCmd("HELLO", "2") + mbCmd("INFO"), 0x1a},
		{mbCmd("CLIENT", "REPLY", "OFF") + mbCmd("RPUSH", "q", "a") + mbCmd("CLIENT", "REPLY", "ON") + mbCmd("CLIENT", "REPLY", "SKIP") + mbCmd("PING") + mbCmd("PING"), "", 0x02},
		{"PING\r\nSET k \"a b\"\r\nGET k\r\nECHO \"unbalanced\r\nPING\r\n", "*1\r\n$4\r\nPING\r\n*1\r\nx\r\n", 0x05},
		{mbCmd("RPUSH", "q", "a") + mbCmd("QUIT") + mbCmd("RPUSH", "q", "never"), mbCmd("SHUTDOWN") + mbCmd("PING"), 0x00},
		{mbCmd("SELECT", "3") + mbCmd("BLPOP", "q", "0.02") + mbCmd("RESET") + mbCmd("SELECT", "99"), mbCmd("SELECT", "3") + mbCmd("LPUSH", "q", "z"), 0x30},
		{"*1\r\n$500000000\r\nabc", "POST / HTTP/1.1\r\nHost: x\r\n\r\n", 0x00},
		{mbCmd("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM") + mbCmd("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">") + mbCmd("XACK", "s", "g", "1-1"),
			mbCmd("XADD", "s", "1-1", "f", "v") + mbCmd("XPENDING", "s", "g"), 0x10},
		{mbCmd("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"), mbCmd("XGROUP", "CREATE", "s", "g", "0", "MKSTREAM") + mbCmd("XGROUP", "DESTROY", "s", "g") + mbCmd("DEL", "s"), 0x30},
		{mbCmd("XREAD", "BLOCK", "0", "STREAMS", "s", "$") + mbCmd("XINFO", "STREAM", "s", "FULL"), mbCmd("XADD", "s", "*", "a", "1") + mbCmd("SET", "s", "x"), 0x10},
		{mbCmd("HELLO", "3") + mbCmd("XADD", "s", "*", "f", "v") + mbCmd("XGROUP", "CREATE", "s", "g", "0") + mbCmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">") + mbCmd("XAUTOCLAIM", "s", "g", "d", "0", "0") + mbCmd("XINFO", "CONSUMERS", "s", "g"),
			mbCmd("XCLAIM", "s", "g", "e", "0", "0-1") + mbCmd("XTRIM", "s", "MAXLEN", "0"), 0x1a},
	}
}

// FuzzServe feeds two concurrent connections of one fresh server with
// arbitrary bytes (see serveStreams for what is checked).
func FuzzServe(f *testing.F) {
	for _, sd := range serveSeeds() {
		f.Add([]byte(sd.a), []byte(sd.b), sd.mode)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, a, b []byte, mode uint8) {
		if len(a)+len(b) > 1<<16 {
			return
		}
		serveStreams(t, dir, a, b, mode)
	})
}

// TestServeRandomStreams runs a few hundred generated stream pairs, so a
// plain `go test` exercises the serving loop the way FuzzServe does.
func TestServeRandomStreams(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(20261129, 7))
	n := 300
	if testing.Short() {
		n = 60
	}
	for i := range n {
		a := randomStream(rng, 1+rng.IntN(12))
		b := randomStream(rng, rng.IntN(8))
		mode := uint8(rng.IntN(256))
		if rng.IntN(4) != 0 {
			mode &^= 0x30 // most pairs do not linger, to keep the test quick
		}
		serveStreams(t, dir, a, b, mode)
		if t.Failed() {
			t.Fatalf("failed on generated pair %d", i)
		}
	}
}

// TestCheckReplies keeps the reply checker used above honest.
func TestCheckReplies(t *testing.T) {
	good := []string{
		"", "+OK\r\n", "-ERR x\r\n", ":-1\r\n", "$-1\r\n", "$0\r\n\r\n", "$3\r\na\r\n\r\n", "*-1\r\n", "*0\r\n",
		"*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n+k\r\n*1\r\n_\r\n", "~1\r\n#t\r\n", ">2\r\n+a\r\n,1.5\r\n", "=8\r\ntxt:abcd\r\n",
		"+PONG\r\n+PONG\r\n",
	}
	for _, g := range good {
		if _, err := checkReplies([]byte(g)); err != nil {
			t.Errorf("checkReplies(%q) = %v, want ok", g, err)
		}
	}
	bad := []string{"+OK", "+OK\n", "$3\r\nab\r\n", "*2\r\n+a\r\n", ":x\r\n", "%1\r\n+k\r\n", "?\r\n", "#x\r\n", "$01\r\na\r\n", "*-2\r\n", "=2\r\nab\r\n"}
	for _, b := range bad {
		if _, err := checkReplies([]byte(b)); err == nil {
			t.Errorf("checkReplies(%q) = ok, want an error", b)
		}
	}
}

// newFzServer returns a fresh, unlistening server for one test.
func newFzServer(t *testing.T, mod func(*Config)) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg, Options{Logger: fzLogger})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// serveOne serves one connection that sends in (in chunks of chunk
// bytes) and returns everything the server wrote to it.
func serveOne(t *testing.T, s *Server, in string, chunk int) string {
	t.Helper()
	c := newFzConn([]byte(in), chunk, 0, 40010)
	runConns(t, s, []*fzConn{c}, func() string { return fmt.Sprintf("input %q", in) })
	out, _ := c.output()
	return string(out)
}

// TestServePipelinedAuth: Redis parses a request only after running the
// one before it, so commands pipelined behind AUTH get the authenticated
// limits (more than 10 arguments, bulks over 16 KiB). The answer must
// not depend on how the bytes arrived.
func TestServePipelinedAuth(t *testing.T) {
	args := []string{"RPUSH", "q"}
	for i := range 11 {
		args = append(args, strconv.Itoa(i))
	}
	big := strings.Repeat("x", 20000)
	in := mbCmd("AUTH", "pw") + mbCmd(args...) + mbCmd("SET", "big", big) + mbCmd("STRLEN", "big")
	want := "+OK\r\n:11\r\n+OK\r\n:20000\r\n" // what redis-server 7.0 answers
	for _, chunk := range []int{1 << 20, 7, 1} {
		s := newFzServer(t, func(c *Config) { c.RequirePass = "pw" })
		if got := serveOne(t, s, in, chunk); got != want {
			t.Errorf("AUTH then an 11-argument RPUSH and a 20000-byte SET, pipelined, read %d bytes at a time: got %q, want %q", chunk, got, want)
		}
	}
}

// TestServeKilledClientIsGone: once CLIENT KILL has answered, the killed
// client no longer exists — a second kill finds nothing and CLIENT LIST
// does not show it (Redis frees it at once).
func TestServeKilledClientIsGone(t *testing.T) {
	s := newFzServer(t, nil)
	victim := newFzConn([]byte(mbCmd("BLPOP", "never", "0")), 1<<16, 30*time.Second, 40001)
	done := make(chan struct{})
	go func() { s.handleConn(victim); close(done) }()
	defer func() { victim.Close(); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.shard.mu.Lock()
		blocked := s.stats.blockedClients
		s.shard.mu.Unlock()
		if blocked == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the victim never blocked")
		}
		time.Sleep(time.Millisecond)
	}
	in := mbCmd("CLIENT", "KILL", "ID", "1") + mbCmd("CLIENT", "KILL", "ID", "1") + mbCmd("CLIENT", "LIST", "ID", "1") +
		mbCmd("CLIENT", "KILL", "127.0.0.1:40001")
	want := ":1\r\n:0\r\n$0\r\n\r\n-ERR No such client\r\n" // what redis-server 7.0 answers
	if got := serveOne(t, s, in, 1<<16); got != want {
		t.Errorf("CLIENT KILL ID 1 twice, CLIENT LIST ID 1, CLIENT KILL <its addr>, pipelined:\n got %q\nwant %q", got, want)
	}
}

// chunkSensitive lists request words whose replies depend on the clock,
// on Go's map order, on a per-server random seed or on buffer sizes, and
// so may differ between two otherwise identical runs.
var chunkSensitive = map[string]bool{
	"time": true, "info": true, "client": true, "randomkey": true, "keys": true, "scan": true, "slowlog": true,
	"object": true, "memory": true, "ttl": true, "pttl": true, "expire": true, "pexpire": true, "expireat": true,
	"pexpireat": true, "expiretime": true, "pexpiretime": true, "setex": true, "psetex": true, "getex": true,
	"ex": true, "px": true, "exat": true, "pxat": true, "requirepass": true, "proto-max-bulk-len": true,
	"client-query-buffer-limit": true, "timeout": true,
	// Streams: "*" IDs come from the clock, and so do idle times and
	// what counts as idle enough to claim; BLOCK races with the input.
	"*": true, "xinfo": true, "xpending": true, "xclaim": true, "xautoclaim": true, "claim": true, "block": true,
	"idmp-duration": true,
	// An HTTP request closes the connection at once, dropping the replies
	// of the commands before it that were not written yet (as in Redis).
	"host:": true, "post": true,
}

// chunkComparable reports whether data holds none of chunkSensitive's
// words nor a blocking command (whose timeouts race with the input).
func chunkComparable(data []byte) bool {
	lower := bytes.ToLower(data)
	for w := range chunkSensitive {
		// The reader, like Redis's, takes any byte after \r as the \n, so
		// a command name can hide inside a "word" such as "0info00".
		if len(w) >= 4 && bytes.Contains(lower, []byte(w)) {
			return false
		}
	}
	for _, w := range bytes.FieldsFunc(lower, func(r rune) bool {
		return r == ' ' || r == '\r' || r == '\n' || r == '\t' || r == '"' || r == '\'' || r == 0
	}) {
		if chunkSensitive[string(w)] || bytes.HasPrefix(w, []byte("bl")) || bytes.HasPrefix(w, []byte("br")) {
			return false
		}
	}
	return true
}

// checkChunking serves the same single-connection stream on two fresh
// servers, once in one piece and once chunk bytes at a time, and wants
// the same replies: how bytes arrive must not change what they mean.
func checkChunking(t *testing.T, data []byte, chunk int) {
	t.Helper()
	if !chunkComparable(data) {
		return
	}
	dir := t.TempDir() // CONFIG GET dir prints it: share it
	sameDir := func(c *Config) { c.Dir = dir }
	whole := serveOne(t, newFzServer(t, sameDir), string(data), 1<<20)
	split := serveOne(t, newFzServer(t, sameDir), string(data), chunk)
	if whole != split {
		t.Fatalf("input %q:\n in one piece:      %q\n %d bytes at a time: %q", data, whole, chunk, split)
	}
}

// FuzzServeChunking checks that replies do not depend on how the request
// bytes were split across reads.
func FuzzServeChunking(f *testing.F) {
	for _, sd := range serveSeeds() {
		f.Add([]byte(sd.a), uint8(1))
		f.Add([]byte(sd.a+sd.b), uint8(sd.mode))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		if len(data) > 1<<14 || bytes.Contains(bytes.ToLower(data), []byte("proto-max")) {
			return
		}
		checkChunking(t, data, 1+int(chunk%32))
	})
}

// TestServeChunkingRandom is FuzzServeChunking over generated streams.
func TestServeChunkingRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 4242))
	checked := 0
	for i := 0; i < 2000 && checked < 150; i++ {
		data := randomStream(rng, 1+rng.IntN(15))
		if !chunkComparable(data) {
			continue
		}
		checked++
		checkChunking(t, data, 1+rng.IntN(16))
		if t.Failed() {
			return
		}
	}
	if checked < 50 {
		t.Fatalf("only %d generated streams were comparable", checked)
	}
}
