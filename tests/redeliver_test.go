package tests

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server-driven redelivery (issue 15 §2): a group's ACKWAIT/BACKOFF
// policy makes XREADGROUP ">" hand out entries nobody acknowledged in
// time, before new ones, in Redis's reply shape.

// setPolicy runs XGROUP SETPOLICY key group opts... and fails the test on
// an error.
func setPolicy(t *testing.T, cl *redis.Client, key, group string, opts ...any) {
	t.Helper()
	args := append([]any{"XGROUP", "SETPOLICY", key, group}, opts...)
	if err := cl.Do(ctx(t), args...).Err(); err != nil {
		t.Fatalf("XGROUP SETPOLICY %v: %v", opts, err)
	}
}

// readOne does a non-blocking XREADGROUP COUNT 1 ">" and returns the entry
// (nil when there was none).
func readOne(t *testing.T, cl *redis.Client, key, group, consumer string) *redis.XMessage {
	t.Helper()
	res, err := cl.XReadGroup(ctx(t), &redis.XReadGroupArgs{Group: group, Consumer: consumer, Streams: []string{key, ">"}, Count: 1, Block: -1}).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || len(res[0].Messages) != 1 {
		t.Fatalf("XREADGROUP COUNT 1 gave %v", res)
	}
	return &res[0].Messages[0]
}

// TestRedeliveryFollowsTheBackoffSchedule: an entry nobody acknowledges
// comes back to the next reader after the schedule's first step, then
// its second, never before, with its delivery count raised each time and
// its fields intact.
func TestRedeliveryFollowsTheBackoffSchedule(t *testing.T) {
	t.Parallel()
	cl := StartServer(t).Client(t)
	c := ctx(t)
	if err := cl.XGroupCreateMkStream(c, "jobs", "g", "$").Err(); err != nil {
		t.Fatal(err)
	}
	steps := []time.Duration{150 * time.Millisecond, 400 * time.Millisecond}
	setPolicy(t, cl, "jobs", "g", "BACKOFF", "150,400")
	id := cl.XAdd(c, &redis.XAddArgs{Stream: "jobs", Values: []string{"job", "resize", "size", "10"}}).Val()
	before := time.Now()
	if m := readOne(t, cl, "jobs", "g", "w1"); m == nil || m.ID != id {
		t.Fatalf("first read %v", m)
	}
	for i, step := range steps {
		deadline := time.Now().Add(10 * time.Second)
		var m *redis.XMessage
		for m == nil || m.ID != id {
			if time.Now().After(deadline) {
				t.Fatalf("delivery %d: the entry never came back", i+2)
			}
			sent := time.Now()
			m = readOne(t, cl, "jobs", "g", fmt.Sprintf("w%d", i+2))
			if m != nil && m.ID != id {
				t.Fatalf("delivery %d: got %s, which is not in the stream", i+2, m.ID)
			}
			if m == nil {
				time.Sleep(10 * time.Millisecond) // polling interval of a reader without BLOCK, not synchronisation
				continue
			}
			if waited := time.Since(before); waited < step {
				t.Fatalf("delivery %d came %v after the previous, before the %v step", i+2, waited, step)
			}
			before = sent
		}
		if m.Values["job"] != "resize" || m.Values["size"] != "10" {
			t.Fatalf("redelivered fields %v", m.Values)
		}
		pe := cl.XPendingExt(c, &redis.XPendingExtArgs{Stream: "jobs", Group: "g", Start: id, End: id, Count: 1}).Val()
		if len(pe) != 1 || pe[0].RetryCount != int64(i+2) || pe[0].Consumer != fmt.Sprintf("w%d", i+2) {
			t.Fatalf("after delivery %d: XPENDING %+v", i+2, pe)
		}
	}
}

