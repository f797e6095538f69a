package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/record"
	"github.com/redstream/redstream/resp"
)

// In cluster mode a write is not executed where it arrives. Its client's
// turn turns it into a record, {time, db, argv}, stamped with the
// leader's clock; the records of a pass go to the group as one entry
// (Cluster.Propose), and the client waits (awaiting). Every node applies
// the committed entry (ApplyEntry); on the node that proposed it, the
// apply writes each record's reply to its client. So the keyspace never
// holds a write the group has not committed, and a reply is the apply's.
//
// An entry is a header, then the records (package record):
//
//	+-----+----------+-------+------------+---------+------------------+
//	| 'P' | uvarint  | node  | uvarint    | uvarint | protos: n bytes  |  records...
//	|     | len(id)  | id    | seq        | n       | (0: no reply)    |
//	+-----+----------+-------+------------+---------+------------------+
//
// node id and seq name the proposal in the process that made it: the id
// is the process's run_id, new at each start, so an entry a node proposed
// before a restart and sees committed after it answers nobody (its seq
// counts from 1 again). A proto is the RESP version the record's client
// speaks, 0 for a write the server makes itself, with protoInTx set for a
// transaction's records.
//
// A read on the leader waits too, for one VerifyLeader per pass (a
// majority still follows this node), then runs: a deposed leader that has
// not noticed yet answers no read from its stale state.

// proposal is one record a client of this node waits on.
type proposal struct {
	c      *Client
	proto  int
	silent bool // CLIENT REPLY OFF/SKIP: apply, but write no reply
	waiter bool // the re-try of a blocked client's command (serveKey)
	// A transaction's commands (proposeExec): the first carries their
	// number (the reply's array header), the last ends the wait.
	txHead         int
	txPart, txLast bool
	// fan: one of the proposals of a command sent to several groups
	// (keyless.go), answered once all of them are done.
	fan *fanout
	// uncounted: applied without counting a call in INFO, as a record
	// nobody here waits on is (a fanned-out command counts once).
	uncounted bool
	// movingSlot is 1 + the slot of a write counted in its group's
	// moveOut.inflight (moves.go), 0 for any other.
	movingSlot int32
}

// pendingRead is a read waiting for its pass's leadership check.
type pendingRead struct {
	c      *Client
	argv   [][]byte
	silent bool // CLIENT REPLY OFF/SKIP: run, but write no reply
	ask    int  // 1 + the slot of a command to answer -ASK once confirmed (moves.go); 0: a read
}

// proposer is the server's share of cluster mode. Guarded by shard.mu.
type proposer struct {
	recs     []Record
	owners   []proposal
	reads    []pendingRead
	inflight map[uint64][]proposal // proposals sent, by seq, until applied or failed
	held     []*heldExec           // watched EXECs waiting for inflight to drain (propose_watch.go)
	started  bool
	sending  bool          // an entry is being handed to the log, the lock released (Settled)
	results  chan inflight // to the goroutine that waits on them
}

type inflight struct {
	seq  uint64
	wait func() error
}

// Errors a Cluster's wait returns.
var (
	// ErrNotProposed means the entry will never be applied: it never
	// reached the log (this node does not lead), or another entry took
	// its place there for good. Nothing of it was applied, and it is
	// safe to retry. Its clients' replies, if it was applied, came from
	// the apply, before the wait returned.
	ErrNotProposed = errors.New("not applied: this node does not lead the group")
)

const (
	errUnknownOutcome = "UNKNOWN the write was proposed but its outcome is unknown (leadership changed or the group did not answer in time); it may or may not have been applied"
	errClusterDown    = "CLUSTERDOWN The cluster is down"
	errReadOnlyNode   = "READONLY You can't write against a read only replica."
)

