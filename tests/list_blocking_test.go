package tests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstream/redstream/persistence"
	"github.com/redstream/redstream/server"
)

// Blocking list commands: BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BLMOVEM.
// Waiting for the server never relies on sleeping: a test waits until
// INFO's blocked_clients (or CLIENT LIST's b flag) shows the client
// blocked before it acts.

// lbBlock sends a blocking command on rc without reading its reply.
func lbBlock(rc *RawConn, args ...string) { rc.Send(Encode(args...)) }

// lbExpect reads one reply from rc and compares it, rendered, with want
// (RESP2 notation; "_" for RESP3 nulls is derived with proto 3).
func lbExpect(t testing.TB, rc *RawConn, proto int, what, want string) {
	t.Helper()
	r, err := rc.TryRead(10 * time.Second)
	if err != nil {
		t.Fatalf("%s: reading the reply: %v", what, err)
	}
	if !ltMatches(r, want, proto) {
		if proto == 3 {
			want = ltWant3(want)
		}
		t.Errorf("%s\n got: %s\nwant: %s", what, r, want)
	}
}

// lbDo runs one command on rc and compares its reply with want.
func lbDo(t testing.TB, rc *RawConn, proto int, want string, args ...string) {
	t.Helper()
	rc.Send(Encode(args...))
	lbExpect(t, rc, proto, strings.Join(args, " "), want)
}

// lbFlags returns the flags CLIENT LIST shows for client id.
func lbFlags(t testing.TB, admin *RawConn, id int64) string {
	t.Helper()
	r := admin.Do("CLIENT", "LIST", "ID", strconv.FormatInt(id, 10))
	for _, f := range strings.Fields(r.Str) {
		if v, ok := strings.CutPrefix(f, "flags="); ok {
			return v
		}
	}
	t.Fatalf("CLIENT LIST ID %d = %s", id, r)
	return ""
}

// lbAssertBlocked checks, right now, that exactly n clients are blocked.
// (Tests use INFO rather than CLIENT LIST for this; CLIENT LIST's b flag
// has a test of its own, TestListBlockingClientList.)
func lbAssertBlocked(t testing.TB, admin *RawConn, n int, when string) {
	t.Helper()
	if got := ltInfoInt(t, admin, "clients", "blocked_clients"); got != n {
		t.Errorf("%s: blocked_clients = %d, want %d", when, got, n)
	}
}

// TestListBlockingTimeout checks that every blocking command waits for
// its (fractional) timeout and then answers Redis's null: a null array in
// RESP2 for every list wait (Redis's replyToBlockedClientTimedOut), the
// RESP3 null in RESP3.
func TestListBlockingTimeout(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	cases := []struct {
		args []string
		want string // RESP2
	}{
		{[]string{"BLPOP", "q", "0.1"}, "*nil"},
		{[]string{"BRPOP", "q", "q2", "0.1"}, "*nil"},
		{[]string{"BLMPOP", "0.1", "2", "q", "q2", "LEFT", "COUNT", "3"}, "*nil"},
		{[]string{"BLMOVE", "q", "d", "LEFT", "RIGHT", "0.1"}, "*nil"},
		{[]string{"BRPOPLPUSH", "q", "d", "0.1"}, "*nil"},
		{[]string{"BLMOVEM", "q", "d", "LEFT", "RIGHT", "0.1"}, "*nil"},
		{[]string{"BLMOVEM", "short", "d", "LEFT", "RIGHT", "0.1", "EXACTLY", "3", "BULK"}, "*nil"},
	}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			rc := ltDial(t, s.Addr, proto)
			lbDo(t, rc, proto, `+"OK"`, "FLUSHALL")
			lbDo(t, rc, proto, ":2", "RPUSH", "short", "a", "b")
			for _, c := range cases {
				start := time.Now()
				lbDo(t, rc, proto, c.want, c.args...)
				if el := time.Since(start); el < 95*time.Millisecond {
					t.Errorf("%s answered after %v, before its 0.1 s timeout", strings.Join(c.args, " "), el)
				}
			}
			lbDo(t, rc, proto, `*2[$"a" $"b"]`, "LRANGE", "short", "0", "-1")
			lbDo(t, rc, proto, ":0", "EXISTS", "d")
		})
	}
}

