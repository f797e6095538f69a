package server

import (
	"container/list"
	"time"

	"github.com/redstream/redstream/listpack"
)

// Blocking, the way Redis does it (blocked.c):
//
//  1. A blocking command that finds nothing calls Ctx.block. Still under
//     the keyspace lock, blockClient queues the client on each key's FIFO
//     (DB.waiters), and its timeout, if any, on the loop's timer heap.
//     The loop goes on reading its socket, so a disconnect is seen at
//     once (and unblocks it: it takes nothing), and commands it
//     pipelines behind wait in its input.
//  2. A write that may feed waiters (a push) calls signalReady: it notes
//     the key once, and costs a map lookup when nobody waits.
//  3. After every command, still under the lock, serveReady walks each
//     ready key's queue in arrival order and re-runs each waiter's command
//     on its behalf (rerun). A waiter that gets something is unblocked; its
//     reply is already in its buffer, and its write is logged with the
//     command's records. Served writes may make more keys ready (BLMOVE
//     pushes), so the walk repeats until nothing is ready.
//  4. commit queues the served clients' replies to be written in the same
//     pass of the loop, once durable, and their pipelined commands to
//     run. Nobody polls, and the first to block is the first served.

// blockState is a blocked client's wait.
type blockState struct {
	cmd      *Command
	argv     [][]byte // an owned copy, re-run when a key is ready
	db       int
	keys     []string
	links    []*list.Element // the client's place in each key's queue
	deadline time.Time       // zero: wait forever
	c        *Client         // the client waiting
	timer    int             // its place in the loop's timer heap; -1: not there
	done     bool            // the wait is over: served, timed out, unblocked or gone
	// Cluster mode: a re-try of its command is in the log (inflight);
	// its timeout passed meanwhile (expired), to be answered if the
	// re-try finds nothing.
	inflight, expired bool
	// XREADGROUP only (group_block.go): the timer that re-runs a CLAIM
	// read when a pending entry becomes idle enough.
	claim *time.Timer
}

type readyKey struct {
	db  int
	key string
}

// blockClient parks c on the keys x asked for. Lock should be held.
func (s *Server) blockClient(c *Client, x *Ctx) {
	b := &blockState{
		c:        c,
		timer:    -1,
		cmd:      x.cmd,
		argv:     cloneArgv(x.argv),
		db:       x.db.index,
		deadline: x.blockDeadline,
	}
	for _, k := range x.blockKeys {
		key := string(k)
		q := x.db.waiters[key]
		if q == nil {
			q = list.New()
			x.db.waiters[key] = q
		}
		b.keys = append(b.keys, key)
		b.links = append(b.links, q.PushBack(c))
	}
	c.blocked = b
	s.stats.blockedClients++
	if !b.deadline.IsZero() {
		s.loop.addTimer(b)
	}
	if waitsOnGroup(b.cmd) {
		s.watchGroupWait(c)
	}
}

// unblock takes c out of every queue and ends its wait; the caller writes
// its reply, if any. Lock should be held.
func (s *Server) unblock(c *Client) {
	b := c.blocked
	db := s.shard.dbs[b.db]
	if waitsOnGroup(b.cmd) {
		s.forgetGroupWait(c)
	}
	for i, key := range b.keys {
		q := db.waiters[key]
		q.Remove(b.links[i])
		if q.Len() == 0 {
			delete(db.waiters, key)
		}
	}
	b.keys, b.links = nil, nil
	s.loop.removeTimer(b)
	b.done = true
	c.blocked = nil
	s.stats.blockedClients--
}

// signalReady notes that key may now serve blocked clients. Lock should
// be held.
func (sh *Shard) signalReady(db *DB, key []byte) {
	if len(db.waiters) == 0 {
		return
	}
	if _, ok := db.waiters[string(key)]; !ok {
		return
	}
	if _, ok := db.readySet[string(key)]; ok {
		return
	}
	k := string(key)
	db.readySet[k] = struct{}{}
	sh.ready = append(sh.ready, readyKey{db: db.index, key: k})
}

// serveReady serves the clients blocked on every ready key, until no key
// is ready. Lock should be held.
func (s *Server) serveReady() {
	sh := s.shard
	for len(sh.ready) > 0 {
		batch := sh.ready
		sh.ready = nil
		for _, rk := range batch {
			db := sh.dbs[rk.db]
			delete(db.readySet, rk.key)
			s.serveKey(db, rk.key)
		}
	}
}

