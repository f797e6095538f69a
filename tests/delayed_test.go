package tests

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Delayed stream entries (issue 15, section 3): XADD … DELAY ms | AT
// unix-ms stores an entry at once under an ID reserved for its due time,
// invisible to every read until then, and appends it with that ID when
// due; XRELEASE key appends what is due (the server runs it by itself).

// idMs returns the milliseconds part of a stream ID.
func idMs(t testing.TB, id string) int64 {
	t.Helper()
	ms, _, ok := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil {
		t.Fatalf("not a stream ID: %q", id)
	}
	return n
}

// xinfoField returns one field of XINFO STREAM, and whether it is there.
func xinfoField(t testing.TB, c *redis.Client, key, field string) (any, bool) {
	t.Helper()
	r, err := c.Do(ctx(t), "XINFO", "STREAM", key).Result()
	if err != nil {
		t.Fatalf("XINFO STREAM %s: %v", key, err)
	}
	m, ok := r.(map[any]any)
	if !ok {
		t.Fatalf("XINFO STREAM %s = %#v", key, r)
	}
	v, ok := m[field]
	return v, ok
}

func TestXAddDelayErrors(t *testing.T) {
	t.Parallel()
	c := StartServer(t).Client(t)
	c.Set(ctx(t), "str", "x", 0)
	c.Do(ctx(t), "XADD", "full", "18446744073709551615-18446744073709551615", "f", "v")
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"XADD", "s", "DELAY", "10", "1-1", "f", "v"}, "ERR DELAY/AT can be used only with auto-generated IDs"},
		{[]any{"XADD", "s", "AT", "10", "5-*", "f", "v"}, "ERR DELAY/AT can be used only with auto-generated IDs"},
		{[]any{"XADD", "s", "DELAY", "-1", "*", "f", "v"}, "ERR DELAY must be a non-negative integer number of milliseconds"},
		{[]any{"XADD", "s", "DELAY", "1.5", "*", "f", "v"}, "ERR DELAY must be a non-negative integer number of milliseconds"},
		{[]any{"XADD", "s", "DELAY", "9223372036854775807", "*", "f", "v"}, "ERR DELAY must be a non-negative integer number of milliseconds"},
		{[]any{"XADD", "s", "AT", "-5", "*", "f", "v"}, "ERR AT must be a non-negative unix time in milliseconds"},
		{[]any{"XADD", "s", "AT", "soon", "*", "f", "v"}, "ERR AT must be a non-negative unix time in milliseconds"},
		{[]any{"XADD", "s", "DELAY", "10", "DELAY", "20", "*", "f", "v"}, "ERR DELAY/AT specified multiple times"},
		{[]any{"XADD", "s", "DELAY", "10", "AT", "20", "*", "f", "v"}, "ERR DELAY/AT specified multiple times"},
		{[]any{"XADD", "s", "DELAY", "10", "*", "f"}, "ERR wrong number of arguments for 'xadd' command"},
		{[]any{"XADD", "str", "DELAY", "10", "*", "f", "v"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"XADD", "full", "DELAY", "10", "*", "f", "v"}, "ERR The stream has exhausted the last possible ID, unable to add more items"},
		{[]any{"XRELEASE", "str"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"XRELEASE"}, "ERR wrong number of arguments for 'xrelease' command"},
	} {
		if err := c.Do(ctx(t), tc.args...).Err(); err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if n := c.Exists(ctx(t), "s").Val(); n != 0 {
		t.Fatalf("a refused XADD created the stream")
	}
	if r, err := c.Do(ctx(t), "XADD", "s", "NOMKSTREAM", "DELAY", "10", "*", "f", "v").Result(); err != redis.Nil {
		t.Fatalf("NOMKSTREAM DELAY on a missing key = %v %v, want nil", r, err)
	}
	if n, err := c.Do(ctx(t), "XRELEASE", "missing").Int(); err != nil || n != 0 {
		t.Fatalf("XRELEASE missing = %d %v", n, err)
	}
}

