package server

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redstream/redstream/resp"
)

// Client is one connection and the state Redis keeps per client.
// Fields after the first block are guarded by the keyspace lock.
type Client struct {
	s       *Server
	id      int64
	conn    net.Conn
	rd      *resp.Reader
	raddr   string
	laddr   string
	unix    bool
	created time.Time
	qbuf    atomic.Int64    // unparsed input bytes, for CLIENT LIST
	raw     syscall.RawConn // for writes that must not wait (handoff.go); nil if conn has none

	// wmu serialises writes to conn: a pusher may write this client's
	// served reply (handoff.go). handoff holds what it could not write.
	// wdeadline: conn may have a write deadline (send), owned with wmu.
	wmu       sync.Mutex
	handoff   []byte
	wdeadline bool
	// unsent counts the bytes handed to a write (a flush, a handoff, the
	// replies before a blocking command) that the socket has not taken
	// yet: part of the output the client holds (outputlimit.go).
	unsent atomic.Int64

	// Owned by the connection goroutine: served replies its last commit
	// took over, to write after it (handoff.go).
	deliveries []*Client
	// deadlineSet: conn may have a read deadline (an idle timeout, a
	// blocked wait's, a waker's), so a read without one must clear it.
	deadlineSet bool

	// Guarded by s.mu.
	out             resp.Writer      // replies not yet written to the connection
	flushing        int              // bytes of out a flush is writing (counted in unsent meanwhile)
	softLimitSince  int64            // unix time its output was first seen past the soft limit; 0: not
	closeASAP       bool             // its output passed its limit: close without writing (outputlimit.go)
	durable         uint64           // the log ticket the pending replies wait for; 0: none
	ranCommand      bool             // the batch under way executed a command (its reply may show data)
	shutdown        *shutdownRequest // a SHUTDOWN to carry out once the batch lets the lock go
	queued          bool             // blocked with pipelined commands behind: a serve must wake it
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
	lastInteraction time.Time
	noEvict         bool
	noTouch         bool
	quit            bool // QUIT, RESET of a killed client, a fatal error: close after flushing
	parked          bool // in waitBlocked's read, with nothing unwritten: a pusher may deliver its reply
}

type replyMode uint8

const (
	replyOn replyMode = iota
	replyOff
	replySkipNext // CLIENT REPLY SKIP: drop the next command's reply
	replySkipThis // the command being run is the skipped one
)

// maxPendingOutput is when a long pipeline's replies are written out
// before the pipeline ends, so one client cannot grow its buffer freely.
const maxPendingOutput = 64 << 10

// reply returns the writer replies go to. Lock should be held.
func (c *Client) reply() *resp.Writer { return &c.out }

// handleConn admits a new connection and serves it until it closes.
func (s *Server) handleConn(conn net.Conn) {
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		s.mu.Lock()
		ka := s.cfg.TCPKeepalive
		s.mu.Unlock()
		if ka > 0 {
			_ = tc.SetKeepAlivePeriod(time.Duration(ka) * time.Second)
			_ = tc.SetKeepAlive(true)
		}
	}
	c := s.admit(conn)
	if c == nil {
		return
	}
	defer s.removeClient(c)
	c.serve()
}

// admit registers conn as a client, or refuses it with Redis's errors
// when maxclients is reached or protected mode forbids it. The refusal is
// written after the lock is released: a slow peer must not stall others.
func (s *Server) admit(conn net.Conn) *Client {
	_, unix := conn.(*net.UnixConn)
	c := &Client{s: s, conn: conn, unix: unix, created: time.Now(), rd: resp.NewReader(countingReader{conn, &s.stats.netIn})}
	c.out.Proto = 2
	c.raddr, c.laddr = addrString(conn.RemoteAddr(), unix), addrString(conn.LocalAddr(), unix)
	if sc, ok := conn.(syscall.Conn); ok {
		c.raw, _ = sc.SyscallConn()
	}
	if refusal := s.register(c); refusal != "" {
		_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = conn.Write([]byte("-" + refusal + "\r\n"))
		return nil
	}
	return c
}

