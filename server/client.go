package server

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redstream/redstream/resp"
	"golang.org/x/sys/unix"
)

// Client is one connection and the state Redis keeps per client. Every
// field is guarded by the keyspace lock and used by the event loop
// (loop_linux.go), except qbuf, which CLIENT LIST reads as an atomic.
//
// A client's life, all of it in the loop's passes:
//
//	adoptFD ─▶ reading: the loop waits for EPOLLIN; each ready read
//	   │        fills rd, and complete commands make it runnable
//	   ▼
//	turn: its commands run, bounded (maxBatch); replies go to out,
//	   │  and it is dirty: out is written at the end of the pass, once
//	   │  durable (its ticket, in durable)
//	   ├─▶ held: the socket took less than out; the loop waits for
//	   │        EPOLLOUT and runs none of its commands until out drains
//	   ├─▶ blocked: its command waits on keys (blocked, the timer heap);
//	   │        its input is still read, and a disconnect closes it
//	   │        taking nothing; a push, a timeout or CLIENT UNBLOCK
//	   │        writes its reply and makes it runnable again
//	   └─▶ quit (QUIT, a protocol error, the peer's end of input once
//	            all it sent has run): closed once out is written
//	closeClient: unblocked, unwatched, forgotten, its descriptor closed
type Client struct {
	s       *Server
	id      int64
	fd      int // the connection's descriptor; -1 once closed
	rd      *resp.Reader
	raddr   string
	laddr   string
	unix    bool
	created time.Time
	qbuf    atomic.Int64 // unparsed input bytes, for CLIENT LIST

	out     resp.Writer // replies not yet written to the connection
	sent    int         // bytes at the front of out the socket has taken
	events  uint32      // what the loop waits for on fd (epoll interest)
	held    bool        // the socket took less than out: its commands wait for EPOLLOUT
	durable uint64      // the log ticket out's replies wait for; 0: none
	woff    uint64      // the log ticket of c's last write (WAITAOF); 0: none
	logged  bool        // c's command queued a write since the last commit
	// ranCommand: a command ran since its last commit, so its replies
	// may show data and wait for every write applied before (commit).
	ranCommand bool
	dirty      bool // on the loop's list of clients with output to write
	runnable   bool // on the loop's list of clients with input to run
	gone       chan struct{}

	softLimitSince  int64            // unix time its output was first seen past the soft limit; 0: not
	closeASAP       bool             // its output passed its limit: close without writing (outputlimit.go)
	shutdown        *shutdownRequest // a SHUTDOWN to carry out once the loop lets the lock go
	ctx             Ctx
	db              int
	name            string
	libName, libVer string
	authed          bool
	multi           *txState
	watching        []watchedKey
	casDirty        bool // a watched key changed: EXEC must fail
	blocked         *blockState
	replyMode       replyMode
	lastCmd         *Command
	lastInteraction time.Time // its last command, read, or write that made progress
	noEvict         bool
	noTouch         bool
	quit            bool // QUIT, RESET of a killed client, a fatal error: close after writing
	eof             bool // the peer closed its side: close once its input has run
	// Cluster mode (cluster.go, propose.go).
	awaiting int // proposals, reads and background operations whose replies it waits for
	// awaitingOther counts those of awaiting that are not proposals: a
	// write may queue behind proposals only.
	awaitingOther int
	// proposingTo is the group c's awaited proposals went to: a write to
	// another group waits for their replies (proposable).
	proposingTo *clusterGroup
	// wroteTo is every group c has sent a write to, each once: WAIT
	// counts the replicas that hold c's writes in all of them.
	wroteTo  []*clusterGroup
	stashed  [][]byte // the command read behind them, run once they are answered
	readonly bool     // READONLY: a follower serves its reads (stale) instead of redirecting
	asking   bool     // ASKING: the next command of a moving slot goes to the slot's target group (moves.go)
}

type replyMode uint8

const (
	replyOn replyMode = iota
	replyOff
	replySkipNext // CLIENT REPLY SKIP: drop the next command's reply
	replySkipThis // the command being run is the skipped one
)

// reply returns the writer replies go to. Lock should be held.
func (c *Client) reply() *resp.Writer { return &c.out }

// adopt takes conn over for the event loop: the loop serves its
// descriptor fd (conn's own, duplicated, unless the caller passes
// another), and conn itself is closed. It returns nil when the client is
// refused (maxclients, protected mode), after writing Redis's refusal.
func (s *Server) adopt(conn net.Conn) *Client {
	fd, err := dupFD(conn)
	if err != nil {
		s.logger.Warn("cannot take over a connection", "addr", conn.RemoteAddr(), "err", err)
		conn.Close()
		return nil
	}
	return s.adoptFD(conn, fd)
}

