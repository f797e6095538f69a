package server

import (
	"bytes"
	"math"
	"slices"
	"time"

	"github.com/redstream/redstream/resp"
	"github.com/redstream/redstream/stream"
)

// XREAD's own errors. Redis 8.10's texts for MAXCOUNT and MAXSIZE are not
// documented; these say what the documentation says.
const (
	errXReadUnbalanced = "ERR Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' must be specified."
	errXReadGroup      = "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
	errXReadNoAck      = "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
	errXReadClaim      = "ERR The CLAIM option is only supported by XREADGROUP. You called XREAD instead."
	errXReadGT         = "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."
	errXReadMaxCount   = "ERR MAXCOUNT must be a positive integer"
	errXReadMaxSize    = "ERR MAXSIZE must be a positive integer"
	errXReadMaxBelow   = "ERR MAXCOUNT must be greater than or equal to COUNT"
)

// xreadArgs is a parsed XREAD.
type xreadArgs struct {
	count     int   // per stream; 0 = no limit
	countSet  bool  // COUNT given
	maxCount  int   // over all streams; 0 = no limit
	maxSize   int64 // reply bytes over all streams; 0 = no limit
	block     bool
	deadline  time.Time // zero: block forever
	streamsAt int       // argv index of the first key
	n         int       // number of streams
	ids       []stream.ID
}

// xreadCommand serves XREAD: it answers at once with the entries past
// each given ID, or blocks until an XADD to one of the keys brings some.
func xreadCommand(x *Ctx) {
	a, ok := parseXRead(x)
	if !ok || !resolveXReadIDs(x, &a) {
		return
	}
	if serveXRead(x, &a) {
		return
	}
	if !a.block {
		x.w.NullArray()
		return
	}
	// Before blocking, "$" becomes the ID it meant now, so that a re-run
	// after an XADD only sees what came later. (The server keeps a copy
	// of x.argv for the re-run; argv's own slice is the reader's.)
	x.argv = resolveDollars(x.argv, &a)
	x.block(uniqueKeys(x.argv[a.streamsAt:a.streamsAt+a.n]), a.deadline)
}

// resolveDollars returns argv with each "$" ID replaced by the ID it
// stands for now; argv itself is not changed (it aliases the request).
func resolveDollars(argv [][]byte, a *xreadArgs) [][]byte {
	out := argv
	for i := range a.n {
		at := a.streamsAt + a.n + i
		if len(argv[at]) != 1 || argv[at][0] != '$' {
			continue
		}
		if &out[0] == &argv[0] {
			out = slices.Clone(argv)
		}
		out[at] = a.ids[i].AppendText(nil)
	}
	return out
}

// uniqueKeys drops repeated keys: a client waits on each key once.
func uniqueKeys(keys [][]byte) [][]byte {
	out := make([][]byte, 0, len(keys))
	for _, k := range keys {
		if !slices.ContainsFunc(out, func(o []byte) bool { return bytes.Equal(o, k) }) {
			out = append(out, k)
		}
	}
	return out
}

// parseXRead parses XREAD's options, in order, with Redis's errors.
func parseXRead(x *Ctx) (a xreadArgs, ok bool) {
	if !parseInOrder(x, a.parseOption) {
		return a, false
	}
	switch {
	case a.streamsAt == 0:
		x.error(resp.ErrSyntax)
		return a, false
	case a.maxCount > 0 && a.countSet && a.maxCount < a.count:
		x.error(errXReadMaxBelow)
		return a, false
	}
	return a, true
}

// parseOption parses the option at argv[i] and returns the index of its
// last argument (past the end for STREAMS, which ends the options).
func (a *xreadArgs) parseOption(x *Ctx, i int) (int, string) {
	if msg, ok := a.parseShared(x, i); ok {
		return i + 1, msg
	}
	more := len(x.argv) - 1 - i
	opt := x.argv[i]
	switch {
	case more > 0 && eqFold(opt, "streams"):
		a.streamsAt = i + 1
		if more%2 != 0 {
			return len(x.argv), errXReadUnbalanced
		}
		a.n = more / 2
		return len(x.argv), ""
	case more > 1 && eqFold(opt, "group"):
		return i, errXReadGroup
	case eqFold(opt, "noack"):
		return i, errXReadNoAck
	case more > 0 && eqFold(opt, "claim"):
		return i, errXReadClaim
	}
	return i, resp.ErrSyntax
}

// parseInOrder parses the options after the command name from left to
// right with parse, which returns the index of the option's last argument;
// the first error is answered and stops it.
func parseInOrder(x *Ctx, parse func(x *Ctx, i int) (last int, msg string)) bool {
	for i := 1; i < len(x.argv); i++ {
		var msg string
		if i, msg = parse(x, i); msg != "" {
			x.error(msg)
			return false
		}
	}
	return true
}

// parseShared parses argv[i] and its argument if it is an option XREAD
// and XREADGROUP share (BLOCK, COUNT, MAXCOUNT, MAXSIZE); ok is false when
// it is not one of them.
func (a *xreadArgs) parseShared(x *Ctx, i int) (msg string, ok bool) {
	if i+1 >= len(x.argv) {
		return "", false
	}
	opt, arg := x.argv[i], x.argv[i+1]
	switch {
	case eqFold(opt, "block"):
		a.block = true
		a.deadline, msg = parseBlockMillis(x, arg)
	case eqFold(opt, "count"):
		a.countSet = true
		a.count, msg = parseCountArg(arg, false, "")
	case eqFold(opt, "maxcount"):
		a.maxCount, msg = parseCountArg(arg, true, errXReadMaxCount)
	case eqFold(opt, "maxsize"):
		var n int
		n, msg = parseCountArg(arg, true, errXReadMaxSize)
		a.maxSize = int64(n)
	default:
		return "", false
	}
	return msg, true
}

