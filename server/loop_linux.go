package server

import (
	"container/heap"
	"errors"
	"io"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// The event loop: one goroutine, locked to its thread, serves every
// client, as Redis's ae loop does.
//
//	epoll_wait ─▶ lock ─▶ read every ready socket (one read each)
//	                      end the blocked waits whose timeout passed
//	                      run a turn of each client with complete commands
//	                        (a write re-runs the blocked clients it made
//	                        ready; their replies join their buffers)
//	                      commit: the pass's records go to the log at once
//	             unlock ─▶ log.Wait(the newest ticket a reply shows)
//	               lock ─▶ write every client's replies, one write each
//	             unlock ─▶ epoll_wait again
//
// Nothing is parked or woken per request: a blocked client is only a
// blockState on its keys' queues and an entry in the timer heap, and a
// push that serves it puts its reply in its buffer, written in the same
// pass as the pusher's. Other goroutines (the cron, a CLAIM timer, a
// snapshot's restore) change clients only under the lock, and wake the
// loop through an eventfd when they leave output to write.
//
// Replies wait for durability where Redis's do: the pass's log write (and
// its fsync under appendfsync always) happens once per pass, before any
// reply of the pass is written, so one fsync covers every client that
// wrote in it.
type eventLoop struct {
	s      *Server
	epfd   int
	wakefd int
	byFD   map[int32]*Client
	// Guarded by s.shard.mu.
	dirty    []*Client // have output to write (or to be closed) before the loop sleeps
	runnable []*Client // have complete commands to run
	timers   blockTimers
	active   bool // the loop holds the lock in a pass, or will look at dirty before it sleeps
	started  bool
	done     chan struct{}
	events   []unix.EpollEvent
}

func (s *Server) initLoop() error {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return err
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakefd)}); err != nil {
		unix.Close(epfd)
		unix.Close(wakefd)
		return err
	}
	s.loop = &eventLoop{s: s, epfd: epfd, wakefd: wakefd, byFD: make(map[int32]*Client), done: make(chan struct{}), events: make([]unix.EpollEvent, 256)}
	return nil
}

// start runs the loop once. Lock should be held.
func (l *eventLoop) start() {
	if l.started {
		return
	}
	l.started = true
	go l.run()
}

// add registers c's socket. Lock should be held.
func (l *eventLoop) add(c *Client) error {
	l.start()
	c.events = unix.EPOLLIN
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, c.fd, &unix.EpollEvent{Events: c.events, Fd: int32(c.fd)}); err != nil {
		return err
	}
	l.byFD[int32(c.fd)] = c
	return nil
}

// remove forgets c's socket before it is closed. Lock should be held.
func (l *eventLoop) remove(c *Client) {
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, c.fd, nil)
	delete(l.byFD, int32(c.fd))
}

// watch sets what the loop waits for on c's socket. Lock should be held.
func (l *eventLoop) watch(c *Client, events uint32) {
	if c.events == events || c.fd < 0 {
		return
	}
	c.events = events
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: events, Fd: int32(c.fd)})
}

// markDirty queues c's output to be written before the loop sleeps.
// Lock should be held.
func (l *eventLoop) markDirty(c *Client) { l.enqueue(&l.dirty, &c.dirty, c) }

// markRunnable queues c to run the commands it has sent. Lock should be
// held.
func (l *eventLoop) markRunnable(c *Client) { l.enqueue(&l.runnable, &c.runnable, c) }

// enqueue adds c to queue once (on says it is there) and makes sure the
// loop looks at it. Lock should be held.
func (l *eventLoop) enqueue(queue *[]*Client, on *bool, c *Client) {
	if *on {
		return
	}
	*on = true
	*queue = append(*queue, c)
	l.wake()
}

// wake makes a sleeping loop look at its lists. Lock should be held.
func (l *eventLoop) wake() {
	if l.active {
		return // it looks before it sleeps
	}
	l.active = true
	var one = [8]byte{1}
	_, _ = unix.Write(l.wakefd, one[:])
}