// TestListBlockingFairness blocks clients on one key in a known order
// and checks that pushes serve them first come, first served.
func TestListBlockingFairness(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	// Mixed commands, all waiting on q; what each answers when it gets v.
	waiters := []struct {
		args  []string
		reply func(v string) string
	}{
		{[]string{"BLPOP", "q", "0"}, func(v string) string { return `*2[$"q" $"` + v + `"]` }},
		{[]string{"BRPOP", "other", "q", "0"}, func(v string) string { return `*2[$"q" $"` + v + `"]` }},
		{[]string{"BLMOVE", "q", "d", "LEFT", "RIGHT", "0"}, func(v string) string { return `$"` + v + `"` }},
		{[]string{"BLMPOP", "0", "1", "q", "LEFT", "COUNT", "5"}, func(v string) string { return `*2[$"q" *1[$"` + v + `"]]` }},
		{[]string{"BRPOPLPUSH", "q", "d", "0"}, func(v string) string { return `$"` + v + `"` }},
		{[]string{"BLMOVEM", "q", "d", "LEFT", "RIGHT", "0", "COUNT", "5", "OBO"}, func(v string) string { return `*1[$"` + v + `"]` }},
		{[]string{"BLPOP", "q", "0"}, func(v string) string { return `*2[$"q" $"` + v + `"]` }},
	}
	conns := make([]*RawConn, len(waiters))
	for i, w := range waiters {
		conns[i] = s.Raw(t)
		lbBlock(conns[i], w.args...)
		ltWaitBlocked(t, admin, i+1) // the order is now certain
	}
	// One element at a time: the i-th push serves the i-th client only.
	for i, w := range waiters {
		v := "e" + strconv.Itoa(i)
		// The push answers the length before waiters are served.
		if r := admin.Do("RPUSH", "q", v); r.String() != ":1" {
			t.Fatalf("RPUSH q %s = %s", v, r)
		}
		lbExpect(t, conns[i], 2, fmt.Sprintf("waiter %d (%s) after push %d", i, strings.Join(w.args, " "), i), w.reply(v))
		if n := ltInfoInt(t, admin, "clients", "blocked_clients"); n != len(waiters)-i-1 {
			t.Errorf("after push %d: blocked_clients = %d, want %d", i, n, len(waiters)-i-1)
		}
		if r := admin.Do("LLEN", "q"); r.String() != ":0" {
			t.Errorf("after push %d: LLEN q = %s, want :0 (a waiter takes it)", i, r)
		}
	}

	// Several elements in one push: each waiter, in order, takes one.
	const n = 5
	bl := make([]*RawConn, n)
	for i := range bl {
		bl[i] = s.Raw(t)
		lbBlock(bl[i], "BLPOP", "q2", "0")
		ltWaitBlocked(t, admin, i+1)
	}
	if r := admin.Do("RPUSH", "q2", "a", "b", "c", "d", "e", "f"); r.String() != ":6" {
		t.Fatalf("RPUSH q2 a..f = %s", r)
	}
	for i, v := range []string{"a", "b", "c", "d", "e"} {
		lbExpect(t, bl[i], 2, fmt.Sprintf("BLPOP waiter %d of q2", i), `*2[$"q2" $"`+v+`"]`)
	}
	if r := admin.Do("LRANGE", "q2", "0", "-1"); r.String() != `*1[$"f"]` {
		t.Errorf("LRANGE q2 = %s, want the one element nobody waited for", r)
	}
}

// TestListBlockingMulti: a push inside MULTI wakes waiters at EXEC, with
// the state EXEC leaves.
func TestListBlockingMulti(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	w := s.Raw(t)
	lbBlock(w, "BLPOP", "q", "0")
	ltWaitBlocked(t, admin, 1)

	p := s.Raw(t)
	lbDo(t, p, 2, `+"OK"`, "MULTI")
	lbDo(t, p, 2, `+"QUEUED"`, "RPUSH", "q", "x")
	lbDo(t, p, 2, `+"QUEUED"`, "LPOP", "q")
	lbAssertBlocked(t, admin, 1, "after the queued RPUSH")
	lbDo(t, p, 2, `*2[:1 $"x"]`, "EXEC")
	// The transaction's net effect is no element: the waiter stays.
	lbAssertBlocked(t, admin, 1, "after MULTI; RPUSH q x; LPOP q; EXEC")

	lbDo(t, p, 2, `+"OK"`, "MULTI")
	lbDo(t, p, 2, `+"QUEUED"`, "RPUSH", "q", "y", "z")
	lbDo(t, p, 2, `+"QUEUED"`, "LLEN", "q")
	lbAssertBlocked(t, admin, 1, "before EXEC")
	lbDo(t, p, 2, `*2[:2 :2]`, "EXEC")
	lbExpect(t, w, 2, "BLPOP q 0 after EXEC", `*2[$"q" $"y"]`)
	lbDo(t, admin, 2, `*1[$"z"]`, "LRANGE", "q", "0", "-1")

	// Pushes to two keys in one transaction: since Redis 7.2 the waiter's
	// command is re-run once EXEC is done, and BLPOP takes its keys in
	// argument order, so k1 serves although k2 was pushed first.
	lbBlock(w, "BLPOP", "k1", "k2", "0")
	ltWaitBlocked(t, admin, 1)
	lbDo(t, p, 2, `+"OK"`, "MULTI")
	lbDo(t, p, 2, `+"QUEUED"`, "RPUSH", "k2", "from-k2")
	lbDo(t, p, 2, `+"QUEUED"`, "RPUSH", "k1", "from-k1")
	lbDo(t, p, 2, `*2[:1 :1]`, "EXEC")
	lbExpect(t, w, 2, "BLPOP k1 k2 0 after MULTI RPUSH k2; RPUSH k1; EXEC", `*2[$"k1" $"from-k1"]`)
	lbDo(t, admin, 2, `*1[$"from-k2"]`, "LRANGE", "k2", "0", "-1")

	// A DISCARDed push wakes nobody.
	lbBlock(w, "BLPOP", "k3", "0")
	ltWaitBlocked(t, admin, 1)
	lbDo(t, p, 2, `+"OK"`, "MULTI")
	lbDo(t, p, 2, `+"QUEUED"`, "RPUSH", "k3", "x")
	lbDo(t, p, 2, `+"OK"`, "DISCARD")
	lbAssertBlocked(t, admin, 1, "after DISCARD")
	lbDo(t, admin, 2, ":1", "RPUSH", "k3", "real")
	lbExpect(t, w, 2, "BLPOP k3 0", `*2[$"k3" $"real"]`)
}

