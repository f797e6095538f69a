package tests

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStringSetOptions(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	invalidSet := bbErr("ERR invalid expire time in 'set' command")
	bbRun(t, rc, []bbStep{
		// Every invalid combination is a syntax error.
		{"SET k v NX XX", bbSyntax},
		{"SET k v XX NX", bbSyntax},
		{"SET k v EX 10 PX 100", bbSyntax},
		{"SET k v PX 100 EX 10", bbSyntax},
		{"SET k v EX 10 EXAT 32503680000", bbSyntax},
		{"SET k v PXAT 32503680000000 EX 10", bbSyntax},
		{"SET k v EX 10 EX 10", bbSyntax},
		{"SET k v EX 10 KEEPTTL", bbSyntax},
		{"SET k v KEEPTTL EX 10", bbSyntax},
		{"SET k v KEEPTTL PXAT 32503680000000", bbSyntax},
		{"SET k v EX", bbSyntax},
		{"SET k v PX", bbSyntax},
		{"SET k v FOO", bbSyntax},
		{"SET k v NX FOO", bbSyntax},
		{"SET k v 10", bbSyntax},
		{"SET k", bbArity("set")},
		{"EXISTS k", ":0"},

		// Invalid expire times.
		{"SET k v EX 0", invalidSet},
		{"SET k v EX -1", invalidSet},
		{"SET k v PX 0", invalidSet},
		{"SET k v PX -100", invalidSet},
		{"SET k v EXAT 0", invalidSet},
		{"SET k v PXAT -1", invalidSet},
		{"SET k v EX 9999999999999999", invalidSet},
		{"SET k v PX 9223372036854775807", invalidSet},
		{"SET k v EXAT 9223372036854775807", invalidSet},
		{"SET k v EX abc", bbNotInt},
		{"SET k v PX 1.5", bbNotInt},
		{"EXISTS k", ":0"},

		// NX / XX / GET.
		{"SET k v1 XX", bbNilBulk},
		{"SET k v1 XX GET", bbNilBulk},
		{"EXISTS k", ":0"},
		{"SET k v1 NX", bbOK},
		{"SET k v2 NX", bbNilBulk},
		{"GET k", bbBulk("v1")},
		{"SET k v2 NX GET", bbBulk("v1")}, // not set, old value returned
		{"GET k", bbBulk("v1")},
		{"SET k v3 XX GET", bbBulk("v1")},
		{"SET k v4 GET", bbBulk("v3")},
		{"SET k v5 get GET", bbBulk("v4")},
		{"SET new v GET", bbNilBulk},
		{"GET new", bbBulk("v")},
		{"set k v6 nx", bbNilBulk},
		{"SET k v6 xx", bbOK},
		{"GET k", bbBulk("v6")},

		// Expiry options.
		{"SET e v EX 100", bbOK},
		{"TTL e", ":100"},
		{"SET e v PX 100000", bbOK},
		{"PTTL e", ":~100000"},
		{"SET e v EXAT 32503680000", bbOK},
		{"EXPIRETIME e", ":32503680000"},
		{"SET e v PXAT 32503680000123", bbOK},
		{"PEXPIRETIME e", ":32503680000123"},
		{"SET e v2 KEEPTTL", bbOK},
		{"PEXPIRETIME e", ":32503680000123"},
		{"GET e", bbBulk("v2")},
		{"SET e v3 KEEPTTL GET XX", bbBulk("v2")},
		{"PEXPIRETIME e", ":32503680000123"},
		{"SET e v4", bbOK}, // a plain SET drops the TTL
		{"TTL e", ":-1"},
		{"SET fresh v KEEPTTL", bbOK}, // KEEPTTL on a new key: no TTL
		{"TTL fresh", ":-1"},
		{"SET past v EXAT 1", bbOK}, // a past time: stored and gone
		{"EXISTS past", ":0"},
		{"SET past v PXAT 1000 GET", bbNilBulk},
		{"EXISTS past", ":0"},

		// SET replaces any type; SET ... GET refuses a non-string.
		{"RPUSH l a", ":1"},
		{"SET l v GET", bbWrongType},
		{"TYPE l", bbStatus("list")},
		{"SET l v NX GET", bbWrongType},
		{"SET l v", bbOK},
		{"TYPE l", bbStatus("string")},
	})
}

