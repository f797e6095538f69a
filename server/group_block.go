package server

import "time"

// Blocked XREADGROUP, beyond what blocking.go does for every blocking
// command:
//
//   - Redis ends its wait when its key is deleted, replaced by another
//     value or type, or its group destroyed, answering NOGROUP or
//     WRONGTYPE. A replacement signals its key (setKey), and so does a
//     deletion of a key a blocked XREADGROUP waits on: DB.groupWaits
//     counts them, for DB.remove and flush to check. serveKey lets
//     XREADGROUP re-run whatever the key holds. XGROUP DESTROY signals
//     its key itself.
//   - With CLAIM, a pending entry becoming idle enough can serve it with
//     no write at all: a timer re-runs it when the next entry will be.

// watchGroupWait registers a blocked XREADGROUP. Lock should be held.
func (s *Server) watchGroupWait(c *Client) {
	b := c.blocked
	db := s.shard.dbs[b.db]
	for _, k := range b.keys {
		db.groupWaits[k]++
	}
	s.armClaimWake(c)
}

// forgetGroupWait undoes watchGroupWait when the wait ends, before its
// keys are cleared. Lock should be held.
func (s *Server) forgetGroupWait(c *Client) {
	b := c.blocked
	db := s.shard.dbs[b.db]
	for _, k := range b.keys {
		if db.groupWaits[k]--; db.groupWaits[k] <= 0 {
			delete(db.groupWaits, k)
		}
	}
	if b.claim != nil {
		b.claim.Stop()
		b.claim = nil
	}
}

// armClaimWake sets (or resets) the timer of a blocked XREADGROUP CLAIM
// to when its next pending entry becomes idle enough; at that time the
// key is signalled and served like after a write, and the run's writes
// committed. Lock should be held.
func (s *Server) armClaimWake(c *Client) {
	b := c.blocked
	if b.claim != nil {
		b.claim.Stop()
		b.claim = nil
	}
	at := xreadgroupWakeAt(s, s.shard.dbs[b.db], b.argv)
	if at.IsZero() || (!b.deadline.IsZero() && !at.Before(b.deadline)) {
		return // nothing to claim before the wait ends anyway
	}
	b.claim = time.AfterFunc(time.Until(at)+time.Millisecond, func() {
		s.shard.mu.Lock()
		defer s.shard.mu.Unlock()
		if c.blocked != b || b.done {
			return
		}
		db := s.shard.dbs[b.db]
		for _, k := range b.keys {
			s.shard.signalReady(db, []byte(k))
		}
		s.serveReady()
		s.commit()
	})
}