// TestListBlockingInsideMulti: blocking commands queued in MULTI never
// block; at EXEC they answer like a timeout (RESP3 null here).
func TestListBlockingInsideMulti(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	rc := ltDial(t, s.Addr, 3)
	lbDo(t, rc, 3, `+"OK"`, "MULTI")
	cmds := [][]string{
		{"BLPOP", "q", "0"},
		{"BRPOP", "q", "0"},
		{"BLMOVE", "q", "d", "LEFT", "LEFT", "0"},
		{"BRPOPLPUSH", "q", "d", "0"},
		{"BLMPOP", "0", "1", "q", "RIGHT"},
		{"BLMOVEM", "q", "d", "LEFT", "LEFT", "0", "EXACTLY", "2", "OBO"},
		{"RPUSH", "q", "1", "2", "3"},
		{"BLMOVEM", "q", "d", "LEFT", "RIGHT", "0", "EXACTLY", "2", "BULK"},
		{"BLMOVEM", "q", "d", "LEFT", "RIGHT", "0", "EXACTLY", "2", "BULK"},
	}
	for _, c := range cmds {
		lbDo(t, rc, 3, `+"QUEUED"`, c...)
	}
	lbDo(t, rc, 3, `*9[_ _ _ _ _ _ :3 *2[$"1" $"2"] _]`, "EXEC")
	lbDo(t, rc, 3, `*1[$"3"]`, "LRANGE", "q", "0", "-1")
	if n := ltInfoInt(t, rc, "clients", "blocked_clients"); n != 0 {
		t.Errorf("blocked_clients after EXEC = %d", n)
	}
}

// TestListBlockingMoveChain: an element that a BLMOVE moves serves the
// client waiting on the destination.
func TestListBlockingMoveChain(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	a, b, c := s.Raw(t), s.Raw(t), s.Raw(t)
	lbBlock(a, "BLMOVE", "k1", "k2", "LEFT", "RIGHT", "0")
	ltWaitBlocked(t, admin, 1)
	lbBlock(b, "BRPOPLPUSH", "k2", "k3", "0")
	ltWaitBlocked(t, admin, 2)
	lbBlock(c, "BLPOP", "k3", "0")
	ltWaitBlocked(t, admin, 3)
	lbDo(t, admin, 2, ":1", "RPUSH", "k1", "v")
	lbExpect(t, a, 2, "BLMOVE k1 k2", `$"v"`)
	lbExpect(t, b, 2, "BRPOPLPUSH k2 k3", `$"v"`)
	lbExpect(t, c, 2, "BLPOP k3", `*2[$"k3" $"v"]`)
	lbDo(t, admin, 2, ":0", "EXISTS", "k1", "k2", "k3")
	if n := ltInfoInt(t, admin, "clients", "blocked_clients"); n != 0 {
		t.Errorf("blocked_clients = %d after the chain", n)
	}

	// A BLMOVE whose destination became a string: re-run when served, it
	// answers WRONGTYPE and the element stays in the source.
	lbBlock(a, "BLMOVE", "src", "dst", "LEFT", "RIGHT", "0")
	ltWaitBlocked(t, admin, 1)
	lbDo(t, admin, 2, `+"OK"`, "SET", "dst", "str")
	lbDo(t, admin, 2, ":1", "RPUSH", "src", "x")
	lbExpect(t, a, 2, "BLMOVE src dst (dst now a string)", ltWrongType)
	lbDo(t, admin, 2, `*1[$"x"]`, "LRANGE", "src", "0", "-1")
	lbDo(t, admin, 2, `$"str"`, "GET", "dst")

	// A key of another type does not wake a list waiter.
	lbBlock(a, "BLPOP", "k", "0")
	ltWaitBlocked(t, admin, 1)
	lbDo(t, admin, 2, `+"OK"`, "SET", "k", "str")
	lbAssertBlocked(t, admin, 1, "after SET k str")
	lbDo(t, admin, 2, ":1", "DEL", "k")
	lbDo(t, admin, 2, ":1", "LPUSH", "k", "list-again")
	lbExpect(t, a, 2, "BLPOP k", `*2[$"k" $"list-again"]`)
}

