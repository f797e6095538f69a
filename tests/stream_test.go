package tests

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Stream commands, checked reply by reply. Like the list tables, steps are
// written as Reply.String() renders the RESP2 reply; the RESP3 reply is the
// same with nulls rendered "_", unless a step gives want3 (XREAD and XINFO
// answer maps in RESP3). TestStreamDiffTables (stream_diff_test.go) runs
// the groups not marked redis8 against redis-server 7.0, so those
// expectations are Redis's own; the redis8 groups (options and fields that
// came after 7.0: IDMP, KEEPREF/DELREF/ACKED, XREAD +, MAXCOUNT, MAXSIZE,
// XCFGSET, the XINFO IDMP fields) follow the Redis 8 documentation and
// test suite.

type stStep struct {
	cmd   string
	want  string
	want3 string   // the RESP3 reply when it is not want with "_" nulls
	argv  []string // instead of cmd, for empty or spaced arguments
}

func (s stStep) args() []string {
	if s.argv != nil {
		return s.argv
	}
	return strings.Fields(s.cmd)
}

type stGroup struct {
	name   string
	redis8 bool
	steps  []stStep
}

// stWant returns what a step expects in proto.
func stWant(st stStep, proto int) string {
	if proto == 3 && st.want3 != "" {
		return st.want3
	}
	if proto == 3 {
		return strings.NewReplacer("$nil", "_", "*nil", "_").Replace(st.want)
	}
	return st.want
}

func stMatches(r Reply, want string) bool {
	if want == "-*" {
		return r.Type == '-'
	}
	return r.String() == want
}

// stDial opens a raw connection speaking RESP proto.
func stDial(t testing.TB, addr string, proto int) *RawConn {
	t.Helper()
	rc := dialRaw(t, addr)
	if proto == 3 {
		if r := rc.Do("HELLO", "3"); r.Type != '%' {
			t.Fatalf("HELLO 3 = %s", r)
		}
	}
	return rc
}

// stRunGroup empties the database, restores default node limits and runs
// the group's steps.
func stRunGroup(t *testing.T, rc *RawConn, proto int, g stGroup, server string) {
	t.Helper()
	for _, c := range [][]string{{"FLUSHALL"}, {"CONFIG", "SET", "stream-node-max-entries", "100"}, {"CONFIG", "SET", "stream-node-max-bytes", "4096"}} {
		if r := rc.Do(c...); r.String() != `+"OK"` {
			t.Fatalf("%v = %s", c, r)
		}
	}
	for i, st := range g.steps {
		r := rc.Do(st.args()...)
		if want := stWant(st, proto); !stMatches(r, want) {
			t.Errorf("%s RESP%d group %q step %d: %s\n got: %s\nwant: %s", server, proto, g.name, i, strings.Join(st.args(), " "), r, want)
		}
	}
}

const (
	stWrongType = `-"WRONGTYPE Operation against a key holding the wrong kind of value"`
	stBadID     = `-"ERR Invalid stream ID specified as stream command argument"`
	stTop       = `-"ERR The ID specified in XADD is equal or smaller than the target stream top item"`
	stSyntax    = `-"ERR syntax error"`
	stNotInt    = `-"ERR value is not an integer or out of range"`
	stNoKey     = `-"ERR no such key"`
)

func stArity(cmd string) string { return `-"ERR wrong number of arguments for '` + cmd + `' command"` }

// stEntry renders one entry: [id, [field, value, ...]].
func stEntry(id string, fv ...string) string {
	parts := make([]string, len(fv))
	for i, s := range fv {
		parts[i] = strconv.Quote(s)
		parts[i] = "$" + parts[i]
	}
	return fmt.Sprintf(`*2[$"%s" *%d[%s]]`, id, len(fv), strings.Join(parts, " "))
}

// stEntries renders an array of entries.
func stEntries(es ...string) string { return fmt.Sprintf("*%d[%s]", len(es), strings.Join(es, " ")) }

// stRead renders XREAD's reply for key/entries pairs: RESP2 and RESP3.
func stRead(pairs ...string) (string, string) {
	var two, three []string
	for i := 0; i < len(pairs); i += 2 {
		two = append(two, fmt.Sprintf(`*2[$"%s" %s]`, pairs[i], pairs[i+1]))
		three = append(three, fmt.Sprintf(`$"%s" %s`, pairs[i], pairs[i+1]))
	}
	n := len(pairs) / 2
	return fmt.Sprintf("*%d[%s]", n, strings.Join(two, " ")), fmt.Sprintf("%%%d[%s]", n, strings.Join(three, " "))
}

func stReadStep(cmd string, pairs ...string) stStep {
	two, three := stRead(pairs...)
	return stStep{cmd: cmd, want: two, want3: three}
}

