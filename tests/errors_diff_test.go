package tests

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Side-by-side tests: the same commands go to redstream and to a real
// redis-server (7.0 here), and the replies must be equal. Where Redis 8
// answers differently from 7.0, the case carries Redis 8's reply, and
// redstream must give that one.

type bbDiff struct {
	cmd    string
	redis8 string // Redis 8's reply where 7.0's differs; "" = must equal the oracle
}

// bbPair is one connection to each server.
type bbPair struct {
	rs, rd *RawConn
}

func bbStartPair(t *testing.T, args ...string) (*Server, *RedisServer, bbPair) {
	t.Helper()
	rd := StartRedis(t, args...)
	s := StartServer(t, args...)
	p := bbPair{rs: s.Raw(t), rd: rd.Raw(t)}
	p.both(t, "FLUSHALL")
	return s, rd, p
}

// both runs a command on both servers, requiring the same reply.
func (p bbPair) both(t *testing.T, cmd string) {
	t.Helper()
	p.compare(t, []bbDiff{{cmd: cmd}})
}

// compare runs each case on both servers.
func (p bbPair) compare(t *testing.T, cases []bbDiff) {
	t.Helper()
	for _, c := range cases {
		args := bbSplit(c.cmd)
		got := p.rs.Do(args...).String()
		oracle := p.rd.Do(args...).String()
		switch {
		case c.redis8 != "" && got != c.redis8:
			t.Errorf("%s\n  redstream: %s\n  redis 8:   %s (redis 7.0: %s)", c.cmd, got, c.redis8, oracle)
		case c.redis8 == "" && got != oracle:
			t.Errorf("%s\n  redstream: %s\n  redis:     %s", c.cmd, got, oracle)
		}
	}
}

