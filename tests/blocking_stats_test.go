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

// TestTimeoutTableEmptiesWhenServed: INFO's clients_in_timeout_table
// counts the blocked clients that have a timeout, as Redis's does. A
// wait served long before its timeout leaves the table at once: the
// loop's timer heap held every served wait until its deadline once,
// which with workers in `BRPOP q 300` grows by every message for five
// minutes. Checked against redis-server when installed.
func TestTimeoutTableEmptiesWhenServed(t *testing.T) {
	t.Parallel()
	checkTimeoutTable(t, "redstream", StartServer(t).Raw)
	checkTimeoutTable(t, "redis-server", StartRedis(t).Raw)
}

func checkTimeoutTable(t *testing.T, name string, dial func(testing.TB) *RawConn) {
	admin, forever, timed := dial(t), dial(t), dial(t)
	forever.Send(Encode("BLPOP", "q", "0"))
	ltWaitBlocked(t, admin, 1)
	if n := infoInt(t, admin, "clients", "clients_in_timeout_table"); n != 0 {
		t.Fatalf("%s: clients_in_timeout_table = %d with one BLPOP q 0 blocked, want 0", name, n)
	}
	for i := range 50 {
		timed.Send(Encode("BLPOP", "t", "300"))
		ltWaitBlocked(t, admin, 2)
		if i == 0 {
			if n := infoInt(t, admin, "clients", "clients_in_timeout_table"); n != 1 {
				t.Fatalf("%s: clients_in_timeout_table = %d with BLPOP t 300 blocked, want 1", name, n)
			}
		}
		admin.Do("RPUSH", "t", "x")
		if r := timed.Read(); r.Type != '*' {
			t.Fatalf("%s: served BLPOP t 300: %s", name, r)
		}
	}
	if n := infoInt(t, admin, "clients", "clients_in_timeout_table"); n != 0 {
		t.Fatalf("%s: clients_in_timeout_table = %d after 50 BLPOP t 300 were served, want 0", name, n)
	}
	admin.Do("RPUSH", "q", "x")
	forever.Read()
}