var stGroups = []stGroup{
	{name: "xadd", steps: []stStep{
		{cmd: "XADD s 1-1 a 1", want: `$"1-1"`},
		{cmd: "XADD s 1-2 b 2 c 3", want: `$"1-2"`},
		{cmd: "XADD s 1-2 d 4", want: stTop},
		{cmd: "XADD s 1-1 d 4", want: stTop},
		{cmd: "XADD s 0-5 d 4", want: stTop},
		{cmd: "XLEN s", want: ":2"},
		{cmd: "XRANGE s - +", want: stEntries(stEntry("1-1", "a", "1"), stEntry("1-2", "b", "2", "c", "3"))},
		{cmd: "TYPE s", want: `+"stream"`},
		{cmd: "OBJECT ENCODING s", want: `$"stream"`},
		{cmd: "XADD s 1-* e 5", want: `$"1-3"`},
		{cmd: "XADD s 2-* e 5", want: `$"2-0"`},
		{cmd: "XADD s 5 e 5", want: `$"5-0"`},
		{cmd: "XADD s 4-* e 5", want: stTop},
		{cmd: "XADD s 5-* e 5", want: `$"5-1"`},
		{cmd: "XADD s + a b", want: stBadID},
		{cmd: "XADD s - a b", want: stBadID},
		{cmd: "XADD s 0x9 a b", want: stBadID},
		{cmd: "XADD s 9-x a b", want: stBadID},
		{cmd: "XADD s 9- a b", want: stBadID},
		{cmd: "XADD s 007-+9 a b", want: `$"7-9"`}, // strtoull's leniency, as in Redis
		{cmd: "XADD s 9 a", want: stArity("xadd")},
		{cmd: "XADD s 9 a b c", want: stArity("xadd")},
		{cmd: "XADD s 9", want: stArity("xadd")},
		{cmd: "XADD s NOMKSTREAM MAXLEN 5", want: stArity("xadd")},
		{cmd: "XADD s foo 9 a b", want: stBadID},
		{cmd: "XADD z 0-0 a b", want: `-"ERR The ID specified in XADD must be greater than 0-0"`},
		{cmd: "XADD z 0 a b", want: `-"ERR The ID specified in XADD must be greater than 0-0"`},
		{cmd: "EXISTS z", want: ":0"},
		{cmd: "XADD z 0-* a b", want: `$"0-1"`},
		{cmd: "XADD nk NOMKSTREAM 1-1 a b", want: "$nil"},
		{cmd: "EXISTS nk", want: ":0"},
		{cmd: "XADD s NOMKSTREAM nomkstream 8-0 a b", want: `$"8-0"`},
		{cmd: "XLEN s", want: ":8"},
		{argv: []string{"XADD", "e", "1-1", "", ""}, want: `$"1-1"`},
		{cmd: "XRANGE e - +", want: stEntries(stEntry("1-1", "", ""))},
		{cmd: "SET str v", want: `+"OK"`},
		{cmd: "XADD str 1-1 a b", want: stWrongType},
		{cmd: "XADD str NOMKSTREAM 1-1 a b", want: stWrongType},
		{cmd: "XLEN str", want: stWrongType},
		{cmd: "XLEN nokey", want: ":0"},
		{cmd: "xadd s 9-0 Upper Case", want: `$"9-0"`},
	}},
	{name: "xadd edge IDs", steps: []stStep{
		{cmd: "XADD x 18446744073709551615-18446744073709551615 a b", want: `$"18446744073709551615-18446744073709551615"`},
		{cmd: "XADD x * c d", want: `-"ERR The stream has exhausted the last possible ID, unable to add more items"`},
		{cmd: "XADD x 18446744073709551615-* c d", want: `-"ERR The stream has exhausted the last possible ID, unable to add more items"`},
		{cmd: "XADD y 1-18446744073709551615 a b", want: `$"1-18446744073709551615"`},
		{cmd: "XADD y 18446744073709551616-0 a b", want: stBadID},
		{cmd: "XADD y 2577343934890-18446744073709551615 f v", want: `$"2577343934890-18446744073709551615"`},
		{cmd: "XADD y 2577343934891-* f v", want: `$"2577343934891-0"`},
	}},
	{name: "xadd trim", steps: []stStep{
		{cmd: "XADD t 1 f v", want: `$"1-0"`},
		{cmd: "XADD t 2 f v", want: `$"2-0"`},
		{cmd: "XADD t 3 f v", want: `$"3-0"`},
		{cmd: "XADD t MAXLEN 2 4 f v", want: `$"4-0"`},
		{cmd: "XRANGE t - +", want: stEntries(stEntry("3-0", "f", "v"), stEntry("4-0", "f", "v"))},
		{cmd: "XADD t MAXLEN = 1 5 f v", want: `$"5-0"`},
		{cmd: "XLEN t", want: ":1"},
		{cmd: "XADD t MINID 6 6 f v", want: `$"6-0"`},
		{cmd: "XRANGE t - +", want: stEntries(stEntry("6-0", "f", "v"))},
		{cmd: "XADD t MINID = 7 7 f v", want: `$"7-0"`},
		{cmd: "XADD t MAXLEN ~ 0 8 f v", want: `$"8-0"`},
		{cmd: "XLEN t", want: ":0"}, // 7-0 and 8-0 were the only live entries of one node
		{cmd: "XADD t MAXLEN 0 9 f v", want: `$"9-0"`},
		{cmd: "XLEN t", want: ":0"},
		{cmd: "EXISTS t", want: ":1"},
		{cmd: "XADD n MAXLEN 0 1 a b", want: `$"1-0"`},
		{cmd: "XLEN n", want: ":0"},
		{cmd: "XADD t MAXLEN -1 10 f v", want: `-"ERR The MAXLEN argument must be >= 0."`},
		{cmd: "XADD t MAXLEN x 10 f v", want: stNotInt},
		{cmd: "XADD t MINID x 10 f v", want: stBadID},
		{cmd: "XADD t MINID - 10 f v", want: stBadID},
		{cmd: "XADD t MAXLEN 1 MINID 1 10 f v", want: `-"ERR syntax error, MAXLEN and MINID options at the same time are not compatible"`},
		{cmd: "XADD t MAXLEN 1 LIMIT 5 10 f v", want: `-"ERR syntax error, LIMIT cannot be used without the special ~ option"`},
		{cmd: "XADD t LIMIT 5 10 f v", want: `-"ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"`},
		{cmd: "XADD t LIMIT 0 10 f v", want: `-"ERR syntax error, LIMIT cannot be used without the special ~ option"`},
		{cmd: "XADD t MAXLEN ~ 1 LIMIT -1 11 f v", want: `-"ERR The LIMIT argument must be >= 0."`},
		{cmd: "XADD t MAXLEN ~ 1 LIMIT x 11 f v", want: stNotInt},
		{cmd: "XADD t maxlen ~ 1 limit 0 11 f v", want: `$"11-0"`},
		{cmd: "CONFIG SET stream-node-max-entries 2", want: `+"OK"`},
		{cmd: "XADD u 1 x v", want: `$"1-0"`},
		{cmd: "XADD u 2 x v", want: `$"2-0"`},
		{cmd: "XADD u 3 x v", want: `$"3-0"`},
		{cmd: "XTRIM u MAXLEN ~ 0 LIMIT 1", want: ":0"},
		{cmd: "XTRIM u MAXLEN ~ 0 LIMIT 2", want: ":2"},
		{cmd: "XRANGE u - +", want: stEntries(stEntry("3-0", "x", "v"))},
		{cmd: "XADD u 4 x v", want: `$"4-0"`},
		{cmd: "XADD u 5 x v", want: `$"5-0"`},
		{cmd: "XTRIM u MINID ~ 5", want: ":2"},
		{cmd: "XRANGE u - +", want: stEntries(stEntry("5-0", "x", "v"))},
	}},
	{name: "xtrim", steps: []stStep{
		{cmd: "XADD t 1-0 f v", want: `$"1-0"`},
		{cmd: "XADD t 2-0 f v", want: `$"2-0"`},
		{cmd: "XADD t 3-0 f v", want: `$"3-0"`},
		{cmd: "XADD t 4-0 f v", want: `$"4-0"`},
		{cmd: "XADD t 5-0 f v", want: `$"5-0"`},
		{cmd: "XTRIM t MINID = 3-0", want: ":2"},
		{cmd: "XRANGE t - +", want: stEntries(stEntry("3-0", "f", "v"), stEntry("4-0", "f", "v"), stEntry("5-0", "f", "v"))},
		{cmd: "XTRIM t MAXLEN 2", want: ":1"},
		{cmd: "XTRIM t MAXLEN 5", want: ":0"},
		{cmd: "XTRIM t MAXLEN ~ 1", want: ":0"}, // the node cannot go whole
		{cmd: "XTRIM t MAXLEN ~ 0", want: ":2"},
		{cmd: "XADD t 6-0 f v", want: `$"6-0"`},
		{cmd: "XADD t 7-0 f v", want: `$"7-0"`},
		{cmd: "XTRIM nokey MAXLEN 0", want: ":0"},
		{cmd: "XTRIM nokey MAXLEN x", want: stNotInt},
		{cmd: "XTRIM t", want: stArity("xtrim")},
		{cmd: "XTRIM t LIMIT 5", want: `-"ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"`},
		{cmd: "XTRIM t FOO 5", want: stSyntax},
		{cmd: "XTRIM t MAXLEN 1 NOMKSTREAM", want: stSyntax},
		{cmd: "XTRIM t LIMIT 0 x", want: stSyntax},
		{cmd: "XTRIM t MAXLEN", want: stArity("xtrim")},
		{cmd: "XTRIM t MAXLEN 1 5", want: stSyntax},
		{cmd: "XTRIM t LIMIT 0 LIMIT 0", want: `-"ERR syntax error, XTRIM must be called with a trimming strategy"`},
		{cmd: "XTRIM t MAXLEN 1 LIMIT 5", want: `-"ERR syntax error, LIMIT cannot be used without the special ~ option"`},
		{cmd: "XTRIM t MINID 0-0", want: ":0"},
		{cmd: "XTRIM t MINID 18446744073709551615-18446744073709551615", want: ":2"},
		{cmd: "XLEN t", want: ":0"},
		{cmd: "SET str v", want: `+"OK"`},
		{cmd: "XTRIM str MAXLEN 1", want: stWrongType},
		{cmd: "XADD big 1-0 f v", want: `$"1-0"`},
		{cmd: "XADD big 1641544570597-0 f v", want: `$"1641544570597-0"`},
		{cmd: "XADD big 1641544570597-1 f v", want: `$"1641544570597-1"`},
		{cmd: "XTRIM big MINID 1641544570597-0", want: ":1"},
	}},
	{name: "xrange", steps: []stStep{
		{cmd: "XADD s 0-1 foo bar", want: `$"0-1"`},
		{cmd: "XADD s 0-18446744073709551615 foo bar", want: `$"0-18446744073709551615"`},
		{cmd: "XADD s 1-0 foo bar", want: `$"1-0"`},
		{cmd: "XADD s 42-0 foo bar", want: `$"42-0"`},
		{cmd: "XADD s 42-42 foo bar", want: `$"42-42"`},
		{cmd: "XADD s 18446744073709551615-18446744073709551614 foo bar", want: `$"18446744073709551615-18446744073709551614"`},
		{cmd: "XADD s 18446744073709551615-18446744073709551615 foo bar", want: `$"18446744073709551615-18446744073709551615"`},
		{cmd: "XRANGE s (0-1 + COUNT 1", want: stEntries(stEntry("0-18446744073709551615", "foo", "bar"))},
		{cmd: "XRANGE s (0-1 (1-0", want: stEntries(stEntry("0-18446744073709551615", "foo", "bar"))},
		{cmd: "XRANGE s (1-0 (42-42", want: stEntries(stEntry("42-0", "foo", "bar"))},
		{cmd: "XRANGE s 42 42", want: stEntries(stEntry("42-0", "foo", "bar"), stEntry("42-42", "foo", "bar"))},
		{cmd: "XREVRANGE s 42 42", want: stEntries(stEntry("42-42", "foo", "bar"), stEntry("42-0", "foo", "bar"))},
		{cmd: "XREVRANGE s (42-42 1 COUNT 5", want: stEntries(stEntry("42-0", "foo", "bar"), stEntry("1-0", "foo", "bar"))},
		{cmd: "XRANGE s 18446744073709551615 +", want: stEntries(stEntry("18446744073709551615-18446744073709551614", "foo", "bar"), stEntry("18446744073709551615-18446744073709551615", "foo", "bar"))},
		{cmd: "XRANGE s (- +", want: stBadID},
		{cmd: "XRANGE s - (+", want: stBadID},
		{cmd: "XRANGE s (18446744073709551615-18446744073709551615 +", want: `-"ERR invalid start ID for the interval"`},
		{cmd: "XRANGE s - (0-0", want: `-"ERR invalid end ID for the interval"`},
		{cmd: "XRANGE s ( +", want: stBadID},
		{cmd: "XRANGE s ((1 +", want: stBadID},
		{cmd: "XRANGE s 1- +", want: stBadID},
		{cmd: "XRANGE s 43 42", want: "*0[]"},
		{cmd: "XRANGE s - + COUNT 0", want: "*nil"},
		{cmd: "XRANGE s - + COUNT -3", want: "*nil"},
		{cmd: "XREVRANGE s + - COUNT 0", want: "*nil"},
		{cmd: "XRANGE nokey - + COUNT 0", want: "*0[]"},
		{cmd: "XRANGE nokey - +", want: "*0[]"},
		{cmd: "XRANGE s - + COUNT 1 COUNT 2", want: stEntries(stEntry("0-1", "foo", "bar"), stEntry("0-18446744073709551615", "foo", "bar"))},
		{cmd: "XREVRANGE s + - COUNT 1", want: stEntries(stEntry("18446744073709551615-18446744073709551615", "foo", "bar"))},
		{cmd: "XRANGE s - + COUNT", want: stSyntax},
		{cmd: "XRANGE s - + COUNT x", want: stNotInt},
		{cmd: "XRANGE s - + FOO 1", want: stSyntax},
		{cmd: "XRANGE nokey x +", want: stBadID},
		{cmd: "XRANGE s", want: stArity("xrange")},
		{cmd: "SET str v", want: `+"OK"`},
		{cmd: "XRANGE str - +", want: stWrongType},
		{cmd: "XREVRANGE str + -", want: stWrongType},
		{cmd: "XADD r 1234567891230 key1 value1", want: `$"1234567891230-0"`},
		{cmd: "XADD r 1234567891240 key2 value2", want: `$"1234567891240-0"`},
		{cmd: "XADD r 1234567891250 key3 value3", want: `$"1234567891250-0"`},
		{cmd: "XREVRANGE r 1234567891245 -", want: stEntries(stEntry("1234567891240-0", "key2", "value2"), stEntry("1234567891230-0", "key1", "value1"))},
		{cmd: "XADD r2 1234567891230 key1 value1", want: `$"1234567891230-0"`},
		{cmd: "XADD r2 1234567891240 key1 value2", want: `$"1234567891240-0"`},
		{cmd: "XADD r2 1234567891250 key1 value3", want: `$"1234567891250-0"`},
		{cmd: "XREVRANGE r2 1234567891245 -", want: stEntries(stEntry("1234567891240-0", "key1", "value2"), stEntry("1234567891230-0", "key1", "value1"))},
	}},
	{name: "xdel", steps: []stStep{
		{cmd: "XADD s 1-1 a 1", want: `$"1-1"`},
		{cmd: "XADD s 1-2 b 2", want: `$"1-2"`},
		{cmd: "XADD s 1-3 c 3", want: `$"1-3"`},
		{cmd: "XADD s 1-4 d 4", want: `$"1-4"`},
		{cmd: "XADD s 1-5 e 5", want: `$"1-5"`},
		{cmd: "XDEL s 1-1 1-4 1-5 2-1", want: ":3"},
		{cmd: "XDEL s 1-1", want: ":0"},
		{cmd: "XDEL s 1-2 1-2", want: ":1"},
		{cmd: "XLEN s", want: ":1"},
		{cmd: "XRANGE s - +", want: stEntries(stEntry("1-3", "c", "3"))},
		{cmd: "XDEL s 1-3 x", want: stBadID},
		{cmd: "XLEN s", want: ":1"},
		{cmd: "XDEL s +", want: stBadID},
		{cmd: "XDEL s 1", want: ":0"},
		{cmd: "XDEL nokey x", want: ":0"},
		{cmd: "XDEL s", want: stArity("xdel")},
		{cmd: "SET str v", want: `+"OK"`},
		{cmd: "XDEL str 1-1", want: stWrongType},
		{cmd: "XDEL s 1-3", want: ":1"},
		{cmd: "XLEN s", want: ":0"},
		{cmd: "EXISTS s", want: ":1"},
		{cmd: "XADD s 1-3 c 3", want: stTop},
	}},
	{name: "xsetid", steps: []stStep{
		{cmd: "XADD s MAXLEN 0 1-1 a b", want: `$"1-1"`},
		{cmd: "XSETID s 200-0", want: `+"OK"`},
		{cmd: "XADD s 199-0 a b", want: stTop},
		{cmd: "XADD s 200-* a b", want: `$"200-1"`},
		{cmd: "XSETID s 1-1", want: `-"ERR The ID specified in XSETID is smaller than the target stream top item"`},
		{cmd: "XSETID nokey 1-1", want: stNoKey},
		{cmd: "XSETID s 1-1 0", want: stSyntax},
		{cmd: "XSETID s 1-1 0-0", want: stSyntax},
		{cmd: "XSETID s 1-1 ENTRIESADDED -1 MAXDELETEDID 0-0", want: `-"ERR entries_added must be positive"`},
		{cmd: "XSETID s 1-1 ENTRIESADDED x", want: stNotInt},
		{cmd: "XSETID s 1-1 ENTRIESADDED", want: stSyntax},
		{cmd: "XSETID s 300-0 ENTRIESADDED 0", want: `-"ERR The entries_added specified in XSETID is smaller than the target stream length"`},
		{cmd: "XSETID s 300-0 ENTRIESADDED 5 MAXDELETEDID 400-0", want: `-"ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"`},
		{cmd: "XSETID s 300-0 ENTRIESADDED 5 MAXDELETEDID 299-0", want: `+"OK"`},
		{cmd: "XSETID s +", want: stBadID},
		{cmd: "XSETID s x", want: stBadID},
		{cmd: "XSETID s", want: stArity("xsetid")},
		{cmd: "SET str v", want: `+"OK"`},
		{cmd: "XSETID str 1-1", want: stWrongType},
	}},
	{name: "xread", steps: []stStep{
		{cmd: "XADD s 1-1 a 1", want: `$"1-1"`},
		{cmd: "XADD s 1-2 b 2", want: `$"1-2"`},
		{cmd: "XADD t 5-0 c 3", want: `$"5-0"`},
		stReadStep("XREAD STREAMS s 0", "s", stEntries(stEntry("1-1", "a", "1"), stEntry("1-2", "b", "2"))),
		stReadStep("XREAD COUNT 1 STREAMS s t 0 0", "s", stEntries(stEntry("1-1", "a", "1")), "t", stEntries(stEntry("5-0", "c", "3"))),
		stReadStep("XREAD STREAMS nokey s 0 1-1", "s", stEntries(stEntry("1-2", "b", "2"))),
		stReadStep("XREAD STREAMS s s 1-1 0", "s", stEntries(stEntry("1-2", "b", "2")), "s", stEntries(stEntry("1-1", "a", "1"), stEntry("1-2", "b", "2"))),
		stReadStep("xread count -5 streams s 1", "s", stEntries(stEntry("1-1", "a", "1"), stEntry("1-2", "b", "2"))),
		stReadStep("XREAD COUNT 5 COUNT 1 STREAMS s 0", "s", stEntries(stEntry("1-1", "a", "1"))),
		stReadStep("XREAD BLOCK 0 STREAMS s 1-1", "s", stEntries(stEntry("1-2", "b", "2"))),
		{cmd: "XREAD STREAMS s 1-2", want: "*nil"},
		{cmd: "XREAD STREAMS s $", want: "*nil"},
		{cmd: "XREAD STREAMS nokey 0", want: "*nil"},
		{cmd: "XREAD STREAMS s 18446744073709551615-18446744073709551615", want: "*nil"},
		{cmd: "XREAD STREAMS s", want: stArity("xread")},
		{cmd: "XREAD COUNT 1", want: stArity("xread")},
		{cmd: "XREAD COUNT x STREAMS s 0", want: stNotInt},
		{cmd: "XREAD BLOCK -1 STREAMS s 0", want: `-"ERR timeout is negative"`},
		{cmd: "XREAD BLOCK x STREAMS s 0", want: `-"ERR timeout is not an integer or out of range"`},
		{cmd: "XREAD BLOCK 1.5 STREAMS s 0", want: `-"ERR timeout is not an integer or out of range"`},
		{cmd: "XREAD FOO STREAMS s 0", want: stSyntax},
		{cmd: "XREAD COUNT 1 FOO 1", want: stSyntax},
		{cmd: "XREAD STREAMS s >", want: `-"ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."`},
		{cmd: "XREAD STREAMS s (0", want: stBadID},
		{cmd: "XREAD STREAMS s -", want: stBadID},
		{cmd: "XREAD GROUP g c STREAMS s 0", want: `-"ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."`},
		{cmd: "XREAD NOACK STREAMS s 0", want: `-"ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."`},
		{cmd: "SET str v", want: `+"OK"`},
		{cmd: "XREAD STREAMS str 0", want: stWrongType},
		{cmd: "XREAD STREAMS nokey str 0 0", want: stWrongType},
		{cmd: "XREAD STREAMS s str 0 x", want: stWrongType},
		{cmd: "XREAD STREAMS s str x 0", want: stBadID},
		{cmd: "XADD d 666 f v", want: `$"666-0"`},
		{cmd: "XADD d 667 f2 v2", want: `$"667-0"`},
		{cmd: "XDEL d 667", want: ":1"},
		{cmd: "XREAD STREAMS d 666", want: "*nil"},
		{cmd: "MULTI", want: `+"OK"`},
		{cmd: "XREAD BLOCK 0 STREAMS nokey $", want: `+"QUEUED"`},
		{cmd: "EXEC", want: "*1[*nil]"},
	}},
	{name: "xinfo", steps: []stStep{
		{cmd: "XINFO STREAM nokey", want: stNoKey},
		{cmd: "SET str v", want: `+"OK"`},
		{cmd: "XINFO STREAM str", want: stWrongType},
		{cmd: "XADD s 1-1 a 1", want: `$"1-1"`},
		{cmd: "XINFO STREAM s FULL COUNT", want: `-"ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP."`},
		{cmd: "XINFO stream s foo", want: `-"ERR unknown subcommand or wrong number of arguments for 'stream'. Try XINFO HELP."`},
		{cmd: "XINFO STREAM s FULL LIMIT 5", want: `-"ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP."`},
		{cmd: "XINFO STREAM s FULL COUNT x", want: stNotInt},
		{cmd: "XINFO FOO", want: `-"ERR unknown subcommand 'FOO'. Try XINFO HELP."`},
		{cmd: "XINFO STREAM", want: stArity("xinfo|stream")},
		{cmd: "XINFO", want: stArity("xinfo")},
		{cmd: "XINFO HELP x", want: stArity("xinfo|help")},
	}},
	{name: "keyspace", steps: []stStep{
		{cmd: "XADD s 1-1 a 1", want: `$"1-1"`},
		{cmd: "XADD s 2-2 b 2", want: `$"2-2"`},
		{cmd: "SET str v", want: `+"OK"`},
		{cmd: "SCAN 0 TYPE stream", want: `*2[$"0" *1[$"s"]]`},
		{cmd: "COPY s c", want: ":1"},
		{cmd: "XDEL s 1-1", want: ":1"},
		{cmd: "XRANGE c - +", want: stEntries(stEntry("1-1", "a", "1"), stEntry("2-2", "b", "2"))},
		{cmd: "XADD c 2-2 x y", want: stTop},
		{cmd: "RENAME c r", want: `+"OK"`},
		{cmd: "XLEN r", want: ":2"},
		{cmd: "TYPE r", want: `+"stream"`},
		{cmd: "EXISTS c", want: ":0"},
		{cmd: "GET r", want: stWrongType},
		{cmd: "LPUSH r x", want: stWrongType},
		{cmd: "DEL r s", want: ":2"},
		{cmd: "TYPE s", want: `+"none"`},
		{cmd: "XADD s 1-1 a 1", want: `$"1-1"`},
	}},

	// Redis 8: what 7.0 does not have.
	{name: "xread 8", redis8: true, steps: []stStep{
		{cmd: "XADD s 1-0 k1 v1", want: `$"1-0"`},
		{cmd: "XADD s 2-0 k2 v2", want: `$"2-0"`},
		{cmd: "XADD s 3-0 k3 v3", want: `$"3-0"`},
		stReadStep("XREAD STREAMS s +", "s", stEntries(stEntry("3-0", "k3", "v3"))),
		stReadStep("XREAD COUNT 3 STREAMS s +", "s", stEntries(stEntry("3-0", "k3", "v3"))),
		{cmd: "XDEL s 3-0", want: ":1"},
		stReadStep("XREAD STREAMS s nokey +  +", "s", stEntries(stEntry("2-0", "k2", "v2"))),
		stReadStep("XREAD BLOCK 100000 STREAMS s +", "s", stEntries(stEntry("2-0", "k2", "v2"))),
		{cmd: "XREAD STREAMS nokey +", want: "*nil"},
		{cmd: "XREAD STREAMS s t 0", want: `-"ERR Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' must be specified."`},
		{cmd: "XADD t 1-1 f v", want: `$"1-1"`},
		{cmd: "XADD t 1-2 f v", want: `$"1-2"`},
		{cmd: "XADD u 1-1 f v", want: `$"1-1"`},
		stReadStep("XREAD MAXCOUNT 3 STREAMS s t u 0 0 0", "s", stEntries(stEntry("1-0", "k1", "v1"), stEntry("2-0", "k2", "v2")), "t", stEntries(stEntry("1-1", "f", "v"))),
		stReadStep("XREAD COUNT 1 MAXCOUNT 2 STREAMS s t u 0 0 0", "s", stEntries(stEntry("1-0", "k1", "v1")), "t", stEntries(stEntry("1-1", "f", "v"))),
		stReadStep("XREAD COUNT 1 MAXCOUNT 1 STREAMS s t u 0 0 0", "s", stEntries(stEntry("1-0", "k1", "v1"))),
		stReadStep("XREAD MAXSIZE 1 STREAMS s t 0 0", "s", stEntries(stEntry("1-0", "k1", "v1"))),
		// 1-0 k1 v1 and 2-0 k2 v2 take 7 bytes each (ID, field, value).
		stReadStep("XREAD MAXSIZE 14 STREAMS s t 0 0", "s", stEntries(stEntry("1-0", "k1", "v1"), stEntry("2-0", "k2", "v2"))),
		stReadStep("XREAD MAXSIZE 13 STREAMS s t 0 0", "s", stEntries(stEntry("1-0", "k1", "v1"))),
		stReadStep("XREAD MAXSIZE 19 MAXCOUNT 5 STREAMS t s 0 0", "t", stEntries(stEntry("1-1", "f", "v"), stEntry("1-2", "f", "v")), "s", stEntries(stEntry("1-0", "k1", "v1"))),
		{cmd: "XREAD MAXCOUNT 0 STREAMS s 0", want: `-"ERR MAXCOUNT must be a positive integer"`},
		{cmd: "XREAD MAXCOUNT x STREAMS s 0", want: stNotInt},
		{cmd: "XREAD MAXSIZE -1 STREAMS s 0", want: `-"ERR MAXSIZE must be a positive integer"`},
		{cmd: "XREAD COUNT 5 MAXCOUNT 4 STREAMS s 0", want: `-"ERR MAXCOUNT must be greater than or equal to COUNT"`},
		{cmd: "XINFO HELP", want: `*9[+"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" +"CONSUMERS <key> <groupname>" +"    Show consumers of <groupname>." +"GROUPS <key>" +"    Show the stream consumer groups." +"STREAM <key> [FULL [COUNT <count>]" +"    Show information about the stream." +"HELP" +"    Print this help."]`},
	}},
	{name: "xinfo 8", redis8: true, steps: []stStep{
		{cmd: "XADD s 1-1 a 1", want: `$"1-1"`},
		{cmd: "XADD s 1-2 b 2", want: `$"1-2"`},
		{cmd: "XADD s 1-3 c 3", want: `$"1-3"`},
		{cmd: "XDEL s 1-2", want: ":1"},
		{cmd: "XINFO STREAM s", want: `*32[$"length" :2 $"radix-tree-keys" :1 $"radix-tree-nodes" :2 $"last-generated-id" $"1-3" $"max-deleted-entry-id" $"1-2" $"entries-added" :3 $"recorded-first-entry-id" $"1-1" ` + stIDMPZero + ` $"groups" :0 $"first-entry" ` + stEntry("1-1", "a", "1") + ` $"last-entry" ` + stEntry("1-3", "c", "3") + `]`,
			want3: `%16[$"length" :2 $"radix-tree-keys" :1 $"radix-tree-nodes" :2 $"last-generated-id" $"1-3" $"max-deleted-entry-id" $"1-2" $"entries-added" :3 $"recorded-first-entry-id" $"1-1" ` + stIDMPZero + ` $"groups" :0 $"first-entry" ` + stEntry("1-1", "a", "1") + ` $"last-entry" ` + stEntry("1-3", "c", "3") + `]`},
		{cmd: "XINFO STREAM s FULL COUNT 1", want: `*30[$"length" :2 $"radix-tree-keys" :1 $"radix-tree-nodes" :2 $"last-generated-id" $"1-3" $"max-deleted-entry-id" $"1-2" $"entries-added" :3 $"recorded-first-entry-id" $"1-1" ` + stIDMPZero + ` $"entries" ` + stEntries(stEntry("1-1", "a", "1")) + ` $"groups" *0[]]`,
			want3: `%15[$"length" :2 $"radix-tree-keys" :1 $"radix-tree-nodes" :2 $"last-generated-id" $"1-3" $"max-deleted-entry-id" $"1-2" $"entries-added" :3 $"recorded-first-entry-id" $"1-1" ` + stIDMPZero + ` $"entries" ` + stEntries(stEntry("1-1", "a", "1")) + ` $"groups" *0[]]`},
		{cmd: "XADD e MAXLEN 0 1-1 a b", want: `$"1-1"`},
		{cmd: "XINFO STREAM e", want: `*32[$"length" :0 $"radix-tree-keys" :0 $"radix-tree-nodes" :1 $"last-generated-id" $"1-1" $"max-deleted-entry-id" $"0-0" $"entries-added" :1 $"recorded-first-entry-id" $"0-0" ` + stIDMPZero + ` $"groups" :0 $"first-entry" $nil $"last-entry" $nil]`,
			want3: `%16[$"length" :0 $"radix-tree-keys" :0 $"radix-tree-nodes" :1 $"last-generated-id" $"1-1" $"max-deleted-entry-id" $"0-0" $"entries-added" :1 $"recorded-first-entry-id" $"0-0" ` + stIDMPZero + ` $"groups" :0 $"first-entry" _ $"last-entry" _]`},
	}},
	{name: "ids 8", redis8: true, steps: []stStep{
		// 7.0 answered these with "Elements are too large to be stored".
		{cmd: "XADD y 1-18446744073709551615 a b", want: `$"1-18446744073709551615"`},
		{cmd: "XADD y 1-* a b", want: stTop},
		// 7.0 did not check XSETID against the max deleted ID.
		{cmd: "XADD s MAXLEN 0 1-1 a b", want: `$"1-1"`},
		{cmd: "XSETID s 300-0 ENTRIESADDED 5 MAXDELETEDID 299-0", want: `+"OK"`},
		{cmd: "XSETID s 298-5", want: `-"ERR The ID specified in XSETID is smaller than current max_deleted_entry_id"`},
		{cmd: "XADD x 1-1 a 1", want: `$"1-1"`},
		{cmd: "XADD x 1-2 b 2", want: `$"1-2"`},
		{cmd: "XADD x 1-3 c 3", want: `$"1-3"`},
		{cmd: "XDEL x 1-2", want: ":1"},
		{cmd: "XDEL x 1-3", want: ":1"},
		{cmd: "XSETID x 1-2", want: `-"ERR The ID specified in XSETID is smaller than current max_deleted_entry_id"`},
		{cmd: "XSETID x 1-3", want: `+"OK"`},
		{cmd: "XADD x 1-3 d 4", want: stTop},
	}},
	{name: "refs", redis8: true, steps: []stStep{
		{cmd: "XADD s KEEPREF 1-1 a b", want: `$"1-1"`},
		{cmd: "XADD s DELREF MAXLEN 1 1-2 a b", want: `$"1-2"`},
		{cmd: "XADD s ACKED 1-3 a b", want: `$"1-3"`},
		{cmd: "XADD s ACKED DELREF 1-4 a b", want: stBadID}, // one policy only
		{cmd: "XTRIM s MAXLEN 1 ACKED", want: ":1"},
		{cmd: "XTRIM s KEEPREF MAXLEN 0", want: ":1"},
		{cmd: "XTRIM s MAXLEN 0 KEEPREF DELREF", want: stSyntax},
	}},
	{name: "idmp", redis8: true, steps: []stStep{
		{cmd: "XADD s IDMP p1 * f v", want: stBadID},
		{cmd: "XADD s IDMP p1 iid1 1-1 f v", want: `-"ERR IDMP/IDMPAUTO can be used only with auto-generated IDs"`},
		{cmd: "XADD s IDMPAUTO p1 1-* f v", want: `-"ERR IDMP/IDMPAUTO can be used only with auto-generated IDs"`},
		{cmd: "XADD s IDMP p1 iid1 IDMP p2 iid2 * f v", want: `-"ERR IDMP/IDMPAUTO specified multiple times"`},
		{cmd: "XADD s IDMPAUTO p1 IDMP p2 iid2 * f v", want: `-"ERR IDMP/IDMPAUTO specified multiple times"`},
		{cmd: "XADD s IDMPAUTO p1 IDMPAUTO p2 * f v", want: `-"ERR IDMP/IDMPAUTO specified multiple times"`},
		{argv: []string{"XADD", "s", "IDMP", "", "iid1", "*", "f", "v"}, want: `-"ERR IDMP requires a non-empty producer ID"`},
		{argv: []string{"XADD", "s", "IDMP", "p1", "", "*", "f", "v"}, want: `-"ERR IDMP requires a non-empty idempotent ID"`},
		{argv: []string{"XADD", "s", "IDMPAUTO", "", "*", "f", "v"}, want: `-"ERR IDMPAUTO requires a non-empty producer ID"`},
		{cmd: "XADD s NOMKSTREAM IDMP p1 r1 * f v", want: "$nil"},
		{cmd: "EXISTS s", want: ":0"},
		{cmd: "XCFGSET s IDMP-DURATION 5", want: stNoKey},
		{cmd: "XADD s 1-1 f v", want: `$"1-1"`},
		{cmd: "XCFGSET s", want: `-"ERR At least one parameter must be specified: IDMP-DURATION or IDMP-MAXSIZE"`},
		{cmd: "XCFGSET s IDMP-DURATION", want: stSyntax},
		{cmd: "XCFGSET s INVALID", want: stSyntax},
		{cmd: "XCFGSET s IDMP-DURATION A", want: stNotInt},
		{cmd: "XCFGSET s IDMP-DURATION 000000000", want: stNotInt},
		{cmd: "XCFGSET s IDMP-MAXSIZE 3.14", want: stNotInt},
		{cmd: "XCFGSET s IDMP-DURATION INVALID IDMP-MAXSIZE", want: stNotInt},
		{cmd: "XCFGSET s IDMP-DURATION 0", want: `-"ERR IDMP-DURATION must be between 1 and 86400 seconds"`},
		{cmd: "XCFGSET s IDMP-DURATION 86401", want: `-"ERR IDMP-DURATION must be between 1 and 86400 seconds"`},
		{cmd: "XCFGSET s IDMP-MAXSIZE 10001", want: `-"ERR IDMP-MAXSIZE must be between 1 and 10000 entries"`},
		{cmd: "XCFGSET s IDMP-MAXSIZE -50", want: `-"ERR IDMP-MAXSIZE must be between 1 and 10000 entries"`},
		{cmd: "XCFGSET s IDMP-DURATION 86400 IDMP-MAXSIZE 10000", want: `+"OK"`},
		{cmd: "XCFGSET str IDMP-DURATION 5", want: stNoKey},
		{cmd: "SET str v", want: `+"OK"`},
		{cmd: "XCFGSET str IDMP-DURATION 5", want: stWrongType},
		{cmd: "XCFGSET s IDMP-DURATION 100 IDMP-MAXSIZE 100", want: `+"OK"`},
	}},
}

