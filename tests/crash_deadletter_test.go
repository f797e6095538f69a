package tests

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestKill9DeadLetter is the dead-letter half of the crash tests (issue
// 15): with appendfsync always, a producer XADDs numbered entries to a
// stream whose group has MAXDELIVER 3 and a dead-letter stream; workers
// read them, fail most (leave them pending), steal each other's with
// XAUTOCLAIM — which moves an entry at its third delivery to the
// dead-letter stream — give some up with XNACK FATAL, and XACK some, one
// at a time. The server is killed -9 at random moments. After every
// restart each entry the producer was told about is in the stream, and
// each delivered entry is in exactly one place: acknowledged by a worker,
// still pending, or in the dead-letter stream — none lost, none
// dead-lettered twice.

const (
	dlCrashStream = "work"
	dlCrashDLQ    = "work:dlq"
	dlCrashGroup  = "g"
)

// dlCrashLog is what the clients saw acknowledged.
type dlCrashLog struct {
	mu     sync.Mutex
	nextN  int
	added  map[string]int  // ID → n, for XADDs whose reply was received
	acked  map[string]bool // IDs an XACK reply said it removed
	ackCut map[string]bool // IDs in an XACK the crash cut off
	errs   []string        // wrong replies the workers saw
	dead   int             // dead letters at the last check
}

func newDLCrashLog() *dlCrashLog {
	return &dlCrashLog{added: map[string]int{}, acked: map[string]bool{}, ackCut: map[string]bool{}}
}

func TestKill9DeadLetter(t *testing.T) {
	if testing.Short() {
		t.Skip("crash loop skipped in -short mode")
	}
	dir := t.TempDir()
	if d := os.Getenv("REDSTREAM_CRASH_DIR"); d != "" {
		dir = d
	}
	l := newDLCrashLog()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 15))
	cycles := max(crashCycles()/2, 10)
	for cycle := range cycles {
		s := StartServerIn(t, dir, "--appendfsync", "always")
		raw := s.Raw(t)
		if cycle == 0 {
			if r := raw.Do("XGROUP", "CREATE", dlCrashStream, dlCrashGroup, "$", "MKSTREAM", "MAXDELIVER", "3", "DEADLETTER", dlCrashDLQ); r.Type != '+' {
				t.Fatalf("XGROUP CREATE = %s", r)
			}
		}
		if err := l.verify(raw, true); err != nil {
			t.Fatalf("cycle %d, after kill -9: %v", cycle, err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(3)
		seeds := [3]int64{rng.Int64(), rng.Int64(), rng.Int64()} // drawn here: rng is not shared
		go func() { defer wg.Done(); l.produce(s, stop) }()
		for w := range 2 {
			go func() { defer wg.Done(); l.work(s, fmt.Sprintf("w%d", w), seeds[w], stop) }()
		}
		time.Sleep(time.Duration(30+rng.IntN(150)) * time.Millisecond) // the random moment of the crash
		s.Kill()
		close(stop)
		wg.Wait()
	}
	s := StartServerIn(t, dir)
	raw := s.Raw(t)
	if err := l.verify(raw, true); err != nil {
		t.Fatalf("after the last kill -9: %v", err)
	}
	if l.dead == 0 || len(l.acked) == 0 {
		t.Fatalf("the load made %d dead letters and %d acks: it proves nothing", l.dead, len(l.acked))
	}
	t.Logf("%d entries added, %d acknowledged by workers, %d dead-lettered", len(l.added), len(l.acked), l.dead)
	dlCrashControls(t, raw, l)
}

// dlCrashControls shows that verify can fail: a dead letter written twice
// and one lost are both caught.
func dlCrashControls(t *testing.T, raw *RawConn, l *dlCrashLog) {
	t.Helper()
	first := raw.Do("XRANGE", dlCrashDLQ, "-", "+", "COUNT", "1").Elems[0]
	dup := []string{"XADD", dlCrashDLQ, "*"}
	for _, f := range first.Elems[1].Elems {
		dup = append(dup, f.Str)
	}
	copyID := raw.Do(dup...).Str
	if err := l.verify(raw, false); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("a dead letter written twice was not caught: %v", err)
	}
	raw.Do("XDEL", dlCrashDLQ, copyID)
	if err := l.verify(raw, false); err != nil {
		t.Fatalf("the control's undo: %v", err)
	}
	raw.Do("XDEL", dlCrashDLQ, first.Elems[0].Str)
	if err := l.verify(raw, false); err == nil || !strings.Contains(err.Error(), "lost") {
		t.Fatalf("a lost dead letter was not caught: %v", err)
	}
}