// routeInCluster decides where a command runs in cluster mode: here at
// once (keyless reads, anything READONLY allows), through the log of g,
// the group of its keys' slot (writes on g's leader), after g's
// leadership check (reads on g's leader), or elsewhere (a redirect). It
// reports whether it took the command; one it did not take runs here, in
// g's database. slot is -1 for a command without keys. Lock should be
// held.
func (c *Client) routeInCluster(cmd *Command, argv [][]byte, g *clusterGroup, slot int, start time.Time) bool {
	s := c.s
	switch cmd.Name {
	case "watch":
		if g != nil && g.cl.Leading() {
			return false // the leader keeps the watches: EXEC checks them there (propose_watch.go)
		}
	case "exec":
		return c.proposeExec(start)
	}
	write := cmd.Flags&FlagWrite != 0
	if slot < 0 && !write {
		return false // PING, INFO, CLUSTER, DBSIZE ...: this node's own (keyless.go)
	}
	if slot < 0 && isFlush(cmd) {
		s.proposeToLed(c, argv, s.shard.nowFrom(start)) // each group's database (keyless.go)
		return true
	}
	if g == nil {
		c.reject(s.slotRedirect(slot))
		return true
	}
	if g.cl.Leading() && s.moving(slot, g) {
		switch s.verdict(g, slot, cmd, argv, s.shard.dbs[g.db+c.db]) {
		case tryAgain:
			c.reject(errSlotMoving)
			return true
		case askTarget:
			// Answered once a majority confirms this node leads g: a
			// deposed leader's keyspace may lack keys of the slot.
			g.prop.reads = append(g.prop.reads, pendingRead{c: c, argv: cloneArgv(argv), ask: slot + 1})
			c.awaiting++
			c.awaitingOther++
			return true
		}
	}
	if !g.cl.Leading() {
		switch {
		case !write && c.readonly:
			return false // a stale read, as asked
		case slot < 0:
			c.reject(errReadOnlyNode)
		default:
			c.reject(s.redirect(g, slot))
		}
		return true
	}
	if !write {
		g.prop.reads = append(g.prop.reads, pendingRead{c: c, argv: cloneArgv(argv)})
		c.awaiting++
		c.awaitingOther++
		return true
	}
	s.propose(g, c, argv, s.shard.nowFrom(start), false)
	return true
}

// txGroup is the group of c's transaction's keys (the first group for a
// transaction without keys), nil if it is not hosted here. Lock should be
// held.
func (c *Client) txGroup() *clusterGroup {
	if c.multi.asking {
		if g := c.s.movingTo(c.multi.slot - 1); g != nil {
			return g
		}
		// Not moving here (the move is over, or this node's map is
		// behind): the slot's own group. Only a client replaying a
		// transaction after -ASK sends one after ASKING; a mover's
		// RESTORE is a single command, which dispatch never lets reach
		// the source.
	}
	return c.s.groupOfSlot(c.multi.slot - 1)
}

// proposeExec runs EXEC in cluster mode: a transaction with writes goes
// to the group as consecutive records of one entry, applied under one
// hold of the lock on every node (atomic), its reads run by the leader's
// apply for their replies and skipped by followers; one with reads only
// is a read. One whose client watches keys and that has writes first
// waits for the entries in flight (propose_watch.go). It reports whether
// it took the command. Lock should be held.
func (c *Client) proposeExec(start time.Time) bool {
	s, tx := c.s, c.multi
	if tx == nil || tx.aborted || len(tx.cmds) == 0 {
		return false // EXEC's own errors, or an empty array
	}
	writes := false
	for _, q := range tx.cmds {
		writes = writes || q.cmd.Flags&FlagWrite != 0
	}
	g := c.txGroup()
	if g == nil {
		msg := s.slotRedirect(tx.slot - 1)
		c.multi = nil
		s.unwatchAll(c)
		c.reject(msg)
		return true
	}
	leading := g.cl.Leading()
	if leading && s.moving(tx.slot-1, g) {
		switch s.txVerdict(g, c) {
		case tryAgain:
			c.multi = nil
			s.unwatchAll(c)
			c.reject(errSlotMoving)
			return true
		case askTarget:
			// Answered once a majority confirms this node leads g, as a
			// command's -ASK is (routeInCluster).
			g.prop.reads = append(g.prop.reads, pendingRead{c: c, argv: [][]byte{[]byte("EXEC")}, ask: tx.slot})
			c.awaiting++
			c.awaitingOther++
			return true
		}
	}
	switch {
	case !writes && !leading && c.readonly:
		return false // stale reads, as asked: execCommand runs them here
	case !writes && leading:
		// Reads only: run by execCommand once the pass's leadership check
		// has passed, like any read on the leader.
		g.prop.reads = append(g.prop.reads, pendingRead{c: c, argv: [][]byte{[]byte("EXEC")}})
		c.awaiting++
		c.awaitingOther++
		return true
	case !leading:
		c.multi = nil
		s.unwatchAll(c)
		c.reject(errReadOnlyNode)
		return true
	case len(c.watching) > 0:
		s.holdWatchedExec(g, c) // checked once nothing is in flight
		return true
	}
	c.multi = nil
	s.countExec()
	recs, owners := txProposals(c, tx, s.shard.nowFrom(start))
	s.countMovingTx(g, recs, owners)
	p := &g.prop
	p.recs = append(p.recs, recs...)
	p.owners = append(p.owners, owners...)
	c.awaiting++
	c.proposingTo = g
	c.wrote(g)
	s.loop.wake()
	return true
}

