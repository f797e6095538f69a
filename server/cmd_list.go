package server

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/resp"
)

var listSpecs = []spec{
	{name: "lpush", arity: -3, flags: "write denyoom fast", first: 1, last: 1, step: 1, group: "list", since: "1.0.0",
		syntax: "key element [element ...]", summary: "Prepends one or more elements to a list. Creates the key if it doesn't exist.", run: pushCommand},
	{name: "rpush", arity: -3, flags: "write denyoom fast", first: 1, last: 1, step: 1, group: "list", since: "1.0.0",
		syntax: "key element [element ...]", summary: "Appends one or more elements to a list. Creates the key if it doesn't exist.", run: pushCommand},
	{name: "lpushx", arity: -3, flags: "write denyoom fast", first: 1, last: 1, step: 1, group: "list", since: "2.2.0",
		syntax: "key element [element ...]", summary: "Prepends one or more elements to a list only when the list exists.", run: pushCommand},
	{name: "rpushx", arity: -3, flags: "write denyoom fast", first: 1, last: 1, step: 1, group: "list", since: "2.2.0",
		syntax: "key element [element ...]", summary: "Appends an element to a list only when the list exists.", run: pushCommand},
	{name: "lpop", arity: -2, flags: "write fast", first: 1, last: 1, step: 1, group: "list", since: "1.0.0",
		syntax: "key [count]", summary: "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", run: popCommand},
	{name: "rpop", arity: -2, flags: "write fast", first: 1, last: 1, step: 1, group: "list", since: "1.0.0",
		syntax: "key [count]", summary: "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", run: popCommand},
	{name: "llen", arity: 2, flags: "readonly fast", first: 1, last: 1, step: 1, group: "list", since: "1.0.0",
		syntax: "key", summary: "Returns the length of a list.", run: llenCommand},
	{name: "lrange", arity: 4, flags: "readonly", first: 1, last: 1, step: 1, group: "list", since: "1.0.0",
		syntax: "key start stop", summary: "Returns a range of elements from a list.", run: lrangeCommand},
	{name: "lindex", arity: 3, flags: "readonly", first: 1, last: 1, step: 1, group: "list", since: "1.0.0",
		syntax: "key index", summary: "Returns an element from a list by its index.", run: lindexCommand},
	{name: "lset", arity: 4, flags: "write denyoom", first: 1, last: 1, step: 1, group: "list", since: "1.0.0",
		syntax: "key index element", summary: "Sets the value of an element in a list by its index.", run: lsetCommand},
	{name: "linsert", arity: 5, flags: "write denyoom", first: 1, last: 1, step: 1, group: "list", since: "2.2.0",
		syntax: "key <BEFORE | AFTER> pivot element", summary: "Inserts an element before or after another element in a list.", run: linsertCommand},
	{name: "lrem", arity: 4, flags: "write", first: 1, last: 1, step: 1, group: "list", since: "1.0.0",
		syntax: "key count element", summary: "Removes elements from a list. Deletes the list if the last element was removed.", run: lremCommand},
	{name: "ltrim", arity: 4, flags: "write", first: 1, last: 1, step: 1, group: "list", since: "1.0.0",
		syntax: "key start stop", summary: "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", run: ltrimCommand},
	{name: "lpos", arity: -3, flags: "readonly", first: 1, last: 1, step: 1, group: "list", since: "6.0.6",
		syntax: "key element [RANK rank] [COUNT num-matches] [MAXLEN len]", summary: "Returns the index of matching elements in a list.", run: lposCommand},
	{name: "lmove", arity: 5, flags: "write denyoom", first: 1, last: 2, step: 1, group: "list", since: "6.2.0",
		syntax: "source destination <LEFT | RIGHT> <LEFT | RIGHT>", summary: "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", run: lmoveCommand},
	{name: "rpoplpush", arity: 3, flags: "write denyoom", first: 1, last: 2, step: 1, group: "list", since: "1.2.0",
		syntax: "source destination", summary: "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", run: lmoveCommand},
	{name: "lmpop", arity: -4, flags: "write", group: "list", since: "7.0.0",
		syntax: "numkeys key [key ...] <LEFT | RIGHT> [COUNT count]", summary: "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", run: lmpopCommand},
	{name: "lmovem", arity: -5, flags: "write denyoom", first: 1, last: 2, step: 1, group: "list", since: "8.10.0",
		syntax: "source destination <LEFT | RIGHT> <LEFT | RIGHT> [<COUNT count | EXACTLY exactly> <OBO | BULK>]", summary: "Moves up to (or exactly) a number of elements from one list to another and returns them. Deletes the source list if it becomes empty.", run: lmovemCommand},
	{name: "blpop", arity: -3, flags: "write blocking", first: 1, last: -2, step: 1, group: "list", since: "2.0.0",
		syntax: "key [key ...] timeout", summary: "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", run: bpopCommand},
	{name: "brpop", arity: -3, flags: "write blocking", first: 1, last: -2, step: 1, group: "list", since: "2.0.0",
		syntax: "key [key ...] timeout", summary: "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", run: bpopCommand},
	{name: "blmove", arity: 6, flags: "write denyoom blocking", first: 1, last: 2, step: 1, group: "list", since: "6.2.0",
		syntax: "source destination <LEFT | RIGHT> <LEFT | RIGHT> timeout", summary: "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", run: lmoveCommand},
	{name: "brpoplpush", arity: 4, flags: "write denyoom blocking", first: 1, last: 2, step: 1, group: "list", since: "2.2.0",
		syntax: "source destination timeout", summary: "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", run: lmoveCommand},
	{name: "blmpop", arity: -5, flags: "write blocking", group: "list", since: "7.0.0",
		syntax: "timeout numkeys key [key ...] <LEFT | RIGHT> [COUNT count]", summary: "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", run: lmpopCommand},
	{name: "blmovem", arity: -6, flags: "write denyoom blocking", first: 1, last: 2, step: 1, group: "list", since: "8.10.0",
		syntax: "source destination <LEFT | RIGHT> <LEFT | RIGHT> timeout [<COUNT count | EXACTLY exactly> <OBO | BULK>]", summary: "Moves up to (or exactly) a number of elements from one list to another and returns them. Blocks until the elements are available otherwise. Deletes the source list if it becomes empty.", run: lmovemCommand},
}

