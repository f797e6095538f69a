package server

import (
	"time"

	"github.com/redstream/redstream/resp"
)

// Ctx is one command's execution: its arguments, the database and time it
// runs against, where its reply goes, and what it changed. Handlers get a
// *Ctx and run with the keyspace lock held. The shard it runs against is
// its database's (x.db.shard).
type Ctx struct {
	s    *Server // the node: configuration, statistics, clients
	c    *Client // the client; nil when replaying a record
	w    *resp.Writer
	db   *DB
	argv [][]byte
	cmd  *Command
	now  int64 // ms: the record's time for writes, the wall clock for reads

	replay bool // applying a logged record: no client, never block
	inExec bool // running inside EXEC: blocking commands do not block
	rerun  bool // re-running a blocked client's command after a key became ready
	owned  bool // replaying a record a client of this node waits on (cluster mode)
	// counted: a replayed record that is a command of this node's client
	// (cluster mode): its call counts in INFO, where it is answered.
	counted bool

	dirty       int      // changes made; a write with dirty > 0 is logged
	bookkeeping int      // of dirty, changes to delivery bookkeeping only (bookkept)
	logArgv     [][]byte // what to log instead of argv (BLPOP served → LPOP)
	failed      string   // the first error reply the command gave: it failed

	// Set by a blocking handler that found nothing to serve.
	blockKeys     [][]byte
	blockDeadline time.Time
	stillBlocked  bool // rerun found nothing: the client stays blocked
}

// arg returns argument i as a string (allocates; for options and names).
func (x *Ctx) arg(i int) string { return string(x.argv[i]) }

// error writes an error reply, and records that the command failed: every
// error reply goes through here, which is how ApplyBatch tells failure.
func (x *Ctx) error(msg string) {
	if x.failed == "" {
		x.failed = msg
	}
	x.w.Error(msg)
}

// mayBlock reports whether a blocking command may really block now: not
// in MULTI, not during replay.
func (x *Ctx) mayBlock() bool { return !x.replay && !x.inExec && x.c != nil }

// block asks for the client to wait on keys until deadline (zero: no
// limit). Where blocking is impossible (MULTI, replay) the command times
// out at once, as in Redis; on a rerun the client simply stays blocked.
func (x *Ctx) block(keys [][]byte, deadline time.Time) {
	switch {
	case x.owned:
		x.stillBlocked = true
		x.blockKeys, x.blockDeadline = keys, deadline
	case x.rerun:
		x.stillBlocked = true
	case !x.mayBlock():
		x.cmd.timeoutReply(x.w)
	default:
		x.blockKeys, x.blockDeadline = keys, deadline
	}
}

// rewriteLog makes the write log argv instead of the command as sent.
func (x *Ctx) rewriteLog(argv ...[]byte) { x.logArgv = argv }

// modified records that key changed: it counts as a change to log and
// aborts transactions that WATCH it.
func (x *Ctx) modified(key []byte) {
	x.dirty++
	x.s.touchWatched(x.db, key)
}

// bookkept records a change to delivery bookkeeping only: a consumer's
// seen time, a pending entry's delivery count and time. It is logged, so
// a restart keeps it, but as in Redis (since 7.4) it is no change to the
// data: a command that made only such changes is not counted in
// rdb_changes_since_last_save, nor by save points.
func (x *Ctx) bookkept(key []byte) {
	x.modified(key)
	x.bookkeeping++
}

// signalReady tells blocked clients waiting on key that it may now have
// what they wait for (a push, an XADD). Cheap when nobody waits.
func (x *Ctx) signalReady(key []byte) { x.db.shard.signalReady(x.db, key) }
