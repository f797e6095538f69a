package server

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/redstream/redstream/resp"
)

var stringSpecs = []spec{
	{name: "get", arity: 2, flags: "readonly fast", first: 1, last: 1, step: 1, group: "string", since: "1.0.0",
		syntax: "key", summary: "Returns the string value of a key.", run: getCommand},
	{name: "set", arity: -3, flags: "write denyoom", first: 1, last: 1, step: 1, group: "string", since: "1.0.0",
		syntax:  "key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]",
		summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", run: setCommand},
	{name: "setnx", arity: 3, flags: "write denyoom fast", first: 1, last: 1, step: 1, group: "string", since: "1.0.0",
		syntax: "key value", summary: "Set the string value of a key only when the key doesn't exist.", run: setnxCommand},
	{name: "setex", arity: 4, flags: "write denyoom", first: 1, last: 1, step: 1, group: "string", since: "2.0.0",
		syntax: "key seconds value", summary: "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", run: setexCommand},
	{name: "psetex", arity: 4, flags: "write denyoom", first: 1, last: 1, step: 1, group: "string", since: "2.6.0",
		syntax: "key milliseconds value", summary: "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", run: setexCommand},
	{name: "getdel", arity: 2, flags: "write fast", first: 1, last: 1, step: 1, group: "string", since: "6.2.0",
		syntax: "key", summary: "Returns the string value of a key after deleting the key.", run: getdelCommand},
	{name: "getex", arity: -2, flags: "write fast", first: 1, last: 1, step: 1, group: "string", since: "6.2.0",
		syntax:  "key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST]",
		summary: "Returns the string value of a key after setting its expiration time.", run: getexCommand},
	{name: "getset", arity: 3, flags: "write denyoom fast", first: 1, last: 1, step: 1, group: "string", since: "1.0.0",
		syntax: "key value", summary: "Returns the previous string value of a key after setting it to a new value.", run: getsetCommand},
	{name: "incr", arity: 2, flags: "write denyoom fast", first: 1, last: 1, step: 1, group: "string", since: "1.0.0",
		syntax: "key", summary: "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", run: incrCommand},
	{name: "decr", arity: 2, flags: "write denyoom fast", first: 1, last: 1, step: 1, group: "string", since: "1.0.0",
		syntax: "key", summary: "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", run: incrCommand},
	{name: "incrby", arity: 3, flags: "write denyoom fast", first: 1, last: 1, step: 1, group: "string", since: "1.0.0",
		syntax: "key increment", summary: "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", run: incrCommand},
	{name: "decrby", arity: 3, flags: "write denyoom fast", first: 1, last: 1, step: 1, group: "string", since: "1.0.0",
		syntax: "key decrement", summary: "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", run: incrCommand},
	{name: "incrbyfloat", arity: 3, flags: "write denyoom fast", first: 1, last: 1, step: 1, group: "string", since: "2.6.0",
		syntax: "key increment", summary: "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", run: incrbyfloatCommand},
	{name: "mget", arity: -2, flags: "readonly fast", first: 1, last: -1, step: 1, group: "string", since: "1.0.0",
		syntax: "key [key ...]", summary: "Atomically returns the string values of one or more keys.", run: mgetCommand},
	{name: "mset", arity: -3, flags: "write denyoom", first: 1, last: -1, step: 2, group: "string", since: "1.0.1",
		syntax: "key value [key value ...]", summary: "Atomically creates or modifies the string values of one or more keys.", run: msetCommand},
	{name: "msetnx", arity: -3, flags: "write denyoom", first: 1, last: -1, step: 2, group: "string", since: "1.0.1",
		syntax: "key value [key value ...]", summary: "Atomically modifies the string values of one or more keys only when all keys don't exist.", run: msetCommand},
	{name: "append", arity: 3, flags: "write denyoom fast", first: 1, last: 1, step: 1, group: "string", since: "2.0.0",
		syntax: "key value", summary: "Appends a string to the value of a key. Creates the key if it doesn't exist.", run: appendCommand},
	{name: "strlen", arity: 2, flags: "readonly fast", first: 1, last: 1, step: 1, group: "string", since: "2.2.0",
		syntax: "key", summary: "Returns the length of a string value.", run: strlenCommand},
	{name: "getrange", arity: 4, flags: "readonly", first: 1, last: 1, step: 1, group: "string", since: "2.4.0",
		syntax: "key start end", summary: "Returns a substring of the string stored at a key.", run: getrangeCommand},
	{name: "setrange", arity: 4, flags: "write denyoom", first: 1, last: 1, step: 1, group: "string", since: "2.2.0",
		syntax: "key offset value", summary: "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", run: setrangeCommand},
}

func getCommand(x *Ctx) {
	_, v, ok := x.str(x.argv[1])
	if !ok {
		return
	}
	if v == nil {
		x.w.Null()
		return
	}
	x.w.Bulk(v)
}

// setArgs are SET's options once parsed.
type setArgs struct {
	nx, xx, get, keepTTL bool
	expireAt             int64 // unix ms; 0 = none
}

func setCommand(x *Ctx) {
	a, ok := parseSetArgs(x, x.argv[3:])
	if !ok {
		return
	}
	setGeneric(x, x.argv[1], x.argv[2], a)
}

// parseSetArgs parses SET's options after the value, answering errors.
func parseSetArgs(x *Ctx, opts [][]byte) (a setArgs, ok bool) {
	expireSeen := false
	for i := 0; i < len(opts); i++ {
		opt := strings.ToLower(string(opts[i]))
		switch {
		case opt == "nx" && !a.xx:
			a.nx = true
		case opt == "xx" && !a.nx:
			a.xx = true
		case opt == "get":
			a.get = true
		case opt == "keepttl" && !expireSeen:
			a.keepTTL, expireSeen = true, true
		case (opt == "ex" || opt == "px" || opt == "exat" || opt == "pxat") && !expireSeen && i+1 < len(opts):
			expireSeen = true
			i++
			at, msg := parseExpireArg(opt, opts[i], x.now, "set")
			if msg != "" {
				x.error(msg)
				return a, false
			}
			a.expireAt = at
		default:
			x.error(resp.ErrSyntax)
			return a, false
		}
	}
	return a, true
}

// parseExpireArg turns an EX/PX/EXAT/PXAT argument into unix ms.
func parseExpireArg(unit string, arg []byte, now int64, cmd string) (int64, string) {
	n, ok := resp.ParseInt(arg)
	if !ok {
		return 0, resp.ErrNotInteger
	}
	if n <= 0 {
		return 0, fmt.Sprintf(resp.ErrInvalidExpire, cmd)
	}
	name := map[string]string{"ex": "expire", "px": "pexpire", "exat": "expireat", "pxat": "pexpireat"}[unit]
	at, ok := absoluteExpire(name, n, now)
	if !ok {
		return 0, fmt.Sprintf(resp.ErrInvalidExpire, cmd)
	}
	return at, ""
}

// setGeneric stores value at key under SET's rules.
func setGeneric(x *Ctx, key, value []byte, a setArgs) {
	o := x.lookup(key)
	var old []byte
	if a.get && o != nil {
		v, isStr := o.value.([]byte)
		if !isStr {
			x.error(resp.ErrWrongType)
			return
		}
		old = v
	}
	if (a.nx && o != nil) || (a.xx && o == nil) {
		writeSetReply(x, a, old, false)
		return
	}
	keep := int64(0)
	if a.keepTTL && o != nil {
		keep = o.expireAt
	}
	obj := &Object{value: append([]byte(nil), value...)}
	x.setKey(key, obj)
	if at := max(a.expireAt, keep); at != 0 {
		x.db.setExpire(string(key), obj, at)
	}
	writeSetReply(x, a, old, true)
}

func writeSetReply(x *Ctx, a setArgs, old []byte, stored bool) {
	switch {
	case a.get && old != nil:
		x.w.Bulk(old)
	case a.get || !stored:
		x.w.Null()
	default:
		x.w.OK()
	}
}

func setnxCommand(x *Ctx) {
	if x.lookup(x.argv[1]) != nil {
		x.w.Int(0)
		return
	}
	x.setKey(x.argv[1], &Object{value: append([]byte(nil), x.argv[2]...)})
	x.w.Int(1)
}

func setexCommand(x *Ctx) {
	unit := "ex"
	if x.cmd.Name == "psetex" {
		unit = "px"
	}
	at, msg := parseExpireArg(unit, x.argv[2], x.now, x.cmd.Name)
	if msg != "" {
		x.error(msg)
		return
	}
	setGeneric(x, x.argv[1], x.argv[3], setArgs{expireAt: at})
}

func getdelCommand(x *Ctx) {
	_, v, ok := x.str(x.argv[1])
	if !ok {
		return
	}
	if v == nil {
		x.w.Null()
		return
	}
	x.w.Bulk(v)
	x.deleteKey(x.argv[1])
}

func getexCommand(x *Ctx) {
	key := x.argv[1]
	at, persist := int64(0), false
	opts := x.argv[2:]
	switch {
	case len(opts) == 0:
	case len(opts) == 1 && strings.EqualFold(string(opts[0]), "persist"):
		persist = true
	case len(opts) == 2:
		unit := strings.ToLower(string(opts[0]))
		if unit != "ex" && unit != "px" && unit != "exat" && unit != "pxat" {
			x.error(resp.ErrSyntax)
			return
		}
		var msg string
		if at, msg = parseExpireArg(unit, opts[1], x.now, "getex"); msg != "" {
			x.error(msg)
			return
		}
	default:
		x.error(resp.ErrSyntax)
		return
	}
	o, v, ok := x.str(key)
	if !ok {
		return
	}
	if v == nil {
		x.w.Null()
		return
	}
	x.w.Bulk(v)
	switch {
	case at != 0 && at <= x.now:
		x.deleteKey(key)
	case at != 0:
		x.db.setExpire(string(key), o, at)
		x.modified(key)
	case persist && o.expireAt != 0:
		x.db.setExpire(string(key), o, 0)
		x.modified(key)
	}
}

func getsetCommand(x *Ctx) {
	setGeneric(x, x.argv[1], x.argv[2], setArgs{get: true})
}

// incrCommand serves INCR, DECR, INCRBY and DECRBY.
func incrCommand(x *Ctx) {
	by := int64(1)
	if len(x.argv) == 3 {
		n, ok := resp.ParseInt(x.argv[2])
		if !ok {
			x.error(resp.ErrNotInteger)
			return
		}
		by = n
	}
	if strings.HasPrefix(x.cmd.Name, "decr") {
		if by == math.MinInt64 {
			x.error("ERR decrement would overflow")
			return
		}
		by = -by
	}
	o, v, ok := x.str(x.argv[1])
	if !ok {
		return
	}
	cur := int64(0)
	if o != nil {
		if cur, ok = resp.ParseInt(v); !ok {
			x.error(resp.ErrNotInteger)
			return
		}
	}
	if (by > 0 && cur > math.MaxInt64-by) || (by < 0 && cur < math.MinInt64-by) {
		x.error(resp.ErrOverflow)
		return
	}
	cur += by
	storeString(x, x.argv[1], o, strconv.AppendInt(nil, cur, 10))
	x.w.Int(cur)
}

// storeString replaces key's string keeping its TTL (INCR, APPEND).
func storeString(x *Ctx, key []byte, o *Object, v []byte) {
	if o == nil {
		x.setKey(key, &Object{value: v})
		return
	}
	o.value = v
	x.modified(key)
}

func incrbyfloatCommand(x *Ctx) {
	by, ok := resp.ParseFloat(x.argv[2])
	if !ok || math.IsInf(by, 0) {
		x.error(resp.ErrNotFloat)
		return
	}
	o, v, ok := x.str(x.argv[1])
	if !ok {
		return
	}
	cur := 0.0
	if o != nil {
		if cur, ok = resp.ParseFloat(v); !ok || math.IsInf(cur, 0) {
			x.error(resp.ErrNotFloat)
			return
		}
	}
	cur += by
	if math.IsNaN(cur) || math.IsInf(cur, 0) {
		x.error("ERR increment would produce NaN or Infinity")
		return
	}
	out := strconv.AppendFloat(nil, cur, 'f', -1, 64)
	storeString(x, x.argv[1], o, out)
	x.w.Bulk(out)
}

func mgetCommand(x *Ctx) {
	x.w.Array(len(x.argv) - 1)
	for _, key := range x.argv[1:] {
		o := x.lookup(key)
		if o == nil {
			x.w.Null()
			continue
		}
		if v, ok := o.value.([]byte); ok {
			x.w.Bulk(v)
		} else {
			x.w.Null()
		}
	}
}

// msetCommand serves MSET and MSETNX.
func msetCommand(x *Ctx) {
	if len(x.argv)%2 == 0 {
		x.error(resp.WrongArity(x.cmd.Name))
		return
	}
	nx := x.cmd.Name == "msetnx"
	if nx {
		for i := 1; i < len(x.argv); i += 2 {
			if x.lookup(x.argv[i]) != nil {
				x.w.Int(0)
				return
			}
		}
	}
	for i := 1; i < len(x.argv); i += 2 {
		x.setKey(x.argv[i], &Object{value: append([]byte(nil), x.argv[i+1]...)})
	}
	if nx {
		x.w.Int(1)
	} else {
		x.w.OK()
	}
}

// checkStringSize refuses strings longer than proto-max-bulk-len.
func checkStringSize(x *Ctx, size int64) bool {
	if size > x.s.cfg.ProtoMaxBulkLen {
		x.error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return false
	}
	return true
}

func appendCommand(x *Ctx) {
	o, v, ok := x.str(x.argv[1])
	if !ok || !checkStringSize(x, int64(len(v)+len(x.argv[2]))) {
		return
	}
	nv := append(v, x.argv[2]...)
	storeString(x, x.argv[1], o, nv)
	if o == nil {
		o = x.db.keys[string(x.argv[1])]
	}
	o.rawStr = true
	x.w.Int(int64(len(nv)))
}

func strlenCommand(x *Ctx) {
	if _, v, ok := x.str(x.argv[1]); ok {
		x.w.Int(int64(len(v)))
	}
}

func getrangeCommand(x *Ctx) {
	start, ok1 := resp.ParseInt(x.argv[2])
	end, ok2 := resp.ParseInt(x.argv[3])
	if !ok1 || !ok2 {
		x.error(resp.ErrNotInteger)
		return
	}
	_, v, ok := x.str(x.argv[1])
	if !ok {
		return
	}
	n := int64(len(v))
	if start < 0 && end < 0 && start > end {
		x.w.BulkString("")
		return
	}
	if start < 0 {
		start = max(n+start, 0)
	}
	if end < 0 {
		end = max(n+end, 0)
	}
	end = min(end, n-1)
	if start > end || n == 0 {
		x.w.BulkString("")
		return
	}
	x.w.Bulk(v[start : end+1])
}

func setrangeCommand(x *Ctx) {
	off, ok := resp.ParseInt(x.argv[2])
	if !ok {
		x.error(resp.ErrNotInteger)
		return
	}
	if off < 0 {
		x.error("ERR offset is out of range")
		return
	}
	val := x.argv[3]
	o, v, ok := x.str(x.argv[1])
	if !ok {
		return
	}
	if len(val) == 0 {
		x.w.Int(int64(len(v)))
		return
	}
	if !checkStringSize(x, off+int64(len(val))) {
		return
	}
	need := int(off) + len(val)
	nv := v
	if len(nv) < need {
		nv = append(nv, make([]byte, need-len(nv))...)
	}
	copy(nv[off:], val)
	storeString(x, x.argv[1], o, nv)
	x.db.keys[string(x.argv[1])].rawStr = true
	x.w.Int(int64(len(nv)))
}
