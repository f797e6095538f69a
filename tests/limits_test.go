package tests

import (
	"bufio"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bbExpectSilence checks that nothing arrives on rc for d and that the
// connection stays open.
func bbExpectSilence(t testing.TB, rc *RawConn, d time.Duration, what string) {
	t.Helper()
	r, err := rc.TryRead(d)
	switch {
	case err == nil:
		t.Errorf("%s: got a reply %s, want none", what, r)
	case !errors.Is(err, os.ErrDeadlineExceeded):
		t.Errorf("%s: connection ended (%v), want it open", what, err)
	}
}

// bbRSS reads used_memory_rss.
func bbRSS(t testing.TB, rc *RawConn) int64 { return bbInfoInt(t, rc, "memory", "used_memory_rss") }

func TestLimitsProtocolErrors(t *testing.T) {
	s := StartServer(t)
	bystander := s.Raw(t)
	bbRun(t, bystander, []bbStep{{"SET k v", bbOK}})
	for _, tc := range []struct {
		name, send, want string
	}{
		{"multibulk length not a number", "*abc\r\n", "invalid multibulk length"},
		{"multibulk length too big", "*3000000000\r\n", "invalid multibulk length"},
		{"multibulk length 2^31", "*2147483648\r\n", "invalid multibulk length"},
		{"multibulk length with a leading zero", "*01\r\n$4\r\nPING\r\n", "invalid multibulk length"},
		{"bulk length not a number", "*1\r\n$abc\r\n", "invalid bulk length"},
		{"negative bulk length", "*1\r\n$-5\r\n", "invalid bulk length"},
		{"bulk length with a plus", "*1\r\n$+4\r\nPING\r\n", "invalid bulk length"},
		{"bulk length over proto-max-bulk-len", "*1\r\n$536870913\r\n", "invalid bulk length"},
		{"not a bulk", "*1\r\nx3\r\nGET\r\n", "expected '$', got 'x'"},
		{"integer instead of a bulk", "*2\r\n$4\r\nECHO\r\n:5\r\n", "expected '$', got ':'"},
		{"unbalanced double quote", "GET \"a\r\n", "unbalanced quotes in request"},
		{"unbalanced single quote", "SET 'a b\r\n", "unbalanced quotes in request"},
		{"closing quote not followed by a space", "ECHO \"a\"b\r\n", "unbalanced quotes in request"},
		{"inline request over 64 KB", strings.Repeat("x", 70000), "too big inline request"},
		{"multibulk count line over 64 KB", "*" + strings.Repeat("1", 70000), "too big mbulk count string"},
		{"bulk count line over 64 KB", "*1\r\n$" + strings.Repeat("1", 70000), "too big bulk count string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := s.Raw(t)
			// A good request first: it is answered before the bad one.
			rc.Send(Encode("PING") + tc.send)
			if r := rc.Read(); r.String() != bbStatus("PONG") {
				t.Fatalf("PING before the bad request = %s", r)
			}
			want := bbErr("ERR Protocol error: " + tc.want)
			if r := rc.Read(); r.String() != want {
				t.Errorf("reply = %s, want %s", r, want)
			}
			rc.ExpectClosed(5 * time.Second)
			// Only that connection is closed.
			bbRun(t, bystander, []bbStep{{"GET k", bbBulk("v")}})
		})
	}
}