// TestListBlockingMoveMExactly: BLMOVEM EXACTLY n waits until the source
// holds n elements; COUNT n waits for any.
func TestListBlockingMoveMExactly(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	w := s.Raw(t)

	lbDo(t, admin, 2, ":1", "RPUSH", "src", "a")
	lbBlock(w, "BLMOVEM", "src", "dst", "LEFT", "RIGHT", "0", "EXACTLY", "3", "BULK")
	ltWaitBlocked(t, admin, 1)
	lbDo(t, admin, 2, ":2", "RPUSH", "src", "b")
	lbAssertBlocked(t, admin, 1, "with 2 of 3 elements")
	lbDo(t, admin, 2, `*2[$"a" $"b"]`, "LRANGE", "src", "0", "-1")
	// LINSERT grows an existing list too (Redis 8 signals it).
	lbDo(t, admin, 2, ":3", "LINSERT", "src", "AFTER", "b", "c")
	lbExpect(t, w, 2, "BLMOVEM src dst LEFT RIGHT 0 EXACTLY 3 BULK", `*3[$"a" $"b" $"c"]`)
	lbDo(t, admin, 2, ":0", "EXISTS", "src")
	lbDo(t, admin, 2, `*3[$"a" $"b" $"c"]`, "LRANGE", "dst", "0", "-1")

	// Missing source, EXACTLY 2: one push of two elements serves it.
	lbBlock(w, "BLMOVEM", "src", "dst", "RIGHT", "LEFT", "0", "EXACTLY", "2", "OBO")
	ltWaitBlocked(t, admin, 1)
	lbDo(t, admin, 2, ":1", "RPUSH", "src", "x")
	lbAssertBlocked(t, admin, 1, "with 1 of 2 elements")
	lbDo(t, admin, 2, ":3", "RPUSH", "src", "y", "z")
	// OBO from the right to the left: z then y pushed at the head.
	lbExpect(t, w, 2, "BLMOVEM src dst RIGHT LEFT 0 EXACTLY 2 OBO", `*2[$"y" $"z"]`)
	lbDo(t, admin, 2, `*1[$"x"]`, "LRANGE", "src", "0", "-1")
	lbDo(t, admin, 2, `*5[$"y" $"z" $"a" $"b" $"c"]`, "LRANGE", "dst", "0", "-1")

	// COUNT: served as soon as anything is there.
	lbDo(t, admin, 2, ":1", "DEL", "src")
	lbBlock(w, "BLMOVEM", "src", "dst2", "LEFT", "LEFT", "0", "COUNT", "5", "OBO")
	ltWaitBlocked(t, admin, 1)
	lbDo(t, admin, 2, ":2", "RPUSH", "src", "1", "2")
	lbExpect(t, w, 2, "BLMOVEM src dst2 LEFT LEFT 0 COUNT 5 OBO", `*2[$"2" $"1"]`)
	lbDo(t, admin, 2, `*2[$"2" $"1"]`, "LRANGE", "dst2", "0", "-1")

	// Two EXACTLY waiters: the first (needs 3) blocks the queue for
	// nobody; the second (needs 1) is served from what the first leaves.
	w2 := s.Raw(t)
	lbBlock(w, "BLMOVEM", "q", "out", "LEFT", "RIGHT", "0", "EXACTLY", "3", "BULK")
	ltWaitBlocked(t, admin, 1)
	lbBlock(w2, "BLMOVEM", "q", "out2", "LEFT", "RIGHT", "0", "EXACTLY", "1", "BULK")
	ltWaitBlocked(t, admin, 2)
	lbDo(t, admin, 2, ":2", "RPUSH", "q", "p", "r")
	lbExpect(t, w2, 2, "second waiter, EXACTLY 1", `*1[$"p"]`)
	lbAssertBlocked(t, admin, 1, "first waiter with 1 of 3")
	lbDo(t, admin, 2, ":3", "RPUSH", "q", "s", "t")
	lbExpect(t, w, 2, "first waiter, EXACTLY 3", `*3[$"r" $"s" $"t"]`)
}

// TestListBlockingClientUnblock covers CLIENT UNBLOCK with TIMEOUT and
// ERROR, in RESP2 and RESP3.
func TestListBlockingClientUnblock(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			cases := []struct {
				args   []string
				reason []string
				want   string
			}{
				{[]string{"BLPOP", "q", "0"}, nil, "*nil"},
				{[]string{"BRPOP", "q", "0"}, []string{"TIMEOUT"}, "*nil"},
				{[]string{"BLMOVE", "q", "d", "LEFT", "LEFT", "0"}, []string{"timeout"}, "*nil"},
				{[]string{"BLMPOP", "0", "1", "q", "LEFT"}, []string{"TIMEOUT"}, "*nil"},
				{[]string{"BLMOVEM", "q", "d", "LEFT", "LEFT", "0", "EXACTLY", "2", "OBO"}, []string{"TIMEOUT"}, "*nil"},
				{[]string{"BLPOP", "q", "0"}, []string{"ERROR"}, `-"UNBLOCKED client unblocked via CLIENT UNBLOCK"`},
				{[]string{"BRPOPLPUSH", "q", "d", "0"}, []string{"error"}, `-"UNBLOCKED client unblocked via CLIENT UNBLOCK"`},
			}
			for _, c := range cases {
				w := ltDial(t, s.Addr, proto)
				id := strconv.FormatInt(ltClientID(t, w), 10)
				lbDo(t, admin, 2, ":0", "CLIENT", "UNBLOCK", id) // not blocked yet
				lbBlock(w, c.args...)
				ltWaitBlocked(t, admin, 1)
				lbDo(t, admin, 2, ":1", append([]string{"CLIENT", "UNBLOCK", id}, c.reason...)...)
				what := fmt.Sprintf("%s after CLIENT UNBLOCK %v", strings.Join(c.args, " "), c.reason)
				lbExpect(t, w, proto, what, c.want)
				ltWaitBlocked(t, admin, 0)
				lbDo(t, admin, 2, ":0", "CLIENT", "UNBLOCK", id)
				lbDo(t, w, proto, `+"PONG"`, "PING")
			}
			// An unblocked client takes nothing pushed afterwards.
			lbDo(t, admin, 2, ":1", "RPUSH", "q", "x")
			lbDo(t, admin, 2, `$"x"`, "LPOP", "q")
			lbDo(t, admin, 2, ":0", "EXISTS", "d")
		})
	}
	w := s.Raw(t)
	id := strconv.FormatInt(ltClientID(t, w), 10)
	lbBlock(w, "BLPOP", "q", "0")
	ltWaitBlocked(t, admin, 1)
	lbDo(t, admin, 2, `-"ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"`, "CLIENT", "UNBLOCK", id, "LATER")
	lbDo(t, admin, 2, `-"ERR value is not an integer or out of range"`, "CLIENT", "UNBLOCK", "abc")
	lbDo(t, admin, 2, ":0", "CLIENT", "UNBLOCK", "999999")
	lbDo(t, admin, 2, ":1", "RPUSH", "q", "still-served")
	lbExpect(t, w, 2, "BLPOP q 0 after the bad CLIENT UNBLOCKs", `*2[$"q" $"still-served"]`)
}