// errLongRange is Redis's reply to an argument of LONG_MIN where only
// -LONG_MAX..LONG_MAX makes sense (LREM count, LPOS RANK).
const errLongRange = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"

// end is a list end: head (LEFT) or tail (RIGHT).
type end bool

const (
	head end = false
	tail end = true
)

func (e end) word() []byte {
	if e == head {
		return []byte("LEFT")
	}
	return []byte("RIGHT")
}

// parseEnd parses LEFT|RIGHT, answering a syntax error otherwise.
func parseEnd(x *Ctx, arg []byte) (end, bool) {
	switch {
	case bytes.EqualFold(arg, []byte("left")):
		return head, true
	case bytes.EqualFold(arg, []byte("right")):
		return tail, true
	}
	x.error(resp.ErrSyntax)
	return head, false
}

// parseTimeout parses a blocking command's timeout in seconds (a float)
// into a deadline; zero means forever. Errors are Redis's.
func parseTimeout(x *Ctx, arg []byte) (time.Time, bool) {
	secs, ok := resp.ParseFloat(arg)
	if !ok {
		// Redis reads a long double, where 1e400 is a number: too big
		// to be a timeout, not malformed.
		if f, err := strconv.ParseFloat(string(arg), 64); err != nil && math.IsInf(f, 0) && arg[0] != ' ' {
			secs, ok = f, true
		}
	}
	if !ok {
		x.error(resp.ErrTimeoutNotFloat)
		return time.Time{}, false
	}
	ms := secs * 1000
	if ms < 0 {
		x.error(resp.ErrTimeoutNegative)
		return time.Time{}, false
	}
	if ms > math.MaxInt64 {
		x.error(resp.ErrTimeoutRange)
		return time.Time{}, false
	}
	tval := int64(math.Ceil(ms))
	if tval == 0 {
		return time.Time{}, true
	}
	if tval > math.MaxInt64-x.now {
		x.error(resp.ErrTimeoutRange)
		return time.Time{}, false
	}
	return time.UnixMilli(x.now + tval), true
}

