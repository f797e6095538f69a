package replication

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// A node has one port for Raft traffic (cluster-port), however many
// groups it hosts: the Mux listens on it and hands each connection to the
// group it is for. Every connection, from any node to any node, starts
// with a preamble naming its group, then carries hashicorp/raft's
// NetworkTransport protocol for that group alone:
//
//	+------+------+-----------------+--------------------------------+
//	| 'R'  | 'G'  | group (uint16BE)| raft NetworkTransport RPCs ... |
//	+------+------+-----------------+--------------------------------+
//	  magic         which group
//
// So each group keeps its own connections (its pipeline never waits
// behind another group's snapshot transfer) and its own NetworkTransport,
// unchanged, over a StreamLayer per group (GroupStream). The magic makes a
// peer that does not speak the preamble fail at once with a log line,
// instead of being read as RPCs.
type Mux struct {
	ln        net.Listener
	advertise net.Addr
	logger    *slog.Logger

	mu     sync.Mutex
	groups map[uint16]*GroupStream
	closed bool
	done   chan struct{} // closed when the accept loop has returned
}

// muxMagic opens every connection's preamble.
var muxMagic = [2]byte{'R', 'G'}

// preambleTimeout bounds how long an accepted connection may take to say
// which group it is for.
const preambleTimeout = 5 * time.Second

// ListenMux listens for Raft traffic on bind; advertise is the address the
// other nodes reach this one at (cluster-announce-ip and cluster-port),
// which must be a host they can dial.
func ListenMux(bind string, advertise *net.TCPAddr, logger *slog.Logger) (*Mux, error) {
	if advertise.IP == nil || advertise.IP.IsUnspecified() {
		return nil, fmt.Errorf("replication: cluster bus address %s is not one other nodes can reach", advertise)
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	m := &Mux{ln: ln, advertise: advertise, logger: logger,
		groups: map[uint16]*GroupStream{}, done: make(chan struct{})}
	go m.acceptLoop()
	return m, nil
}

// Group returns the stream layer of one group, to build its
// NetworkTransport on; connections for the group queue for it from now
// on. A group is registered once until its stream is closed.
func (m *Mux) Group(id uint16) (*GroupStream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, net.ErrClosed
	}
	if m.groups[id] != nil {
		return nil, fmt.Errorf("replication: group %d already listens on %s", id, m.ln.Addr())
	}
	g := &GroupStream{mux: m, id: id, conns: make(chan net.Conn, 16), closed: make(chan struct{})}
	m.groups[id] = g
	return g, nil
}

// Close stops listening and closes every group's stream.
func (m *Mux) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		<-m.done
		return nil
	}
	m.closed = true
	groups := m.groups
	m.groups = map[uint16]*GroupStream{}
	m.mu.Unlock()
	err := m.ln.Close()
	<-m.done
	for _, g := range groups {
		g.shut()
	}
	return err
}

func (m *Mux) acceptLoop() {
	defer close(m.done)
	for {
		conn, err := m.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			m.logger.Warn("accepting a Raft connection", "err", err)
			time.Sleep(10 * time.Millisecond) // e.g. out of file descriptors: do not spin
			continue
		}
		go m.route(conn)
	}
}

// route reads a connection's preamble and queues it for its group.
func (m *Mux) route(conn net.Conn) {
	id, err := readPreamble(conn)
	if err != nil {
		m.logger.Warn("refused a Raft connection", "from", conn.RemoteAddr().String(), "err", err)
		conn.Close()
		return
	}
	m.mu.Lock()
	g := m.groups[id]
	m.mu.Unlock()
	if g == nil {
		m.logger.Warn("refused a Raft connection for a group this node does not host",
			"from", conn.RemoteAddr().String(), "group", id)
		conn.Close()
		return
	}
	if !g.queue(conn) {
		m.logger.Warn("refused a Raft connection: its group is closing or has too many waiting",
			"from", conn.RemoteAddr().String(), "group", id)
		conn.Close()
	}
}

func readPreamble(conn net.Conn) (uint16, error) {
	var p [4]byte
	conn.SetReadDeadline(time.Now().Add(preambleTimeout))
	if _, err := io.ReadFull(conn, p[:]); err != nil {
		return 0, fmt.Errorf("reading the group preamble: %w", err)
	}
	conn.SetReadDeadline(time.Time{})
	if [2]byte(p[:2]) != muxMagic {
		return 0, fmt.Errorf("no group preamble (first bytes %q): a peer of another version?", p[:])
	}
	return binary.BigEndian.Uint16(p[2:]), nil
}

// GroupStream is one group's view of the Mux: a raft.StreamLayer whose
// Dial opens a connection to the same group on another node and whose
// Accept yields the connections other nodes opened to this group.
type GroupStream struct {
	mux      *Mux
	id       uint16
	conns    chan net.Conn
	closed   chan struct{}
	mu       sync.Mutex // orders queue against shut
	isClosed bool
}

var _ raft.StreamLayer = (*GroupStream)(nil)

// Dial opens a connection to the group on the node at address.
func (g *GroupStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	p := [4]byte{muxMagic[0], muxMagic[1]}
	binary.BigEndian.PutUint16(p[2:], g.id)
	conn.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := conn.Write(p[:]); err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetWriteDeadline(time.Time{})
	return conn, nil
}

// Accept waits for the next connection to this group.
func (g *GroupStream) Accept() (net.Conn, error) {
	select {
	case conn := <-g.conns:
		return conn, nil
	case <-g.closed:
		return nil, net.ErrClosed
	}
}

// Close stops the group's accepting; the Mux goes on serving other
// groups, and the group may register again.
func (g *GroupStream) Close() error {
	m := g.mux
	m.mu.Lock()
	if m.groups[g.id] == g {
		delete(m.groups, g.id)
	}
	m.mu.Unlock()
	g.shut()
	return nil
}

// queue hands an accepted connection to Accept; false if the group is
// closed or its queue is full (its transport accepts no more: the peer
// redials).
func (g *GroupStream) queue(conn net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.isClosed {
		return false
	}
	select {
	case g.conns <- conn:
		return true
	default:
		return false
	}
}

// shut ends Accept and closes the connections still queued.
func (g *GroupStream) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.isClosed {
		return
	}
	g.isClosed = true
	close(g.closed)
	for {
		select {
		case conn := <-g.conns:
			conn.Close()
		default:
			return
		}
	}
}

// Addr is the address other nodes dial to reach this group.
func (g *GroupStream) Addr() net.Addr { return g.mux.advertise }
