package tests

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestOutputLimitConfig: client-output-buffer-limit's default, CONFIG
// SET's replies and CONFIG GET's format are Redis's, side by side with
// redis-server when it is installed.
func TestOutputLimitConfig(t *testing.T) {
	s := StartServer(t, "--appendonly", "no", "--save", "")
	ours := s.Raw(t)
	const dflt = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
	if r := ours.Do("CONFIG", "GET", "client-output-buffer-limit"); len(r.Elems) != 2 || r.Elems[1].Str != dflt {
		t.Fatalf("CONFIG GET client-output-buffer-limit = %s, want %q", r, dflt)
	}
	values := []string{
		"normal 1mb 2MB 3", "replica 1gb 1k 10", "slave 1 2 3 pubsub 4 5 6", "master 0 0 0",
		"normal 0 0", "normal -1 0 0", "normal 1.5mb 0 0", "normal 0 0 -1", "normal  0 0 0",
		"foo 0 0 0", "normal 0 0 +5", "normal 1 1 1 bogus 0 0 0", "",
	}
	want := map[string][2]string{ // checked with redis-server 7.0
		"normal 1mb 2MB 3": {"+OK", "normal 1048576 2097152 3 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
		"master 0 0 0":     {"-ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Invalid client class specified in buffer limit configuration.", ""},
		"normal 0 0":       {"-ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Wrong number of arguments in buffer limit configuration.", ""},
		"normal -1 0 0":    {"-ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Error in hard, soft or soft_seconds setting in buffer limit configuration.", ""},
	}
	set := func(rc *RawConn, v string) (string, string) {
		r := rc.Do("CONFIG", "SET", "client-output-buffer-limit", v)
		g := rc.Do("CONFIG", "GET", "client-output-buffer-limit")
		if len(g.Elems) != 2 {
			t.Fatalf("CONFIG GET = %s", g)
		}
		return string(r.Type) + r.Str, g.Elems[1].Str
	}
	var got [][2]string
	for _, v := range values {
		reply, get := set(ours, v)
		got = append(got, [2]string{reply, get})
		if w, ok := want[v]; ok && (reply != w[0] || (w[1] != "" && get != w[1])) {
			t.Errorf("CONFIG SET client-output-buffer-limit %q = %q, then GET %q; want %q, %q", v, reply, get, w[0], w[1])
		}
	}
	info := ours.Do("INFO", "everything").Str
	for _, f := range []string{"client_recent_max_output_buffer:", "client_recent_max_input_buffer:", "mem_clients_normal:", "mem_clients_slaves:", "client_output_buffer_limit_disconnections:0"} {
		if !strings.Contains(info, "\r\n"+f) {
			t.Errorf("INFO has no %q", f)
		}
	}

	r := StartRedis(t)
	theirs := r.Raw(t)
	for i, v := range values {
		reply, get := set(theirs, v)
		if got[i] != [2]string{reply, get} {
			t.Errorf("CONFIG SET client-output-buffer-limit %q: redstream %q then %q; redis-server %q then %q", v, got[i][0], got[i][1], reply, get)
		}
	}
}

// TestOutputLimitHardClosesStuckClient: a client that stops reading holds
// its reply (omem in CLIENT LIST) until a hard limit below what it holds
// is set; then it is closed within about a second, with Redis's log
// line, and counted in INFO. The held output shows in INFO's recent
// maximum and in mem_clients_normal meanwhile.
func TestOutputLimitHardClosesStuckClient(t *testing.T) {
	s := StartServer(t, "--appendonly", "no", "--save", "")
	admin := s.Raw(t)
	fillBigList(t, admin, 8)
	stuck := dialStuck(t, s.Addr, "stuck")
	stuck.Write([]byte(strings.Repeat(Encode("LRANGE", "biglist", "0", "-1"), 3)))
	held := waitHeld(t, admin, "stuck", 1<<20)
	t.Logf("the client that stopped reading holds omem=%d", held)
	waitInfoAtLeast(t, admin, "clients", "client_recent_max_output_buffer", 1<<20)
	waitInfoAtLeast(t, admin, "memory", "mem_clients_normal", 1<<20)

	if r := admin.Do("CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0"); r.Str != "OK" {
		t.Fatalf("CONFIG SET = %s", r)
	}
	start := time.Now()
	waitGone(t, admin, "stuck", 10*time.Second)
	t.Logf("closed %v after the limit was set", time.Since(start))
	expectEOF(t, stuck, 10*time.Second)
	waitLog(t, s, "closed for overcoming of output buffer limits.")
	if !strings.Contains(s.Output(), "name=stuck") {
		t.Errorf("the log line does not describe the client:\n%s", s.Output())
	}
	if v := infoInt(t, admin, "stats", "client_output_buffer_limit_disconnections"); v != 1 {
		t.Errorf("client_output_buffer_limit_disconnections = %d, want 1", v)
	}
	if r := admin.Do("PING"); r.Str != "PONG" {
		t.Errorf("PING after = %s", r)
	}
}

// TestOutputLimitHardAtOnce: with the hard limit set, a reply bigger than
// it closes the client at once, its output dropped unwritten, with
// Redis's "scheduled to be closed ASAP" line; others are not affected.
func TestOutputLimitHardAtOnce(t *testing.T) {
	s := StartServer(t, "--appendonly", "no", "--save", "", "--client-output-buffer-limit", "normal 4mb 0 0")
	admin := s.Raw(t)
	fillBigList(t, admin, 8)
	rc := s.Raw(t)
	if r := rc.Do("LRANGE", "biglist", "0", "1"); len(r.Elems) != 2 {
		t.Fatalf("LRANGE of 2 MB (under the limit) = %d elements", len(r.Elems))
	}
	rc.Send(Encode("LRANGE", "biglist", "0", "-1"))
	n := expectEOF(t, rc.Conn, 10*time.Second)
	if n != 0 {
		t.Errorf("the client closed for its limit got %d bytes of its reply; want none (dropped)", n)
	}
	waitLog(t, s, "scheduled to be closed ASAP for overcoming of output buffer limits.")
	if v := infoInt(t, admin, "stats", "client_output_buffer_limit_disconnections"); v != 1 {
		t.Errorf("client_output_buffer_limit_disconnections = %d, want 1", v)
	}
	if r := admin.Do("LLEN", "biglist"); r.Int != 8 {
		t.Errorf("LLEN = %s", r)
	}
}

// TestOutputLimitSoftClosesStuckClient: over the soft limit, a client
// that stops reading is left alone for the limit's seconds (its omem
// visible), then closed.
func TestOutputLimitSoftClosesStuckClient(t *testing.T) {
	const softSeconds = 1
	s := StartServer(t, "--appendonly", "no", "--save", "", "--client-output-buffer-limit", "normal 0 1mb "+strconv.Itoa(softSeconds))
	admin := s.Raw(t)
	if elapsed := stuckClientClosed(t, s, admin); elapsed < softSeconds*time.Second-100*time.Millisecond {
		t.Errorf("closed after %v; the soft limit allows %d s", elapsed, softSeconds)
	}
	waitLog(t, s, "closed for overcoming of output buffer limits.")
}

// TestTimeoutClosesStuckWriter: with `timeout`, a client that stops
// reading is closed once a write to it has made no progress for that
// long, as Redis closes it (a pending reply is not activity); before, its
// connection goroutine waited in the write for ever.
func TestTimeoutClosesStuckWriter(t *testing.T) {
	const timeout = 1
	s := StartServer(t, "--appendonly", "no", "--save", "", "--timeout", strconv.Itoa(timeout))
	admin := s.Raw(t)
	if elapsed := stuckClientClosed(t, s, admin); elapsed < timeout*time.Second-100*time.Millisecond {
		t.Errorf("closed after %v; timeout is %d s", elapsed, timeout)
	}
	if v := infoInt(t, admin, "stats", "client_output_buffer_limit_disconnections"); v != 0 {
		t.Errorf("client_output_buffer_limit_disconnections = %d, want 0 (closed by timeout)", v)
	}
}

// TestMemoryGoesBackAfterBigReplies: after clients fetched 1 GB of
// replies (4 clients x 8 LRANGEs of a 32 MB list, all read) and left, the
// server's resident memory goes back to within 64 MB of what it was
// before, within seconds: the buffers are garbage, and the server returns
// them to the OS instead of keeping them resident until the runtime gets
// round to it (it kept 2.9 GB for minutes, for a 20 MB dataset). The race
// detector's shadow memory is never returned, so this test runs the
// server built without it.
func TestMemoryGoesBackAfterBigReplies(t *testing.T) {
	const clients, perClient, values = 4, 8, 32
	s := startNoRace(t, "--appendonly", "no", "--save", "")
	pid := s.cmd.Process.Pid
	admin := s.Raw(t)
	fillBigList(t, admin, values)
	base := vmRSS(t, pid)

	start := time.Now()
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		c, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(60 * time.Second))
			if _, err := c.Write([]byte(strings.Repeat(Encode("LRANGE", "biglist", "0", "-1"), perClient))); err != nil {
				errs <- err
				return
			}
			r := bufio.NewReaderSize(c, 1<<20)
			for range perClient {
				if err := skipReply(r); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("fetching: %v", err)
	}
	after := vmRSS(t, pid)
	t.Logf("RSS %d MB with the data loaded; %d MB after 1 GB of replies (%v)", base>>20, after>>20, time.Since(start))

	bound := base + 64<<20
	deadline := time.Now().Add(10 * time.Second)
	start = time.Now()
	for {
		rss := vmRSS(t, pid)
		if rss <= bound {
			t.Logf("RSS back to %d MB after %v", rss>>20, time.Since(start))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("RSS still %d MB 10s after the clients left; want at most %d MB (%d MB before + 64 MB)", rss>>20, bound>>20, base>>20)
		}
		time.Sleep(50 * time.Millisecond) // polling the process's memory: no notification
	}
	if r := admin.Do("LLEN", "biglist"); r.Int != values {
		t.Errorf("LLEN = %s", r)
	}
}

