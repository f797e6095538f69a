package tests

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Consumer groups survive restarts through the AOF (replayed commands:
// every delivery, claim and release at its record's time), through RDB
// snapshots (SAVE, BGSAVE) and through BGREWRITEAOF (whose base is an RDB
// snapshot), and cross RDB files both ways with redis-server 7.0.

// gpSeed builds groups with every kind of PEL state: entries owned by
// several consumers, re-delivered, claimed with explicit times and counts,
// released by XNACK (in an order CLAIM must keep), a consumer that never
// read (active-time -1), deleted entries still pending, a second group.
func gpSeed(t testing.TB, raw *RawConn, redis8 bool) {
	t.Helper()
	cmds := [][]string{
		{"XGROUP", "CREATE", "s", "g1", "$", "MKSTREAM"},
		{"XGROUP", "CREATE", "s", "g2", "0"},
	}
	for i := 1; i <= 12; i++ {
		cmds = append(cmds, []string{"XADD", "s", strconv.Itoa(i) + "-0", "n", strconv.Itoa(i)})
	}
	cmds = append(cmds,
		[]string{"XREADGROUP", "GROUP", "g1", "alice", "COUNT", "4", "STREAMS", "s", ">"},
		[]string{"XREADGROUP", "GROUP", "g1", "bob", "COUNT", "4", "STREAMS", "s", ">"},
		[]string{"XREADGROUP", "GROUP", "g1", "bob", "STREAMS", "s", "0"},
		[]string{"XCLAIM", "s", "g1", "carol", "0", "2-0", "3-0", "TIME", "1000", "RETRYCOUNT", "9"},
		[]string{"XGROUP", "CREATECONSUMER", "s", "g1", "idle"},
		[]string{"XACK", "s", "g1", "4-0"},
		[]string{"XDEL", "s", "6-0"},
		[]string{"XREADGROUP", "GROUP", "g2", "zed", "NOACK", "COUNT", "3", "STREAMS", "s", ">"},
		[]string{"XREADGROUP", "GROUP", "g2", "zed", "COUNT", "2", "STREAMS", "s", ">"},
	)
	if redis8 {
		cmds = append(cmds,
			[]string{"XNACK", "s", "g1", "FAIL", "IDS", "1", "7-0"},
			[]string{"XNACK", "s", "g1", "FATAL", "IDS", "1", "1-0"},
			[]string{"XNACK", "s", "g1", "SILENT", "IDS", "1", "5-0", "RETRYCOUNT", "3"},
		)
	}
	for _, c := range cmds {
		if r := raw.Do(c...); r.Type == '-' {
			t.Fatalf("%v: %s", c, r)
		}
	}
}

// gpState renders what must survive: the whole XINFO STREAM FULL (times
// included: they are stored, not recomputed) and the PEL with its owners
// and counts. Consumers' idle times are left out: they move with the
// clock.
func gpState(t testing.TB, raw *RawConn, mask bool) string {
	t.Helper()
	full := []string{"XINFO", "STREAM", "s", "FULL", "COUNT", "0"}
	r := raw.Do(full...)
	if mask {
		r = gdMask(full, r)
	}
	var b strings.Builder
	b.WriteString(r.String())
	for _, g := range []string{"g1", "g2"} {
		b.WriteString("\n" + raw.Do("XPENDING", "s", g).String())
	}
	return b.String()
}

// gpClaimOrder checks that released entries come back in release order.
func gpClaimOrder(t testing.TB, raw *RawConn, label string) {
	t.Helper()
	r := raw.Do("XREADGROUP", "GROUP", "g1", "dave", "COUNT", "3", "CLAIM", "3600000", "STREAMS", "s", ">")
	if !gtMatches(r, `*1[*2[$"s" *3[*4[$"7-0" *2[$"n" $"7"] :T :2] *4[$"1-0" *2[$"n" $"1"] :T :9223372036854775807] *4[$"5-0" *2[$"n" $"5"] :T :3]]]]`) {
		t.Fatalf("%s: CLAIM order %s", label, r)
	}
}

func TestGroupPersistAOFRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir)
	raw := s.Raw(t)
	gpSeed(t, raw, true)
	want := gpState(t, raw, false)
	s.Stop()
	raw = StartServerIn(t, dir).Raw(t)
	if got := gpState(t, raw, false); got != want {
		t.Fatalf("after an AOF restart\n got: %s\nwant: %s", got, want)
	}
	gpClaimOrder(t, raw, "AOF restart")
}

