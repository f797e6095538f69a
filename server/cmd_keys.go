package server

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/redstream/redstream/resp"
)

var keyspaceSpecs = []spec{
	{name: "del", arity: -2, flags: "write", first: 1, last: -1, step: 1, group: "generic", since: "1.0.0",
		syntax: "key [key ...]", summary: "Deletes one or more keys.", run: delCommand},
	{name: "unlink", arity: -2, flags: "write fast", first: 1, last: -1, step: 1, group: "generic", since: "4.0.0",
		syntax: "key [key ...]", summary: "Asynchronously deletes one or more keys.", run: delCommand},
	{name: "exists", arity: -2, flags: "readonly fast", first: 1, last: -1, step: 1, group: "generic", since: "1.0.0",
		syntax: "key [key ...]", summary: "Determines whether one or more keys exist.", run: existsCommand},
	{name: "touch", arity: -2, flags: "readonly fast", first: 1, last: -1, step: 1, group: "generic", since: "3.2.1",
		syntax: "key [key ...]", summary: "Returns the number of existing keys out of those specified after updating the time they were last accessed.", run: touchCommand},
	{name: "type", arity: 2, flags: "readonly fast", first: 1, last: 1, step: 1, group: "generic", since: "1.0.0",
		syntax: "key", summary: "Determines the type of value stored at a key.", run: typeCommand},
	{name: "keys", arity: 2, flags: "readonly", group: "generic", since: "1.0.0",
		syntax: "pattern", summary: "Returns all key names that match a pattern.", run: keysCommand},
	{name: "scan", arity: -2, flags: "readonly", group: "generic", since: "2.8.0",
		syntax: "cursor [MATCH pattern] [COUNT count] [TYPE type]", summary: "Iterates over the key names in the database.", run: scanCommand},
	{name: "randomkey", arity: 1, flags: "readonly", group: "generic", since: "1.0.0",
		summary: "Returns a random key name from the database.", run: randomkeyCommand},
	{name: "rename", arity: 3, flags: "write", first: 1, last: 2, step: 1, group: "generic", since: "1.0.0",
		syntax: "key newkey", summary: "Renames a key and overwrites the destination.", run: renameCommand},
	{name: "renamenx", arity: 3, flags: "write fast", first: 1, last: 2, step: 1, group: "generic", since: "1.0.0",
		syntax: "key newkey", summary: "Renames a key only when the target key name doesn't exist.", run: renamenxCommand},
	{name: "move", arity: 3, flags: "write fast", first: 1, last: 1, step: 1, group: "generic", since: "1.0.0",
		syntax: "key db", summary: "Moves a key to another database.", run: moveCommand},
	{name: "copy", arity: -3, flags: "write denyoom", first: 1, last: 2, step: 1, group: "generic", since: "6.2.0",
		syntax: "source destination [DB destination-db] [REPLACE]", summary: "Copies the value of a key to a new key.", run: copyCommand},
	{name: "expire", arity: -3, flags: "write fast", first: 1, last: 1, step: 1, group: "generic", since: "1.0.0",
		syntax: "key seconds [NX | XX | GT | LT]", summary: "Sets the expiration time of a key in seconds.", run: expireCommand},
	{name: "pexpire", arity: -3, flags: "write fast", first: 1, last: 1, step: 1, group: "generic", since: "2.6.0",
		syntax: "key milliseconds [NX | XX | GT | LT]", summary: "Sets the expiration time of a key in milliseconds.", run: expireCommand},
	{name: "expireat", arity: -3, flags: "write fast", first: 1, last: 1, step: 1, group: "generic", since: "1.2.0",
		syntax: "key unix-time-seconds [NX | XX | GT | LT]", summary: "Sets the expiration time of a key to a Unix timestamp.", run: expireCommand},
	{name: "pexpireat", arity: -3, flags: "write fast", first: 1, last: 1, step: 1, group: "generic", since: "2.6.0",
		syntax: "key unix-time-milliseconds [NX | XX | GT | LT]", summary: "Sets the expiration time of a key to a Unix milliseconds timestamp.", run: expireCommand},
	{name: "ttl", arity: 2, flags: "readonly fast", first: 1, last: 1, step: 1, group: "generic", since: "1.0.0",
		syntax: "key", summary: "Returns the expiration time in seconds of a key.", run: ttlCommand},
	{name: "pttl", arity: 2, flags: "readonly fast", first: 1, last: 1, step: 1, group: "generic", since: "2.6.0",
		syntax: "key", summary: "Returns the expiration time in milliseconds of a key.", run: ttlCommand},
	{name: "expiretime", arity: 2, flags: "readonly fast", first: 1, last: 1, step: 1, group: "generic", since: "7.0.0",
		syntax: "key", summary: "Returns the expiration time of a key as a Unix timestamp.", run: ttlCommand},
	{name: "pexpiretime", arity: 2, flags: "readonly fast", first: 1, last: 1, step: 1, group: "generic", since: "7.0.0",
		syntax: "key", summary: "Returns the expiration time of a key as a Unix milliseconds timestamp.", run: ttlCommand},
	{name: "persist", arity: 2, flags: "write fast", first: 1, last: 1, step: 1, group: "generic", since: "2.2.0",
		syntax: "key", summary: "Removes the expiration time of a key.", run: persistCommand},
	{name: "object", arity: -2, flags: "", group: "generic", since: "2.2.3", summary: "A container for object introspection commands."},
	{name: "object|encoding", arity: 3, flags: "readonly", first: 2, last: 2, step: 1, group: "generic", since: "2.2.3",
		syntax: "key", summary: "Returns the internal encoding of a Redis object.", run: objectCommand},
	{name: "object|idletime", arity: 3, flags: "readonly", first: 2, last: 2, step: 1, group: "generic", since: "2.2.3",
		syntax: "key", summary: "Returns the time since the last access to a Redis object.", run: objectCommand},
	{name: "object|freq", arity: 3, flags: "readonly", first: 2, last: 2, step: 1, group: "generic", since: "4.0.0",
		syntax: "key", summary: "Returns the logarithmic access frequency counter of a Redis object.", run: objectCommand},
	{name: "object|refcount", arity: 3, flags: "readonly", first: 2, last: 2, step: 1, group: "generic", since: "2.2.3",
		syntax: "key", summary: "Returns the reference count of a value of a key.", run: objectCommand},
	{name: "object|help", arity: 2, flags: "loading stale", group: "generic", since: "6.2.0",
		summary: "Returns helpful text about the different subcommands.", run: objectHelpCommand},
	{name: "memory", arity: -2, flags: "", group: "server", since: "4.0.0", summary: "A container for memory diagnostics commands."},
	{name: "memory|usage", arity: -3, flags: "readonly", first: 2, last: 2, step: 1, group: "server", since: "4.0.0",
		syntax: "key [SAMPLES count]", summary: "Estimates the memory usage of a key.", run: memoryUsageCommand},
	{name: "memory|help", arity: 2, flags: "loading stale", group: "server", since: "4.0.0",
		summary: "Returns helpful text about the different subcommands.", run: memoryHelpCommand},
}