var noRace struct {
	once sync.Once
	path string
	err  error
}

// startNoRace starts a server from a binary built without the race
// detector (the one the run uses, when REDSTREAM_TEST_NORACE set it so).
func startNoRace(t *testing.T, args ...string) *Server {
	t.Helper()
	path := binary
	if os.Getenv("REDSTREAM_TEST_NORACE") == "" {
		noRace.once.Do(func() {
			noRace.path = filepath.Join(filepath.Dir(binary), "redstream-norace")
			out, err := exec.Command("go", "build", "-o", noRace.path, "..").CombinedOutput()
			if err != nil {
				noRace.err = fmt.Errorf("go build: %v\n%s", err, out)
			}
		})
		if noRace.err != nil {
			t.Fatal(noRace.err)
		}
		path = noRace.path
	}
	// Tests that start servers in parallel run after the serial ones: no
	// one else reads binary while it is swapped.
	saved := binary
	binary = path
	defer func() { binary = saved }()
	return StartServer(t, args...)
}

// vmRSS reads a process's resident memory from /proc.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS: %q", line)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// fillBigList makes biglist n values of 1 MB.
func fillBigList(t *testing.T, rc *RawConn, n int) {
	t.Helper()
	big := strings.Repeat("x", 1<<20)
	rc.Do("DEL", "biglist")
	for range n {
		if r := rc.Do("RPUSH", "biglist", big); r.Type != ':' {
			t.Fatalf("RPUSH = %s", r)
		}
	}
}