// newList makes an empty list with the configured node size and
// compression depth.
func (x *Ctx) newList() *listpack.Quicklist {
	q := listpack.NewQuicklist(x.s.cfg.ListMaxListpackSize)
	q.SetCompressDepth(x.s.cfg.ListCompressDepth)
	return q
}

// followConfig brings list q in line with CONFIG before a command adds
// to it. The node size applies to later inserts (CONFIG SET changed it).
// The compression depth is taken only while q is one bare listpack:
// Redis fixes a list's depth when the list outgrows its listpack (and
// when it is loaded), so a CONFIG SET leaves longer lists as they are.
func (x *Ctx) followConfig(q *listpack.Quicklist) {
	if f := x.s.cfg.ListMaxListpackSize; f != q.Fill() {
		q.SetFill(f)
	}
	if d := x.s.cfg.ListCompressDepth; d != q.CompressDepth() && q.Encoding() == "listpack" {
		q.SetCompressDepth(d) // one node: nothing to compress yet
	}
}

// compressLoaded applies list-compress-depth to a value just loaded or
// restored, if it is a list: Redis builds such a list with the depth
// configured at the time.
func compressLoaded(v any, depth int) {
	if q, ok := v.(*listpack.Quicklist); ok && depth != q.CompressDepth() {
		q.SetCompressDepth(depth)
	}
}

// push adds v at the chosen end of the list at key, creating it when
// missing (existing false), and wakes clients blocked on key.
func (x *Ctx) push(key []byte, q *listpack.Quicklist, where end, vals ...[]byte) *listpack.Quicklist {
	if q == nil {
		q = x.newList()
		x.setKey(key, &Object{value: q})
	} else {
		x.followConfig(q)
		x.modified(key)
		x.signalReady(key)
	}
	for _, v := range vals {
		if where == head {
			q.PushHead(v)
		} else {
			q.PushTail(v)
		}
	}
	return q
}

// pop removes up to n elements from the chosen end, in pop order, and
// deletes the key once the list is empty.
func (x *Ctx) pop(key []byte, q *listpack.Quicklist, where end, n int) [][]byte {
	n = min(n, q.Len())
	out := make([][]byte, 0, n)
	for range n {
		var v []byte
		if where == head {
			v, _ = q.PopHead()
		} else {
			v, _ = q.PopTail()
		}
		out = append(out, v)
	}
	x.modified(key)
	x.dropIfEmpty(key, q)
	return out
}

// dropIfEmpty deletes key when its list has no elements left: Redis never
// keeps an empty list.
func (x *Ctx) dropIfEmpty(key []byte, q *listpack.Quicklist) {
	if q.Len() == 0 {
		x.db.remove(string(key))
	}
}

// pushCommand serves LPUSH, RPUSH, LPUSHX and RPUSHX.
func pushCommand(x *Ctx) {
	name := x.cmd.Name
	where := head
	if name[0] == 'r' {
		where = tail
	}
	key := x.argv[1]
	q, ok := x.list(key)
	if !ok {
		return
	}
	if q == nil && strings.HasSuffix(name, "x") {
		x.w.Int(0)
		return
	}
	q = x.push(key, q, where, x.argv[2:]...)
	x.w.Int(int64(q.Len()))
}

// popCommand serves LPOP and RPOP with an optional count.
func popCommand(x *Ctx) {
	where := head
	if x.cmd.Name == "rpop" {
		where = tail
	}
	if len(x.argv) > 3 {
		x.error(resp.WrongArity(x.cmd.Name))
		return
	}
	hasCount := len(x.argv) == 3
	count := int64(1)
	if hasCount {
		n, ok := resp.ParseInt(x.argv[2])
		if !ok || n < 0 {
			x.error(resp.ErrNotPositive)
			return
		}
		count = n
	}
	key := x.argv[1]
	q, ok := x.list(key)
	switch {
	case !ok:
		return
	case q == nil && hasCount:
		x.w.NullArray()
		return
	case q == nil:
		x.w.Null()
		return
	case hasCount && count == 0:
		x.w.Array(0)
		return
	}
	vals := x.pop(key, q, where, int(min(count, math.MaxInt32)))
	if !hasCount {
		x.w.Bulk(vals[0])
		return
	}
	writeBulks(x.w, vals)
}

