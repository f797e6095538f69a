package server

import (
	"fmt"
	"math"

	"github.com/redstream/redstream/resp"
	"github.com/redstream/redstream/stream"
)

// XPENDING, XCLAIM and XAUTOCLAIM: inspecting the pending entries and
// handing them over to another consumer.

const (
	errXClaimMinIdle     = "ERR Invalid min-idle-time argument for XCLAIM"
	errXClaimIdle        = "ERR Invalid IDLE option argument for XCLAIM"
	errXClaimTime        = "ERR Invalid TIME option argument for XCLAIM"
	errXClaimRetry       = "ERR Invalid RETRYCOUNT option argument for XCLAIM"
	errXClaimOption      = "ERR Unrecognized XCLAIM option '%s'"
	errXAutoClaimMinIdle = "ERR Invalid min-idle-time argument for XAUTOCLAIM"
	errXAutoClaimCount   = "ERR COUNT must be > 0"
	autoclaimAttempts    = 10 // XAUTOCLAIM looks at up to COUNT times this many entries
)

// xpendingArgs is a parsed XPENDING with a range.
type xpendingArgs struct {
	start, end stream.ID
	count      int64
	minIdle    int64
	consumer   []byte // nil: the whole group
	withDue    bool   // WITHDUE (ours): each entry's next due time too
}

// xpendingCommand serves XPENDING key group (the summary) and XPENDING
// key group [IDLE ms] [WITHDUE] start end count [consumer] (the entries).
// WITHDUE is ours: it adds to each entry when its group's policy makes it
// due again. The range is parsed before the key is looked at, as in
// Redis.
func xpendingCommand(x *Ctx) {
	n := len(x.argv)
	if n != 3 && (n < 6 || n > 10) {
		x.error(resp.ErrSyntax)
		return
	}
	var a xpendingArgs
	if n >= 6 && !parseXPending(x, &a) {
		return
	}
	_, g, ok := x.groupOf(x.argv[1], x.argv[2], errNoGroup)
	if !ok {
		return
	}
	if n == 3 {
		writePendingSummary(x, g)
		return
	}
	writePendingRange(x, g, &a)
}

func parseXPending(x *Ctx, a *xpendingArgs) bool {
	at := 3
	if eqFold(x.argv[3], "idle") {
		n, ok := resp.ParseInt(x.argv[4])
		if !ok {
			x.error(resp.ErrNotInteger)
			return false
		}
		if len(x.argv) < 8 {
			x.error(resp.ErrSyntax)
			return false
		}
		a.minIdle, at = n, 5
	}
	if eqFold(x.argv[at], "withdue") {
		a.withDue, at = true, at+1
	}
	if rest := len(x.argv) - at; rest < 3 || (a.withDue && rest > 4) || (!a.withDue && len(x.argv) > 9) {
		x.error(resp.ErrSyntax)
		return false
	}
	count, ok := resp.ParseInt(x.argv[at+2])
	if !ok {
		x.error(resp.ErrNotInteger)
		return false
	}
	a.count = max(count, 0)
	if a.start, a.end, ok = parseRange(x, x.argv[at], x.argv[at+1]); !ok {
		return false
	}
	if at+3 < len(x.argv) {
		a.consumer = x.argv[at+3]
	}
	return true
}

// writePendingSummary writes [count, first ID, last ID, [[consumer,
// count]...]] (nulls for an empty PEL); counts of consumers are bulk
// strings, as in Redis.
func writePendingSummary(x *Ctx, g *stream.Group) {
	x.w.Array(4)
	x.w.Int(int64(g.Pending()))
	if g.Pending() == 0 {
		x.w.Null()
		x.w.Null()
		x.w.NullArray()
		return
	}
	first, _ := g.FirstPending()
	last, _ := g.LastPending()
	writeID(x.w, first)
	writeID(x.w, last)
	mark, n := x.w.Mark(), 0
	g.EachConsumer(func(c *stream.Consumer) bool {
		if c.Pending() > 0 {
			x.w.Array(2)
			x.w.Bulk(c.Name())
			x.w.BulkInt(int64(c.Pending()))
			n++
		}
		return true
	})
	x.w.InsertLen(mark, '*', n)
}