// TestStringEmptyValue: an empty string is a value, not a missing key:
// every read of it answers an empty bulk string ($0), never nil.
func TestStringEmptyValue(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"SET k \"\"", bbOK},
		{"EXISTS k", ":1"},
		{"TYPE k", bbStatus("string")},
		{"STRLEN k", ":0"},
		{"MGET k", `*1[$""]`},
		{"GETRANGE k 0 -1", bbBulk("")},
		{"GET k", bbBulk("")},
		{"GETEX k", bbBulk("")},
		{"SET k x GET", bbBulk("")},
		{"SET k \"\"", bbOK},
		{"GETSET k y", bbBulk("")},
		{"SET k \"\"", bbOK},
		{"GETDEL k", bbBulk("")},
		{"EXISTS k", ":0"},
		{"APPEND a \"\"", ":0"},
		{"EXISTS a", ":1"},
		{"GET a", bbBulk("")},
	})
}

func TestStringSetnxSetexPsetex(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"SETNX k v", ":1"},
		{"SETNX k w", ":0"},
		{"GET k", bbBulk("v")},
		{"SETNX k", bbArity("setnx")},
		{"SETEX k 100 w", bbOK},
		{"GET k", bbBulk("w")},
		{"TTL k", ":100"},
		{"PSETEX k 5000 x", bbOK},
		{"PTTL k", ":~5000"},
		{"GET k", bbBulk("x")},
		{"SETEX k 0 v", bbErr("ERR invalid expire time in 'setex' command")},
		{"SETEX k -5 v", bbErr("ERR invalid expire time in 'setex' command")},
		{"SETEX k 9999999999999999 v", bbErr("ERR invalid expire time in 'setex' command")},
		{"PSETEX k 0 v", bbErr("ERR invalid expire time in 'psetex' command")},
		{"PSETEX k -1 v", bbErr("ERR invalid expire time in 'psetex' command")},
		{"SETEX k abc v", bbNotInt},
		{"PSETEX k 1.5 v", bbNotInt},
		{"SETEX k 10", bbArity("setex")},
		{"PSETEX k 10", bbArity("psetex")},
		{"GET k", bbBulk("x")},
		{"RPUSH l a", ":1"},
		{"SETNX l v", ":0"},
		{"SETEX l 10 v", bbOK}, // like SET: replaces any type
		{"TYPE l", bbStatus("string")},
	})
}

func TestStringGetdelGetexGetset(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	invalidGetex := bbErr("ERR invalid expire time in 'getex' command")
	bbRun(t, rc, []bbStep{
		{"SET k v", bbOK},
		{"GETDEL k", bbBulk("v")},
		{"GETDEL k", bbNilBulk},
		{"EXISTS k", ":0"},
		{"GETDEL", bbArity("getdel")},

		{"GETEX nokey", bbNilBulk},
		{"GETEX nokey EX 10", bbNilBulk},
		{"EXISTS nokey", ":0"},
		{"SET k v", bbOK},
		{"GETEX k", bbBulk("v")},
		{"TTL k", ":-1"},
		{"GETEX k EX 100", bbBulk("v")},
		{"TTL k", ":100"},
		{"GETEX k PX 50000", bbBulk("v")},
		{"PTTL k", ":~50000"},
		{"GETEX k EXAT 32503680000", bbBulk("v")},
		{"EXPIRETIME k", ":32503680000"},
		{"GETEX k PXAT 32503680000123", bbBulk("v")},
		{"PEXPIRETIME k", ":32503680000123"},
		{"GETEX k PERSIST", bbBulk("v")},
		{"TTL k", ":-1"},
		{"GETEX k persist", bbBulk("v")},
		{"GETEX k EX", bbSyntax},
		{"GETEX k EX 10 PX 10", bbSyntax},
		{"GETEX k PERSIST EX 10", bbSyntax},
		{"GETEX k EX 10 PERSIST", bbSyntax},
		{"GETEX k FOO", bbSyntax},
		{"GETEX k KEEPTTL", bbSyntax},
		{"GETEX k EX 0", invalidGetex},
		{"GETEX k PX -1", invalidGetex},
		{"GETEX k EXAT 0", invalidGetex},
		{"GETEX k EX 9999999999999999", invalidGetex},
		{"GETEX k EX abc", bbNotInt},
		{"TTL k", ":-1"},
		{"GETEX k EXAT 1", bbBulk("v")}, // a past time deletes the key
		{"EXISTS k", ":0"},
		{"GETEX", bbArity("getex")},

		{"GETSET k a", bbNilBulk},
		{"GETSET k b", bbBulk("a")},
		{"GET k", bbBulk("b")},
		{"SET t v EX 100", bbOK},
		{"GETSET t w", bbBulk("v")},
		{"TTL t", ":-1"}, // GETSET drops the TTL like SET
		{"GETSET k", bbArity("getset")},
	})
}