// stIDMPZero is the IDMP part of XINFO STREAM for a stream that never
// used it.
const stIDMPZero = `$"idmp-duration" :100 $"idmp-maxsize" :100 $"pids-tracked" :0 $"iids-tracked" :0 $"iids-added" :0 $"iids-duplicates" :0`

// TestStreamCommandsRaw runs the tables over raw RESP2 and RESP3.
func TestStreamCommandsRaw(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	for _, proto := range []int{2, 3} {
		rc := stDial(t, s.Addr, proto)
		for _, g := range stGroups {
			t.Run(fmt.Sprintf("resp%d/%s", proto, g.name), func(t *testing.T) {
				stRunGroup(t, rc, proto, g, "redstream")
			})
		}
	}
}

// stInfo returns XINFO STREAM as a field map (RESP2 flat array).
func stInfo(t testing.TB, rc *RawConn, key string, extra ...string) map[string]Reply {
	t.Helper()
	r := rc.Do(append([]string{"XINFO", "STREAM", key}, extra...)...)
	if r.Type != '*' && r.Type != '%' {
		t.Fatalf("XINFO STREAM %s = %s", key, r)
	}
	m := map[string]Reply{}
	for i := 0; i+1 < len(r.Elems); i += 2 {
		m[r.Elems[i].Str] = r.Elems[i+1]
	}
	return m
}

