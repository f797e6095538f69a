package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// tcpServer serves s on a loopback port for the test; handoffs need a
// real socket (a net.Pipe has no raw descriptor).
func tcpServer(t *testing.T, s *Server) string {
	t.Helper()
	s.cfg.Port, s.cfg.Bind = PortRandom, []string{"127.0.0.1"}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Close(t.Context()) })
	return s.Addrs()[0].String()
}

func dialT(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// consumerAndProducer serves a test server on loopback and connects a
// consumer and a producer to it.
func consumerAndProducer(t *testing.T) (s *Server, cons net.Conn, cr *bufio.Reader, prod net.Conn, pr *bufio.Reader) {
	s = newTestServer(t, nil)
	addr := tcpServer(t, s)
	cons, cr = dialT(t, addr)
	prod, pr = dialT(t, addr)
	return s, cons, cr, prod, pr
}

// clientNamed returns the client called name. Lock should be held.
func clientNamed(s *Server, name string) *Client {
	for _, c := range s.clients {
		if c.name == name {
			return c
		}
	}
	return nil
}

// waitParked waits until the client called name is parked in its blocked
// read. Being counted as blocked is not enough: a push that comes before
// the client parks is rightly not handed off (the owner writes its reply).
func waitParked(t *testing.T, s *Server, name string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.mu.Lock()
		c := clientNamed(s, name)
		parked := c != nil && c.parked
		s.mu.Unlock()
		if parked {
			return
		}
	}
	t.Fatalf("client %s never parked", name)
}

// TestHandedOffClientStaysParked is issue 17: a blocked consumer whose
// reply the pusher wrote is not woken (a timer, a netpoll round trip and
// a goroutine switch per message); it stays parked until its next
// command, which it then runs as usual.
func TestHandedOffClientStaysParked(t *testing.T) {
	s, cons, cr, prod, pr := consumerAndProducer(t)
	fmt.Fprint(cons, "CLIENT SETNAME consumer\r\nBRPOP q 0\r\n")
	cr.ReadString('\n')
	waitParked(t, s, "consumer")
	fmt.Fprint(prod, "RPUSH q job\r\n")
	pr.ReadString('\n')
	reply := make([]byte, len("*2\r\n$1\r\nq\r\n$3\r\njob\r\n"))
	if _, err := io.ReadFull(cr, reply); err != nil || !bytes.Contains(reply, []byte("job")) {
		t.Fatalf("consumer got %q, %v", reply, err)
	}
	s.mu.Lock()
	c := clientNamed(s, "consumer")
	parked, handed := c.parked, s.stats.blockedClients == 0
	s.mu.Unlock()
	if !parked || !handed {
		t.Fatalf("after the handoff the consumer is parked=%v (want true: not woken), unblocked=%v", parked, handed)
	}
	fmt.Fprint(cons, "PING\r\n")
	if line, _ := cr.ReadString('\n'); line != "+PONG\r\n" {
		t.Fatalf("the served consumer's next command got %q", line)
	}
}

// TestHandoffRestWritten: a handed-off reply too big for the socket is
// written in part by the pusher; the owner, not woken by the serve, must
// be woken to write the rest, or its client waits forever for it.
func TestHandoffRestWritten(t *testing.T) {
	s, cons, cr, prod, pr := consumerAndProducer(t)
	fmt.Fprint(cons, "BRPOP q 0\r\n")
	waitBlocked(t, s, 1)
	big := strings.Repeat("x", 16<<20) // far past any socket buffer
	fmt.Fprintf(prod, "*3\r\n$5\r\nRPUSH\r\n$1\r\nq\r\n$%d\r\n%s\r\n", len(big), big)
	if line, _ := pr.ReadString('\n'); line != ":1\r\n" {
		t.Fatalf("RPUSH = %q", line)
	}
	cons.SetReadDeadline(time.Now().Add(20 * time.Second))
	want := fmt.Sprintf("*2\r\n$1\r\nq\r\n$%d\r\n", len(big))
	head := make([]byte, len(want))
	if _, err := io.ReadFull(cr, head); err != nil || string(head) != want {
		t.Fatalf("reply head %q, %v", head, err)
	}
	if n, err := io.CopyN(io.Discard, cr, int64(len(big)+2)); err != nil {
		t.Fatalf("the consumer got %d of %d bytes of its reply: %v", n, len(big)+2, err)
	}
}

// TestServedClientRunsWhatItSentWhileBlocked: a command that arrives
// while its client is blocked waits in the buffer; serving the client
// must then wake it to run that command, though its reply was handed off.
func TestServedClientRunsWhatItSentWhileBlocked(t *testing.T) {
	s, cons, cr, prod, pr := consumerAndProducer(t)
	fmt.Fprint(cons, "CLIENT SETNAME consumer\r\nBLPOP q 0\r\n")
	cr.ReadString('\n')
	waitBlocked(t, s, 1)
	fmt.Fprint(cons, "PING\r\n")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		buffered := clientNamed(s, "consumer").qbuf.Load() > 0
		s.mu.Unlock()
		if buffered {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the PING never reached the blocked client's buffer")
		}
	}
	fmt.Fprint(prod, "RPUSH q job\r\n")
	pr.ReadString('\n')
	cons.SetReadDeadline(time.Now().Add(5 * time.Second))
	reply := make([]byte, len("*2\r\n$1\r\nq\r\n$3\r\njob\r\n+PONG\r\n"))
	if _, err := io.ReadFull(cr, reply); err != nil || !strings.HasSuffix(string(reply), "+PONG\r\n") {
		t.Fatalf("the served client got %q, %v; want the BLPOP reply, then PONG", reply, err)
	}
}
