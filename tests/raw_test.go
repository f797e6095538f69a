package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redstream/redstream/internal/testport"
)

// Reply is one RESP2/RESP3 reply as it came off the wire, with its type
// byte kept so tests can check RESP3 types exactly.
type Reply struct {
	Type  byte    // '+', '-', ':', '$', '*', '%', '~', '_', ',', '#', '=', '>', '('
	Str   string  // simple/bulk/verbatim/error text, double or big number text
	Int   int64   // ':' value
	Elems []Reply // aggregate elements; a map is key, value, key, value...
	Null  bool    // $-1, *-1 or _
}

// String renders a reply compactly, e.g. *2[$"a" :5] or %1[$"k" $"v"].
func (r Reply) String() string {
	switch {
	case r.Null && r.Type == '_':
		return "_"
	case r.Null:
		return string(r.Type) + "nil"
	}
	switch r.Type {
	case ':':
		return ":" + strconv.FormatInt(r.Int, 10)
	case '*', '%', '~', '>':
		parts := make([]string, len(r.Elems))
		for i, e := range r.Elems {
			parts[i] = e.String()
		}
		n := len(r.Elems)
		if r.Type == '%' {
			n /= 2
		}
		return fmt.Sprintf("%c%d[%s]", r.Type, n, strings.Join(parts, " "))
	}
	return string(r.Type) + strconv.Quote(r.Str)
}

// RawConn is a plain socket to the server for protocol-level tests.
type RawConn struct {
	t    testing.TB
	Conn net.Conn
	r    *bufio.Reader
}

// Raw opens a raw connection, closed when the test ends.
func (s *Server) Raw(t testing.TB) *RawConn { return dialRaw(t, s.Addr) }

func dialRaw(t testing.TB, addr string) *RawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &RawConn{t: t, Conn: c, r: bufio.NewReader(c)}
}

// Send writes raw bytes.
func (rc *RawConn) Send(s string) {
	rc.t.Helper()
	if _, err := rc.Conn.Write([]byte(s)); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// Encode returns args as a RESP multibulk request.
func Encode(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// Do sends one command and reads its reply.
func (rc *RawConn) Do(args ...string) Reply {
	rc.t.Helper()
	rc.Send(Encode(args...))
	return rc.Read()
}

// Read reads one reply, failing the test after 10s or on a bad frame.
func (rc *RawConn) Read() Reply {
	rc.t.Helper()
	r, err := rc.TryRead(10 * time.Second)
	if err != nil {
		rc.t.Fatalf("read reply: %v", err)
	}
	return r
}

// TryRead reads one reply within d.
func (rc *RawConn) TryRead(d time.Duration) (Reply, error) {
	_ = rc.Conn.SetReadDeadline(time.Now().Add(d))
	defer rc.Conn.SetReadDeadline(time.Time{})
	return readReply(rc.r)
}

// ExpectClosed waits for the server to close the connection.
func (rc *RawConn) ExpectClosed(d time.Duration) {
	rc.t.Helper()
	_ = rc.Conn.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	for {
		_, err := rc.r.Read(buf)
		if err == io.EOF {
			return
		}
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				rc.t.Fatalf("connection still open after %v", d)
			}
			return // reset also counts as closed
		}
	}
}

func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(line, "\r\n") {
		return "", fmt.Errorf("line without CRLF: %q", line)
	}
	return line[:len(line)-2], nil
}

func readReply(r *bufio.Reader) (Reply, error) {
	line, err := readLine(r)
	if err != nil {
		return Reply{}, err
	}
	if line == "" {
		return Reply{}, fmt.Errorf("empty reply line")
	}
	t, rest := line[0], line[1:]
	switch t {
	case '+', '-', ',', '(':
		return Reply{Type: t, Str: rest}, nil
	case '#':
		return Reply{Type: t, Str: rest}, nil
	case '_':
		return Reply{Type: t, Null: true}, nil
	case ':':
		n, err := strconv.ParseInt(rest, 10, 64)
		return Reply{Type: t, Int: n}, err
	case '$', '=':
		n, err := strconv.Atoi(rest)
		if err != nil {
			return Reply{}, err
		}
		if n < 0 {
			return Reply{Type: t, Null: true}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return Reply{}, err
		}
		return Reply{Type: t, Str: string(buf[:n])}, nil
	case '*', '%', '~', '>':
		n, err := strconv.Atoi(rest)
		if err != nil {
			return Reply{}, err
		}
		if n < 0 {
			return Reply{Type: t, Null: true}, nil
		}
		if t == '%' {
			n *= 2
		}
		out := Reply{Type: t, Elems: make([]Reply, 0, n)}
		for range n {
			e, err := readReply(r)
			if err != nil {
				return Reply{}, err
			}
			out.Elems = append(out.Elems, e)
		}
		return out, nil
	}
	return Reply{}, fmt.Errorf("unknown reply type %q in %q", t, line)
}

// RedisServer is a real redis-server for side-by-side tests.
type RedisServer struct {
	Addr string
	Port int
}

// StartRedis starts redis-server on a free port without persistence; the
// test is skipped when redis-server is not installed.
func StartRedis(t testing.TB, extra ...string) *RedisServer {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (apt-get install redis-server); skipping side-by-side test")
	}
	port := freePort(t)
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--daemonize", "no"}, extra...)
	cmd := exec.Command(path, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(20 * time.Second)
	for {
		// A server loading its dataset (--dir with files) accepts
		// connections but answers -LOADING until it is done.
		err := pingRedis(addr)
		if err == nil {
			break
		}
		select {
		case <-done:
			t.Fatalf("redis-server exited at start")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling a port that is not yet open: nothing to wait on
	}
	return &RedisServer{Addr: addr, Port: port}
}

// pingRedis sends PING to addr and fails while it cannot connect or the
// server is still loading its dataset.
func pingRedis(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.HasPrefix(line, "-LOADING") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil // PONG, or NOAUTH from a server with a password: serving
}

// Raw opens a raw connection to redis-server.
func (r *RedisServer) Raw(t testing.TB) *RawConn { return dialRaw(t, r.Addr) }

func freePort(t testing.TB) int {
	t.Helper()
	port, err := testport.Free()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// quietConn is a raw connection that returns errors instead of failing
// the test: for load that runs while the server is being killed.
type quietConn struct {
	Conn net.Conn
	r    *bufio.Reader
}

func dialQuiet(addr string) (*quietConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &quietConn{Conn: c, r: bufio.NewReader(c)}, nil
}

// do sends one command and reads its reply; an error means the server
// went away, so nothing about this command was acknowledged.
func (q *quietConn) do(args ...string) (Reply, error) {
	_ = q.Conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := q.Conn.Write([]byte(Encode(args...))); err != nil {
		return Reply{}, err
	}
	return readReply(q.r)
}
