package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Age retention (issue 15 §4): XCFGSET key MAXAGE ms [KEEPREF|DELREF|ACKED].
// Entries are given explicit IDs far in the past (an hour ago) or near
// now, so which are too old never depends on how fast the machine is.

const hourMs = int64(time.Hour / time.Millisecond)

// oldID is an entry ID i ms past the hour before now: too old for any
// MAXAGE below an hour.
func oldID(i int) string { return fmt.Sprintf("%d-0", time.Now().UnixMilli()-2*hourMs+int64(i)) }

// xinfoFields returns XINFO STREAM [FULL]'s reply as a map (RESP2 or RESP3).
func xinfoFields(t *testing.T, c *redis.Client, args ...any) map[string]any {
	t.Helper()
	v, err := c.Do(ctx(t), append([]any{"XINFO", "STREAM"}, args...)...).Result()
	if err != nil {
		t.Fatalf("XINFO STREAM %v: %v", args, err)
	}
	out := map[string]any{}
	switch v := v.(type) {
	case map[any]any:
		for k, x := range v {
			out[k.(string)] = x
		}
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			out[v[i].(string)] = v[i+1]
		}
	default:
		t.Fatalf("XINFO STREAM = %T %v", v, v)
	}
	return out
}

func mustDo(t *testing.T, c *redis.Client, args ...any) any {
	t.Helper()
	v, err := c.Do(ctx(t), args...).Result()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

func xlen(t *testing.T, c *redis.Client, key string) int64 {
	t.Helper()
	n, err := c.XLen(ctx(t), key).Result()
	if err != nil {
		t.Fatalf("XLEN %s: %v", key, err)
	}
	return n
}

// waitLen polls until key holds want entries (the sweeper's work), within
// a bound far above the second it should take.
func waitLen(t *testing.T, c *redis.Client, key string, want int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := xlen(t, c, key)
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still holds %d entries after 30s, want %d", key, n, want)
		}
		time.Sleep(10 * time.Millisecond) // polling what the server's cron changes
	}
}