// TestListBlockingClientList: CLIENT LIST marks a blocked client with the
// b flag while it waits, and not after.
func TestListBlockingClientList(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	w := s.Raw(t)
	id := ltClientID(t, w)
	if f := lbFlags(t, admin, id); f != "N" {
		t.Errorf("flags of an idle client = %q, want N", f)
	}
	lbBlock(w, "BLPOP", "q", "0")
	ltWaitBlocked(t, admin, 1)
	if f := lbFlags(t, admin, id); f != "b" {
		t.Errorf("flags of a client blocked in BLPOP = %q, want b", f)
	}
	if r := admin.Do("CLIENT", "LIST", "ID", strconv.FormatInt(id, 10)); !strings.Contains(r.Str, " cmd=blpop ") {
		t.Errorf("CLIENT LIST of the blocked client does not show cmd=blpop: %s", r.Str)
	}
	lbDo(t, admin, 2, ":1", "RPUSH", "q", "x")
	lbExpect(t, w, 2, "BLPOP q 0", `*2[$"q" $"x"]`)
	if f := lbFlags(t, admin, id); f != "N" {
		t.Errorf("flags after the wait ended = %q, want N", f)
	}
}

// TestListBlockingClientKill: killing a blocked client ends its wait; a
// later push stays in the list.
func TestListBlockingClientKill(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	w := s.Raw(t)
	id := strconv.FormatInt(ltClientID(t, w), 10)
	lbBlock(w, "BRPOP", "q", "0")
	ltWaitBlocked(t, admin, 1)
	lbDo(t, admin, 2, ":1", "CLIENT", "KILL", "ID", id)
	w.ExpectClosed(10 * time.Second)
	ltWaitBlocked(t, admin, 0)
	lbDo(t, admin, 2, ":1", "RPUSH", "q", "x")
	lbDo(t, admin, 2, ":1", "LLEN", "q")

	// The old form: CLIENT KILL addr.
	w2 := s.Raw(t)
	lbBlock(w2, "BLMOVE", "q2", "d", "LEFT", "LEFT", "0")
	ltWaitBlocked(t, admin, 1)
	lbDo(t, admin, 2, `+"OK"`, "CLIENT", "KILL", w2.Conn.LocalAddr().String())
	w2.ExpectClosed(10 * time.Second)
	ltWaitBlocked(t, admin, 0)
	lbDo(t, admin, 2, ":1", "RPUSH", "q2", "y")
	lbDo(t, admin, 2, `*1[$"y"]`, "LRANGE", "q2", "0", "-1")
	lbDo(t, admin, 2, ":0", "EXISTS", "d")
}

// TestListBlockingSeveralKeys: a wait on several keys is served by the
// first key that gets an element; a wrong-type key answers WRONGTYPE.
func TestListBlockingSeveralKeys(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	w := s.Raw(t)
	lbBlock(w, "BLPOP", "k1", "k2", "k3", "0")
	ltWaitBlocked(t, admin, 1)
	lbDo(t, admin, 2, ":2", "RPUSH", "k2", "a", "b")
	lbExpect(t, w, 2, "BLPOP k1 k2 k3 0 after RPUSH k2", `*2[$"k2" $"a"]`)
	lbDo(t, admin, 2, `*1[$"b"]`, "LRANGE", "k2", "0", "-1")
	if r := admin.Do("INFO", "clients"); !strings.Contains(r.Str, "total_blocking_keys:0") {
		t.Errorf("INFO clients after the wait ended still counts blocking keys:\n%s", r.Str)
	}

	// With data in several keys, the first key in argument order serves.
	lbDo(t, admin, 2, ":1", "RPUSH", "k3", "c")
	lbDo(t, w, 2, `*2[$"k2" $"b"]`, "BRPOP", "k1", "k2", "k3", "0")
	lbDo(t, w, 2, `*2[$"k3" $"c"]`, "BRPOP", "k1", "k2", "k3", "0")

	// A string among the keys: WRONGTYPE at once, unless a list before it
	// has an element.
	lbDo(t, admin, 2, `+"OK"`, "SET", "str", "v")
	lbDo(t, w, 2, ltWrongType, "BLPOP", "k1", "str", "k2", "0")
	lbDo(t, w, 2, ltWrongType, "BLMPOP", "0", "3", "k1", "str", "k2", "LEFT")
	lbDo(t, admin, 2, ":1", "RPUSH", "k1", "first")
	lbDo(t, w, 2, `*2[$"k1" $"first"]`, "BLPOP", "k1", "str", "0")
	if n := ltInfoInt(t, admin, "clients", "blocked_clients"); n != 0 {
		t.Errorf("blocked_clients = %d after WRONGTYPE replies", n)
	}

	// BLMPOP on several keys with COUNT.
	lbBlock(w, "BLMPOP", "0", "2", "m1", "m2", "RIGHT", "COUNT", "2")
	ltWaitBlocked(t, admin, 1)
	lbDo(t, admin, 2, ":3", "RPUSH", "m2", "1", "2", "3")
	lbExpect(t, w, 2, "BLMPOP 0 2 m1 m2 RIGHT COUNT 2", `*2[$"m2" *2[$"3" $"2"]]`)

	// The same key twice: served once.
	lbBlock(w, "BLPOP", "dup", "dup", "0")
	ltWaitBlocked(t, admin, 1)
	lbDo(t, admin, 2, ":2", "RPUSH", "dup", "x", "y")
	lbExpect(t, w, 2, "BLPOP dup dup 0", `*2[$"dup" $"x"]`)
	lbDo(t, admin, 2, `*1[$"y"]`, "LRANGE", "dup", "0", "-1")
	ltWaitBlocked(t, admin, 0)
}