// writePendingRange writes [id, consumer, idle ms, deliveries] for each
// pending entry in the range (the group's, or one consumer's), up to
// count, leaving out entries idle for less than IDLE. An entry released
// by XNACK has no consumer (an empty name) and an idle time of -1; it
// passes any IDLE filter.
func writePendingRange(x *Ctx, g *stream.Group, a *xpendingArgs) {
	var c *stream.Consumer
	if a.consumer != nil {
		if c = g.Consumer(a.consumer); c == nil {
			x.w.Array(0)
			return
		}
	}
	mark, n := x.w.Mark(), int64(0)
	if a.count > 0 {
		g.EachPending(c, a.start, a.end, func(pe stream.PendingEntry) bool {
			if a.minIdle != 0 && pe.Consumer != nil && x.now-pe.DeliveryTime < a.minIdle {
				return true
			}
			writePendingRow(x, pe, g, a.withDue)
			n++
			return n < a.count
		})
	}
	x.w.InsertLen(mark, '*', int(n))
}

// writePendingRow writes [id, consumer, idle ms, deliveries], and with
// withDue the unix ms at which the group's policy redelivers the entry
// (-1: never).
func writePendingRow(x *Ctx, pe stream.PendingEntry, g *stream.Group, withDue bool) {
	if withDue {
		x.w.Array(5)
	} else {
		x.w.Array(4)
	}
	writeID(x.w, pe.ID)
	if pe.Consumer == nil {
		x.w.Bulk(nil)
		x.w.Int(-1)
	} else {
		x.w.Bulk(pe.Consumer.Name())
		x.w.Int(idleOf(x.now, pe))
	}
	x.w.Int(pe.DeliveryCount)
	if withDue {
		at, ok := g.DueTime(pe.ID)
		if !ok {
			at = -1
		}
		x.w.Int(at)
	}
}

// touchConsumer returns the group's consumer called name, created if
// needed and marked seen now (XREADGROUP, XCLAIM, XAUTOCLAIM); either is
// logged, but only a creation is a change to the data.
func touchConsumer(x *Ctx, key []byte, g *stream.Group, name []byte) *stream.Consumer {
	switch c := g.Consumer(name); {
	case c == nil:
		x.modified(key)
	case c.SeenTime() != x.now:
		x.bookkept(key)
	}
	c, _ := g.Seen(name, x.now)
	return c
}

// xclaimArgs is a parsed XCLAIM.
type xclaimArgs struct {
	minIdle   int64
	ids       []stream.ID
	idArgs    [][]byte
	delivered int64 // -1: IDLE/TIME not given
	retry     int64 // -1: RETRYCOUNT not given (or negative)
	force     bool
	justID    bool
	lastID    stream.ID
}

// parseXClaim parses min-idle-time, the IDs (up to the first argument
// that is not one) and the options, with Redis's errors.
func parseXClaim(x *Ctx) (a xclaimArgs, ok bool) {
	a.delivered, a.retry = -1, -1
	n, isInt := resp.ParseInt(x.argv[4])
	if !isInt {
		x.error(errXClaimMinIdle)
		return a, false
	}
	a.minIdle = max(n, 0)
	j := 5
	for ; j < len(x.argv); j++ {
		id, err := stream.ParseStrictID(x.argv[j], 0)
		if err != nil {
			break
		}
		a.ids, a.idArgs = append(a.ids, id), append(a.idArgs, x.argv[j])
	}
	for ; j < len(x.argv); j++ {
		var msg string
		if j, msg = a.parseOption(x, j); msg != "" {
			x.error(msg)
			return a, false
		}
	}
	switch {
	case a.delivered == -1:
		a.delivered = x.now
	case a.delivered < 0 || a.delivered > x.now:
		// A client's idea of time a little ahead of ours is no reason to
		// fail: Redis takes now instead.
		a.delivered = x.now
	}
	return a, true
}

// parseOption parses the XCLAIM option at argv[j]; it returns the index
// of its last argument or an error text.
func (a *xclaimArgs) parseOption(x *Ctx, j int) (int, string) {
	opt := x.argv[j]
	more := len(x.argv) - 1 - j
	intArg := func(msg string) (int64, string) {
		n, ok := resp.ParseInt(x.argv[j+1])
		if !ok {
			return 0, msg
		}
		return n, ""
	}
	var msg string
	switch {
	case eqFold(opt, "force"):
		a.force = true
		return j, ""
	case eqFold(opt, "justid"):
		a.justID = true
		return j, ""
	case eqFold(opt, "idle") && more > 0:
		var idle int64
		if idle, msg = intArg(errXClaimIdle); msg == "" {
			a.delivered = x.now - idle
		}
	case eqFold(opt, "time") && more > 0:
		a.delivered, msg = intArg(errXClaimTime)
	case eqFold(opt, "retrycount") && more > 0:
		a.retry, msg = intArg(errXClaimRetry)
	case eqFold(opt, "lastid") && more > 0:
		id, err := stream.ParseStrictID(x.argv[j+1], 0)
		if err != nil {
			return j, errStreamID
		}
		a.lastID = id
	default:
		return j, fmt.Sprintf(errXClaimOption, quoteArg(opt))
	}
	return j + 1, msg
}