func TestDiffKeyspace(t *testing.T) {
	_, _, p := bbStartPair(t)
	p.compare(t, []bbDiff{
		{cmd: "SET a 1"}, {cmd: "SET b hello"}, {cmd: "RPUSH l x y"},
		{cmd: "MOVE a 1"}, {cmd: "EXISTS a"}, {cmd: "MOVE a 1"}, {cmd: "MOVE nokey 1"}, {cmd: "MOVE b 0"},
		{cmd: "MOVE b x"}, {cmd: "MOVE b 16"}, {cmd: "MOVE b -1"}, {cmd: "MOVE b 4294967296"}, {cmd: "MOVE b"},
		{cmd: "SELECT 1"}, {cmd: "GET a"}, {cmd: "SET b other"}, {cmd: "SELECT 0"}, {cmd: "MOVE b 1"},
		{cmd: "SET a 1"},
		{cmd: "DEL a b zz"}, {cmd: "EXISTS a l l"}, {cmd: "TOUCH l nokey"},
		{cmd: "TYPE l"}, {cmd: "TYPE nokey"}, {cmd: "SET k v"},
		{cmd: "RENAME nokey x"}, {cmd: "RENAMENX nokey x"}, {cmd: "RENAME k k"}, {cmd: "RENAMENX k k"},
		{cmd: "COPY l l"}, {cmd: "COPY l l DB 0"}, {cmd: "COPY l l2 DB 16"}, {cmd: "COPY l l2 DB x"},
		{cmd: "COPY l l2 FOO"}, {cmd: "COPY l l2"}, {cmd: "COPY l l2"}, {cmd: "COPY l l2 REPLACE"},
		{cmd: "EXPIRE k 100 NX XX"}, {cmd: "EXPIRE k 100 GT LT"}, {cmd: "EXPIRE k 100 NX GT"},
		{cmd: "EXPIRE k 100 FOO"}, {cmd: "EXPIRE k abc"}, {cmd: "EXPIRE k"},
		{cmd: "EXPIRE k 9999999999999999"}, {cmd: "EXPIRE k -9999999999999999"},
		{cmd: "EXPIREAT k 9223372036854775807"}, {cmd: "PEXPIRE k 9223372036854775807"},
		{cmd: "PEXPIREAT k 9223372036854775807"}, {cmd: "PERSIST k"},
		{cmd: "EXPIRE k 100 GT"}, {cmd: "EXPIRE k 100 LT"}, {cmd: "TTL k"}, {cmd: "EXPIRE k 200 GT"},
		{cmd: "EXPIRE k 50 XX LT"}, {cmd: "TTL k"}, {cmd: "EXPIRE k -1 XX"}, {cmd: "EXISTS k"},
		{cmd: "SET k v"}, {cmd: "EXPIRE k -1 XX"}, {cmd: "EXISTS k"}, {cmd: "EXPIREAT k 1"}, {cmd: "EXISTS k"},
		{cmd: "EXPIRETIME nokey"}, {cmd: "PEXPIRETIME l"}, {cmd: "PERSIST l"}, {cmd: "TTL nokey"},
		{cmd: "OBJECT ENCODING nokey"}, {cmd: "OBJECT FREQ l"}, {cmd: "OBJECT FREQ nokey"},
		{cmd: "OBJECT IDLETIME l"}, {cmd: "OBJECT REFCOUNT l"}, {cmd: "OBJECT FOO l"}, {cmd: "OBJECT"},
		{cmd: "OBJECT ENCODING"}, {cmd: "OBJECT ENCODING l", redis8: bbBulk("listpack")},
		{cmd: "SET int 123"}, {cmd: "OBJECT ENCODING int"}, {cmd: "SET str hello"}, {cmd: "OBJECT ENCODING str"},
		{cmd: "OBJECT REFCOUNT str"},
		{cmd: "OBJECT REFCOUNT int"}, // shared integer: 2147483647
		{cmd: "MEMORY USAGE nokey"}, {cmd: "MEMORY USAGE l SAMPLES x"}, {cmd: "MEMORY USAGE l FOO"},
		{cmd: "MEMORY USAGE l SAMPLES"}, {cmd: "MEMORY FOO"},
		{cmd: "SCAN abc"}, {cmd: "SCAN 0 COUNT 0"}, {cmd: "SCAN 0 COUNT abc"}, {cmd: "SCAN 0 MATCH"},
		{cmd: "SCAN 0 FOO bar"}, {cmd: "SCAN 18446744073709551616"},
		{cmd: "SCAN -1", redis8: bbErr("ERR invalid cursor")},
		{cmd: "SCAN 0 TYPE foo", redis8: bbErr("ERR unknown type name 'foo'")},
		{cmd: "SELECT 16"}, {cmd: "SELECT -1"}, {cmd: "SELECT abc"}, {cmd: "RANDOMKEY x"},
		{cmd: "KEYS"}, {cmd: "DBSIZE x"}, {cmd: "FLUSHDB foo"}, {cmd: "FLUSHALL SYNC x"},
		{cmd: "DBSIZE"}, {cmd: "FLUSHDB ASYNC"}, {cmd: "DBSIZE"}, {cmd: "RANDOMKEY"},
	})
}

