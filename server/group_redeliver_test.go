package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redstream/redstream/stream"
)

// setPolicy gives key's group a policy, as XGROUP SETPOLICY will.
func setPolicy(t *testing.T, s *Server, key, group string, p stream.Policy) {
	t.Helper()
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	st := s.shard.dbs[0].keys[key].value.(*stream.Stream)
	st.Group([]byte(group)).SetPolicy(p)
}

// TestRedeliveryServesDueEntriesFirstAndReplays: with an ack wait, an
// entry nobody acknowledged is handed to the next reader of ">" before
// new entries, in the plain reply shape, with its count raised; and the
// logged commands, replayed, give the same state.
func TestRedeliveryServesDueEntriesFirstAndReplays(t *testing.T) {
	log := &recordingLog{}
	s := newTestServer(t, log)
	c := connect(t, s)
	c.do("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
	setPolicy(t, s, "q", "g", stream.Policy{AckWait: 30})
	c.do("XADD", "q", "1-0", "job", "a")
	if got := c.roundTrip([]string{"XREADGROUP", "GROUP", "g", "alice", "STREAMS", "q", ">"}, c.readReply); !strings.Contains(got, "1-0") {
		t.Fatalf("first read %q", got)
	}
	c.do("XADD", "q", "2-0", "job", "b")
	waitFor(t, func() bool {
		s.shard.mu.Lock()
		defer s.shard.mu.Unlock()
		g := s.shard.dbs[0].keys["q"].value.(*stream.Stream).Group([]byte("g"))
		return g.HasDue(s.shard.now())
	})
	got := c.roundTrip([]string{"XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "q", ">"}, c.readReply)
	if want := "*1\r\n*2\r\n$1\r\nq\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$3\r\njob\r\n$1\r\na\r\n"; got != want {
		t.Fatalf("bob's read %q, want the due entry 1-0 %q", got, want)
	}
	pending := c.roundTrip([]string{"XPENDING", "q", "g", "WITHDUE", "-", "+", "10"}, c.readReply)
	if !strings.Contains(pending, "$3\r\nbob\r\n") || !strings.Contains(pending, ":2\r\n") {
		t.Fatalf("XPENDING after the redelivery: %q", pending)
	}
	replayed := newTestServer(t, nil)
	for _, r := range log.records {
		if err := replayed.Apply(r); err != nil {
			t.Fatal(err)
		}
		if strings.EqualFold(string(r.Argv[0]), "xgroup") { // until SETPOLICY is a command: set by hand
			setPolicy(t, replayed, "q", "g", stream.Policy{AckWait: 30})
		}
	}
	if a, b := groupsOf(s, "q"), groupsOf(replayed, "q"); a != b {
		t.Fatalf("replay differs\nlive:     %s\nreplayed: %s", a, b)
	}
	if s.stats.redelivered != 1 || replayed.stats.redelivered != 1 {
		t.Fatalf("stream_redeliveries: live %d, replayed %d; want 1 on both (counted on every apply)", s.stats.redelivered, replayed.stats.redelivered)
	}
}

// groupsOf renders key's consumer groups (PELs, consumers, counters).
func groupsOf(s *Server, key string) string {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	return fmt.Sprintf("%+v", s.shard.dbs[0].keys[key].value.(*stream.Stream).State().Groups)
}

// TestBlockedReaderWakesWhenAnEntryIsDue: a reader blocked on ">" with
// nothing new is woken by its timer when another consumer's entry comes
// due, not before, and gets it.
func TestBlockedReaderWakesWhenAnEntryIsDue(t *testing.T) {
	s := newTestServer(t, nil)
	alice, bob := connect(t, s), connect(t, s)
	alice.do("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
	const wait = 150
	setPolicy(t, s, "q", "g", stream.Policy{AckWait: wait})
	alice.do("XADD", "q", "1-0", "job", "a")
	alice.roundTrip([]string{"XREADGROUP", "GROUP", "g", "alice", "STREAMS", "q", ">"}, alice.readReply)
	delivered := time.Now()
	reply := make(chan string, 1)
	go func() {
		reply <- bob.roundTrip([]string{"XREADGROUP", "GROUP", "g", "bob", "BLOCK", "0", "STREAMS", "q", ">"}, bob.readReply)
	}()
	select {
	case got := <-reply:
		if !strings.Contains(got, "1-0") {
			t.Fatalf("bob got %q", got)
		}
		// The server keeps delivery times in whole milliseconds, so the
		// entry is due up to 1 ms before delivered+wait by this clock.
		if waited := time.Since(delivered); waited < (wait-1)*time.Millisecond {
			t.Fatalf("bob got the entry %v after its delivery, before its ack wait of %d ms", waited, wait)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("bob was never woken for the due entry")
	}
}

// TestDueEntriesPastRefusedDeadLetters: due entries a dead-letter key of
// another type refuses stay at the front of the due list; a read with
// COUNT looks past them, batch by batch, to the next entry it can serve.
func TestDueEntriesPastRefusedDeadLetters(t *testing.T) {
	s := newTestServer(t, nil)
	c := connect(t, s)
	c.do("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
	for _, id := range []string{"1-0", "2-0", "3-0"} {
		c.do("XADD", "q", id, "f", "v")
	}
	c.roundTrip([]string{"XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "q", ">"}, c.readReply)
	c.roundTrip([]string{"XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "q", ">"}, c.readReply)
	c.roundTrip([]string{"XCLAIM", "q", "g", "bob", "0", "3-0", "RETRYCOUNT", "0"}, c.readReply) // under the cap
	c.do("SET", "dlq", "not a stream")
	setPolicy(t, s, "q", "g", stream.Policy{AckWait: 1, MaxDeliver: 1, DeadLetter: []byte("dlq")})
	waitFor(t, func() bool {
		s.shard.mu.Lock()
		defer s.shard.mu.Unlock()
		g := s.shard.dbs[0].keys["q"].value.(*stream.Stream).Group([]byte("g"))
		return len(g.Due(s.shard.now(), 0)) == 3
	})
	got := c.roundTrip([]string{"XREADGROUP", "GROUP", "g", "carol", "COUNT", "1", "STREAMS", "q", ">"}, c.readReply)
	if !strings.Contains(got, "3-0") || strings.Contains(got, "1-0") || strings.Contains(got, "2-0") {
		t.Fatalf("read past two refused dead letters: %q, want 3-0 alone", got)
	}
	if s.stats.deadLetterFailures != 2 {
		t.Fatalf("stream_dead_letter_failures = %d, want 2", s.stats.deadLetterFailures)
	}
}
