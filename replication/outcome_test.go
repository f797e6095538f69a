package replication

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A planned hand-over of leadership (the balancer's, or an operator's)
// must not leave writers guessing: the writes the old leader had in its
// log when it stepped down are answered with what became of them once
// the new leader's log settles it, and the writes it took while handing
// over are refused as never proposed. So across several hand-overs under
// load no writer sees -UNKNOWN, every acknowledged write is in the list
// once, and no refused one is.
func TestHandOverAnswersTheWritesInFlight(t *testing.T) {
	nodes := startGroup(t)
	leader := leaderOf(t, nodes)
	clients := map[string]*redis.Client{}
	for _, n := range nodes {
		c := redis.NewClient(&redis.Options{Addr: n.addr, MaxRetries: -1, PoolSize: 4})
		t.Cleanup(func() { c.Close() })
		clients[n.addr] = c
	}

	const writers = 16
	to := make([]string, writers) // where each writer sends: MOVED moves it
	for w := range to {
		to[w] = leader.addr
	}
	log := &outcomeLog{}
	stop := log.startWriters(writers, func(w int, payload string) error {
		err := clients[to[w]].RPush(context.Background(), "q", payload).Err()
		if err != nil && strings.HasPrefix(err.Error(), "MOVED ") { // MOVED slot host:port
			f := strings.Fields(err.Error())
			to[w] = f[len(f)-1]
		}
		return err
	})
	acked := log.countAcked
	for round := range 3 {
		before := acked()
		waitFor(t, "writes under the current leader", func() bool { return acked() >= before+200 })
		from := leaderOf(t, nodes)
		next := nodes[(indexOf(nodes, from)+1)%len(nodes)]
		if err := from.node.main.TransferLeadership(next.node.Self().ID); err != nil {
			t.Fatalf("round %d: handing over to %s: %v", round, next.addr, err)
		}
		waitFor(t, "the new leader", func() bool { return next.node.Leading() })
	}
	before := acked()
	waitFor(t, "writes under the last leader", func() bool { return acked() >= before+200 })
	stop()

	final := leaderOf(t, nodes)
	list, err := clients[final.addr].LRange(context.Background(), "q", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	checkOutcomes(t, log.outcomes, list)
}

func indexOf(nodes []*testNode, n *testNode) int {
	for i, m := range nodes {
		if m == n {
			return i
		}
	}
	panic(errors.New("not a node of the group"))
}

// A leader cut off from its followers (its messages to them lost, theirs
// to it arriving) steps down with writes in its log that reached nobody.
// Once the new leader's log reaches it, it tells their writers they were
// not applied: no writer is left with -UNKNOWN, and none of the refused
// writes is in the list.
func TestDeposedLeaderSettlesItsWritesInFlight(t *testing.T) {
	g := startInmemGroup(t, func(c *Config) { c.settleWait = time.Minute })
	old := leaderOf(t, g.nodes)
	from := indexOf(g.nodes, old)
	c := redis.NewClient(&redis.Options{Addr: old.addr, MaxRetries: -1, PoolSize: 8, ReadTimeout: 2 * time.Minute})
	t.Cleanup(func() { c.Close() })

	const writers = 8
	log := &outcomeLog{}
	stop := log.startWriters(writers, func(_ int, payload string) error {
		return c.RPush(context.Background(), "q", payload).Err()
	})
	waitFor(t, "writes to the leader", func() bool { return log.countAcked() >= 200 })
	log.mark()
	g.trans[from].DisconnectAll() // its messages to the others are lost; theirs reach it
	g.leaderOtherThan(t, from)
	// Every writer is answered for the write it had in flight at the cut,
	// and then refused again, by a node that knows it does not lead.
	waitFor(t, "every writer answered twice since the cut", func() bool { return log.countMarked() >= 2*writers })
	stop()
	g.heal()

	reader := redis.NewClient(&redis.Options{Addr: leaderOf(t, g.nodes).addr})
	defer reader.Close()
	list, err := reader.LRange(context.Background(), "q", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	checkOutcomes(t, log.outcomes, list)
}

// outcomeLog records what became of each writer's writes.
type outcomeLog struct {
	mu       sync.Mutex
	outcomes map[string]string // payload → "ok", or the error's first word
	acked    int
	marking  bool
	marked   int // writes sent after mark
}

// startWriters starts n writers, each sending payloads w<n>-<i> with
// push until the returned stop is called (it waits for them).
func (l *outcomeLog) startWriters(n int, push func(w int, payload string) error) (stop func()) {
	l.outcomes = map[string]string{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				payload := fmt.Sprintf("w%d-%d", w, i)
				l.mu.Lock()
				marked := l.marking
				l.mu.Unlock()
				l.record(payload, push(w, payload), marked)
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}

func (l *outcomeLog) record(payload string, err error, marked bool) {
	outcome := "ok"
	if err != nil {
		outcome, _, _ = strings.Cut(err.Error(), " ")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outcomes[payload] = outcome
	if outcome == "ok" {
		l.acked++
	}
	if marked {
		l.marked++
	}
}

// mark starts counting the writes sent from now on (countMarked).
func (l *outcomeLog) mark() {
	l.mu.Lock()
	l.marking = true
	l.mu.Unlock()
}

func (l *outcomeLog) countAcked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked
}

func (l *outcomeLog) countMarked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.marked
}

// checkOutcomes fails the test unless each acknowledged payload is in
// list once and no refused one is, and no write was left -UNKNOWN.
func checkOutcomes(t *testing.T, outcomes map[string]string, list []string) {
	t.Helper()
	found := map[string]int{}
	for _, p := range list {
		found[p]++
	}
	counts := map[string]int{}
	for p, o := range outcomes {
		counts[o]++
		switch o {
		case "ok":
			if found[p] != 1 {
				t.Errorf("acknowledged %s is in the list %d times", p, found[p])
			}
		case "CLUSTERDOWN", "MOVED":
			if found[p] != 0 {
				t.Errorf("%s, refused with %s, is in the list", p, o)
			}
		case "UNKNOWN":
		default:
			t.Errorf("%s: unexpected outcome %q", p, o)
		}
	}
	t.Logf("outcomes: %v", counts)
	if counts["UNKNOWN"] > 0 {
		t.Errorf("%d writes were left UNKNOWN", counts["UNKNOWN"])
	}
}
