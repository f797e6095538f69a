package tests

import (
	"regexp"
	"strconv"
	"testing"
)

// TestBlockingCommandStats: a blocking command counts one call when its
// wait ends — served, timed out or ended by CLIENT UNBLOCK — not one for
// the pass that blocked and another for the one that served it; an
// UNBLOCKED error is a failed call and an error stat. Checked against
// redis-server when installed.
func TestBlockingCommandStats(t *testing.T) {
	t.Parallel()
	want := "calls=3 failed_calls=1 errorstat_UNBLOCKED=1"
	if got := blockingStats(t, StartServer(t).Raw); got != want {
		t.Errorf("redstream: %s, want %s", got, want)
	}
	if got := blockingStats(t, StartRedis(t).Raw); got != want {
		t.Errorf("redis-server: %s, want %s (the expectation is wrong)", got, want)
	}
}

// blockingStats runs one served, one timed-out and one unblocked BLPOP
// and returns what INFO says of them.
func blockingStats(t *testing.T, dial func(testing.TB) *RawConn) string {
	admin, w := dial(t), dial(t)
	admin.Do("CONFIG", "RESETSTAT")
	id := strconv.FormatInt(w.Do("CLIENT", "ID").Int, 10)

	w.Send(Encode("BLPOP", "q", "0"))
	ltWaitBlocked(t, admin, 1)
	admin.Do("RPUSH", "q", "x")
	if r := w.Read(); r.String() != `*2[$"q" $"x"]` {
		t.Fatalf("served BLPOP: %s", r)
	}
	if r := w.Do("BLPOP", "q", "0.01"); !r.Null {
		t.Fatalf("timed-out BLPOP: %s", r)
	}
	w.Send(Encode("BLPOP", "q", "0"))
	ltWaitBlocked(t, admin, 1)
	admin.Do("CLIENT", "UNBLOCK", id, "ERROR")
	if r := w.Read(); r.Type != '-' {
		t.Fatalf("unblocked BLPOP: %s", r)
	}

	info := admin.Do("INFO", "all").Str
	calls := regexp.MustCompile(`cmdstat_blpop:calls=(\d+),.*failed_calls=(\d+)`).FindStringSubmatch(info)
	errs := regexp.MustCompile(`errorstat_UNBLOCKED:count=(\d+)`).FindStringSubmatch(info)
	if calls == nil || errs == nil {
		t.Fatalf("INFO lacks cmdstat_blpop or errorstat_UNBLOCKED:\n%s", info)
	}
	return "calls=" + calls[1] + " failed_calls=" + calls[2] + " errorstat_UNBLOCKED=" + errs[1]
}
