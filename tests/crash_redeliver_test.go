package tests

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestKill9Redelivery: a group with an ack wait, one producer, two
// workers that abandon (never acknowledge) one entry in four, and the
// server killed with SIGKILL again and again. Nobody ever claims
// anything: after the last restart, workers that acknowledge everything
// must still be handed every acknowledged XADD, by the server's
// redelivery alone, until the PEL is empty. An entry the server forgot
// (its XADD, its PEL entry, or the policy) would never come back.
func TestKill9Redelivery(t *testing.T) {
	if testing.Short() {
		t.Skip("crash loop skipped in -short mode")
	}
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--appendfsync", "always")
	raw := s.Raw(t)
	if r := raw.Do("XGROUP", "CREATE", "jobs", "g", "$", "MKSTREAM", "ACKWAIT", "100"); r.Type == '-' {
		t.Fatalf("XGROUP CREATE ... ACKWAIT = %s", r)
	}
	chk := newRedeliveryCheck()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 15))
	for cycle := range max(crashCycles()/5, 3) {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(3)
		go func() { defer wg.Done(); chk.produce(s, cycle, stop) }()
		for w := range 2 {
			seed := rng.Uint64()
			go func() { defer wg.Done(); chk.work(s, fmt.Sprint("w", w), rand.New(rand.NewPCG(seed, 1)), 4, stop) }()
		}
		time.Sleep(time.Duration(50+rng.IntN(300)) * time.Millisecond) // the random moment of the crash
		s.Kill()
		close(stop)
		wg.Wait()
		s = StartServerIn(t, dir, "--appendfsync", "always")
	}
	// Healthy workers now, until the group has nothing left to give.
	deadline := time.Now().Add(60 * time.Second)
	for {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Add(1)
			go func() { defer wg.Done(); chk.work(s, fmt.Sprint("h", w), nil, 0, stop) }()
		}
		time.Sleep(300 * time.Millisecond) // a round of draining, then look
		close(stop)
		wg.Wait()
		if n := s.Raw(t).Do("XPENDING", "jobs", "g").Elems[0].Int; n == 0 && chk.missing() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s of healthy workers: %d pending, never delivered: %v", s.Raw(t).Do("XPENDING", "jobs", "g").Elems[0].Int, chk.missing())
		}
	}
	if lag := s.Raw(t).Do("XINFO", "GROUPS", "jobs"); lag.Type == '-' {
		t.Fatalf("XINFO GROUPS = %s", lag)
	}
	// Positive control: an acknowledged XADD nobody was handed is found.
	chk.mu.Lock()
	chk.added[-1] = "1-1"
	chk.mu.Unlock()
	if m := chk.missing(); len(m) != 1 || m[0] != "1-1" {
		t.Fatalf("the checker missed an acknowledged entry never delivered: %v", m)
	}
	t.Logf("%d entries acknowledged by XADD, %d deliveries, %d redeliveries seen", len(chk.added)-1, chk.deliveries, chk.redeliveries)
}

// redeliveryCheck is what the clients of TestKill9Redelivery saw.
type redeliveryCheck struct {
	mu                       sync.Mutex
	next                     int
	added                    map[int]string // n → ID, XADDs whose reply was received
	handed                   map[string]int // ID → deliveries received
	deliveries, redeliveries int
}

func newRedeliveryCheck() *redeliveryCheck {
	return &redeliveryCheck{added: map[int]string{}, handed: map[string]int{}}
}

func (k *redeliveryCheck) produce(s *Server, cycle int, stop <-chan struct{}) {
	untilStopped(s, stop, func(c *quietConn) bool {
		k.mu.Lock()
		k.next++
		n := k.next
		k.mu.Unlock()
		r, err := c.do("XADD", "jobs", "*", "n", strconv.Itoa(n), "cycle", strconv.Itoa(cycle))
		if err != nil || r.Type != '$' {
			return false
		}
		k.mu.Lock()
		k.added[n] = r.Str
		k.mu.Unlock()
		return true
	})
}

// work reads with XREADGROUP ">" and acknowledges what it is handed,
// except one entry in abandon (when rng is set): a worker that died
// with it.
func (k *redeliveryCheck) work(s *Server, name string, rng *rand.Rand, abandon int, stop <-chan struct{}) {
	untilStopped(s, stop, func(c *quietConn) bool {
		r, err := c.do("XREADGROUP", "GROUP", "g", name, "COUNT", "5", "BLOCK", "50", "STREAMS", "jobs", ">")
		if err != nil || r.Type == '-' {
			return false
		}
		if r.Null || len(r.Elems) == 0 {
			return true
		}
		var ack []string
		for _, e := range r.Elems[0].Elems[1].Elems {
			id := e.Elems[0].Str
			k.mu.Lock()
			k.handed[id]++
			k.deliveries++
			if k.handed[id] > 1 {
				k.redeliveries++
			}
			k.mu.Unlock()
			if rng == nil || rng.IntN(abandon) != 0 {
				ack = append(ack, id)
			}
		}
		if len(ack) > 0 {
			if r, err := c.do(append([]string{"XACK", "jobs", "g"}, ack...)...); err != nil || r.Type != ':' {
				return false
			}
		}
		return true
	})
}

// missing returns the acknowledged XADDs never handed to a worker.
func (k *redeliveryCheck) missing() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, id := range k.added {
		if k.handed[id] == 0 {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}