// dialStuck connects with a small receive buffer (so the kernel takes
// little of what the server writes), names the connection and returns
// it: the test then sends requests and never reads.
func dialStuck(t *testing.T, addr, name string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &RawConn{t: t, Conn: c}
	rc.Send(Encode("CLIENT", "SETNAME", name))
	buf := make([]byte, 5)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(buf); err != nil || string(buf) != "+OK\r\n" {
		t.Fatalf("CLIENT SETNAME = %q, %v", buf, err)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c
}

// clientField returns a field of the named client's CLIENT LIST line.
func clientField(t *testing.T, rc *RawConn, name, field string) (string, bool) {
	t.Helper()
	for _, line := range strings.Split(rc.Do("CLIENT", "LIST").Str, "\n") {
		if !strings.Contains(line, " name="+name+" ") {
			continue
		}
		for _, kv := range strings.Fields(line) {
			if k, v, ok := strings.Cut(kv, "="); ok && k == field {
				return v, true
			}
		}
	}
	return "", false
}

// waitHeld polls CLIENT LIST until the named client's omem is at least
// min, and returns it.
func waitHeld(t *testing.T, rc *RawConn, name string, min int64) int64 {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v, ok := clientField(t, rc, name, "omem")
		n, _ := strconv.ParseInt(v, 10, 64)
		if ok && n >= min {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("client %s: omem=%q (listed: %v), want at least %d", name, v, ok, min)
		}
		time.Sleep(10 * time.Millisecond) // polling server state that has no notification
	}
}