func TestLimitsBulkLength(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	before := bbRSS(t, rc)
	// Announcing a 400 MB bulk (below proto-max-bulk-len) costs nothing
	// until the bytes arrive.
	var conns []*RawConn
	for range 5 {
		c := s.Raw(t)
		c.Send("*1\r\n$400000000\r\n")
		conns = append(conns, c)
	}
	for _, c := range conns {
		bbExpectSilence(t, c, 100*time.Millisecond, "after *1 $400000000")
	}
	// The server has read the headers: it still answers others.
	bbRun(t, rc, []bbStep{{"PING", bbStatus("PONG")}})
	after := bbRSS(t, rc)
	t.Logf("RSS before %d MB, after five 400 MB headers %d MB", before>>20, after>>20)
	if grown := after - before; grown > 100<<20 {
		t.Errorf("RSS grew by %d MB after five 400 MB bulk headers; the server allocated ahead of the data", grown>>20)
	}
	if used := bbInfoInt(t, rc, "memory", "used_memory"); used > 200<<20 {
		t.Errorf("used_memory = %d MB after five 400 MB bulk headers", used>>20)
	}
	// Some data arrives: memory follows the data, not the header.
	conns[0].Send(strings.Repeat("x", 1<<20))
	bbRun(t, rc, []bbStep{{"PING", bbStatus("PONG")}})
	if grown := bbRSS(t, rc) - before; grown > 150<<20 {
		t.Errorf("RSS grew by %d MB after 1 MB of a 400 MB bulk", grown>>20)
	}

	// A lower proto-max-bulk-len refuses longer bulks at the header.
	s2 := StartServer(t, "--proto-max-bulk-len", "2mb")
	r2 := s2.Raw(t)
	r2.Send("*2\r\n$4\r\nECHO\r\n$3000000\r\n")
	if r := r2.Read(); r.String() != bbErr("ERR Protocol error: invalid bulk length") {
		t.Errorf("bulk over proto-max-bulk-len 2mb = %s", r)
	}
	r2.ExpectClosed(5 * time.Second)
	ok := s2.Raw(t)
	val := strings.Repeat("y", 2<<20)
	if r := ok.Do("ECHO", val); r.Str != val {
		t.Errorf("ECHO of exactly proto-max-bulk-len bytes failed: %.60s", r)
	}
	// CONFIG SET changes the limit for new requests.
	bbRun(t, ok, []bbStep{{"CONFIG SET proto-max-bulk-len 1mb", bbOK}})
	ok.Send("*2\r\n$4\r\nECHO\r\n$2000000\r\n")
	if r := ok.Read(); r.String() != bbErr("ERR Protocol error: invalid bulk length") {
		t.Errorf("bulk over the new proto-max-bulk-len = %s", r)
	}
}

func TestLimitsQueryBuffer(t *testing.T) {
	s := StartServer(t, "--client-query-buffer-limit", "1mb")
	bystander := s.Raw(t)
	before := bbRSS(t, bystander)

	// A complete request under the limit works.
	ok := s.Raw(t)
	val := strings.Repeat("a", 900<<10)
	if r := ok.Do("ECHO", val); r.Str != val {
		t.Fatalf("ECHO of 900 KB under a 1 MB query buffer limit failed")
	}

	// An unfinished request that grows past the limit closes the client.
	big := s.Raw(t)
	big.Send("*2\r\n$4\r\nECHO\r\n$5000000\r\n")
	chunk := strings.Repeat("b", 64<<10)
	for range 24 { // 1.5 MB
		if _, err := big.Conn.Write([]byte(chunk)); err != nil {
			break // closed under us: that is the point
		}
	}
	big.ExpectClosed(10 * time.Second)
	bbRun(t, bystander, []bbStep{{"PING", bbStatus("PONG")}})
	bbWaitFor(t, 5*time.Second, "the server to log the query buffer limit", func() bool {
		return strings.Contains(s.Output(), "query buffer")
	})

	// "*2000000000" is accepted without allocating for two billion
	// arguments, and the connection is still subject to the limit: an
	// unfinished bulk that grows past it closes the client.
	huge := s.Raw(t)
	huge.Send("*2000000000\r\n")
	bbExpectSilence(t, huge, 100*time.Millisecond, "after *2000000000")
	if grown := bbRSS(t, bystander) - before; grown > 100<<20 {
		t.Errorf("RSS grew by %d MB after a *2000000000 header", grown>>20)
	}
	huge.Send(Encode("ECHO", "x")[4:]) // two complete arguments: still waiting for more
	bbExpectSilence(t, huge, 100*time.Millisecond, "after two of 2000000000 arguments")
	huge.Send("$5000000\r\n")
	for range 24 { // 1.5 MB of a 5 MB bulk
		if _, err := huge.Conn.Write([]byte(chunk)); err != nil {
			break
		}
	}
	huge.ExpectClosed(10 * time.Second)
	bbRun(t, bystander, []bbStep{{"PING", bbStatus("PONG")}})
	if grown := bbRSS(t, bystander) - before; grown > 150<<20 {
		t.Errorf("RSS grew by %d MB over the run", grown>>20)
	}
}

