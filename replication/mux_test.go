package replication

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redstream/redstream/internal/testport"
)

// logLines is a slog handler's output that tests can read while the
// code under test writes.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startMuxes listens for Raft traffic on n loopback ports.
func startMuxes(t *testing.T, n int, log io.Writer) []*Mux {
	t.Helper()
	var muxes []*Mux
	for range n {
		port, err := testport.Free()
		if err != nil {
			t.Fatal(err)
		}
		addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
		m, err := ListenMux(addr.String(), addr, slog.New(slog.NewTextHandler(log, nil)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		muxes = append(muxes, m)
	}
	return muxes
}

// groupTransports makes one NetworkTransport per node for group id.
func groupTransports(t *testing.T, muxes []*Mux, id uint16) []raft.Transport {
	t.Helper()
	var trans []raft.Transport
	for _, m := range muxes {
		stream, err := m.Group(id)
		if err != nil {
			t.Fatal(err)
		}
		nt := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: stream, MaxPool: 2, Timeout: 5 * time.Second})
		t.Cleanup(func() { nt.Close() })
		trans = append(trans, nt)
	}
	return trans
}

func applyAll(t *testing.T, leader *memNode, data ...string) {
	t.Helper()
	for _, d := range data {
		if err := leader.raft.Apply([]byte(d), 5*time.Second).Error(); err != nil {
			t.Fatalf("applying %q: %v", d, err)
		}
	}
}

// waitApplied waits until every node of a group has applied exactly want.
func waitApplied(t *testing.T, nodes []*memNode, want []string) {
	t.Helper()
	for i, n := range nodes {
		waitFor(t, fmt.Sprintf("node %d to apply %v", i, want), func() bool {
			return slices.Equal(n.fsm.applied(), want)
		})
	}
}

// Two groups on the same three ports: each elects, commits and applies
// only its own entries, and one group's stream closing leaves the other
// replicating.
func TestMuxCarriesSeveralGroupsOnOnePort(t *testing.T) {
	muxes := startMuxes(t, 3, io.Discard)
	one := startRaftGroup(t, groupTransports(t, muxes, 1))
	two := startRaftGroup(t, groupTransports(t, muxes, 2))

	applyAll(t, memLeader(t, one), "one-a", "one-b")
	applyAll(t, memLeader(t, two), "two-a")
	waitApplied(t, one, []string{"one-a", "one-b"})
	waitApplied(t, two, []string{"two-a"})

	for _, n := range two {
		if err := n.raft.Shutdown().Error(); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range muxes {
		m.mu.Lock()
		g := m.groups[2]
		m.mu.Unlock()
		if g != nil {
			g.Close()
		}
	}
	applyAll(t, memLeader(t, one), "one-c")
	waitApplied(t, one, []string{"one-a", "one-b", "one-c"})
}

// A connection for a group the node does not host, or without the
// preamble, is closed at once with a log line saying why.
func TestMuxRefusesUnknownGroupsAndStrangers(t *testing.T) {
	var log logLines
	muxes := startMuxes(t, 1, &log)
	if _, err := muxes[0].Group(1); err != nil {
		t.Fatal(err)
	}
	if _, err := muxes[0].Group(1); err == nil {
		t.Fatal("a second registration of group 1 was accepted")
	}
	for _, c := range []struct {
		name, preamble, logged string
	}{
		{"unknown group", "RG\x00\x09", "does not host"},
		{"no preamble", "\x00\x01\x02\x03", "no group preamble"},
	} {
		conn, err := net.Dial("tcp", muxes[0].advertise.String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write([]byte(c.preamble)); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := conn.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("%s: read %d bytes, %v; want the connection closed (EOF)", c.name, n, err)
		}
		conn.Close()
		waitFor(t, c.name+" logged", func() bool { return bytes.Contains([]byte(log.String()), []byte(c.logged)) })
	}
}

// A group's Accept ends when the group or the whole Mux closes, and the
// port is free again after Close.
func TestMuxCloseEndsAccept(t *testing.T) {
	muxes := startMuxes(t, 1, io.Discard)
	m := muxes[0]
	g, err := m.Group(7)
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan error, 1)
	go func() {
		_, err := g.Accept()
		accepted <- err
	}()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-accepted:
		if err == nil {
			t.Fatal("Accept returned a connection after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waits after the Mux closed")
	}
	if _, err := m.Group(8); err == nil {
		t.Fatal("a closed Mux registered a group")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(m.advertise.(*net.TCPAddr).Port)))
	if err != nil {
		t.Fatalf("the port is still taken after Close: %v", err)
	}
	ln.Close()
}