// countExec counts an EXEC that runs through the log, as execute counts
// one that runs here: its commands are counted by their applies. Lock
// should be held.
func (s *Server) countExec() {
	s.commands["exec"].stat.calls++
	s.stats.commands++
}

// txProposals are the records of c's transaction, sharing the time now,
// and their proposals: the first carries the reply's array header, the
// last ends c's wait.
func txProposals(c *Client, tx *txState, now int64) ([]Record, []proposal) {
	recs := make([]Record, len(tx.cmds))
	owners := make([]proposal, len(tx.cmds))
	for i, q := range tx.cmds {
		recs[i] = Record{Time: now, DB: c.db, Argv: q.argv}
		owners[i] = proposal{c: c, proto: c.out.Proto, txPart: true, txLast: i == len(tx.cmds)-1}
	}
	owners[0].txHead = len(tx.cmds)
	return recs, owners
}

// readRedirect is the error for a read of group g the node found it may
// not serve: the leader of its first key, or of a transaction's first
// keyed command. Lock should be held.
func (s *Server) readRedirect(g *clusterGroup, c *Client, argv [][]byte) string {
	cmds := [][][]byte{argv}
	if c.multi != nil { // EXEC: its queued commands
		cmds = cmds[:0]
		for _, q := range c.multi.cmds {
			cmds = append(cmds, q.argv)
		}
		c.multi = nil
	}
	for _, a := range cmds {
		if cmd, _ := s.lookupCommand(a); cmd != nil {
			if keys := cmd.keyPositions(a); len(keys) > 0 {
				return s.redirect(g, KeySlot(a[keys[0]]))
			}
		}
	}
	return errClusterDown
}

// redirect is the error that sends a client to the leader of g, the
// group of slot.
func (s *Server) redirect(g *clusterGroup, slot int) string {
	if addr := leaderAddr(g); addr != "" {
		return "MOVED " + strconv.Itoa(slot) + " " + addr
	}
	return errClusterDown
}

// leaderAddr is the client address of g's leader, "" if none is known.
func leaderAddr(g *clusterGroup) string {
	for _, m := range g.cl.Members() {
		if m.Leader {
			return m.Addr
		}
	}
	return ""
}

// slotRedirect is the error for a slot whose group this node does not
// host: -MOVED to that group's leader as the cluster map names it
// (MapSlots), or -CLUSTERDOWN when the map names none. Lock should be
// held.
func (s *Server) slotRedirect(slot int) string {
	if slot < 0 || s.slotRemote == nil || s.slotRemote[slot] == nil {
		return errClusterDown
	}
	return s.redirect(s.slotRemote[slot], slot)
}

// proposable reports whether argv may be proposed behind c's awaited
// proposals: only a write that will be proposed at once, to the group
// they went to, queues behind them; anything else waits for their
// replies (stashed), so replies stay in order. A write the checks would
// refuse (CROSSSLOT, OOM, ...) waits too: its refusal is a reply.
func (c *Client) proposable(argv [][]byte) bool {
	s := c.s
	if s.cluster == nil || c.multi != nil || c.awaitingOther > 0 {
		return false
	}
	cmd, errText := s.lookupCommand(argv)
	if errText != "" || cmd.Flags&FlagWrite == 0 || s.refusal(c, cmd) != "" {
		return false
	}
	slot, ok := commandSlot(cmd, argv, -1)
	if !ok {
		return false
	}
	g := s.groupOfSlot(slot)
	// A write of a slot moving away may be answered -ASK or -TRYAGAIN
	// (moves.go): it waits like a refusal.
	return g != nil && g == c.proposingTo && g.cl.Leading() && !s.moving(slot, g)
}

