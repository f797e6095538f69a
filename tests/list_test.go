package tests

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// List commands, checked reply by reply. The tables below are written as
// Reply.String() renders the RESP2 reply; the RESP3 reply is the same with
// every null ($nil, *nil) rendered "_". TestListDiffTables (list_diff_test.go)
// runs the same tables against redis-server, so each expectation is Redis's
// own answer, except in the groups marked redis8 (behaviour that changed
// after 7.0, or commands 7.0 lacks), which come from the Redis 8 source and
// documentation.

// ltStep is one command and the reply it must get. cmd is split on spaces;
// argv, when set, is used instead (for empty or spaced arguments). A want of
// "-*" accepts any error (where Redis's exact text is not documented).
type ltStep struct {
	cmd  string
	want string
	argv []string
}

func (s ltStep) args() []string {
	if s.argv != nil {
		return s.argv
	}
	return strings.Fields(s.cmd)
}

// ltGroup is a sequence of steps run on an empty database.
type ltGroup struct {
	name   string
	redis8 bool // Redis 8 behaviour: not checked against redis-server 7.0
	steps  []ltStep
}

// ltWant3 turns a RESP2 expectation into the RESP3 one: nulls become "_".
func ltWant3(want string) string {
	want = strings.ReplaceAll(want, "$nil", "_")
	return strings.ReplaceAll(want, "*nil", "_")
}

// ltMatches reports whether reply r is what want describes in proto.
func ltMatches(r Reply, want string, proto int) bool {
	if want == "-*" {
		return r.Type == '-'
	}
	if proto == 3 {
		want = ltWant3(want)
	}
	return r.String() == want
}

// ltDial opens a raw connection to addr speaking RESP proto (2 or 3).
func ltDial(t testing.TB, addr string, proto int) *RawConn {
	t.Helper()
	rc := dialRaw(t, addr)
	if proto == 3 {
		if r := rc.Do("HELLO", "3"); r.Type != '%' {
			t.Fatalf("HELLO 3 = %s", r)
		}
	}
	return rc
}

// ltRunGroup empties the database and runs g's steps on rc.
func ltRunGroup(t *testing.T, rc *RawConn, proto int, g ltGroup, server string) {
	t.Helper()
	if r := rc.Do("FLUSHALL"); r.String() != `+"OK"` {
		t.Fatalf("FLUSHALL = %s", r)
	}
	for i, st := range g.steps {
		r := rc.Do(st.args()...)
		if !ltMatches(r, st.want, proto) {
			want := st.want
			if proto == 3 {
				want = ltWant3(want)
			}
			t.Errorf("%s RESP%d group %q step %d: %s\n got: %s\nwant: %s", server, proto, g.name, i, strings.Join(st.args(), " "), r, want)
		}
	}
}

const ltWrongType = `-"WRONGTYPE Operation against a key holding the wrong kind of value"`

func ltArity(cmd string) string {
	return `-"ERR wrong number of arguments for '` + cmd + `' command"`
}