func TestStringIncrDecr(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	overflow := bbErr("ERR increment or decrement would overflow")
	bbRun(t, rc, []bbStep{
		{"INCR n", ":1"},
		{"INCR n", ":2"},
		{"INCRBY n 10", ":12"},
		{"INCRBY n -20", ":-8"},
		{"DECR n", ":-9"},
		{"DECRBY n 1", ":-10"},
		{"DECRBY n -15", ":5"},
		{"DECR fresh", ":-1"},
		{"DECRBY fresh2 5", ":-5"},
		{"INCRBY fresh3 0", ":0"},
		{"GET n", bbBulk("5")},
		{"TYPE n", bbStatus("string")},
		{"SET n 9223372036854775806", bbOK},
		{"INCR n", ":9223372036854775807"},
		{"INCR n", overflow},
		{"INCRBY n 1", overflow},
		{"GET n", bbBulk("9223372036854775807")},
		{"DECRBY n -1", overflow},
		{"SET n -9223372036854775807", bbOK},
		{"DECR n", ":-9223372036854775808"},
		{"DECR n", overflow},
		{"INCRBY n -1", overflow},
		{"INCRBY n -9223372036854775808", overflow},
		{"DECRBY n -9223372036854775808", bbErr("ERR decrement would overflow")},
		{"SET n 0", bbOK},
		{"DECRBY n -9223372036854775808", bbErr("ERR decrement would overflow")},
		{"INCRBY n 9223372036854775808", bbNotInt},
		{"INCRBY n abc", bbNotInt},
		{"INCRBY n 1.0", bbNotInt},
		{"INCRBY n", bbArity("incrby")},
		{"INCR", bbArity("incr")},
		{"SET f 1.5", bbOK},
		{"INCR f", bbNotInt},
		{"SET sp \" 1\"", bbOK},
		{"INCR sp", bbNotInt},
		{"SET sp \"1 \"", bbOK},
		{"INCR sp", bbNotInt},
		{"SET z 01", bbOK},
		{"INCR z", bbNotInt},
		{"SET plus +1", bbOK},
		{"INCR plus", bbNotInt},
		{"SET big 99999999999999999999", bbOK},
		{"INCR big", bbNotInt},
		{"SET e \"\"", bbOK},
		{"INCR e", bbNotInt},
		{"SET t 10 EX 100", bbOK},
		{"INCR t", ":11"},
		{"TTL t", ":100"}, // INCR keeps the TTL
	})
}

func TestStringIncrbyfloat(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"INCRBYFLOAT f 10.5", bbBulk("10.5")},
		{"INCRBYFLOAT f 0.1", bbBulk("10.6")},
		{"INCRBYFLOAT f -5", bbBulk("5.6")},
		{"INCRBYFLOAT f -5.6", bbBulk("0")},
		{"SET f 5.0e3", bbOK},
		{"INCRBYFLOAT f 2.0e2", bbBulk("5200")},
		{"SET i 10", bbOK},
		{"INCRBYFLOAT i 1", bbBulk("11")},
		{"OBJECT ENCODING i", bbBulk("int")},
		{"INCRBYFLOAT f abc", bbErr("ERR value is not a valid float")},
		{"INCRBYFLOAT f \"\"", bbErr("ERR value is not a valid float")},
		{"INCRBYFLOAT f nan", bbErr("ERR value is not a valid float")},
		{"SET s hello", bbOK},
		{"INCRBYFLOAT s 1", bbErr("ERR value is not a valid float")},
		{"SET sp \" 1.5\"", bbOK},
		{"INCRBYFLOAT sp 1", bbErr("ERR value is not a valid float")},
		{"INCRBYFLOAT f", bbArity("incrbyfloat")},
		{"SET t 1 EX 100", bbOK},
		{"INCRBYFLOAT t 1.5", bbBulk("2.5")},
		{"TTL t", ":100"},
	})
	// Redis parses "inf" as a float (strtold) and then refuses the
	// result, so the error names the result, not the argument.
	bbRun(t, rc, []bbStep{
		{"INCRBYFLOAT f inf", bbErr("ERR increment would produce NaN or Infinity")},
		{"INCRBYFLOAT f -inf", bbErr("ERR increment would produce NaN or Infinity")},
		{"GET f", bbBulk("5200")},
	})
}

