package tests

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The kill -9 test of delayed entries (issue 15): producers XADD … DELAY
// entries carrying a unique number, AOF rewrites and saves run at random
// moments, and the server is killed with SIGKILL at a random moment, over
// and over. Every acknowledged delayed XADD must end up in the stream
// exactly once, under the ID its reply reserved, after its due time, and
// nothing may appear twice, however many restarts it went through.

const delayedCrashKey = "delayed"

// delayedLog is what the producers saw acknowledged.
type delayedLog struct {
	mu    sync.Mutex
	next  int
	acked map[int]string // n → the reserved ID the reply gave
	due   int64          // the latest due time acknowledged (ms)
}

// delayedEntry is one entry as read back: its ID and the n it carries.
type delayedEntry struct {
	id string
	n  int
}

// checkDelayedEntries checks the stream's entries (in XRANGE order)
// against the acknowledged adds: no n twice, and, when all are due,
// every acknowledged n present under the ID its reply gave.
func checkDelayedEntries(acked map[int]string, entries []delayedEntry, allDue bool) error {
	seen := map[int]string{}
	for _, e := range entries {
		if prev, dup := seen[e.n]; dup {
			return fmt.Errorf("n=%d appears twice, at %s and %s", e.n, prev, e.id)
		}
		seen[e.n] = e.id
		if want, ok := acked[e.n]; ok && want != e.id {
			return fmt.Errorf("n=%d was acknowledged as %s but is at %s", e.n, want, e.id)
		}
	}
	if !allDue {
		return nil
	}
	for n, id := range acked {
		if _, ok := seen[n]; !ok {
			return fmt.Errorf("acknowledged n=%d (%s) is missing", n, id)
		}
	}
	return nil
}

// readDelayedEntries returns the stream's entries.
func readDelayedEntries(t *testing.T, s *Server) []delayedEntry {
	t.Helper()
	r := s.Raw(t).Do("XRANGE", delayedCrashKey, "-", "+")
	if r.Type != '*' {
		t.Fatalf("XRANGE = %s", r)
	}
	var out []delayedEntry
	for _, e := range r.Elems {
		f := e.Elems[1].Elems
		if len(f) != 4 || f[0].Str != "n" {
			t.Fatalf("entry %s has fields %s", e.Elems[0].Str, e.Elems[1])
		}
		n, err := strconv.Atoi(f[1].Str)
		if err != nil {
			t.Fatalf("entry %s: n=%q", e.Elems[0].Str, f[1].Str)
		}
		out = append(out, delayedEntry{e.Elems[0].Str, n})
	}
	return out
}

func delayedProducer(s *Server, cycle int, seed uint64, l *delayedLog, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(seed, 4))
	untilStopped(s, stop, func(c *quietConn) bool {
		l.mu.Lock()
		n := l.next
		l.next++
		l.mu.Unlock()
		delay := rng.IntN(800)
		if rng.IntN(10) == 0 {
			delay = 0 // now and then a plain add among the delayed ones
		}
		r, err := c.do("XADD", delayedCrashKey, "DELAY", strconv.Itoa(delay), "*", "n", strconv.Itoa(n), "cycle", strconv.Itoa(cycle))
		if err != nil || r.Type != '$' {
			return false
		}
		ms, _ := parseStreamID(r.Str)
		l.mu.Lock()
		l.acked[n] = r.Str
		l.due = max(l.due, int64(ms.ms))
		l.mu.Unlock()
		return true
	})
}

func TestKill9Delayed(t *testing.T) {
	if testing.Short() {
		t.Skip("crash loop skipped in -short mode")
	}
	dir := t.TempDir()
	l := &delayedLog{acked: map[int]string{}}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	cycles := max(crashCycles()/3, 5)
	for cycle := range cycles {
		s := StartServerIn(t, dir, "--appendfsync", "always")
		l.mu.Lock()
		err := checkDelayedEntries(l.acked, readDelayedEntries(t, s), false)
		l.mu.Unlock()
		if err != nil {
			t.Fatalf("after restart %d: %v", cycle, err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 3 {
			seed := rng.Uint64()
			wg.Add(1)
			go func() { defer wg.Done(); delayedProducer(s, cycle, seed, l, stop) }()
		}
		seed := int64(rng.Uint64() >> 1)
		wg.Add(1)
		go func() { defer wg.Done(); rewriteLoop(s, seed, stop) }()
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond) // a random moment to crash at
		s.Kill()
		close(stop)
		wg.Wait()
	}
	s := StartServerIn(t, dir, "--appendfsync", "always")
	l.mu.Lock()
	defer l.mu.Unlock()
	rc := s.Raw(t)
	bbWaitFor(t, 30*time.Second, "every acknowledged delayed entry to come due", func() bool {
		r := rc.Do("XINFO", "STREAM", delayedCrashKey)
		return time.Now().UnixMilli() > l.due && !containsStr(r, "delayed-entries")
	})
	if err := checkDelayedEntries(l.acked, readDelayedEntries(t, s), true); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d cycles, %d delayed adds acknowledged, all released exactly once", cycles, len(l.acked))
}

// containsStr reports whether a reply holds the bulk or simple string s
// at its top level.
func containsStr(r Reply, s string) bool {
	for _, e := range r.Elems {
		if e.Str == s {
			return true
		}
	}
	return false
}

// The checker fails on what it exists to catch: a duplicate, a missing
// acknowledged entry, an entry under another ID (the positive control).
func TestDelayedCheckerFails(t *testing.T) {
	acked := map[int]string{1: "10-0", 2: "20-0"}
	good := []delayedEntry{{"10-0", 1}, {"20-0", 2}, {"30-0", 3}}
	if err := checkDelayedEntries(acked, good, true); err != nil {
		t.Fatalf("a correct stream failed: %v", err)
	}
	for name, bad := range map[string][]delayedEntry{
		"duplicate": {{"10-0", 1}, {"20-0", 2}, {"25-0", 2}},
		"missing":   {{"10-0", 1}},
		"moved":     {{"10-0", 1}, {"21-0", 2}},
	} {
		if err := checkDelayedEntries(acked, bad, true); err == nil {
			t.Errorf("%s: the checker found nothing wrong", name)
		}
	}
}