// register adds c to the client table, or returns why it is refused.
func (s *Server) register(c *Client) (refusal string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.clients) >= s.cfg.MaxClients {
		s.stats.rejectedConns++
		return resp.ErrMaxClients
	}
	if s.protectedModeRefuses(c.conn) {
		s.stats.rejectedConns++
		return errProtectedMode
	}
	c.id = s.nextID.Add(1)
	c.authed = s.cfg.RequirePass == ""
	c.lastInteraction = c.created
	c.rd.RequireAuth = !c.authed
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

// removeClient forgets a closed client: its blocked state, its watches.
func (s *Server) removeClient(c *Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.blocked != nil && !c.blocked.done {
		s.unblock(c)
	}
	s.unwatchAll(c)
	delete(s.clients, c.id)
}

// A turn is one hold of the keyspace lock by one client. A pipeline runs
// under as few turns as it can (one lock, one log commit, one write), but
// a turn is bounded, so that one client's pipeline cannot stall the
// others:
//   - maxBatch commands at most;
//   - it ends once its replies pass maxTurnOutput bytes, and the client
//     writes them before its next turn: a pipeline of big replies
//     (LRANGE of megabytes) lets other clients in after each, and a
//     client that stops reading holds one turn's output, not a
//     pipeline's. (Copying 256 KB takes tens of microseconds; a smaller
//     bound split pipelines of mid-sized replies, 16 LRANGEs of 600
//     elements, into two turns and two writes, for 3% of throughput.)
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

// serve is the connection loop. It parses every complete command that has
// arrived (outside the lock), runs them under one hold of the lock and one
// log commit, and writes all their replies in one write when the input
// runs dry — so a pipeline costs one lock, one fsync wait and one write.
func (c *Client) serve() {
	var batch [][][]byte
	for {
		batch = batch[:0]
		var perr error
		limit := maxBatch
		if c.rd.RequireAuth {
			// Until AUTH has run, each command is parsed under the
			// unauthenticated limits; parse one at a time so a pipelined
			// AUTH lifts them for the commands after it.
			limit = 1
		}
		for len(batch) < limit {
			argv, ok, err := c.rd.Next()
			if err != nil {
				perr = err
				break
			}
			if !ok {
				break
			}
			batch = append(batch, argv)
		}
		c.noteQueryBuffer()
		if len(batch) > 0 && !c.run(batch) {
			return
		}
		if perr != nil {
			c.protocolError(perr) // after the commands before it, as in Redis
			return
		}
		if len(batch) == 0 || c.out.Len() > maxPendingOutput {
			if c.flush() != nil {
				return
			}
		}
		if len(batch) == 0 {
			c.rd.Shrink()
			if c.readMore() != nil {
				return
			}
		}
	}
}

// run executes a batch of commands and, if one of them blocks, waits for
// it and then runs the rest. It returns false when the client is done.
func (c *Client) run(batch [][][]byte) bool {
	for len(batch) > 0 {
		done, ticket := c.runLocked(batch)
		batch = batch[done:]
		if len(c.deliveries) > 0 {
			c.deliver(ticket)
		}
		if c.shutdown != nil {
			c.shutdownNow()
		}
		if c.closeASAP {
			return false // its output was dropped: nothing to write
		}
		if c.quit {
			c.flush()
			return false
		}
		if c.blocked == nil {
			if len(batch) > 0 && c.out.Len() > maxPendingOutput {
				// The turn ended on its output: write it before the next.
				if c.flush() != nil {
					return false
				}
			}
			continue
		}
		// The commands after the blocked one alias the read buffer, which
		// the wait refills: keep copies.
		rest := make([][][]byte, len(batch))
		for i, argv := range batch {
			rest[i] = cloneArgv(argv)
		}
		batch = rest
		if !c.waitBlocked(len(batch) > 0 || c.rd.Buffered() > 0) {
			return false
		}
	}
	return true
}