// TestListBlockingPipeline: commands pipelined behind a blocking command
// wait until it is served, then run in order; replies of commands before
// it are not held back.
func TestListBlockingPipeline(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	w := s.Raw(t)
	w.Send(Encode("RPUSH", "before", "1") + Encode("BLPOP", "q", "0") + Encode("RPUSH", "after", "x") +
		Encode("LLEN", "q") + Encode("LPOP", "q") + Encode("PING"))
	// The reply to the command before the BLPOP arrives while it waits.
	lbExpect(t, w, 2, "RPUSH before 1 (pipelined ahead of BLPOP)", ":1")
	ltWaitBlocked(t, admin, 1)
	lbDo(t, admin, 2, ":0", "EXISTS", "after")
	lbDo(t, admin, 2, ":2", "RPUSH", "q", "v1", "v2")
	lbExpect(t, w, 2, "BLPOP q 0", `*2[$"q" $"v1"]`)
	lbExpect(t, w, 2, "RPUSH after x", ":1")
	lbExpect(t, w, 2, "LLEN q", ":1")
	lbExpect(t, w, 2, "LPOP q", `$"v2"`)
	lbExpect(t, w, 2, "PING", `+"PONG"`)

	// Two blocking commands in one pipeline: the second waits its turn.
	w.Send(Encode("BLPOP", "a", "0") + Encode("BLPOP", "b", "0") + Encode("ECHO", "done"))
	ltWaitBlocked(t, admin, 1)
	lbDo(t, admin, 2, ":1", "RPUSH", "b", "for-b") // nobody waits on b yet
	lbDo(t, admin, 2, ":1", "RPUSH", "a", "for-a")
	lbExpect(t, w, 2, "BLPOP a 0", `*2[$"a" $"for-a"]`)
	lbExpect(t, w, 2, "BLPOP b 0 (data already there)", `*2[$"b" $"for-b"]`)
	lbExpect(t, w, 2, "ECHO done", `$"done"`)
}

// TestListBlockingDisconnect: clients that disconnect while blocked take
// nothing: the next push stays in the list.
func TestListBlockingDisconnect(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	cmds := [][]string{
		{"BLPOP", "q", "0"},
		{"BRPOP", "q", "0"},
		{"BLMOVE", "q", "d", "LEFT", "LEFT", "0"},
		{"BRPOPLPUSH", "q", "d", "0"},
		{"BLMPOP", "0", "1", "q", "LEFT", "COUNT", "3"},
		{"BLMOVEM", "q", "d", "LEFT", "LEFT", "0", "COUNT", "3", "BULK"},
		{"BLPOP", "other", "q", "0"},
		{"BRPOP", "q", "10"},
	}
	t.Run("close", func(t *testing.T) {
		conns := make([]*RawConn, len(cmds))
		for i, c := range cmds {
			conns[i] = s.Raw(t)
			lbBlock(conns[i], c...)
			ltWaitBlocked(t, admin, i+1)
		}
		for _, c := range conns {
			c.Conn.Close()
		}
		lbDo(t, admin, 2, ":1", "RPUSH", "q", "x")
		lbDo(t, admin, 2, ":1", "LLEN", "q")
		ltWaitBlocked(t, admin, 0)
		lbDo(t, admin, 2, `*1[$"x"]`, "LRANGE", "q", "0", "-1")
		lbDo(t, admin, 2, ":0", "EXISTS", "d")
		lbDo(t, admin, 2, `$"x"`, "LPOP", "q")
	})
	t.Run("half-close", func(t *testing.T) {
		conns := make([]*RawConn, len(cmds))
		for i, c := range cmds {
			conns[i] = s.Raw(t)
			lbBlock(conns[i], c...)
			ltWaitBlocked(t, admin, i+1)
		}
		for _, c := range conns {
			if err := c.Conn.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
		}
		lbDo(t, admin, 2, ":1", "RPUSH", "q", "y")
		lbDo(t, admin, 2, ":1", "LLEN", "q")
		// Each socket still reads: the server must close it without
		// sending an element.
		for i, c := range conns {
			_ = c.Conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			data, err := io.ReadAll(c.Conn)
			if err != nil {
				t.Errorf("client %d (%s): reading to EOF: %v", i, strings.Join(cmds[i], " "), err)
			}
			if len(data) > 0 {
				t.Errorf("client %d (%s) half-closed while blocked, then received %q", i, strings.Join(cmds[i], " "), data)
			}
		}
		ltWaitBlocked(t, admin, 0)
		lbDo(t, admin, 2, `*1[$"y"]`, "LRANGE", "q", "0", "-1")
	})
}

