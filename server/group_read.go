package server

import (
	"math"
	"time"

	"github.com/redstream/redstream/resp"
	"github.com/redstream/redstream/stream"
)

// XREADGROUP's own errors.
const (
	errXRGMissingGroup = "ERR Missing GROUP option for XREADGROUP"
	errXRGUnbalanced   = "ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified."
	errXRGDollar       = "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."
	errXRGPlus         = "ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set."
	errMinIdleNotInt   = "ERR min-idle-time is not an integer"
	errMinIdleNegative = "ERR min-idle-time must be a positive integer"
)

// xrgArgs is a parsed XREADGROUP.
type xrgArgs struct {
	xreadArgs
	group, consumer []byte
	noack           bool
	claim           bool
	minIdle         int64 // CLAIM's min-idle-time, ms
	blockAt         int   // argv index of the last BLOCK keyword, 0 if none
}

// xrgStream is one stream of an XREADGROUP, resolved.
type xrgStream struct {
	key     []byte
	s       *stream.Stream
	g       *stream.Group
	history bool      // an explicit ID: the consumer's own PEL after it
	after   stream.ID // for history: entries after this ID
	claims  []stream.ID
	due     bool // the group's policy has entries due again (group_redeliver.go)
}

// xreadgroupCommand serves XREADGROUP: for each stream, with ">", the
// entries no consumer of the group was given yet (after idle pending
// entries to claim, with CLAIM), added to the PELs unless NOACK; with an
// ID, the consumer's own pending entries after it. With BLOCK and nothing
// to serve it waits for an XADD, for the group or key to go away (then it
// answers the error Redis gives), or, with CLAIM, for an entry to become
// idle enough. It is a write: it is logged, without BLOCK, whenever it
// changed anything (a consumer created, seen, entries delivered).
func xreadgroupCommand(x *Ctx) {
	a, ok := parseXReadGroup(x)
	if !ok {
		return
	}
	streams, ok := resolveXRGStreams(x, &a)
	if !ok {
		return
	}
	if a.block && !xrgServable(x, &a, streams) {
		if x.rerun {
			x.block(nil, a.deadline) // still nothing: stay blocked, change nothing
			return
		}
		xrgTouchConsumers(x, &a, streams)
		xrgLogForm(x, &a)
		x.block(uniqueKeys(x.argv[a.streamsAt:a.streamsAt+a.n]), a.deadline)
		return
	}
	xrgLogForm(x, &a)
	if serveXReadGroup(x, &a, streams) {
		return
	}
	switch {
	case a.block && x.rerun:
		x.block(nil, a.deadline) // what it found was dead-lettered: wait on
	case a.block:
		x.block(uniqueKeys(x.argv[a.streamsAt:a.streamsAt+a.n]), a.deadline)
	default:
		x.w.NullArray()
	}
}

// parseXReadGroup parses the options in order, with Redis's errors.
func parseXReadGroup(x *Ctx) (a xrgArgs, ok bool) {
	if !parseInOrder(x, a.parseOption) {
		return a, false
	}
	switch {
	case a.streamsAt == 0:
		x.error(resp.ErrSyntax)
		return a, false
	case a.group == nil:
		x.error(errXRGMissingGroup)
		return a, false
	case a.maxCount > 0 && a.countSet && a.maxCount < a.count:
		x.error(errXReadMaxBelow)
		return a, false
	}
	return a, true
}

// parseOption parses the option at argv[i] and returns the index of its
// last argument (past the end for STREAMS, which ends the options).
func (a *xrgArgs) parseOption(x *Ctx, i int) (int, string) {
	if msg, ok := a.parseShared(x, i); ok {
		if eqFold(x.argv[i], "block") {
			a.blockAt = i
		}
		return i + 1, msg
	}
	more := len(x.argv) - 1 - i
	opt := x.argv[i]
	switch {
	case more > 0 && eqFold(opt, "claim"):
		n, isInt := resp.ParseInt(x.argv[i+1])
		var msg string
		switch {
		case !isInt:
			msg = errMinIdleNotInt
		case n < 0:
			msg = errMinIdleNegative
		}
		a.claim, a.minIdle = true, n
		return i + 1, msg
	case more > 0 && eqFold(opt, "streams"):
		a.streamsAt = i + 1
		if more%2 != 0 {
			return len(x.argv), errXRGUnbalanced
		}
		a.n = more / 2
		return len(x.argv), ""
	case more > 1 && eqFold(opt, "group"):
		a.group, a.consumer = x.argv[i+1], x.argv[i+2]
		return i + 2, ""
	case eqFold(opt, "noack"):
		a.noack = true
		return i, ""
	}
	return i, resp.ErrSyntax
}