// stop ends the loop and closes every client; it returns once the loop
// has. Called without the lock, after Server.closing is set.
func (l *eventLoop) stop() {
	l.s.shard.mu.Lock()
	started := l.started
	l.started = true // no later start
	l.active = false
	l.wake()
	l.s.shard.mu.Unlock()
	if started {
		<-l.done
	} else {
		l.shutdown()
	}
}

func (l *eventLoop) shutdown() {
	s := l.s
	s.shard.mu.Lock()
	for _, c := range s.clients {
		s.closeClient(c)
	}
	s.shard.mu.Unlock()
	unix.Close(l.epfd)
	unix.Close(l.wakefd)
}

func (l *eventLoop) run() {
	defer close(l.done)
	defer l.shutdown()
	// The loop's thread does nothing else: keeping it spares the
	// scheduler a handoff at every epoll_wait.
	runtime.LockOSThread()
	s := l.s
	timeout := -1
	for {
		n, err := pollRaw(l.epfd, l.events)
		if n == 0 && err == nil && timeout != 0 {
			n, err = unix.EpollWait(l.epfd, l.events, timeout)
		}
		if err != nil && err != unix.EINTR {
			s.logger.Error("event loop failed", "err", err)
			return
		}
		now := time.Now()
		s.shard.mu.Lock()
		l.active = true
		if s.closing.Load() {
			s.shard.mu.Unlock()
			return
		}
		for _, ev := range l.events[:max(n, 0)] {
			if ev.Fd == int32(l.wakefd) {
				var b [8]byte
				_, _ = unix.Read(l.wakefd, b[:])
				continue
			}
			if c := l.byFD[ev.Fd]; c != nil {
				l.ready(c, ev.Events, now)
			}
		}
		l.expireWaits(now)
		var next []*Client
		for i := 0; i < len(l.runnable); i++ { // turns may add served clients
			c := l.runnable[i]
			c.runnable = false
			if c.turn() {
				next = append(next, c)
			}
		}
		clear(l.runnable)
		l.runnable = l.runnable[:0]
		if s.cluster != nil {
			s.sendProposals()
		}
		s.commit()
		l.flush(now)
		for _, c := range next {
			l.markRunnable(c)
		}
		timeout = l.timeout(now)
		l.active = timeout == 0
		s.shard.mu.Unlock()
	}
}

// ready handles the events epoll reported for c. Lock should be held.
func (l *eventLoop) ready(c *Client, events uint32, now time.Time) {
	if events&unix.EPOLLOUT != 0 && c.held {
		if !c.write(now) || (c.quit && !c.held) {
			l.s.closeClient(c) // failed, or all written before a QUIT's close
			return
		}
	}
	if events&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLERR) == 0 {
		return
	}
	if c.held {
		if events&(unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			l.s.closeClient(c) // it will never read what it is owed
		}
		return
	}
	c.rd.Limits = l.s.readerLimits()
	err := c.rd.Fill()
	c.noteQueryBuffer()
	switch {
	case err == nil:
		c.lastInteraction = now
		if c.blocked == nil {
			l.markRunnable(c)
		}
	case errors.Is(err, errWouldBlock):
	case errors.Is(err, io.EOF) && c.blocked == nil:
		// The peer has sent all it will. What it sent is still run (a
		// turn cut short by its bounds may have left some), its replies
		// written (a half-closed peer still reads them; a served
		// client's element is its own), and then it is closed.
		c.eof = true
		l.watch(c, 0)
		l.markRunnable(c)
	default:
		// Gone while blocked it takes nothing: closing unblocks it.
		if errors.Is(err, io.ErrNoProgress) { // a read into no room: the query buffer is full
			err = nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			c.protocolError(err)
		}
		l.s.closeClient(c)
	}
}