func delCommand(x *Ctx) {
	n := 0
	for _, key := range x.argv[1:] {
		if x.deleteKey(key) {
			n++
		}
	}
	x.w.Int(int64(n))
}

// existsCommand counts the keys that exist without touching them;
// touchCommand counts them and touches them.
func existsCommand(x *Ctx) { countKeys(x, x.peek) }
func touchCommand(x *Ctx)  { countKeys(x, x.lookup) }

func countKeys(x *Ctx, find func([]byte) *Object) {
	n := 0
	for _, key := range x.argv[1:] {
		if find(key) != nil {
			n++
		}
	}
	x.w.Int(int64(n))
}

func typeCommand(x *Ctx) {
	o := x.peek(x.argv[1])
	if o == nil {
		x.w.Status("none")
		return
	}
	x.w.Status(typeName(o))
}

// keysCommand, randomkeyCommand, scanCommand and DBSIZE cover the
// client's database, or in cluster mode the databases of the groups the
// node serves keyless reads for (keyless.go).
func keysCommand(x *Ctx) {
	mark := x.w.Mark()
	n := 0
	pattern := x.argv[1]
	all := len(pattern) == 1 && pattern[0] == '*'
	for _, db := range x.keylessDBs() {
		for key, o := range db.keys {
			if o.expireAt != 0 && o.expireAt <= x.now {
				continue
			}
			if all || globMatch(pattern, []byte(key), false) {
				x.w.BulkString(key)
				n++
			}
		}
	}
	x.w.InsertLen(mark, '*', n)
}