// runLocked runs commands under one hold of the lock (a turn) until one
// blocks or asks to quit or the turn's bounds are reached, commits their writes to the log together, and returns how
// many it ran and the commit's ticket.
func (c *Client) runLocked(batch [][][]byte) (n int, ticket uint64) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	mark := c.out.Len()
	var first time.Time
	for _, argv := range batch {
		c.process(argv)
		n++
		if c.blocked != nil || c.quit || c.shutdown != nil {
			break
		}
		// The turn's bounds (see maxBatch). lastInteraction is when
		// dispatch started the command just run.
		if n == 1 {
			first = c.lastInteraction
		} else if c.lastInteraction.Sub(first) >= maxTurnTime {
			break
		}
		if c.out.Len()-mark >= maxTurnOutput {
			break
		}
	}
	c.checkTurnOutput()
	ticket = s.commitBy(c)
	if c.ranCommand {
		// A refusal shows no data, so a batch of refusals (MISCONF while
		// the disk is full) waits for nothing but its own writes.
		ticket = max(ticket, s.seenTicket())
		c.ranCommand = false
	}
	c.durable = max(c.durable, ticket) // tickets grow: the later covers the earlier
	return n, ticket
}

// readMore waits for more input, closing idle clients after `timeout`.
func (c *Client) readMore() error {
	lim := c.s.limits.Load()
	c.rd.Limits = lim.reader
	deadline := time.Time{}
	if lim.idleTimeout > 0 {
		deadline = time.Now().Add(lim.idleTimeout)
	}
	if !deadline.IsZero() || c.deadlineSet {
		_ = c.conn.SetReadDeadline(deadline)
		c.deadlineSet = !deadline.IsZero()
	}
	err := c.rd.Fill()
	c.noteQueryBuffer()
	if errors.Is(err, resp.ErrQueryBufferLimit) {
		c.s.logger.Warn("closing client that reached max query buffer length", "addr", c.raddr, "limit", lim.reader.MaxQueryBuf)
	}
	return err
}

// protocolError answers malformed input with Redis's error and closes.
func (c *Client) protocolError(err error) {
	var pe *resp.ProtocolError
	if errors.As(err, &pe) {
		c.s.mu.Lock()
		c.out.Error("ERR " + pe.Error())
		c.s.mu.Unlock()
		c.s.logger.Debug("protocol error from client", "addr", c.raddr, "err", pe.Msg)
	}
	c.flush()
}

// flush writes the pending replies once the writes behind them are
// durable. If durability fails the replies are dropped and the connection
// closed: an acknowledgement is a promise.
//
// Only this goroutine adds to c.out while the client is not blocked (the
// lock guards it for CLIENT LIST's readers), so the bytes taken here stay
// the whole pending output until the write is done.
func (c *Client) flush() error {
	s := c.s
	s.mu.Lock()
	ticket := c.durable
	c.durable = 0
	out := c.out.Bytes()
	c.flushing = len(out)
	c.unsent.Add(int64(len(out)))
	s.mu.Unlock()
	if err := c.waitDurable(ticket); err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.writeHandoff(); err != nil {
		return err
	}
	if len(out) == 0 {
		return nil
	}
	err := c.send(out)
	s.mu.Lock()
	c.out.Reset()
	c.flushing = 0
	if cap(out) > 1<<20 {
		c.out = resp.Writer{Proto: c.out.Proto} // let a huge reply's buffer go
		s.released.add(cap(out))
	}
	s.mu.Unlock()
	return err
}

// maxWriteChunk is the most one write call is given, so that what a
// client holds (omem) follows a big reply's progress, and a timeout
// measures the time without progress, not the time a big reply takes.
const maxWriteChunk = 1 << 20