func writeBulks(w *resp.Writer, vals [][]byte) {
	w.Array(len(vals))
	for _, v := range vals {
		w.Bulk(v)
	}
}

func llenCommand(x *Ctx) {
	q, ok := x.list(x.argv[1])
	if !ok {
		return
	}
	if q == nil {
		x.w.Int(0)
		return
	}
	x.w.Int(int64(q.Len()))
}

// parseInts parses integer arguments, answering Redis's error if one is
// not an integer.
func parseInts(x *Ctx, args ...[]byte) ([]int64, bool) {
	out := make([]int64, len(args))
	for i, a := range args {
		n, ok := resp.ParseInt(a)
		if !ok {
			x.error(resp.ErrNotInteger)
			return nil, false
		}
		out[i] = n
	}
	return out, true
}

// clampIndex narrows an int64 index to int without changing its meaning
// for any list that fits in memory.
func clampIndex(n int64) int {
	return int(max(min(n, math.MaxInt32), math.MinInt32))
}

func lrangeCommand(x *Ctx) {
	n, ok := parseInts(x, x.argv[2], x.argv[3])
	if !ok {
		return
	}
	q, ok := x.list(x.argv[1])
	if !ok {
		return
	}
	if q == nil {
		x.w.Array(0)
		return
	}
	start, stop := clampIndex(n[0]), clampIndex(n[1])
	count := rangeLen(q.Len(), start, stop)
	// The header goes first and the buffer is grown once, by the range's
	// share of the list's bytes: a big range is written in one pass, not
	// built by doubling and then moved to put its header in front.
	x.w.Array(count)
	if l := q.Len(); count > 0 {
		x.w.Grow(int(int64(q.Bytes()) * int64(count) / int64(l)))
	}
	q.Range(start, stop, func(v []byte) bool {
		x.w.Bulk(v)
		return true
	})
}

// rangeLen is how many elements LRANGE start stop takes from a list of n,
// with Redis's rules for negative and out-of-range indexes.
func rangeLen(n, start, stop int) int {
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start, stop = max(start, 0), min(stop, n-1)
	return max(stop-start+1, 0)
}

func lindexCommand(x *Ctx) {
	q, ok := x.list(x.argv[1]) // Redis looks the key up before parsing the index
	if !ok {
		return
	}
	if q == nil {
		x.w.Null()
		return
	}
	n, ok := parseInts(x, x.argv[2])
	if !ok {
		return
	}
	v, found := q.Index(clampIndex(n[0]))
	if !found {
		x.w.Null()
		return
	}
	x.w.Bulk(v)
}

func lsetCommand(x *Ctx) {
	key := x.argv[1]
	q, ok := x.list(key)
	switch {
	case !ok:
		return
	case q == nil:
		x.error(resp.ErrNoSuchKey)
		return
	}
	n, ok := parseInts(x, x.argv[2])
	if !ok {
		return
	}
	x.followConfig(q)
	if !q.Set(clampIndex(n[0]), x.argv[3]) {
		x.error(resp.ErrIndexRange)
		return
	}
	x.modified(key)
	x.w.OK()
}

func linsertCommand(x *Ctx) {
	var after bool
	switch {
	case bytes.EqualFold(x.argv[2], []byte("before")):
	case bytes.EqualFold(x.argv[2], []byte("after")):
		after = true
	default:
		x.error(resp.ErrSyntax)
		return
	}
	key, pivot := x.argv[1], x.argv[3]
	q, ok := x.list(key)
	switch {
	case !ok:
		return
	case q == nil:
		x.w.Int(0)
		return
	}
	at := -1
	q.Iter(false, func(i int, v []byte) bool {
		if bytes.Equal(v, pivot) {
			at = i
			return false
		}
		return true
	})
	if at < 0 {
		x.w.Int(-1)
		return
	}
	x.followConfig(q)
	if after {
		q.InsertAfter(at, x.argv[4])
	} else {
		q.Insert(at, x.argv[4])
	}
	x.modified(key)
	x.signalReady(key)
	x.w.Int(int64(q.Len()))
}

