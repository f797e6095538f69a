package server

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
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
	obj := &Object{value: cloneBytes(value)}
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
	x.setKey(x.argv[1], &Object{value: cloneBytes(x.argv[2])})
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

// storeString replaces key's string keeping its TTL (INCR, APPEND). The
// value is a new one, so its encoding follows from it again, as Redis's
// INCR makes an int of a raw string; APPEND and SETRANGE mark it raw
// after.
func storeString(x *Ctx, key []byte, o *Object, v []byte) {
	if v == nil {
		v = []byte{} // an empty string, not a missing key
	}
	if o == nil {
		x.setKey(key, &Object{value: v})
		return
	}
	o.value, o.rawStr = v, false
	x.modified(key)
}

// incrbyfloatCommand adds in Redis's long double: a 64-bit mantissa,
// rounded to nearest even, printed as %.17Lf without trailing zeros — so
// 3000.0 + 0.1 is "3000.10000000000000009" here exactly as in Redis.
func incrbyfloatCommand(x *Ctx) {
	o, v, ok := x.str(x.argv[1])
	if !ok {
		return
	}
	cur := new(big.Float).SetPrec(longDoublePrec)
	if o != nil {
		if cur, ok = parseLongDouble(v); !ok {
			x.error(resp.ErrNotFloat)
			return
		}
	}
	by, ok := parseLongDouble(x.argv[2])
	if !ok {
		x.error(resp.ErrNotFloat)
		return
	}
	if cur.IsInf() || by.IsInf() {
		x.error("ERR increment would produce NaN or Infinity")
		return
	}
	sum := new(big.Float).SetPrec(longDoublePrec).SetMode(big.ToNearestEven).Add(cur, by)
	if sum.MantExp(nil) > longDoubleMaxExp {
		x.error("ERR increment would produce NaN or Infinity")
		return
	}
	out := formatLongDouble(sum)
	storeString(x, x.argv[1], o, out)
	x.w.Bulk(out)
}

// The x87 extended format Redis's long double is on amd64.
const (
	longDoublePrec   = 64
	longDoubleMaxExp = 16384
	longDoubleMinExp = -16445 // below this a non-zero value underflows to 0
)

// parseLongDouble parses b the way string2ld does — the syntax rules of
// resp.ParseFloat, but with long double's range, so 1e400 and 1e-400 are
// numbers — rounding to a 64-bit mantissa.
func parseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) >= 5<<10 || b[0] == ' ' || bytes.ContainsAny(b, "_ \t\r\n") {
		return nil, false
	}
	s := string(b)
	if low := strings.ToLower(strings.TrimLeft(s, "+-")); strings.HasPrefix(low, "0x") && !strings.Contains(low, "p") {
		s += "p0" // strtold takes hex without an exponent
	}
	if _, err := strconv.ParseFloat(s, 64); err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, false // not a number; out of float64's range is fine
	}
	if low := strings.ToLower(strings.TrimLeft(s, "+-")); low == "nan" {
		return nil, false
	}
	f, _, err := big.ParseFloat(s, 10, longDoublePrec, big.ToNearestEven)
	if err != nil && !strings.HasPrefix(strings.ToLower(strings.TrimLeft(s, "+-")), "0x") {
		return nil, false
	}
	if err != nil { // hex: big wants base 0 for the prefix
		if f, _, err = big.ParseFloat(s, 0, longDoublePrec, big.ToNearestEven); err != nil {
			return nil, false
		}
	}
	if exp := f.MantExp(nil); !f.IsInf() && f.Sign() != 0 && (exp > longDoubleMaxExp || exp < longDoubleMinExp) {
		return nil, false // outside long double: ERANGE
	}
	if f.Sign() == 0 && hasNonzeroMantissa(s) {
		return nil, false
	}
	return f, true
}

// hasNonzeroMantissa reports a non-zero digit before any exponent (a
// value that underflowed to zero).
func hasNonzeroMantissa(s string) bool {
	hex := strings.Contains(strings.ToLower(s), "0x")
	for i, c := range strings.ToLower(s) {
		switch {
		case !hex && c == 'e', hex && c == 'p':
			return false
		case c >= '1' && c <= '9', hex && i > 1 && c >= 'a' && c <= 'f':
			return true
		}
	}
	return false
}

// formatLongDouble prints f as Redis's ld2string(LD_STR_HUMAN): "%.17Lf"
// with trailing zeros (and a bare point) removed, "-0" as "0".
func formatLongDouble(f *big.Float) []byte {
	s := f.Text('f', 17)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return []byte(s)
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
		x.setKey(x.argv[i], &Object{value: cloneBytes(x.argv[i+1])})
	}
	if nx {
		x.w.Int(1)
	} else {
		x.w.OK()
	}
}

// checkStringSize refuses to grow a string to have+add bytes if that is
// longer than proto-max-bulk-len. have is a SETRANGE offset too, up to
// the int64 limit, so the sum is never formed where it could wrap.
func checkStringSize(x *Ctx, have, add int64) bool {
	if limit := x.s.cfg.ProtoMaxBulkLen; add > limit || have > limit-add {
		x.error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return false
	}
	return true
}

func appendCommand(x *Ctx) {
	o, v, ok := x.str(x.argv[1])
	if !ok || !checkStringSize(x, int64(len(v)), int64(len(x.argv[2]))) {
		return
	}
	nv := append(v, x.argv[2]...)
	storeString(x, x.argv[1], o, nv)
	if o != nil { // grown in place; to a missing key it is a new value, encoded as SET's
		o.rawStr = true
	}
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
	// Negative offsets count from the end. Since Redis 8 an end before
	// the first byte selects nothing (7.x clamped it to the first byte,
	// so "GETRANGE k 0 -100" gave one byte); a start before it is still
	// clamped to it.
	n := int64(len(v))
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if n == 0 || start >= n || end < 0 || start > end {
		x.w.BulkString("")
		return
	}
	start, end = max(start, 0), min(end, n-1)
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
	if !checkStringSize(x, off, int64(len(val))) {
		return
	}
	// A fresh buffer, never an in-place change: a snapshot being written
	// in the background may still be reading the old bytes. (APPEND may
	// extend in place: it writes only past the length a snapshot sees.)
	need := max(int(off)+len(val), len(v))
	nv := make([]byte, need)
	copy(nv, v)
	copy(nv[off:], val)
	storeString(x, x.argv[1], o, nv)
	x.db.keys[string(x.argv[1])].rawStr = true
	x.w.Int(int64(len(nv)))
}