// xclaimCommand serves XCLAIM: each ID that is pending and idle for at
// least min-idle-time (or released by XNACK, or created with FORCE) goes
// to the consumer, which is created if needed. An ID whose entry is no
// longer in the stream leaves the PEL instead of being claimed.
func xclaimCommand(x *Ctx) {
	key := x.argv[1]
	s, g, ok := x.groupOf(key, x.argv[2], errNoGroup)
	if !ok {
		return
	}
	a, ok := parseXClaim(x)
	if !ok {
		return
	}
	if a.lastID.Compare(g.LastID()) > 0 {
		s.SetGroupID(g, a.lastID, g.EntriesRead())
		x.modified(key)
	}
	c := touchConsumer(x, key, g, x.argv[3])
	f := s.Finder()
	defer f.Close()
	mark, n := x.w.Mark(), 0
	for _, id := range a.ids {
		if xclaimOne(x, s, f, g, c, id, &a) {
			n++
		}
	}
	x.w.InsertLen(mark, '*', n)
	if n > 0 {
		dueTimesChanged(x, key, g)
	}
}

// xclaimOne claims id for XCLAIM and writes it; it reports whether it did.
// A claim that counts as a delivery (no JUSTID, no RETRYCOUNT: an admin
// setting the count is not capped) dead-letters an entry at the group's
// MAXDELIVER instead.
func xclaimOne(x *Ctx, s *stream.Stream, f *stream.Finder, g *stream.Group, c *stream.Consumer, id stream.ID, a *xclaimArgs) bool {
	key := x.argv[1]
	pe, pending := g.PendingEntry(id)
	it, exists := f.Find(id)
	if !exists {
		if pending {
			g.Ack(id) // the entry is gone: so is its PEL entry
			x.modified(key)
		}
		return false
	}
	if !pending {
		if !a.force {
			return false
		}
		g.Force(id, x.now)
		pe, _ = g.PendingEntry(id)
	} else if pe.Consumer != nil && a.minIdle > 0 && x.now-pe.DeliveryTime < a.minIdle {
		return false
	}
	if !a.justID && a.retry < 0 && capDelivery(x, key, s, g, pe) {
		return false
	}
	g.Claim(c, id, a.delivered, a.retry, !a.justID, x.now)
	x.modified(key)
	if a.justID {
		writeID(x.w, id)
	} else {
		writeEntry(x.w, it)
	}
	return true
}

// xautoclaimArgs is a parsed XAUTOCLAIM.
type xautoclaimArgs struct {
	minIdle int64
	start   stream.ID
	count   int64
	justID  bool
}

func parseXAutoClaim(x *Ctx) (a xautoclaimArgs, ok bool) {
	n, isInt := resp.ParseInt(x.argv[4])
	if !isInt {
		x.error(errXAutoClaimMinIdle)
		return a, false
	}
	a.minIdle, a.count = max(n, 0), 100
	start, excl, err := stream.ParseRangeID(x.argv[5], 0)
	if err != nil {
		x.error(errStreamID)
		return a, false
	}
	if excl {
		if start, err = start.Incr(); err != nil {
			x.error(errRangeStart)
			return a, false
		}
	}
	a.start = start
	for j := 6; j < len(x.argv); j++ {
		switch {
		case eqFold(x.argv[j], "count") && j+1 < len(x.argv):
			// Redis bounds COUNT so that COUNT times the attempts factor,
			// in bytes of IDs, cannot overflow.
			c, isInt := resp.ParseInt(x.argv[j+1])
			if !isInt || c < 1 || c > math.MaxInt64/16 {
				x.error(errXAutoClaimCount)
				return a, false
			}
			a.count = c
			j++
		case eqFold(x.argv[j], "justid"):
			a.justID = true
		default:
			x.error(resp.ErrSyntax)
			return a, false
		}
	}
	return a, true
}