// TestBlockedReaderGetsDueEntry: a reader blocked on ">" with nothing new
// is woken when another consumer's entry comes due, and gets it.
func TestBlockedReaderGetsDueEntry(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	cl := s.Client(t)
	c := ctx(t)
	cl.XGroupCreateMkStream(c, "jobs", "g", "$")
	setPolicy(t, cl, "jobs", "g", "ACKWAIT", "300")
	id := cl.XAdd(c, &redis.XAddArgs{Stream: "jobs", Values: []string{"n", "1"}}).Val()
	start := time.Now()
	readOne(t, cl, "jobs", "g", "crashed")
	res, err := s.Client2(t).XReadGroup(c, &redis.XReadGroupArgs{Group: "g", Consumer: "bob", Streams: []string{"jobs", ">"}, Block: 10 * time.Second}).Result()
	if err != nil {
		t.Fatalf("blocked read: %v", err)
	}
	if len(res) != 1 || len(res[0].Messages) != 1 || res[0].Messages[0].ID != id {
		t.Fatalf("blocked read gave %v", res)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Fatalf("woken %v after the delivery, before the 300 ms ack wait", waited)
	}
}

// TestXPendingWithDue: WITHDUE adds each entry's due time (delivery time
// plus the step for its count; -1 without a policy); bad forms are
// syntax errors.
func TestXPendingWithDue(t *testing.T) {
	t.Parallel()
	raw := StartServer(t).Raw(t)
	raw.Do("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	raw.Do("XADD", "s", "1-0", "f", "v")
	raw.Do("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
	if r := raw.Do("XPENDING", "s", "g", "WITHDUE", "-", "+", "10"); !gtMatches(r, `*1[*5[$"1-0" $"alice" :T :1 :-1]]`) {
		t.Fatalf("without a policy: %s", r)
	}
	raw.Do("XGROUP", "SETPOLICY", "s", "g", "ACKWAIT", "60000")
	r := raw.Do("XPENDING", "s", "g", "IDLE", "0", "WITHDUE", "-", "+", "10", "alice")
	if len(r.Elems) != 1 || len(r.Elems[0].Elems) != 5 {
		t.Fatalf("with a policy: %s", r)
	}
	due, idle := r.Elems[0].Elems[4].Int, r.Elems[0].Elems[2].Int
	if delivered := time.Now().UnixMilli() - idle; due < delivered+60000-1000 || due > delivered+60000+1000 {
		t.Fatalf("due %d, delivered about %d: want delivery + 60000", due, delivered)
	}
	if r := raw.Do("XPENDING", "s", "g", "-", "+", "10"); !gtMatches(r, `*1[*4[$"1-0" $"alice" :T :1]]`) {
		t.Fatalf("without WITHDUE the reply is Redis's: %s", r)
	}
	for _, bad := range [][]string{
		{"XPENDING", "s", "g", "WITHDUE", "-", "+"},
		{"XPENDING", "s", "g", "WITHDUE", "-", "+", "10", "alice", "extra"},
		{"XPENDING", "s", "g", "IDLE", "5", "WITHDUE", "-", "+"},
	} {
		if r := raw.Do(bad...); r.Type != '-' || r.Str != "ERR syntax error" {
			t.Errorf("%v = %s, want a syntax error", bad, r)
		}
	}
}

// TestRedeliveryPoolDrainsEverything is a worker pool on a group with an
// ack wait: workers fail (leave unacknowledged) one entry in ten on its
// first delivery, and nobody claims anything; the server's redelivery
// alone gets every entry processed, and the failed ones were delivered
// twice.
func TestRedeliveryPoolDrainsEverything(t *testing.T) {
	t.Parallel()
	const total, workers = 2000, 4
	s := StartServer(t)
	admin := s.Client(t)
	c := ctx(t)
	admin.XGroupCreateMkStream(c, "jobs", "g", "$")
	setPolicy(t, admin, "jobs", "g", "ACKWAIT", "100")
	for i := range total {
		admin.XAdd(c, &redis.XAddArgs{Stream: "jobs", Values: []any{"n", i}})
	}
	var mu sync.Mutex
	acked, seen := map[string]bool{}, map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := s.Client2(t)
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) {
				mu.Lock()
				finished := len(acked) == total
				mu.Unlock()
				if finished {
					return
				}
				res, err := cl.XReadGroup(c, &redis.XReadGroupArgs{Group: "g", Consumer: fmt.Sprint("w", w), Streams: []string{"jobs", ">"}, Count: 10, Block: 200 * time.Millisecond}).Result()
				if errors.Is(err, redis.Nil) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				for _, m := range res[0].Messages {
					mu.Lock()
					seen[m.ID]++
					fail := seen[m.ID] == 1 && len(seen)%10 == 0
					mu.Unlock()
					if fail {
						continue
					}
					if err := cl.XAck(c, "jobs", "g", m.ID).Err(); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					acked[m.ID] = true
					mu.Unlock()
				}
			}
			errs <- fmt.Errorf("worker %d: not finished in 60 s", w)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	twice := 0
	for _, n := range seen {
		if n >= 2 {
			twice++
		}
	}
	if len(acked) != total || twice < total/20 {
		t.Fatalf("acked %d of %d; %d entries delivered twice, want about %d", len(acked), total, twice, total/10)
	}
	if p := admin.XPending(c, "jobs", "g").Val(); p.Count != 0 {
		t.Fatalf("PEL left: %+v", p)
	}
}

// TestDueEntriesGoBeforeNewOnes: once an entry is due, a read of ">"
// gets it before an entry added later; then the new one.
func TestDueEntriesGoBeforeNewOnes(t *testing.T) {
	t.Parallel()
	raw := StartServer(t).Raw(t)
	raw.Do("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM", "ACKWAIT", "100")
	raw.Do("XADD", "s", "1-0", "job", "a")
	raw.Do("XREADGROUP", "GROUP", "g", "crashed", "STREAMS", "s", ">")
	due := raw.Do("XPENDING", "s", "g", "WITHDUE", "-", "+", "1").Elems[0].Elems[4].Int
	deadline := time.Now().Add(10 * time.Second)
	for serverMillis(t, raw) <= due { // wait on the server's clock, which decides
		if time.Now().After(deadline) {
			t.Fatal("the server clock never passed the due time")
		}
		time.Sleep(5 * time.Millisecond)
	}
	raw.Do("XADD", "s", "2-0", "job", "b")
	for i, want := range []string{`"1-0" *2[$"job" $"a"]`, `"2-0" *2[$"job" $"b"]`} {
		r := raw.Do("XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", ">")
		if !gtMatches(r, `*1[*2[$"s" *1[*2[$`+want+`]]]]`) {
			t.Fatalf("read %d: %s, want %s", i+1, r, want)
		}
	}
}

// serverMillis is the server's clock (TIME) in unix ms.
func serverMillis(t *testing.T, raw *RawConn) int64 {
	t.Helper()
	r := raw.Do("TIME")
	sec, _ := strconv.ParseInt(r.Elems[0].Str, 10, 64)
	usec, _ := strconv.ParseInt(r.Elems[1].Str, 10, 64)
	return sec*1000 + usec/1000
}

// TestSetPolicyWakesBlockedReader: a reader blocked on ">" before the
// group had any policy is served as soon as SETPOLICY makes an old
// pending entry due, not at the next XADD.
func TestSetPolicyWakesBlockedReader(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	cl := s.Client(t)
	c := ctx(t)
	cl.XGroupCreateMkStream(c, "jobs", "g", "$")
	id := cl.XAdd(c, &redis.XAddArgs{Stream: "jobs", Values: []string{"n", "1"}}).Val()
	readOne(t, cl, "jobs", "g", "crashed")
	got := make(chan []redis.XStream, 1)
	reader := s.Client2(t)
	go func() {
		res, _ := reader.XReadGroup(c, &redis.XReadGroupArgs{Group: "g", Consumer: "bob", Streams: []string{"jobs", ">"}, Block: 20 * time.Second}).Result()
		got <- res
	}()
	bbWaitFor(t, 10*time.Second, "bob to block", func() bool {
		return strings.Contains(cl.Info(c, "clients").Val(), "blocked_clients:1")
	})
	setPolicy(t, cl, "jobs", "g", "ACKWAIT", "1")
	select {
	case res := <-got:
		if len(res) != 1 || len(res[0].Messages) != 1 || res[0].Messages[0].ID != id {
			t.Fatalf("bob got %v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SETPOLICY made an entry due, but the blocked reader was not served")
	}
}