var ltGroups = []ltGroup{
	{name: "push", steps: []ltStep{
		{cmd: "LPUSH k a b c", want: ":3"},
		{cmd: "LRANGE k 0 -1", want: `*3[$"c" $"b" $"a"]`},
		{cmd: "RPUSH k d e", want: ":5"},
		{cmd: "LPUSHX k z", want: ":6"},
		{cmd: "RPUSHX k y x", want: ":8"},
		{cmd: "LRANGE k 0 -1", want: `*8[$"z" $"c" $"b" $"a" $"d" $"e" $"y" $"x"]`},
		{cmd: "LPUSHX nokey a", want: ":0"},
		{cmd: "RPUSHX nokey a b", want: ":0"},
		{cmd: "EXISTS nokey", want: ":0"},
		{cmd: "TYPE k", want: `+"list"`},
		{cmd: "LLEN k", want: ":8"},
		{cmd: "RPUSH n 10 -3 007 3.5 9223372036854775807 -9223372036854775808 18446744073709551616", want: ":7"},
		{cmd: "LRANGE n 0 -1", want: `*7[$"10" $"-3" $"007" $"3.5" $"9223372036854775807" $"-9223372036854775808" $"18446744073709551616"]`},
		{cmd: "LINDEX n 2", want: `$"007"`},
		{argv: []string{"RPUSH", "e", "", "a b"}, want: ":2"},
		{cmd: "LRANGE e 0 -1", want: `*2[$"" $"a b"]`},
		{cmd: "lpush k lower", want: ":9"},
	}},
	{name: "pop", steps: []ltStep{
		{cmd: "RPUSH k a b c d e", want: ":5"},
		{cmd: "LPOP k", want: `$"a"`},
		{cmd: "RPOP k", want: `$"e"`},
		{cmd: "LPOP k 2", want: `*2[$"b" $"c"]`},
		{cmd: "LPOP k 0", want: `*0[]`},
		{cmd: "RPOP k 0", want: `*0[]`},
		{cmd: "LLEN k", want: ":1"},
		{cmd: "RPOP k 10", want: `*1[$"d"]`},
		{cmd: "EXISTS k", want: ":0"},
		{cmd: "LPOP k", want: "$nil"},
		{cmd: "RPOP k", want: "$nil"},
		{cmd: "LPOP k 1", want: "*nil"},
		{cmd: "RPOP k 3", want: "*nil"},
		{cmd: "LPOP k 0", want: "*nil"},
		{cmd: "LPOP k -1", want: `-"ERR value is out of range, must be positive"`},
		{cmd: "RPOP k abc", want: `-"ERR value is out of range, must be positive"`},
		{cmd: "LPOP k 1 2", want: ltArity("lpop")},
		{cmd: "RPUSH k 1 2 3", want: ":3"},
		{cmd: "RPOP k 2", want: `*2[$"3" $"2"]`},
		{cmd: "LPOP k -1", want: `-"ERR value is out of range, must be positive"`},
		{cmd: "LLEN k", want: ":1"},
	}},
	{name: "llen-lrange-lindex", steps: []ltStep{
		{cmd: "LLEN k", want: ":0"},
		{cmd: "RPUSH k a b c d e", want: ":5"},
		{cmd: "LLEN k", want: ":5"},
		{cmd: "LRANGE k 0 -1", want: `*5[$"a" $"b" $"c" $"d" $"e"]`},
		{cmd: "LRANGE k -2 -1", want: `*2[$"d" $"e"]`},
		{cmd: "LRANGE k -100 1", want: `*2[$"a" $"b"]`},
		{cmd: "LRANGE k 3 100", want: `*2[$"d" $"e"]`},
		{cmd: "LRANGE k 4 2", want: `*0[]`},
		{cmd: "LRANGE k 5 10", want: `*0[]`},
		{cmd: "LRANGE k -1 -5", want: `*0[]`},
		{cmd: "LRANGE k -100 -6", want: `*0[]`},
		{cmd: "LRANGE k 0 0", want: `*1[$"a"]`},
		{cmd: "LRANGE k -9223372036854775808 9223372036854775807", want: `*5[$"a" $"b" $"c" $"d" $"e"]`},
		{cmd: "LRANGE k 2147483648 -1", want: `*0[]`},
		{cmd: "LRANGE k a 1", want: `-"ERR value is not an integer or out of range"`},
		{cmd: "LRANGE k 0 1.5", want: `-"ERR value is not an integer or out of range"`},
		{cmd: "LRANGE nokey 0 -1", want: `*0[]`},
		{cmd: "LINDEX k 0", want: `$"a"`},
		{cmd: "LINDEX k -1", want: `$"e"`},
		{cmd: "LINDEX k -5", want: `$"a"`},
		{cmd: "LINDEX k 2", want: `$"c"`},
		{cmd: "LINDEX k 5", want: "$nil"},
		{cmd: "LINDEX k -6", want: "$nil"},
		{cmd: "LINDEX k 9223372036854775807", want: "$nil"},
		{cmd: "LINDEX k -9223372036854775808", want: "$nil"},
		{cmd: "LINDEX nokey 0", want: "$nil"},
		{cmd: "LINDEX k x", want: `-"ERR value is not an integer or out of range"`},
		// Redis looks the key up before it parses the index.
		{cmd: "LINDEX nokey x", want: "$nil"},
	}},
	{name: "lset", steps: []ltStep{
		{cmd: "LSET nokey 0 x", want: `-"ERR no such key"`},
		{cmd: "RPUSH k a b c", want: ":3"},
		{cmd: "LSET k 0 x", want: `+"OK"`},
		{cmd: "LSET k -1 z", want: `+"OK"`},
		{cmd: "LSET k 3 y", want: `-"ERR index out of range"`},
		{cmd: "LSET k -4 y", want: `-"ERR index out of range"`},
		{cmd: "LSET k 9223372036854775807 y", want: `-"ERR index out of range"`},
		{cmd: "LSET k abc y", want: `-"ERR value is not an integer or out of range"`},
		{cmd: "LRANGE k 0 -1", want: `*3[$"x" $"b" $"z"]`},
		{cmd: "LSET k 1 12345", want: `+"OK"`},
		{cmd: "LINDEX k 1", want: `$"12345"`},
		// Redis looks the key up before it parses the index.
		{cmd: "LSET nokey abc x", want: `-"ERR no such key"`},
	}},
	{name: "linsert", steps: []ltStep{
		{cmd: "LINSERT nokey BEFORE a x", want: ":0"},
		{cmd: "EXISTS nokey", want: ":0"},
		{cmd: "RPUSH k a b c", want: ":3"},
		{cmd: "LINSERT k BEFORE b x", want: ":4"},
		{cmd: "LINSERT k after c y", want: ":5"},
		{cmd: "LINSERT k before a w", want: ":6"},
		{cmd: "LINSERT k AFTER missing z", want: ":-1"},
		{cmd: "LINSERT k MIDDLE a z", want: `-"ERR syntax error"`},
		{cmd: "LINSERT nokey MIDDLE a z", want: `-"ERR syntax error"`},
		{cmd: "LRANGE k 0 -1", want: `*6[$"w" $"a" $"x" $"b" $"c" $"y"]`},
		{cmd: "RPUSH d a b a", want: ":3"},
		{cmd: "LINSERT d AFTER a m", want: ":4"},
		{cmd: "LRANGE d 0 -1", want: `*4[$"a" $"m" $"b" $"a"]`},
		{cmd: "LINSERT d BEFORE 1 2", want: ":-1"},
	}},
	{name: "lrem", steps: []ltStep{
		{cmd: "RPUSH k a b a c a b a", want: ":7"},
		{cmd: "LREM k 2 a", want: ":2"},
		{cmd: "LRANGE k 0 -1", want: `*5[$"b" $"c" $"a" $"b" $"a"]`},
		{cmd: "LREM k -1 a", want: ":1"},
		{cmd: "LRANGE k 0 -1", want: `*4[$"b" $"c" $"a" $"b"]`},
		{cmd: "LREM k 0 b", want: ":2"},
		{cmd: "LRANGE k 0 -1", want: `*2[$"c" $"a"]`},
		{cmd: "LREM k 0 zzz", want: ":0"},
		{cmd: "LREM k x a", want: `-"ERR value is not an integer or out of range"`},
		{cmd: "LREM nokey 1 a", want: ":0"},
		{cmd: "LREM k 100 c", want: ":1"},
		{cmd: "LREM k -100 a", want: ":1"},
		{cmd: "EXISTS k", want: ":0"},
		{cmd: "RPUSH n 1 01 1 1.0", want: ":4"},
		{cmd: "LREM n 0 1", want: ":2"},
		{cmd: "LRANGE n 0 -1", want: `*2[$"01" $"1.0"]`},
	}},
	{name: "ltrim", steps: []ltStep{
		{cmd: "RPUSH k a b c d e f", want: ":6"},
		{cmd: "LTRIM k 1 -2", want: `+"OK"`},
		{cmd: "LRANGE k 0 -1", want: `*4[$"b" $"c" $"d" $"e"]`},
		{cmd: "LTRIM k -100 100", want: `+"OK"`},
		{cmd: "LLEN k", want: ":4"},
		{cmd: "LTRIM k -1 -1", want: `+"OK"`},
		{cmd: "LRANGE k 0 -1", want: `*1[$"e"]`},
		{cmd: "LTRIM nokey 0 1", want: `+"OK"`},
		{cmd: "EXISTS nokey", want: ":0"},
		{cmd: "LTRIM k 2 1", want: `+"OK"`},
		{cmd: "EXISTS k", want: ":0"},
		{cmd: "RPUSH k a b c", want: ":3"},
		{cmd: "LTRIM k 5 10", want: `+"OK"`},
		{cmd: "EXISTS k", want: ":0"},
		{cmd: "RPUSH k a b c", want: ":3"},
		{cmd: "LTRIM k a 1", want: `-"ERR value is not an integer or out of range"`},
		{cmd: "LTRIM k 0 -9223372036854775808", want: `+"OK"`},
		{cmd: "EXISTS k", want: ":0"},
	}},
	{name: "lpos", steps: []ltStep{
		{cmd: "RPUSH k a b c a b c a", want: ":7"},
		{cmd: "LPOS k a", want: ":0"},
		{cmd: "LPOS k c", want: ":2"},
		{cmd: "LPOS k z", want: "$nil"},
		{cmd: "LPOS k a RANK 2", want: ":3"},
		{cmd: "LPOS k a RANK -1", want: ":6"},
		{cmd: "LPOS k a RANK -2", want: ":3"},
		{cmd: "LPOS k a RANK 4", want: "$nil"},
		{cmd: "LPOS k a RANK -4", want: "$nil"},
		{cmd: "LPOS k a COUNT 0", want: `*3[:0 :3 :6]`},
		{cmd: "LPOS k a COUNT 2", want: `*2[:0 :3]`},
		{cmd: "LPOS k a COUNT 1", want: `*1[:0]`},
		{cmd: "LPOS k a COUNT 0 RANK -1", want: `*3[:6 :3 :0]`},
		{cmd: "LPOS k a RANK -2 COUNT 0", want: `*2[:3 :0]`},
		{cmd: "LPOS k a RANK 2 COUNT 0", want: `*2[:3 :6]`},
		{cmd: "LPOS k a COUNT 0 MAXLEN 4", want: `*2[:0 :3]`},
		{cmd: "LPOS k b MAXLEN 1", want: "$nil"},
		{cmd: "LPOS k a MAXLEN 1", want: ":0"},
		{cmd: "LPOS k a RANK -1 MAXLEN 2", want: ":6"},
		{cmd: "LPOS k c RANK -1 MAXLEN 1", want: "$nil"},
		{cmd: "LPOS k c RANK -2 MAXLEN 2", want: "$nil"},
		{cmd: "LPOS k z COUNT 0", want: `*0[]`},
		{cmd: "LPOS k a rank 2 count 5 maxlen 0", want: `*2[:3 :6]`},
		{cmd: "LPOS nokey a", want: "$nil"},
		{cmd: "LPOS nokey a COUNT 1", want: `*0[]`},
		{cmd: "LPOS k a RANK 0", want: `-"ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"`},
		{cmd: "LPOS k a COUNT -1", want: `-"ERR COUNT can't be negative"`},
		{cmd: "LPOS k a MAXLEN -1", want: `-"ERR MAXLEN can't be negative"`},
		{cmd: "LPOS k a RANK x", want: `-"ERR value is not an integer or out of range"`},
		// COUNT and MAXLEN have their own message for any bad value.
		{cmd: "LPOS k a COUNT x", want: `-"ERR COUNT can't be negative"`},
		{cmd: "LPOS k a MAXLEN x", want: `-"ERR MAXLEN can't be negative"`},
		{cmd: "LPOS k a RANK", want: `-"ERR syntax error"`},
		{cmd: "LPOS k a FOO 1", want: `-"ERR syntax error"`},
		{cmd: "LPOS nokey a RANK 0", want: `-"ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"`},
	}},
	{name: "lmove-rpoplpush", steps: []ltStep{
		{cmd: "RPUSH src a b c", want: ":3"},
		{cmd: "LMOVE src dst LEFT RIGHT", want: `$"a"`},
		{cmd: "LMOVE src dst RIGHT LEFT", want: `$"c"`},
		{cmd: "LRANGE src 0 -1", want: `*1[$"b"]`},
		{cmd: "LRANGE dst 0 -1", want: `*2[$"c" $"a"]`},
		{cmd: "LMOVE src dst left left", want: `$"b"`},
		{cmd: "EXISTS src", want: ":0"},
		{cmd: "LMOVE src dst LEFT RIGHT", want: "$nil"},
		{cmd: "RPOPLPUSH src dst", want: "$nil"},
		{cmd: "LMOVE dst src UP LEFT", want: `-"ERR syntax error"`},
		{cmd: "LMOVE dst src LEFT DOWN", want: `-"ERR syntax error"`},
		{cmd: "LRANGE dst 0 -1", want: `*3[$"b" $"c" $"a"]`},
		// Same key: a rotation.
		{cmd: "RPOPLPUSH dst dst", want: `$"a"`},
		{cmd: "LRANGE dst 0 -1", want: `*3[$"a" $"b" $"c"]`},
		{cmd: "LMOVE dst dst LEFT RIGHT", want: `$"a"`},
		{cmd: "LRANGE dst 0 -1", want: `*3[$"b" $"c" $"a"]`},
		{cmd: "LMOVE dst dst RIGHT RIGHT", want: `$"a"`},
		{cmd: "LMOVE dst dst LEFT LEFT", want: `$"b"`},
		{cmd: "LRANGE dst 0 -1", want: `*3[$"b" $"c" $"a"]`},
		// A wrong-type destination leaves the source intact.
		{cmd: "SET str v", want: `+"OK"`},
		{cmd: "RPOPLPUSH dst str", want: ltWrongType},
		{cmd: "LMOVE dst str LEFT LEFT", want: ltWrongType},
		{cmd: "LRANGE dst 0 -1", want: `*3[$"b" $"c" $"a"]`},
		{cmd: "GET str", want: `$"v"`},
		{cmd: "RPOPLPUSH str dst", want: ltWrongType},
		// A missing source answers nil before the destination is looked at.
		{cmd: "RPOPLPUSH nokey str", want: "$nil"},
		{cmd: "LMOVE nokey str LEFT LEFT", want: "$nil"},
		{cmd: "RPUSH one x", want: ":1"},
		{cmd: "RPOPLPUSH one one", want: `$"x"`},
		{cmd: "LRANGE one 0 -1", want: `*1[$"x"]`},
	}},
	{name: "lmpop", steps: []ltStep{
		{cmd: "LMPOP 2 a b LEFT", want: "*nil"},
		{cmd: "RPUSH b 1 2 3 4 5", want: ":5"},
		{cmd: "LMPOP 2 a b LEFT", want: `*2[$"b" *1[$"1"]]`},
		{cmd: "LMPOP 2 a b RIGHT COUNT 2", want: `*2[$"b" *2[$"5" $"4"]]`},
		{cmd: "LMPOP 1 b left count 10", want: `*2[$"b" *2[$"2" $"3"]]`},
		{cmd: "EXISTS b", want: ":0"},
		{cmd: "LMPOP 0 a LEFT", want: `-"ERR numkeys should be greater than 0"`},
		{cmd: "LMPOP -1 a LEFT", want: `-"ERR numkeys should be greater than 0"`},
		{cmd: "LMPOP x a LEFT", want: `-"ERR numkeys should be greater than 0"`},
		{cmd: "LMPOP 3 a b LEFT", want: `-"ERR syntax error"`},
		{cmd: "LMPOP 1 a MIDDLE", want: `-"ERR syntax error"`},
		{cmd: "LMPOP 1 a LEFT COUNT 0", want: `-"ERR count should be greater than 0"`},
		{cmd: "LMPOP 1 a LEFT COUNT -2", want: `-"ERR count should be greater than 0"`},
		{cmd: "LMPOP 1 a LEFT COUNT x", want: `-"ERR count should be greater than 0"`},
		{cmd: "LMPOP 1 a LEFT COUNT 1 COUNT 2", want: `-"ERR syntax error"`},
		{cmd: "LMPOP 1 a LEFT COUNT", want: `-"ERR syntax error"`},
		{cmd: "LMPOP 1 a LEFT FOO", want: `-"ERR syntax error"`},
		{cmd: "SET s v", want: `+"OK"`},
		{cmd: "LMPOP 2 a s LEFT", want: ltWrongType},
		{cmd: "RPUSH a x", want: ":1"},
		{cmd: "LMPOP 2 a s LEFT", want: `*2[$"a" *1[$"x"]]`},
		{cmd: "RPUSH c 1 2", want: ":2"},
		{cmd: "LMPOP 3 nokey nokey2 c RIGHT COUNT 1", want: `*2[$"c" *1[$"2"]]`},
	}},
	{name: "emptied-lists-are-deleted", steps: []ltStep{
		{cmd: "RPUSH k a", want: ":1"},
		{cmd: "LPOP k", want: `$"a"`},
		{cmd: "EXISTS k", want: ":0"},
		{cmd: "TYPE k", want: `+"none"`},
		{cmd: "RPUSH k a b", want: ":2"},
		{cmd: "RPOP k 5", want: `*2[$"b" $"a"]`},
		{cmd: "EXISTS k", want: ":0"},
		{cmd: "RPUSH k a a", want: ":2"},
		{cmd: "LREM k 0 a", want: ":2"},
		{cmd: "EXISTS k", want: ":0"},
		{cmd: "RPUSH k a", want: ":1"},
		{cmd: "LTRIM k 1 -1", want: `+"OK"`},
		{cmd: "TYPE k", want: `+"none"`},
		{cmd: "RPUSH k a", want: ":1"},
		{cmd: "LMOVE k d LEFT LEFT", want: `$"a"`},
		{cmd: "EXISTS k", want: ":0"},
		{cmd: "TYPE d", want: `+"list"`},
		{cmd: "RPUSH k a", want: ":1"},
		{cmd: "RPOPLPUSH k d", want: `$"a"`},
		{cmd: "EXISTS k", want: ":0"},
		{cmd: "RPUSH k a", want: ":1"},
		{cmd: "LMPOP 1 k LEFT COUNT 3", want: `*2[$"k" *1[$"a"]]`},
		{cmd: "EXISTS k", want: ":0"},
		{cmd: "RPUSH k a", want: ":1"},
		{cmd: "BLPOP k 0", want: `*2[$"k" $"a"]`},
		{cmd: "EXISTS k", want: ":0"},
		{cmd: "RPUSH k a", want: ":1"},
		{cmd: "BRPOP nokey k 0", want: `*2[$"k" $"a"]`},
		{cmd: "EXISTS k", want: ":0"},
		{cmd: "RPUSH k a", want: ":1"},
		{cmd: "BLMOVE k d RIGHT LEFT 0", want: `$"a"`},
		{cmd: "EXISTS k", want: ":0"},
		{cmd: "RPUSH k a", want: ":1"},
		{cmd: "BRPOPLPUSH k d 0", want: `$"a"`},
		{cmd: "EXISTS k", want: ":0"},
		{cmd: "RPUSH k a", want: ":1"},
		{cmd: "BLMPOP 0 1 k RIGHT", want: `*2[$"k" *1[$"a"]]`},
		{cmd: "EXISTS k", want: ":0"},
		{cmd: "LRANGE d 0 -1", want: `*4[$"a" $"a" $"a" $"a"]`},
		{cmd: "LLEN k", want: ":0"},
	}},
	{name: "blocking-with-data", steps: []ltStep{
		{cmd: "RPUSH k a b c", want: ":3"},
		{cmd: "BLPOP k 0", want: `*2[$"k" $"a"]`},
		{cmd: "BRPOP k 0.1", want: `*2[$"k" $"c"]`},
		{cmd: "RPUSH k x y", want: ":3"},
		{cmd: "BLMOVE k d LEFT RIGHT 0", want: `$"b"`},
		{cmd: "BRPOPLPUSH k d 0", want: `$"y"`},
		{cmd: "LRANGE d 0 -1", want: `*2[$"y" $"b"]`},
		{cmd: "BLMPOP 0 2 nokey d LEFT COUNT 5", want: `*2[$"d" *2[$"y" $"b"]]`},
		{cmd: "BLMPOP 0.01 1 nokey LEFT", want: "*nil"},
		{cmd: "BLPOP nokey 0.01", want: "*nil"},
		{cmd: "BRPOP nokey 0.01", want: "*nil"},
		// A timed-out BLMOVE answers a null *array* in RESP2, as every
		// list wait does in Redis (replyToBlockedClientTimedOut).
		{cmd: "BLMOVE nokey d LEFT RIGHT 0.01", want: "*nil"},
		{cmd: "BRPOPLPUSH nokey d 0.01", want: "*nil"},
	}},
	{name: "blocking-in-multi", steps: []ltStep{
		// Inside MULTI a blocking command cannot block: it times out at once.
		{cmd: "MULTI", want: `+"OK"`},
		{cmd: "BLPOP k 0", want: `+"QUEUED"`},
		{cmd: "BRPOP k1 k2 0", want: `+"QUEUED"`},
		{cmd: "BLMOVE k d LEFT LEFT 0", want: `+"QUEUED"`},
		{cmd: "BRPOPLPUSH k d 0", want: `+"QUEUED"`},
		{cmd: "BLMPOP 0 1 k LEFT COUNT 2", want: `+"QUEUED"`},
		{cmd: "RPUSH k a b", want: `+"QUEUED"`},
		{cmd: "BLPOP k 0", want: `+"QUEUED"`},
		{cmd: "BLMOVE k d LEFT LEFT 0", want: `+"QUEUED"`},
		{cmd: "BLPOP k 0", want: `+"QUEUED"`},
		{cmd: "EXEC", want: `*9[*nil *nil $nil $nil *nil :2 *2[$"k" $"a"] $"b" *nil]`},
		{cmd: "EXISTS k", want: ":0"},
		{cmd: "LRANGE d 0 -1", want: `*1[$"b"]`},
	}},
	{name: "wrongtype", steps: []ltStep{
		{cmd: "SET s v", want: `+"OK"`},
		{cmd: "RPUSH l a", want: ":1"},
		{cmd: "LPUSH s a", want: ltWrongType},
		{cmd: "RPUSH s a", want: ltWrongType},
		{cmd: "LPUSHX s a", want: ltWrongType},
		{cmd: "RPUSHX s a", want: ltWrongType},
		{cmd: "LPOP s", want: ltWrongType},
		{cmd: "RPOP s", want: ltWrongType},
		{cmd: "LPOP s 2", want: ltWrongType},
		{cmd: "RPOP s 0", want: ltWrongType},
		{cmd: "LLEN s", want: ltWrongType},
		{cmd: "LRANGE s 0 -1", want: ltWrongType},
		{cmd: "LINDEX s 0", want: ltWrongType},
		{cmd: "LINDEX s x", want: ltWrongType},
		{cmd: "LSET s 0 a", want: ltWrongType},
		{cmd: "LSET s x a", want: ltWrongType},
		{cmd: "LINSERT s BEFORE a b", want: ltWrongType},
		{cmd: "LREM s 0 a", want: ltWrongType},
		{cmd: "LTRIM s 0 1", want: ltWrongType},
		{cmd: "LPOS s a", want: ltWrongType},
		{cmd: "LPOS s a COUNT 0", want: ltWrongType},
		{cmd: "LMOVE s l LEFT LEFT", want: ltWrongType},
		{cmd: "LMOVE l s LEFT LEFT", want: ltWrongType},
		{cmd: "RPOPLPUSH s l", want: ltWrongType},
		{cmd: "RPOPLPUSH l s", want: ltWrongType},
		{cmd: "LMPOP 1 s LEFT", want: ltWrongType},
		{cmd: "BLPOP s 0", want: ltWrongType},
		{cmd: "BRPOP nokey s 0", want: ltWrongType},
		{cmd: "BLMOVE s l LEFT LEFT 0", want: ltWrongType},
		{cmd: "BLMOVE l s LEFT LEFT 0", want: ltWrongType},
		{cmd: "BRPOPLPUSH s l 0", want: ltWrongType},
		{cmd: "BLMPOP 0 1 s LEFT", want: ltWrongType},
		{cmd: "GET s", want: `$"v"`},
		{cmd: "LRANGE l 0 -1", want: `*1[$"a"]`},
	}},
	{name: "arity", steps: []ltStep{
		{cmd: "LPUSH k", want: ltArity("lpush")},
		{cmd: "RPUSH k", want: ltArity("rpush")},
		{cmd: "LPUSHX k", want: ltArity("lpushx")},
		{cmd: "RPUSHX k", want: ltArity("rpushx")},
		{cmd: "LPOP", want: ltArity("lpop")},
		{cmd: "RPOP", want: ltArity("rpop")},
		{cmd: "RPOP k 1 2", want: ltArity("rpop")},
		{cmd: "LLEN", want: ltArity("llen")},
		{cmd: "LLEN k x", want: ltArity("llen")},
		{cmd: "LRANGE k 0", want: ltArity("lrange")},
		{cmd: "LRANGE k 0 1 2", want: ltArity("lrange")},
		{cmd: "LINDEX k", want: ltArity("lindex")},
		{cmd: "LSET k 0", want: ltArity("lset")},
		{cmd: "LINSERT k BEFORE a", want: ltArity("linsert")},
		{cmd: "LREM k 0", want: ltArity("lrem")},
		{cmd: "LTRIM k 0", want: ltArity("ltrim")},
		{cmd: "LPOS k", want: ltArity("lpos")},
		{cmd: "LMOVE a b LEFT", want: ltArity("lmove")},
		{cmd: "LMOVE a b LEFT LEFT x", want: ltArity("lmove")},
		{cmd: "RPOPLPUSH a", want: ltArity("rpoplpush")},
		{cmd: "LMPOP 1 a", want: ltArity("lmpop")},
		{cmd: "BLPOP k", want: ltArity("blpop")},
		{cmd: "BRPOP k", want: ltArity("brpop")},
		{cmd: "BLMOVE a b LEFT RIGHT", want: ltArity("blmove")},
		{cmd: "BRPOPLPUSH a b", want: ltArity("brpoplpush")},
		{cmd: "BLMPOP 0 1 k", want: ltArity("blmpop")},
		{cmd: "lpush", want: ltArity("lpush")},
	}},
	{name: "blocking-argument-errors", steps: []ltStep{
		{cmd: "BLPOP k -1", want: `-"ERR timeout is negative"`},
		{cmd: "BRPOP k -0.5", want: `-"ERR timeout is negative"`},
		{cmd: "BLPOP k abc", want: `-"ERR timeout is not a float or out of range"`},
		{cmd: "BLPOP k 1x", want: `-"ERR timeout is not a float or out of range"`},
		{cmd: "BLMOVE a b LEFT RIGHT -1", want: `-"ERR timeout is negative"`},
		{cmd: "BLMOVE a b LEFT RIGHT x", want: `-"ERR timeout is not a float or out of range"`},
		{cmd: "BLMOVE a b UP RIGHT 0", want: `-"ERR syntax error"`},
		{cmd: "BRPOPLPUSH a b -1", want: `-"ERR timeout is negative"`},
		{cmd: "BLMPOP -1 1 k LEFT", want: `-"ERR timeout is negative"`},
		{cmd: "BLMPOP x 1 k LEFT", want: `-"ERR timeout is not a float or out of range"`},
		// BLMPOP parses numkeys, the direction and COUNT before the timeout.
		{cmd: "BLMPOP -1 0 k LEFT", want: `-"ERR numkeys should be greater than 0"`},
		{cmd: "BLMPOP x 1 k UP", want: `-"ERR syntax error"`},
		{cmd: "BLMPOP -1 1 k LEFT COUNT 0", want: `-"ERR count should be greater than 0"`},
		{cmd: "BLMPOP 0 1 k LEFT COUNT 0", want: `-"ERR count should be greater than 0"`},
		{cmd: "BLMPOP 0 0 k LEFT", want: `-"ERR numkeys should be greater than 0"`},
		{cmd: "BLMPOP 0 2 k LEFT", want: `-"ERR syntax error"`},
	}},

	// Redis 8 behaviour that redis-server 7.0 lacks.
	{name: "lmovem", redis8: true, steps: []ltStep{
		// The examples of the LMOVEM documentation.
		{cmd: "RPUSH mylist 1 2 3 4", want: ":4"},
		{cmd: "LMOVEM mylist myotherlist LEFT LEFT COUNT 2 OBO", want: `*2[$"2" $"1"]`},
		{cmd: "LRANGE mylist 0 -1", want: `*2[$"3" $"4"]`},
		{cmd: "LRANGE myotherlist 0 -1", want: `*2[$"2" $"1"]`},
		{cmd: "LMOVEM mylist myotherlist LEFT LEFT EXACTLY 5 BULK", want: "$nil"},
		{cmd: "LRANGE mylist 0 -1", want: `*2[$"3" $"4"]`},
		{cmd: "RPUSH somelist a b c", want: ":3"},
		{cmd: "LMOVEM somelist somelist LEFT LEFT EXACTLY 2 OBO", want: `*2[$"b" $"a"]`},
		{cmd: "LRANGE somelist 0 -1", want: `*3[$"b" $"a" $"c"]`},
		// BULK to the same end of the same list changes nothing.
		{cmd: "LMOVEM somelist somelist LEFT LEFT COUNT 2 BULK", want: `*2[$"b" $"a"]`},
		{cmd: "LMOVEM somelist somelist RIGHT RIGHT EXACTLY 2 BULK", want: `*2[$"a" $"c"]`},
		{cmd: "LRANGE somelist 0 -1", want: `*3[$"b" $"a" $"c"]`},
		// Without the how-many block: one element, as an array.
		{cmd: "LMOVEM somelist other LEFT RIGHT", want: `*1[$"b"]`},
		{cmd: "LRANGE other 0 -1", want: `*1[$"b"]`},
		// A missing source: an empty array, or nil with EXACTLY.
		{cmd: "LMOVEM nokey other LEFT RIGHT", want: `*0[]`},
		{cmd: "LMOVEM nokey other LEFT RIGHT COUNT 3 OBO", want: `*0[]`},
		{cmd: "LMOVEM nokey other LEFT RIGHT EXACTLY 1 OBO", want: "$nil"},
		{cmd: "EXISTS nokey", want: ":0"},
		{cmd: "LRANGE other 0 -1", want: `*1[$"b"]`},
	}},
	{name: "lmovem-orderings", redis8: true, steps: []ltStep{
		// From Redis's list-4.tcl: replies are in destination order.
		{cmd: "RPUSH s 1 2 3 4 5", want: ":5"},
		{cmd: "LMOVEM s d LEFT LEFT COUNT 3 OBO", want: `*3[$"3" $"2" $"1"]`},
		{cmd: "LRANGE d 0 -1", want: `*3[$"3" $"2" $"1"]`},
		{cmd: "LRANGE s 0 -1", want: `*2[$"4" $"5"]`},
		{cmd: "DEL s d", want: ":2"},
		{cmd: "RPUSH s 1 2 3 4 5", want: ":5"},
		{cmd: "LMOVEM s d LEFT LEFT COUNT 3 BULK", want: `*3[$"1" $"2" $"3"]`},
		{cmd: "LRANGE d 0 -1", want: `*3[$"1" $"2" $"3"]`},
		{cmd: "DEL s d", want: ":2"},
		{cmd: "RPUSH s 1 2 3 4 5", want: ":5"},
		{cmd: "LMOVEM s d RIGHT RIGHT COUNT 3 OBO", want: `*3[$"5" $"4" $"3"]`},
		{cmd: "LRANGE d 0 -1", want: `*3[$"5" $"4" $"3"]`},
		{cmd: "LRANGE s 0 -1", want: `*2[$"1" $"2"]`},
		{cmd: "DEL s d", want: ":2"},
		{cmd: "RPUSH s 1 2 3 4 5", want: ":5"},
		{cmd: "LMOVEM s d RIGHT RIGHT COUNT 3 BULK", want: `*3[$"3" $"4" $"5"]`},
		{cmd: "LRANGE d 0 -1", want: `*3[$"3" $"4" $"5"]`},
		{cmd: "DEL s d", want: ":2"},
		{cmd: "RPUSH s 1 2 3 4 5", want: ":5"},
		{cmd: "LMOVEM s d LEFT RIGHT COUNT 3 OBO", want: `*3[$"1" $"2" $"3"]`},
		{cmd: "LMOVEM s d RIGHT LEFT COUNT 3 OBO", want: `*2[$"4" $"5"]`},
		{cmd: "LRANGE d 0 -1", want: `*5[$"4" $"5" $"1" $"2" $"3"]`},
		{cmd: "EXISTS s", want: ":0"},
		{cmd: "RPUSH s 1 2 3 4 5", want: ":5"},
		{cmd: "RPUSH e x y", want: ":2"},
		{cmd: "LMOVEM s e RIGHT LEFT COUNT 2 BULK", want: `*2[$"4" $"5"]`},
		{cmd: "LMOVEM s e LEFT RIGHT EXACTLY 2 BULK", want: `*2[$"1" $"2"]`},
		{cmd: "LMOVEM s e LEFT LEFT EXACTLY 2 OBO", want: "$nil"},
		{cmd: "LRANGE e 0 -1", want: `*6[$"4" $"5" $"x" $"y" $"1" $"2"]`},
		{cmd: "LMOVEM s e LEFT LEFT EXACTLY 1 OBO", want: `*1[$"3"]`},
		{cmd: "EXISTS s", want: ":0"},
		{cmd: "RPUSH s a b c", want: ":3"},
		{cmd: "LMOVEM s e LEFT RIGHT COUNT 100 BULK", want: `*3[$"a" $"b" $"c"]`},
		{cmd: "EXISTS s", want: ":0"},
		{cmd: "LLEN e", want: ":10"},
		{cmd: "lmovem e e left right count 2 obo", want: `*2[$"3" $"4"]`},
		{cmd: "LRANGE e 0 -1", want: `*10[$"5" $"x" $"y" $"1" $"2" $"a" $"b" $"c" $"3" $"4"]`},
	}},
	{name: "lmovem-errors", redis8: true, steps: []ltStep{
		{cmd: "RPUSH l a b", want: ":2"},
		{cmd: "SET s v", want: `+"OK"`},
		{cmd: "LMOVEM s l LEFT LEFT", want: ltWrongType},
		{cmd: "LMOVEM l s LEFT LEFT", want: ltWrongType},
		{cmd: "LMOVEM l s LEFT LEFT COUNT 2 BULK", want: ltWrongType},
		{cmd: "LRANGE l 0 -1", want: `*2[$"a" $"b"]`},
		{cmd: "LMOVEM l d UP LEFT", want: `-"ERR syntax error"`},
		{cmd: "LMOVEM l d LEFT DOWN", want: `-"ERR syntax error"`},
		{cmd: "LMOVEM l d LEFT LEFT COUNT 2", want: "-*"},
		{cmd: "LMOVEM l d LEFT LEFT COUNT 2 SIDEWAYS", want: "-*"},
		{cmd: "LMOVEM l d LEFT LEFT MANY 2 OBO", want: "-*"},
		{cmd: "LMOVEM l d LEFT LEFT COUNT 0 OBO", want: "-*"},
		{cmd: "LMOVEM l d LEFT LEFT EXACTLY -1 OBO", want: "-*"},
		{cmd: "LMOVEM l d LEFT LEFT COUNT x BULK", want: "-*"},
		{cmd: "LMOVEM l d LEFT LEFT COUNT 1 OBO extra", want: "-*"},
		{cmd: "LMOVEM l d LEFT", want: ltArity("lmovem")},
		{cmd: "BLMOVEM l d LEFT LEFT", want: ltArity("blmovem")},
		{cmd: "BLMOVEM l d LEFT LEFT -1", want: `-"ERR timeout is negative"`},
		{cmd: "BLMOVEM l d LEFT LEFT x", want: `-"ERR timeout is not a float or out of range"`},
		{cmd: "BLMOVEM s l LEFT LEFT 0", want: ltWrongType},
		{cmd: "LRANGE l 0 -1", want: `*2[$"a" $"b"]`},
		{cmd: "EXISTS d", want: ":0"},
		{cmd: "BLMOVEM l d LEFT RIGHT 0 EXACTLY 2 BULK", want: `*2[$"a" $"b"]`},
		{cmd: "EXISTS l", want: ":0"},
		{cmd: "RPUSH l c", want: ":1"},
		{cmd: "BLMOVEM l d LEFT RIGHT 0", want: `*1[$"c"]`},
		{cmd: "BLMOVEM l d LEFT RIGHT 0.01", want: "*nil"},
		{cmd: "BLMOVEM d d LEFT RIGHT 0.01 EXACTLY 4 OBO", want: "*nil"},
		{cmd: "LRANGE d 0 -1", want: `*3[$"a" $"b" $"c"]`},
	}},
	{name: "range-checks-added-after-7.0", redis8: true, steps: []ltStep{
		{cmd: "RPUSH k a b a", want: ":3"},
		{cmd: "LREM k -9223372036854775808 a", want: `-"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"`},
		{cmd: "LPOS k a RANK -9223372036854775808", want: `-"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"`},
		{cmd: "LRANGE k 0 -1", want: `*3[$"a" $"b" $"a"]`},
		{cmd: "RPUSH k2 a b a", want: ":3"},
		{cmd: "LREM k2 -9223372036854775807 a", want: ":2"},
		{cmd: "LRANGE k2 0 -1", want: `*1[$"b"]`},
		// getTimeoutFromObjectOrReply: a timeout past LLONG_MAX ms is out of
		// range (7.0 answered "timeout is negative" after an overflow).
		{cmd: "BLPOP k inf", want: `-"ERR timeout is out of range"`},
		{cmd: "BLPOP k 9.3e15", want: `-"ERR timeout is out of range"`},
		// Redis parses timeouts as long doubles: 1e400 is a number, too large.
		{cmd: "BLPOP k 1e400", want: `-"ERR timeout is out of range"`},
		{cmd: "BLPOP k nan", want: `-"ERR timeout is not a float or out of range"`},
	}},
	{name: "wrongtype-lmovem", redis8: true, steps: []ltStep{
		{cmd: "SET s v", want: `+"OK"`},
		{cmd: "LMOVEM s d LEFT LEFT EXACTLY 1 OBO", want: ltWrongType},
		{cmd: "BLMOVEM s d LEFT LEFT 0 COUNT 1 BULK", want: ltWrongType},
		{cmd: "GET s", want: `$"v"`},
	}},
}

