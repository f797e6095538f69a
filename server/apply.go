package server

import (
	"bytes"
	"fmt"
	"time"

	"github.com/redstream/redstream/record"
)

// Record is one write as it is logged, replayed and replicated (package
// record). Applying the same records in the same order to the same state
// always gives the same state: every command reads its clock from Time,
// never from the wall, and draws nothing at random.
type Record = record.Record

// Log receives the records of every applied write, in apply order. The
// server calls Append with the keyspace lock held, once per command (one
// call holds every record of a MULTI/EXEC, to be replayed all or none), so
// Append must copy what it keeps and must not block on I/O.
//
// Append returns a ticket; Wait(ticket) blocks until those records, and
// every record appended before them, are durable under the log's policy.
// The server waits outside the lock and sends the replies only after Wait
// returns nil. Tickets only grow; 0 means there is nothing to wait for.
type Log interface {
	Append(recs []Record) (ticket uint64)
	Wait(ticket uint64) error
	// Err reports a write failure the log has not recovered from (a full
	// disk). While it is set the server refuses writes with MISCONF.
	Err() error
}

// FsyncLog is a Log that can say whether a ticket's records are on disk
// whatever its fsync policy, for WAITAOF: under appendfsync everysec Wait
// returns once they are written, before the fsync.
type FsyncLog interface {
	// Fsynced reports whether the records of ticket, and all before
	// them, are fsynced.
	Fsynced(ticket uint64) bool
}

// Applied is what applying one record gave.
type Applied struct {
	Reply []byte // its reply, when ApplyBatch was asked for replies
	Err   error  // the command failed (an *ApplyError: its error reply)
}

// ApplyError is a record whose command answered with an error reply: on
// replay or on a replica, the state has diverged from where it was
// logged, or the log is wrong.
type ApplyError struct {
	Argv  [][]byte
	Reply string // the error reply, "ERR ..." or "WRONGTYPE ..."
}

func (e *ApplyError) Error() string {
	return fmt.Sprintf("server: applying %q failed: %s", e.Argv[0], e.Reply)
}

// ApplyBatch applies records to the node's shard (Shard.ApplyBatch).
func (s *Server) ApplyBatch(recs []Record, proto int) ([]Applied, error) {
	return s.shard.ApplyBatch(recs, proto)
}

// ApplyBatch applies records in order under one hold of the lock: the
// path AOF replay takes for a frame and a Raft FSM will take for a
// committed entry. Live writes run the same handlers through the same
// execute. With proto 2 or 3 each Applied carries the record's reply in
// that protocol (the leader's apply answers its client); with 0 replies
// are not kept. A record that cannot be applied at all (a database out of
// range, not a write command) stops the batch with an error; a command
// that fails is reported in its Applied.
func (sh *Shard) ApplyBatch(recs []Record, proto int) ([]Applied, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	out := make([]Applied, len(recs))
	for i, rec := range recs {
		x, err := sh.applyLocked(rec, proto)
		if err != nil {
			return out[:i], err
		}
		if x.failed != "" {
			out[i].Err = &ApplyError{Argv: rec.Argv, Reply: x.failed}
		}
		if proto != 0 {
			out[i].Reply = bytes.Clone(x.w.Bytes())
		}
	}
	return out, nil
}

// Apply applies one record, failing if its command does (ApplyBatch).
func (s *Server) Apply(rec Record) error {
	applied, err := s.ApplyBatch([]Record{rec}, 0)
	if err == nil {
		err = applied[0].Err
	}
	return err
}

// applyLocked executes one record. Lock should be held.
func (sh *Shard) applyLocked(rec Record, proto int) (*Ctx, error) {
	return sh.applyAs(rec, proto, applyReplay)
}

// applyMode is how a record is applied.
type applyMode uint8

const (
	applyReplay applyMode = iota // a logged write: AOF replay, a follower
	// applyOwned: a client of this node waits on it (cluster mode,
	// propose.go), so a blocking command that finds nothing notes where
	// it would wait instead of answering a timeout. The state it leaves
	// is the same either way.
	applyOwned
	// applyInExec: a command of a transaction a client of this node
	// waits on: reads run too (for their replies), and nothing blocks.
	applyInExec
)