// resolveXRGStreams checks each key and group and parses each ID, stream
// by stream, as Redis does: the first problem found is the answer.
func resolveXRGStreams(x *Ctx, a *xrgArgs) ([]xrgStream, bool) {
	out := make([]xrgStream, a.n)
	for i := range a.n {
		key := x.argv[a.streamsAt+i]
		s, g, ok := x.groupOf(key, a.group, errNoGroupRead)
		if !ok {
			return nil, false
		}
		st := xrgStream{key: key, s: s, g: g}
		switch arg := x.argv[a.streamsAt+a.n+i]; {
		case len(arg) == 1 && arg[0] == '>':
		case len(arg) == 1 && arg[0] == '$':
			x.error(errXRGDollar)
			return nil, false
		case len(arg) == 1 && arg[0] == '+':
			x.error(errXRGPlus)
			return nil, false
		default:
			if st.after, ok = parseStrictID(x, arg); !ok {
				return nil, false
			}
			st.history = true
		}
		out[i] = st
	}
	return out, true
}

// xrgServable reports whether any stream has something to serve now: its
// history (always answered, if only with an empty list), entries after
// the group's last ID, or, with CLAIM, entries idle long enough. It
// changes nothing, so a re-run that finds nothing leaves no trace.
func xrgServable(x *Ctx, a *xrgArgs, streams []xrgStream) bool {
	for i := range streams {
		if xrgHasNew(x, a, &streams[i]) {
			return true
		}
	}
	return false
}

func xrgHasNew(x *Ctx, a *xrgArgs, st *xrgStream) bool {
	if st.history {
		return true
	}
	if a.claim {
		st.claims = xrgClaimable(x, a, st)
	}
	if redelivers(a, st) {
		st.due = st.g.HasDue(x.now)
	}
	last, ok := st.s.LastEntryID()
	return len(st.claims) > 0 || st.due || (ok && last.Compare(st.g.LastID()) > 0)
}

// xrgClaimable lists what CLAIM takes from the group, in Redis's order,
// leaving out entries deleted from the stream.
func xrgClaimable(x *Ctx, a *xrgArgs, st *xrgStream) []stream.ID {
	ids := st.g.Claimable(x.now, a.minIdle, 0)
	live := ids[:0]
	for _, id := range ids {
		if st.s.Has(id) {
			live = append(live, id)
		}
	}
	return live
}

// xrgTouchConsumers creates the consumer in each stream's group, or marks
// it seen, as Redis does even when the command then blocks.
func xrgTouchConsumers(x *Ctx, a *xrgArgs, streams []xrgStream) {
	for _, st := range streams {
		xrgConsumer(x, a, &st)
	}
}

// xrgConsumer returns the reading consumer of st's group, created if new
// and marked seen now.
func xrgConsumer(x *Ctx, a *xrgArgs, st *xrgStream) *stream.Consumer {
	return touchConsumer(x, st.key, st.g, a.consumer)
}

// xrgLogForm logs the command without BLOCK: a served blocking read is
// logged as its non-blocking form, and so is the consumer creation of one
// that blocks (replay never blocks).
func xrgLogForm(x *Ctx, a *xrgArgs) {
	if a.blockAt == 0 {
		return
	}
	argv := make([][]byte, 0, len(x.argv))
	for i := 0; i < len(x.argv); i++ {
		if i < a.streamsAt && eqFold(x.argv[i], "block") && i+1 < a.streamsAt {
			i++ // drop BLOCK and its milliseconds, however often given
			continue
		}
		argv = append(argv, x.argv[i])
	}
	x.rewriteLog(argv...)
}