// TestListCommandsRaw runs every table over raw RESP2 and RESP3
// connections, so reply types (null bulk vs null array vs RESP3 null) are
// checked exactly.
func TestListCommandsRaw(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	for _, proto := range []int{2, 3} {
		rc := ltDial(t, s.Addr, proto)
		for _, g := range ltGroups {
			t.Run(fmt.Sprintf("resp%d/%s", proto, g.name), func(t *testing.T) {
				ltRunGroup(t, rc, proto, g, "redstream")
			})
		}
	}
}

// TestListEncoding checks OBJECT ENCODING as Redis 7.2+ reports it: a small
// list is one listpack, it becomes a quicklist when it passes
// list-max-listpack-size, and goes back only once it is a single node at
// or under half the limit.
func TestListEncoding(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	rc := ltDial(t, s.Addr, 2)
	steps := []ltStep{
		{cmd: "CONFIG SET list-max-listpack-size 4", want: `+"OK"`},
		{cmd: "RPUSH k a b c d", want: ":4"},
		{cmd: "OBJECT ENCODING k", want: `$"listpack"`},
		{cmd: "RPUSH k e", want: ":5"},
		{cmd: "OBJECT ENCODING k", want: `$"quicklist"`},
		{cmd: "RPUSH k f g h i j", want: ":10"},
		{cmd: "OBJECT ENCODING k", want: `$"quicklist"`},
		{cmd: "LTRIM k 0 3", want: `+"OK"`},
		// One node of 4: above half the limit, so still a quicklist.
		{cmd: "OBJECT ENCODING k", want: `$"quicklist"`},
		{cmd: "RPOP k", want: `$"d"`},
		{cmd: "OBJECT ENCODING k", want: `$"quicklist"`},
		{cmd: "RPOP k", want: `$"c"`},
		{cmd: "OBJECT ENCODING k", want: `$"listpack"`},
		{cmd: "LRANGE k 0 -1", want: `*2[$"a" $"b"]`},
		{cmd: "LPUSH n 1 2 3 4 5", want: ":5"},
		{cmd: "OBJECT ENCODING n", want: `$"quicklist"`},
		{cmd: "LPUSH m 1 2 3 4", want: ":4"},
		{cmd: "OBJECT ENCODING m", want: `$"listpack"`},
		{cmd: "LINSERT m BEFORE 1 x", want: ":5"},
		{cmd: "OBJECT ENCODING m", want: `$"quicklist"`},
		{cmd: "OBJECT ENCODING nokey", want: "$nil"},
	}
	if r := rc.Do("FLUSHALL"); r.Type == '-' {
		t.Fatalf("FLUSHALL = %s", r)
	}
	for i, st := range steps {
		if r := rc.Do(st.args()...); !ltMatches(r, st.want, 2) {
			t.Errorf("step %d: %s\n got: %s\nwant: %s", i, st.cmd, r, st.want)
		}
	}

	// A value larger than the node size limit (8 KB at the default -2)
	// can never live in a listpack-encoded list.
	if r := rc.Do("CONFIG", "SET", "list-max-listpack-size", "-2"); r.String() != `+"OK"` {
		t.Fatalf("CONFIG SET = %s", r)
	}
	big := strings.Repeat("x", 100_000)
	for _, st := range []struct {
		args []string
		want string
	}{
		{[]string{"RPUSH", "big", big}, ":1"},
		{[]string{"OBJECT", "ENCODING", "big"}, `$"quicklist"`},
		{[]string{"RPUSH", "small", "a"}, ":1"},
		{[]string{"OBJECT", "ENCODING", "small"}, `$"listpack"`},
		{[]string{"LSET", "small", "0", big}, `+"OK"`},
		{[]string{"OBJECT", "ENCODING", "small"}, `$"quicklist"`},
	} {
		if r := rc.Do(st.args...); r.String() != st.want {
			t.Errorf("%s %s ...: got %s, want %s", st.args[0], st.args[1], r, st.want)
		}
	}
}

