package server

import (
	"errors"
	"math"
	"strconv"

	"github.com/redstream/redstream/resp"
	"github.com/redstream/redstream/stream"
)

var streamSpecs = []spec{
	{name: "xadd", arity: -5, flags: "write denyoom fast", first: 1, last: 1, step: 1, group: "stream", since: "5.0.0",
		syntax:  "key [NOMKSTREAM] [KEEPREF | DELREF | ACKED] [IDMPAUTO producer-id | IDMP producer-id idempotent-id] [<MAXLEN | MINID> [= | ~] threshold [LIMIT count]] [DELAY milliseconds | AT unix-time-milliseconds] <* | id> field value [field value ...]",
		summary: "Appends a new message to a stream. Creates the key if it doesn't exist.", run: xaddCommand},
	{name: "xtrim", arity: -4, flags: "write", first: 1, last: 1, step: 1, group: "stream", since: "5.0.0",
		syntax:  "key <MAXLEN | MINID> [= | ~] threshold [LIMIT count] [KEEPREF | DELREF | ACKED]",
		summary: "Deletes messages from the beginning of a stream.", run: xtrimCommand},
	{name: "xdel", arity: -3, flags: "write fast", first: 1, last: 1, step: 1, group: "stream", since: "5.0.0",
		syntax: "key id [id ...]", summary: "Returns the number of messages after removing them from a stream.", run: xdelCommand},
	{name: "xlen", arity: 2, flags: "readonly fast", first: 1, last: 1, step: 1, group: "stream", since: "5.0.0",
		syntax: "key", summary: "Return the number of messages in a stream.", run: xlenCommand},
	{name: "xrange", arity: -4, flags: "readonly", first: 1, last: 1, step: 1, group: "stream", since: "5.0.0",
		syntax: "key start end [COUNT count]", summary: "Returns the messages from a stream within a range of IDs.", run: xrangeCommand},
	{name: "xrevrange", arity: -4, flags: "readonly", first: 1, last: 1, step: 1, group: "stream", since: "5.0.0",
		syntax: "key end start [COUNT count]", summary: "Returns the messages from a stream within a range of IDs in reverse order.", run: xrangeCommand},
	{name: "xread", arity: -4, flags: "readonly blocking", group: "stream", since: "5.0.0",
		syntax:  "[COUNT count] [MAXCOUNT maxcount] [MAXSIZE maxsize] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]",
		summary: "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise.", run: xreadCommand},
	{name: "xsetid", arity: -3, flags: "write denyoom fast", first: 1, last: 1, step: 1, group: "stream", since: "5.0.0",
		syntax: "key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]", summary: "An internal command for replicating stream values.", run: xsetidCommand},
	{name: "xcfgset", arity: -2, flags: "write fast", first: 1, last: 1, step: 1, group: "stream", since: "8.6.0",
		syntax: "key [IDMP-DURATION idmp-duration] [IDMP-MAXSIZE idmp-maxsize] [MAXAGE maxage [KEEPREF | DELREF | ACKED]]", summary: "Sets the IDMP configuration parameters for a stream.", run: xcfgsetCommand},
	{name: "xinfo", arity: -2, flags: "", group: "stream", since: "5.0.0", summary: "A container for stream introspection commands."},
	{name: "xinfo|stream", arity: -3, flags: "readonly", first: 2, last: 2, step: 1, group: "stream", since: "5.0.0",
		syntax: "key [FULL [COUNT count]]", summary: "Returns information about a stream.", run: xinfoStreamCommand},
	{name: "xinfo|help", arity: 2, flags: "loading stale", group: "stream", since: "5.0.0",
		summary: "Returns helpful text about the different subcommands.", run: xinfoHelpCommand},
}

