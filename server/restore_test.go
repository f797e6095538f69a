package server

import (
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/redstream/redstream/listpack"
)

// TestRestore: Restore swaps in a whole new keyspace while clients are
// connected: reads see the new keys, a transaction WATCHing a replaced
// key fails, a client blocked on a key the new keyspace fills is served,
// expired keys are dropped, and a snapshot being walked across the swap
// still yields the keyspace as it was when taken (issue 12 §4: a Raft
// follower installs its leader's snapshot this way).
func TestRestore(t *testing.T) {
	s := newTestServer(t, nil)
	a, b, blocked := connect(t, s), connect(t, s), connect(t, s)
	for _, k := range []string{"k", "old1", "old2"} {
		a.do("SET", k, "before")
	}
	snap := s.Freeze(nil)
	next, stop := iter.Pull(snap.Entries(0))
	defer stop()
	first, _ := next() // the walk has begun, and goes on across the swap

	b.do("WATCH", "k")
	b.do("MULTI")
	b.do("SET", "k", "from-tx")
	blocked.conn.Write([]byte("*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n"))
	waitBlocked(t, s, 1)

	q := listpack.NewQuicklist(-2)
	q.PushTail([]byte("job"))
	err := s.Restore(func(put Put) error {
		put(0, "k", []byte("after"), 0)
		put(0, "q", q, 0)
		put(0, "gone", []byte("x"), time.Now().Add(-time.Hour).UnixMilli()) // expired
		return put(1, "other-db", []byte("y"), 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.do("GET", "k"); got != "$5\r\nafter\r\n" {
		t.Fatalf("GET k after Restore = %q", got)
	}
	if got := a.do("DBSIZE"); got != ":1\r\n" { // q was popped by the blocked client
		t.Fatalf("DBSIZE after Restore = %q, want 1 (k)", got)
	}
	if got := b.do("EXEC"); got != "*-1\r\n" {
		t.Fatalf("EXEC of a transaction WATCHing a replaced key = %q, want a null (aborted)", got)
	}
	if got := blocked.readReply(); !strings.Contains(got, "job") {
		t.Fatalf("the client blocked on q got %q, want the restored element", got)
	}

	walked := map[string]string{first.Key: string(first.Value.([]byte))}
	for e, ok := next(); ok; e, ok = next() {
		walked[e.Key] = string(e.Value.([]byte))
	}
	if len(walked) != 3 || walked["k"] != "before" || walked["old1"] != "before" {
		t.Fatalf("the snapshot walked across the swap yielded %v, want the 3 keys as they were", walked)
	}
}

// waitBlocked waits until n clients are blocked.
func waitBlocked(t *testing.T, s *Server, n int64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.shard.mu.Lock()
		got := s.stats.blockedClients
		s.shard.mu.Unlock()
		if got == n {
			return
		}
	}
	t.Fatalf("%d clients never blocked", n)
}

// TestRestoreDuringSnapshot: a snapshot taken while Restore builds the new
// keyspace is of the old one; writes to the new objects after the swap
// must not hand them to it (they were never in it).
func TestRestoreDuringSnapshot(t *testing.T) {
	s := newTestServer(t, nil)
	c := connect(t, s)
	c.do("SET", "k", "before")
	var snap *Snapshot
	err := s.Restore(func(put Put) error {
		snap = s.Freeze(nil) // taken of the old keyspace, mid-build
		return put(0, "k", []byte("after"), 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	c.do("SET", "k", "written-after-the-swap")
	var got []string
	for e := range snap.Entries(0) {
		got = append(got, e.Key+"="+string(e.Value.([]byte)))
	}
	if strings.Join(got, ",") != "k=before" {
		t.Fatalf("the snapshot taken during the build yielded %v, want [k=before]", got)
	}
}