// propose queues argv, at time now, as a record of g's entry of the pass,
// for c to wait on. Lock should be held.
func (s *Server) propose(g *clusterGroup, c *Client, argv [][]byte, now int64, waiter bool) {
	p := &g.prop
	p.recs = append(p.recs, Record{Time: now, DB: c.db, Argv: cloneArgv(argv)})
	p.owners = append(p.owners, proposal{c: c, proto: c.out.Proto, waiter: waiter})
	s.countMoving(g, argv, &p.owners[len(p.owners)-1])
	c.wrote(g)
	if waiter {
		c.blocked.inflight = true
	} else {
		c.awaiting++
		c.proposingTo = g
	}
	s.loop.wake()
}

// queueMark is how long each group's queues were before a command was
// dispatched (silenceSince).
type queueMark struct{ owners, reads, held int }

// queueMarks notes the length of every group's queues. Lock should be
// held.
func (s *Server) queueMarks() []queueMark {
	if s.cluster == nil {
		return nil
	}
	marks := make([]queueMark, len(s.groups))
	for i, g := range s.groups {
		marks[i] = queueMark{len(g.prop.owners), len(g.prop.reads), len(g.prop.held)}
	}
	return marks
}

// silenceSince drops the replies of the records, reads and held EXECs
// queued since marks (queueMarks): what the command just dispatched
// queued (CLIENT REPLY OFF/SKIP). Only those: the pass's earlier ones
// belong to other clients or commands. Lock should be held.
func (s *Server) silenceSince(marks []queueMark) {
	for i, m := range marks {
		p := &s.groups[i].prop
		for j := m.owners; j < len(p.owners); j++ {
			p.owners[j].silent = true
		}
		for j := m.reads; j < len(p.reads); j++ {
			p.reads[j].silent = true
		}
		for j := m.held; j < len(p.held); j++ {
			p.held[j].silent = true
		}
	}
}

// sendProposals hands each group the pass's records for it as one entry
// (group commit per group) and starts the group's leadership check for
// the pass's reads of it. Lock should be held; it is let go while an
// entry is handed over.
func (s *Server) sendProposals() {
	for _, g := range s.groups {
		s.sendGroupProposals(g)
	}
}

// proposalsWaiting reports whether a group has writes or reads queued
// that the next pass would send. The pass lets the lock go while it hands
// an entry over (sendGroupProposals), and another goroutine may queue one
// then (an apply's blocked-client re-try, a mover's deletes) for a group
// the pass has done with: its wake finds the loop active and relies on it
// to look before it sleeps. Writes behind a held EXEC wait for the
// entries in flight, whose ends wake the loop. Lock should be held.
func (s *Server) proposalsWaiting() bool {
	for _, g := range s.groups {
		if p := &g.prop; len(p.held) == 0 && (len(p.recs) > 0 || len(p.reads) > 0) {
			return true
		}
	}
	return false
}

func (s *Server) sendGroupProposals(g *clusterGroup) {
	p := &g.prop
	if !p.started && (len(p.recs) > 0 || len(p.reads) > 0 || len(p.held) > 0) {
		p.started = true
		p.inflight = make(map[uint64][]proposal)
		p.results = make(chan inflight, 1024)
		go s.waitProposals(g, p.results)
	}
	if reads := p.reads; len(reads) > 0 {
		p.reads = nil
		go s.verifyThenRead(g, reads)
	}
	if len(p.held) > 0 && !s.releaseHeld(g) {
		return // a watched EXEC waits for what is in flight: the rest waits behind it
	}
	if len(p.recs) == 0 {
		return
	}
	s.seq++
	seq := s.seq
	entry := encodeEntry(s.runID, seq, p.owners, p.recs)
	p.inflight[seq] = p.owners
	p.recs, p.owners = nil, nil
	p.sending = true
	s.shard.mu.Unlock()
	wait := g.cl.Propose(entry)
	p.results <- inflight{seq: seq, wait: wait}
	s.shard.mu.Lock()
	p.sending = false
}

