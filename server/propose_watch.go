package server

import (
	"slices"
	"time"
)

// A watched transaction in cluster mode: WATCH, MULTI, writes, EXEC.
//
// On one node EXEC checks its client's watches and runs its commands
// under one hold of the lock, so no write falls between the check and the
// commands. In cluster mode the leader checks, but the commands run when
// their entry is applied, and the watches are marked (touchWatched) only
// when a write is applied. A write this leader proposed before the EXEC
// and has not applied yet would come before the transaction in the log,
// change a watched key, and not have marked the client at the check.
// Followers cannot check either: the watches live on the leader.
//
// So such an EXEC is held (holdWatchedExec) until every entry this leader
// has proposed is applied or has failed: nothing in flight. Meanwhile the
// records of everyone else stay queued in the group's prop.recs, in their order. Then
// the leader checks as execCommand does (casDirty, a watched key expired)
// and, if the transaction may run, proposes its records first in the next
// entry, the held records after them. Every entry before that one in the
// log was applied here before the check: this leader's own (drained), and
// those of earlier terms (applied before it began to serve: the Barrier
// Leading waits for). A write that touched a watched key has marked the
// client; a write not yet applied comes after the transaction in the log.
// One held EXEC proposes at a time: the next waits for its entry, whose
// writes may touch the next one's keys.
//
// An EXEC of reads only is not held: the check and the reads run together
// on the keyspace after the pass's leadership check (execCommand), so a
// write the reads do not see has not marked the client either, and both
// order the EXEC before it.
//
// The wait is bounded by cluster-node-timeout. A leader that has not
// heard from a majority within half of it steps down and fails what it
// has in flight, so a drain longer than that means the group is not
// committing (a stalled disk): the EXEC answers -CLUSTERDOWN, nothing of
// it was proposed, retrying is safe, and the held records go. A node that
// stopped leading meanwhile answers -MOVED to the new leader, as for any
// write it did not propose.

// heldExec is a watched EXEC waiting for the entries in flight.
type heldExec struct {
	c      *Client
	timer  *time.Timer // its bound: expireHeldExec
	silent bool        // CLIENT REPLY OFF/SKIP: decide, but write no reply
}

// execArgv is what a held EXEC's client sent, for readRedirect.
var execArgv = [][]byte{[]byte("EXEC")}

// holdWatchedExec makes c's EXEC wait for the entries in flight to g,
// the group of its keys; c runs nothing else until it is answered. Lock
// should be held.
func (s *Server) holdWatchedExec(g *clusterGroup, c *Client) {
	h := &heldExec{c: c}
	bound := time.Duration(s.cfg.ClusterNodeTimeout) * time.Millisecond
	h.timer = time.AfterFunc(bound, func() { s.expireHeldExec(g, h) })
	g.prop.held = append(g.prop.held, h)
	c.awaiting++
	c.awaitingOther++
}

// releaseHeld decides g's held EXECs once nothing is in flight to g, and
// reports whether g's queued records may be sent. Lock should be held.
func (s *Server) releaseHeld(g *clusterGroup) bool {
	p := &g.prop
	if len(p.inflight) > 0 {
		return false
	}
	for len(p.held) > 0 {
		h := p.held[0]
		p.held[0] = nil
		p.held = p.held[1:]
		h.timer.Stop()
		if s.decideHeldExec(g, h) {
			break // the next held EXEC waits for this one's writes
		}
	}
	return true
}

// decideHeldExec checks c's watches with every entry this leader
// proposed to g applied, and answers the EXEC or puts its records first
// in g's queue. It reports whether it proposed them. Lock should be held.
func (s *Server) decideHeldExec(g *clusterGroup, h *heldExec) (proposed bool) {
	c := h.c
	c.awaiting--
	c.awaitingOther--
	if c.fd < 0 {
		return false // gone: closeClient forgot its watches
	}
	p := &g.prop
	now := s.shard.now()
	if len(p.recs) > 0 {
		now = p.recs[0].Time // before the records it goes ahead of: the log's times stay in order
	}
	mark := c.out.Mark()
	switch {
	case !g.cl.Leading():
		s.refuseHeldExec(g, c)
	case s.moving(c.multi.slot-1, g) && s.txVerdict(g, c) != serveHere:
		c.multi = nil
		s.unwatchAll(c)
		c.out.Error(errSlotMoving)
		c.answered()
	case c.casDirty || s.watchedKeyExpired(c, now):
		s.countExec()
		c.multi = nil
		s.unwatchAll(c)
		c.out.NullArray()
		c.answered()
	default:
		s.countExec()
		tx := c.multi
		c.multi = nil
		s.unwatchAll(c)
		recs, owners := txProposals(c, tx, now)
		s.countMovingTx(g, recs, owners)
		for i := range owners {
			owners[i].silent = h.silent
		}
		p.recs = append(recs, p.recs...)
		p.owners = append(owners, p.owners...)
		c.awaiting++
		c.proposingTo = g
		c.wrote(g)
		return true
	}
	if h.silent {
		c.out.Truncate(mark)
	}
	return false
}

// expireHeldExec refuses a held EXEC whose wait passed its bound, and
// lets the records it held back go. Lock must not be held.
func (s *Server) expireHeldExec(g *clusterGroup, h *heldExec) {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	p := &g.prop
	i := slices.Index(p.held, h)
	if i < 0 {
		return // decided meanwhile
	}
	p.held = slices.Delete(p.held, i, i+1)
	c := h.c
	c.awaiting--
	c.awaitingOther--
	if c.fd >= 0 {
		mark := c.out.Mark()
		s.refuseHeldExec(g, c)
		if h.silent {
			c.out.Truncate(mark)
		}
	}
	s.loop.wake()
}

// refuseHeldExec answers a held EXEC that will not be proposed: -MOVED
// when this node no longer leads g, else -CLUSTERDOWN. Lock should be
// held.
func (s *Server) refuseHeldExec(g *clusterGroup, c *Client) {
	msg := errClusterDown
	if !g.cl.Leading() {
		msg = s.readRedirect(g, c, execArgv)
	}
	c.multi = nil
	s.unwatchAll(c)
	c.reject(msg)
	c.answered()
}

// takeInflight removes the proposals of this node's entry seq to g once
// it is applied or has failed. The last one out wakes the loop for g's
// held EXECs. Lock should be held.
func (s *Server) takeInflight(g *clusterGroup, seq uint64) (owners []proposal, ok bool) {
	p := &g.prop
	owners, ok = p.inflight[seq]
	delete(p.inflight, seq)
	g.uncountMoving(owners)
	if len(p.held) > 0 && len(p.inflight) == 0 {
		s.loop.wake()
	}
	return owners, ok
}