// TestListGoRedis drives the list commands through go-redis, in RESP3 and
// RESP2, checking the typed results a Go program sees.
func TestListGoRedis(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	for _, c := range []*redis.Client{s.Client(t), s.Client2(t)} {
		proto := c.Options().Protocol
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			ctx := ctx(t)
			if err := c.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			check := func(what string, got, want any, err error) {
				t.Helper()
				if err != nil {
					t.Errorf("%s: error %v, want %v", what, err, want)
					return
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", what, got, want)
				}
			}
			isNil := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, redis.Nil) {
					t.Errorf("%s: error %v, want redis.Nil", what, err)
				}
			}
			isErr := func(what string, err error, want string) {
				t.Helper()
				if err == nil || err.Error() != want {
					t.Errorf("%s: error %v, want %q", what, err, want)
				}
			}

			n, err := c.RPush(ctx, "k", "a", "b", "c").Result()
			check("RPUSH k a b c", n, int64(3), err)
			n, err = c.LPush(ctx, "k", "z").Result()
			check("LPUSH k z", n, int64(4), err)
			n, err = c.LPushX(ctx, "nokey", "z").Result()
			check("LPUSHX nokey z", n, int64(0), err)
			n, err = c.RPushX(ctx, "k", "d").Result()
			check("RPUSHX k d", n, int64(5), err)
			vals, err := c.LRange(ctx, "k", 0, -1).Result()
			check("LRANGE k 0 -1", vals, []string{"z", "a", "b", "c", "d"}, err)
			v, err := c.LPop(ctx, "k").Result()
			check("LPOP k", v, "z", err)
			vals, err = c.RPopCount(ctx, "k", 2).Result()
			check("RPOP k 2", vals, []string{"d", "c"}, err)
			_, err = c.LPop(ctx, "nokey").Result()
			isNil("LPOP nokey", err)
			_, err = c.LPopCount(ctx, "nokey", 2).Result()
			isNil("LPOP nokey 2", err)
			n, err = c.LLen(ctx, "k").Result()
			check("LLEN k", n, int64(2), err)
			v, err = c.LIndex(ctx, "k", -1).Result()
			check("LINDEX k -1", v, "b", err)
			_, err = c.LIndex(ctx, "k", 5).Result()
			isNil("LINDEX k 5", err)
			isErr("LSET nokey 0 x", c.LSet(ctx, "nokey", 0, "x").Err(), "ERR no such key")
			isErr("LSET k 9 x", c.LSet(ctx, "k", 9, "x").Err(), "ERR index out of range")
			st := c.LSet(ctx, "k", 0, "x")
			check("LSET k 0 x", st.Val(), "OK", st.Err())
			n, err = c.LInsertBefore(ctx, "k", "b", "m").Result()
			check("LINSERT k BEFORE b m", n, int64(3), err)
			n, err = c.LInsertAfter(ctx, "k", "nope", "m").Result()
			check("LINSERT k AFTER nope m", n, int64(-1), err)
			n, err = c.LInsert(ctx, "nokey", "BEFORE", "a", "b").Result()
			check("LINSERT nokey BEFORE a b", n, int64(0), err)
			n, err = c.RPush(ctx, "k", "m", "x", "m").Result()
			check("RPUSH k m x m", n, int64(6), err)
			n, err = c.LPos(ctx, "k", "m", redis.LPosArgs{Rank: -1}).Result()
			check("LPOS k m RANK -1", n, int64(5), err)
			_, err = c.LPos(ctx, "k", "zz", redis.LPosArgs{}).Result()
			isNil("LPOS k zz", err)
			idx, err := c.LPosCount(ctx, "k", "m", 0, redis.LPosArgs{}).Result()
			check("LPOS k m COUNT 0", idx, []int64{1, 3, 5}, err)
			n, err = c.LRem(ctx, "k", -2, "m").Result()
			check("LREM k -2 m", n, int64(2), err)
			vals, err = c.LRange(ctx, "k", 0, -1).Result()
			check("LRANGE k 0 -1", vals, []string{"x", "m", "b", "x"}, err)
			check("LTRIM k 1 -1", c.LTrim(ctx, "k", 1, -1).Val(), "OK", nil)
			v, err = c.LMove(ctx, "k", "d", "LEFT", "RIGHT").Result()
			check("LMOVE k d LEFT RIGHT", v, "m", err)
			v, err = c.RPopLPush(ctx, "k", "d").Result()
			check("RPOPLPUSH k d", v, "x", err)
			_, err = c.LMove(ctx, "nokey", "d", "LEFT", "RIGHT").Result()
			isNil("LMOVE nokey", err)
			key, vals, err := c.LMPop(ctx, "right", 5, "nokey", "d").Result()
			check("LMPOP 2 nokey d RIGHT COUNT 5", []any{key, vals}, []any{"d", []string{"m", "x"}}, err)
			_, _, err = c.LMPop(ctx, "left", 1, "nokey").Result()
			isNil("LMPOP 1 nokey LEFT", err)
			n, err = c.Exists(ctx, "d").Result()
			check("EXISTS d", n, int64(0), err)
			res, err := c.Do(ctx, "LMOVEM", "k", "d", "LEFT", "LEFT", "COUNT", "2", "OBO").Result()
			check("LMOVEM k d LEFT LEFT COUNT 2 OBO", res, []any{"b"}, err)
			_, err = c.Do(ctx, "LMOVEM", "k", "d", "LEFT", "LEFT", "EXACTLY", "2", "OBO").Result()
			isNil("LMOVEM nokey d LEFT LEFT EXACTLY 2 OBO", err)

			// Blocking commands with data, and with a short timeout.
			c.RPush(ctx, "q", "1", "2", "3")
			kv, err := c.BLPop(ctx, time.Second, "nokey", "q").Result()
			check("BLPOP nokey q 1", kv, []string{"q", "1"}, err)
			kv, err = c.BRPop(ctx, time.Second, "q").Result()
			check("BRPOP q 1", kv, []string{"q", "3"}, err)
			v, err = c.BLMove(ctx, "q", "q2", "LEFT", "LEFT", time.Second).Result()
			check("BLMOVE q q2 LEFT LEFT 1", v, "2", err)
			v, err = c.BRPopLPush(ctx, "q2", "q", time.Second).Result()
			check("BRPOPLPUSH q2 q 1", v, "2", err)
			key, vals, err = c.BLMPop(ctx, time.Second, "left", 2, "q").Result()
			check("BLMPOP 1 1 q LEFT COUNT 2", []any{key, vals}, []any{"q", []string{"2"}}, err)
			// go-redis rounds sub-second timeouts up to 1 s; send 0.05 as is.
			for _, args := range [][]any{
				{"BLPOP", "q", "0.05"},
				{"BRPOP", "q", "0.05"},
				{"BLMOVE", "q", "q2", "LEFT", "LEFT", "0.05"},
				{"BRPOPLPUSH", "q", "q2", "0.05"},
				{"BLMPOP", "0.05", "1", "q", "LEFT"},
				{"BLMOVEM", "q", "q2", "LEFT", "LEFT", "0.05", "EXACTLY", "2", "BULK"},
			} {
				isNil(fmt.Sprint(args...), c.Do(ctx, args...).Err())
			}

			c.Set(ctx, "str", "v", 0)
			isErr("LPUSH str", c.LPush(ctx, "str", "x").Err(), "WRONGTYPE Operation against a key holding the wrong kind of value")
			isErr("BLPOP str", c.BLPop(ctx, time.Second, "str").Err(), "WRONGTYPE Operation against a key holding the wrong kind of value")
			isErr("LPUSH arity", c.Do(ctx, "LPUSH", "k").Err(), "ERR wrong number of arguments for 'lpush' command")
		})
	}
}

