package server

import (
	"path/filepath"
	"testing"
)

// DeleteMoved's deletes reach the group's log: Settled is false until
// the event loop has handed them over, then true.
func TestDeleteMovedReachesTheLog(t *testing.T) {
	s, lc := newLogCluster(t)
	a := connect(t, s)
	a.write("SET", "k", "v")
	lc.commit(t)
	a.readReply()
	if err := s.DeleteMoved(1, []string{"k"}); err != nil {
		t.Fatal(err)
	}
	if got := lc.commit(t); got != `["DEL" "k"]` {
		t.Fatalf("committed %s", got)
	}
	waitFor(t, func() bool { return s.Settled(1) })
}

// A write queued for a group by another goroutine while the event loop
// hands an entry to a log (the lock let go) is proposed without waiting
// for another event: the loop looks at every group's queue before it
// sleeps. It waited for the next event, forever on an idle node: here, a
// mover's second batch of deletes, queued while the loop proposed its
// first.
func TestWriteQueuedWhileTheLoopProposesIsSent(t *testing.T) {
	s, lc := newLogCluster(t)
	connect(t, s) // the loop runs once it serves a client
	lc.set(func() {
		lc.duringPropose = func() {
			if err := s.DeleteMoved(1, []string{"b"}); err != nil {
				t.Error(err)
			}
		}
	})
	if err := s.DeleteMoved(1, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if got := lc.commit(t); got != `["DEL" "a"]` {
		t.Fatalf("committed %s", got)
	}
	if got := lc.commit(t); got != `["DEL" "b"]` {
		t.Fatalf("then committed %s", got)
	}
}

// A serving node's own writes reach the log though no client ever
// connected: the event loop, which sends them, runs from Serve. It used
// to start with the first client, and a node that took the lead of a
// group with nobody connected kept its deletes forever.
func TestOwnWritesOfANodeWithoutClients(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Port, cfg.Dir = 0, t.TempDir()
	cfg.UnixSocket = filepath.Join(cfg.Dir, "redstream.sock")
	s := listening(t, cfg)
	lc := &logCluster{fakeCluster: *threeNodes(nodeA), s: s, entries: make(chan pendingEntry, 64), closed: make(chan struct{})}
	s.SetCluster(lc)
	t.Cleanup(func() { close(lc.closed) })
	go s.Serve()
	waitFor(t, func() bool { return s.serving.Load() })
	if err := s.DeleteMoved(1, []string{"k"}); err != nil {
		t.Fatal(err)
	}
	if got := lc.commit(t); got != `["DEL" "k"]` {
		t.Fatalf("committed %s", got)
	}
}
