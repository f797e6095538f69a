package tests

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The checker behind the cluster fault tests: producers write unique
// payloads (RPUSH to a few lists, XADD to a few streams) while faults
// happen, and every write's outcome is recorded as the client saw it.
// Read back once the group has settled, the keys must hold every
// acknowledged payload exactly once, no payload the server said it did
// not apply, no payload nobody sent, and each indeterminate one at most
// once.

// outcome is what a producer learned about one write.
type outcome int

const (
	inFlight      outcome = iota
	acked                 // a reply: the group committed and applied it
	failed                // an error that says it was not applied
	indeterminate         // -UNKNOWN, a timeout or a broken connection: it may have been
)

// sentWrite is one payload a producer sent.
type sentWrite struct {
	key      string
	producer int
	seq      int
	outcome  outcome
}

// Checker records the writes of one test and checks a group against them.
type Checker struct {
	Lists, Streams []string

	mu      sync.Mutex
	writes  map[string]*sentWrite // by payload
	reasons map[string]int        // failed and indeterminate outcomes, by kind
	next    int                   // producers started, for unique payloads
	acked   int                   // writes acknowledged so far
}

// NewChecker writes to three lists and two streams.
func NewChecker() *Checker {
	return NewCheckerKeys([]string{"chk:list:a", "chk:list:b", "chk:list:c"}, []string{"chk:stream:a", "chk:stream:b"})
}

// NewCheckerKeys writes to the lists and streams given: keys spread over
// the slots reach every group of a partitioned cluster.
func NewCheckerKeys(lists, streams []string) *Checker {
	return &Checker{Lists: lists, Streams: streams, writes: map[string]*sentWrite{}, reasons: map[string]int{}}
}

func (ch *Checker) keys() []string { return slices.Concat(ch.Lists, ch.Streams) }

func (ch *Checker) isStream(key string) bool { return slices.Contains(ch.Streams, key) }

// Produce starts n producers writing through cc until the returned stop
// is called; stop waits for every write in flight to have an outcome.
func (ch *Checker) Produce(cc *redis.ClusterClient, n int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		id := ch.newProducer()
		wg.Add(1)
		go func() { defer wg.Done(); ch.produce(cc, id, done) }()
	}
	return func() { close(done); wg.Wait() }
}

// newProducer returns a producer number no other producer has had.
func (ch *Checker) newProducer() int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.next++
	return ch.next - 1
}

// WaitAcked waits until n more writes than now have been acknowledged:
// the group is taking writes.
func (ch *Checker) WaitAcked(t testing.TB, n int) {
	t.Helper()
	ch.mu.Lock()
	want := ch.acked + n
	ch.mu.Unlock()
	deadline := time.Now().Add(clusterBound)
	for {
		ch.mu.Lock()
		got, reasons := ch.acked, maps.Clone(ch.reasons)
		ch.mu.Unlock()
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d more writes acknowledged within %v; outcomes so far %v", got-want+n, n, clusterBound, reasons)
		}
		time.Sleep(10 * time.Millisecond) // polling the producers' count: nothing to wait on
	}
}