func stInfoInt(t testing.TB, rc *RawConn, key, field string) int64 {
	t.Helper()
	v, ok := stInfo(t, rc, key)[field]
	if !ok || v.Type != ':' {
		t.Fatalf("XINFO STREAM %s: %s = %s", key, field, v)
	}
	return v.Int
}

// TestStreamIDMP follows Redis 8.6's idempotent-production tests: retries
// answer the first ID and add nothing, producers are isolated, IDMPAUTO
// ignores field order, maxsize evicts the oldest, XCFGSET clears only on
// a change, and XINFO counts it all.
func TestStreamIDMP(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	rc := s.Raw(t)
	do := func(args ...string) Reply { t.Helper(); return rc.Do(args...) }
	id1 := do("XADD", "s", "IDMP", "p1", "payment-abc", "*", "amount", "100", "currency", "USD")
	id2 := do("XADD", "s", "IDMP", "p1", "payment-abc", "*", "amount", "200", "currency", "EUR")
	if id1.Type != '$' || id1.String() != id2.String() {
		t.Fatalf("retry: %s then %s", id1, id2)
	}
	if r := do("XRANGE", "s", "-", "+"); r.String() != stEntries(stEntry(id1.Str, "amount", "100", "currency", "USD")) {
		t.Fatalf("XRANGE = %s", r)
	}
	if id3 := do("XADD", "s", "IDMP", "p2", "payment-abc", "*", "f", "v"); id3.String() == id1.String() {
		t.Fatal("producers share iids")
	}
	a := do("XADD", "s", "IDMPAUTO", "p3", "*", "f1", "a", "f2", "b")
	b := do("XADD", "s", "IDMPAUTO", "p3", "*", "f2", "b", "f1", "a")
	c := do("XADD", "s", "IDMPAUTO", "p3", "*", "f2", "b", "f1", "x")
	if a.String() != b.String() || a.String() == c.String() {
		t.Fatalf("IDMPAUTO: %s %s %s", a, b, c)
	}
	if got := do("XLEN", "s").Int; got != 4 {
		t.Fatalf("XLEN = %d", got)
	}
	info := stInfo(t, rc, "s")
	for field, want := range map[string]int64{"pids-tracked": 3, "iids-tracked": 4, "iids-added": 4, "iids-duplicates": 2, "idmp-duration": 100, "idmp-maxsize": 100} {
		if info[field].Int != want {
			t.Errorf("%s = %s, want %d", field, info[field], want)
		}
	}
	full := stInfo(t, rc, "s", "FULL")
	if full["iids-added"].Int != 4 || full["pids-tracked"].Int != 3 {
		t.Errorf("FULL: %v", full)
	}

	// Setting the same values keeps the history; another value clears it.
	do("XCFGSET", "s", "IDMP-DURATION", "100", "IDMP-MAXSIZE", "100")
	if r := do("XADD", "s", "IDMP", "p1", "payment-abc", "*", "x", "y"); r.String() != id1.String() {
		t.Fatalf("same-value XCFGSET cleared the history: %s", r)
	}
	do("XCFGSET", "s", "IDMP-MAXSIZE", "3", "IDMP-DURATION", "60")
	if st := stInfo(t, rc, "s"); st["pids-tracked"].Int != 0 || st["iids-tracked"].Int != 0 || st["iids-added"].Int != 4 || st["idmp-maxsize"].Int != 3 {
		t.Fatalf("after XCFGSET: %v", st)
	}
	ids := map[string]string{}
	for i := 1; i <= 4; i++ {
		iid := fmt.Sprint("req-", i)
		ids[iid] = do("XADD", "s", "IDMP", "p1", iid, "*", "f", "v").Str
	}
	if r := do("XADD", "s", "IDMP", "p1", "req-1", "*", "f", "new"); r.Str == ids["req-1"] {
		t.Error("req-1 was not evicted by maxsize 3")
	}
	if r := do("XADD", "s", "IDMP", "p1", "req-4", "*", "f", "dup"); r.Str != ids["req-4"] {
		t.Errorf("req-4 forgotten: %s", r)
	}
	if got := stInfoInt(t, rc, "s", "iids-tracked"); got != 3 {
		t.Errorf("iids-tracked = %d", got)
	}
	// The option order is free, and the other options combine.
	if r := do("XADD", "s", "MAXLEN", "~", "100", "KEEPREF", "IDMP", "p9", "x", "NOMKSTREAM", "*", "f", "v"); r.Type != '$' {
		t.Errorf("options in another order: %s", r)
	}
}