// parseBlockMillis parses BLOCK's milliseconds into a deadline (zero for
// "forever"), as Redis reads millisecond timeouts.
func parseBlockMillis(x *Ctx, arg []byte) (time.Time, string) {
	ms, ok := resp.ParseInt(arg)
	switch {
	case !ok:
		return time.Time{}, resp.ErrTimeoutNotInt
	case ms < 0:
		return time.Time{}, resp.ErrTimeoutNegative
	case ms == 0:
		return time.Time{}, ""
	case ms > math.MaxInt64-x.now:
		return time.Time{}, resp.ErrTimeoutRange
	}
	return time.UnixMilli(x.now + ms), ""
}

// parseCountArg parses a count: a negative one counts as 0 (COUNT), or,
// with positive, anything below 1 is the error msg (MAXCOUNT, MAXSIZE).
func parseCountArg(arg []byte, positive bool, msg string) (int, string) {
	n, ok := resp.ParseInt(arg)
	switch {
	case !ok:
		return 0, resp.ErrNotInteger
	case positive && n < 1:
		return 0, msg
	}
	return int(min(max(n, 0), math.MaxInt32)), ""
}

// resolveXReadIDs checks each key's type and turns each ID argument into
// the ID entries must follow: "$" the stream's last ID, "+" just before
// its last entry (so that entry is read), anything else as given.
func resolveXReadIDs(x *Ctx, a *xreadArgs) bool {
	a.ids = make([]stream.ID, a.n)
	for i := range a.n {
		s, ok := x.streamOf(x.argv[a.streamsAt+i])
		if !ok {
			return false
		}
		arg := x.argv[a.streamsAt+a.n+i]
		switch {
		case len(arg) == 1 && arg[0] == '$':
			if s != nil {
				a.ids[i] = s.LastID()
			}
		case len(arg) == 1 && arg[0] == '+':
			if s == nil {
				continue
			}
			if last, ok := s.LastEntryID(); ok {
				a.ids[i], _ = last.Decr()
			}
		case len(arg) == 1 && arg[0] == '>':
			x.error(errXReadGT)
			return false
		default:
			id, ok := parseStrictID(x, arg)
			if !ok {
				return false
			}
			a.ids[i] = id
		}
	}
	return true
}

// xreadBudget tracks MAXCOUNT and MAXSIZE over the whole reply.
type xreadBudget struct {
	entries  int   // entries written so far
	bytes    int64 // their size, as Iterator.Size counts it
	maxCount int
	maxSize  int64
	spent    bool // an entry was refused (XREADGROUP serves no stream after)
}

// admits reports whether the iterator's current entry may be added. The
// first entry always may, however large.
func (b *xreadBudget) admits(it *stream.Iterator) bool {
	if b.maxCount > 0 && b.entries >= b.maxCount {
		return false
	}
	if b.maxSize > 0 {
		size := int64(it.Size())
		if b.entries > 0 && b.bytes+size > b.maxSize {
			return false
		}
		b.bytes += size
	}
	b.entries++
	return true
}

// serveXRead writes the entries past each stream's ID, as an array of
// [key, entries] pairs (a map in RESP3), and reports whether there were
// any; when there are none it writes nothing.
func serveXRead(x *Ctx, a *xreadArgs) bool {
	budget := xreadBudget{maxCount: a.maxCount, maxSize: a.maxSize}
	mark := x.w.Mark()
	served := 0
	for i := range a.n {
		ok, full := serveXReadStream(x, x.argv[a.streamsAt+i], a.ids[i], a.count, &budget)
		if ok {
			served++
		}
		if full {
			break
		}
	}
	if served == 0 {
		return false
	}
	if x.w.RESP3() {
		x.w.InsertLen(mark, '%', served) // key => entries
	} else {
		x.w.InsertLen(mark, '*', served) // [key, entries] pairs
	}
	return true
}

// serveXReadStream writes key and its entries past after, if it has any
// the budget admits (served); full says the budget ran out.
func serveXReadStream(x *Ctx, key []byte, after stream.ID, count int, budget *xreadBudget) (served, full bool) {
	s, _ := x.streamOf(key)
	if s == nil || s.Len() == 0 {
		return false, false
	}
	start, err := after.Incr()
	if err != nil {
		return false, false // nothing can follow the largest ID
	}
	it := s.Range(start, stream.MaxID, false)
	if !it.Next() {
		return false, false
	}
	if !budget.admits(it) {
		it.Close()
		return false, true // the reply is full
	}
	if !x.w.RESP3() {
		x.w.Array(2)
	}
	x.w.Bulk(key)
	return true, writeStreamEntries(x, it, count, budget)
}

// writeStreamEntries writes the array of one stream's entries, starting
// with the iterator's current (already admitted) one, up to count (0: no
// limit) and while the budget admits them. It reports whether the budget
// ran out (an entry was refused, or MAXCOUNT is reached).
func writeStreamEntries(x *Ctx, it *stream.Iterator, count int, budget *xreadBudget) (full bool) {
	mark := x.w.Mark()
	n := 0
	for {
		writeEntry(x.w, it)
		n++
		if count > 0 && n >= count || !it.Next() {
			break
		}
		if !budget.admits(it) {
			full = true
			break
		}
	}
	it.Close()
	x.w.InsertLen(mark, '*', n)
	return full || (budget.maxCount > 0 && budget.entries >= budget.maxCount)
}