// waitProposals waits for each entry sent to g, in order, and answers the
// clients of one that failed; an applied one was answered by its apply.
func (s *Server) waitProposals(g *clusterGroup, results <-chan inflight) {
	for r := range results {
		err := r.wait()
		if err == nil {
			continue
		}
		s.shard.mu.Lock()
		owners, ok := s.takeInflight(g, r.seq)
		if ok {
			msg := errUnknownOutcome
			if errors.Is(err, ErrNotProposed) {
				msg = errClusterDown
			}
			for _, o := range owners {
				s.failProposal(o, msg)
			}
		}
		s.shard.mu.Unlock()
	}
}

// failProposal answers a proposal that was not applied. Lock should be
// held.
func (s *Server) failProposal(o proposal, msg string) {
	c := o.c
	if c == nil || o.txPart && !o.txLast {
		return // the server's own write; a transaction is answered once
	}
	if o.fan != nil {
		s.fanFailed(o, msg)
		return
	}
	if o.waiter {
		if b := c.blocked; b != nil && b.inflight {
			b.inflight = false
			s.unblock(c)
			c.out.Error(msg)
			c.answered()
		}
		return
	}
	c.awaiting--
	if c.fd < 0 {
		return
	}
	if !o.silent {
		c.out.Error(msg)
	}
	c.answered()
}

// verifyThenRead runs reads of g, in g's database, once a majority has
// confirmed this node still leads g; if it does not, they are
// redirected.
func (s *Server) verifyThenRead(g *clusterGroup, reads []pendingRead) {
	err := g.cl.VerifyLeader()
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	for _, r := range reads {
		c := r.c
		c.awaiting--
		c.awaitingOther--
		if c.fd < 0 {
			continue
		}
		mark := c.out.Mark()
		switch {
		case err != nil:
			c.out.Error(s.readRedirect(g, c, r.argv))
		case r.ask > 0:
			c.out.Error(s.askConfirmed(g, c, r.ask-1, r.argv))
		case !s.readServedHere(g, c, r.argv):
			if c.multi != nil { // EXEC of reads
				c.multi = nil
				s.unwatchAll(c)
			}
			c.out.Error(errSlotMoving)
		default:
			cmd, _ := s.lookupCommand(r.argv)
			start := time.Now()
			x := c.newCtx(cmd, r.argv, start)
			x.db = s.shard.dbs[g.db+c.db]
			c.ranCommand = true
			s.execute(x, start)
			if x.blockKeys != nil {
				s.blockClient(c, x) // XREAD BLOCK: a read waits here
			}
		}
		if r.silent && c.blocked == nil {
			c.out.Truncate(mark)
		}
		c.answered()
	}
	s.loop.wake()
}

// ApplyEntry applies one committed entry of the group whose state is
// database 0 (ApplyEntryAt).
func (s *Server) ApplyEntry(data []byte) error { return s.ApplyEntryAt(0, data) }

// ApplyEntryAt applies one committed entry (a group's state machine
// calls it, in log order, on every node) to the group whose state starts
// at database base: a record of database d is applied in database
// base+d. Clients in cluster mode see database 0 only, so a group's
// records carry 0 and land in the group's own database, whichever group
// proposed them (replication/PARTITIONS.md §1). On the node that
// proposed the entry, each record's reply goes to the client waiting on
// it. An error means the entry cannot be applied at all: the log is
// damaged.
func (s *Server) ApplyEntryAt(base int, data []byte) error {
	node, seq, protos, recs, err := parseEntry(data)
	if err != nil {
		return err
	}
	if base != 0 {
		for i := range recs {
			recs[i].DB += base
		}
	}
	sh := s.shard
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var owners []proposal
	if g := s.groupOfDB(base); node == s.runID && g != nil {
		owners, _ = s.takeInflight(g, seq)
	}
	if owners != nil && len(owners) != len(recs) {
		return fmt.Errorf("server: entry %d has %d records for %d proposals", seq, len(recs), len(owners))
	}
	for i, rec := range recs {
		inTx := protos[i]&protoInTx != 0
		var o *proposal
		proto, mode := 0, applyReplay
		if owners != nil {
			o = &owners[i]
			proto, mode = int(protos[i]&^protoInTx), applyOwned
			switch {
			case inTx:
				mode = applyInExec
			case o.uncounted:
				mode = applyReplay
			}
		} else if inTx && !s.isWrite(rec.Argv) {
			continue // a transaction's read: only its client needs its reply
		}
		x, err := sh.applyAs(rec, proto, mode)
		if err != nil {
			return err
		}
		if o != nil {
			s.answerApplied(*o, x)
		}
	}
	s.serveReady()
	return nil
}