// serveXReadGroup writes each stream that has something to serve, as
// [key, entries] (a map in RESP3), and reports whether any did.
func serveXReadGroup(x *Ctx, a *xrgArgs, streams []xrgStream) bool {
	budget := xreadBudget{maxCount: a.maxCount, maxSize: a.maxSize}
	mark := x.w.Mark()
	served := 0
	for i := range streams {
		st := &streams[i]
		c := xrgConsumer(x, a, st)
		if budget.spent || budget.full() || !xrgHasNew(x, a, st) {
			continue // once the budget is spent, no later stream is served
		}
		header := x.w.Mark()
		if !x.w.RESP3() {
			x.w.Array(2)
		}
		x.w.Bulk(st.key)
		entries := x.w.Mark()
		var n int
		if st.history {
			n = serveHistory(x, a, st, c, &budget)
		} else if n = serveNew(x, a, st, c, &budget); n == 0 && !budget.spent {
			x.w.Truncate(header) // all it found was dead-lettered: nothing to say
			continue
		}
		x.w.InsertLen(entries, '*', n)
		served++
	}
	if served == 0 {
		x.w.Truncate(mark)
		return false
	}
	if x.w.RESP3() {
		x.w.InsertLen(mark, '%', served)
	} else {
		x.w.InsertLen(mark, '*', served)
	}
	return true
}

// full reports whether the reply may take no more entries.
func (b *xreadBudget) full() bool { return b.maxCount > 0 && b.entries >= b.maxCount }

// refuse is admits for XREADGROUP: it remembers a refusal, after which
// no later stream is served.
func (b *xreadBudget) refuse(admitted bool) bool {
	if !admitted {
		b.spent = true
	}
	return !admitted
}

// serveHistory writes the consumer's pending entries after st.after, up
// to COUNT and the budget. Each is delivered again (its count and time
// move), or dead-lettered and left out when that would pass the group's
// MAXDELIVER; one deleted from the stream is answered as [id, nil].
func serveHistory(x *Ctx, a *xrgArgs, st *xrgStream, c *stream.Consumer, budget *xreadBudget) int {
	start, err := st.after.Incr()
	if err != nil {
		return 0
	}
	var pes []stream.PendingEntry
	st.g.EachPending(c, start, stream.MaxID, func(pe stream.PendingEntry) bool {
		pes = append(pes, pe)
		return a.count == 0 || len(pes) < a.count
	})
	n := 0
	f := st.s.Finder()
	defer f.Close()
	for _, pe := range pes {
		id := pe.ID
		it, ok := f.Find(id)
		if !ok {
			if budget.refuse(budget.admitsSize(int64(len(id.String())))) {
				break
			}
			x.w.Array(2)
			writeID(x.w, id)
			x.w.NullArray()
			n++
			continue
		}
		if capDelivery(x, st.key, st.s, st.g, pe) {
			continue
		}
		if budget.refuse(budget.admits(it)) {
			break
		}
		writeEntry(x.w, it)
		st.g.Redeliver(id, x.now)
		n++
	}
	if n > 0 {
		x.bookkept(st.key)
	}
	return n
}

// admitsSize is admits for an entry whose size is known.
func (b *xreadBudget) admitsSize(size int64) bool {
	if b.maxCount > 0 && b.entries >= b.maxCount {
		return false
	}
	if b.maxSize > 0 {
		if b.entries > 0 && b.bytes+size > b.maxSize {
			return false
		}
		b.bytes += size
	}
	b.entries++
	return true
}

// serveNew writes, with CLAIM, the claimable entries (each with its idle
// time and previous delivery count), then the entries after the group's
// last ID (with 0 and 0 under CLAIM), up to COUNT and the budget. Each
// goes to the consumer's PEL; NOACK spares new entries that, not claimed
// ones.
func serveNew(x *Ctx, a *xrgArgs, st *xrgStream, c *stream.Consumer, budget *xreadBudget) int {
	n := serveClaims(x, a, st, c, budget) + serveDue(x, a, st, c, budget)
	if n > 0 {
		x.modified(st.key)
	}
	if a.count > 0 && n >= a.count || budget.spent {
		return n
	}
	from, err := st.g.LastID().Incr()
	if err != nil {
		return n
	}
	it := st.s.Range(from, stream.MaxID, false)
	defer it.Close()
	for (a.count == 0 || n < a.count) && it.Next() {
		if budget.refuse(budget.admits(it)) {
			break
		}
		st.s.Deliver(st.g, c, it.ID(), x.now, a.noack)
		x.modified(st.key)
		if a.claim {
			writeClaimed(x, it, 0, 0)
		} else {
			writeEntry(x.w, it)
		}
		n++
	}
	return n
}