func TestStringMultiKey(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"MSET a 1 b 2 c 3", bbOK},
		{"MGET a b nokey c", `*4[$"1" $"2" $nil $"3"]`},
		{"RPUSH l x", ":1"},
		{"MGET a l", `*2[$"1" $nil]`}, // a non-string reads as nil, not WRONGTYPE
		{"MSET a 10 a 11", bbOK},      // the last one wins
		{"GET a", bbBulk("11")},
		{"MSET a 1 b", bbArity("mset")},
		{"MSET a", bbArity("mset")},
		{"MGET", bbArity("mget")},
		{"MSETNX a 5 new 6", ":0"},
		{"EXISTS new", ":0"},
		{"MSETNX x 5 y 6", ":1"},
		{"MGET x y", `*2[$"5" $"6"]`},
		{"MSETNX x 5 y", bbArity("msetnx")},
		{"SET t v EX 100", bbOK},
		{"MSET t w", bbOK},
		{"TTL t", ":-1"},
		{"MSET l v", bbOK},
		{"TYPE l", bbStatus("string")},
	})
}

func TestStringAppendStrlenRanges(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"APPEND s hello", ":5"},
		{"APPEND s \" world\"", ":11"},
		{"GET s", bbBulk("hello world")},
		{"STRLEN s", ":11"},
		{"STRLEN nokey", ":0"},
		{"APPEND s \"\"", ":11"},
		{"SET n 123", bbOK},
		{"APPEND n 4", ":4"},
		{"GET n", bbBulk("1234")},
		{"STRLEN n", ":4"},
		{"SET t v EX 100", bbOK},
		{"APPEND t w", ":2"},
		{"TTL t", ":100"},

		{"SET r \"Hello World\"", bbOK},
		{"GETRANGE r 0 3", bbBulk("Hell")},
		{"GETRANGE r 0 -1", bbBulk("Hello World")},
		{"GETRANGE r -4 -1", bbBulk("orld")},
		{"GETRANGE r 5 3", bbBulk("")},
		{"GETRANGE r 5 5000", bbBulk(" World")},
		{"GETRANGE r -5000 10000", bbBulk("Hello World")},
		{"GETRANGE r 0 -100", bbBulk("")}, // Redis 8: an end before the first byte selects nothing (7.x: "H")
		{"GETRANGE r 1 -100", bbBulk("")},
		{"GETRANGE r -1 -100", bbBulk("")},
		{"GETRANGE r -100 -99", bbBulk("")},
		{"GETRANGE r -100 -100", bbBulk("")},
		{"GETRANGE r -100 -11", bbBulk("H")}, // a start before the first byte is clamped to it
		{"GETRANGE r -100 -101", bbBulk("")},
		{"GETRANGE r 100 200", bbBulk("")},
		{"GETRANGE nokey 0 -1", bbBulk("")},
		{"SET i 1234", bbOK},
		{"GETRANGE i 0 2", bbBulk("123")},
		{"GETRANGE i -3 -1", bbBulk("234")},
		{"GETRANGE r a 1", bbNotInt},
		{"GETRANGE r 0 b", bbNotInt},
		{"GETRANGE r 0", bbArity("getrange")},

		{"SETRANGE r 6 Redis", ":11"},
		{"GET r", bbBulk("Hello Redis")},
		{"SETRANGE r 11 !", ":12"},
		{"GET r", bbBulk("Hello Redis!")},
		{"SETRANGE pad 3 abc", ":6"},
		{"GET pad", bbBulk("\x00\x00\x00abc")},
		{"SETRANGE pad 0 \"\"", ":6"},
		{"SETRANGE nothing 5 \"\"", ":0"},
		{"EXISTS nothing", ":0"},
		{"SETRANGE r -1 x", bbErr("ERR offset is out of range")},
		{"SETRANGE r abc x", bbNotInt},
		{"SETRANGE r 536870912 x", bbErr("ERR string exceeds maximum allowed size (proto-max-bulk-len)")},
		// An offset near the int64 limit must not wrap past the size check.
		{"SETRANGE r 9223372036854775807 x", bbErr("ERR string exceeds maximum allowed size (proto-max-bulk-len)")},
		{"SETRANGE nokey 9223372036854775806 xy", bbErr("ERR string exceeds maximum allowed size (proto-max-bulk-len)")},
		{"SETRANGE r 1", bbArity("setrange")},
		{"SETRANGE t 0 X", ":2"},
		{"TTL t", ":100"},
	})
}

