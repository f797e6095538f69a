package server

import (
	"container/heap"
	"errors"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/redstream/redstream/resp"
	"github.com/redstream/redstream/stream"
)

// Delayed stream entries (XADD … DELAY ms | AT unix-ms, issue 15). The
// entry is stored, and logged, when XADD runs, under an ID reserved for
// its due time (stream.AddDelayed); it joins the stream when due, with
// that ID, so readers of the log still read in ID order. Two writes
// release due entries, both ordinary logged commands whose clock is the
// record's (DESIGN principle 2): every XADD first releases what is due by
// its own time, and XRELEASE key releases everything due. The server runs
// XRELEASE by itself (writeOwn) at each due time: a timer set for the
// earliest due time over all streams, and the cron as a fallback (a
// follower that becomes leader finds overdue entries there).

var delaySpecs = []spec{
	{name: "xrelease", arity: 2, flags: "write", first: 1, last: 1, step: 1, group: "stream", since: "redstream",
		syntax:  "key",
		summary: "Appends every delayed entry of the stream that is due. The server runs it by itself at due times; it is a command so that it is logged and replayed.", run: xreleaseCommand},
}

// Error replies of DELAY and AT.
const (
	errDelayTwice      = "ERR DELAY/AT specified multiple times"
	errDelayExplicitID = "ERR DELAY/AT can be used only with auto-generated IDs"
	errDelayValue      = "ERR DELAY must be a non-negative integer number of milliseconds"
	errAtValue         = "ERR AT must be a non-negative unix time in milliseconds"
)

// parseDelay parses DELAY ms or AT unix-ms at argv[i] into a.due (unix
// ms; the record's time plus the delay).
func (a *addTrimArgs) parseDelay(x *Ctx, i int) (int, string) {
	at := eqFold(x.argv[i], "at")
	if a.delayGiven {
		return i, errDelayTwice
	}
	n, ok := resp.ParseInt(x.argv[i+1])
	switch {
	case at && (!ok || n < 0):
		return i, errAtValue
	case !at && (!ok || n < 0 || n > math.MaxInt64-max(x.now, 0)):
		return i, errDelayValue
	case !at:
		n += x.now
	}
	a.delayGiven, a.due = true, n
	return i + 1, ""
}

// xaddDelayed reserves an ID for an entry due at a.due and stores it
// aside; the reply is that ID.
func xaddDelayed(x *Ctx, s *stream.Stream, a *addTrimArgs, fv [][]byte) (stream.ID, bool) {
	if a.pid != nil && a.iid == nil {
		a.iid = stream.AutoIID(fv)
	}
	if s.LastID() == stream.MaxID {
		x.error(errXAddExhausted) // it could never be released
		return stream.ID{}, false
	}
	id, err := s.AddDelayed(uint64(a.due), fv)
	switch {
	case err == nil:
		return id, true
	case errors.Is(err, stream.ErrTooLarge):
		x.error(errXAddTooLarge)
	default:
		x.error(errXAddExhausted)
	}
	return id, false
}

// releaseDue appends s's delayed entries due by the record's time and
// reports how many it appended. Lock should be held.
func releaseDue(x *Ctx, key []byte, s *stream.Stream) int {
	n, _ := s.Release(uint64(max(x.now, 0)), x.streamLimits()) // an exhausted stream keeps them
	if n > 0 {
		x.modified(key)
		x.signalReady(key)
		x.s.stats.delayedOut += int64(n)
	}
	return n
}

// xreleaseCommand serves XRELEASE key: the number of entries released.
func xreleaseCommand(x *Ctx) {
	key := x.argv[1]
	s, ok := x.streamOf(key)
	if !ok {
		return
	}
	n := 0
	if s != nil {
		n = releaseDue(x, key, s)
	}
	x.w.Int(int64(n))
}

// delayIndex says which stream has delayed entries due next: a min-heap
// of (due time, key). It is derived state, rebuilt as keys are stored
// (DB.insert, Shard.recount, Restore), and may hold stale items (a key
// since deleted, released or replaced): an item is checked when it is
// popped. at holds, per key, the earliest due time queued for it, so a
// stream adding many entries queues one item, not one per entry.
type delayIndex struct {
	items   delayHeap
	at      map[delayKey]int64
	timer   *time.Timer
	timerAt int64 // when the timer fires; 0: not set
}

type delayKey struct {
	db  int
	key string
}

type delayItem struct {
	due int64
	k   delayKey
}

type delayHeap []delayItem