func lremCommand(x *Ctx) {
	n, ok := parseInts(x, x.argv[2])
	if !ok {
		return
	}
	if n[0] == math.MinInt64 {
		x.error(errLongRange)
		return
	}
	key := x.argv[1]
	q, ok := x.list(key)
	switch {
	case !ok:
		return
	case q == nil:
		x.w.Int(0)
		return
	}
	removed := q.RemoveValue(x.argv[3], clampIndex(n[0]))
	if removed > 0 {
		x.modified(key)
		x.dropIfEmpty(key, q)
	}
	x.w.Int(int64(removed))
}

func ltrimCommand(x *Ctx) {
	n, ok := parseInts(x, x.argv[2], x.argv[3])
	if !ok {
		return
	}
	key := x.argv[1]
	q, ok := x.list(key)
	switch {
	case !ok:
		return
	case q == nil:
		x.w.OK()
		return
	}
	llen := int64(q.Len())
	start, stop := n[0], n[1]
	if start < 0 {
		start = max(llen+start, 0)
	}
	if stop < 0 {
		stop = llen + stop
	}
	var ltrim, rtrim int64
	if start > stop || start >= llen {
		ltrim, rtrim = llen, 0
	} else {
		stop = min(stop, llen-1)
		ltrim, rtrim = start, llen-stop-1
	}
	q.DeleteRange(0, int(ltrim))
	q.DeleteRange(-int(rtrim), int(rtrim))
	if ltrim+rtrim > 0 {
		x.modified(key)
		x.dropIfEmpty(key, q)
	}
	x.w.OK()
}

// lposCommand finds matches of an element, honouring RANK (which match
// to start from, negative from the tail), COUNT (0 = all) and MAXLEN (how
// many elements to look at).
func lposCommand(x *Ctx) {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for i := 3; i < len(x.argv); i++ {
		opt := strings.ToLower(x.arg(i))
		if i+1 >= len(x.argv) || (opt != "rank" && opt != "count" && opt != "maxlen") {
			x.error(resp.ErrSyntax)
			return
		}
		i++
		n, isInt := resp.ParseInt(x.argv[i])
		switch {
		case opt == "rank" && !isInt:
			x.error(resp.ErrNotInteger)
			return
		case opt == "rank" && n == math.MinInt64:
			x.error(errLongRange)
			return
		case opt == "rank" && n == 0:
			x.error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
			return
		case opt == "rank":
			rank = n
		case opt == "count" && (!isInt || n < 0): // Redis gives this text for both
			x.error("ERR COUNT can't be negative")
			return
		case opt == "count":
			count = n
		case !isInt || n < 0:
			x.error("ERR MAXLEN can't be negative")
			return
		default:
			maxlen = n
		}
	}
	q, ok := x.list(x.argv[1])
	if !ok {
		return
	}
	var matches []int64
	if q != nil {
		matches = findMatches(q, x.argv[2], rank, count, maxlen)
	}
	if count == -1 {
		if len(matches) == 0 {
			x.w.Null()
		} else {
			x.w.Int(matches[0])
		}
		return
	}
	x.w.Array(len(matches))
	for _, m := range matches {
		x.w.Int(m)
	}
}

func findMatches(q *listpack.Quicklist, elem []byte, rank, count, maxlen int64) []int64 {
	reverse := rank < 0
	if reverse {
		rank = -rank
	}
	want := count
	if want <= 0 {
		want = math.MaxInt64 // COUNT 0: all; no COUNT: the first
		if count == -1 {
			want = 1
		}
	}
	var out []int64
	seen := int64(0)
	q.Iter(reverse, func(i int, v []byte) bool {
		if maxlen > 0 && seen >= maxlen {
			return false
		}
		seen++
		if !bytes.Equal(v, elem) {
			return true
		}
		if rank > 1 {
			rank--
			return true
		}
		out = append(out, int64(i))
		return int64(len(out)) < want
	})
	return out
}