// TestListBlockingDisconnectStress: ~200 consumers BRPOP one queue while
// producers push 20,000 unique elements and consumers are killed at
// random (half-close, then drain to EOF, keeping whatever still arrives).
// In the end every element is in the list or was received exactly once.
func TestListBlockingDisconnectStress(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	const (
		consumers = 200
		producers = 4
		total     = 20_000
		kills     = consumers / 2
		perTick   = total * 4 / 5 / kills // kills spread over the first 80% of pushes
	)
	seed := time.Now().UnixNano()
	if env := os.Getenv("REDSTREAM_LIST_STRESS_SEED"); env != "" {
		seed, _ = strconv.ParseInt(env, 10, 64)
	}
	t.Logf("seed %d (REDSTREAM_LIST_STRESS_SEED replays the choices, not the timing)", seed)
	rng := rand.New(rand.NewSource(seed))
	brpop := []byte(Encode("BRPOP", "q", "0"))

	type consumer struct {
		conn    *net.TCPConn
		r       *bufio.Reader
		stop    atomic.Bool // no more BRPOPs: killed, or the test is ending
		waiting atomic.Bool // a BRPOP is outstanding
		done    chan struct{}
		got     []string // elements received (read after done)
		drained int      // how many of them arrived after the kill
		killed  bool     // guarded by the killer / main goroutine
		problem string   // an unexpected reply or error
	}
	cs := make([]*consumer, consumers)
	for i := range cs {
		c, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cs[i] = &consumer{conn: c.(*net.TCPConn), r: bufio.NewReader(c), done: make(chan struct{})}
	}
	record := func(c *consumer, r Reply) {
		if r.Type != '*' || len(r.Elems) != 2 || r.Elems[0].Str != "q" {
			if c.problem == "" {
				c.problem = "unexpected reply " + r.String()
			}
			return
		}
		c.got = append(c.got, r.Elems[1].Str)
	}
	for _, c := range cs {
		go func() {
			defer close(c.done)
			for !c.stop.Load() {
				c.waiting.Store(true)
				if _, err := c.conn.Write(brpop); err != nil {
					break // half-closed by the killer meanwhile
				}
				r, err := readReply(c.r)
				c.waiting.Store(false)
				if err != nil {
					switch {
					case !c.stop.Load():
						c.problem = "live consumer lost its connection: " + err.Error()
					case !errors.Is(err, io.EOF):
						// A reset may have discarded data the kernel held
						// for us: the test could not vouch for it.
						c.problem = "after the half-close: " + err.Error()
					}
					return
				}
				if c.stop.Load() {
					c.drained++
				}
				record(c, r)
			}
			// Drain: whatever the server still sends counts as received.
			_ = c.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			for {
				r, err := readReply(c.r)
				if err != nil {
					if !errors.Is(err, io.EOF) {
						c.problem = "draining after the half-close: " + err.Error()
					}
					return
				}
				c.drained++
				record(c, r)
			}
		}()
	}
	ltWaitBlocked(t, admin, consumers)

	// Producers push unique elements in batches of 1-5; every perTick
	// elements they ask the killer for one kill.
	ticks := make(chan struct{}, total/perTick+producers+1)
	var pushed atomic.Int64
	var pwg sync.WaitGroup
	perr := make(chan error, producers)
	for p := range producers {
		pc, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		prng := rand.New(rand.NewSource(seed + int64(p) + 1))
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			br := bufio.NewReader(pc)
			for i := 0; i < total/producers; {
				n := min(1+prng.Intn(5), total/producers-i)
				args := []string{"RPUSH", "q"}
				for j := range n {
					args = append(args, fmt.Sprintf("p%d-%d", p, i+j))
				}
				if _, err := pc.Write([]byte(Encode(args...))); err != nil {
					perr <- err
					return
				}
				if r, err := readReply(br); err != nil || r.Type != ':' {
					perr <- fmt.Errorf("RPUSH: %v %v", r, err)
					return
				}
				i += n
				before := pushed.Add(int64(n)) - int64(n)
				for k := before/perTick + 1; k <= (before+int64(n))/perTick; k++ {
					ticks <- struct{}{}
				}
			}
		}()
	}
	go func() { pwg.Wait(); close(ticks) }()

	// The killer: one kill per tick, a consumer with a BRPOP outstanding
	// if there is one, until half of them are gone.
	killedN := 0
	live := func() []*consumer {
		var out []*consumer
		for _, c := range cs {
			if !c.killed {
				out = append(out, c)
			}
		}
		return out
	}
	kill := func(c *consumer) {
		c.killed = true
		c.stop.Store(true)
		_ = c.conn.CloseWrite()
	}
	for range ticks {
		if killedN == kills {
			continue
		}
		l := live()
		var waiting []*consumer
		for _, c := range l {
			if c.waiting.Load() {
				waiting = append(waiting, c)
			}
		}
		if len(waiting) > 0 {
			kill(waiting[rng.Intn(len(waiting))])
		} else {
			kill(l[rng.Intn(len(l))])
		}
		killedN++
	}
	close(perr)
	for err := range perr {
		t.Fatalf("producer: %v", err)
	}
	if killedN != kills {
		t.Fatalf("only %d of %d kills happened", killedN, kills)
	}
	// Killed consumers end when the server closes their connection.
	for _, c := range cs {
		if c.killed {
			<-c.done
		}
	}
	// Once every live consumer is blocked again, every element is either
	// in the list or recorded (a consumer records before it re-issues).
	liveN := consumers - kills
	ltWaitBlocked(t, admin, liveN)
	rest := admin.Do("LRANGE", "q", "0", "-1")
	if rest.Type != '*' {
		t.Fatalf("LRANGE q = %s", rest)
	}
	for _, c := range cs {
		if !c.killed {
			c.stop.Store(true)
			_ = c.conn.CloseWrite()
		}
	}
	for _, c := range cs {
		<-c.done
	}

	count := map[string]int{}
	for _, e := range rest.Elems {
		count[e.Str]++
	}
	receivedByKilled := 0
	for i, c := range cs {
		if c.problem != "" {
			t.Errorf("consumer %d (killed=%v): %s", i, c.killed, c.problem)
		}
		for _, v := range c.got {
			count[v]++
		}
		if c.killed {
			receivedByKilled += c.drained
		}
	}
	var lost, dup []string
	for p := range producers {
		for i := range total / producers {
			v := fmt.Sprintf("p%d-%d", p, i)
			switch count[v] {
			case 0:
				lost = append(lost, v)
			case 1:
			default:
				dup = append(dup, fmt.Sprintf("%s×%d", v, count[v]))
			}
			delete(count, v)
		}
	}
	var unknown []string
	for v := range count {
		unknown = append(unknown, v)
	}
	slices.Sort(lost)
	t.Logf("%d elements: %d left in the list, %d received by killed consumers while draining, %d kills", total, len(rest.Elems), receivedByKilled, killedN)
	if len(lost) > 0 {
		t.Errorf("%d elements lost (neither in the list nor received), e.g. %v", len(lost), lost[:min(10, len(lost))])
	}
	if len(dup) > 0 {
		t.Errorf("%d elements delivered more than once, e.g. %v", len(dup), dup[:min(10, len(dup))])
	}
	if len(unknown) > 0 {
		t.Errorf("%d unknown elements received, e.g. %v", len(unknown), unknown[:min(10, len(unknown))])
	}
	// Only the admin and producer connections remain.
	ltWaitFor(t, func() string { return "the consumer connections to be gone" }, func() bool {
		return ltInfoInt(t, admin, "clients", "connected_clients") <= 1+producers
	})
	ltWaitBlocked(t, admin, 0)
}

