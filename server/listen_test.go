package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// port 0 turns TCP off, as in Redis: the server listens on its unix
// socket only, and with no socket either it refuses to start.
func TestPortZeroTurnsTCPOff(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Port = 0
	cfg.UnixSocket = filepath.Join(t.TempDir(), "redstream.sock")
	addrs := listening(t, cfg).Addrs()
	if len(addrs) != 1 || addrs[0].Network() != "unix" {
		t.Fatalf("port 0 with a unix socket listens on %v, want the socket only", addrs)
	}

	cfg.UnixSocket = ""
	s2, _ := New(cfg, Options{})
	err := s2.Listen()
	if err == nil {
		s2.Close(t.Context())
		t.Fatalf("port 0 without a unix socket listened on %v, want a refusal", s2.Addrs())
	}
	if !strings.Contains(err.Error(), "not listen anywhere") {
		t.Fatalf("refusal %q does not say why", err)
	}
}

// "port random" is how tests ask for a free port: every bind address
// shares the one picked, and CONFIG GET port reports it.
func TestPortRandomPicksOneFreePort(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Set("port", []string{"random"}); err != nil {
		t.Fatal(err)
	}
	cfg.Bind = []string{"127.0.0.1", "-::1"}
	s := listening(t, cfg)
	got, _ := s.cfg.Get("port")
	for _, a := range s.Addrs() {
		if !strings.HasSuffix(a.String(), ":"+got) || got == "0" {
			t.Fatalf("listening on %v, CONFIG GET port says %s", s.Addrs(), got)
		}
	}
}

// listening returns a server for cfg that has bound its listeners; the
// test's cleanup closes it.
func listening(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) }) // t.Context is done by then
	return s
}