// TestStreamIDMPExpiry: an iid is forgotten after the stream's duration.
func TestStreamIDMPExpiry(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	rc := s.Raw(t)
	rc.Do("XADD", "s", "IDMP", "p1", "r", "*", "f", "v")
	rc.Do("XCFGSET", "s", "IDMP-DURATION", "1")
	id1 := rc.Do("XADD", "s", "IDMP", "p1", "r", "*", "f", "v1")
	if r := rc.Do("XADD", "s", "IDMP", "p1", "r", "*", "f", "v2"); r.Str != id1.Str {
		t.Fatalf("duplicate not detected: %s vs %s", r, id1)
	}
	deadline := time.Now().Add(10 * time.Second)
	for stInfoInt(t, rc, "s", "iids-tracked") != 0 { // expiry is a matter of time: poll it
		if time.Now().After(deadline) {
			t.Fatal("the iid did not expire")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := rc.Do("XADD", "s", "IDMP", "p1", "r", "*", "f", "v3"); r.Str == id1.Str {
		t.Fatal("an expired iid still deduplicated")
	}
}

// TestStreamMemoryUsage: MEMORY USAGE grows with the stream.
func TestStreamMemoryUsage(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	rc := s.Raw(t)
	rc.Do("XADD", "s", "1-1", "a", "b")
	small := rc.Do("MEMORY", "USAGE", "s")
	for i := 2; i < 1000; i++ {
		rc.Do("XADD", "s", fmt.Sprint(i), "field", "some value")
	}
	big := rc.Do("MEMORY", "USAGE", "s")
	// Redis 7.0 says 4728 and 30996 (its nodes, like ours, start with
	// 4096 bytes reserved).
	if small.Type != ':' || big.Type != ':' || small.Int <= 0 || big.Int <= 2*small.Int || big.Int > 100_000 {
		t.Errorf("MEMORY USAGE: %s, then %s after 1000 entries", small, big)
	}
}

// TestStreamCommandInfo: XREAD's keys are found after STREAMS.
func TestStreamCommandInfo(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	rc := s.Raw(t)
	if r := rc.Do("COMMAND", "GETKEYS", "XREAD", "COUNT", "2", "BLOCK", "0", "STREAMS", "a", "b", "0", "$"); r.String() != `*2[$"a" $"b"]` {
		t.Errorf("COMMAND GETKEYS XREAD = %s", r)
	}
	if r := rc.Do("COMMAND", "GETKEYS", "XADD", "k", "*", "f", "v"); r.String() != `*1[$"k"]` {
		t.Errorf("COMMAND GETKEYS XADD = %s", r)
	}
	if r := rc.Do("COMMAND", "COUNT"); r.Type != ':' {
		t.Errorf("COMMAND COUNT = %s", r)
	}
}

// TestStreamGoRedis drives the stream commands through go-redis (RESP3).
func TestStreamGoRedis(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	c, cx := s.Client(t), ctx(t)
	id, err := c.XAdd(cx, &redis.XAddArgs{Stream: "events", ID: "1-1", Values: []string{"event", "click", "user", "12345"}}).Result()
	if err != nil || id != "1-1" {
		t.Fatalf("XAdd = %q, %v", id, err)
	}
	auto, err := c.XAdd(cx, &redis.XAddArgs{Stream: "events", Values: map[string]any{"event": "view"}}).Result()
	if err != nil || !strings.HasSuffix(auto, "-0") {
		t.Fatalf("XAdd * = %q, %v", auto, err)
	}
	if _, err := c.XAdd(cx, &redis.XAddArgs{Stream: "events", ID: "1-1", Values: []string{"a", "b"}}).Result(); err == nil ||
		err.Error() != "ERR The ID specified in XADD is equal or smaller than the target stream top item" {
		t.Errorf("XAdd old ID: %v", err)
	}
	if _, err := c.XAdd(cx, &redis.XAddArgs{Stream: "none", NoMkStream: true, Values: []string{"a", "b"}}).Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("NOMKSTREAM on a missing key: %v", err)
	}
	msgs, err := c.XRange(cx, "events", "-", "+").Result()
	if err != nil || len(msgs) != 2 || msgs[0].ID != "1-1" || msgs[0].Values["user"] != "12345" || msgs[1].Values["event"] != "view" {
		t.Errorf("XRange = %+v, %v", msgs, err)
	}
	if rev, err := c.XRevRangeN(cx, "events", "+", "-", 1).Result(); err != nil || len(rev) != 1 || rev[0].ID != auto {
		t.Errorf("XRevRangeN = %+v, %v", rev, err)
	}
	read, err := c.XRead(cx, &redis.XReadArgs{Streams: []string{"events", "1-1"}, Block: -1}).Result()
	if err != nil || len(read) != 1 || len(read[0].Messages) != 1 || read[0].Messages[0].ID != auto {
		t.Errorf("XRead = %+v, %v", read, err)
	}
	for i := 2; i <= 20; i++ {
		c.XAdd(cx, &redis.XAddArgs{Stream: "t", ID: fmt.Sprint(i), MaxLen: 10, Values: []string{"n", fmt.Sprint(i)}})
	}
	if n, err := c.XLen(cx, "t").Result(); err != nil || n != 10 {
		t.Errorf("XLen after MAXLEN = %d, %v", n, err)
	}
	if n, err := c.XTrimMinID(cx, "t", "15").Result(); err != nil || n != 4 {
		t.Errorf("XTrimMinID = %d, %v", n, err)
	}
	if n, err := c.XDel(cx, "t", "15-0", "99-0").Result(); err != nil || n != 1 {
		t.Errorf("XDel = %d, %v", n, err)
	}
	info, err := c.XInfoStream(cx, "t").Result()
	if err != nil || info.Length != 5 || info.LastGeneratedID != "20-0" || info.MaxDeletedEntryID != "15-0" ||
		info.EntriesAdded != 19 || info.FirstEntry.ID != "16-0" || info.LastEntry.ID != "20-0" || info.IDMPDuration != 100 {
		t.Errorf("XInfoStream = %+v, %v", info, err)
	}
	full, err := c.XInfoStreamFull(cx, "t", 2).Result()
	if err != nil || full.Length != 5 || len(full.Entries) != 2 || full.Entries[0].ID != "16-0" || len(full.Groups) != 0 {
		t.Errorf("XInfoStreamFull = %+v, %v", full, err)
	}
	a := &redis.XAddArgs{Stream: "idmp", ProducerID: "p1", IdempotentID: "req-1", Values: []string{"f", "v"}}
	first, _ := c.XAdd(cx, a).Result()
	if again, err := c.XAdd(cx, a).Result(); err != nil || again != first {
		t.Errorf("XAdd IDMP retry = %q (first %q), %v", again, first, err)
	}
	if err := c.XCfgSet(cx, &redis.XCfgSetArgs{Stream: "idmp", Duration: 300, MaxSize: 5}).Err(); err != nil {
		t.Errorf("XCfgSet: %v", err)
	}
	if capped, err := c.XRead(cx, &redis.XReadArgs{Streams: []string{"t", "events", "0", "0"}, MaxCount: 3, Block: -1}).Result(); err != nil ||
		len(capped) != 1 || len(capped[0].Messages) != 3 {
		t.Errorf("XRead MAXCOUNT 3 = %+v, %v", capped, err)
	}
}

// TestStreamRueidis drives the stream commands through rueidis.
func TestStreamRueidis(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	c, cx := s.Rueidis(t), ctx(t)
	id, err := c.Do(cx, c.B().Xadd().Key("q").Maxlen().Almost().Threshold("1000").Id("5-5").FieldValue().FieldValue("event", "click").FieldValue("user", "12345").Build()).ToString()
	if err != nil || id != "5-5" {
		t.Fatalf("XADD = %q, %v", id, err)
	}
	c.Do(cx, c.B().Xadd().Key("q").Id("6-0").FieldValue().FieldValue("event", "view").Build())
	entries, err := c.Do(cx, c.B().Xrange().Key("q").Start("(5-5").End("+").Build()).AsXRange()
	if err != nil || len(entries) != 1 || entries[0].ID != "6-0" || entries[0].FieldValues["event"] != "view" {
		t.Errorf("XRANGE exclusive = %+v, %v", entries, err)
	}
	rev, err := c.Do(cx, c.B().Xrevrange().Key("q").End("+").Start("-").Count(1).Build()).AsXRange()
	if err != nil || len(rev) != 1 || rev[0].ID != "6-0" {
		t.Errorf("XREVRANGE = %+v, %v", rev, err)
	}
	read, err := c.Do(cx, c.B().Xread().Count(1).Streams().Key("q", "nokey").Id("0", "0").Build()).AsXRead()
	if err != nil || len(read["q"]) != 1 || read["q"][0].ID != "5-5" || read["q"][0].FieldValues["user"] != "12345" {
		t.Errorf("XREAD = %+v, %v", read, err)
	}
	if n, err := c.Do(cx, c.B().Xlen().Key("q").Build()).AsInt64(); err != nil || n != 2 {
		t.Errorf("XLEN = %d, %v", n, err)
	}
	info, err := c.Do(cx, c.B().XinfoStream().Key("q").Build()).AsMap()
	if err != nil {
		t.Fatalf("XINFO STREAM: %v", err)
	}
	length, lastID := info["length"], info["last-generated-id"]
	if n, _ := length.AsInt64(); n != 2 {
		t.Errorf("XINFO length = %v", length)
	}
	if last, _ := lastID.ToString(); last != "6-0" {
		t.Errorf("XINFO last-generated-id = %v", lastID)
	}
	err = c.Do(cx, c.B().Xadd().Key("q").Id("1-1").FieldValue().FieldValue("a", "b").Build()).Error()
	if err == nil || !strings.Contains(err.Error(), "equal or smaller than the target stream top item") {
		t.Errorf("XADD old ID: %v", err)
	}
}

// TestStreamCLI compares redis-cli's rendering of stream replies from
// redstream and from redis-server.
func TestStreamCLI(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	r := StartRedis(t)
	setup := [][]string{{"XADD", "s", "1-1", "name", "Sara", "surname", "OConnor"}, {"XADD", "s", "2-0", "field1", "value1"}}
	checks := [][]string{{"XRANGE", "s", "-", "+"}, {"XREVRANGE", "s", "+", "-", "COUNT", "1"}, {"XREAD", "STREAMS", "s", "0"},
		{"XLEN", "s"}, {"XREAD", "STREAMS", "s", "$"}, {"XADD", "s", "1-1", "a", "b"}, {"TYPE", "s"}}
	for _, c := range setup {
		s.CLI(t, c...)
		runCLI(t, r.Port, "", c...)
	}
	for _, c := range checks {
		if got, want := s.CLI(t, c...), runCLI(t, r.Port, "", c...); got != want {
			t.Errorf("redis-cli %v\n redstream: %q\n     redis: %q", c, got, want)
		}
	}
}

// stSeedStreams writes streams that exercise tombstones, trims, XSETID
// and IDMP, and returns what XRANGE and XINFO (minus the radix figures,
// which depend on node limits) say about them.
func stSeedStreams(t testing.TB, rc *RawConn) []string {
	t.Helper()
	for i := range 50 {
		rc.Do("XADD", "s", "MAXLEN", "~", "20", "*", "n", fmt.Sprint(i))
	}
	rc.Do("XADD", "s", "IDMP", "p", "once", "*", "f", "v")
	rc.Do("XDEL", "s", rc.Do("XRANGE", "s", "-", "+", "COUNT", "1").Elems[0].Elems[0].Str)
	rc.Do("XTRIM", "s", "MINID", "~", "0-1")
	rc.Do("XSETID", "s", "99999999999999-5", "ENTRIESADDED", "1000")
	rc.Do("XADD", "e", "MAXLEN", "0", "1-1", "gone", "x")
	rc.Do("XADD", "t", "5-1", "event", "click", "user", "12345")
	rc.Do("XADD", "t", "5-2", "other", "fields")
	rc.Do("XDEL", "t", "5-2")
	return stState(t, rc)
}

func stState(t testing.TB, rc *RawConn) []string {
	t.Helper()
	var out []string
	for _, k := range []string{"s", "e", "t"} {
		out = append(out, rc.Do("XRANGE", k, "-", "+").String(), stripRadix(sdStrip(rc.Do("XINFO", "STREAM", k))).String())
	}
	return out
}

func stSameState(t testing.TB, label string, got, want []string) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s\n got %s\nwant %s", label, got[i], want[i])
		}
	}
}

