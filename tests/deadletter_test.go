package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Dead letters per consumer group (issue 15, section 1), beyond Redis:
// XGROUP SETPOLICY and the same options on XGROUP CREATE, what XINFO
// shows of them, and the entries XCLAIM, XAUTOCLAIM, XREADGROUP (CLAIM,
// or a consumer's own history) and XNACK FATAL move to the dead-letter
// stream instead of delivering them past MAXDELIVER.

// dlStep is one command and what go-redis makes of its reply: the value
// as fmt prints it, or the error's text.
type dlStep struct {
	args []any
	want string
}

func dlRun(t *testing.T, c *redis.Client, steps []dlStep) {
	t.Helper()
	for _, st := range steps {
		v, err := c.Do(ctx(t), st.args...).Result()
		got := fmt.Sprint(v)
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != st.want {
			t.Errorf("%v\n   got: %s\n  want: %s", st.args, got, st.want)
		}
	}
}

func dlArgs(line string) []any {
	var out []any
	for _, w := range bbSplit(line) {
		out = append(out, w)
	}
	return out
}

const dlNoKey = "error: ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."

func TestSetPolicyOptionsAndErrors(t *testing.T) {
	t.Parallel()
	c := StartServer(t).Client(t)
	var steps []dlStep
	add := func(line, want string) { steps = append(steps, dlStep{dlArgs(line), want}) }
	add(`XADD s 1-0 f v`, "1-0")
	add(`XGROUP CREATE s g 0`, "OK")
	add(`SET str v`, "OK")
	// Redis's replies are untouched while no policy is set.
	add(`XINFO GROUPS s`, "[map[consumers:0 entries-read:<nil> lag:1 last-delivered-id:0-0 name:g pending:0]]")
	add(`XGROUP SETPOLICY s g MAXDELIVER 3 DEADLETTER dlq ACKWAIT 1000 BACKOFF 100,2000,30000`, "OK")
	add(`XINFO GROUPS s`, "[map[ack-wait:1000 backoff:[100 2000 30000] consumers:0 dead-letter:dlq dead-lettered:0 entries-read:<nil> lag:1 last-delivered-id:0-0 max-deliver:3 name:g pending:0]]")
	// Each option replaces only its own field.
	add(`XGROUP SETPOLICY s g MAXDELIVER 5`, "OK")
	add(`XINFO GROUPS s`, "[map[ack-wait:1000 backoff:[100 2000 30000] consumers:0 dead-letter:dlq dead-lettered:0 entries-read:<nil> lag:1 last-delivered-id:0-0 max-deliver:5 name:g pending:0]]")
	add(`xgroup setpolicy s g backoff "" deadletter ""`, "OK")
	add(`XINFO GROUPS s`, "[map[ack-wait:1000 backoff:[] consumers:0 dead-letter:<nil> dead-lettered:0 entries-read:<nil> lag:1 last-delivered-id:0-0 max-deliver:5 name:g pending:0]]")
	add(`XGROUP SETPOLICY s g MAXDELIVER 1 MAXDELIVER 2`, "OK") // the last one given wins
	add(`XINFO GROUPS s`, "[map[ack-wait:1000 backoff:[] consumers:0 dead-letter:<nil> dead-lettered:0 entries-read:<nil> lag:1 last-delivered-id:0-0 max-deliver:2 name:g pending:0]]")
	// Turning every field off gives Redis's reply back.
	add(`XGROUP SETPOLICY s g MAXDELIVER 0 ACKWAIT 0`, "OK")
	add(`XINFO GROUPS s`, "[map[consumers:0 entries-read:<nil> lag:1 last-delivered-id:0-0 name:g pending:0]]")
	// Errors: values, then the key and group, then the dead-letter key.
	for _, opt := range []string{"MAXDELIVER", "ACKWAIT"} {
		for _, bad := range []string{"-1", "x", "1.5", "99999999999999999999"} {
			add(`XGROUP SETPOLICY s g `+opt+` `+bad, "error: ERR "+opt+" must be a non-negative integer")
		}
	}
	for _, bad := range []string{"0", "-5", "x", "100,", ",100", "100,,200", "100,0", "1 2"} {
		add(`XGROUP SETPOLICY s g BACKOFF "`+bad+`"`, "error: ERR BACKOFF steps must be positive integers")
	}
	add(`XGROUP SETPOLICY s g DEADLETTER s`, "error: ERR DEADLETTER key must be another key than the stream's")
	add(`XGROUP SETPOLICY s g DEADLETTER str`, "error: WRONGTYPE Operation against a key holding the wrong kind of value")
	add(`XGROUP SETPOLICY s g FOO 1`, "error: ERR unknown subcommand or wrong number of arguments for 'SETPOLICY'. Try XGROUP HELP.")
	add(`XGROUP SETPOLICY s g MAXDELIVER 1 ACKWAIT`, "error: ERR unknown subcommand or wrong number of arguments for 'SETPOLICY'. Try XGROUP HELP.")
	add(`XGROUP SETPOLICY s g MAXDELIVER`, "error: ERR wrong number of arguments for 'xgroup|setpolicy' command")
	add(`XGROUP SETPOLICY s g`, "error: ERR wrong number of arguments for 'xgroup|setpolicy' command")
	add(`XGROUP SETPOLICY nokey g MAXDELIVER 1`, dlNoKey)
	add(`XGROUP SETPOLICY s nog MAXDELIVER 1`, "error: NOGROUP No such consumer group 'nog' for key name 's'")
	add(`XGROUP SETPOLICY str g MAXDELIVER 1`, "error: WRONGTYPE Operation against a key holding the wrong kind of value")
	add(`XGROUP SETPOLICY s g MAXDELIVER -1 DEADLETTER s`, "error: ERR MAXDELIVER must be a non-negative integer") // values first
	add(`XGROUP SETPOLICY nokey g MAXDELIVER -1`, "error: ERR MAXDELIVER must be a non-negative integer")
	// A failed SETPOLICY changes nothing.
	add(`XINFO GROUPS s`, "[map[consumers:0 entries-read:<nil> lag:1 last-delivered-id:0-0 name:g pending:0]]")
	// XGROUP CREATE takes the same options, among its own.
	add(`XGROUP CREATE s g2 $ ENTRIESREAD 1 MAXDELIVER 2 DEADLETTER dlq BACKOFF 10`, "OK")
	add(`XGROUP CREATE new g $ MKSTREAM ACKWAIT 50`, "OK")
	add(`XINFO GROUPS new`, "[map[ack-wait:50 backoff:[] consumers:0 dead-letter:<nil> dead-lettered:0 entries-read:<nil> lag:0 last-delivered-id:0-0 max-deliver:0 name:g pending:0]]")
	add(`XGROUP CREATE s g3 $ MAXDELIVER x`, "error: ERR MAXDELIVER must be a non-negative integer")
	add(`XGROUP CREATE s g3 $ MAXDELIVER`, "error: ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.")
	add(`XGROUP CREATE s g3 $ MKSTREAM ENTRIESREAD 1 MKSTREAM MAXDELIVER 1`, "error: ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.")
	add(`XGROUP CREATE s g3 $ DEADLETTER str`, "error: WRONGTYPE Operation against a key holding the wrong kind of value")
	add(`XGROUP CREATE made g $ MKSTREAM DEADLETTER made`, "error: ERR DEADLETTER key must be another key than the stream's")
	add(`EXISTS made`, "0") // refused before MKSTREAM made it
	add(`XGROUP CREATE s g2 $ MAXDELIVER 9`, "error: BUSYGROUP Consumer Group name already exists")
	add(`XINFO GROUPS s`, "[map[consumers:0 entries-read:<nil> lag:1 last-delivered-id:0-0 name:g pending:0] map[ack-wait:0 backoff:[10] consumers:0 dead-letter:dlq dead-lettered:0 entries-read:1 lag:0 last-delivered-id:1-0 max-deliver:2 name:g2 pending:0]]")
	dlRun(t, c, steps)

	// XINFO STREAM FULL shows the policy of g2 only.
	full, err := c.Do(ctx(t), "XINFO", "STREAM", "s", "FULL").Result()
	if err != nil {
		t.Fatal(err)
	}
	groups := fmt.Sprint(full.(map[any]any)["groups"])
	if strings.Count(groups, "max-deliver:2") != 1 || strings.Count(groups, "dead-letter:dlq") != 1 || strings.Count(groups, "max-deliver") != 1 {
		t.Errorf("XINFO STREAM FULL groups = %s", groups)
	}
	help := fmt.Sprint(c.Do(ctx(t), "XGROUP", "HELP").Val())
	if !strings.Contains(help, "SETPOLICY <key> <groupname> [MAXDELIVER n] [DEADLETTER key] [ACKWAIT ms] [BACKOFF ms[,ms...]]") {
		t.Errorf("XGROUP HELP lacks SETPOLICY: %s", help)
	}
	docs := fmt.Sprint(c.Do(ctx(t), "COMMAND", "DOCS", "XGROUP").Val())
	for _, want := range []string{"xgroup|setpolicy", "MAXDELIVER", "DEADLETTER", "ACKWAIT", "BACKOFF"} {
		if !strings.Contains(docs, want) {
			t.Errorf("COMMAND DOCS XGROUP lacks %s", want)
		}
	}
}