func TestLimitsUnauthenticated(t *testing.T) {
	s := StartServer(t, "--requirepass", "pw")
	bystander := s.Raw(t)
	bbRun(t, bystander, []bbStep{{"AUTH pw", bbOK}})

	// More than 10 arguments before AUTH.
	rc := s.Raw(t)
	args := []string{"SET", "k"}
	for range 9 {
		args = append(args, "x")
	}
	rc.Send(Encode(args...))
	if r := rc.Read(); r.String() != bbErr("ERR Protocol error: unauthenticated multibulk length") {
		t.Errorf("11 arguments before AUTH = %s", r)
	}
	rc.ExpectClosed(5 * time.Second)

	// A bulk over 16384 bytes before AUTH: refused at its header.
	rc = s.Raw(t)
	rc.Send("*2\r\n$4\r\nAUTH\r\n$16385\r\n")
	if r := rc.Read(); r.String() != bbErr("ERR Protocol error: unauthenticated bulk length") {
		t.Errorf("16385-byte bulk before AUTH = %s", r)
	}
	rc.ExpectClosed(5 * time.Second)

	// At the limits exactly: parsed, then refused as NOAUTH.
	rc = s.Raw(t)
	if r := rc.Do(args[:10]...); r.String() != bbErr("NOAUTH Authentication required.") {
		t.Errorf("10 arguments before AUTH = %s", r)
	}
	if r := rc.Do("ECHO", strings.Repeat("e", 16384)); r.String() != bbErr("NOAUTH Authentication required.") {
		t.Errorf("16384-byte bulk before AUTH = %s", r)
	}
	// After AUTH the limits are gone.
	bbRun(t, rc, []bbStep{{"AUTH pw", bbOK}})
	long := strings.Repeat("x", 100000)
	if r := rc.Do("ECHO", long); r.Str != long {
		t.Errorf("100 KB ECHO after AUTH failed")
	}
	if r := rc.Do(append([]string{"RPUSH", "l"}, make([]string, 50)...)...); r.Int != 50 {
		t.Errorf("RPUSH with 50 elements after AUTH = %s", r)
	}
	bbRun(t, bystander, []bbStep{{"LLEN l", ":50"}})
}

func TestLimitsMaxclients(t *testing.T) {
	s := StartServer(t, "--maxclients", "3")
	var conns []*RawConn
	for range 3 {
		c := s.Raw(t)
		bbRun(t, c, []bbStep{{"PING", bbStatus("PONG")}})
		conns = append(conns, c)
	}
	extra := s.Raw(t)
	if r := extra.Read(); r.String() != bbErr("ERR max number of clients reached") {
		t.Errorf("connection over maxclients got %s", r)
	}
	extra.ExpectClosed(5 * time.Second)
	if n := bbInfoInt(t, conns[0], "stats", "rejected_connections"); n != 1 {
		t.Errorf("rejected_connections = %d, want 1", n)
	}
	if n := bbInfoInt(t, conns[0], "clients", "connected_clients"); n != 3 {
		t.Errorf("connected_clients = %d, want 3", n)
	}
	// A slot freed by a client that left can be used again.
	conns[2].Conn.Close()
	bbWaitFor(t, 5*time.Second, "connected_clients to drop to 2", func() bool {
		return bbInfoInt(t, conns[0], "clients", "connected_clients") == 2
	})
	again := s.Raw(t)
	bbRun(t, again, []bbStep{{"PING", bbStatus("PONG")}})
	// CONFIG SET maxclients takes effect for new connections.
	bbRun(t, conns[0], []bbStep{{"CONFIG SET maxclients 4", bbOK}})
	four := s.Raw(t)
	bbRun(t, four, []bbStep{{"PING", bbStatus("PONG")}})
	five := s.Raw(t)
	if r := five.Read(); r.String() != bbErr("ERR max number of clients reached") {
		t.Errorf("fifth connection with maxclients 4 got %s", r)
	}
}