// serveClaims writes the claimable entries for serveNew, up to COUNT and
// the budget, and hands them to c; an entry at the group's MAXDELIVER is
// dead-lettered instead.
func serveClaims(x *Ctx, a *xrgArgs, st *xrgStream, c *stream.Consumer, budget *xreadBudget) int {
	if len(st.claims) == 0 {
		return 0
	}
	f := st.s.Finder()
	defer f.Close()
	n := 0
	for _, id := range st.claims {
		if a.count > 0 && n >= a.count {
			break
		}
		it, ok := f.Find(id)
		if !ok {
			break
		}
		pe, _ := st.g.PendingEntry(id)
		if capDelivery(x, st.key, st.s, st.g, pe) {
			continue
		}
		if budget.refuse(budget.admits(it)) {
			break
		}
		prev, _ := st.g.Claim(c, id, x.now, -1, true, x.now)
		writeClaimed(x, it, idleOf(x.now, pe), prev)
		n++
	}
	return n
}

// idleOf is how long ago a pending entry was delivered, at now.
func idleOf(now int64, pe stream.PendingEntry) int64 {
	return max(now-pe.DeliveryTime, 0)
}

// writeClaimed writes an entry as XREADGROUP CLAIM answers it: id,
// fields, idle time, and how many times it was delivered before.
func writeClaimed(x *Ctx, it *stream.Iterator, idle, count int64) {
	x.w.Array(4)
	writeID(x.w, it.ID())
	n := it.NumFields()
	x.w.Array(2 * n)
	for range n {
		f, v := it.Pair()
		x.w.Bulk(f)
		x.w.Bulk(v)
	}
	x.w.Int(idle)
	x.w.Int(count)
}

// xreadgroupWakeAt is when a blocked XREADGROUP may find a pending entry
// to take without any write: with CLAIM, one idle long enough; on a group
// whose policy redelivers, one due again (group_redeliver.go). It is a
// wall-clock time, zero when nothing pending could become so. The
// blocking code re-runs the command then (see blocking.go). Lock should
// be held.
func xreadgroupWakeAt(s *Server, db *DB, argv [][]byte) time.Time {
	x := &Ctx{s: s, db: db, argv: argv, w: &resp.Writer{}, now: s.shard.lastTime}
	a, ok := parseXReadGroup(x)
	if !ok {
		return time.Time{}
	}
	at := int64(math.MaxInt64)
	for i := range a.n {
		o := db.keys[string(argv[a.streamsAt+i])]
		if o == nil {
			continue
		}
		st, isStream := o.value.(*stream.Stream)
		if !isStream {
			continue
		}
		g := st.Group(a.group)
		if g == nil {
			continue
		}
		var t int64
		switch {
		case a.claim:
			t, ok = g.NextClaimable(x.now, a.minIdle)
		case g.Policy().Redelivers() && string(argv[a.streamsAt+a.n+i]) == ">":
			t, ok = g.NextDue(x.now)
		default:
			ok = false
		}
		if ok {
			at = min(at, t)
		}
	}
	if at == math.MaxInt64 {
		return time.Time{}
	}
	// Idle is measured on the record clock, which never runs behind the
	// wall clock it is read from; waking at the wall time is never early.
	return time.UnixMilli(at)
}

// waitsOnGroup reports whether a blocked command must be re-run when its
// key is deleted or changes type, to answer the error Redis gives then
// (XREADGROUP's NOGROUP or WRONGTYPE) instead of waiting on.
func waitsOnGroup(cmd *Command) bool { return cmd.Name == "xreadgroup" }