// serveKey re-runs, in arrival order, the command of each client blocked
// on key, until the key is gone. Lock should be held.
func (s *Server) serveKey(db *DB, key string) {
	q := db.waiters[key]
	if q == nil {
		return
	}
	waiting := make([]*Client, 0, q.Len())
	for e := q.Front(); e != nil; e = e.Next() {
		waiting = append(waiting, e.Value.(*Client))
	}
	// In a group, a list's waiters are re-tried through the log, as many
	// at a time as it holds elements (each re-try in flight counts as
	// taking one), not all of them for each push.
	budget := -1
	if o := db.keys[key]; o != nil && s.cluster != nil {
		if l, ok := o.value.(*listpack.Quicklist); ok {
			budget = l.Len()
		}
	}
	for _, c := range waiting {
		b := c.blocked
		if b == nil || b.done {
			continue
		}
		// As in Redis, a waiter is re-run only when the key holds the type
		// it waits for (a list for BLPOP): anything else cannot serve it.
		// XREADGROUP is the exception: a key deleted or of another type
		// ends its wait with NOGROUP or WRONGTYPE, which its re-run answers.
		if o := db.keys[key]; !waitsOnGroup(b.cmd) && (o == nil || typeName(o) != b.cmd.Group) {
			continue
		}
		if s.cluster != nil && b.cmd.Flags&FlagWrite != 0 {
			if budget == 0 {
				break
			}
			if g := s.groupOfDB(db.index); !b.inflight && g != nil {
				s.propose(g, c, b.argv, s.shard.now(), true) // served through the log
			}
			budget--
			continue
		}
		s.rerun(c)
	}
}

// rerun executes a blocked client's command again, without blocking. If
// it was served, the client is unblocked and its reply written by the
// loop after commit. Lock should be held.
func (s *Server) rerun(c *Client) {
	b := c.blocked
	x := &c.ctx
	*x = Ctx{s: s, c: c, w: &c.out, db: s.shard.dbs[b.db], argv: b.argv, cmd: b.cmd, now: s.shard.now(), rerun: true}
	mark := c.out.Mark()
	s.execute(x, time.Now())
	if x.stillBlocked {
		c.out.Truncate(mark)
		if waitsOnGroup(b.cmd) {
			s.armClaimWake(c) // pending entries may have changed
		}
		return
	}
	if c.replyMode != replyOn {
		c.out.Truncate(mark)
	}
	s.unblock(c)
	s.shard.served = append(s.shard.served, c)
}

// unblockByRequest ends c's wait for CLIENT UNBLOCK: as a timeout, or
// with the UNBLOCKED error. Lock should be held.
func (s *Server) unblockByRequest(c *Client, withError bool) bool {
	b := c.blocked
	if b == nil || b.done {
		return false
	}
	s.unblock(c)
	if withError {
		const msg = "UNBLOCKED client unblocked via CLIENT UNBLOCK"
		c.out.Error(msg)
		s.stats.countError(msg)
	} else {
		c.out.NullArray() // as a timeout: Redis answers a null array
	}
	s.countUnblocked(b, withError)
	s.loop.markDirty(c)
	s.loop.markRunnable(c)
	return true
}

// countUnblocked counts a wait that ended without a re-run (a timeout,
// CLIENT UNBLOCK) as the command's one call, as Redis does; a disconnect
// is not counted. Lock should be held.
func (s *Server) countUnblocked(b *blockState, failed bool) {
	b.cmd.stat.calls++
	if failed {
		b.cmd.stat.failed++
	}
	s.stats.commands++
}

// cloneArgv copies argv into memory of its own, in two allocations
// (every proposed write is cloned, so not one per argument). The
// arguments share one array; each is capped at its length, so appending
// to one never writes into the next.
func cloneArgv(argv [][]byte) [][]byte {
	n := 0
	for _, a := range argv {
		n += len(a)
	}
	data := make([]byte, 0, n)
	out := make([][]byte, len(argv))
	for i, a := range argv {
		if a == nil {
			continue // stays nil, as bytes.Clone keeps it
		}
		at := len(data)
		data = append(data, a...)
		out[i] = data[at:len(data):len(data)]
	}
	return out
}
