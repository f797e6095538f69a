package server

import (
	"syscall"
	"time"
)

// Handing a served reply to the writer that served it.
//
// When a push serves a blocked client (BLPOP, BRPOP, XREAD BLOCK...), the
// reply is ready under the lock, in the pusher's goroutine. Waking the
// blocked client's goroutine to write it costs a scheduler hop and two
// trips through the keyspace lock, which is most of a queue's push-to-pop
// latency. So commit hands the reply to the pusher instead: it takes the
// served client's write lock (wmu), moves the reply bytes to the client's
// handoff buffer, and the pusher writes them, once durable, right after
// its own commit. The served goroutine is not woken: it stays parked in
// its read and sees it was served when its next command (or its close)
// arrives; its first write waits on wmu, so replies keep their order.
//
// Only a client parked in waitBlocked with nothing unwritten is handed
// over: anything else (served before it parked, a write in flight) is
// woken to write its reply itself. The pusher never waits on a slow
// reader: it writes what the socket takes at once and leaves the rest in
// handoff; then it wakes the owner, still parked, to write the rest.

// maxHandoffs is how many served replies one commit's writer takes on.
// A push that serves one waiter (a queue) gains most from writing its
// reply itself; when one XADD serves many readers, writing all their
// replies one after the other delays the last more than waking the
// readers, who write in parallel, does.
const maxHandoffs = 1

// takeReply moves sc's pending reply to sc.handoff for by to deliver, or
// returns false when sc must write it itself. Lock should be held.
func (by *Client) takeReply(sc *Client) bool {
	if by == nil || len(by.deliveries) >= maxHandoffs || !sc.parked || sc.raw == nil || sc.out.Len() == 0 || !sc.wmu.TryLock() {
		return false
	}
	sc.handoff = append(sc.handoff[:0], sc.out.Bytes()...)
	sc.unsent.Add(int64(len(sc.handoff)))
	sc.out.Reset()
	by.deliveries = append(by.deliveries, sc)
	return true
}

// deliver writes the replies commit handed to c once ticket is durable,
// and releases each client's write lock. Called without the lock.
func (c *Client) deliver(ticket uint64) {
	durable := ticket == 0 || c.s.log.Wait(ticket) == nil
	for _, sc := range c.deliveries {
		if durable {
			// Not durable: the bytes stay in handoff, and the owner's
			// own flush fails on the same ticket and closes the client
			// without writing them.
			sc.writeHandoffNow()
		}
		left := len(sc.handoff) > 0
		sc.wmu.Unlock()
		if left {
			// The owner was not woken (commitBy): it stays parked until
			// its next command. Wake it now to write the rest (or to
			// fail on the ticket), or its client could wait for the rest
			// of a reply while the server waits for its next command.
			c.s.mu.Lock()
			if sc.parked { // else it is awake, and its flush writes the rest
				sc.wake()
			}
			c.s.mu.Unlock()
		}
	}
	clear(c.deliveries)
	c.deliveries = c.deliveries[:0]
}

// writeHandoffNow writes as much of c.handoff as the socket takes without
// waiting. wmu should be held.
func (c *Client) writeHandoffNow() {
	if c.wdeadline {
		// A deadline left by the owner's last write (with `timeout` set)
		// may have passed while it waited: it would fail this write.
		_ = c.conn.SetWriteDeadline(time.Time{})
		c.wdeadline = false
	}
	buf := c.handoff
	for len(buf) > 0 {
		var n int
		var err error
		if rerr := c.raw.Write(func(fd uintptr) bool {
			n, err = syscall.Write(int(fd), buf)
			return true // never wait for the socket to drain
		}); rerr != nil || err != nil || n <= 0 {
			break
		}
		c.s.stats.netOut.Add(int64(n))
		c.unsent.Add(-int64(n))
		buf = buf[n:]
	}
	c.handoff = append(c.handoff[:0], buf...)
}

// writeHandoff writes what is left of c.handoff, waiting as any write
// does. wmu should be held.
func (c *Client) writeHandoff() error {
	if len(c.handoff) == 0 {
		return nil
	}
	err := c.send(c.handoff)
	c.handoff = c.handoff[:0]
	return err
}