// xautoclaimCommand serves XAUTOCLAIM: it walks the PEL from start,
// claiming for the consumer up to COUNT entries idle for at least
// min-idle-time and dropping the ones deleted from the stream (those
// count too), looking at no more than ten times COUNT entries. It answers
// [next cursor (0-0 at the end), claimed entries, deleted IDs].
func xautoclaimCommand(x *Ctx) {
	a, ok := parseXAutoClaim(x)
	if !ok {
		return
	}
	key := x.argv[1]
	s, g, ok := x.groupOf(key, x.argv[2], errNoGroup)
	if !ok {
		return
	}
	c := touchConsumer(x, key, g, x.argv[3])
	ac := autoclaim{x: x, s: s, g: g, c: c, a: &a, count: a.count, attempts: a.count * autoclaimAttempts,
		f: s.Finder(), entries: resp.Writer{Proto: x.w.Proto}}
	defer ac.f.Close()
	ac.run()
	if ac.claimed+len(ac.deleted) > 0 {
		x.modified(key)
	}
	x.w.Array(3)
	writeID(x.w, nextPending(g, ac.last, ac.examined))
	x.w.Array(ac.claimed)
	x.w.Raw(ac.entries.Bytes())
	x.w.Array(len(ac.deleted))
	for _, id := range ac.deleted {
		writeID(x.w, id)
	}
}

// autoclaim is one XAUTOCLAIM's walk over the PEL.
type autoclaim struct {
	x        *Ctx
	s        *stream.Stream
	g        *stream.Group
	c        *stream.Consumer
	a        *xautoclaimArgs
	f        *stream.Finder
	count    int64 // entries it may still claim or drop
	attempts int64 // entries it may still look at
	entries  resp.Writer
	claimed  int
	deleted  []stream.ID
	last     stream.ID // the last entry looked at
	examined bool
}

// run walks the PEL in batches: claiming changes the PEL, so each batch
// is collected first and the next one starts after it.
func (ac *autoclaim) run() {
	from := ac.a.start
	batch := make([]stream.PendingEntry, 0, 256)
	for ac.count > 0 && ac.attempts > 0 {
		batch = batch[:0]
		limit := int(min(ac.attempts, int64(cap(batch))))
		ac.g.EachPending(nil, from, stream.MaxID, func(pe stream.PendingEntry) bool {
			batch = append(batch, pe)
			return len(batch) < limit
		})
		for _, pe := range batch {
			if ac.count == 0 {
				return
			}
			ac.step(pe)
		}
		if len(batch) < limit {
			return // the end of the PEL
		}
		var err error
		if from, err = ac.last.Incr(); err != nil {
			return
		}
	}
}

// step looks at one pending entry: drops it if deleted, claims it if idle
// long enough, unless that delivery would pass the group's MAXDELIVER:
// then it dead-letters it (JUSTID, which does not count deliveries, is
// not capped).
func (ac *autoclaim) step(pe stream.PendingEntry) {
	x := ac.x
	ac.attempts--
	ac.last, ac.examined = pe.ID, true
	it, ok := ac.f.Find(pe.ID)
	if !ok {
		ac.g.Ack(pe.ID)
		ac.deleted = append(ac.deleted, pe.ID)
		ac.count--
		return
	}
	if ac.a.minIdle > 0 && pe.Consumer != nil && x.now-pe.DeliveryTime < ac.a.minIdle {
		return
	}
	if !ac.a.justID && capDelivery(x, x.argv[1], ac.s, ac.g, pe) {
		return
	}
	ac.g.Claim(ac.c, pe.ID, x.now, -1, !ac.a.justID, x.now)
	if ac.a.justID {
		writeID(&ac.entries, pe.ID)
	} else {
		writeEntry(&ac.entries, it)
	}
	ac.claimed++
	ac.count--
}

// nextPending is XAUTOCLAIM's cursor: the first pending ID after the last
// one looked at, or 0-0 when there is none (or nothing was looked at).
func nextPending(g *stream.Group, last stream.ID, examined bool) stream.ID {
	if !examined {
		return stream.ID{}
	}
	from, err := last.Incr()
	if err != nil {
		return stream.ID{}
	}
	var next stream.ID
	g.EachPending(nil, from, stream.MaxID, func(pe stream.PendingEntry) bool {
		next = pe.ID
		return false
	})
	return next
}