// TestListRueidis drives the list commands through rueidis's builder.
func TestListRueidis(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	c := s.Rueidis(t)
	ctx := ctx(t)
	do := func(cmd rueidis.Completed) rueidis.RedisResult { return c.Do(ctx, cmd) }
	wantInt := func(what string, r rueidis.RedisResult, want int64) {
		t.Helper()
		if n, err := r.AsInt64(); err != nil || n != want {
			t.Errorf("%s = %d, %v; want %d", what, n, err, want)
		}
	}
	wantStr := func(what string, r rueidis.RedisResult, want string) {
		t.Helper()
		if v, err := r.ToString(); err != nil || v != want {
			t.Errorf("%s = %q, %v; want %q", what, v, err, want)
		}
	}
	wantStrs := func(what string, r rueidis.RedisResult, want []string) {
		t.Helper()
		if v, err := r.AsStrSlice(); err != nil || !slices.Equal(v, want) {
			t.Errorf("%s = %q, %v; want %q", what, v, err, want)
		}
	}
	wantNil := func(what string, r rueidis.RedisResult) {
		t.Helper()
		if err := r.Error(); !rueidis.IsRedisNil(err) {
			t.Errorf("%s: error %v, want a Redis nil", what, err)
		}
	}
	// rueidis drops the "ERR " prefix from error texts.
	wantErr := func(what string, r rueidis.RedisResult, want string) {
		t.Helper()
		if err := r.Error(); err == nil || strings.TrimPrefix(err.Error(), "ERR ") != strings.TrimPrefix(want, "ERR ") {
			t.Errorf("%s: error %v, want %q", what, err, want)
		}
	}

	wantInt("RPUSH k a b c d", do(c.B().Rpush().Key("k").Element("a", "b", "c", "d").Build()), 4)
	wantInt("LPUSH k 0", do(c.B().Lpush().Key("k").Element("0").Build()), 5)
	wantInt("LPUSHX nokey a", do(c.B().Lpushx().Key("nokey").Element("a").Build()), 0)
	wantStrs("LRANGE k 0 -1", do(c.B().Lrange().Key("k").Start(0).Stop(-1).Build()), []string{"0", "a", "b", "c", "d"})
	wantStr("LPOP k", do(c.B().Lpop().Key("k").Build()), "0")
	wantStrs("RPOP k 2", do(c.B().Rpop().Key("k").Count(2).Build()), []string{"d", "c"})
	wantStrs("LPOP k 0", do(c.B().Lpop().Key("k").Count(0).Build()), []string{})
	wantNil("LPOP nokey", do(c.B().Lpop().Key("nokey").Build()))
	wantNil("RPOP nokey 3", do(c.B().Rpop().Key("nokey").Count(3).Build()))
	wantInt("LLEN k", do(c.B().Llen().Key("k").Build()), 2)
	wantStr("LINDEX k 1", do(c.B().Lindex().Key("k").Index(1).Build()), "b")
	wantNil("LINDEX k 2", do(c.B().Lindex().Key("k").Index(2).Build()))
	wantErr("LSET k 2 x", do(c.B().Lset().Key("k").Index(2).Element("x").Build()), "ERR index out of range")
	wantErr("LSET nokey 0 x", do(c.B().Lset().Key("nokey").Index(0).Element("x").Build()), "ERR no such key")
	wantInt("LINSERT k AFTER a a2", do(c.B().Linsert().Key("k").After().Pivot("a").Element("a2").Build()), 3)
	wantInt("LPOS k b", do(c.B().Lpos().Key("k").Element("b").Build()), 2)
	wantNil("LPOS k zz", do(c.B().Lpos().Key("k").Element("zz").Build()))
	if v, err := do(c.B().Lpos().Key("k").Element("a").Rank(-1).Count(0).Build()).AsIntSlice(); err != nil || !slices.Equal(v, []int64{0}) {
		t.Errorf("LPOS k a RANK -1 COUNT 0 = %v, %v", v, err)
	}
	wantInt("LREM k 0 a2", do(c.B().Lrem().Key("k").Count(0).Element("a2").Build()), 1)
	wantStr("LTRIM k 0 -1", do(c.B().Ltrim().Key("k").Start(0).Stop(-1).Build()), "OK")
	wantStr("LMOVE k d RIGHT LEFT", do(c.B().Lmove().Source("k").Destination("d").Right().Left().Build()), "b")
	wantStr("RPOPLPUSH k d", do(c.B().Rpoplpush().Source("k").Destination("d").Build()), "a")
	wantNil("RPOPLPUSH k d (gone)", do(c.B().Rpoplpush().Source("k").Destination("d").Build()))
	if kv, err := do(c.B().Lmpop().Numkeys(2).Key("k", "d").Left().Count(5).Build()).AsLMPop(); err != nil || kv.Key != "d" || !slices.Equal(kv.Values, []string{"a", "b"}) {
		t.Errorf("LMPOP 2 k d LEFT COUNT 5 = %+v, %v", kv, err)
	}
	wantNil("LMPOP 1 d LEFT", do(c.B().Lmpop().Numkeys(1).Key("d").Left().Build()))
	wantInt("RPUSH m 1 2 3", do(c.B().Rpush().Key("m").Element("1", "2", "3").Build()), 3)
	wantStrs("LMOVEM m m2 RIGHT LEFT COUNT 2 BULK", do(c.B().Arbitrary("LMOVEM").Keys("m", "m2").Args("RIGHT", "LEFT", "COUNT", "2", "BULK").Build()), []string{"2", "3"})
	wantNil("LMOVEM m m2 EXACTLY 2", do(c.B().Arbitrary("LMOVEM").Keys("m", "m2").Args("RIGHT", "LEFT", "EXACTLY", "2", "BULK").Build()))

	// Blocking forms.
	wantStrs("BLPOP m 1", do(c.B().Blpop().Key("m").Timeout(1).Build()), []string{"m", "1"})
	wantNil("BLPOP m 0.05", do(c.B().Blpop().Key("m").Timeout(0.05).Build()))
	wantStr("BLMOVE m2 m LEFT RIGHT 1", do(c.B().Blmove().Source("m2").Destination("m").Left().Right().Timeout(1).Build()), "2")
	wantNil("BLMOVE nokey m 0.05", do(c.B().Blmove().Source("nokey").Destination("m").Left().Right().Timeout(0.05).Build()))
	wantStrs("BRPOP m2 m 1", do(c.B().Brpop().Key("m2", "m").Timeout(1).Build()), []string{"m2", "3"})

	do(c.B().Set().Key("str").Value("v").Build())
	wantErr("RPUSH str", do(c.B().Rpush().Key("str").Element("x").Build()), "WRONGTYPE Operation against a key holding the wrong kind of value")
	wantErr("LRANGE str", do(c.B().Lrange().Key("str").Start(0).Stop(-1).Build()), "WRONGTYPE Operation against a key holding the wrong kind of value")
}