// A delayed entry is invisible to every read until due, then appears
// with its reserved ID; XINFO STREAM shows the delayed entries only while
// there are some.
func TestDelayedVisibility(t *testing.T) {
	t.Parallel()
	c := StartServer(t).Client(t)
	c.XAdd(ctx(t), &redis.XAddArgs{Stream: "q", Values: []any{"job", "visible"}})
	if _, ok := xinfoField(t, c, "q", "delayed-entries"); ok {
		t.Fatal("XINFO STREAM shows delayed-entries on a stream that has none")
	}
	c.XGroupCreate(ctx(t), "q", "g", "$")
	id, err := c.Do(ctx(t), "XADD", "q", "DELAY", "400", "*", "job", "later").Text()
	if err != nil {
		t.Fatal(err)
	}
	due := idMs(t, id)
	if n, _ := xinfoField(t, c, "q", "delayed-entries"); n != int64(1) {
		t.Fatalf("delayed-entries = %v, want 1", n)
	}
	if at, _ := xinfoField(t, c, "q", "next-delayed-due"); at != due {
		t.Fatalf("next-delayed-due = %v, want %d", at, due)
	}
	visible := func() bool {
		seen := c.XLen(ctx(t), "q").Val() == 2
		if seen && time.Now().UnixMilli() < due {
			t.Fatalf("entry %s visible at %d, before its due time", id, time.Now().UnixMilli())
		}
		return seen
	}
	if !visible() {
		if r := c.XRange(ctx(t), "q", "-", "+").Val(); len(r) != 1 {
			t.Fatalf("XRANGE before due = %v", r)
		}
		if r := c.XRevRange(ctx(t), "q", "+", "-").Val(); len(r) != 1 {
			t.Fatalf("XREVRANGE before due = %v", r)
		}
		if r, err := c.XReadGroup(ctx(t), &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"q", ">"}, Block: -1}).Result(); err != redis.Nil {
			t.Fatalf("XREADGROUP before due = %v %v", r, err)
		}
	}
	bbWaitFor(t, 10*time.Second, "the delayed entry", visible)
	r := c.XRange(ctx(t), "q", "-", "+").Val()
	if len(r) != 2 || r[1].ID != id || r[1].Values["job"] != "later" {
		t.Fatalf("XRANGE after due = %v, want the entry at %s", r, id)
	}
	got := c.XReadGroup(ctx(t), &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"q", ">"}, Block: -1}).Val()
	if len(got) != 1 || len(got[0].Messages) != 1 || got[0].Messages[0].ID != id {
		t.Fatalf("XREADGROUP after due = %v", got)
	}
	if _, ok := xinfoField(t, c, "q", "delayed-entries"); ok {
		t.Fatal("XINFO STREAM still shows delayed-entries once all were released")
	}
	if info := c.Info(ctx(t), "stats").Val(); !strings.Contains(info, "stream_delayed_released:1\r\n") {
		t.Fatalf("INFO stats does not count the released entry:\n%s", info)
	}
}