// waitGone polls CLIENT LIST until the named client is no longer listed.
func waitGone(t *testing.T, rc *RawConn, name string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if _, ok := clientField(t, rc, name, "id"); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("client %s still connected after %v", name, d)
		}
		time.Sleep(10 * time.Millisecond) // polling server state that has no notification
	}
}

// expectEOF reads c until the server's close shows (EOF or a reset) and
// returns how many bytes came before it.
func expectEOF(t *testing.T, c net.Conn, d time.Duration) int {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 64<<10)
	total := 0
	for {
		n, err := c.Read(buf)
		total += n
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("connection still open after %v (%d bytes read)", d, total)
			}
			return total
		}
	}
}

// waitLog waits for the server to log a line containing text.
func waitLog(t *testing.T, s *Server, text string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.Output(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("the server did not log %q:\n%s", text, s.Output())
		}
		time.Sleep(10 * time.Millisecond) // polling the log: no notification
	}
}

// infoInt returns an integer field of an INFO section.
func infoInt(t *testing.T, rc *RawConn, section, name string) int64 {
	t.Helper()
	v := infoField(t, rc, section, name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("INFO %s:%s is not an integer", name, v)
	}
	return n
}

// waitInfoAtLeast polls an INFO field until it is at least min (the
// server samples client buffers once a second).
func waitInfoAtLeast(t *testing.T, rc *RawConn, section, name string, min int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v := infoInt(t, rc, section, name)
		if v >= min {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("INFO %s = %d, want at least %d", name, v, min)
		}
		time.Sleep(20 * time.Millisecond) // polling server state that has no notification
	}
}

// stuckClientClosed has a client that stops reading ask for three big
// LRANGEs, waits until it holds over 1 MB of output (omem), then until
// the server closes it, and returns how long that took from its request.
func stuckClientClosed(t *testing.T, s *Server, admin *RawConn) time.Duration {
	t.Helper()
	fillBigList(t, admin, 8)
	stuck := dialStuck(t, s.Addr, "stuck")
	start := time.Now()
	stuck.Write([]byte(strings.Repeat(Encode("LRANGE", "biglist", "0", "-1"), 3)))
	held := waitHeld(t, admin, "stuck", 1<<20)
	t.Logf("holds omem=%d after %v", held, time.Since(start))
	waitGone(t, admin, "stuck", 15*time.Second)
	elapsed := time.Since(start)
	t.Logf("closed %v after its request", elapsed)
	expectEOF(t, stuck, 10*time.Second)
	return elapsed
}