// adoptFD registers fd, a non-blocking socket, as a client with conn's
// addresses, and hands it to the loop. conn is closed either way.
func (s *Server) adoptFD(conn net.Conn, fd int) *Client {
	_, unix := conn.(*net.UnixConn)
	c := &Client{s: s, fd: fd, unix: unix, created: time.Now(), gone: make(chan struct{})}
	c.rd = resp.NewReader(fdReader{c})
	c.out.Proto = 2
	c.raddr, c.laddr = addrString(conn.RemoteAddr(), unix), addrString(conn.LocalAddr(), unix)
	if tc, ok := conn.(*net.TCPConn); ok {
		s.shard.mu.Lock()
		ka := s.cfg.TCPKeepalive
		s.shard.mu.Unlock()
		if ka > 0 {
			_ = tc.SetKeepAlivePeriod(time.Duration(ka) * time.Second)
			_ = tc.SetKeepAlive(true)
		}
	}
	if refusal := s.register(c, conn); refusal != "" {
		closeFD(fd)
		// Written after the lock is released: a slow peer must not stall others.
		_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = conn.Write([]byte("-" + refusal + "\r\n"))
		conn.Close()
		return nil
	}
	conn.Close() // the loop serves the duplicate
	return c
}

// dupFD returns a non-blocking, close-on-exec duplicate of conn's
// descriptor, which outlives conn.Close.
func dupFD(conn net.Conn) (int, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return -1, errors.New("not a socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(orig uintptr) {
		fd, derr = unix.FcntlInt(orig, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		closeFD(fd)
		return -1, err
	}
	return fd, nil
}

func closeFD(fd int) { _ = unix.Close(fd) }

// register adds c to the client table and the loop, or returns why it is
// refused.
func (s *Server) register(c *Client, conn net.Conn) (refusal string) {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	if len(s.clients) >= s.cfg.MaxClients {
		s.stats.rejectedConns++
		return resp.ErrMaxClients
	}
	if s.protectedModeRefuses(conn) {
		s.stats.rejectedConns++
		return errProtectedMode
	}
	if s.closing.Load() {
		return "ERR server is shutting down"
	}
	if err := s.loop.add(c); err != nil {
		s.logger.Warn("cannot serve a connection", "addr", c.raddr, "err", err)
		return "ERR " + err.Error()
	}
	c.id = s.nextID.Add(1)
	c.authed = s.cfg.RequirePass == ""
	c.lastInteraction = c.created
	c.rd.RequireAuth = !c.authed
	c.rd.Limits = s.readerLimits()
	s.clients[c.id] = c
	s.stats.connections++
	return ""
}

func addrString(a net.Addr, unix bool) string {
	if a == nil {
		return ""
	}
	if unix {
		return a.String() + ":0"
	}
	return a.String()
}

// closeClient closes c's connection and forgets it: its blocked state
// (a blocked client takes nothing), its watches. Lock should be held.
func (s *Server) closeClient(c *Client) {
	if c.fd < 0 {
		return
	}
	if c.blocked != nil {
		s.unblock(c)
	}
	s.unwatchAll(c)
	delete(s.clients, c.id)
	s.loop.remove(c)
	closeFD(c.fd)
	c.fd = -1
	if cap(c.out.Bytes()) > 1<<20 {
		s.released.add(cap(c.out.Bytes()))
	}
	c.out = resp.Writer{}
	close(c.gone)
}

// A turn is one client's run of commands in one pass of the event loop.
// A pipeline runs in as few turns as it can (one log commit, one write),
// but a turn is bounded, so that one client's pipeline cannot stall the
// others:
//   - maxBatch commands at most;
//   - it ends once its replies pass maxTurnOutput bytes, and they are
//     written before its next turn: a pipeline of big replies (LRANGE of
//     megabytes) lets other clients in after each, and a client that
//     stops reading holds one turn's output, not a pipeline's: once the
//     socket takes less than its output, its commands wait until the
//     socket drains (held).
//   - it ends once its commands have run for maxTurnTime (measured from
//     the first command's start to the last one's, with the clock reading
//     dispatch takes anyway), so a pipeline of slow commands lets others
//     in too.
//
// Redis bounds its turns by input instead (one read of 16 KB per client
// per event loop), which bounds neither the time nor the reply bytes.
const (
	maxBatch      = 128
	maxTurnOutput = 256 << 10
	maxTurnTime   = time.Millisecond
)

// turn runs the complete commands c has sent, within a turn's bounds. It
// returns true when commands are left for another turn. Lock should be
// held.
func (c *Client) turn() (more bool) {
	if c.fd < 0 || c.blocked != nil || c.held || c.quit || c.closeASAP || c.shutdown != nil || c.awaiting > 0 {
		return false
	}
	mark := c.out.Len()
	var first time.Time
	for n := 1; ; n++ {
		argv, ok, err := c.stashed, true, error(nil)
		if argv != nil {
			c.stashed = nil
		} else {
			argv, ok, err = c.rd.Next()
		}
		if err != nil {
			c.protocolError(err) // after the commands before it, as in Redis
			break
		}
		if !ok {
			c.rd.Shrink()
			break
		}
		c.process(argv)
		if c.blocked != nil || c.quit || c.shutdown != nil || c.stashed != nil || c.awaitingOther > 0 {
			break // awaitingOther: what follows runs once the answer is written (await.go)
		}
		// The turn's bounds (see maxBatch). lastInteraction is when
		// dispatch started the command just run.
		if n == 1 {
			first = c.lastInteraction
		} else if c.lastInteraction.Sub(first) >= maxTurnTime {
			more = true
			break
		}
		if n >= maxBatch || c.out.Len()-mark >= maxTurnOutput {
			more = true
			break
		}
		if c.rd.RequireAuth {
			// Until AUTH has run, each command is parsed under the
			// unauthenticated limits, so a pipelined AUTH lifts them for
			// the commands after it: those are parsed in the next turn.
			more = c.rd.Buffered() > 0
			break
		}
	}
	if c.eof && c.blocked != nil {
		// It cannot wait with its peer gone: it takes nothing.
		c.s.closeClient(c)
		return false
	}
	if c.eof && !more && c.awaiting == 0 && c.stashed == nil {
		c.quit = true // all it sent has run and been answered
	}
	c.noteQueryBuffer()
	c.checkTurnOutput()
	if c.out.Len() > c.sent || c.quit || c.closeASAP || c.shutdown != nil {
		c.s.loop.markDirty(c)
	}
	return more
}

// protocolError answers malformed input with Redis's error and closes.
// Lock should be held.
func (c *Client) protocolError(err error) {
	var pe *resp.ProtocolError
	if errors.As(err, &pe) {
		c.out.Error("ERR " + pe.Error())
		c.s.logger.Debug("protocol error from client", "addr", c.raddr, "err", pe.Msg)
	} else if errors.Is(err, resp.ErrQueryBufferLimit) {
		c.s.logger.Warn("closing client that reached max query buffer length", "addr", c.raddr, "limit", c.rd.Limits.MaxQueryBuf)
	}
	c.quit = true
}

// write sends what the socket takes of c's pending replies, without
// waiting. When it takes less, c is held: the loop waits for EPOLLOUT
// and runs none of its commands meanwhile. It returns false when the
// connection failed. Lock should be held.
func (c *Client) write(now time.Time) bool {
	s := c.s
	buf := c.out.Bytes()
	for c.sent < len(buf) {
		n, err := writeRaw(c.fd, buf[c.sent:])
		if n > 0 {
			c.sent += n
			s.stats.netOut.Add(int64(n))
			c.lastInteraction = now // progress: not idle
		}
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			c.setHeld(true)
			return true
		}
		if err != nil {
			return false
		}
	}
	if cap(buf) > 1<<20 {
		c.out = resp.Writer{Proto: c.out.Proto} // let a huge reply's buffer go
		s.released.add(cap(buf))
	} else {
		c.out.Reset()
	}
	c.sent = 0
	c.setHeld(false)
	return true
}