func randomkeyCommand(x *Ctx) {
	if key, ok := randomKey(x.keylessDBs(), x.now); ok {
		x.w.BulkString(key)
		return
	}
	x.w.Null()
}

// scanCommand walks keys in the key order (slot by slot, see DB) from the
// cursor, as Redis Cluster's SCAN walks slot by slot. COUNT
// is a hint as in Redis: it bounds how many keys are visited, and MATCH
// and TYPE filter what was visited, so a page may come back empty.
func scanCommand(x *Ctx) {
	cursor, err := strconv.ParseUint(x.arg(1), 10, 64)
	if err != nil {
		x.error("ERR invalid cursor")
		return
	}
	var match []byte
	var typ string
	count := 10
	for i := 2; i < len(x.argv); i += 2 {
		if i+1 >= len(x.argv) {
			x.error(resp.ErrSyntax)
			return
		}
		switch strings.ToLower(x.arg(i)) {
		case "match":
			match = x.argv[i+1]
		case "count":
			n, ok := resp.ParseInt(x.argv[i+1])
			if !ok {
				x.error(resp.ErrNotInteger)
				return
			}
			if n < 1 {
				x.error(resp.ErrSyntax)
				return
			}
			count = int(min(n, math.MaxInt32))
		case "type":
			typ = strings.ToLower(x.arg(i + 1))
			if !knownTypeName(typ) {
				x.error(fmt.Sprintf("ERR unknown type name '%s'", x.argv[i+1]))
				return
			}
		default:
			x.error(resp.ErrSyntax)
			return
		}
	}
	keys, next := x.scanPage(cursor, count, match, typ)
	x.w.Array(2)
	x.w.BulkString(strconv.FormatUint(next, 10))
	x.w.Array(len(keys))
	for _, k := range keys {
		x.w.BulkString(k)
	}
}

// scanPage visits about count keys with order hash >= cursor (never
// splitting keys that share one) and returns those that pass the filters,
// with the cursor to resume from: the order hash of the first key not
// visited, which is above the last one visited and so never 0; 0 when
// the walk is complete. Nothing here assumes the hashes are spread
// evenly: a slot's keys share their top bits (orderHash). In cluster
// mode the walk crosses the databases of the groups it covers, slot by
// slot (walkGroups).
func (x *Ctx) scanPage(cursor uint64, count int, match []byte, typ string) ([]string, uint64) {
	sc := &scan{count: count, match: match, typ: typ, now: x.now}
	var next uint64
	if x.s.cluster != nil {
		next = x.walkGroups(sc, cursor)
	} else {
		next = sc.walk(x.db, cursor, ClusterSlots-1)
	}
	return sc.out, next
}

// knownTypeName reports the type names Redis knows, whether or not
// redstream serves that type (SCAN TYPE hash simply finds nothing).
func knownTypeName(t string) bool {
	switch t {
	case "string", "list", "set", "zset", "hash", "stream":
		return true
	}
	return false
}

func renameCommand(x *Ctx) { rename(x, false) }

func renamenxCommand(x *Ctx) { rename(x, true) }

// rename moves src's value and TTL to dst.
func rename(x *Ctx, nx bool) {
	src, dst := x.argv[1], x.argv[2]
	o := x.lookup(src)
	if o == nil {
		x.error(resp.ErrNoSuchKey)
		return
	}
	if string(src) == string(dst) {
		if nx {
			x.w.Int(0)
		} else {
			x.w.OK()
		}
		return
	}
	if nx && x.lookup(dst) != nil {
		x.w.Int(0)
		return
	}
	moveObject(x, src, o, x, dst)
	if nx {
		x.w.Int(1)
	} else {
		x.w.OK()
	}
}