func TestLimitsIdleTimeout(t *testing.T) {
	s := StartServer(t, "--timeout", "1")
	idle := s.Raw(t)
	bbRun(t, idle, []bbStep{{"PING", bbStatus("PONG")}})
	blocked := s.Raw(t)
	blocked.Send(Encode("BLPOP", "q", "0"))
	busy := s.Raw(t)

	start := time.Now()
	// The busy client talks every 200 ms for 2.5 s and is never closed.
	for time.Since(start) < 2500*time.Millisecond {
		bbRun(t, busy, []bbStep{{"PING", bbStatus("PONG")}})
		time.Sleep(200 * time.Millisecond) // the client's think time, not synchronisation
	}
	idle.ExpectClosed(5 * time.Second)
	if el := time.Since(start); el < time.Second {
		t.Errorf("idle client closed after %v, before the 1 s timeout", el)
	}
	// A client blocked without a timeout is not idle.
	bbExpectSilence(t, blocked, 100*time.Millisecond, "BLPOP q 0 with timeout 1")
	bbRun(t, busy, []bbStep{{"RPUSH q v", ":1"}})
	if r := blocked.Read(); r.String() != `*2[$"q" $"v"]` {
		t.Errorf("BLPOP after 2.5 s = %s", r)
	}
	// CONFIG SET timeout 0 turns it off.
	bbRun(t, busy, []bbStep{{"CONFIG SET timeout 0", bbOK}})
	calm := s.Raw(t)
	bbRun(t, calm, []bbStep{{"PING", bbStatus("PONG")}})
	bbExpectSilence(t, calm, 1500*time.Millisecond, "idle client with timeout 0")
	bbRun(t, calm, []bbStep{{"PING", bbStatus("PONG")}})
}

func TestLimitsInline(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	for _, tc := range []struct {
		send string
		want []string
	}{
		{"PING\r\n", []string{bbStatus("PONG")}},
		{"PING\n", []string{bbStatus("PONG")}},
		{"ping hello\r\n", []string{bbBulk("hello")}},
		{"\r\n\r\n  \r\nPING\r\n", []string{bbStatus("PONG")}}, // blank lines are skipped
		{"*0\r\n*-1\r\nPING\r\n", []string{bbStatus("PONG")}},
		{"SET k \"a b\"\r\nGET k\r\n", []string{bbOK, bbBulk("a b")}},
		{"SET k 'x\\'y'\r\nGET k\r\n", []string{bbOK, bbBulk("x'y")}},
		{"ECHO \"\\x41\\n\\t\\\\\\\"\"\r\n", []string{bbBulk("A\n\t\\\"")}},
		{"ECHO \"\"\r\n", []string{bbBulk("")}},
		{"SET e \"\"\r\nSTRLEN e\r\nEXISTS e\r\n", []string{bbOK, ":0", ":1"}},
		{"   SET   spaced    out   \r\nGET spaced\r\n", []string{bbOK, bbBulk("out")}},
		{"ECHO a\"b\"\r\n", []string{bbBulk("ab")}},
		{"RPUSH il a b c\r\nLRANGE il 0 -1\r\n", []string{":3", `*3[$"a" $"b" $"c"]`}},
		{"nosuch a b\r\n", []string{bbErr("ERR unknown command 'nosuch', with args beginning with: 'a' 'b' ")}},
		{"PING\r\n" + Encode("ECHO", "mixed") + "PING x\r\n", []string{bbStatus("PONG"), bbBulk("mixed"), bbBulk("x")}},
	} {
		rc.Send(tc.send)
		for _, want := range tc.want {
			if r := rc.Read(); r.String() != want {
				t.Errorf("inline %q: got %s, want %s", tc.send, r, want)
			}
		}
	}
	// Inline AUTH works with requirepass.
	sp := StartServer(t, "--requirepass", "p w")
	rp := sp.Raw(t)
	rp.Send("AUTH \"p w\"\r\nGET k\r\n")
	if r := rp.Read(); r.String() != bbOK {
		t.Errorf("inline AUTH = %s", r)
	}
	if r := rp.Read(); r.String() != bbNilBulk {
		t.Errorf("GET after inline AUTH = %s", r)
	}
}