func TestGroupPersistRDB(t *testing.T) {
	t.Parallel()
	for _, save := range []string{"SAVE", "BGSAVE"} {
		t.Run(save, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := StartServerIn(t, dir, "--appendonly", "no", "--save", "")
			raw := s.Raw(t)
			gpSeed(t, raw, true)
			want := gpState(t, raw, false)
			if r := raw.Do(save); r.Type == '-' {
				t.Fatalf("%s = %s", save, r)
			}
			waitInfo(t, raw, "persistence", "rdb_bgsave_in_progress", "0")
			// Writes after the snapshot must not leak into it.
			raw.Do("XACK", "s", "g1", "8-0")
			raw.Do("XGROUP", "CREATE", "s", "late", "0")
			s.Stop()
			raw = StartServerIn(t, dir, "--appendonly", "no").Raw(t)
			if got := gpState(t, raw, false); got != want {
				t.Fatalf("loaded from dump.rdb\n got: %s\nwant: %s", got, want)
			}
			gpClaimOrder(t, raw, save)
		})
	}
}

func TestGroupPersistRewrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir)
	raw := s.Raw(t)
	gpSeed(t, raw, true)
	if r := raw.Do("BGREWRITEAOF"); r.Type == '-' {
		t.Fatalf("BGREWRITEAOF = %s", r)
	}
	waitInfo(t, raw, "persistence", "aof_rewrite_in_progress", "0")
	// After the rewrite, more history goes to the new increment.
	raw.Do("XREADGROUP", "GROUP", "g2", "zed", "STREAMS", "s", ">")
	raw.Do("XACK", "s", "g2", "9-0")
	want := gpState(t, raw, false)
	s.Stop()
	raw = StartServerIn(t, dir).Raw(t)
	if got := gpState(t, raw, false); got != want {
		t.Fatalf("after BGREWRITEAOF and restart\n got: %s\nwant: %s", got, want)
	}
	gpClaimOrder(t, raw, "rewrite")
}

// TestGroupPersistRDBWithRedis: groups written by redstream load in
// redis-server 7.0 and come back from it, the same (Redis 7.0 has no
// active times and no XNACK, so neither is in play).
func TestGroupPersistRDBWithRedis(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed; skipping the RDB round trip with Redis")
	}
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--appendonly", "no", "--save", "")
	raw := s.Raw(t)
	gpSeed(t, raw, false)
	want := gpState(t, raw, true)
	if r := raw.Do("SAVE"); r.String() != `+"OK"` {
		t.Fatalf("SAVE = %s", r)
	}
	s.Stop()
	r := StartRedis(t, "--dir", dir, "--dbfilename", "dump.rdb")
	rr := r.Raw(t)
	if got := gpState(t, rr, true); got != want {
		t.Fatalf("redis-server loading redstream's dump\n got: %s\nwant: %s", got, want)
	}
	// Redis changes the groups and saves; redstream loads what it wrote.
	for _, c := range [][]string{
		{"XREADGROUP", "GROUP", "g2", "yan", "STREAMS", "s", ">"},
		{"XCLAIM", "s", "g1", "yan", "0", "8-0", "TIME", "2000"},
		{"XGROUP", "CREATE", "s", "g3", "5-0", "ENTRIESREAD", "5"},
	} {
		if got := rr.Do(c...); got.Type == '-' {
			t.Fatalf("redis %v: %s", c, got)
		}
	}
	want = gpState(t, rr, true)
	if got := rr.Do("SAVE"); got.String() != `+"OK"` {
		t.Fatalf("redis SAVE = %s", got)
	}
	s2 := StartServerIn(t, dir, "--appendonly", "no", "--save", "")
	if got := gpState(t, s2.Raw(t), true); got != want {
		t.Fatalf("redstream loading redis-server's dump\n got: %s\nwant: %s", got, want)
	}
}