func TestMaxAgeOptionsAndErrors(t *testing.T) {
	s := StartServer(t)
	for _, c := range []*redis.Client{s.Client(t), s.Client2(t)} {
		c.Del(ctx(t), "s", "str")
		mustDo(t, c, "XADD", "s", "*", "f", "v")
		mustDo(t, c, "SET", "str", "x")
		for _, tc := range []struct {
			args []any
			err  string
		}{
			{[]any{"missing", "MAXAGE", "10"}, "ERR no such key"},
			{[]any{"missing", "MAXAGE", "-1"}, "ERR MAXAGE must be between 0 and 9223372036854775807 milliseconds"}, // options first, as XCFGSET's own
			{[]any{"str", "MAXAGE", "10"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
			{[]any{"s", "MAXAGE"}, "ERR syntax error"},
			{[]any{"s", "MAXAGE", "abc"}, "ERR value is not an integer or out of range"},
			{[]any{"s", "MAXAGE", "9223372036854775808"}, "ERR value is not an integer or out of range"},
			{[]any{"s", "MAXAGE", "-1"}, "ERR MAXAGE must be between 0 and 9223372036854775807 milliseconds"},
			{[]any{"s", "ACKED"}, "ERR syntax error"},
			{[]any{"s", "MAXAGE", "10", "ACKED", "DELREF"}, "ERR syntax error"},
			{[]any{"s", "MAXAGE", "10", "OLDEST"}, "ERR syntax error"},
			{[]any{"s", "IDMP-DURATION", "0", "MAXAGE", "10"}, "ERR IDMP-DURATION must be between 1 and 86400 seconds"},
			{[]any{"s", "MAXAGE", "10", "IDMP-MAXSIZE", "0"}, "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"},
		} {
			err := c.Do(ctx(t), append([]any{"XCFGSET"}, tc.args...)...).Err()
			if err == nil || err.Error() != tc.err {
				t.Errorf("XCFGSET %v = %v, want %q", tc.args, err, tc.err)
			}
		}
		// A failed XCFGSET changed nothing; a plain stream's XINFO is Redis's.
		plain := xinfoFields(t, c, "s")
		if _, ok := plain["max-age"]; ok || len(plain) != 16 {
			t.Fatalf("XINFO STREAM of a stream without MAXAGE has %d fields: %v", len(plain), plain)
		}
		if full := xinfoFields(t, c, "s", "FULL"); len(full) != 15 {
			t.Fatalf("XINFO STREAM FULL without MAXAGE has %d fields", len(full))
		}

		// Every mode, combined with the IDMP options in one call, any case.
		for _, mode := range []string{"", "keepref", "DELREF", "Acked"} {
			args := []any{"XCFGSET", "s", "IDMP-DURATION", "5", "maxage", "60000"}
			if mode != "" {
				args = append(args, mode)
			}
			args = append(args, "IDMP-MAXSIZE", "7")
			if v := mustDo(t, c, args...); v != "OK" {
				t.Fatalf("%v = %v", args, v)
			}
			want := strings.ToLower(mode)
			if want == "" {
				want = "keepref" // XTRIM's default
			}
			for _, full := range []bool{false, true} {
				var info map[string]any
				if full {
					info = xinfoFields(t, c, "s", "FULL")
				} else {
					info = xinfoFields(t, c, "s")
				}
				if info["max-age"] != int64(60000) || info["max-age-mode"] != want || info["idmp-duration"] != int64(5) || info["idmp-maxsize"] != int64(7) {
					t.Fatalf("after %v (full %v): XINFO STREAM %v", args, full, info)
				}
			}
		}
		// The largest MAXAGE is taken; MAXAGE 0 turns retention off and
		// XINFO is Redis's again.
		mustDo(t, c, "XCFGSET", "s", "MAXAGE", "9223372036854775807")
		if info := xinfoFields(t, c, "s"); info["max-age"] != int64(9223372036854775807) || info["max-age-mode"] != "keepref" {
			t.Fatalf("XINFO STREAM after the largest MAXAGE: %v", info)
		}
		mustDo(t, c, "XCFGSET", "s", "MAXAGE", "0")
		if info := xinfoFields(t, c, "s"); len(info) != 16 {
			t.Fatalf("XINFO STREAM after MAXAGE 0: %v", info)
		}
	}
}

// TestMaxAgeXAddTrims: XADD trims by the age limit at its record time.
// XCFGSET, XADD and XLEN run in one MULTI, so the sweeper cannot have
// done the trim.
func TestMaxAgeXAddTrims(t *testing.T) {
	s := StartServer(t)
	c := s.Client(t)
	for i := range 5 {
		mustDo(t, c, "XADD", "s", oldID(i), "n", i)
	}
	young := fmt.Sprintf("%d-0", time.Now().UnixMilli()-1000) // a second old: within a minute
	mustDo(t, c, "XADD", "s", young, "n", "young")
	var xl *redis.IntCmd
	_, err := c.TxPipelined(ctx(t), func(p redis.Pipeliner) error {
		p.Do(ctx(t), "XCFGSET", "s", "MAXAGE", "60000")
		p.Do(ctx(t), "XADD", "s", "*", "n", "new")
		xl = p.XLen(ctx(t), "s")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if xl.Val() != 2 {
		t.Fatalf("XLEN right after the XADD = %d, want 2 (the young entry and the new one)", xl.Val())
	}
	first := c.XRange(ctx(t), "s", "-", "+").Val()[0]
	if first.ID != young {
		t.Fatalf("first entry %s, want %s", first.ID, young)
	}
	// XADD's own MAXLEN works beside the age limit.
	mustDo(t, c, "XADD", "s", "MAXLEN", "1", "*", "n", "last")
	if n := xlen(t, c, "s"); n != 1 {
		t.Fatalf("XLEN after XADD MAXLEN 1 = %d", n)
	}
}

// groupedStream makes key with six old entries and a group g: entries 0
// and 1 delivered and acked, 2 and 3 delivered and pending, 4 and 5 not
// delivered. It returns the IDs.
func groupedStream(t *testing.T, c *redis.Client, key string) []string {
	t.Helper()
	var ids []string
	for i := range 6 {
		ids = append(ids, mustDo(t, c, "XADD", key, oldID(i), "n", i).(string))
	}
	mustDo(t, c, "XGROUP", "CREATE", key, "g", "0")
	c.XReadGroup(ctx(t), &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{key, ">"}, Count: 4})
	c.XAck(ctx(t), key, "g", ids[0], ids[1])
	return ids
}

func remainingIDs(t *testing.T, c *redis.Client, key string) []string {
	t.Helper()
	var out []string
	for _, m := range c.XRange(ctx(t), key, "-", "+").Val() {
		out = append(out, m.ID)
	}
	return out
}

func pendingCount(t *testing.T, c *redis.Client, key string) int64 {
	t.Helper()
	p, err := c.XPending(ctx(t), key, "g").Result()
	if err != nil {
		t.Fatal(err)
	}
	return p.Count
}

// The three modes with a consumer group, through XADD's trim and through
// the sweeper's.
func TestMaxAgeModesWithGroup(t *testing.T) {
	s := StartServer(t)
	c := s.Client(t)
	for _, tc := range []struct {
		mode    string
		left    []int // indexes of the old entries kept
		pending int64
	}{
		{"KEEPREF", nil, 2},
		{"DELREF", nil, 0},
		{"ACKED", []int{2, 3, 4, 5}, 2},
	} {
		for _, by := range []string{"xadd", "sweeper"} {
			key := tc.mode + ":" + by
			ids := groupedStream(t, c, key)
			want := []string{}
			for _, i := range tc.left {
				want = append(want, ids[i])
			}
			if by == "xadd" {
				_, err := c.TxPipelined(ctx(t), func(p redis.Pipeliner) error {
					p.Do(ctx(t), "XCFGSET", key, "MAXAGE", "60000", tc.mode)
					want = append(want, "")
					p.Do(ctx(t), "XADD", key, "*", "n", "new")
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			} else {
				mustDo(t, c, "XCFGSET", key, "MAXAGE", "60000", tc.mode)
				waitLen(t, c, key, int64(len(want)))
			}
			got := remainingIDs(t, c, key)
			if len(got) != len(want) {
				t.Fatalf("%s: entries left %v, want %v (and the new one when by XADD)", key, got, want)
			}
			for i := range want {
				if want[i] != "" && got[i] != want[i] {
					t.Fatalf("%s: entries left %v, want %v", key, got, want)
				}
			}
			if n := pendingCount(t, c, key); n != tc.pending {
				t.Fatalf("%s: %d pending, want %d", key, n, tc.pending)
			}
		}
	}
	// Under ACKED, entries leave once the group is done with them: read
	// and ack the rest, and the sweeper (nobody writes) removes them.
	key := "ACKED:sweeper"
	c.XReadGroup(ctx(t), &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{key, ">"}})
	for _, id := range remainingIDs(t, c, key) {
		c.XAck(ctx(t), key, "g", id)
	}
	waitLen(t, c, key, 0)
}

// TestMaxAgeSweeperIdle: nobody writes; the sweeper trims what passes
// its age, in bounded steps, over many streams.
func TestMaxAgeSweeperIdle(t *testing.T) {
	s := StartServer(t)
	c := s.Client(t)

	// One entry passing an age of 200 ms while nobody writes.
	added := time.Now()
	mustDo(t, c, "XADD", "fresh", "*", "f", "v")
	mustDo(t, c, "XCFGSET", "fresh", "MAXAGE", "200")
	waitLen(t, c, "fresh", 0)
	t.Logf("an entry with MAXAGE 200 ms was gone %v after it was added", time.Since(added).Round(time.Millisecond))

	// More old entries than one tick may trim (10000): several ticks.
	const many = 25_000
	p := c.Pipeline()
	base := time.Now().UnixMilli() - 2*hourMs
	for i := range many {
		p.Do(ctx(t), "XADD", "big", fmt.Sprintf("%d-%d", base, i+1), "f", "v")
	}
	p.Do(ctx(t), "XADD", "big", "*", "f", "young")
	if _, err := p.Exec(ctx(t)); err != nil {
		t.Fatal(err)
	}
	mustDo(t, c, "XCFGSET", "big", "MAXAGE", "60000")
	waitLen(t, c, "big", 1)

	// More streams than one tick looks at (100), in two databases: the
	// sweeper goes round them all.
	c1 := s.Client(t, func(o *redis.Options) { o.DB = 1 })
	for i := range 250 {
		cl := c
		if i%2 == 1 {
			cl = c1
		}
		key := fmt.Sprintf("s%03d", i)
		mustDo(t, cl, "XADD", key, oldID(0), "f", "v")
		mustDo(t, cl, "XCFGSET", key, "MAXAGE", "60000")
	}
	for i := range 250 {
		cl := c
		if i%2 == 1 {
			cl = c1
		}
		waitLen(t, cl, fmt.Sprintf("s%03d", i), 0)
	}
}

// witnessSweep waits until the sweeper has been round the streams of db
// 0 at least once after now: it makes a witness stream with an old entry
// and waits for the entry to go.
func witnessSweep(t *testing.T, c *redis.Client) {
	t.Helper()
	c.Del(ctx(t), "witness")
	mustDo(t, c, "XADD", "witness", oldID(0), "f", "v")
	mustDo(t, c, "XADD", "witness", "*", "f", "v")
	mustDo(t, c, "XCFGSET", "witness", "MAXAGE", "60000")
	waitLen(t, c, "witness", 1)
}

// The set of streams with an age limit follows keys wherever they go, and
// forgets them when they go: DEL, FLUSHALL, replacement.
func TestMaxAgeFollowsKeys(t *testing.T) {
	s := StartServer(t)
	c := s.Client(t)
	// Each key gets an old entry that ACKED keeps while the group has not
	// read it; once it is read and acked, only the sweeper can remove it.
	setup := func(key string) {
		c.Del(ctx(t), key)
		mustDo(t, c, "XADD", key, oldID(0), "f", "v")
		mustDo(t, c, "XGROUP", "CREATE", key, "g", "0")
		mustDo(t, c, "XCFGSET", key, "MAXAGE", "60000", "ACKED")
	}
	release := func(cl *redis.Client, key string) {
		res := cl.XReadGroup(ctx(t), &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{key, ">"}}).Val()
		for _, m := range res[0].Messages {
			cl.XAck(ctx(t), key, "g", m.ID)
		}
	}

	setup("a")
	mustDo(t, c, "RENAME", "a", "renamed")
	release(c, "renamed")
	waitLen(t, c, "renamed", 0)

	setup("b")
	mustDo(t, c, "COPY", "b", "copied")
	mustDo(t, c, "COPY", "b", "other-db", "DB", "1")
	c1 := s.Client(t, func(o *redis.Options) { o.DB = 1 })
	release(c, "copied")
	release(c1, "other-db")
	waitLen(t, c, "copied", 0)
	waitLen(t, c1, "other-db", 0)
	if n := xlen(t, c, "b"); n != 1 {
		t.Fatalf("the COPY source lost its entry: XLEN %d", n)
	}

	setup("d")
	dump := mustDo(t, c, "DUMP", "d").(string)
	mustDo(t, c, "RESTORE", "restored", "0", dump)
	if info := xinfoFields(t, c, "restored"); info["max-age"] != int64(60000) || info["max-age-mode"] != "acked" {
		t.Fatalf("XINFO STREAM after RESTORE: %v", info)
	}
	release(c, "restored")
	waitLen(t, c, "restored", 0)

	// Gone or replaced: a new stream at the key has no age limit.
	for _, drop := range []func(key string){
		func(key string) { c.Del(ctx(t), key) },
		func(key string) { c.FlushAll(ctx(t)) },
		func(key string) { mustDo(t, c, "RESTORE", key, "0", dump, "REPLACE") }, // replaced by a value ...
	} {
		setup("k")
		drop("k")
		c.Del(ctx(t), "k")
		mustDo(t, c, "XADD", "k", oldID(0), "f", "v") // ... then a plain stream again
		witnessSweep(t, c)
		if n := xlen(t, c, "k"); n != 1 {
			t.Fatalf("a stream without MAXAGE lost its old entry: XLEN %d", n)
		}
	}
}

// Age limits survive a restart from the AOF and from an RDB file, and the
// restarted server sweeps those streams; AOF replay reaches the state the
// live server had.
func TestMaxAgePersistence(t *testing.T) {
	for _, kind := range []string{"aof", "rdb"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{}
			if kind == "rdb" {
				args = []string{"--appendonly", "no", "--save", ""}
			}
			s := StartServerIn(t, dir, args...)
			c := s.Client(t)
			// Trimmed while live: by XADD and by the sweeper.
			for i := range 3 {
				mustDo(t, c, "XADD", "live", oldID(i), "n", i)
			}
			mustDo(t, c, "XADD", "live", "*", "n", "young")
			mustDo(t, c, "XCFGSET", "live", "MAXAGE", "60000", "DELREF")
			waitLen(t, c, "live", 1)
			mustDo(t, c, "XADD", "live", "*", "n", "young2")
			// Kept while live (ACKED: the group has not read it).
			mustDo(t, c, "XADD", "held", oldID(0), "f", "v")
			mustDo(t, c, "XGROUP", "CREATE", "held", "g", "0")
			mustDo(t, c, "XCFGSET", "held", "MAXAGE", "60000", "ACKED")
			before := remainingIDs(t, c, "live")
			if kind == "rdb" {
				mustDo(t, c, "SAVE")
			}
			s.Stop()

			s = StartServerIn(t, dir, args...)
			c = s.Client(t)
			if got := remainingIDs(t, c, "live"); strings.Join(got, ",") != strings.Join(before, ",") {
				t.Fatalf("after restart live holds %v, before %v", got, before)
			}
			for key, mode := range map[string]string{"live": "delref", "held": "acked"} {
				if info := xinfoFields(t, c, key); info["max-age"] != int64(60000) || info["max-age-mode"] != mode {
					t.Fatalf("%s after restart: XINFO STREAM %v", key, info)
				}
			}
			if n := xlen(t, c, "held"); n != 1 {
				t.Fatalf("held: XLEN %d after restart, want 1", n)
			}
			res := c.XReadGroup(ctx(t), &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"held", ">"}}).Val()
			c.XAck(ctx(t), "held", "g", res[0].Messages[0].ID)
			waitLen(t, c, "held", 0) // the restarted server's sweeper knows the stream
		})
	}
}

// TestMaxAgeInInfo: INFO stats counts the streams the age sweeper
// watches; a deleted stream leaves the count.
func TestMaxAgeInInfo(t *testing.T) {
	t.Parallel()
	cl := StartServer(t).Client(t)
	c := ctx(t)
	watched := func() string {
		for _, line := range strings.Split(cl.Info(c, "stats").Val(), "\r\n") {
			if v, ok := strings.CutPrefix(line, "stream_age_watched:"); ok {
				return v
			}
		}
		return "missing"
	}
	if got := watched(); got != "0" {
		t.Fatalf("stream_age_watched = %s before any limit", got)
	}
	for _, k := range []string{"a", "b"} {
		cl.XAdd(c, &redis.XAddArgs{Stream: k, Values: []string{"f", "v"}})
		if err := cl.Do(c, "XCFGSET", k, "MAXAGE", "60000").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if got := watched(); got != "2" {
		t.Fatalf("stream_age_watched = %s with two limits", got)
	}
	cl.Del(c, "a")
	if got := watched(); got != "1" {
		t.Fatalf("stream_age_watched = %s after deleting one", got)
	}
}