func TestDiffGlob(t *testing.T) {
	_, _, p := bbStartPair(t)
	for _, k := range []string{"hello", "hallo", "hbllo", "hxllo", "hllo", "heeello", "a*b", "a?b", "axb", "[x]", "x", `a\b`, "Hello", "a-b", "a]b", "^"} {
		p.rs.Do("SET", k, "v")
		p.rd.Do("SET", k, "v")
	}
	for _, pat := range []string{
		"*", "h?llo", "h*llo", "h[ae]llo", "h[^e]llo", "h[a-b]llo", "h[b-a]llo", `a\*b`, `a\?b`, `a\\b`,
		`\[x\]`, "[H]*", "?", "HELLO", "a[-]b", "a[\\]]b", "a[]]b", "[^a-z]*", "h[a-]llo", "*[", "[", `\`, "h**o", "^", "[^^]",
	} {
		got := bbStrings(t, p.rs.Do("KEYS", pat))
		want := bbStrings(t, p.rd.Do("KEYS", pat))
		if !slices.Equal(got, want) {
			t.Errorf("KEYS %q: redstream %q, redis %q", pat, got, want)
		}
	}
}

func TestDiffStrings(t *testing.T) {
	_, _, p := bbStartPair(t)
	p.compare(t, []bbDiff{
		{cmd: "SET k v NX XX"}, {cmd: "SET k v XX NX"}, {cmd: "SET k v EX 10 PX 100"},
		{cmd: "SET k v EX 10 KEEPTTL"}, {cmd: "SET k v KEEPTTL EX 10"}, {cmd: "SET k v EX"},
		{cmd: "SET k v EX 0"}, {cmd: "SET k v EX -1"}, {cmd: "SET k v PX 0"}, {cmd: "SET k v EXAT 0"},
		{cmd: "SET k v EX abc"}, {cmd: "SET k v EX 9999999999999999"}, {cmd: "SET k v PX 9223372036854775807"},
		{cmd: "SET k v PXAT 9223372036854775807"}, {cmd: "SET k v EXAT 9223372036854775807"},
		{cmd: "SET k v GET GET"}, {cmd: "SET k v FOO"}, {cmd: "SET k v NX GET"}, {cmd: "GET k"},
		{cmd: "SET k v2 NX GET"}, {cmd: "SET k v3 XX GET"}, {cmd: "SET k2 v XX GET"}, {cmd: "SET k2 v XX"},
		{cmd: "SET k2 v NX"}, {cmd: "RPUSH l a"}, {cmd: "SET l v GET"}, {cmd: "GET l"}, {cmd: "GETSET l v"},
		{cmd: "SETNX k x"}, {cmd: "SETEX k 0 v"}, {cmd: "SETEX k -5 v"}, {cmd: "SETEX k abc v"},
		{cmd: "PSETEX k 0 v"}, {cmd: "SETEX k 100 v"}, {cmd: "TTL k"}, {cmd: "GETDEL k"}, {cmd: "GETDEL k"},
		{cmd: "GETDEL l"}, {cmd: "SET k v"}, {cmd: "GETEX k"}, {cmd: "GETEX k EX 100"}, {cmd: "TTL k"},
		{cmd: "GETEX k PERSIST"}, {cmd: "TTL k"}, {cmd: "GETEX k EX"}, {cmd: "GETEX k EX 0"},
		{cmd: "GETEX k EX abc"}, {cmd: "GETEX k PERSIST EX 10"}, {cmd: "GETEX k FOO"},
		{cmd: "GETEX k EX 10 PX 10"}, {cmd: "GETEX nokey EX 10"}, {cmd: "GETEX l"}, {cmd: "GETEX k EXAT 1"},
		{cmd: "GET k"}, {cmd: "SET n 10"}, {cmd: "INCR n"}, {cmd: "INCRBY n 5"}, {cmd: "DECR n"},
		{cmd: "DECRBY n 3"}, {cmd: "INCRBY n abc"}, {cmd: "SET n 9223372036854775807"}, {cmd: "INCR n"},
		{cmd: "SET n -9223372036854775808"}, {cmd: "DECR n"}, {cmd: "DECRBY n -9223372036854775808"},
		{cmd: "INCRBY n -9223372036854775808"}, {cmd: "SET n 1.5"}, {cmd: "INCR n"}, {cmd: "SET n 01"},
		{cmd: "INCR n"}, {cmd: "INCR l"}, {cmd: "INCRBYFLOAT f 1.5"}, {cmd: "INCRBYFLOAT f abc"},
		{cmd: "SET f 10.50"}, {cmd: "INCRBYFLOAT f 0.1"}, {cmd: "INCRBYFLOAT l 1"},
		{cmd: "INCRBYFLOAT f inf"}, {cmd: "INCRBYFLOAT f -inf"},
		{cmd: "SET f 3.0e3"}, {cmd: "INCRBYFLOAT f 0.1"}, // long double: 3000.10000000000000009
		{cmd: "MSET a 1 b 2"}, {cmd: "MSET a 1 b"}, {cmd: "MGET a b nokey l"}, {cmd: "MSETNX a 1 c 3"},
		{cmd: "MSETNX c 3 d 4"}, {cmd: "MSETNX c 3 d"}, {cmd: "APPEND s hello"}, {cmd: "APPEND s \" world\""},
		{cmd: "STRLEN s"}, {cmd: "STRLEN nokey"}, {cmd: "STRLEN l"}, {cmd: "APPEND l x"},
		{cmd: "GETRANGE s 0 4"}, {cmd: "GETRANGE s -5 -1"}, {cmd: "GETRANGE s 5 1"}, {cmd: "GETRANGE s -1 -5"},
		{cmd: "GETRANGE s 0 -100", redis8: bbBulk("")}, {cmd: "GETRANGE s -100 -1"}, {cmd: "GETRANGE s 0 1000"},
		{cmd: "GETRANGE nokey 0 -1"}, {cmd: "GETRANGE s a b"}, {cmd: "GETRANGE l 0 1"},
		{cmd: "SETRANGE s 6 redis"}, {cmd: "GET s"}, {cmd: "SETRANGE s -1 x"}, {cmd: "SETRANGE s abc x"},
		{cmd: "SETRANGE nk 3 abc"}, {cmd: "GET nk"}, {cmd: "SETRANGE nk2 5 \"\""}, {cmd: "EXISTS nk2"},
		{cmd: "SETRANGE s 536870912 x"}, {cmd: "SETRANGE l 0 x"},
		// The empty string.
		{cmd: "SET e \"\""}, {cmd: "GET e"}, {cmd: "MGET e"}, {cmd: "GETEX e"}, {cmd: "SET e x GET"},
		{cmd: "SET e \"\""}, {cmd: "GETSET e y"}, {cmd: "SET e \"\""}, {cmd: "GETDEL e"}, {cmd: "EXISTS e"},
	})
}

func TestDiffConnection(t *testing.T) {
	_, _, p := bbStartPair(t)
	long := strings.Repeat("x", 200)
	p.compare(t, []bbDiff{
		{cmd: "PING"}, {cmd: "PING hi"}, {cmd: "PING a b"}, {cmd: "ECHO"}, {cmd: "ECHO hi"},
		{cmd: "AUTH pw"}, {cmd: "AUTH u pw"}, {cmd: "AUTH default pw"}, {cmd: "AUTH a b c"}, {cmd: "AUTH"},
		{cmd: "HELLO 4"}, {cmd: "HELLO 1"}, {cmd: "HELLO abc"}, {cmd: "HELLO 3 FOO"},
		{cmd: "HELLO 3 AUTH default"}, {cmd: "HELLO 3 SETNAME \"a b\""}, {cmd: "HELLO 2 SETNAME"},
		{cmd: "SELECT 16"}, {cmd: "SELECT abc"}, {cmd: "SELECT 0"},
		{cmd: "CLIENT FOO"}, {cmd: "CLIENT"}, {cmd: "CLIENT SETNAME \"a b\""}, {cmd: "CLIENT SETNAME \"\""},
		{cmd: "CLIENT GETNAME"}, {cmd: "CLIENT SETNAME me"}, {cmd: "CLIENT GETNAME"}, {cmd: "CLIENT GETNAME x"},
		{cmd: "CLIENT NO-EVICT on"}, {cmd: "CLIENT NO-EVICT foo"}, {cmd: "CLIENT NO-EVICT off"},
		{cmd: "CLIENT REPLY foo"}, {cmd: "CLIENT UNBLOCK abc"}, {cmd: "CLIENT UNBLOCK 999999"},
		{cmd: "CLIENT UNBLOCK 999999 FOO"},
		{cmd: "CLIENT UNBLOCK 999999 TIMEOUT x"},
		{cmd: "CLIENT KILL 1.2.3.4:5"}, {cmd: "CLIENT KILL ID abc"}, {cmd: "CLIENT KILL ID 0"},
		{cmd: "CLIENT KILL ID 999999"}, {cmd: "CLIENT KILL FOO bar"}, {cmd: "CLIENT KILL ID"},
		{cmd: "CLIENT KILL TYPE foo"}, {cmd: "CLIENT KILL SKIPME maybe"}, {cmd: "CLIENT KILL ID 1 SKIPME"},
		{cmd: "CLIENT LIST TYPE foo"}, {cmd: "CLIENT LIST ID abc"}, {cmd: "CLIENT LIST FOO"},
		{cmd: "CLIENT LIST TYPE pubsub"},
		{cmd: "foo a b"}, {cmd: "foo"}, {cmd: "FOO \"x y\""}, {cmd: "\"\" a"},
		{cmd: "foo " + long + " " + long}, {cmd: long},
		{cmd: "foo a" + strings.Repeat("x", 100) + " b" + strings.Repeat("y", 100) + " c"},
		{cmd: "GET"}, {cmd: "GET a b"}, {cmd: "CLIENT GETNAME extra"}, {cmd: "CONFIG GET"},
		{cmd: "CONFIG SET"}, {cmd: "CONFIG SET maxclients"},
	})
}

func TestDiffServer(t *testing.T) {
	_, _, p := bbStartPair(t)
	p.compare(t, []bbDiff{
		{cmd: "CONFIG GET maxclients"}, {cmd: "CONFIG GET MAXCLIENTS"}, {cmd: "CONFIG GET nosuchparam"},
		{cmd: "WAIT 0 0"}, {cmd: "WAIT 0 a"}, {cmd: "WAIT a 0"}, {cmd: "WAIT 0 -1"}, {cmd: "WAIT 1 10"},
		// WAITAOF is 7.2's; redstream runs with its default appendonly yes,
		// and nothing written is fsynced already.
		{cmd: "WAITAOF 0 0 0", redis8: "*2[:1 :0]"}, {cmd: "WAITAOF 1 0 0", redis8: "*2[:1 :0]"},
		{cmd: "CONFIG SET foo bar"}, {cmd: "CONFIG SET databases 5"}, {cmd: "CONFIG SET maxclients abc"},
		{cmd: "CONFIG SET maxclients 0"}, {cmd: "CONFIG SET timeout 1 timeout 2"},
		{cmd: "CONFIG SET maxclients 100 timeout abc"}, {cmd: "CONFIG GET maxclients"},
		{cmd: "CONFIG SET maxclients 100 foo bar"}, {cmd: "CONFIG SET maxclients 1000 timeout"},
		{cmd: "CONFIG SET maxmemory abc"}, {cmd: "CONFIG SET protected-mode maybe"},
		{cmd: "CONFIG SET maxclients 123 timeout 7"}, {cmd: "CONFIG GET maxclients"}, {cmd: "CONFIG GET timeout"},
		{cmd: "CONFIG SET maxclients 10000 timeout 0"}, {cmd: "CONFIG GET slowlog-max-len"},
		{cmd: "CONFIG GET list-max-ziplist-size"}, {cmd: "CONFIG GET proto-max-bulk-len"},
		{cmd: "CONFIG SET hz 0"}, {cmd: "CONFIG SET hz 10"},
		{cmd: "CONFIG RESETSTAT x"}, {cmd: "CONFIG FOO"},
		{cmd: "SLOWLOG GET -2"}, {cmd: "SLOWLOG GET abc"}, {cmd: "SLOWLOG GET 1 2"}, {cmd: "SLOWLOG LEN x"},
		{cmd: "SLOWLOG FOO"}, {cmd: "SLOWLOG"},
		{cmd: "COMMAND FOO"}, {cmd: "COMMAND COUNT x"}, {cmd: "COMMAND GETKEYS"},
		{cmd: "COMMAND GETKEYS GET a"}, {cmd: "COMMAND GETKEYS SET k v"}, {cmd: "COMMAND GETKEYS MSET a 1 b 2"},
		{cmd: "COMMAND GETKEYS LMPOP 2 a b LEFT"}, {cmd: "COMMAND GETKEYS BLMPOP 0 2 a b LEFT"},
		{cmd: "COMMAND GETKEYS LMPOP 3 a b LEFT"}, {cmd: "COMMAND GETKEYS LMPOP 0 a LEFT"},
		{cmd: "COMMAND GETKEYS LMPOP x a LEFT"}, {cmd: "COMMAND GETKEYS get a b"},
		{cmd: "COMMAND GETKEYS GET", redis8: bbErr("ERR Invalid number of arguments specified for command")},
		{cmd: "COMMAND GETKEYS nosuch", redis8: bbErr("ERR Invalid command specified")},
		{cmd: "COMMAND GETKEYS PING", redis8: bbErr("ERR The command has no key arguments")},
		{cmd: "COMMAND GETKEYS nosuch a"}, {cmd: "COMMAND GETKEYS PING a"},
		{cmd: "COMMAND INFO nosuchcommand"}, {cmd: "COMMAND INFO get"}, {cmd: "COMMAND DOCS nosuchcommand"},
		{cmd: "COMMAND LIST FILTERBY FOO bar"}, {cmd: "COMMAND LIST FOO"},
		{cmd: "DBSIZE x"}, {cmd: "FLUSHDB foo"}, {cmd: "FLUSHALL ASYNC"}, {cmd: "FLUSHALL SYNC"},
		{cmd: "SHUTDOWN ABORT"}, {cmd: "SHUTDOWN FOO"}, {cmd: "TIME x"}, {cmd: "INFO nosuchsection"},
		{cmd: "ROLE"}, {cmd: "ROLE x"},
	})
}

func TestDiffTransactions(t *testing.T) {
	_, _, p := bbStartPair(t)
	p.compare(t, []bbDiff{
		{cmd: "EXEC"}, {cmd: "DISCARD"}, {cmd: "MULTI"}, {cmd: "MULTI"}, {cmd: "SET a 1"}, {cmd: "EXEC"},
		{cmd: "MULTI"}, {cmd: "WATCH a"}, {cmd: "INCR a"}, {cmd: "EXEC"},
		{cmd: "MULTI"}, {cmd: "SET a 1"}, {cmd: "foo"}, {cmd: "EXEC"},
		{cmd: "MULTI"}, {cmd: "SET a"}, {cmd: "GET a"}, {cmd: "EXEC"},
		{cmd: "MULTI"}, {cmd: "CLIENT NOPE"}, {cmd: "EXEC"},
		{cmd: "SET s hello"}, {cmd: "MULTI"}, {cmd: "SET s2 x"}, {cmd: "INCR s"}, {cmd: "LPUSH s x"},
		{cmd: "EXEC"}, {cmd: "GET s2"},
		{cmd: "MULTI"}, {cmd: "SHUTDOWN"}, {cmd: "EXEC"},
		{cmd: "MULTI"}, {cmd: "DISCARD"}, {cmd: "EXEC"},
		{cmd: "MULTI"}, {cmd: "PING"}, {cmd: "ECHO"}, {cmd: "DISCARD"}, {cmd: "DISCARD"},
		{cmd: "MULTI"}, {cmd: "BLPOP nolist 0"}, {cmd: "BLMOVE nolist d LEFT RIGHT 0"},
		{cmd: "BRPOPLPUSH nolist d 0"}, {cmd: "EXEC"},
		{cmd: "WATCH"}, {cmd: "UNWATCH x"}, {cmd: "MULTI x"},
		{cmd: "WATCH a"}, {cmd: "SET a 2"}, {cmd: "MULTI"}, {cmd: "GET a"}, {cmd: "EXEC"},
	})
}

// TestDiffBlockingTimeouts: a list wait that times out answers the null
// array in RESP2 — BLMOVE and BRPOPLPUSH included (blocked.c).
func TestDiffBlockingTimeouts(t *testing.T) {
	_, _, p := bbStartPair(t)
	p.compare(t, []bbDiff{
		{cmd: "BLPOP nq 0.01"}, {cmd: "BRPOP nq 0.01"}, {cmd: "BLMPOP 0.01 1 nq LEFT"},
		{cmd: "BLMOVE nq d LEFT RIGHT 0.01"}, {cmd: "BRPOPLPUSH nq d 0.01"},
	})
}

// TestDiffHelpTexts compares the HELP of containers whose subcommands
// redstream has in full. Redis 8 ends every HELP with "Print this help."
// where 7.0 says "Prints this help.".
func TestDiffHelpTexts(t *testing.T) {
	_, _, p := bbStartPair(t)
	for _, cmd := range []string{"OBJECT HELP", "SLOWLOG HELP"} {
		got := p.rs.Do(bbSplit(cmd)...).String()
		want := strings.Replace(p.rd.Do(bbSplit(cmd)...).String(), `+"    Prints this help."`, `+"    Print this help."`, 1)
		if got != want {
			t.Errorf("%s\n  redstream: %s\n  redis 8:   %s", cmd, got, want)
		}
	}
}

// bbUsec hides timings in INFO commandstats.
var bbUsec = regexp.MustCompile(`usec=\d+,usec_per_call=[0-9.]+`)

func TestDiffStats(t *testing.T) {
	_, _, p := bbStartPair(t)
	for _, rc := range []*RawConn{p.rs, p.rd} {
		rc.Do("CONFIG", "RESETSTAT")
		rc.Do("GET")
		rc.Do("GET", "a", "b")
		rc.Do("RPUSH", "l", "x")
		rc.Do("INCR", "l")
		rc.Do("NOSUCHCMD")
		rc.Do("SET", "k", "v")
		rc.Do("SET", "k2", "v")
	}
	for _, section := range []string{"errorstats", "commandstats"} {
		got := bbUsec.ReplaceAllString(bbInfoText(t, p.rs, section), "usec=N")
		want := bbUsec.ReplaceAllString(bbInfoText(t, p.rd, section), "usec=N")
		gl, wl := strings.Split(got, "\r\n"), strings.Split(want, "\r\n")
		slices.Sort(gl)
		slices.Sort(wl)
		if !slices.Equal(gl, wl) {
			t.Errorf("INFO %s:\nredstream:\n%s\nredis:\n%s", section, got, want)
		}
	}
	gi, wi := bbInfo(t, p.rs, "stats"), bbInfo(t, p.rd, "stats")
	for _, f := range []string{"total_error_replies", "keyspace_hits", "keyspace_misses"} {
		if gi[f] != wi[f] {
			t.Errorf("INFO %s: redstream %s, redis %s", f, gi[f], wi[f])
		}
	}
}

// bbRawExchange sends bytes on a fresh connection and returns everything
// the server wrote until it closed the connection.
func bbRawExchange(t *testing.T, addr, send string) string {
	t.Helper()
	rc := dialRaw(t, addr)
	rc.Send(send)
	rc.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var buf bytes.Buffer
	_, err := io.Copy(&buf, rc.Conn)
	if err != nil && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") {
		t.Errorf("%q: %v (read %q)", send, err, buf.String())
	}
	return buf.String()
}

func TestDiffProtocol(t *testing.T) {
	s := StartServer(t)
	rd := StartRedis(t)
	quit := Encode("QUIT")
	for _, send := range []string{
		"*abc\r\n", "*3000000000\r\n", "*2147483648\r\n", "*01\r\n$4\r\nPING\r\n",
		"*1\r\n$abc\r\n", "*1\r\n$-5\r\n", "*1\r\n$+4\r\nPING\r\n", "*1\r\n$04\r\nPING\r\n", "*1\r\n$536870913\r\n",
		"*1\r\nx3\r\nGET\r\n", "*2\r\n$4\r\nECHO\r\n:5\r\n",
		"GET \"a\r\n", "SET 'a b\r\n", "ECHO \"a\"b\r\n",
		strings.Repeat("x", 70000), "*" + strings.Repeat("1", 70000), "*1\r\n$" + strings.Repeat("1", 70000),
		"PING\r\n*abc\r\n",
		"POST / HTTP/1.1\r\n", "post /x HTTP/1.0\r\n", "host: foo\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"\r\n\r\nPING\r\n" + quit, "*0\r\nPING\r\n" + quit, "*-1\r\nPING\r\n" + quit, "PING\n" + quit,
		"SET k \"a b\"\r\nGET k\r\n" + quit, "set k 'x\\'y'\r\nget k\r\n" + quit,
		"ECHO \"\\x41\\n\"\r\n" + quit, "ECHO a\"b\"\r\n" + quit, "ECHO \"\"\r\n" + quit,
		"*2\r\n$4\r\nECHO\r\n$3\r\nabcdef\r\n" + quit,
		"*1\r\n$4\r\nPING\r\n" + quit + "PING\r\n",
	} {
		got := bbRawExchange(t, s.Addr, send)
		want := bbRawExchange(t, rd.Addr, send)
		if got != want {
			t.Errorf("sending %.60q:\n  redstream: %q\n  redis:     %q", send, got, want)
		}
	}
}

func TestDiffUnauthenticatedProtocol(t *testing.T) {
	s := StartServer(t, "--requirepass", "pw")
	rd := StartRedis(t, "--requirepass", "pw")
	for _, send := range []string{
		Encode("SET", "k", "1", "2", "3", "4", "5", "6", "7", "8", "9"),
		"*2\r\n$4\r\nAUTH\r\n$16385\r\n",
		Encode("ECHO", strings.Repeat("e", 16384)) + Encode("QUIT"),
		Encode("GET", "k") + Encode("AUTH", "x") + Encode("AUTH", "default", "x") + Encode("QUIT"),
	} {
		got := bbRawExchange(t, s.Addr, send)
		want := bbRawExchange(t, rd.Addr, send)
		if got != want {
			t.Errorf("sending %.60q before AUTH:\n  redstream: %q\n  redis:     %q", send, got, want)
		}
	}
}

// TestDiffClientReply: CLIENT REPLY OFF/SKIP silence every reply,
// including the errors of commands refused before they run.
func TestDiffClientReply(t *testing.T) {
	s := StartServer(t)
	rd := StartRedis(t)
	for _, send := range []string{
		Encode("CLIENT", "REPLY", "OFF") + Encode("SET", "a", "1") + Encode("CLIENT", "REPLY", "ON") + Encode("GET", "a") + Encode("QUIT"),
		Encode("CLIENT", "REPLY", "OFF") + Encode("NOSUCH") + Encode("GET") + Encode("CLIENT", "REPLY", "ON") + Encode("QUIT"),
		Encode("CLIENT", "REPLY", "SKIP") + Encode("NOSUCH") + Encode("PING", "after") + Encode("QUIT"),
		Encode("CLIENT", "REPLY", "SKIP") + Encode("SET", "b", "2") + Encode("GET", "b") + Encode("QUIT"),
	} {
		got := bbRawExchange(t, s.Addr, send)
		want := bbRawExchange(t, rd.Addr, send)
		if got != want {
			t.Errorf("sending %q:\n  redstream: %q\n  redis:     %q", send, got, want)
		}
	}
}

// TestDiffClusterDisabled: without cluster-enabled, the cluster commands
// answer what a Redis without cluster support answers, KEYSLOT included.
func TestDiffClusterDisabled(t *testing.T) {
	_, _, p := bbStartPair(t)
	disabled := bbErr("ERR This instance has cluster support disabled")
	p.compare(t, []bbDiff{
		{cmd: "CLUSTER INFO"}, {cmd: "CLUSTER MYID"}, {cmd: "CLUSTER SLOTS"}, {cmd: "CLUSTER SHARDS"},
		{cmd: "CLUSTER NODES"}, {cmd: "CLUSTER KEYSLOT foo"}, {cmd: "CLUSTER COUNTKEYSINSLOT 1"},
		{cmd: "CLUSTER GETKEYSINSLOT 1 1"}, {cmd: "CLUSTER HELP"}, {cmd: "READONLY"}, {cmd: "READWRITE"},
		{cmd: "ASKING"}, {cmd: "CLUSTER"}, {cmd: "CLUSTER NOSUCH"}, {cmd: "CLUSTER KEYSLOT"},
		{cmd: "CLUSTER NODES x"}, {cmd: "READONLY x"},
		// redstream's own subcommands, refused the same way.
		{cmd: "CLUSTER BOOTSTRAP", redis8: disabled}, {cmd: "CLUSTER DELNODE x", redis8: disabled},
		{cmd: "CLUSTER ADDNODE x 127.0.0.1:1 127.0.0.1:2", redis8: disabled},
	})
}