// Error replies of the stream commands, in Redis's words.
const (
	errStreamID          = "ERR Invalid stream ID specified as stream command argument"
	errXAddTop           = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	errXAddZero          = "ERR The ID specified in XADD must be greater than 0-0"
	errXAddExhausted     = "ERR The stream has exhausted the last possible ID, unable to add more items"
	errXAddTooLarge      = "ERR Elements are too large to be stored"
	errTrimBoth          = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
	errTrimMaxLen        = "ERR The MAXLEN argument must be >= 0."
	errTrimLimit         = "ERR The LIMIT argument must be >= 0."
	errTrimLimitAlone    = "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
	errTrimNoStrategy    = "ERR syntax error, XTRIM must be called with a trimming strategy"
	errTrimLimitExact    = "ERR syntax error, LIMIT cannot be used without the special ~ option"
	errIDMPTwice         = "ERR IDMP/IDMPAUTO specified multiple times"
	errIDMPExplicitID    = "ERR IDMP/IDMPAUTO can be used only with auto-generated IDs"
	errIDMPEmptyPID      = "ERR IDMP requires a non-empty producer ID"
	errIDMPEmptyIID      = "ERR IDMP requires a non-empty idempotent ID"
	errIDMPAutoEmptyPID  = "ERR IDMPAUTO requires a non-empty producer ID"
	errRangeStart        = "ERR invalid start ID for the interval"
	errRangeEnd          = "ERR invalid end ID for the interval"
	errXSetIDAdded       = "ERR entries_added must be positive"
	errXSetIDMaxDelArg   = "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
	errXSetIDMaxDel      = "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id"
	errXSetIDTop         = "ERR The ID specified in XSETID is smaller than the target stream top item"
	errXSetIDLength      = "ERR The entries_added specified in XSETID is smaller than the target stream length"
	errXCfgSetNothing    = "ERR At least one parameter must be specified: IDMP-DURATION or IDMP-MAXSIZE"
	errXCfgSetDuration   = "ERR IDMP-DURATION must be between 1 and 86400 seconds"
	errXCfgSetMaxSize    = "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"
	errXCfgSetMaxAge     = "ERR MAXAGE must be between 0 and 9223372036854775807 milliseconds"
	errXInfoSubcommand   = "ERR unknown subcommand or wrong number of arguments for '%s'. Try XINFO HELP."
	approxTrimMaxLimit   = 1_000_000 // the default LIMIT of a "~" trim is capped here
	approxTrimNodesLimit = 100       // ... and is this many nodes' worth of entries
)

// streamOf returns key's stream, or nil when key does not exist; ok is
// false (and WRONGTYPE answered) when key holds another type.
func (x *Ctx) streamOf(key []byte) (s *stream.Stream, ok bool) {
	o := x.lookup(key)
	if o == nil {
		x.countHit(false)
		return nil, true
	}
	x.countHit(true)
	s, isStream := o.value.(*stream.Stream)
	if !isStream {
		x.error(resp.ErrWrongType)
		return nil, false
	}
	return s, true
}

// existingStream is streamOf for commands that need the stream to exist:
// a missing key is answered "no such key".
func (x *Ctx) existingStream(key []byte) (*stream.Stream, bool) {
	s, ok := x.streamOf(key)
	if ok && s == nil {
		x.error(resp.ErrNoSuchKey)
		return nil, false
	}
	return s, ok
}

// streamLimits are the node limits in force (CONFIG SET applies at once).
func (x *Ctx) streamLimits() stream.Limits {
	return stream.Limits{MaxBytes: x.s.cfg.StreamNodeMaxBytes, MaxEntries: x.s.cfg.StreamNodeMaxEntries}
}

// writeID writes id as a bulk string, "ms-seq".
func writeID(w *resp.Writer, id stream.ID) {
	var buf [stream.MaxTextLen]byte
	w.Bulk(id.AppendText(buf[:0]))
}

// writeEntry writes the iterator's current entry: [id, [field, value...]].
func writeEntry(w *resp.Writer, it *stream.Iterator) {
	w.Array(2)
	writeID(w, it.ID())
	n := it.NumFields()
	w.Array(2 * n)
	for range n {
		f, v := it.Pair()
		w.Bulk(f)
		w.Bulk(v)
	}
}

// parseStrictID parses an ID argument that must be concrete, answering
// Redis's error otherwise.
func parseStrictID(x *Ctx, b []byte) (stream.ID, bool) {
	id, err := stream.ParseStrictID(b, 0)
	if err != nil {
		x.error(errStreamID)
		return id, false
	}
	return id, true
}

// xaddCommand serves XADD: parse the options, add the entry (or, for a
// remembered IDMP producer and iid, answer the original ID), then trim:
// as the options say, then what the stream's age limit no longer allows
// at the record's time.
// "*" is logged as sent: the record's time reproduces the same ID.
func xaddCommand(x *Ctx) {
	a, fv, ok := parseXAdd(x)
	if !ok {
		return
	}
	key := x.argv[1]
	s, created, ok := xaddTarget(x, key, a.noMkStream)
	if !ok {
		return
	}
	if !created {
		releaseDue(x, key, s) // first what is due by now, so IDs stay in order
	}
	if a.pid != nil && !created && xaddDuplicate(x, s, &a, fv) {
		return
	}
	var id stream.ID
	if a.delayGiven && a.due > x.now {
		id, ok = xaddDelayed(x, s, &a, fv)
	} else {
		id, ok = xaddEntry(x, s, &a, fv)
	}
	if !ok {
		return
	}
	if created {
		x.setKey(key, &Object{value: s})
	} else {
		x.modified(key)
		if !a.delayGiven || a.due <= x.now { // a delayed entry makes nothing readable yet
			x.signalReady(key)
		}
	}
	if a.pid != nil {
		s.IDMPRecord(a.pid, a.iid, id, x.now)
	}
	writeID(x.w, id)
	if a.trim.Strategy != stream.TrimNone {
		s.Trim(a.trim)
		if a.trim.Approx {
			logExactTrim(x, s, &a) // before the age trim, which replay repeats
		}
	}
	s.TrimAged(x.now)
}

