package replication

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// writeLoad is writers that push unique payloads (RPUSH q, XADD s) to
// whichever node leads, as a cluster client would: a MOVED reply sends a
// writer to the address it names; any other failure to the next node.
// Every outcome is recorded, so that check can tell what the group must
// hold: each acknowledged payload exactly once, each refused one never,
// an indeterminate one (an error that may hide an apply) at most once.
type writeLoad struct {
	addrs func() []string // the group's client addresses, to try in turn
	stop  chan struct{}
	wg    sync.WaitGroup

	mu      sync.Mutex
	acked   map[string]string // payload → key it was acknowledged on
	refused map[string]bool   // MOVED/CLUSTERDOWN: never applied
	unknown map[string]bool
	errs    []string // a sample of the errors seen, for failure messages
}

// startWriteLoad starts writers writers; stop them with finish.
func startWriteLoad(t *testing.T, writers int, addrs func() []string) *writeLoad {
	w := &writeLoad{addrs: addrs, stop: make(chan struct{}),
		acked: map[string]string{}, refused: map[string]bool{}, unknown: map[string]bool{}}
	for i := range writers {
		w.wg.Add(1)
		go w.write(i)
	}
	t.Cleanup(w.finish)
	return w
}

func (w *writeLoad) finish() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

func (w *writeLoad) write(writer int) {
	defer w.wg.Done()
	ctx := context.Background()
	addr, next := w.addrs()[0], 0
	var c *redis.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for seq := 0; ; seq++ {
		select {
		case <-w.stop:
			return
		default:
		}
		if c == nil {
			// No retries: a write resent by the client library would be
			// one the checker does not know about.
			c = redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1,
				DialTimeout: time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: time.Second})
		}
		payload := fmt.Sprintf("w%d-%d", writer, seq)
		key := "q"
		var err error
		if seq%2 == 0 {
			err = c.RPush(ctx, key, payload).Err()
		} else {
			key = "s"
			err = c.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"p", payload}}).Err()
		}
		moved, refused := w.record(payload, key, err)
		if err == nil {
			continue
		}
		c.Close()
		c = nil
		if moved != "" {
			addr = moved
			continue
		}
		all := w.addrs()
		next = (next + 1) % len(all)
		addr = all[next]
		if refused {
			time.Sleep(20 * time.Millisecond) // no leader yet: an election is under way
		}
	}
}

// record files a write's outcome; it returns the address a MOVED names
// and whether the write was refused (so certainly not applied).
func (w *writeLoad) record(payload, key string, err error) (moved string, refused bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.acked[payload] = key
		return "", false
	}
	if len(w.errs) < 20 {
		w.errs = append(w.errs, err.Error())
	}
	moved, refused = refusal(err)
	if refused {
		w.refused[payload] = true
	} else {
		w.unknown[payload] = true
	}
	return moved, refused
}

// refusal tells a write's error that certainly means the write was not
// applied — a redirect (MOVED, and the address it names) or no leader
// (CLUSTERDOWN) — from one that may hide an apply.
func refusal(err error) (moved string, refused bool) {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "MOVED "):
		return msg[strings.LastIndexByte(msg, ' ')+1:], true
	case strings.HasPrefix(msg, "CLUSTERDOWN"):
		return "", true
	}
	return "", false
}

func (w *writeLoad) ackedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// waitProgress waits for n more writes to be acknowledged.
func (w *writeLoad) waitProgress(t *testing.T, n int) {
	t.Helper()
	want := w.ackedCount() + n
	waitFor(t, fmt.Sprintf("%d more acknowledged writes", n), func() bool { return w.ackedCount() >= want })
}

// check stops the writers and verifies what the node at addr holds
// against what they were told.
func (w *writeLoad) check(t *testing.T, addr string) {
	t.Helper()
	w.finish()
	held := heldPayloads(t, addr)
	w.mu.Lock()
	defer w.mu.Unlock()
	for p, key := range w.acked {
		if got := held[p]; len(got) != 1 || got[0] != key {
			t.Errorf("acknowledged write %s to %s is held %d times (%v)", p, key, len(got), got)
		}
	}
	for p, keys := range held {
		switch {
		case len(keys) > 1:
			t.Errorf("payload %s is held %d times (%v)", p, len(keys), keys)
		case w.refused[p]:
			t.Errorf("refused write %s was applied", p)
		case w.acked[p] == "" && !w.unknown[p]:
			t.Errorf("payload %s was never sent, yet is held", p)
		}
	}
	if t.Failed() {
		t.Logf("errors the writers saw (sample): %q", w.errs)
	}
	t.Logf("writes: %d acknowledged, %d refused, %d indeterminate", len(w.acked), len(w.refused), len(w.unknown))
}

// heldPayloads is every payload the list q and the stream s hold, with
// the keys each is in (once per copy).
func heldPayloads(t *testing.T, addr string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	list, err := c.LRange(ctx, "q", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := c.XRange(ctx, "s", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	held := map[string][]string{}
	for _, p := range list {
		held[p] = append(held[p], "q")
	}
	for _, e := range entries {
		p, _ := e.Values["p"].(string)
		held[p] = append(held[p], "s")
	}
	return held
}

// waitSameDigest waits for every running node to hold the same keyspace.
func waitSameDigest(t *testing.T, nodes []*testNode) {
	t.Helper()
	var running []*testNode
	for _, n := range nodes {
		if n.srv != nil {
			running = append(running, n)
		}
	}
	var last []string
	waitForWithin(t, 30*time.Second, "every node to hold the same keyspace", func() bool {
		last = last[:0]
		for _, n := range running {
			last = append(last, digest(t, n.srv))
		}
		for _, d := range last {
			if d != last[0] {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprint(last) })
}