func (l *dlCrashLog) produce(s *Server, stop <-chan struct{}) {
	untilStopped(s, stop, func(c *quietConn) bool {
		l.mu.Lock()
		l.nextN++
		n := l.nextN
		l.mu.Unlock()
		r, err := c.do("XADD", dlCrashStream, "*", "n", strconv.Itoa(n))
		if err != nil {
			return false
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if r.Type != '$' {
			l.errs = append(l.errs, fmt.Sprintf("XADD n=%d = %s", n, r))
			return false
		}
		l.added[r.Str] = n
		return true
	})
}

// work is one worker: it reads new entries or steals pending ones (which
// dead-letters those at the cap), gives one up now and then with XNACK
// FATAL, and acknowledges about a third of what it got.
func (l *dlCrashLog) work(s *Server, name string, seed int64, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(uint64(seed), 4))
	var held []string
	untilStopped(s, stop, func(c *quietConn) bool {
		var got []string
		switch rng.IntN(5) {
		case 0, 1:
			r, err := c.do("XREADGROUP", "GROUP", dlCrashGroup, name, "COUNT", "4", "BLOCK", "10", "STREAMS", dlCrashStream, ">")
			if err != nil {
				return false
			}
			if !r.Null && len(r.Elems) == 1 && len(r.Elems[0].Elems) == 2 {
				got = entryIDs(r.Elems[0].Elems[1])
			}
		case 2, 3:
			r, err := c.do("XAUTOCLAIM", dlCrashStream, dlCrashGroup, name, "0", "0-0", "COUNT", "4")
			if err != nil {
				return false
			}
			if len(r.Elems) == 3 {
				got = entryIDs(r.Elems[1])
			}
		default:
			if len(held) > 0 {
				if _, err := c.do("XNACK", dlCrashStream, dlCrashGroup, "FATAL", "IDS", "1", held[rng.IntN(len(held))]); err != nil {
					return false
				}
			}
		}
		held = append(held[:0], got...)
		for _, id := range got {
			if rng.IntN(3) == 0 && !l.ack(c, id) {
				return false
			}
		}
		return true
	})
}

func entryIDs(list Reply) []string {
	var ids []string
	for _, e := range list.Elems {
		if len(e.Elems) == 2 {
			ids = append(ids, e.Elems[0].Str)
		}
	}
	return ids
}

// ack acknowledges one entry; false when the crash cut the XACK off.
func (l *dlCrashLog) ack(c *quietConn, id string) bool {
	l.mu.Lock()
	l.ackCut[id] = true
	l.mu.Unlock()
	r, err := c.do("XACK", dlCrashStream, dlCrashGroup, id)
	if err != nil {
		return false // left in ackCut: verify settles it
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.ackCut, id)
	switch {
	case r.Type != ':':
		l.errs = append(l.errs, fmt.Sprintf("XACK %s = %s", id, r))
	case r.Int == 1 && l.acked[id]:
		l.errs = append(l.errs, fmt.Sprintf("XACK %s removed it from the PEL a second time", id))
	case r.Int == 1:
		l.acked[id] = true
	} // 0: another worker dead-lettered (or acked) it first
	return true
}