// TestStreamRestart: streams survive a restart through the AOF, the
// records replaying to the same entries, counters and IDMP state, even
// with other node limits (approximate trims are logged exactly); and
// through an AOF rewrite, whose base is an RDB snapshot.
func TestStreamRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--stream-node-max-entries", "3")
	rc := s.Raw(t)
	want := stSeedStreams(t, rc)
	s.Stop()

	s2 := StartServerIn(t, dir, "--stream-node-max-entries", "100")
	rc2 := s2.Raw(t)
	stSameState(t, "AOF replay", stState(t, rc2), want)
	if r := rc2.Do("XADD", "s", "IDMP", "p", "once", "*", "f", "v"); r.Type != '$' || rc2.Do("XLEN", "s").Int != 20 {
		t.Errorf("IDMP state lost: %s, XLEN %s", r, rc2.Do("XLEN", "s"))
	}
	if r := rc2.Do("BGREWRITEAOF"); r.Type == '-' {
		t.Fatalf("BGREWRITEAOF = %s", r)
	}
	waitInfo(t, rc2, "persistence", "aof_rewrite_in_progress", "0")
	if got := infoField(t, rc2, "persistence", "aof_last_bgrewrite_status"); got != "ok" {
		t.Fatalf("aof_last_bgrewrite_status = %s", got)
	}
	rc2.Do("XADD", "t", "6-0", "after", "rewrite")
	want = stState(t, rc2)
	s2.Stop()
	stSameState(t, "AOF rewrite + restart", stState(t, StartServerIn(t, dir).Raw(t)), want)
}

