package server

import (
	"math"
	"slices"
	"time"

	"github.com/redstream/redstream/resp"
)

var waitSpecs = []spec{
	{name: "wait", arity: 3, flags: "noscript", group: "generic", since: "3.0.0",
		syntax: "numreplicas timeout", summary: "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", run: waitCommand},
	{name: "waitaof", arity: 4, flags: "blocking", group: "generic", since: "7.2.0",
		syntax: "numlocal numreplicas timeout", summary: "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas.", run: waitaofCommand},
}

// waitCommand answers how many replicas hold the connection's writes.
// Alone, a node has none. In a cluster, for each group the connection
// has written to and this node still leads (the first group if none),
// the leader counts the followers whose Raft logs hold every entry it
// had applied when WAIT came (and so every write this connection was
// answered; an index taken later would chase other clients' writes under
// load); the answer is the smallest count, the replicas that hold the
// writes in every group. A group this node no longer leads is left out:
// its new leader holds those writes and knows their replicas. When
// numreplicas asks for more, it waits until that many do or the timeout
// passes (0: until the client goes), as Redis waits for its replicas'
// acknowledgements.
func waitCommand(x *Ctx) {
	want, ok := resp.ParseInt(x.argv[1])
	if !ok {
		x.error(resp.ErrNotInteger)
		return
	}
	ms, ok := parseWaitTimeout(x, x.argv[2])
	if !ok {
		return
	}
	groups := x.writtenGroups()
	have := groups.replicas()
	if want <= have || !x.mayBlock() {
		x.w.Int(have)
		return
	}
	var changes func() bool // alone, no replica ever comes: only the timeout ends the wait
	if len(groups) > 0 {
		changes = func() bool { return groups.replicas() >= want }
	}
	x.c.awaitCondition(ms, changes, func(w *resp.Writer) { w.Int(groups.replicas()) })
}

// waitaofCommand answers how many copies of the connection's writes are
// on disk: [local, replicas]. Alone, local is whether the AOF has
// fsynced the connection's last write (under appendfsync always it has
// before the write was answered; under everysec within a second; under no
// only when the file is switched or closed), and there are no replicas.
// In a cluster the Raft log is the append-only file: local is whether
// this node's own log holds, on disk, every entry it had applied when
// WAITAOF came, and replicas counts the followers whose logs do (a
// follower stores an entry before acknowledging it), over the groups the
// connection wrote to, as WAIT. It waits, as WAIT does, until both
// counts reach what was asked or the timeout passes.
func waitaofCommand(x *Ctx) {
	numlocal, ok := resp.ParseInt(x.argv[1])
	if !ok {
		x.error(resp.ErrNotInteger)
		return
	}
	if numlocal < 0 || numlocal > 1 {
		x.error("ERR value is out of range, value must between 0 and 1")
		return
	}
	numreplicas, ok := resp.ParseInt(x.argv[2])
	if !ok {
		x.error(resp.ErrNotInteger)
		return
	}
	if numreplicas < 0 {
		x.error("ERR value is out of range, must be positive")
		return
	}
	ms, ok := parseWaitTimeout(x, x.argv[3])
	if !ok {
		return
	}
	groups := x.writtenGroups()
	if numlocal > 0 && !x.s.aofOn() {
		x.error(errWaitAOFDisabled)
		return
	}
	var woff uint64
	if x.c != nil {
		// Its write ran earlier in this pass: log it now, to know its
		// ticket. Not inside EXEC, whose records must stay one frame (a
		// crash keeps or loses the transaction whole); there WAITAOF
		// answers at once for the writes before it, as in Redis.
		if x.c.logged && !x.inExec {
			x.s.shard.logPending()
		}
		woff = x.c.woff
	}
	s := x.s
	// aofOn is read under the lock: the wait's checks run without it
	// (aofOnUnlocked), its reply with it.
	local := func(aofOn bool) int64 {
		switch l, ok := s.shard.log.(FsyncLog); {
		case len(groups) > 0:
			return groups.durable()
		case aofOn && ok && l.Fsynced(woff):
			return 1
		}
		return 0
	}
	reply := func(w *resp.Writer, aofOn bool) {
		if numlocal > 0 && !aofOn { // CONFIG SET appendonly no while it waited
			w.Error(errWaitAOFDisabled)
			return
		}
		w.Array(2)
		w.Int(local(aofOn))
		w.Int(groups.replicas())
	}
	done := func(aofOn bool) bool {
		return numlocal > 0 && !aofOn || local(aofOn) >= numlocal && groups.replicas() >= numreplicas
	}
	if done(s.aofOn()) || !x.mayBlock() {
		reply(x.w, s.aofOn())
		return
	}
	x.c.awaitCondition(ms, func() bool { return done(s.aofOnUnlocked()) },
		func(w *resp.Writer) { reply(w, s.aofOn()) })
}