// lmoveCommand serves LMOVE, RPOPLPUSH, BLMOVE and BRPOPLPUSH.
func lmoveCommand(x *Ctx) {
	from, to := tail, head // RPOPLPUSH
	var deadline time.Time
	switch x.cmd.Name {
	case "lmove", "blmove":
		var ok1, ok2 bool
		if from, ok1 = parseEnd(x, x.argv[3]); !ok1 {
			return
		}
		if to, ok2 = parseEnd(x, x.argv[4]); !ok2 {
			return
		}
	}
	if x.cmd.Flags&FlagBlocking != 0 {
		var ok bool
		if deadline, ok = parseTimeout(x, x.argv[len(x.argv)-1]); !ok {
			return
		}
	}
	src, dst := x.argv[1], x.argv[2]
	vals, ok := x.move(src, dst, from, to, 1, false)
	switch {
	case !ok:
		return
	case vals == nil && x.cmd.Flags&FlagBlocking != 0:
		x.block([][]byte{src}, deadline)
		return
	case vals == nil:
		x.w.Null()
		return
	}
	if x.cmd.Flags&FlagBlocking != 0 {
		x.rewriteLog([]byte("LMOVE"), src, dst, from.word(), to.word())
	}
	x.w.Bulk(vals[0])
}

// move pops n elements from src and pushes them onto dst, one by one, or
// as a block that keeps their order in src (bulk). It returns the moved
// elements in the order they now have in dst, or nil if src is empty; ok
// is false after a WRONGTYPE reply (then nothing moved).
func (x *Ctx) move(src, dst []byte, from, to end, n int, bulk bool) (moved [][]byte, ok bool) {
	sq, ok := x.list(src)
	if !ok || sq == nil {
		return nil, ok
	}
	dq, ok := x.list(dst)
	if !ok {
		return nil, false
	}
	popped := make([][]byte, 0, min(n, sq.Len()))
	for len(popped) < n && sq.Len() > 0 {
		v, _ := popAt(sq, from)
		popped = append(popped, v)
	}
	inDst := popped // bulk: the elements in their order in src
	if bulk && from == tail {
		inDst = reversed(popped)
	}
	pushOrder := popped
	if bulk && to == head {
		pushOrder = reversed(inDst)
	} else if bulk {
		pushOrder = inDst
	}
	if !bulk && to == head {
		inDst = reversed(popped)
	}
	if string(src) == string(dst) {
		dq = sq
	}
	x.modified(src)
	x.push(dst, dq, to, pushOrder...)
	x.dropIfEmpty(src, sq)
	return inDst, true
}

func popAt(q *listpack.Quicklist, where end) ([]byte, bool) {
	if where == head {
		return q.PopHead()
	}
	return q.PopTail()
}

func reversed(vals [][]byte) [][]byte {
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[len(vals)-1-i] = v
	}
	return out
}

// bpopCommand serves BLPOP and BRPOP: pop from the first non-empty key,
// or block on all of them.
func bpopCommand(x *Ctx) {
	where, verb := head, "LPOP"
	if x.cmd.Name == "brpop" {
		where, verb = tail, "RPOP"
	}
	deadline, ok := parseTimeout(x, x.argv[len(x.argv)-1])
	if !ok {
		return
	}
	keys := x.argv[1 : len(x.argv)-1]
	for _, key := range keys {
		q, ok := x.list(key)
		if !ok {
			return
		}
		if q == nil {
			continue
		}
		v := x.pop(key, q, where, 1)[0]
		x.rewriteLog([]byte(verb), key)
		x.w.Array(2)
		x.w.Bulk(key)
		x.w.Bulk(v)
		return
	}
	x.block(keys, deadline)
}

// lmpopCommand serves LMPOP and BLMPOP.
func lmpopCommand(x *Ctx) {
	blocking := x.cmd.Name == "blmpop"
	numkeysAt := 1
	if blocking {
		numkeysAt = 2
	}
	keys, where, count, ok := parseMpop(x, numkeysAt)
	if !ok {
		return
	}
	var deadline time.Time
	if blocking { // Redis checks the timeout after the other arguments
		if deadline, ok = parseTimeout(x, x.argv[1]); !ok {
			return
		}
	}
	for _, key := range keys {
		q, ok := x.list(key)
		if !ok {
			return
		}
		if q == nil {
			continue
		}
		vals := x.pop(key, q, where, count)
		x.rewriteLog([]byte("LMPOP"), []byte("1"), key, where.word(), []byte("COUNT"), []byte(fmt.Sprint(count)))
		x.w.Array(2)
		x.w.Bulk(key)
		writeBulks(x.w, vals)
		return
	}
	if blocking {
		x.block(keys, deadline)
		return
	}
	x.w.NullArray()
}