// TestStringSizeLimit checks proto-max-bulk-len caps strings grown by
// APPEND and SETRANGE, not only what arrives in one request.
func TestStringSizeLimit(t *testing.T) {
	s := StartServer(t, "--proto-max-bulk-len", "1mb")
	rc := s.Raw(t)
	half := strings.Repeat("x", 600<<10)
	if r := rc.Do("APPEND", "k", half); r.Int != int64(len(half)) {
		t.Fatalf("APPEND = %s", r)
	}
	tooBig := bbErr("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
	if r := rc.Do("APPEND", "k", half); r.String() != tooBig {
		t.Errorf("APPEND past 1mb = %s, want %s", r, tooBig)
	}
	if r := rc.Do("SETRANGE", "k", strconv.Itoa(1<<20), "x"); r.String() != tooBig {
		t.Errorf("SETRANGE past 1mb = %s, want %s", r, tooBig)
	}
	if r := rc.Do("SETRANGE", "k", strconv.Itoa(1<<20-1), "x"); r.Int != 1<<20 {
		t.Errorf("SETRANGE up to exactly 1mb = %s, want :%d", r, 1<<20)
	}
	if r := rc.Do("STRLEN", "k"); r.Int != 1<<20 {
		t.Errorf("STRLEN = %s", r)
	}
}

func TestStringWrongType(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{{"RPUSH l a", ":1"}})
	steps := []bbStep{}
	for _, cmd := range []string{
		"GET l", "GETDEL l", "GETEX l", "GETEX l EX 10", "GETSET l v", "SET l v GET",
		"INCR l", "INCRBY l 2", "DECR l", "DECRBY l 2", "INCRBYFLOAT l 1.5",
		"APPEND l x", "STRLEN l", "GETRANGE l 0 -1", "SETRANGE l 0 x",
	} {
		steps = append(steps, bbStep{cmd, bbWrongType})
	}
	steps = append(steps,
		bbStep{"LRANGE l 0 -1", `*1[$"a"]`}, // untouched
		bbStep{"SET s v", bbOK},
		bbStep{"LPUSH s x", bbWrongType},
		bbStep{"LLEN s", bbWrongType},
	)
	bbRun(t, rc, steps)
}

// TestStringGoRedis drives the string commands through go-redis in RESP3
// and RESP2, as applications do.
func TestStringGoRedis(t *testing.T) {
	s := StartServer(t)
	for name, c := range map[string]*redis.Client{"resp3": s.Client(t), "resp2": s.Client2(t)} {
		t.Run(name, func(t *testing.T) {
			cx := ctx(t)
			p := name + ":"
			if err := c.Set(cx, p+"k", "v", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if ttl, err := c.TTL(cx, p+"k").Result(); err != nil || ttl != time.Minute {
				t.Errorf("TTL = %v, %v", ttl, err)
			}
			if v, err := c.Get(cx, p+"nokey").Result(); err != redis.Nil {
				t.Errorf("GET missing = %q, %v; want redis.Nil", v, err)
			}
			if ok, err := c.SetNX(cx, p+"k", "w", 0).Result(); err != nil || ok {
				t.Errorf("SETNX existing = %v, %v", ok, err)
			}
			if n, err := c.IncrBy(cx, p+"n", 41).Result(); err != nil || n != 41 {
				t.Errorf("INCRBY = %d, %v", n, err)
			}
			if f, err := c.IncrByFloat(cx, p+"f", 2.5).Result(); err != nil || f != 2.5 {
				t.Errorf("INCRBYFLOAT = %v, %v", f, err)
			}
			vals, err := c.MGet(cx, p+"k", p+"nokey", p+"n").Result()
			if err != nil || len(vals) != 3 || vals[0] != "v" || vals[1] != nil || vals[2] != "41" {
				t.Errorf("MGET = %#v, %v", vals, err)
			}
			if v, err := c.GetEx(cx, p+"k", 0).Result(); err != nil || v != "v" {
				t.Errorf("GETEX = %q, %v", v, err)
			}
			if v, err := c.GetDel(cx, p+"k").Result(); err != nil || v != "v" {
				t.Errorf("GETDEL = %q, %v", v, err)
			}
			if err := c.SetArgs(cx, p+"a", "1", redis.SetArgs{Mode: "NX", KeepTTL: true}).Err(); err != nil {
				t.Errorf("SET NX KEEPTTL: %v", err)
			}
			if v, err := c.SetArgs(cx, p+"a", "2", redis.SetArgs{Get: true}).Result(); err != nil || v != "1" {
				t.Errorf("SET GET = %q, %v", v, err)
			}
			if err := c.RPush(cx, p+"l", "x").Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(cx, p+"l").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
				t.Errorf("GET list: %v, want WRONGTYPE", err)
			}
		})
	}
}