const errWaitAOFDisabled = "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."

// aofOn reports whether writes go to a log that fsyncs them: the AOF,
// or in a cluster the Raft log. Lock should be held.
func (s *Server) aofOn() bool { return s.cluster != nil || s.cfg.AppendOnly }

// aofOnUnlocked is aofOn for a goroutine without the lock, from the copy
// applyConfig keeps.
func (s *Server) aofOnUnlocked() bool { return s.cluster != nil || s.appendOnly.Load() }

// parseWaitTimeout parses WAIT's and WAITAOF's timeout, in milliseconds,
// with Redis's errors.
func parseWaitTimeout(x *Ctx, arg []byte) (int64, bool) {
	ms, ok := resp.ParseInt(arg)
	switch {
	case !ok:
		x.error(resp.ErrTimeoutNotInt)
	case ms < 0:
		x.error(resp.ErrTimeoutNegative)
	case ms > math.MaxInt64-time.Now().UnixMilli():
		x.error(resp.ErrTimeoutRange) // the deadline would overflow
	default:
		return ms, true
	}
	return 0, false
}

// writtenGroup is a group a connection wrote to, and the entry its
// writes are at or before: the group's applied index when WAIT came.
type writtenGroup struct {
	cl      Cluster
	applied uint64
}

type writtenGroups []writtenGroup

// writtenGroups are the groups WAIT and WAITAOF count for x's
// connection: those it wrote to that this node still leads, or the
// first group; none for a node alone. Lock should be held.
func (x *Ctx) writtenGroups() writtenGroups {
	var groups writtenGroups
	if x.c != nil {
		for _, g := range x.c.wroteTo {
			if g.cl.Leading() {
				groups = append(groups, writtenGroup{g.cl, g.cl.Status().AppliedIndex})
			}
		}
	}
	if cl := x.s.cluster; len(groups) == 0 && cl != nil {
		groups = append(groups, writtenGroup{cl, cl.Status().AppliedIndex})
	}
	return groups
}

// replicas is the smallest count, over the groups, of followers holding
// the writes: the replicas that hold them in every group.
func (gs writtenGroups) replicas() int64 {
	n := -1
	for _, g := range gs {
		if r := g.cl.Replicas(g.applied); n < 0 || r < n {
			n = r
		}
	}
	return int64(max(n, 0))
}

// durable is 1 when this node's own logs hold the writes on disk in
// every group, else 0.
func (gs writtenGroups) durable() int64 {
	for _, g := range gs {
		if !g.cl.Durable(g.applied) {
			return 0
		}
	}
	return 1
}

// awaitCondition answers c with reply once done holds, or when ms pass
// (0: never). Nothing tells it when a follower acknowledges or the AOF
// fsyncs, so it looks every millisecond; with done nil only the timeout
// ends the wait. Called with the lock held; done runs without it, reply
// with it (await).
func (c *Client) awaitCondition(ms int64, done func() bool, reply func(w *resp.Writer)) {
	c.await(func() func(w *resp.Writer) {
		var timeout <-chan time.Time
		if ms > 0 {
			ms = min(ms, math.MaxInt64/int64(time.Millisecond)) // about 292 years: forever, as a Duration holds it
			t := time.NewTimer(time.Duration(ms) * time.Millisecond)
			defer t.Stop()
			timeout = t.C
		}
		var poll <-chan time.Time
		if done != nil {
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			poll = t.C
		}
		for {
			select {
			case <-timeout:
				return reply
			case <-c.gone:
				return reply // nobody reads it: await drops it
			case <-poll:
				if done() {
					return reply
				}
			}
		}
	})
}

// wrote notes that c sent a write to g (wroteTo). Lock should be held.
func (c *Client) wrote(g *clusterGroup) {
	if !slices.Contains(c.wroteTo, g) {
		c.wroteTo = append(c.wroteTo, g)
	}
}