// applyAs executes one record in mode. Lock should be held.
func (sh *Shard) applyAs(rec Record, proto int, mode applyMode) (*Ctx, error) {
	if rec.DB < 0 || rec.DB >= len(sh.dbs) {
		return nil, fmt.Errorf("server: record for database %d, only %d configured", rec.DB, len(sh.dbs))
	}
	if len(rec.Argv) == 0 {
		return nil, fmt.Errorf("server: empty record")
	}
	cmd, errText := sh.node.lookupCommand(rec.Argv)
	if cmd == nil {
		return nil, fmt.Errorf("server: cannot apply %q: %s", rec.Argv[0], errText)
	}
	if cmd.Flags&FlagWrite == 0 && mode != applyInExec {
		return nil, fmt.Errorf("server: cannot apply %q: not a write command", rec.Argv[0])
	}
	if rec.Time > sh.lastTime {
		sh.lastTime = rec.Time
	}
	sh.replayW.Reset()
	sh.replayW.Proto = max(proto, 2)
	x := &sh.replayCtx
	*x = Ctx{s: sh.node, w: &sh.replayW, db: sh.dbs[rec.DB], argv: rec.Argv, cmd: cmd, now: rec.Time, replay: true, owned: mode == applyOwned, inExec: mode == applyInExec}
	x.counted = mode != applyReplay // a client of this node waits on it
	start := time.Time{}
	if x.counted {
		start = time.Now()
	}
	sh.node.execute(x, start)   // replay keeps no statistics
	sh.pending = sh.pending[:0] // replayed records are logged already
	sh.pendingChanges = 0
	return x, nil
}

// propagate queues x's write for the log. Blocking commands that were
// served log their non-blocking form (x.logArgv). Lock should be held.
func (sh *Shard) propagate(x *Ctx) {
	if x.replay || x.dirty == 0 {
		return
	}
	argv := x.argv
	if x.logArgv != nil {
		argv = x.logArgv
	}
	sh.pending = append(sh.pending, Record{Time: x.now, DB: x.db.index, Argv: argv})
	if x.c != nil && !x.c.logged {
		x.c.logged = true
		sh.writers = append(sh.writers, x.c)
	}
	if x.dirty > x.bookkeeping {
		sh.pendingChanges++
	}
}

// logDirect queues a write the server makes by itself (an expired key's
// DEL), outside any client command. Lock should be held.
func (sh *Shard) logDirect(db int, now int64, argv ...[]byte) {
	sh.pending = append(sh.pending, Record{Time: now, DB: db, Argv: argv})
	sh.pendingChanges++
}

// commit hands the records queued since the last commit to the log,
// queues the replies of the blocked clients the commands served to be
// written, and returns the commit's ticket (0: it logged nothing). Lock
// should be held.
//
// A reply that shows data waits for more than its own records: the
// newest ticket the log has handed out (seenTicket), since it may show
// any write applied before it — a read of a key another client just
// pushed to — so it leaves only once every such write is durable (DESIGN
// principle 3). That is what Redis does too: every reply of an
// event-loop pass waits for the pass's fsync.
func (s *Server) commit() (ticket uint64) {
	sh := s.shard
	ticket = sh.logPending()
	for _, c := range sh.served {
		c.ranCommand = true // its reply shows what its re-run took
		s.loop.markDirty(c)
		s.loop.markRunnable(c) // the commands it pipelined behind
	}
	clear(sh.served)
	sh.served = sh.served[:0]
	for _, c := range s.loop.dirty {
		if c.ranCommand {
			// A refusal shows no data, so a client whose commands were
			// all refused (MISCONF while the disk is full) waits for
			// nothing but its own writes.
			c.durable = max(c.durable, sh.seenTicket())
			c.ranCommand = false
		}
	}
	return ticket
}

// logPending hands the records queued since the last commit to the log
// and returns their ticket (0: none). Lock should be held.
func (sh *Shard) logPending() (ticket uint64) {
	sh.dirty += sh.pendingChanges
	sh.pendingChanges = 0
	if len(sh.pending) > 0 {
		if sh.log != nil {
			ticket = sh.log.Append(sh.pending)
			sh.lastTicket = ticket
		}
		clear(sh.pending) // drop references to argv buffers
		sh.pending = sh.pending[:0]
	}
	// Whoever logs the records (a commit, or a snapshot frozen mid-pass)
	// tells their writers the ticket: WAITAOF waits for it.
	for _, c := range sh.writers {
		c.woff, c.logged = max(c.woff, ticket), false
	}
	clear(sh.writers)
	sh.writers = sh.writers[:0]
	return ticket
}

// seenTicket is what a reply that shows data waits for: every write
// applied so far. Lock should be held.
func (sh *Shard) seenTicket() uint64 { return sh.lastTicket }