func TestLimitsHTTPRequest(t *testing.T) {
	s := StartServer(t)
	bystander := s.Raw(t)
	for _, req := range []string{
		"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
		"post /x HTTP/1.0\r\n",
		"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
		"Host: example.com\r\n",
	} {
		rc := s.Raw(t)
		rc.Send(req)
		// POST and Host: close the connection; nothing after them runs.
		rc.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		rest, err := bufio.NewReader(rc.Conn).ReadString(0)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%q: connection still open after 5s", req)
		}
		if strings.HasPrefix(req, "POST") || strings.HasPrefix(req, "post") || strings.HasPrefix(req, "Host") {
			if rest != "" {
				t.Errorf("%q: the server answered %q before closing", req, rest)
			}
		}
	}
	bbRun(t, bystander, []bbStep{{"PING", bbStatus("PONG")}})
	bbWaitFor(t, 5*time.Second, "a cross-protocol warning in the log", func() bool {
		return strings.Contains(strings.ToLower(s.Output()), "cross-protocol") || strings.Contains(s.Output(), "HTTP")
	})
}

// TestLimitsUnixSocket: with protected mode on and no password, clients on
// the unix socket are local and accepted. (Refusing a non-loopback TCP
// peer cannot be exercised here — every address this test can dial is
// loopback — and is left to a unit test of protectedModeRefuses.)
func TestLimitsUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "rs.sock")
	s := StartServer(t, "--unixsocket", sock, "--protected-mode", "yes")
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatalf("unix socket: %v", err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o700 {
		t.Errorf("unix socket mode = %v, want a socket with unixsocketperm 700", fi.Mode())
	}
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		t.Fatalf("dial unix: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	uc := &RawConn{t: t, Conn: c, r: bufio.NewReader(c)}
	bbRun(t, uc, []bbStep{
		{"PING", bbStatus("PONG")},
		{"SET via unix", bbOK},
		{"CONFIG GET protected-mode", `*2[$"protected-mode" $"yes"]`},
		{"CONFIG GET unixsocket", `*2[$"unixsocket" $"` + sock + `"]`},
	})
	info := bbClientLines(t, uc.Do("CLIENT", "INFO"))
	if info[0]["flags"] != "U" || info[0]["laddr"] != sock+":0" {
		t.Errorf("CLIENT INFO of a unix client: flags=%s laddr=%s, want U and %s:0", info[0]["flags"], info[0]["laddr"], sock)
	}
	// TCP on loopback is accepted too, and sees the same data.
	bbRun(t, s.Raw(t), []bbStep{{"GET via", bbBulk("unix")}})
	listeners := bbInfoText(t, uc, "server")
	if !strings.Contains(listeners, "name=unix") {
		t.Errorf("INFO server lists no unix listener:\n%s", listeners)
	}
}
