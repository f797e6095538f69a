package server

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// addrConn is a net.Conn with chosen addresses: reads see only EOF and
// writes are kept, which is all admission looks at.
type addrConn struct {
	remote, local net.Addr
	mu            sync.Mutex
	out           bytes.Buffer
	closed        bool
}

func (c *addrConn) Read([]byte) (int, error) { return 0, io.EOF }
func (c *addrConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(p)
}
func (c *addrConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}
func (c *addrConn) LocalAddr() net.Addr              { return c.local }
func (c *addrConn) RemoteAddr() net.Addr             { return c.remote }
func (c *addrConn) SetDeadline(time.Time) error      { return nil }
func (c *addrConn) SetReadDeadline(time.Time) error  { return nil }
func (c *addrConn) SetWriteDeadline(time.Time) error { return nil }

// strAddr is an address of a kind the server does not know, printed as
// host:port.
type strAddr string

func (a strAddr) Network() string { return "custom" }
func (a strAddr) String() string  { return string(a) }

func tcpAddr(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 50000} }

func protectedServer(mod func(*Config)) *Server {
	cfg := DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	return &Server{cfg: cfg}
}

func TestProtectedModeRefuses(t *testing.T) {
	_, pipeEnd := net.Pipe()
	defer pipeEnd.Close()
	peers := []struct {
		name  string
		addr  net.Addr
		local bool
	}{
		{"loopback v4", tcpAddr("127.0.0.1"), true},
		{"loopback v4 other", tcpAddr("127.8.9.10"), true},
		{"loopback v6", tcpAddr("::1"), true},
		{"loopback v4 in v6", tcpAddr("::ffff:127.0.0.1"), true},
		{"private v4", tcpAddr("10.1.2.3"), false},
		{"lan v4", tcpAddr("192.168.1.20"), false},
		{"public v6", tcpAddr("2001:db8::1"), false},
		{"unspecified", tcpAddr("0.0.0.0"), false},
		{"unix", &net.UnixAddr{Name: "/tmp/redstream.sock", Net: "unix"}, true},
		{"unix unnamed", &net.UnixAddr{Name: "", Net: "unix"}, true},
		{"other kind loopback", strAddr("127.0.0.1:6000"), true},
		{"other kind v6 loopback", strAddr("[::1]:6000"), true},
		{"other kind remote", strAddr("10.0.0.1:6000"), false},
		{"other kind hostname", strAddr("localhost:6000"), false},
		{"other kind garbage", strAddr("garbage"), false},
		{"net.Pipe", pipeEnd.RemoteAddr(), false},
	}
	configs := []struct {
		name    string
		mod     func(*Config)
		protect bool // whether non-local peers are refused
	}{
		{"default", nil, true},
		{"protected-mode no", func(c *Config) { c.ProtectedMode = false }, false},
		{"requirepass", func(c *Config) { c.RequirePass = "pw" }, false},
		{"protected-mode no and requirepass", func(c *Config) { c.ProtectedMode = false; c.RequirePass = "pw" }, false},
		// An explicit bind is TestProtectedModeIgnoresBind's subject.
	}
	for _, cf := range configs {
		s := protectedServer(cf.mod)
		for _, p := range peers {
			want := cf.protect && !p.local
			got := s.protectedModeRefuses(&addrConn{remote: p.addr, local: tcpAddr("127.0.0.1")})
			if got != want {
				t.Errorf("%s, peer %s (%v): refuses = %v, want %v", cf.name, p.name, p.addr, got, want)
			}
		}
	}
}

// TestProtectedModeIgnoresBind pins Redis 7+'s rule: protected mode
// depends only on protected-mode and on the default user having no
// password, not on bind (Redis 6 also required bind to be unset).
// redis-server 7.0 started with --bind 0.0.0.0 --protected-mode yes
// answers a client from 192.0.2.2 with -DENIED.
func TestProtectedModeIgnoresBind(t *testing.T) {
	for _, bind := range [][]string{{"0.0.0.0"}, {"*", "-::*"}, {"10.0.0.5"}} {
		s := protectedServer(func(c *Config) {
			if err := c.Set("bind", bind); err != nil {
				panic(err)
			}
		})
		if !s.protectedModeRefuses(&addrConn{remote: tcpAddr("10.1.2.3"), local: tcpAddr("10.0.0.5")}) {
			t.Errorf("bind %q, protected-mode yes, no password: a client from 10.1.2.3 is accepted; Redis refuses it with DENIED", bind)
		}
	}
}

// TestProtectedModeNilAddr checks that a connection whose remote address
// is unknown is refused rather than crashing the server (Redis: an
// address it cannot read is not local).
func TestProtectedModeNilAddr(t *testing.T) {
	s := protectedServer(nil)
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("protectedModeRefuses with a nil RemoteAddr panicked: %v; want it refused", r)
		}
	}()
	if !s.protectedModeRefuses(&addrConn{remote: nil, local: tcpAddr("127.0.0.1")}) {
		t.Errorf("protectedModeRefuses with a nil RemoteAddr = false, want true")
	}
}

// TestProtectedModeAdmission runs admission for real through handleConn:
// a refused peer gets Redis's DENIED text and is never registered; an
// accepted one is served and forgotten when it leaves.
func TestProtectedModeAdmission(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	s, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	far := &addrConn{remote: tcpAddr("10.9.8.7"), local: tcpAddr("10.0.0.1")}
	s.handleConn(far)
	want := "-" + errProtectedMode + "\r\n"
	if got := far.out.String(); got != want {
		t.Errorf("non-local client got %q…, want the DENIED text", clipStr(got, 60))
	}
	if !strings.HasPrefix(errProtectedMode, "DENIED Redis is running in protected mode") {
		t.Errorf("errProtectedMode = %q…", clipStr(errProtectedMode, 60))
	}
	if !far.closed {
		t.Errorf("refused connection was not closed")
	}
	near := &addrConn{remote: tcpAddr("127.0.0.1"), local: tcpAddr("127.0.0.1")}
	s.handleConn(near)
	if got := near.out.String(); got != "" {
		t.Errorf("local client got %q before sending anything, want nothing", got)
	}
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	if n := len(s.clients); n != 0 {
		t.Errorf("%d clients registered after both connections ended", n)
	}
	if s.stats.rejectedConns != 1 {
		t.Errorf("rejected connections = %d, want 1", s.stats.rejectedConns)
	}
}

func clipStr(s string, n int) string {
	if len(s) > n {
		return s[:n] + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return s
}