// TestStreamRDBWithRedis: streams saved by redstream load in redis-server
// 7.0 (the nodes are Redis's bytes), and streams saved by redis-server
// load in redstream, with the same answers.
func TestStreamRDBWithRedis(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--appendonly", "no", "--save", "")
	rc := s.Raw(t)
	want := stSeedStreams(t, rc)
	if r := rc.Do("SAVE"); r.String() != `+"OK"` {
		t.Fatalf("SAVE = %s", r)
	}
	s.Stop()
	redis := StartRedis(t, "--dir", dir, "--dbfilename", "dump.rdb")
	rr := redis.Raw(t)
	stSameState(t, "redis-server loading redstream's dump", stState(t, rr), want)
	rr.Do("XADD", "t", "7-7", "from", "redis")
	rr.Do("XADD", "r", "MAXLEN", "3", "1-1", "a", "b")
	want = stState(t, rr)
	wantR := rr.Do("XRANGE", "r", "-", "+").String()
	if r := rr.Do("SAVE"); r.String() != `+"OK"` {
		t.Fatalf("redis SAVE = %s", r)
	}
	s2 := StartServerIn(t, dir, "--appendonly", "no", "--save", "")
	r2 := s2.Raw(t)
	stSameState(t, "redstream loading redis-server's dump", stState(t, r2), want)
	if got := r2.Do("XRANGE", "r", "-", "+").String(); got != wantR {
		t.Errorf("XRANGE r = %s, want %s", got, wantR)
	}
}

func (r Reply) len() int64 { return int64(len(r.Elems)) }

// stripRadix drops the radix-tree fields of an XINFO reply.
func stripRadix(r Reply) Reply {
	if r.Type != '*' || len(r.Elems) == 0 || r.Elems[0].Str != "length" {
		return r
	}
	out := Reply{Type: r.Type}
	for i := 0; i+1 < len(r.Elems); i += 2 {
		if !strings.HasPrefix(r.Elems[i].Str, "radix-tree") {
			out.Elems = append(out.Elems, r.Elems[i], r.Elems[i+1])
		}
	}
	return out
}