// flush waits for the log to make durable what the pass's replies may
// show, then writes them. Lock should be held; it is released during the
// wait.
func (l *eventLoop) flush(now time.Time) {
	s := l.s
	var need uint64
	for _, c := range l.dirty {
		need = max(need, c.durable)
	}
	var werr error
	if need > 0 && s.shard.log != nil {
		s.shard.mu.Unlock()
		werr = s.shard.log.Wait(need)
		s.shard.mu.Lock()
	}
	var shutdowns []*Client
	dirty := l.dirty
	l.dirty = nil
	for _, c := range dirty {
		c.dirty = false
		if c.fd < 0 {
			continue
		}
		if c.durable > need { // written to while the lock was let go: the next pass
			l.markDirty(c)
			continue
		}
		if c.durable > 0 && werr != nil && s.shard.log.Wait(c.durable) != nil {
			s.logger.Error("write not durable; closing client without acknowledging", "addr", c.raddr, "err", werr)
			s.closeClient(c)
			continue
		}
		c.durable = 0
		if c.closeASAP {
			s.closeClient(c) // its output was dropped: nothing to write
			continue
		}
		if c.shutdown != nil {
			shutdowns = append(shutdowns, c)
			continue
		}
		if !c.write(now) || (c.quit && !c.held) {
			s.closeClient(c)
		}
	}
	clear(dirty)
	if l.dirty == nil {
		l.dirty = dirty[:0]
	}
	for _, c := range shutdowns {
		// Its save waits for background jobs, which need the lock.
		s.shard.mu.Unlock()
		c.shutdownNow()
		s.shard.mu.Lock()
		if c.fd >= 0 {
			l.markDirty(c)
			l.markRunnable(c)
		}
	}
}

// timeout is how long the loop may sleep: not at all when work is
// queued, else until the next blocked client's timeout. Lock should be
// held.
func (l *eventLoop) timeout(now time.Time) int {
	if len(l.dirty) > 0 || len(l.runnable) > 0 || l.s.proposalsWaiting() {
		return 0
	}
	if len(l.timers) == 0 {
		return -1
	}
	d := l.timers[0].deadline.Sub(now)
	if d <= 0 {
		return 0
	}
	return int((d + time.Millisecond - 1) / time.Millisecond)
}

// expireWaits ends the blocked waits whose timeout has passed, with the
// null array Redis answers. Lock should be held.
func (l *eventLoop) expireWaits(now time.Time) {
	s := l.s
	for len(l.timers) > 0 && !l.timers[0].deadline.After(now) {
		c := l.timers[0].c
		b := c.blocked
		if b.inflight {
			// A re-try of its command is in the log: what it finds
			// decides (answerApplied).
			l.removeTimer(b)
			b.expired = true
			continue
		}
		s.unblock(c) // takes it off the heap
		c.out.NullArray()
		s.countUnblocked(b, false)
		l.markDirty(c)
		l.markRunnable(c)
	}
}

// blockTimers is a min-heap of the blocked waits that have a timeout,
// by deadline. A wait that ends otherwise leaves it at once (unblock), so
// it holds only waits under way, however many come and go.
type blockTimers []*blockState

func (h blockTimers) Len() int           { return len(h) }
func (h blockTimers) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h blockTimers) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].timer, h[j].timer = i, j
}
func (h *blockTimers) Push(x any) {
	b := x.(*blockState)
	b.timer = len(*h)
	*h = append(*h, b)
}
func (h *blockTimers) Pop() any {
	old := *h
	b := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	b.timer = -1
	return b
}

// addTimer puts b's timeout on the heap. Lock should be held.
func (l *eventLoop) addTimer(b *blockState) { heap.Push(&l.timers, b) }

// removeTimer takes b's timeout off the heap, if it is there. Lock
// should be held.
func (l *eventLoop) removeTimer(b *blockState) {
	if b.timer >= 0 {
		heap.Remove(&l.timers, b.timer)
	}
}