func copyCommand(x *Ctx) {
	src, dst := x.argv[1], x.argv[2]
	dstDB := x.db
	replace := false
	for i := 3; i < len(x.argv); i++ {
		switch strings.ToLower(x.arg(i)) {
		case "replace":
			replace = true
		case "db":
			if i+1 >= len(x.argv) {
				x.error(resp.ErrSyntax)
				return
			}
			n, ok := resp.ParseInt(x.argv[i+1])
			if !ok {
				x.error(resp.ErrNotInteger)
				return
			}
			if n < 0 || n >= int64(len(x.db.shard.dbs)) {
				x.error(resp.ErrDBIndex)
				return
			}
			dstDB = x.db.shard.dbs[n]
			if x.s.cluster != nil && n == 0 {
				dstDB = x.db // the client's database 0 is its key's group's (groups.go)
			}
			i++
		default:
			x.error(resp.ErrSyntax)
			return
		}
	}
	if x.s.cluster != nil && dstDB != x.db {
		x.error("ERR Copying to another database is not allowed in cluster mode")
		return
	}
	if dstDB == x.db && string(src) == string(dst) {
		x.error(resp.ErrSameObject)
		return
	}
	o := x.lookup(src)
	if o == nil {
		x.w.Int(0)
		return
	}
	target := &Ctx{s: x.s, c: x.c, w: x.w, db: dstDB, argv: x.argv, cmd: x.cmd, now: x.now, replay: x.replay}
	if target.lookup(dst) != nil && !replace {
		x.w.Int(0)
		return
	}
	cp := &Object{value: copyValue(o.value), rawStr: o.rawStr}
	target.setKey(dst, cp)
	dstDB.setExpire(string(dst), cp, o.expireAt)
	x.dirty += target.dirty
	x.w.Int(1)
}

// moveObject takes o, src's value in x's database, to dst in target's,
// with its TTL (RENAME, MOVE). Lock should be held.
func moveObject(x *Ctx, src []byte, o *Object, target *Ctx, dst []byte) {
	x.db.remove(string(src))
	x.modified(src)
	expireAt := o.expireAt
	o.expireAt = 0
	target.setKey(dst, o)
	target.db.setExpire(string(dst), o, expireAt)
}

// moveCommand moves key, with its TTL, to database db unless db holds
// that key already (MOVE). A cluster has one database, as in Redis.
func moveCommand(x *Ctx) {
	if x.s.cluster != nil {
		x.error("ERR MOVE is not allowed in cluster mode")
		return
	}
	n, ok := resp.ParseInt(x.argv[2])
	switch {
	case !ok:
		x.error(resp.ErrNotInteger)
		return
	case n != int64(int32(n)): // Redis reads it as a C int
		x.error("ERR value is out of range, value must between -2147483648 and 2147483647")
		return
	}
	if n < 0 || n >= int64(len(x.db.shard.dbs)) {
		x.error(resp.ErrDBIndex)
		return
	}
	dstDB := x.db.shard.dbs[n]
	if dstDB == x.db {
		x.error(resp.ErrSameObject)
		return
	}
	key := x.argv[1]
	o := x.lookup(key)
	if o == nil {
		x.w.Int(0)
		return
	}
	target := &Ctx{s: x.s, c: x.c, w: x.w, db: dstDB, argv: x.argv, cmd: x.cmd, now: x.now, replay: x.replay}
	if target.lookup(key) != nil {
		x.w.Int(0)
		return
	}
	moveObject(x, key, o, target, key)
	x.dirty += target.dirty
	x.w.Int(1)
}

// expireCommand serves EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT: it turns
// the argument into an absolute unix-ms time against the record's clock,
// so replaying the record sets the same deadline.
func expireCommand(x *Ctx) {
	name := x.cmd.Name
	n, ok := resp.ParseInt(x.argv[2])
	if !ok {
		x.error(resp.ErrNotInteger)
		return
	}
	nx, xx, gt, lt, msg := expireFlags(x)
	if msg != "" {
		x.error(msg)
		return
	}
	at, ok := absoluteExpire(name, n, x.now)
	if !ok {
		x.error(fmt.Sprintf(resp.ErrInvalidExpire, name))
		return
	}
	key := x.argv[1]
	o := x.lookup(key)
	if o == nil {
		x.w.Int(0)
		return
	}
	cur := o.expireAt
	if (nx && cur != 0) || (xx && cur == 0) || (gt && (cur == 0 || at <= cur)) || (lt && cur != 0 && at >= cur) {
		x.w.Int(0)
		return
	}
	if at <= x.now {
		x.deleteKey(key)
		x.w.Int(1)
		return
	}
	x.db.setExpire(string(key), o, at)
	x.modified(key)
	x.w.Int(1)
}