// answerApplied gives a proposal's client what its record's apply
// answered, or makes it wait when the record was a blocking command that
// found nothing. Lock should be held.
func (s *Server) answerApplied(o proposal, x *Ctx) {
	c := o.c
	if c == nil {
		return // the server's own write (giveBack)
	}
	if o.fan != nil {
		s.fanApplied(o, x)
		return
	}
	if o.waiter {
		b := c.blocked
		if b != nil {
			defer s.resignalLists(b.db, b.keys) // what it did not take may serve the next
		}
		if b == nil || !b.inflight {
			if c.fd < 0 && !x.stillBlocked {
				s.giveBack(x) // it left while its re-try was in the log
			}
			return
		}
		b.inflight = false
		if x.stillBlocked {
			if b.expired {
				s.unblock(c)
				c.out.NullArray()
				s.countUnblocked(b, false)
				c.answered()
			}
			return
		}
		s.unblock(c)
		if c.replyMode == replyOn {
			c.out.Raw(x.w.Bytes())
		}
		c.answered()
		return
	}
	if o.txPart {
		if c.fd >= 0 && !o.silent {
			if o.txHead > 0 {
				c.out.Array(o.txHead)
			}
			c.out.Raw(x.w.Bytes())
		}
		if o.txLast {
			c.awaiting--
			if c.fd >= 0 {
				c.answered()
			}
		}
		return
	}
	c.awaiting--
	if c.fd < 0 {
		return
	}
	if x.stillBlocked {
		s.blockClient(c, x)
		s.loop.wake() // to sleep no longer than its timeout
		return
	}
	if !o.silent {
		c.out.Raw(x.w.Bytes())
	}
	c.answered()
}

// resignalLists marks keys that still hold a list ready again once a
// waiter's re-try is answered: serveKey re-tries only as many waiters as
// a list holds elements, so what this one did not take (it waited on
// several keys, or lost a race) goes to the next waiter. Only non-empty
// lists: a re-try finds one empty only if it is, so this ends. Lock
// should be held.
func (s *Server) resignalLists(db int, keys []string) {
	d := s.shard.dbs[db]
	for _, k := range keys {
		if o := d.keys[k]; o != nil {
			if l, ok := o.value.(*listpack.Quicklist); ok && l.Len() > 0 {
				s.shard.signalReady(d, []byte(k))
			}
		}
	}
}

// giveBack returns what a blocked client's re-try popped when the client
// was gone before the reply could reach it: a client that disconnects
// while blocked takes nothing. BLPOP, BRPOP and BLMPOP push the elements
// back to the end they came from, in their order (other pops may have run
// between, so their place among the rest can change). BLMOVE's element is
// already in its destination and XREADGROUP's entries are pending in the
// group, so nothing is lost there. Lock should be held.
func (s *Server) giveBack(x *Ctx) {
	left := false
	switch x.cmd.Name {
	case "blpop":
		left = true
	case "brpop":
	case "blmpop":
		n, ok := resp.ParseInt(x.argv[2])
		if !ok || int(n)+3 >= len(x.argv) {
			return
		}
		left = bytes.EqualFold(x.argv[3+n], []byte("left"))
	default:
		return
	}
	got := bulksOf(x.w.Bytes()) // [key, element...]
	if len(got) < 2 {
		return // nothing was taken
	}
	push := []byte("RPUSH")
	if left {
		push = []byte("LPUSH")
	}
	argv := [][]byte{push, got[0]}
	for i := len(got) - 1; i >= 1; i-- { // the first popped ends nearest its end
		argv = append(argv, got[i])
	}
	if g := s.groupOfDB(x.db.index); g != nil {
		s.proposeOwn(g, argv...)
	}
}