// send writes buf to the connection and takes it out of c.unsent, as it
// goes, whether written or dropped on an error. With `timeout` set, a
// write that makes no progress for that long fails and the client is
// closed, as Redis closes a client idle that long (its cron does not
// count a pending reply as activity; writing some of it is). wmu should
// be held.
func (c *Client) send(buf []byte) error {
	defer func() { c.unsent.Add(-int64(len(buf))) }()
	for len(buf) > 0 {
		idle := c.s.limits.Load().idleTimeout
		if idle > 0 {
			_ = c.conn.SetWriteDeadline(time.Now().Add(idle))
			c.wdeadline = true
		} else if c.wdeadline {
			_ = c.conn.SetWriteDeadline(time.Time{})
			c.wdeadline = false
		}
		n, err := c.conn.Write(buf[:min(len(buf), maxWriteChunk)])
		c.s.stats.netOut.Add(int64(n))
		c.unsent.Add(-int64(n))
		buf = buf[n:]
		if err != nil {
			if n > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
				continue // it took some: not idle
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.s.logger.Debug("Closing idle client", "addr", c.raddr, "unsent", len(buf))
			}
			return err
		}
	}
	return nil
}

// waitDurable waits for the log to make ticket, the client's acknowledged
// writes, durable; 0 waits for nothing.
func (c *Client) waitDurable(ticket uint64) error {
	if ticket == 0 {
		return nil
	}
	if err := c.s.log.Wait(ticket); err != nil {
		c.s.logger.Error("write not durable; closing client without acknowledging", "addr", c.raddr, "err", err)
		return err
	}
	return nil
}

// waitBlocked parks the client until a write serves it, its timeout
// passes, CLIENT UNBLOCK/KILL ends the wait, or the connection closes.
// While parked it keeps reading, so a disconnect is seen at once and
// pipelined commands queue up. It returns false if the client is gone.
func (c *Client) waitBlocked(queued bool) bool {
	s := c.s
	s.mu.Lock()
	c.queued = queued
	b := c.blocked
	earlier := b.earlierOutput
	b.earlierOutput = nil
	c.unsent.Add(int64(len(earlier)))
	ticket := c.durable
	c.durable = 0
	s.mu.Unlock()
	if c.waitDurable(ticket) != nil {
		return false
	}
	if len(earlier) > 0 {
		c.wmu.Lock()
		err := c.send(earlier)
		c.wmu.Unlock()
		if err != nil {
			return false
		}
	}
	c.deadlineSet = true // from here on, a waker may set it
	s.mu.Lock()
	for !b.done {
		// Set the deadline under the lock: a waker sets it to the past
		// under the lock too, so its wake-up is never overwritten.
		_ = c.conn.SetReadDeadline(b.deadline)
		c.parked = true
		s.mu.Unlock()
		err := c.rd.Fill()
		c.noteQueryBuffer()
		s.mu.Lock()
		c.parked = false
		c.queued = c.queued || c.rd.Buffered() > 0 // sent while it waits: a serve must wake it to run them
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			// The peer closed or reset. If a write served us first, the
			// element is ours: send the reply (a half-closed peer still
			// reads it) rather than drop it. Otherwise removeClient
			// unblocks us and nothing is taken.
			served := b.done && !b.gone
			if b.done {
				c.blocked = nil
			}
			s.mu.Unlock()
			if served {
				c.flush()
			}
			return false
		}
		if err != nil && !b.done && !b.deadline.IsZero() && !time.Now().Before(b.deadline) {
			s.unblock(c)
			c.out.NullArray() // Redis answers a timed-out wait with a null array
			s.countUnblocked(b, false)
		}
	}
	c.blocked = nil
	s.mu.Unlock()
	return !b.gone && c.flush() == nil
}

// countingReader counts the bytes clients send, for INFO's
// total_net_input_bytes.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// noteQueryBuffer publishes how many input bytes wait unparsed, for
// CLIENT LIST's qbuf (read by other goroutines).
func (c *Client) noteQueryBuffer() { c.qbuf.Store(int64(c.rd.Buffered())) }

// wake interrupts the blocked client's read so it sees it was served or
// released. Lock should be held.
func (c *Client) wake() { _ = c.conn.SetReadDeadline(time.Unix(1, 0)) }