// setHeld switches what the loop waits for on c: its input, or, while
// the socket has not taken its output, the room to write more. Lock
// should be held.
func (c *Client) setHeld(held bool) {
	if c.held == held {
		return
	}
	c.held = held
	if held {
		c.s.loop.watch(c, unix.EPOLLOUT)
	} else {
		c.s.loop.watch(c, unix.EPOLLIN)
		if c.rd.Buffered() > 0 {
			c.s.loop.markRunnable(c) // commands that arrived meanwhile
		}
	}
}

// fdReader reads a client's socket without waiting: errWouldBlock when
// nothing has arrived, io.EOF when the peer closed.
type fdReader struct{ c *Client }

var errWouldBlock = errors.New("server: nothing to read")

func (r fdReader) Read(p []byte) (int, error) {
	for {
		n, err := readRaw(r.c.fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, errWouldBlock
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		r.c.s.stats.netIn.Add(int64(n))
		return n, nil
	}
}

// noteQueryBuffer publishes how many input bytes wait unparsed, for
// CLIENT LIST's qbuf.
func (c *Client) noteQueryBuffer() { c.qbuf.Store(int64(c.rd.Buffered())) }

// readerLimits are the request parser's limits. Lock should be held.
func (s *Server) readerLimits() resp.Limits {
	return resp.Limits{
		MaxBulkLen:  s.cfg.ProtoMaxBulkLen,
		MaxQueryBuf: int(min(s.cfg.ClientQueryBufferLimit, int64(^uint(0)>>1))),
	}
}