// TestListLargeElements moves 100 KB values through every kind of list
// operation.
func TestListLargeElements(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	c := s.Client(t)
	ctx := ctx(t)
	rng := rand.New(rand.NewSource(1))
	mk := func(tag byte, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(rng.Intn(26))
		}
		b[0] = tag
		return string(b)
	}
	b1, b2, b3 := mk('1', 100_000), mk('2', 100_001), mk('3', 250_000)
	model := []string{"s1", b1, "s2", b2, "7"}
	if err := c.RPush(ctx, "k", "s1", b1, "s2", b2, "7").Err(); err != nil {
		t.Fatal(err)
	}
	verify := func(step string) {
		t.Helper()
		got, err := c.LRange(ctx, "k", 0, -1).Result()
		if err != nil {
			t.Fatalf("%s: LRANGE: %v", step, err)
		}
		if !slices.Equal(got, model) {
			t.Fatalf("%s: LRANGE differs from model (len %d vs %d)", step, len(got), len(model))
		}
		for i := range model {
			if v, err := c.LIndex(ctx, "k", int64(i)).Result(); err != nil || v != model[i] {
				t.Fatalf("%s: LINDEX %d: len %d, %v; want len %d", step, i, len(v), err, len(model[i]))
			}
		}
	}
	verify("RPUSH")
	if err := c.LInsertBefore(ctx, "k", "s2", b3).Err(); err != nil {
		t.Fatal(err)
	}
	model = slices.Insert(model, 2, b3)
	verify("LINSERT big")
	if err := c.LSet(ctx, "k", 0, b3).Err(); err != nil {
		t.Fatal(err)
	}
	model[0] = b3
	verify("LSET big")
	if err := c.LSet(ctx, "k", 1, "tiny").Err(); err != nil {
		t.Fatal(err)
	}
	model[1] = "tiny"
	verify("LSET small over big")
	if n, err := c.LRem(ctx, "k", 0, b3).Result(); err != nil || n != 2 {
		t.Fatalf("LREM k 0 big = %d, %v; want 2", n, err)
	}
	model = slices.DeleteFunc(model, func(v string) bool { return v == b3 })
	verify("LREM big")
	if n, err := c.LPos(ctx, "k", b2, redis.LPosArgs{}).Result(); err != nil || n != 2 {
		t.Fatalf("LPOS k big = %d, %v; want 2", n, err)
	}
	if v, err := c.LMove(ctx, "k", "d", "RIGHT", "LEFT").Result(); err != nil || v != "7" {
		t.Fatalf("LMOVE = %q, %v", v, err)
	}
	model = model[:len(model)-1]
	if v, err := c.RPopLPush(ctx, "k", "d").Result(); err != nil || v != b2 {
		t.Fatalf("RPOPLPUSH = len %d, %v; want the 100001-byte value", len(v), err)
	}
	model = model[:len(model)-1]
	verify("moves")
	if got, err := c.LRange(ctx, "d", 0, -1).Result(); err != nil || !slices.Equal(got, []string{b2, "7"}) {
		t.Fatalf("LRANGE d: %d elements, %v", len(got), err)
	}
	if got, err := c.LPopCount(ctx, "k", 10).Result(); err != nil || !slices.Equal(got, model) {
		t.Fatalf("LPOP k 10: %d elements, %v", len(got), err)
	}
	if n := c.Exists(ctx, "k").Val(); n != 0 {
		t.Fatalf("EXISTS k after popping everything = %d", n)
	}
}