// parseXAdd parses XADD's options and ID, and checks its field-value
// pairs and the 0-0 ID, with Redis's errors, before the key is looked at.
func parseXAdd(x *Ctx) (a addTrimArgs, fv [][]byte, ok bool) {
	if a, ok = parseAddTrim(x, true); !ok {
		return a, nil, false
	}
	fv = x.argv[min(a.idAt+1, len(x.argv)):] // no ID at all: no fields either
	if len(fv) < 2 || len(fv)%2 == 1 {
		x.error(resp.WrongArity(x.cmd.Name))
		return a, nil, false
	}
	if !a.auto && a.seqGiven && a.id.IsZero() {
		x.error(errXAddZero)
		return a, nil, false
	}
	return a, fv, true
}

// xaddTarget returns the stream at key, or a new one (created) that is
// stored only once the entry is in; ok is false after WRONGTYPE, or after
// the null NOMKSTREAM answers for a missing key.
func xaddTarget(x *Ctx, key []byte, noMkStream bool) (s *stream.Stream, created, ok bool) {
	if s, ok = x.streamOf(key); !ok || s != nil {
		return s, false, ok
	}
	if noMkStream {
		x.w.Null()
		return nil, false, false
	}
	return stream.New(), true, true
}

// xaddDuplicate answers a retried IDMP add with the original entry's ID
// and reports true; the duplicates counter it bumps is state, so the
// command is still logged.
func xaddDuplicate(x *Ctx, s *stream.Stream, a *addTrimArgs, fv [][]byte) bool {
	if a.iid == nil {
		a.iid = stream.AutoIID(fv)
	}
	id, dup := s.IDMPLookup(a.pid, a.iid, x.now)
	if !dup {
		return false
	}
	x.dirty++
	writeID(x.w, id)
	return true
}

// xaddEntry picks the new entry's ID and adds it, answering Redis's error
// when it cannot.
func xaddEntry(x *Ctx, s *stream.Stream, a *addTrimArgs, fv [][]byte) (stream.ID, bool) {
	if a.pid != nil && a.iid == nil {
		a.iid = stream.AutoIID(fv)
	}
	var id stream.ID
	var err error
	switch {
	case s.LastID() == stream.MaxID:
		err = stream.ErrExhausted
	case a.auto:
		id, err = s.NextID(uint64(max(x.now, 0)))
	case !a.seqGiven:
		id, err = s.NextSeq(a.id.Ms)
	default:
		id = a.id
	}
	if err == nil {
		err = s.Add(id, fv, x.streamLimits())
	}
	switch {
	case err == nil:
		return id, true
	case errors.Is(err, stream.ErrExhausted):
		x.error(errXAddExhausted)
	case errors.Is(err, stream.ErrTooLarge):
		x.error(errXAddTooLarge)
	default:
		x.error(errXAddTop)
	}
	return id, false
}

// logExactTrim makes an approximate trim ("~", which depends on how
// entries fall into nodes, and so on configuration) replay exactly: the
// record says MAXLEN = <the length left> or MINID = <the first ID left>,
// without LIMIT, as Redis rewrites what it propagates.
func logExactTrim(x *Ctx, s *stream.Stream, a *addTrimArgs) {
	var threshold []byte
	if a.trim.Strategy == stream.TrimMaxLen {
		threshold = strconv.AppendUint(nil, s.Len(), 10)
	} else {
		first, ok := s.FirstEntryID(true)
		if !ok {
			first = stream.MaxID // nothing left: everything was below it
		}
		threshold = first.AppendText(nil)
	}
	argv := make([][]byte, 0, len(x.argv))
	for i := 0; i < len(x.argv); i++ {
		switch {
		case a.isLimitAt(i):
			i++ // drop LIMIT and its count
			continue
		case i == a.opAt:
			argv = append(argv, []byte("="))
		case i == a.trimAt:
			argv = append(argv, threshold)
		default:
			argv = append(argv, x.argv[i])
		}
	}
	x.rewriteLog(argv...)
}