// parseMpop parses "numkeys key... LEFT|RIGHT [COUNT n]" from argv[at].
func parseMpop(x *Ctx, at int) (keys [][]byte, where end, count int, ok bool) {
	n, isInt := resp.ParseInt(x.argv[at])
	if !isInt || n <= 0 {
		x.error("ERR numkeys should be greater than 0")
		return nil, head, 0, false
	}
	whereAt := int64(at) + n + 1
	if whereAt >= int64(len(x.argv)) {
		x.error(resp.ErrSyntax)
		return nil, head, 0, false
	}
	if where, ok = parseEnd(x, x.argv[whereAt]); !ok {
		return nil, head, 0, false
	}
	count = 1
	rest := x.argv[whereAt+1:]
	switch {
	case len(rest) == 0:
	case len(rest) == 2 && bytes.EqualFold(rest[0], []byte("count")):
		c, isInt := resp.ParseInt(rest[1])
		if !isInt || c <= 0 {
			x.error("ERR count should be greater than 0")
			return nil, head, 0, false
		}
		count = int(min(c, math.MaxInt32))
	default:
		x.error(resp.ErrSyntax)
		return nil, head, 0, false
	}
	return x.argv[at+1 : whereAt], where, count, true
}

// lmovemCommand serves LMOVEM and BLMOVEM (Redis 8.10): move up to COUNT
// or EXACTLY n elements, one by one (OBO) or as a block (BULK).
func lmovemCommand(x *Ctx) {
	blocking := x.cmd.Name == "blmovem"
	from, ok := parseEnd(x, x.argv[3])
	if !ok {
		return
	}
	to, ok := parseEnd(x, x.argv[4])
	if !ok {
		return
	}
	optAt := 5
	var deadline time.Time
	if blocking {
		if deadline, ok = parseTimeout(x, x.argv[5]); !ok {
			return
		}
		optAt = 6
	}
	n, exactly, bulk, ok := parseHowMany(x, x.argv[optAt:])
	if !ok {
		return
	}
	src, dst := x.argv[1], x.argv[2]
	sq, ok := x.list(src)
	if !ok {
		return
	}
	if _, ok := x.list(dst); !ok {
		return
	}
	if sq == nil || (exactly && sq.Len() < n) {
		switch {
		case blocking:
			x.block([][]byte{src}, deadline)
		case exactly:
			x.w.Null()
		default:
			x.w.Array(0)
		}
		return
	}
	moved, _ := x.move(src, dst, from, to, n, bulk)
	if blocking {
		argv := [][]byte{[]byte("LMOVEM"), src, dst, from.word(), to.word()}
		x.rewriteLog(append(argv, x.argv[optAt:]...)...)
	}
	writeBulks(x.w, moved)
}

// parseHowMany parses LMOVEM's optional "COUNT n|EXACTLY n OBO|BULK".
func parseHowMany(x *Ctx, opts [][]byte) (n int, exactly, bulk, ok bool) {
	if len(opts) == 0 {
		return 1, false, false, true
	}
	if len(opts) != 3 {
		x.error(resp.ErrSyntax)
		return 0, false, false, false
	}
	switch {
	case bytes.EqualFold(opts[0], []byte("count")):
	case bytes.EqualFold(opts[0], []byte("exactly")):
		exactly = true
	default:
		x.error(resp.ErrSyntax)
		return 0, false, false, false
	}
	c, isInt := resp.ParseInt(opts[1])
	if !isInt || c <= 0 {
		x.error("ERR count should be greater than 0")
		return 0, false, false, false
	}
	switch {
	case bytes.EqualFold(opts[2], []byte("obo")):
	case bytes.EqualFold(opts[2], []byte("bulk")):
		bulk = true
	default:
		x.error(resp.ErrSyntax)
		return 0, false, false, false
	}
	return int(min(c, math.MaxInt32)), exactly, bulk, true
}