// A client served by a write serves, in turn, the clients its own write
// unblocks before the next command of the pipeline that wrote runs: the
// log holds the chain's moves between the LPUSH and the SET after it, as
// Redis's replication stream does (its list.tcl "Command being unblocked
// cause another command to get unblocked execution order test").
func TestListBlockingChainRunsBeforeThePipelineGoesOn(t *testing.T) {
	t.Parallel()
	s := StartServer(t, "--save", "")
	admin := s.Raw(t)
	a, b, c := s.Raw(t), s.Raw(t), s.Raw(t)
	lbBlock(a, "BLMOVE", "src", "dst", "LEFT", "RIGHT", "0")
	ltWaitBlocked(t, admin, 1)
	lbBlock(b, "BLMOVE", "dst", "src", "RIGHT", "LEFT", "0")
	ltWaitBlocked(t, admin, 2)
	c.Send(Encode("SET", "key1", "value1") + Encode("LPUSH", "src", "dummy") + Encode("SET", "key2", "value2"))
	lbExpect(t, a, 2, "BLMOVE src dst", `$"dummy"`)
	lbExpect(t, b, 2, "BLMOVE dst src", `$"dummy"`)
	for _, want := range []string{`+"OK"`, ":1", `+"OK"`} {
		lbExpect(t, c, 2, "the pipeline", want)
	}
	lbDo(t, admin, 2, `+"OK"`, "SET", "key3", "value3")
	s.Stop()

	var got []string
	aof, err := persistence.OpenAOF(persistence.AOFOptions{Dir: filepath.Join(s.Dir, "appendonlydir"), Name: "appendonly.aof",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aof.Load(nil, persistence.PerRecord(func(r server.Record) error {
		got = append(got, strings.ToLower(string(bytes.Join(r.Argv, []byte(" ")))))
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	want := []string{"set key1 value1", "lpush src dummy", "lmove src dst left right", "lmove dst src right left",
		"set key2 value2", "set key3 value3"}
	if !slices.Equal(got, want) {
		t.Fatalf("the log holds\n%q\nwant\n%q", got, want)
	}
}