// xtrimCommand serves XTRIM.
func xtrimCommand(x *Ctx) {
	a, ok := parseAddTrim(x, false)
	if !ok {
		return
	}
	key := x.argv[1]
	s, ok := x.streamOf(key)
	if !ok {
		return
	}
	if s == nil {
		x.w.Int(0)
		return
	}
	n := s.Trim(a.trim)
	if n > 0 {
		x.modified(key)
		if a.trim.Approx {
			logExactTrim(x, s, &a)
		}
	}
	x.w.Int(n)
}

// xdelCommand serves XDEL. Like Redis it looks the key up before it
// parses the IDs, and parses them all before deleting any.
func xdelCommand(x *Ctx) {
	key := x.argv[1]
	s, ok := x.streamOf(key)
	if !ok {
		return
	}
	if s == nil {
		x.w.Int(0)
		return
	}
	ids := make([]stream.ID, 0, len(x.argv)-2)
	for _, arg := range x.argv[2:] {
		id, ok := parseStrictID(x, arg)
		if !ok {
			return
		}
		ids = append(ids, id)
	}
	var n int64
	for _, id := range ids {
		if s.Delete(id) || s.CancelDelayed(id) { // a reserved ID cancels its delayed entry
			n++
		}
	}
	if n > 0 {
		x.modified(key)
	}
	x.w.Int(n)
}

func xlenCommand(x *Ctx) {
	s, ok := x.streamOf(x.argv[1])
	if !ok {
		return
	}
	if s == nil {
		x.w.Int(0)
		return
	}
	x.w.Int(int64(s.Len()))
}

// xrangeCommand serves XRANGE and XREVRANGE: bounds may be "-", "+", an
// incomplete ID (a start takes sequence 0, an end the largest), or
// exclusive with "(".
func xrangeCommand(x *Ctx) {
	rev := x.cmd.Name == "xrevrange"
	startArg, endArg := x.argv[2], x.argv[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, end, ok := parseRange(x, startArg, endArg)
	if !ok {
		return
	}
	count, ok := parseRangeCount(x)
	if !ok {
		return
	}
	s, ok := x.streamOf(x.argv[1])
	switch {
	case !ok:
		return
	case s == nil:
		x.w.Array(0)
		return
	case count == 0:
		x.w.NullArray() // Redis's answer to COUNT 0 (or negative) on a stream
		return
	}
	mark := x.w.Mark()
	n := 0
	it := s.Range(start, end, rev)
	for ; (count < 0 || n < count) && it.Next(); n++ {
		writeEntry(x.w, it)
	}
	it.Close()
	x.w.InsertLen(mark, '*', n)
}

// parseRange parses XRANGE's bounds, turning exclusive ones inclusive.
func parseRange(x *Ctx, startArg, endArg []byte) (start, end stream.ID, ok bool) {
	start, excl, err := stream.ParseRangeID(startArg, 0)
	if err != nil {
		x.error(errStreamID)
		return start, end, false
	}
	if excl {
		if start, err = start.Incr(); err != nil {
			x.error(errRangeStart)
			return start, end, false
		}
	}
	end, excl, err = stream.ParseRangeID(endArg, math.MaxUint64)
	if err != nil {
		x.error(errStreamID)
		return start, end, false
	}
	if excl {
		if end, err = end.Decr(); err != nil {
			x.error(errRangeEnd)
			return start, end, false
		}
	}
	return start, end, true
}

// parseRangeCount parses XRANGE's optional COUNT (repeatable; the last
// wins); -1 means no COUNT, and a negative count counts as 0.
func parseRangeCount(x *Ctx) (int, bool) {
	count := -1
	for i := 4; i < len(x.argv); i++ {
		if !eqFold(x.argv[i], "count") || i+1 >= len(x.argv) {
			x.error(resp.ErrSyntax)
			return 0, false
		}
		i++
		n, ok := resp.ParseInt(x.argv[i])
		if !ok {
			x.error(resp.ErrNotInteger)
			return 0, false
		}
		count = int(min(max(n, 0), math.MaxInt32))
	}
	return count, true
}

// eqFold compares an argument with a lower-case keyword, ignoring case,
// without allocating.
func eqFold(arg []byte, word string) bool {
	if len(arg) != len(word) {
		return false
	}
	for i := range arg {
		c := arg[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != word[i] {
			return false
		}
	}
	return true
}