func (h delayHeap) Len() int           { return len(h) }
func (h delayHeap) Less(i, j int) bool { return h[i].due < h[j].due }
func (h delayHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *delayHeap) Push(v any)        { *h = append(*h, v.(delayItem)) }
func (h *delayHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

// queue notes that key has an entry due at due, unless an item as early
// is queued already.
func (d *delayIndex) queue(k delayKey, due int64) bool {
	if at, ok := d.at[k]; ok && at <= due {
		return false
	}
	if d.at == nil {
		d.at = make(map[delayKey]int64)
	}
	d.at[k] = due
	heap.Push(&d.items, delayItem{due, k})
	return true
}

// popDue removes and returns the earliest item if it is due by now.
func (d *delayIndex) popDue(now int64) (delayKey, bool) {
	if len(d.items) == 0 || d.items[0].due > now {
		return delayKey{}, false
	}
	it := heap.Pop(&d.items).(delayItem)
	if d.at[it.k] == it.due {
		delete(d.at, it.k)
	}
	return it.k, true
}

// noteDelayed queues key if o is a stream with delayed entries, and sets
// the timer when that entry is the earliest. Lock should be held.
func (sh *Shard) noteDelayed(db *DB, key string, o *Object) {
	if !hasDelayed(o.value) {
		return
	}
	due, _ := o.value.(*stream.Stream).NextDue()
	if sh.delays.queue(delayKey{db.index, key}, int64(min(due, math.MaxInt64))) {
		sh.node.armDelayTimer()
	}
}

// delayRetry is how long an overdue stream waits before it is looked at
// again when XRELEASE did not release it at once: a follower (its leader
// releases), a proposal not committed yet, an exhausted stream.
const delayRetry = 100 // ms

// releaseDelayed runs XRELEASE for every stream whose delayed entries
// are due, and sets the timer for the next one. Lock should be held.
func (s *Server) releaseDelayed() {
	sh := s.shard
	now := sh.now()
	for {
		k, ok := sh.delays.popDue(now)
		if !ok {
			break
		}
		if k.db >= len(sh.dbs) {
			continue
		}
		db := sh.dbs[k.db]
		o := db.keys[k.key]
		if o == nil {
			continue
		}
		st, isStream := o.value.(*stream.Stream)
		if !isStream || st.DelayedLen() == 0 {
			continue
		}
		if due, _ := st.NextDue(); int64(due) <= now {
			s.writeOwn(k.db, []byte("XRELEASE"), []byte(k.key))
		}
		if o = db.keys[k.key]; o != nil && o.value == st && st.DelayedLen() > 0 {
			due, _ := st.NextDue()
			sh.delays.queue(k, max(int64(min(due, math.MaxInt64)), now+delayRetry))
		}
	}
	s.armDelayTimer()
}

// armDelayTimer sets the timer for the earliest queued due time, once
// the server serves (before that, loading must not write). Lock should
// be held.
func (s *Server) armDelayTimer() {
	d := &s.shard.delays
	if len(d.items) == 0 || !s.serving.Load() || s.closing.Load() {
		return
	}
	due := d.items[0].due
	if d.timerAt != 0 && d.timerAt <= due {
		return
	}
	d.timerAt = due
	wait := time.Until(time.UnixMilli(due))
	if d.timer == nil {
		d.timer = time.AfterFunc(wait, s.delayTimerFired)
	} else {
		d.timer.Reset(wait)
	}
}

// delayTimerFired releases what is due and sets the timer again.
func (s *Server) delayTimerFired() {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	if s.closing.Load() {
		return
	}
	s.shard.delays.timerAt = 0
	s.releaseDelayed()
}

// resetDelays drops from the index the databases dbs (a Restore replaced
// them) and queues the streams with delayed entries that the new ones
// hold, which the restore collected as it built them. Lock should be
// held.
func (sh *Shard) resetDelays(dbs []int, delayed []delayKey) {
	d := &sh.delays
	replaced := func(k delayKey) bool { return slices.Contains(dbs, k.db) }
	d.items = slices.DeleteFunc(d.items, func(it delayItem) bool { return replaced(it.k) })
	heap.Init(&d.items)
	maps.DeleteFunc(d.at, func(k delayKey, _ int64) bool { return replaced(k) })
	for _, k := range delayed {
		if o := sh.dbs[k.db].keys[k.key]; o != nil {
			sh.noteDelayed(sh.dbs[k.db], k.key, o)
		}
	}
}

// hasDelayed reports whether v is a stream with delayed entries.
func hasDelayed(v any) bool {
	s, ok := v.(*stream.Stream)
	return ok && s.DelayedLen() > 0
}

// delayInfoFields is how many fields XINFO STREAM adds for delayed
// entries: none for a stream without (its reply stays Redis's), else
// their count and when the first is due.
func delayInfoFields(s *stream.Stream) int {
	if s.DelayedLen() == 0 {
		return 0
	}
	return 2
}

// writeDelayInfo writes the fields delayInfoFields counts.
func writeDelayInfo(w *resp.Writer, s *stream.Stream) {
	if s.DelayedLen() == 0 {
		return
	}
	due, _ := s.NextDue()
	w.BulkString("delayed-entries")
	w.Int(int64(s.DelayedLen()))
	w.BulkString("next-delayed-due")
	w.Int(int64(min(due, math.MaxInt64)))
}
