// Package tests holds black-box tests: they build the real redstream
// binary, start it on a free port with a temporary data directory, and
// talk to it the way users do — go-redis (RESP3 by default), rueidis,
// raw sockets and redis-cli.
package tests

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// binary is the redstream executable built once for the whole run.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "redstream-test-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "redstream")
	build := exec.Command("go", "build", "-race", "-o", binary, "..")
	if os.Getenv("REDSTREAM_TEST_NORACE") != "" {
		build = exec.Command("go", "build", "-o", binary, "..")
	}
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building redstream:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Server is a redstream process started for one test.
type Server struct {
	Addr string // host:port of the TCP listener
	Dir  string // its data directory
	Port int

	t       testing.TB
	cmd     *exec.Cmd
	mu      sync.Mutex
	output  bytes.Buffer // everything it logged
	exited  chan struct{}
	stopped bool
}

var readyLine = regexp.MustCompile(`ready to accept connections"? addr=tcp://([^,\s"]+)`)

// StartServer starts redstream on a free loopback port with a fresh data
// directory and extra arguments (e.g. "--requirepass", "pw"). The server
// is stopped when the test ends; a server that crashed fails the test.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	dir := t.TempDir()
	full := append([]string{"server", "--port", "random", "--dir", dir}, args...)
	return startProcess(t, dir, full)
}

// StartServerIn starts redstream on a free port with dir as its data
// directory, so a test can restart a server on the data a previous one
// left.
func StartServerIn(t testing.TB, dir string, args ...string) *Server {
	t.Helper()
	full := append([]string{"server", "--port", "random", "--dir", dir}, args...)
	return startProcess(t, dir, full)
}

// StartServerWithConfig writes conf to a file and starts redstream with it.
func StartServerWithConfig(t testing.TB, conf string, args ...string) *Server {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "redstream.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	full := append([]string{"server", path, "--port", "random", "--dir", dir}, args...)
	return startProcess(t, dir, full)
}

func startProcess(t testing.TB, dir string, args []string) *Server {
	t.Helper()
	return startProcessAs(t, dir, args, nil)
}

// startProcessAs is startProcess with the process's attributes (nil:
// the test's own), e.g. a user of its own for iptables to tell it apart.
func startProcessAs(t testing.TB, dir string, args []string, attr *syscall.SysProcAttr) *Server {
	t.Helper()
	s := &Server{Dir: dir, t: t, exited: make(chan struct{})}
	s.cmd = exec.Command(binary, args...)
	s.cmd.SysProcAttr = attr
	// The race runtime sleeps a second at exit by default; every test
	// stops a server, so that second adds up.
	s.cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stdout, s.cmd.Stderr = pw, pw
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	addr := make(chan string, 1)
	go s.collect(pr, addr)
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	select {
	case a := <-addr:
		s.Addr = a
		_, port, _ := net.SplitHostPort(a)
		s.Port, _ = strconv.Atoi(port)
	case <-s.exited:
		t.Fatalf("redstream exited before it was ready:\n%s", s.Output())
	case <-time.After(30 * time.Second):
		s.kill()
		t.Fatalf("redstream did not become ready in 30s:\n%s", s.Output())
	}
	t.Cleanup(s.Stop)
	return s
}

// collect copies the server's log into s.output and reports its address.
func (s *Server) collect(r *os.File, addr chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.output.WriteString(line + "\n")
		s.mu.Unlock()
		if m := readyLine.FindStringSubmatch(line); m != nil && !sent {
			addr <- m[1]
			sent = true
		}
	}
}

// Output returns what the server has logged so far.
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.output.String()
}

// Stop sends SIGTERM and waits for a clean exit; it fails the test if the
// server crashed or did not stop. Safe to call twice.
func (s *Server) Stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	s.mu.Unlock()
	select {
	case <-s.exited:
		if code := s.cmd.ProcessState.ExitCode(); code != 0 {
			s.t.Errorf("redstream exited with status %d:\n%s", code, s.Output())
		}
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		if code := s.cmd.ProcessState.ExitCode(); code != 0 {
			s.t.Errorf("redstream exited with status %d after SIGTERM:\n%s", code, s.Output())
		}
		if strings.Contains(s.Output(), "DATA RACE") || strings.Contains(s.Output(), "panic:") {
			s.t.Errorf("redstream reported a problem:\n%s", s.Output())
		}
	case <-time.After(60 * time.Second): // a bound, not a timing: a shutdown save under -race on a loaded machine is slow
		s.kill()
		s.t.Errorf("redstream did not stop within 60s of SIGTERM:\n%s", s.Output())
	}
}

// Kill stops the server with SIGKILL, as a crash or power cut would,
// and waits for it to be gone.
func (s *Server) Kill() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.kill()
}

// Exited is closed when the process has ended.
func (s *Server) Exited() <-chan struct{} { return s.exited }

func (s *Server) kill() { _ = s.cmd.Process.Kill(); <-s.exited }

// Client returns a go-redis client with its default RESP3 handshake.
func (s *Server) Client(t testing.TB, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: s.Addr, MaxRetries: -1}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// Client2 returns a go-redis client that speaks RESP2.
func (s *Server) Client2(t testing.TB) *redis.Client {
	return s.Client(t, func(o *redis.Options) { o.Protocol = 2 })
}

// Rueidis returns a rueidis client (client-side caching off: redstream
// does not offer CLIENT TRACKING).
func (s *Server) Rueidis(t testing.TB) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("rueidis: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// CLI runs redis-cli against the server and returns its output; the test
// is skipped when redis-cli is not installed.
func (s *Server) CLI(t testing.TB, args ...string) string {
	t.Helper()
	return runCLI(t, s.Port, "", args...)
}

func runCLI(t testing.TB, port int, stdin string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed (apt-get install redis-tools); skipping")
	}
	full := append([]string{"-p", strconv.Itoa(port)}, args...)
	cmd := exec.Command(path, full...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// ctx is a context with a generous timeout for one test step.
func ctx(t testing.TB) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