// produce writes payloads one at a time, each to the next key in turn.
func (ch *Checker) produce(cc *redis.ClusterClient, id int, done <-chan struct{}) {
	keys := ch.keys()
	for seq := 0; ; seq++ {
		select {
		case <-done:
			return
		default:
		}
		key := keys[(id+seq)%len(keys)]
		payload := ch.Sent(key, id, seq)
		err := ch.writeOnce(cc, key, payload)
		if ch.Record(payload, err) != acked {
			// The slot map may name a node that is gone; go-redis re-reads
			// it on -MOVED, but not when the node cannot be reached.
			cc.ReloadState(context.Background())
			// Not a synchronisation: it keeps a producer from spinning
			// on an unavailable group while an election runs.
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// Sent records a payload about to be written to key and returns it.
func (ch *Checker) Sent(key string, producer, seq int) string {
	payload := fmt.Sprintf("p%d-%d", producer, seq)
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.writes[payload] = &sentWrite{key: key, producer: producer, seq: seq}
	return payload
}

// Record records the outcome of a payload's write and returns it.
func (ch *Checker) Record(payload string, err error) outcome {
	o, reason := classify(err)
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.writes[payload].outcome = o
	if o == acked {
		ch.acked++
	}
	if reason != "" {
		ch.reasons[reason]++
	}
	return o
}

// writeCommand is the command that writes payload to key.
func (ch *Checker) writeCommand(key, payload string) []string {
	if ch.isStream(key) {
		return []string{"XADD", key, "*", "p", payload}
	}
	return []string{"RPUSH", key, payload}
}

// writeOnce sends one write. The cluster client follows -MOVED (which
// says the write was not applied) by itself, but it would also resend a
// write whose connection broke, and a resent write may be applied twice:
// onceCmd tells it not to, so each outcome is the one the server gave.
func (ch *Checker) writeOnce(cc *redis.ClusterClient, key, payload string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var args []any
	for _, a := range ch.writeCommand(key, payload) {
		args = append(args, a)
	}
	cmd := onceCmd{redis.NewCmd(ctx, args...)}
	_ = cc.Process(ctx, cmd)
	return cmd.Err()
}

// onceCmd is a command go-redis does not retry after a failure.
type onceCmd struct{ *redis.Cmd }

func (onceCmd) NoRetry() bool { return true }

// classify turns a write's error into its outcome and the kind counted.
// Only the server's own "not applied" answers and a connection that was
// never made count as failed; anything else may have been applied.
func classify(err error) (outcome, string) {
	if err == nil {
		return acked, ""
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return failed, "dial"
	}
	msg := err.Error()
	// TRYAGAIN: a command of a moving slot the source cannot place yet (a
	// key being copied) is refused before the log; ASK: one of a key the
	// source no longer holds.
	for _, prefix := range []string{"MOVED", "ASK", "CLUSTERDOWN", "READONLY", "TRYAGAIN"} {
		if strings.HasPrefix(msg, prefix+" ") {
			return failed, prefix
		}
	}
	var ne net.Error
	switch {
	case strings.HasPrefix(msg, "UNKNOWN "):
		return indeterminate, "UNKNOWN"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return indeterminate, "EOF"
	case errors.Is(err, syscall.ECONNRESET):
		return indeterminate, "connection reset"
	case errors.Is(err, syscall.EPIPE):
		return indeterminate, "broken pipe"
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return indeterminate, "timeout"
	}
	return indeterminate, "other: " + msg
}

// Contents reads every key of the checker through r: key → payloads, in
// the key's order. A read that fails (an election the slow machine set
// off, a slot map to refresh) is tried again, within a bound.
func (ch *Checker) Contents(t testing.TB, r redis.Cmdable) map[string][]string {
	t.Helper()
	deadline := time.Now().Add(clusterBound)
	for {
		out, err := ch.readContents(r)
		if err == nil {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("reading the checker's keys: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // before trying again: nothing to wait on
	}
}

func (ch *Checker) readContents(r redis.Cmdable) (map[string][]string, error) {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string][]string{}
	for _, key := range ch.Lists {
		vals, err := r.LRange(c, key, 0, -1).Result()
		if err != nil {
			return nil, fmt.Errorf("LRANGE %s: %w", key, err)
		}
		out[key] = vals
	}
	for _, key := range ch.Streams {
		msgs, err := r.XRange(c, key, "-", "+").Result()
		if err != nil {
			return nil, fmt.Errorf("XRANGE %s: %w", key, err)
		}
		for _, m := range msgs {
			p, _ := m.Values["p"].(string)
			out[key] = append(out[key], p)
		}
	}
	return out, nil
}

// CheckReport is what a check found.
type CheckReport struct {
	Acked, Failed, Indeterminate int
	IndeterminateFound           int            // indeterminate writes that were applied
	Reasons                      map[string]int // failed and indeterminate outcomes, by kind
	Lost                         []string       // acknowledged, not there
	Duplicated                   []string       // there more than once
	Unsent                       []string       // there, never sent (to that key)
	FailedFound                  []string       // there, though the server said it was not applied
	Reordered                    []string       // acknowledged, before a write its producer made earlier
}

// Clean reports whether the check found nothing wrong.
func (r CheckReport) Clean() bool {
	return len(r.Lost)+len(r.Duplicated)+len(r.Unsent)+len(r.FailedFound)+len(r.Reordered) == 0
}

func (r CheckReport) String() string {
	s := fmt.Sprintf("%d acknowledged, %d failed, %d indeterminate (%d of them applied); outcomes %v",
		r.Acked, r.Failed, r.Indeterminate, r.IndeterminateFound, r.Reasons)
	for _, p := range []struct {
		name string
		list []string
	}{{"LOST", r.Lost}, {"DUPLICATED", r.Duplicated}, {"UNSENT", r.Unsent}, {"FAILED BUT APPLIED", r.FailedFound}, {"REORDERED", r.Reordered}} {
		if len(p.list) > 0 {
			s += fmt.Sprintf("\n%s (%d): %v", p.name, len(p.list), p.list[:min(len(p.list), 20)])
		}
	}
	return s
}

// Check compares contents (Contents) with the writes recorded. Call it
// once every producer has stopped.
func (ch *Checker) Check(contents map[string][]string) CheckReport {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	r := CheckReport{Reasons: maps.Clone(ch.reasons)}
	found := map[string]int{}
	for key, payloads := range contents {
		lastSeq := map[int]int{} // producer → seq of its last acknowledged write seen in key
		for _, p := range payloads {
			found[p]++
			w := ch.writes[p]
			if w == nil || w.key != key {
				r.Unsent = append(r.Unsent, key+"/"+p)
				continue
			}
			if w.outcome != acked {
				continue
			}
			if last, ok := lastSeq[w.producer]; ok && w.seq < last {
				r.Reordered = append(r.Reordered, key+"/"+p)
			}
			lastSeq[w.producer] = w.seq
		}
	}
	for p, w := range ch.writes {
		n := found[p]
		if n > 1 {
			r.Duplicated = append(r.Duplicated, p)
		}
		switch w.outcome {
		case acked:
			r.Acked++
			if n == 0 {
				r.Lost = append(r.Lost, p)
			}
		case failed:
			r.Failed++
			if n > 0 {
				r.FailedFound = append(r.FailedFound, p)
			}
		case indeterminate, inFlight:
			r.Indeterminate++
			if n > 0 {
				r.IndeterminateFound++
			}
		}
	}
	for _, l := range [][]string{r.Lost, r.Duplicated, r.Unsent, r.FailedFound, r.Reordered} {
		slices.Sort(l)
	}
	return r
}

// AcknowledgedIn returns the payloads acknowledged as written to key by
// producer, in the order it wrote them, for a test that tampers with them.
func (ch *Checker) AcknowledgedIn(key string, producer int) []string {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	var ws []*sentWrite
	byWrite := map[*sentWrite]string{}
	for p, w := range ch.writes {
		if w.outcome == acked && w.key == key && w.producer == producer {
			ws = append(ws, w)
			byWrite[w] = p
		}
	}
	slices.SortFunc(ws, func(a, b *sentWrite) int { return a.seq - b.seq })
	var out []string
	for _, w := range ws {
		out = append(out, byWrite[w])
	}
	return out
}

// whereHeld says, for each payload, which running nodes hold it in their
// own state (read with READONLY, so a follower answers too) and where:
// when a write is missing from the leader, whether another node has it
// tells a lost commit from a stale read.
func (ch *Checker) whereHeld(c *TestCluster, payloads []string) string {
	if len(payloads) == 0 {
		return ""
	}
	var b strings.Builder
	for _, n := range c.Nodes {
		if !n.running() {
			continue
		}
		contents, err := ch.readContents(readOnlyClient(c.t, n))
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", n.Name, err)
			continue
		}
		held := map[string]string{}
		for key, ps := range contents {
			for i, p := range ps {
				held[p] = fmt.Sprintf("%s[%d of %d]", key, i, len(ps))
			}
		}
		for _, p := range payloads {
			fmt.Fprintf(&b, "%s holds %s: %q\n", n.Name, p, held[p])
		}
	}
	return b.String()
}