// Reserved IDs follow due times: entries due in the same millisecond
// take successive sequence numbers, and when all are released the stream
// holds them in ID order; DELAY 0 and AT in the past are plain adds.
func TestDelayedIDOrder(t *testing.T) {
	t.Parallel()
	c := StartServer(t).Client(t)
	at := strconv.FormatInt(time.Now().UnixMilli()+500, 10)
	var ids []string
	for _, args := range [][]any{
		{"XADD", "q", "AT", at, "*", "n", "1"},
		{"XADD", "q", "AT", at, "*", "n", "2"},
		{"XADD", "q", "DELAY", "200", "*", "n", "3"},
	} {
		id, err := c.Do(ctx(t), args...).Text()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if ids[0] != at+"-0" || ids[1] != at+"-1" {
		t.Fatalf("two entries due at %s got %v", at, ids[:2])
	}
	plain, _ := c.Do(ctx(t), "XADD", "q", "DELAY", "0", "*", "n", "4").Text()
	past, _ := c.Do(ctx(t), "XADD", "q", "AT", "1", "*", "n", "5").Text()
	if n := c.XLen(ctx(t), "q").Val(); n != 2 || idMs(t, past) < idMs(t, plain) {
		t.Fatalf("DELAY 0 and AT in the past: XLEN %d, IDs %s %s", n, plain, past)
	}
	bbWaitFor(t, 10*time.Second, "every delayed entry", func() bool { return c.XLen(ctx(t), "q").Val() == 5 })
	r := c.XRange(ctx(t), "q", "-", "+").Val()
	want := []string{plain, past, ids[2], ids[0], ids[1]}
	for i, m := range r {
		if m.ID != want[i] {
			t.Fatalf("XRANGE IDs %v, want %v", r, want)
		}
	}
}

// A retried XADD IDMP … DELAY answers the same reserved ID and adds
// nothing, before and after the entry is due.
func TestDelayedIDMP(t *testing.T) {
	t.Parallel()
	c := StartServer(t).Client(t)
	add := func() string {
		id, err := c.Do(ctx(t), "XADD", "q", "IDMP", "p", "i1", "DELAY", "300", "*", "f", "v").Text()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := add()
	if again := add(); again != first {
		t.Fatalf("retry answered %s, first add %s", again, first)
	}
	if n, _ := xinfoField(t, c, "q", "delayed-entries"); n != int64(1) {
		t.Fatalf("delayed-entries after a retry = %v", n)
	}
	bbWaitFor(t, 10*time.Second, "the delayed entry", func() bool { return c.XLen(ctx(t), "q").Val() == 1 })
	if again := add(); again != first || c.XLen(ctx(t), "q").Val() != 1 {
		t.Fatalf("retry after release answered %s (first %s), XLEN %d", again, first, c.XLen(ctx(t), "q").Val())
	}
}

// XDEL of a reserved ID cancels the delayed entry; XRELEASE appends what
// is due and answers how many.
func TestDelayedXDelAndXRelease(t *testing.T) {
	t.Parallel()
	c := StartServer(t).Client(t)
	id, _ := c.Do(ctx(t), "XADD", "q", "DELAY", "100000", "*", "f", "v").Text()
	if n := c.XDel(ctx(t), "q", id).Val(); n != 1 {
		t.Fatalf("XDEL of a reserved ID = %d", n)
	}
	if _, ok := xinfoField(t, c, "q", "delayed-entries"); ok {
		t.Fatal("the cancelled entry is still delayed")
	}
	if n, err := c.Do(ctx(t), "XRELEASE", "q").Int(); err != nil || n != 0 {
		t.Fatalf("XRELEASE with nothing due = %d %v", n, err)
	}
	// A trim given with DELAY trims the visible entries now; the delayed
	// one is not among them.
	for range 3 {
		c.XAdd(ctx(t), &redis.XAddArgs{Stream: "q", Values: []any{"f", "v"}})
	}
	if err := c.Do(ctx(t), "XADD", "q", "MAXLEN", "1", "DELAY", "100000", "*", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := xinfoField(t, c, "q", "delayed-entries"); n != int64(1) || c.XLen(ctx(t), "q").Val() != 1 {
		t.Fatalf("after XADD MAXLEN 1 DELAY: XLEN %d, delayed-entries %v", c.XLen(ctx(t), "q").Val(), n)
	}
}

// A reader blocked on the stream wakes when the entry comes due: not
// before, and within a bounded lateness (the design aims at 10 ms; the
// bound is loose so that a slow machine does not fail the test).
func TestDelayedWakesBlockedReaders(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	c := s.Client(t)
	c.XGroupCreateMkStream(ctx(t), "q", "g", "$")
	var wg sync.WaitGroup
	woke := make([]int64, 2)
	got := make([]string, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		r, err := s.Client(t).XRead(ctx(t), &redis.XReadArgs{Streams: []string{"q", "$"}, Block: 0}).Result()
		woke[0] = time.Now().UnixMilli()
		if err == nil && len(r) == 1 && len(r[0].Messages) == 1 {
			got[0] = r[0].Messages[0].ID
		}
	}()
	go func() {
		defer wg.Done()
		r, err := s.Client(t).XReadGroup(ctx(t), &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"q", ">"}, Block: 0}).Result()
		woke[1] = time.Now().UnixMilli()
		if err == nil && len(r) == 1 && len(r[0].Messages) == 1 {
			got[1] = r[0].Messages[0].ID
		}
	}()
	bbWaitFor(t, 10*time.Second, "two blocked readers", func() bool {
		return strings.Contains(c.Info(ctx(t), "clients").Val(), "blocked_clients:2")
	})
	id, err := c.Do(ctx(t), "XADD", "q", "DELAY", "300", "*", "f", "v").Text()
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	due := idMs(t, id)
	for i, name := range []string{"XREAD", "XREADGROUP"} {
		late := woke[i] - due
		t.Logf("%s woke %d ms after the due time", name, late)
		if got[i] != id {
			t.Errorf("%s got %q, want %s", name, got[i], id)
		}
		if late < 0 || late > 1000 {
			t.Errorf("%s woke %d ms after the due time, want 0..1000", name, late)
		}
	}
}

// Delayed entries travel with the stream: through a restart (RDB and
// AOF), DUMP/RESTORE, COPY and RENAME, and are released afterwards.
func TestDelayedPersistence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--appendonly", "no")
	c := s.Client(t)
	soon, _ := c.Do(ctx(t), "XADD", "q", "DELAY", "1500", "*", "f", "soon").Text()
	later, _ := c.Do(ctx(t), "XADD", "q", "DELAY", "1000000", "*", "f", "later").Text()
	dump := c.Dump(ctx(t), "q").Val()
	if err := c.Restore(ctx(t), "restored", 0, dump).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Copy(ctx(t), "q", "copied", 0, false).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Rename(ctx(t), "copied", "renamed").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	c = StartServerIn(t, dir, "--appendonly", "no").Client(t)
	for _, key := range []string{"q", "restored", "renamed"} {
		if n, _ := xinfoField(t, c, key, "delayed-entries"); n != int64(2) {
			t.Fatalf("%s after restart: delayed-entries %v, want 2", key, n)
		}
	}
	for _, key := range []string{"q", "restored", "renamed"} {
		bbWaitFor(t, 10*time.Second, key+"'s due entry", func() bool { return c.XLen(ctx(t), key).Val() == 1 })
		r := c.XRange(ctx(t), key, "-", "+").Val()
		if r[0].ID != soon {
			t.Fatalf("%s: released %v, want %s", key, r, soon)
		}
		if id := c.XDel(ctx(t), key, later).Val(); id != 1 {
			t.Fatalf("%s: the later entry %s was not delayed", key, later)
		}
	}
}

// In a group only the leader releases delayed entries, through the log,
// so every node holds them under the same IDs; a follower that becomes
// leader releases what its old leader left pending.
func TestClusterDelayedFailover(t *testing.T) {
	c := StartCluster(t)
	leader := c.WaitSettled()
	id, err := ask(leader, "XADD", "q", "DELAY", "1500", "*", "f", "v")
	if err != nil || id.Type != '$' {
		t.Fatalf("XADD DELAY on the leader: %v %s", err, id)
	}
	c.Kill(leader)
	c.WaitSettled()
	for _, n := range c.Others(leader) {
		rc := readOnlyClient(t, n)
		bbWaitFor(t, clusterBound, n.Name+" to hold the released entry", func() bool {
			r, err := rc.XRange(ctx(t), "q", "-", "+").Result()
			return err == nil && len(r) == 1 && r[0].ID == id.Str
		})
		if time.Now().UnixMilli() < idMs(t, id.Str) {
			t.Fatalf("%s shows the entry before its due time", n.Name)
		}
	}
}