// dlSetup makes stream s with entries 1-0..n-0 (field n = i) and group g
// with the policy options given, read once by consumer c1.
func dlSetup(t *testing.T, c *redis.Client, n int, policy ...any) {
	t.Helper()
	for i := 1; i <= n; i++ {
		c.XAdd(ctx(t), &redis.XAddArgs{Stream: "s", ID: fmt.Sprintf("%d-0", i), Values: []string{"n", fmt.Sprint(i)}})
	}
	if err := c.Do(ctx(t), append([]any{"XGROUP", "CREATE", "s", "g", "0"}, policy...)...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.XReadGroup(ctx(t), &redis.XReadGroupArgs{Group: "g", Consumer: "c1", Streams: []string{"s", ">"}}).Err(); err != nil {
		t.Fatal(err)
	}
}

// dlLetters renders the dead-letter stream's entries, IDs left out.
func dlLetters(t *testing.T, c *redis.Client, key string) string {
	t.Helper()
	msgs, err := c.XRange(ctx(t), key, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		out = append(out, fmt.Sprint(m.Values))
	}
	return strings.Join(out, " ")
}

// dlLetter is what a dead-letter entry of s/g holds for entry i.
func dlLetter(i int, consumer string, deliveries int64, reason string) string {
	return fmt.Sprintf("map[consumer:%s deliveries:%d group:g id:%d-0 n:%d reason:%s stream:s]", consumer, deliveries, i, i, reason)
}

func dlGroupField(t *testing.T, c *redis.Client, field string) any {
	t.Helper()
	gs, err := c.Do(ctx(t), "XINFO", "GROUPS", "s").Slice()
	if err != nil || len(gs) != 1 {
		t.Fatalf("XINFO GROUPS = %v, %v", gs, err)
	}
	return gs[0].(map[any]any)[field]
}

func TestDeadLetterXClaim(t *testing.T) {
	t.Parallel()
	c := StartServer(t).Client(t)
	dlSetup(t, c, 3, "MAXDELIVER", "2", "DEADLETTER", "dlq")
	claim := func(consumer string, ids ...string) []redis.XMessage {
		t.Helper()
		ms, err := c.XClaim(ctx(t), &redis.XClaimArgs{Stream: "s", Group: "g", Consumer: consumer, Messages: ids}).Result()
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	if ms := claim("c2", "1-0", "2-0"); len(ms) != 2 { // the second delivery: allowed
		t.Fatalf("first claim = %v", ms)
	}
	// The third would pass MAXDELIVER 2: 1-0 and 2-0 go to dlq instead;
	// 3-0 (delivered once) is claimed.
	if ms := claim("c3", "1-0", "2-0", "3-0"); len(ms) != 1 || ms[0].ID != "3-0" {
		t.Fatalf("capped claim = %v", ms)
	}
	if got, want := dlLetters(t, c, "dlq"), dlLetter(1, "c2", 2, "maxdeliver")+" "+dlLetter(2, "c2", 2, "maxdeliver"); got != want {
		t.Fatalf("dlq = %s\nwant %s", got, want)
	}
	// The field order: the metadata, then the original pairs.
	raw, _ := c.Do(ctx(t), "XRANGE", "dlq", "-", "+", "COUNT", "1").Slice()
	if got := fmt.Sprint(raw[0].([]any)[1]); got != "[stream s id 1-0 group g consumer c2 deliveries 2 reason maxdeliver n 1]" {
		t.Errorf("dead-letter entry layout %s", got)
	}
	if p := c.XPending(ctx(t), "s", "g").Val(); p.Count != 1 || p.Lower != "3-0" {
		t.Errorf("XPENDING = %+v", p)
	}
	if n := dlGroupField(t, c, "dead-lettered"); n != int64(2) {
		t.Errorf("dead-lettered = %v", n)
	}
	if !strings.Contains(c.Info(ctx(t), "stats").Val(), "stream_dead_letters:2\r\n") {
		t.Error("INFO stats stream_dead_letters is not 2")
	}
	// JUSTID does not count a delivery, RETRYCOUNT sets the count: neither
	// is capped.
	if ids := c.XClaimJustID(ctx(t), &redis.XClaimArgs{Stream: "s", Group: "g", Consumer: "c4", Messages: []string{"3-0"}}).Val(); len(ids) != 1 {
		t.Errorf("XCLAIM JUSTID = %v", ids)
	}
	c.Do(ctx(t), "XCLAIM", "s", "g", "c4", "0", "3-0", "RETRYCOUNT", "2")
	if r := c.Do(ctx(t), "XCLAIM", "s", "g", "c5", "0", "3-0", "RETRYCOUNT", "7").Val(); len(r.([]any)) != 1 {
		t.Errorf("XCLAIM RETRYCOUNT at the cap = %v", r)
	}
	if p := c.XPendingExt(ctx(t), &redis.XPendingExtArgs{Stream: "s", Group: "g", Start: "-", End: "+", Count: 10}).Val(); len(p) != 1 || p[0].RetryCount != 7 {
		t.Errorf("XPENDING after RETRYCOUNT = %+v", p)
	}
	// Without JUSTID it is a delivery again: capped.
	if ms := claim("c6", "3-0"); len(ms) != 0 {
		t.Errorf("claim past the cap = %v", ms)
	}
	if got := dlLetters(t, c, "dlq"); !strings.HasSuffix(got, dlLetter(3, "c5", 7, "maxdeliver")) {
		t.Errorf("dlq = %s", got)
	}
}

func TestDeadLetterXAutoClaim(t *testing.T) {
	t.Parallel()
	c := StartServer(t).Client(t)
	dlSetup(t, c, 4, "MAXDELIVER", "1", "DEADLETTER", "dlq")
	c.Do(ctx(t), "XCLAIM", "s", "g", "c1", "0", "4-0", "RETRYCOUNT", "0")
	// JUSTID is not a delivery: not capped.
	ids, _, err := c.XAutoClaimJustID(ctx(t), &redis.XAutoClaimArgs{Stream: "s", Group: "g", Consumer: "c2", Start: "0", Count: 10}).Result()
	if err != nil || len(ids) != 4 {
		t.Fatalf("XAUTOCLAIM JUSTID = %v %v", ids, err)
	}
	ms, _, err := c.XAutoClaim(ctx(t), &redis.XAutoClaimArgs{Stream: "s", Group: "g", Consumer: "c3", Start: "0", Count: 10}).Result()
	if err != nil || len(ms) != 1 || ms[0].ID != "4-0" {
		t.Fatalf("XAUTOCLAIM = %v %v", ms, err)
	}
	want := dlLetter(1, "c2", 1, "maxdeliver") + " " + dlLetter(2, "c2", 1, "maxdeliver") + " " + dlLetter(3, "c2", 1, "maxdeliver")
	if got := dlLetters(t, c, "dlq"); got != want {
		t.Fatalf("dlq = %s\nwant %s", got, want)
	}
	// The reply's third element is for entries deleted from the stream;
	// dead letters are in neither list.
	r := c.Do(ctx(t), "XAUTOCLAIM", "s", "g", "c4", "0", "0").Val().([]any)
	if len(r[1].([]any)) != 0 || len(r[2].([]any)) != 0 {
		t.Errorf("XAUTOCLAIM after the cap = %v", r)
	}
	if c.XLen(ctx(t), "dlq").Val() != 4 || c.XPending(ctx(t), "s", "g").Val().Count != 0 {
		t.Errorf("4-0 not dead-lettered: dlq %s", dlLetters(t, c, "dlq"))
	}
}

func TestDeadLetterXReadGroupClaimAndHistory(t *testing.T) {
	t.Parallel()
	c := StartServer(t).Client(t)
	dlSetup(t, c, 2, "MAXDELIVER", "2", "DEADLETTER", "dlq")
	readClaim := func() any {
		return c.Do(ctx(t), "XREADGROUP", "GROUP", "g", "c2", "CLAIM", "0", "STREAMS", "s", ">").Val()
	}
	if r := fmt.Sprint(readClaim()); !strings.Contains(r, "1-0") || !strings.Contains(r, "2-0") {
		t.Fatalf("second delivery by CLAIM = %s", r)
	}
	// A history read counts as a delivery too: the third one, capped.
	// Only 2-0 is asked for; 1-0 is left.
	r, err := c.Do(ctx(t), "XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", "1-0").Result()
	if err != nil || fmt.Sprint(r) != "map[s:[]]" {
		t.Fatalf("history read at the cap = %v %v", r, err)
	}
	if got := dlLetters(t, c, "dlq"); got != dlLetter(2, "c2", 2, "maxdeliver") {
		t.Fatalf("dlq = %s", got)
	}
	// CLAIM finds only 1-0, at its cap: dead-lettered, nothing to answer.
	if r := readClaim(); r != nil {
		t.Fatalf("CLAIM of an entry at the cap = %v", r)
	}
	if got := dlLetters(t, c, "dlq"); got != dlLetter(2, "c2", 2, "maxdeliver")+" "+dlLetter(1, "c2", 2, "maxdeliver") {
		t.Fatalf("dlq = %s", got)
	}
	// A blocked CLAIM reader that finds only entries at the cap moves
	// them and keeps waiting, until a new entry comes.
	c.XAdd(ctx(t), &redis.XAddArgs{Stream: "s", ID: "3-0", Values: []string{"n", "3"}})
	c.Do(ctx(t), "XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
	c.Do(ctx(t), "XCLAIM", "s", "g", "c1", "0", "3-0", "RETRYCOUNT", "2")
	got := make(chan string, 1)
	go func() {
		r, err := c.Do(ctx(t), "XREADGROUP", "GROUP", "g", "c3", "BLOCK", "0", "CLAIM", "0", "STREAMS", "s", ">").Result()
		got <- fmt.Sprint(r, err)
	}()
	bbWaitFor(t, 10*time.Second, "3-0 dead-lettered", func() bool { return c.XLen(ctx(t), "dlq").Val() == 3 })
	waitBlockedClients(t, c, 1)
	c.XAdd(ctx(t), &redis.XAddArgs{Stream: "s", ID: "4-0", Values: []string{"n", "4"}})
	if r := <-got; !strings.Contains(r, "4-0") || strings.Contains(r, "3-0") {
		t.Fatalf("blocked CLAIM reader got %s", r)
	}
}

// waitBlockedClients polls INFO clients until n clients are blocked.
func waitBlockedClients(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	want := fmt.Sprintf("blocked_clients:%d\r\n", n)
	bbWaitFor(t, 10*time.Second, want, func() bool { return strings.Contains(c.Info(ctx(t), "clients").Val(), want) })
}

func TestDeadLetterXNackFatal(t *testing.T) {
	t.Parallel()
	c := StartServer(t).Client(t)
	dlSetup(t, c, 4, "DEADLETTER", "dlq") // no cap: only FATAL dead-letters
	c.XDel(ctx(t), "s", "2-0")
	dlRun(t, c, []dlStep{
		{dlArgs("XNACK s g FATAL IDS 2 1-0 2-0"), "2"},
		{dlArgs("XNACK s g FAIL IDS 1 3-0"), "1"}, // FAIL releases, as before
		{dlArgs("XNACK s g FATAL IDS 1 9-0"), "0"},
		{dlArgs("XADD s 5-0 n 5"), "5-0"},
		{dlArgs("XNACK s g FATAL IDS 1 5-0 FORCE"), "1"}, // never delivered: 0 deliveries
		{dlArgs("XPENDING s g"), "[2 3-0 4-0 [[c1 1]]]"},
	})
	// 2-0 was deleted from the stream: its dead letter has the metadata
	// alone.
	want := dlLetter(1, "c1", 1, "fatal") + " map[consumer:c1 deliveries:1 group:g id:2-0 reason:fatal stream:s] " +
		"map[consumer: deliveries:0 group:g id:5-0 n:5 reason:fatal stream:s]"
	if got := dlLetters(t, c, "dlq"); got != want {
		t.Fatalf("dlq = %s\nwant %s", got, want)
	}
	// Without a dead-letter stream, FATAL releases as Redis 8.8 does.
	c.Do(ctx(t), "XGROUP", "SETPOLICY", "s", "g", "DEADLETTER", "")
	dlRun(t, c, []dlStep{
		{dlArgs("XNACK s g FATAL IDS 1 4-0"), "1"},
		{dlArgs("XPENDING s g - + 10"), "[[3-0  -1 1] [4-0  -1 9223372036854775807]]"},
	})
}

// Without a dead-letter key the entries are only dropped from the PEL,
// and counted.
func TestDeadLetterWithoutKeyDrops(t *testing.T) {
	t.Parallel()
	c := StartServer(t).Client(t)
	dlSetup(t, c, 2, "MAXDELIVER", "1")
	if ms := c.XClaim(ctx(t), &redis.XClaimArgs{Stream: "s", Group: "g", Consumer: "c2", Messages: []string{"1-0", "2-0"}}).Val(); len(ms) != 0 {
		t.Fatalf("XCLAIM past the cap = %v", ms)
	}
	if p := c.XPending(ctx(t), "s", "g").Val(); p.Count != 0 || dlGroupField(t, c, "dead-lettered") != int64(2) {
		t.Fatalf("XPENDING %+v, dead-lettered %v", p, dlGroupField(t, c, "dead-lettered"))
	}
	if c.XLen(ctx(t), "s").Val() != 2 || c.Exists(ctx(t), "dlq").Val() != 0 {
		t.Fatal("the entries must stay in the stream, and no dead-letter stream be made")
	}
}

// A dead-letter key that comes to hold another type keeps the entry
// pending, undelivered and counted as a failure, until the key is fixed.
func TestDeadLetterKeyOfAnotherType(t *testing.T) {
	t.Parallel()
	c := StartServer(t).Client(t)
	dlSetup(t, c, 1, "MAXDELIVER", "1", "DEADLETTER", "dlq")
	c.Set(ctx(t), "dlq", "not a stream", 0)
	claim := func() []redis.XMessage {
		return c.XClaim(ctx(t), &redis.XClaimArgs{Stream: "s", Group: "g", Consumer: "c2", Messages: []string{"1-0"}}).Val()
	}
	if ms := claim(); len(ms) != 0 {
		t.Fatalf("claimed past the cap: %v", ms)
	}
	pe := c.XPendingExt(ctx(t), &redis.XPendingExtArgs{Stream: "s", Group: "g", Start: "-", End: "+", Count: 10}).Val()
	if len(pe) != 1 || pe[0].Consumer != "c1" || pe[0].RetryCount != 1 {
		t.Fatalf("the entry must stay pending as it was: %+v", pe)
	}
	if !strings.Contains(c.Info(ctx(t), "stats").Val(), "stream_dead_letter_failures:1\r\n") {
		t.Error("INFO stats stream_dead_letter_failures is not 1")
	}
	if c.Get(ctx(t), "dlq").Val() != "not a stream" {
		t.Fatal("the string was touched")
	}
	c.Del(ctx(t), "dlq")
	if ms := claim(); len(ms) != 0 || dlLetters(t, c, "dlq") != dlLetter(1, "c1", 1, "maxdeliver") {
		t.Fatalf("after the fix: claimed %v, dlq %s", ms, dlLetters(t, c, "dlq"))
	}
	// RENAME can make the stream its own dead-letter key: refused too.
	c.XAdd(ctx(t), &redis.XAddArgs{Stream: "s2", ID: "1-0", Values: []string{"n", "1"}})
	c.Do(ctx(t), "XGROUP", "CREATE", "s2", "g", "0", "MAXDELIVER", "1", "DEADLETTER", "s3")
	c.XReadGroup(ctx(t), &redis.XReadGroupArgs{Group: "g", Consumer: "c1", Streams: []string{"s2", ">"}})
	c.Rename(ctx(t), "s2", "s3")
	c.XClaim(ctx(t), &redis.XClaimArgs{Stream: "s3", Group: "g", Consumer: "c2", Messages: []string{"1-0"}})
	if c.XLen(ctx(t), "s3").Val() != 1 || c.XPending(ctx(t), "s3", "g").Val().Count != 1 {
		t.Fatal("a stream that became its own dead-letter key took its dead letter")
	}
}

// A reader blocked on the dead-letter stream is woken by a dead letter.
func TestDeadLetterWakesReaders(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	c := s.Client(t)
	dlSetup(t, c, 1, "MAXDELIVER", "1", "DEADLETTER", "dlq")
	c.XAdd(ctx(t), &redis.XAddArgs{Stream: "dlq", ID: "1-0", Values: []string{"seed", "1"}})
	reader := s.Client(t)
	got := make(chan []redis.XStream, 1)
	go func() {
		got <- reader.XRead(ctx(t), &redis.XReadArgs{Streams: []string{"dlq", "$"}, Block: 0}).Val()
	}()
	waitBlockedClients(t, c, 1)
	c.XClaim(ctx(t), &redis.XClaimArgs{Stream: "s", Group: "g", Consumer: "c2", Messages: []string{"1-0"}})
	r := <-got
	if len(r) != 1 || len(r[0].Messages) != 1 || r[0].Messages[0].Values["id"] != "1-0" {
		t.Fatalf("blocked XREAD got %v", r)
	}
}

// dlSeed builds a group with a policy that has dead-lettered entries (by
// XCLAIM past the cap and by XNACK FATAL) and a group without one.
func dlSeed(t *testing.T, raw *RawConn) {
	t.Helper()
	for _, line := range []string{
		"XADD s 1-0 n 1", "XADD s 2-0 n 2", "XADD s 3-0 n 3", "XADD s 4-0 n 4",
		"XGROUP CREATE s g 0 MAXDELIVER 2 DEADLETTER dlq ACKWAIT 500 BACKOFF 10,20",
		"XGROUP CREATE s plain 0",
		"XGROUP SETPOLICY s g BACKOFF 10,20,40",
		"XREADGROUP GROUP g c1 STREAMS s >",
		"XREADGROUP GROUP plain c1 COUNT 1 STREAMS s >",
		"XCLAIM s g c2 0 1-0 2-0",
		"XCLAIM s g c3 0 1-0 2-0 4-0",
		"XNACK s g FATAL IDS 1 3-0",
	} {
		if r := raw.Do(bbSplit(line)...); r.Type == '-' {
			t.Fatalf("%s: %s", line, r)
		}
	}
}

// dlState renders everything a restart must keep: the stream with its
// groups (policy included), and the dead-letter stream.
func dlState(t *testing.T, raw *RawConn) string {
	t.Helper()
	return raw.Do("XINFO", "STREAM", "s", "FULL").String() + "\n" + raw.Do("XRANGE", "dlq", "-", "+").String()
}

func TestDeadLetterPersists(t *testing.T) {
	t.Parallel()
	restart := map[string]func(t *testing.T, raw *RawConn){
		"aof": func(*testing.T, *RawConn) {}, // replays SETPOLICY, XCLAIM and XNACK
		"rdb": func(t *testing.T, raw *RawConn) {
			if r := raw.Do("SAVE"); r.Type == '-' {
				t.Fatal(r)
			}
		},
		"rewrite": func(t *testing.T, raw *RawConn) {
			if r := raw.Do("BGREWRITEAOF"); r.Type == '-' {
				t.Fatal(r)
			}
			waitInfo(t, raw, "persistence", "aof_rewrite_in_progress", "0")
		},
	}
	for name, persist := range restart {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := []string{"--appendonly", "yes"}
			if name == "rdb" {
				args = []string{"--appendonly", "no", "--save", ""}
			}
			s := StartServerIn(t, dir, args...)
			raw := s.Raw(t)
			dlSeed(t, raw)
			persist(t, raw)
			want := dlState(t, raw)
			if !strings.Contains(want, `$"dead-lettered" :3`) || !strings.Contains(want, `$"max-deliver" :2`) {
				t.Fatalf("seed state lacks the policy: %s", want)
			}
			s.Stop()
			raw = StartServerIn(t, dir, args...).Raw(t)
			if got := dlState(t, raw); got != want {
				t.Fatalf("after a restart\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

// DUMP/RESTORE and COPY carry the policy and the count.
func TestDeadLetterPolicyTravels(t *testing.T) {
	t.Parallel()
	raw := StartServer(t).Raw(t)
	dlSeed(t, raw)
	want := raw.Do("XINFO", "GROUPS", "s").String()
	dump := raw.Do("DUMP", "s")
	bbRun(t, raw, []bbStep{
		{"COPY s copied", ":1"},
	})
	if r := raw.Do("RESTORE", "restored", "0", dump.Str); r.Type == '-' {
		t.Fatal(r)
	}
	for _, key := range []string{"copied", "restored"} {
		if got := raw.Do("XINFO", "GROUPS", key).String(); got != want {
			t.Errorf("%s: XINFO GROUPS\n got: %s\nwant: %s", key, got, want)
		}
	}
}