// bulksOf returns the bulk strings of a reply, at any depth, in order.
func bulksOf(reply []byte) [][]byte {
	var out [][]byte
	for len(reply) > 0 {
		eol := bytes.Index(reply, []byte("\r\n"))
		if eol < 0 {
			return out
		}
		line := reply[:eol]
		reply = reply[eol+2:]
		if len(line) == 0 || line[0] != '$' {
			continue // an array's header, or another type: no bulk
		}
		n, ok := resp.ParseInt(line[1:])
		if !ok || n < 0 || int(n)+2 > len(reply) {
			continue
		}
		out = append(out, reply[:n])
		reply = reply[n+2:]
	}
	return out
}

// proposeOwn queues a write the server makes by itself, with nobody
// waiting on its reply, to g, the group whose database its key is in.
// Lock should be held.
func (s *Server) proposeOwn(g *clusterGroup, argv ...[]byte) {
	p := &g.prop
	p.recs = append(p.recs, Record{Time: s.shard.now(), Argv: cloneArgv(argv)})
	p.owners = append(p.owners, proposal{})
	s.loop.wake()
}

// protoInTx marks, in an entry's proto byte, a record of a transaction.
const protoInTx = 0x80

// isWrite reports whether argv is a write command. Lock should be held.
func (s *Server) isWrite(argv [][]byte) bool {
	cmd, _ := s.lookupCommand(argv)
	return cmd != nil && cmd.Flags&FlagWrite != 0
}

// encodeEntry encodes a pass's proposals as one log entry.
func encodeEntry(node string, seq uint64, owners []proposal, recs []Record) []byte {
	buf := make([]byte, 0, 64+len(recs)*64)
	buf = append(buf, 'P')
	buf = binary.AppendUvarint(buf, uint64(len(node)))
	buf = append(buf, node...)
	buf = binary.AppendUvarint(buf, seq)
	buf = binary.AppendUvarint(buf, uint64(len(recs)))
	for _, o := range owners {
		b := byte(o.proto)
		if o.txPart {
			b |= protoInTx
		}
		buf = append(buf, b)
	}
	return record.Append(buf, recs...)
}

// errBadEntry is an entry that is not one encodeEntry made.
var errBadEntry = errors.New("server: malformed log entry")

func parseEntry(p []byte) (node string, seq uint64, protos []byte, recs []Record, err error) {
	if len(p) == 0 || p[0] != 'P' {
		return "", 0, nil, nil, errBadEntry
	}
	p = p[1:]
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)-k) {
		return "", 0, nil, nil, errBadEntry
	}
	node, p = string(p[k:k+int(n)]), p[k+int(n):]
	seq, k = binary.Uvarint(p)
	if k <= 0 {
		return "", 0, nil, nil, errBadEntry
	}
	p = p[k:]
	n, k = binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)-k) {
		return "", 0, nil, nil, errBadEntry
	}
	protos, p = p[k:k+int(n)], p[k+int(n):]
	recs, err = record.Parse(p)
	if err != nil {
		return "", 0, nil, nil, fmt.Errorf("%w: %w", errBadEntry, err)
	}
	if len(recs) != len(protos) {
		return "", 0, nil, nil, fmt.Errorf("%w: %d records, %d protocols", errBadEntry, len(recs), len(protos))
	}
	return node, seq, protos, recs, nil
}

// LeadershipChanged is told when this node starts or stops leading its
// first group (GroupLeadershipChanged).
func (s *Server) LeadershipChanged(leading bool) { s.GroupLeadershipChanged(firstGroup, leading) }

// GroupLeadershipChanged is told when this node starts or stops leading
// group id. A node that stops leading it redirects the clients blocked on
// its keys: they wait on the leader, where writes are served. Their
// re-tries in flight, if any, are answered when the log says what became
// of them.
func (s *Server) GroupLeadershipChanged(id uint16, leading bool) {
	if leading {
		return
	}
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	g := s.groupByID(id)
	if g == nil {
		return
	}
	for _, c := range s.clients {
		b := c.blocked
		if b == nil || b.inflight || b.cmd.Flags&FlagWrite == 0 || len(b.keys) == 0 || b.db != g.db+c.db {
			continue
		}
		s.unblock(c)
		c.out.Error(s.redirect(g, KeySlot([]byte(b.keys[0]))))
		c.answered()
	}
}
