package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Age retention under kill -9 (issue 15 §5): producers XADD to a stream
// with MAXAGE while AOF rewrites and RDB saves come and go, and the
// server is killed at a random moment. After every restart: every entry
// is one we sent, at its acknowledged ID; no acknowledged XADD younger
// than MAXAGE is missing; and with nobody writing, the restarted server's
// sweeper removes every entry older than MAXAGE.

const (
	agedKey    = "aged"
	agedMaxAge = 3000 // ms: longer than a restart, shorter than the run
)

// ageLog is what the producers saw acknowledged before the crash.
type ageLog struct {
	mu    sync.Mutex
	nextN int
	sent  map[int]bool
	added map[int]string // n → ID, for XADDs whose reply was received
	errs  []string       // wrong replies the producers saw
	young int            // acknowledged entries checked present while young
	aged  int            // acknowledged entries gone once too old
}

func newAgeLog() *ageLog { return &ageLog{sent: map[int]bool{}, added: map[int]string{}} }

func agedProducer(s *Server, l *ageLog, stop <-chan struct{}) {
	untilStopped(s, stop, func(c *quietConn) bool {
		l.mu.Lock()
		l.nextN++
		n := l.nextN
		l.sent[n] = true
		l.mu.Unlock()
		r, err := c.do("XADD", agedKey, "*", "n", strconv.Itoa(n))
		if err != nil {
			return false // cut off: the entry may or may not be there
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if _, ok := parseStreamID(r.Str); r.Type != '$' || !ok {
			l.errs = append(l.errs, fmt.Sprintf("XADD n=%d = %s", n, r))
			return false
		}
		l.added[n] = r.Str
		return true
	})
}

// checkAged checks the restarted server's stream against the log (see
// the top of the file), waiting at most bound for the sweeper. It
// returns the first problem found.
func checkAged(c *redis.Client, l *ageLog, bound time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) > 0 {
		return fmt.Errorf("the producers saw: %s", strings.Join(l.errs, "; "))
	}
	msgs, err := c.XRange(ctx0(), agedKey, "-", "+").Result()
	if err != nil {
		return err
	}
	// Every trim so far ran at a record time before this moment, so it
	// removed only entries older than after-MAXAGE.
	after := time.Now().UnixMilli()
	present := map[string]int{}
	for _, m := range msgs {
		n, err := strconv.Atoi(fmt.Sprint(m.Values["n"]))
		if err != nil || len(m.Values) != 1 || !l.sent[n] {
			return fmt.Errorf("entry %s %v was never sent", m.ID, m.Values)
		}
		if id, ok := l.added[n]; ok && id != m.ID {
			return fmt.Errorf("XADD n=%d was acknowledged with ID %s but is at %s", n, id, m.ID)
		}
		present[m.ID] = n
	}
	for n, id := range l.added {
		sid, _ := parseStreamID(id)
		switch age := after - int64(sid.ms); {
		case age <= agedMaxAge && present[id] != n:
			return fmt.Errorf("acknowledged XADD n=%d (%s, %d ms old, MAXAGE %d) is missing", n, id, age, agedMaxAge)
		case age <= agedMaxAge:
			l.young++
		}
	}

	// Nobody writes now: the sweeper alone removes the too-old entries.
	cut := time.Now().UnixMilli() - agedMaxAge
	deadline := time.Now().Add(bound)
	for {
		old, err := c.XRangeN(ctx0(), agedKey, "-", strconv.FormatInt(cut-1, 10), 1).Result()
		if err != nil {
			return err
		}
		if len(old) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("entry %s is older than MAXAGE %d ms but still there %v after restart", old[0].ID, agedMaxAge, bound)
		}
		time.Sleep(10 * time.Millisecond) // polling what the server's cron changes
	}
	for n, id := range l.added {
		if sid, _ := parseStreamID(id); int64(sid.ms) < cut {
			l.aged++
			delete(l.added, n) // gone for good: later cycles need not look
		}
	}
	return nil
}

// ctx0 is a context for calls that report errors instead of failing the
// test (go-redis's own timeouts bound them).
func ctx0() context.Context { return context.Background() }

func TestKill9MaxAge(t *testing.T) {
	if testing.Short() {
		t.Skip("crash loop skipped in -short mode")
	}
	dir := t.TempDir()
	l := newAgeLog()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 15))
	for cycle := range crashCycles() {
		s := StartServerIn(t, dir, "--appendfsync", "always")
		c := s.Client(t)
		if cycle == 0 {
			mustDo(t, c, "XADD", agedKey, "*", "n", "0")
			l.sent[0] = true
			mustDo(t, c, "XCFGSET", agedKey, "MAXAGE", strconv.Itoa(agedMaxAge))
		} else if err := checkAged(c, l, 30*time.Second); err != nil {
			t.Fatalf("cycle %d, after kill -9: %v", cycle, err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(3)
		seed := rng.Int64()
		go func() { defer wg.Done(); rewriteLoop(s, seed, stop) }()
		go func() { defer wg.Done(); agedProducer(s, l, stop) }()
		go func() { defer wg.Done(); agedProducer(s, l, stop) }()
		time.Sleep(time.Duration(20+rng.IntN(150)) * time.Millisecond) // the random moment of the crash
		s.Kill()
		close(stop)
		wg.Wait()
	}
	s := StartServerIn(t, dir)
	c := s.Client(t)
	if err := checkAged(c, l, 30*time.Second); err != nil {
		t.Fatalf("after the last kill -9: %v", err)
	}
	if info := xinfoFields(t, c, agedKey); info["max-age"] != int64(agedMaxAge) {
		t.Fatalf("MAXAGE lost across the crashes: XINFO STREAM %v", info)
	}
	t.Logf("%d XADDs sent, %d acknowledged; acknowledged entries found present while young: %d (once per check); gone once too old: %d",
		len(l.sent), len(l.added)+l.aged, l.young, l.aged)
}

// The checker can fail: a young acknowledged entry that is missing, and
// old entries a server without MAXAGE never removes, are both reported.
func TestKill9MaxAgeCheckerCanFail(t *testing.T) {
	s := StartServer(t)
	c := s.Client(t)
	l := newAgeLog()
	for n := 1; n <= 3; n++ {
		l.sent[n] = true
		l.added[n] = mustDo(t, c, "XADD", agedKey, "*", "n", n).(string)
	}
	mustDo(t, c, "XCFGSET", agedKey, "MAXAGE", strconv.Itoa(agedMaxAge))
	if err := checkAged(c, l, 30*time.Second); err != nil {
		t.Fatalf("the checker fails a good stream: %v", err)
	}
	mustDo(t, c, "XDEL", agedKey, l.added[2]) // lost, as a crash might lose it
	if err := checkAged(c, l, 30*time.Second); err == nil || !strings.Contains(err.Error(), "n=2") {
		t.Fatalf("a missing young entry: checker says %v", err)
	}

	mustDo(t, c, "DEL", agedKey) // a stream without MAXAGE keeps its old entries
	l = newAgeLog()
	l.sent[1] = true
	mustDo(t, c, "XADD", agedKey, oldID(0), "n", "1")
	if err := checkAged(c, l, 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "still there") {
		t.Fatalf("an old entry never swept: checker says %v", err)
	}
}
