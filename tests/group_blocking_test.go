package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// XREADGROUP BLOCK: woken by XADD, waiters served in arrival order (each
// entry to one consumer only), errors when the key or group goes away
// while blocked, CLAIM wake-ups by time and by XNACK, disconnects. Tests
// wait for INFO's blocked_clients before acting; they never sleep to
// synchronise.

// gbBlock sends a blocking XREADGROUP on rc and waits until n clients are
// blocked.
func gbBlock(t *testing.T, rc, admin *RawConn, n int, args ...string) {
	t.Helper()
	rc.Send(Encode(append([]string{"XREADGROUP"}, args...)...))
	sbWaitBlocked(t, admin, n)
}

func TestGroupBlockingFIFO(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	admin.Do("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
	const n = 4
	conns := make([]*RawConn, n)
	for i := range conns {
		conns[i] = s.Raw(t)
		gbBlock(t, conns[i], admin, i+1, "GROUP", "g", fmt.Sprintf("c%d", i), "COUNT", "1", "BLOCK", "0", "STREAMS", "q", ">")
	}
	// One entry serves the first waiter only; the others stay blocked.
	admin.Do("XADD", "q", "1-0", "job", "1")
	sbExpect(t, conns[0], 2, "first waiter", stReadProto(2, "q", stEntries(stEntry("1-0", "job", "1"))))
	sbStillBlocked(t, admin, n-1, "after one entry")
	// Two at once serve the next two waiters, in the order they came.
	admin.Do("MULTI")
	admin.Do("XADD", "q", "2-0", "job", "2")
	admin.Do("XADD", "q", "3-0", "job", "3")
	admin.Do("EXEC")
	sbExpect(t, conns[1], 2, "second waiter", stReadProto(2, "q", stEntries(stEntry("2-0", "job", "2"))))
	sbExpect(t, conns[2], 2, "third waiter", stReadProto(2, "q", stEntries(stEntry("3-0", "job", "3"))))
	sbStillBlocked(t, admin, 1, "after three entries")
	admin.Do("XADD", "q", "4-0", "job", "4")
	sbExpect(t, conns[3], 2, "fourth waiter", stReadProto(2, "q", stEntries(stEntry("4-0", "job", "4"))))
	// Each consumer owns exactly what it got.
	if r := admin.Do("XPENDING", "q", "g"); r.String() != `*4[:4 $"1-0" $"4-0" *4[*2[$"c0" $"1"] *2[$"c1" $"1"] *2[$"c2" $"1"] *2[$"c3" $"1"]]]` {
		t.Fatalf("XPENDING = %s", r)
	}
}

// TestGroupBlockingGone follows Redis: a blocked XREADGROUP whose key is
// deleted, flushed or replaced, or whose group is destroyed, gets NOGROUP
// or WRONGTYPE; a RENAME that brings a stream with the group serves it.
func TestGroupBlockingGone(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	nogroup := `-"NOGROUP No such key 'q' or consumer group 'g' in XREADGROUP with GROUP option"`
	wrongtype := `-"WRONGTYPE Operation against a key holding the wrong kind of value"`
	for _, tc := range []struct {
		name string
		do   [][]string
		want string
	}{
		{"DEL", [][]string{{"DEL", "q"}}, nogroup},
		{"FLUSHALL", [][]string{{"FLUSHALL"}}, nogroup},
		{"XGROUP DESTROY", [][]string{{"XGROUP", "DESTROY", "q", "g"}}, nogroup},
		{"SET", [][]string{{"SET", "q", "v"}}, wrongtype},
		{"DEL then LPUSH in MULTI", [][]string{{"MULTI"}, {"DEL", "q"}, {"LPUSH", "q", "e"}, {"EXEC"}}, wrongtype},
		{"RENAME without the group", [][]string{{"XADD", "q2", "100-0", "f", "v"}, {"RENAME", "q2", "q"}}, nogroup},
		{"RENAME with the group", [][]string{{"XGROUP", "CREATE", "q2", "g", "$", "MKSTREAM"}, {"XADD", "q2", "100-0", "f", "v"}, {"RENAME", "q2", "q"}},
			stReadProto(2, "q", stEntries(stEntry("100-0", "f", "v")))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			admin.Do("FLUSHALL")
			admin.Do("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
			rc := s.Raw(t)
			gbBlock(t, rc, admin, 1, "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "q", ">")
			for _, c := range tc.do {
				admin.Do(c...)
			}
			sbExpect(t, rc, 2, tc.name, tc.want)
			sbWaitBlocked(t, admin, 0)
		})
	}
}

// TestGroupBlockingDestroyStats follows Redis: the blocked XREADGROUP
// that XGROUP DESTROY ends is a failed call, with one NOGROUP error.
func TestGroupBlockingDestroyStats(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin, rc := s.Raw(t), s.Raw(t)
	admin.Do("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
	admin.Do("CONFIG", "RESETSTAT")
	gbBlock(t, rc, admin, 1, "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "q", ">")
	admin.Do("XGROUP", "DESTROY", "q", "g")
	sbExpect(t, rc, 2, "DESTROY", `-"NOGROUP No such key 'q' or consumer group 'g' in XREADGROUP with GROUP option"`)
	info := admin.Do("INFO", "all").Str
	for _, want := range []string{"errorstat_NOGROUP:count=1", "total_error_replies:1"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q", want)
		}
	}
	for _, line := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(line, "cmdstat_xreadgroup:") && !(strings.Contains(line, ":calls=1,") && strings.Contains(line, "failed_calls=1")) {
			t.Errorf("commandstats: %s", line)
		}
	}
}

// TestGroupBlockingExpired: an expired key ends the wait with NOGROUP, as
// a deleted one does: at the next command that finds it expired, or when
// active expiry removes it.
func TestGroupBlockingExpired(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin, rc := s.Raw(t), s.Raw(t)
	admin.Do("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
	gbBlock(t, rc, admin, 1, "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "q", ">")
	admin.Do("PEXPIRE", "q", "1")
	deadline := time.Now().Add(10 * time.Second)
	for admin.Do("EXISTS", "q").Int == 1 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond) // waiting for the key to expire: time must pass
	}
	sbExpect(t, rc, 2, "expired key", `-"NOGROUP No such key 'q' or consumer group 'g' in XREADGROUP with GROUP option"`)

	// Untouched, the key goes by active expiry, which ends the wait too.
	admin.Do("XGROUP", "CREATE", "q2", "g", "$", "MKSTREAM")
	gbBlock(t, rc, admin, 1, "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "q2", ">")
	admin.Do("PEXPIRE", "q2", "20")
	sbExpect(t, rc, 2, "key removed by active expiry", `-"NOGROUP No such key 'q2' or consumer group 'g' in XREADGROUP with GROUP option"`)
}

func TestGroupBlockingTimeoutAndHistory(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	for _, proto := range []int{2, 3} {
		rc := stDial(t, s.Addr, proto)
		rc.Do("DEL", "d")
		rc.Do("XGROUP", "CREATE", "d", "g", "$", "MKSTREAM")
		rc.Do("XADD", "d", "666", "f", "v")
		rc.Do("XDEL", "d", "666")
		nilReply := map[int]string{2: "*nil", 3: "_"}[proto]
		// Only a deleted entry is new: nothing to serve, the wait times out.
		start := time.Now()
		if r := rc.Do("XREADGROUP", "GROUP", "g", "c", "BLOCK", "100", "STREAMS", "d", ">"); r.String() != nilReply {
			t.Errorf("RESP%d timeout: %s", proto, r)
		}
		if el := time.Since(start); el < 95*time.Millisecond {
			t.Errorf("RESP%d answered after %v", proto, el)
		}
		// An explicit ID never blocks: it reads the (empty) history.
		for _, id := range []string{"0", "600", "666", "700"} {
			want := stReadProto(proto, "d", "*0[]")
			if r := rc.Do("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "d", id); r.String() != want {
				t.Errorf("RESP%d history from %s: %s, want %s", proto, id, r, want)
			}
		}
	}
}

// TestGroupBlockingClaim: a blocked XREADGROUP CLAIM is served when a
// pending entry becomes idle enough, with no write at all, or at once
// when XNACK releases one; and a new entry serves it before either.
func TestGroupBlockingClaim(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	admin.Do("XADD", "q", "1-0", "f", "v1")
	admin.Do("XGROUP", "CREATE", "q", "g", "0")
	// Idleness counts from this delivery, so the clock starts before it
	// (a slow machine may take a while to get to the blocking call).
	start := time.Now()
	admin.Do("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "q", ">")

	// Idle for 300 ms: the waiter wakes then, without any write.
	rc := s.Raw(t)
	gbBlock(t, rc, admin, 1, "GROUP", "g", "c2", "BLOCK", "20000", "CLAIM", "300", "STREAMS", "q", ">")
	r, err := rc.TryRead(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 295*time.Millisecond || el > 5*time.Second { // ms clock: up to 1 ms early
		t.Errorf("claimed after %v, want about 300ms", el)
	}
	if !gtMatches(r, `*1[*2[$"q" *1[*4[$"1-0" *2[$"f" $"v1"] :T :1]]]]`) {
		t.Fatalf("CLAIM wake-up: %s", r)
	}

	// XNACK releases an entry: claimable at once.
	gbBlock(t, rc, admin, 1, "GROUP", "g", "c3", "BLOCK", "0", "CLAIM", "3600000", "STREAMS", "q", ">")
	admin.Do("XNACK", "q", "g", "FAIL", "IDS", "1", "1-0")
	r, err = rc.TryRead(10 * time.Second)
	if err != nil || !gtMatches(r, `*1[*2[$"q" *1[*4[$"1-0" *2[$"f" $"v1"] :T :2]]]]`) {
		t.Fatalf("XNACK wake-up: %s %v", r, err)
	}

	// A new entry serves before any pending entry is idle enough.
	gbBlock(t, rc, admin, 1, "GROUP", "g", "c4", "BLOCK", "0", "CLAIM", "3600000", "STREAMS", "q", ">")
	admin.Do("XADD", "q", "2-0", "f", "v2")
	sbExpect(t, rc, 2, "new entry under CLAIM", `*1[*2[$"q" *1[*4[$"2-0" *2[$"f" $"v2"] :0 :0]]]]`)
	sbWaitBlocked(t, admin, 0)
}

// TestGroupBlockingDisconnect: a consumer that goes away while blocked
// takes nothing; the entry goes to the next waiter.
func TestGroupBlockingDisconnect(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	admin.Do("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
	gone, next := s.Raw(t), s.Raw(t)
	gbBlock(t, gone, admin, 1, "GROUP", "g", "gone", "BLOCK", "0", "STREAMS", "q", ">")
	gbBlock(t, next, admin, 2, "GROUP", "g", "next", "BLOCK", "0", "STREAMS", "q", ">")
	gone.Conn.Close()
	sbWaitBlocked(t, admin, 1)
	admin.Do("XADD", "q", "1-0", "f", "v")
	sbExpect(t, next, 2, "the remaining waiter", stReadProto(2, "q", stEntries(stEntry("1-0", "f", "v"))))
	if r := admin.Do("XPENDING", "q", "g", "-", "+", "10", "gone"); r.String() != "*0[]" {
		t.Fatalf("the gone consumer owns %s", r)
	}
}

// TestGroupBlockingMulti: inside MULTI, XREADGROUP BLOCK answers at once.
func TestGroupBlockingMulti(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	rc := s.Raw(t)
	rc.Do("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
	rc.Do("MULTI")
	rc.Do("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "q", ">")
	if r := rc.Do("EXEC"); r.String() != "*1[*nil]" {
		t.Fatalf("EXEC = %s", r)
	}
	if r := rc.Do("XINFO", "GROUPS", "q"); !strings.Contains(r.String(), `$"consumers" :1`) {
		t.Fatalf("the consumer was not created: %s", r)
	}
}

// TestGroupBlockingKeysOnNokey: INFO clients counts, in
// total_blocking_keys_on_nokey, the keys that an XREADGROUP waits on (its
// wait ends when the key goes away); a BLPOP on the same key does not
// count, and the field appears once in INFO.
func TestGroupBlockingKeysOnNokey(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin, list, group := s.Raw(t), s.Raw(t), s.Raw(t)
	counts := func(what string, keys, nokey int64) {
		t.Helper()
		info := bbInfo(t, admin, "clients")
		if info["total_blocking_keys"] != fmt.Sprint(keys) || info["total_blocking_keys_on_nokey"] != fmt.Sprint(nokey) {
			t.Errorf("%s: total_blocking_keys=%s total_blocking_keys_on_nokey=%s, want %d and %d",
				what, info["total_blocking_keys"], info["total_blocking_keys_on_nokey"], keys, nokey)
		}
	}
	list.Send(Encode("BLPOP", "q", "0"))
	sbWaitBlocked(t, admin, 1)
	counts("BLPOP only", 1, 0)

	admin.Do("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
	gbBlock(t, group, admin, 2, "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "q", ">")
	counts("BLPOP and XREADGROUP on one key", 1, 1)

	admin.Do("DEL", "q")
	sbExpect(t, group, 2, "DEL", `-"NOGROUP No such key 'q' or consumer group 'g' in XREADGROUP with GROUP option"`)
	counts("after the XREADGROUP ended", 1, 0)

	if n := strings.Count(bbInfoText(t, admin, "everything"), "total_blocking_keys:"); n != 1 {
		t.Errorf("INFO everything has total_blocking_keys %d times, want once", n)
	}
}