// TestListLongList builds a 100,000-element list and checks many
// operations against a Go slice.
func TestListLongList(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	c := s.Client(t)
	ctx := ctx(t)
	rng := rand.New(rand.NewSource(42))
	const n = 100_000
	model := make([]string, 0, n)
	value := func(i int) string {
		switch i % 4 {
		case 0:
			return strconv.Itoa(i) // integer-encoded in a listpack
		case 1:
			return "v" + strconv.Itoa(i)
		case 2:
			return strconv.Itoa(-i * 7919)
		}
		return strings.Repeat("w", i%61) + strconv.Itoa(i)
	}
	pipe := c.Pipeline()
	for start := 0; start < n; start += 1000 {
		batch := make([]any, 0, 1000)
		for i := start; i < start+1000; i++ {
			batch = append(batch, value(i))
			model = append(model, value(i))
		}
		pipe.RPush(ctx, "big", batch...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(step string) {
		t.Helper()
		if got := c.LLen(ctx, "big").Val(); got != int64(len(model)) {
			t.Fatalf("%s: LLEN = %d, want %d", step, got, len(model))
		}
		p := c.Pipeline()
		idx := make([]int, 50)
		cmds := make([]*redis.StringCmd, len(idx))
		for i := range idx {
			idx[i] = rng.Intn(len(model))
			if i%2 == 1 {
				cmds[i] = p.LIndex(ctx, "big", int64(idx[i]-len(model))) // negative form
			} else {
				cmds[i] = p.LIndex(ctx, "big", int64(idx[i]))
			}
		}
		start := rng.Intn(len(model))
		stop := start + rng.Intn(300)
		window := p.LRange(ctx, "big", int64(start), int64(stop))
		tailN := 1 + rng.Intn(200)
		tail := p.LRange(ctx, "big", -int64(tailN), -1)
		if _, err := p.Exec(ctx); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		for i, cmd := range cmds {
			if cmd.Val() != model[idx[i]] {
				t.Fatalf("%s: LINDEX %d = %q, want %q", step, idx[i], cmd.Val(), model[idx[i]])
			}
		}
		if want := model[start:min(stop+1, len(model))]; !slices.Equal(window.Val(), want) {
			t.Fatalf("%s: LRANGE big %d %d: %d elements differ from the model's %d", step, start, stop, len(window.Val()), len(want))
		}
		if got, want := tail.Val(), model[max(0, len(model)-tailN):]; !slices.Equal(got, want) {
			t.Fatalf("%s: LRANGE big -%d -1: %d elements differ from the model's last %d", step, tailN, len(got), len(want))
		}
	}
	check("build")
	for round := range 60 {
		var step string
		switch round % 6 {
		case 0:
			i := rng.Intn(len(model))
			v := "set" + strconv.Itoa(round)
			if err := c.LSet(ctx, "big", int64(i), v).Err(); err != nil {
				t.Fatal(err)
			}
			model[i] = v
			step = fmt.Sprintf("LSET %d", i)
		case 1:
			i := rng.Intn(len(model))
			pivot := model[i]
			at := slices.Index(model, pivot)
			v := "ins" + strconv.Itoa(round)
			if got := c.LInsertAfter(ctx, "big", pivot, v).Val(); got != int64(len(model)+1) {
				t.Fatalf("LINSERT AFTER %q = %d, want %d", pivot, got, len(model)+1)
			}
			model = slices.Insert(model, at+1, v)
			step = "LINSERT " + pivot
		case 2:
			cnt := rng.Intn(50)
			got := c.LPopCount(ctx, "big", cnt).Val()
			if !slices.Equal(got, model[:cnt]) {
				t.Fatalf("LPOP big %d differs from the model", cnt)
			}
			model = model[cnt:]
			step = "LPOP"
		case 3:
			v := "r" + strconv.Itoa(round)
			vals := []any{v, v, "x", v}
			c.LPush(ctx, "big", vals...)
			model = append([]string{v, "x", v, v}, model...)
			if got := c.LRem(ctx, "big", -2, v).Val(); got != 2 {
				t.Fatalf("LREM big -2 %s = %d", v, got)
			}
			model = append([]string{v, "x"}, model[4:]...)
			step = "LPUSH+LREM"
		case 4:
			from, to := rng.Intn(100), len(model)-1-rng.Intn(100)
			if err := c.LTrim(ctx, "big", int64(from), int64(to)).Err(); err != nil {
				t.Fatal(err)
			}
			model = model[from : to+1]
			step = "LTRIM"
		case 5:
			v := c.LMove(ctx, "big", "big", "RIGHT", "LEFT").Val()
			if v != model[len(model)-1] {
				t.Fatalf("LMOVE big big RIGHT LEFT = %q, want %q", v, model[len(model)-1])
			}
			model = append([]string{v}, model[:len(model)-1]...)
			step = "LMOVE rotate"
		}
		check(step)
	}
	got, err := c.LRange(ctx, "big", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, model) {
		for i := range min(len(got), len(model)) {
			if got[i] != model[i] {
				t.Fatalf("LRANGE big 0 -1: first difference at %d: %q, want %q (len %d vs %d)", i, got[i], model[i], len(got), len(model))
			}
		}
		t.Fatalf("LRANGE big 0 -1: len %d, want %d", len(got), len(model))
	}
}

// ltInfoInt reads an integer field of INFO over rc.
func ltInfoInt(t testing.TB, rc *RawConn, section, field string) int {
	t.Helper()
	r := rc.Do("INFO", section)
	if r.Type == '-' {
		t.Fatalf("INFO %s = %s", section, r)
	}
	for _, line := range strings.Split(r.Str, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("INFO %s: %s", field, line)
			}
			return n
		}
	}
	t.Fatalf("INFO %s has no %s field:\n%s", section, field, r.Str)
	return 0
}

// ltWaitFor polls cond until it holds, failing the test after 10 s with
// what() in the message.
func ltWaitFor(t testing.TB, what func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 10s waiting for %s", what())
		}
		<-tick.C
	}
}

// ltWaitBlocked waits until INFO reports exactly n blocked clients.
func ltWaitBlocked(t testing.TB, admin *RawConn, n int) {
	t.Helper()
	last := -1
	ltWaitFor(t, func() string { return fmt.Sprintf("blocked_clients:%d (last seen %d)", n, last) }, func() bool {
		last = ltInfoInt(t, admin, "clients", "blocked_clients")
		return last == n
	})
}

// ltClientID returns the CLIENT ID of rc's connection.
func ltClientID(t testing.TB, rc *RawConn) int64 {
	t.Helper()
	r := rc.Do("CLIENT", "ID")
	if r.Type != ':' {
		t.Fatalf("CLIENT ID = %s", r)
	}
	return r.Int
}