// absoluteExpire converts an EXPIRE-family argument to unix ms, failing
// on overflow as Redis does.
func absoluteExpire(cmd string, n, now int64) (int64, bool) {
	seconds := cmd == "expire" || cmd == "expireat"
	if seconds {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return 0, false
		}
		n *= 1000
	}
	if cmd == "expire" || cmd == "pexpire" {
		if (n > 0 && now > math.MaxInt64-n) || (n < 0 && now < math.MinInt64-n) {
			return 0, false
		}
		n += now
	}
	return n, true
}

func expireFlags(x *Ctx) (nx, xx, gt, lt bool, msg string) {
	for _, a := range x.argv[3:] {
		switch strings.ToLower(string(a)) {
		case "nx":
			nx = true
		case "xx":
			xx = true
		case "gt":
			gt = true
		case "lt":
			lt = true
		default:
			return false, false, false, false, fmt.Sprintf("ERR Unsupported option %s", a)
		}
	}
	switch {
	case nx && (xx || gt || lt):
		msg = "ERR NX and XX, GT or LT options at the same time are not compatible"
	case gt && lt:
		msg = "ERR GT and LT options at the same time are not compatible"
	}
	return
}

// ttlCommand serves TTL, PTTL, EXPIRETIME and PEXPIRETIME.
func ttlCommand(x *Ctx) {
	o := x.peek(x.argv[1])
	switch {
	case o == nil:
		x.w.Int(-2)
		return
	case o.expireAt == 0:
		x.w.Int(-1)
		return
	}
	left := max(o.expireAt-x.now, 0)
	switch x.cmd.Name {
	case "ttl":
		x.w.Int((left + 500) / 1000)
	case "pttl":
		x.w.Int(left)
	case "expiretime":
		x.w.Int(o.expireAt / 1000)
	default:
		x.w.Int(o.expireAt)
	}
}

func persistCommand(x *Ctx) {
	key := x.argv[1]
	o := x.lookup(key)
	if o == nil || o.expireAt == 0 {
		x.w.Int(0)
		return
	}
	x.db.setExpire(string(key), o, 0)
	x.modified(key)
	x.w.Int(1)
}

func objectCommand(x *Ctx) {
	o := x.peek(x.argv[2])
	if o == nil {
		x.w.Null()
		return
	}
	switch x.cmd.Name {
	case "object|encoding":
		x.w.BulkString(x.s.encodingName(o))
	case "object|idletime":
		x.w.Int(max(x.now-o.access, 0) / 1000)
	case "object|freq":
		x.error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	case "object|refcount":
		x.w.Int(refcount(o))
	}
}

// refcount answers OBJECT REFCOUNT: Redis shares the integers 0..9999
// between keys and reports them with INT_MAX; everything else has one
// reference.
func refcount(o *Object) int64 {
	if v, ok := o.value.([]byte); ok && !o.rawStr {
		if n, isInt := resp.ParseInt(v); isInt && n >= 0 && n < 10000 {
			return math.MaxInt32
		}
	}
	return 1
}

func objectHelpCommand(x *Ctx) {
	writeHelp(x.w, "OBJECT", []string{
		"ENCODING <key>",
		"    Return the kind of internal representation used in order to store the value",
		"    associated with a <key>.",
		"FREQ <key>",
		"    Return the access frequency index of the <key>. The returned integer is",
		"    proportional to the logarithm of the recent access frequency of the key.",
		"IDLETIME <key>",
		"    Return the idle time of the <key>, that is the approximated number of",
		"    seconds elapsed since the last access to the key.",
		"REFCOUNT <key>",
		"    Return the number of references of the value associated with the specified",
		"    <key>.",
	})
}

func memoryUsageCommand(x *Ctx) {
	if len(x.argv) != 3 {
		if len(x.argv) != 5 || !strings.EqualFold(x.arg(3), "samples") {
			x.error(resp.ErrSyntax)
			return
		}
		if _, ok := resp.ParseInt(x.argv[4]); !ok {
			x.error(resp.ErrNotInteger)
			return
		}
	}
	o := x.lookup(x.argv[2])
	if o == nil {
		x.w.Null()
		return
	}
	x.w.Int(memoryUsage(x.arg(2), o))
}

func memoryHelpCommand(x *Ctx) {
	writeHelp(x.w, "MEMORY", []string{
		"USAGE <key> [SAMPLES <count>]", "    Return memory in bytes used by <key> and its value. Nested values are",
		"", "    sampled up to <count> times (default: 5, 0 means sample all).",
	})
}
