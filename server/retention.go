package server

import (
	"github.com/google/btree"
	"github.com/redstream/redstream/stream"
)

// Age retention (XCFGSET key MAXAGE ms [KEEPREF|DELREF|ACKED]): a stream
// with an age limit is trimmed by every XADD to it, at the record's time
// (cmd_stream.go), and by the sweeper here, which trims the streams
// nobody writes to. The sweeper decides by the clock, so it does not
// change anything itself: it issues XTRIM key MINID <cutoff> <policy>
// through writeOwn, an ordinary logged write that replay and followers
// apply as it is.
//
// Each DB keeps the keys of its streams with a limit (DB.aged), ordered,
// so the sweeper can go round them a bounded slice at a time. The set is
// derived: insert and remove (db.go), the only ways a value enters or
// leaves the keyspace, keep it, and XCFGSET adds to it. An entry may be
// stale (the limit turned off since); the sweeper drops those it meets.

// Sweeper bounds per cron tick (hz a second). At the default hz of 10,
// a thousand streams with a limit are each looked at every second, and
// a hundred thousand too-old entries can go per second.
const (
	sweepStreamsPerTick = 100
	sweepEntriesPerTick = 10_000
)

func newAgedSet() *btree.BTreeG[string] {
	return btree.NewG(8, func(a, b string) bool { return a < b })
}

// hasAgeLimit reports whether o is a stream with an age limit.
func hasAgeLimit(o *Object) bool {
	s, ok := o.value.(*stream.Stream)
	return ok && s.Retention().MaxAge > 0
}

// trackAged notes key in the set if its value has an age limit. Lock
// should be held.
func (db *DB) trackAged(key string, o *Object) {
	if hasAgeLimit(o) {
		db.aged.ReplaceOrInsert(key)
	}
}

// nextAged returns up to n keys of the aged set, going round it from
// where the last call stopped. Lock should be held.
func (db *DB) nextAged(n int) []string {
	if n <= 0 || db.aged.Len() == 0 {
		return nil
	}
	var keys []string
	take := func(k string) bool {
		if len(keys) == n {
			return false
		}
		keys = append(keys, k)
		return true
	}
	db.aged.AscendGreaterOrEqual(db.agedCursor+"\x00", take) // the keys after the cursor
	db.aged.AscendLessThan(db.agedCursor+"\x00", take)       // then round to the cursor itself
	db.agedCursor = keys[len(keys)-1]
	return keys
}

// sweepAged trims, within the per-tick bounds, the streams whose oldest
// entries have passed their age limit. In a cluster only a group's leader
// sweeps the group's database (writeOwn proposes). Lock should be held.
func (s *Server) sweepAged() {
	now := s.shard.now()
	visits, budget := sweepStreamsPerTick, sweepEntriesPerTick
	dbs := s.shard.dbs
	s.sweepFrom = (s.sweepFrom + 1) % len(dbs) // each db goes first in turn: none waits on another's many streams
	for i := range dbs {
		db := dbs[(s.sweepFrom+i)%len(dbs)]
		if s.cluster != nil {
			if g := s.groupOfDB(db.index); g == nil || !g.cl.Leading() {
				continue
			}
		}
		keys := db.nextAged(visits)
		visits -= len(keys)
		for _, key := range keys {
			if budget <= 0 {
				return
			}
			budget -= s.sweepStream(db, key, now, budget)
		}
	}
}

// sweepStream trims key's too-old entries, at most limit of them, and
// returns how many the trim removes. Lock should be held.
func (s *Server) sweepStream(db *DB, key string, now int64, limit int) int {
	o := db.keys[key]
	if o == nil || !hasAgeLimit(o) {
		db.aged.Delete(key) // stale: deleted, replaced, or the limit turned off
		return 0
	}
	if o.expireAt != 0 && o.expireAt <= now {
		return 0 // active expiry's
	}
	st := o.value.(*stream.Stream)
	minID, n := st.AgeTrimBound(now, limit)
	if n == 0 {
		return 0
	}
	s.writeOwn(db.index, []byte("XTRIM"), []byte(key), []byte("MINID"), minID.AppendText(nil),
		[]byte(refPolicyName(st.Retention().Refs)))
	return n
}

// refPolicyName is the option word of a reference policy.
func refPolicyName(p stream.RefPolicy) string {
	switch p {
	case stream.DelRef:
		return "DELREF"
	case stream.Acked:
		return "ACKED"
	}
	return "KEEPREF"
}