// verify checks the server against the log. With settle, XACKs the crash
// cut off are settled by what the server holds; otherwise (the controls)
// the log is not changed.
func (l *dlCrashLog) verify(raw *RawConn, settle bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) > 0 {
		return fmt.Errorf("the workers saw:\n%s", strings.Join(l.errs, "\n"))
	}
	stream := map[string]int{} // ID → n
	for _, e := range raw.Do("XRANGE", dlCrashStream, "-", "+").Elems {
		n, err := strconv.Atoi(e.Elems[1].Elems[1].Str)
		if err != nil {
			return fmt.Errorf("entry %s", e)
		}
		stream[e.Elems[0].Str] = n
	}
	for id, n := range l.added {
		if stream[id] != n {
			return fmt.Errorf("acknowledged XADD n=%d (%s) is lost", n, id)
		}
	}
	pending := map[string]bool{}
	for _, p := range raw.Do("XPENDING", dlCrashStream, dlCrashGroup, "-", "+", "1000000000").Elems {
		pending[p.Elems[0].Str] = true
	}
	dead, err := deadLetters(raw, stream)
	if err != nil {
		return err
	}
	if settle {
		for id := range l.ackCut {
			if !pending[id] && !dead[id] {
				l.acked[id] = true // the cut XACK happened
			}
			delete(l.ackCut, id)
		}
	}
	last := lastDelivered(raw)
	for id := range stream {
		places := 0
		for _, in := range []bool{l.acked[id], pending[id], dead[id]} {
			if in {
				places++
			}
		}
		sid, _ := parseStreamID(id)
		switch {
		case places > 1:
			return fmt.Errorf("%s is in %d places: acked %v, pending %v, dead-lettered %v", id, places, l.acked[id], pending[id], dead[id])
		case places == 0 && !last.less(sid) && !l.ackCut[id]:
			return fmt.Errorf("%s was delivered (last-delivered-id %s) but is lost: not acked, not pending, not dead-lettered", id, last)
		case places == 1 && last.less(sid):
			return fmt.Errorf("%s is past last-delivered-id %s but was delivered", id, last)
		}
	}
	if err := l.checkCounter(raw, len(dead)); err != nil {
		return err
	}
	l.dead = len(dead)
	return nil
}

// deadLetters reads the dead-letter stream: each entry must name an entry
// of the stream, carry its fields, and appear once.
func deadLetters(raw *RawConn, stream map[string]int) (map[string]bool, error) {
	dead := map[string]bool{}
	for _, e := range raw.Do("XRANGE", dlCrashDLQ, "-", "+").Elems {
		f := map[string]string{}
		fv := e.Elems[1].Elems
		for i := 0; i+1 < len(fv); i += 2 {
			f[fv[i].Str] = fv[i+1].Str
		}
		id := f["id"]
		n, inStream := stream[id]
		switch {
		case f["stream"] != dlCrashStream || f["group"] != dlCrashGroup || !inStream || f["n"] != strconv.Itoa(n):
			return nil, fmt.Errorf("dead letter %s does not match an entry: %v", e.Elems[0].Str, f)
		case f["reason"] == "maxdeliver" && f["deliveries"] != "3":
			return nil, fmt.Errorf("dead letter %s past MAXDELIVER 3 after %s deliveries", e.Elems[0].Str, f["deliveries"])
		case dead[id]:
			return nil, fmt.Errorf("%s is dead-lettered twice", id)
		}
		dead[id] = true
	}
	return dead, nil
}

// checkCounter compares XINFO GROUPS's dead-lettered with the dead
// letters present.
func (l *dlCrashLog) checkCounter(raw *RawConn, dead int) error {
	for _, g := range raw.Do("XINFO", "GROUPS", dlCrashStream).Elems {
		for i := 0; i+1 < len(g.Elems); i += 2 {
			if g.Elems[i].Str == "dead-lettered" && g.Elems[i+1].Int != int64(dead) {
				return fmt.Errorf("XINFO GROUPS dead-lettered %d, %d dead letters lost or twice", g.Elems[i+1].Int, dead)
			}
		}
	}
	return nil
}

func lastDelivered(raw *RawConn) streamID {
	for _, g := range raw.Do("XINFO", "GROUPS", dlCrashStream).Elems {
		for i := 0; i+1 < len(g.Elems); i += 2 {
			if g.Elems[i].Str == "last-delivered-id" {
				id, _ := parseStreamID(g.Elems[i+1].Str)
				return id
			}
		}
	}
	return streamID{}
}
