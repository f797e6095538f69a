package server

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// movingSlot is a node leading group 1 (database 0, lc) and group 2
// (database 2, lc2), where key's slot belongs to group 1 and holds the
// what the writes run (committed through lc) when it begins moving to
// group 2.
func movingSlot(t *testing.T, key string, writes ...[]string) (s *Server, lc, lc2 *logCluster, slot int) {
	t.Helper()
	s, lc = newLogCluster(t)
	lc2 = lc.another(2)
	if err := s.HostGroup(2, 2, lc2); err != nil {
		t.Fatal(err)
	}
	slot = KeySlot([]byte(key))
	mapMove(t, s, slot, false)
	a := connect(t, s)
	for _, w := range writes {
		a.write(w...)
		lc.commit(t)
		if got := a.readReply(); strings.HasPrefix(got, "-") {
			t.Fatalf("%q = %q", w, got)
		}
	}
	mapMove(t, s, slot, true)
	return s, lc, lc2, slot
}

// settledMove is movingSlot once the mover has said the writes taken
// before the move are applied: the source may answer -ASK.
func settledMove(t *testing.T, key string, writes ...[]string) (s *Server, lc, lc2 *logCluster, slot int) {
	t.Helper()
	s, lc, lc2, slot = movingSlot(t, key, writes...)
	if err := s.MoveSettled(1, slot, slot); err != nil {
		t.Fatal(err)
	}
	return s, lc, lc2, slot
}

// mapMove gives s the map of movingSlot: every slot group 1's, slot
// moving to group 2 if moving.
func mapMove(t *testing.T, s *Server, slot int, moving bool) {
	t.Helper()
	owners, targets := make([]uint16, numSlots), make([]uint16, numSlots)
	for i := range owners {
		owners[i] = 1
	}
	if moving {
		targets[slot] = 2
	}
	if err := s.MapSlots(owners, targets, nil); err != nil {
		t.Fatal(err)
	}
}

// While a slot moves, its source's leader serves the keys it holds and
// answers -ASK for the others, once the mover has said the writes taken
// before the move are applied (TRYAGAIN before); a command with keys on
// both sides gets -TRYAGAIN; after ASKING the target group runs the
// command in its own database.
func TestMovingSlotServesItsKeysAndAsksForOthers(t *testing.T) {
	s, lc, lc2, slot := movingSlot(t, "{m}", []string{"SET", "{m}a", "v"})
	a := connect(t, s)
	if got := a.do("GET", "{m}b"); !strings.HasPrefix(got, "-TRYAGAIN") {
		t.Fatalf("GET {m}b before the writes before the move settled = %q, want -TRYAGAIN", got)
	}
	if err := s.MoveSettled(1, slot, slot); err != nil {
		t.Fatal(err)
	}
	ask := fmt.Sprintf("-ASK %d %s\r\n", slot, nodeA.Addr)
	if got := a.do("GET", "{m}b"); got != ask {
		t.Fatalf("GET {m}b, not in the source = %q, want %q", got, ask)
	}
	if got := a.do("GET", "{m}a"); got != "$1\r\nv\r\n" {
		t.Fatalf("GET {m}a, in the source = %q", got)
	}
	a.write("APPEND", "{m}a", "w")
	if got := lc.commit(t); got != `["APPEND" "{m}a" "w"]` {
		t.Fatalf("group 1 committed %s", got)
	}
	if got := a.readReply(); got != ":2\r\n" {
		t.Fatalf("APPEND {m}a = %q", got)
	}
	if got := a.do("MSET", "{m}a", "1", "{m}b", "2"); !strings.HasPrefix(got, "-TRYAGAIN") {
		t.Fatalf("MSET of a key held and one not = %q, want -TRYAGAIN", got)
	}
	a.do("ASKING")
	a.write("SET", "{m}b", "x")
	if got := lc2.commit(t); got != `["SET" "{m}b" "x"]` {
		t.Fatalf("group 2 committed %s", got)
	}
	if got := a.readReply(); got != "+OK\r\n" {
		t.Fatalf("ASKING SET {m}b = %q", got)
	}
	if got := a.do("GET", "{m}b"); got != ask {
		t.Errorf("GET {m}b without ASKING = %q, want %q: the source still owns the slot", got, ask)
	}
	if got, want := dump(s), "db0 \"{m}a\" exp=0 string \"vw\"\ndb2 \"{m}b\" exp=0 string \"x\"\n"; got != want {
		t.Errorf("keyspace:\n%s\nwant:\n%s", got, want)
	}
}

// The source answers -TRYAGAIN, not -ASK, for a key it does not hold
// while a write of the slot it took is in flight: here a SET taken while
// the key was still there, behind the DEL that removed it. Sending the
// client to the target then would create the key there, and the SET
// would create it again in the source. Applied or failed, the write no
// longer counts.
func TestNoAskWhileAWriteOfTheSlotIsInFlight(t *testing.T) {
	s, lc, _, slot := settledMove(t, "{m}", []string{"SET", "{m}a", "v"}, []string{"SET", "{m}c", "v"})
	a, b, c := connect(t, s), connect(t, s), connect(t, s)
	lc.failLeft(t)
	ask := fmt.Sprintf("-ASK %d %s\r\n", slot, nodeA.Addr)
	for _, end := range []string{"applied", "failed"} {
		key := map[string]string{"applied": "{m}a", "failed": "{m}c"}[end]
		a.write("DEL", key)
		del := lc.next(t)
		b.write("SET", key, "again")
		set := lc.next(t)
		lc.apply(t, del)
		if got := a.readReply(); got != ":1\r\n" {
			t.Fatalf("DEL %s = %q", key, got)
		}
		if got := c.do("EXISTS", key); !strings.HasPrefix(got, "-TRYAGAIN") {
			t.Fatalf("EXISTS %s, deleted, with a SET of it in flight = %q, want -TRYAGAIN", key, got)
		}
		if end == "applied" {
			lc.apply(t, set)
			if got := b.readReply(); got != "+OK\r\n" {
				t.Fatalf("SET %s = %q", key, got)
			}
			if got := c.do("GET", key); got != "$5\r\nagain\r\n" {
				t.Fatalf("GET %s after the SET applied = %q", key, got)
			}
			continue
		}
		set.done <- ErrNotProposed
		if got := b.readReply(); !strings.HasPrefix(got, "-CLUSTERDOWN") {
			t.Fatalf("SET %s, never proposed = %q", key, got)
		}
		if got := c.do("EXISTS", key); got != ask {
			t.Fatalf("EXISTS %s once the SET failed = %q, want %q", key, got, ask)
		}
	}
}

// The keys the mover copies answer -TRYAGAIN until it lets them go, and
// so do the clients blocked on them; a client blocked on a key the
// source holds stays blocked when the move begins. CopyKeys reports the
// slot empty once the source holds none of its keys.
func TestCopiedKeysAnswerTryAgain(t *testing.T) {
	s, lc, _, slot := settledMove(t, "{m}", []string{"SET", "{m}a", "v"}, []string{"XADD", "{m}s", "1-1", "f", "v"})
	a, b := connect(t, s), connect(t, s)
	lc.failLeft(t)
	b.write("XREAD", "BLOCK", "0", "STREAMS", "{m}s", "$")
	waitBlocked(t, s, 1)
	mapMove(t, s, slot, true) // the map changes, the move goes on
	waitBlocked(t, s, 1)
	keys, empty, err := s.CopyKeys(1, slot, 10)
	if err != nil || empty || len(keys) != 2 {
		t.Fatalf("CopyKeys = %q, %v, %v; want the 2 keys", keys, empty, err)
	}
	b.conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a failure is a reply that never comes
	if got := b.readReply(); !strings.HasPrefix(got, "-TRYAGAIN") {
		t.Fatalf("XREAD BLOCK on a key being copied = %q, want -TRYAGAIN", got)
	}
	if got := a.do("GET", "{m}a"); !strings.HasPrefix(got, "-TRYAGAIN") {
		t.Fatalf("GET of a key being copied = %q, want -TRYAGAIN", got)
	}
	if err := s.DeleteMoved(1, keys); err != nil {
		t.Fatal(err)
	}
	lc.commit(t)
	s.EndCopying(1, keys)
	if got, want := a.do("GET", "{m}a"), fmt.Sprintf("-ASK %d %s\r\n", slot, nodeA.Addr); got != want {
		t.Fatalf("GET of a key moved = %q, want %q", got, want)
	}
	if keys, empty, err := s.CopyKeys(1, slot, 10); err != nil || !empty || len(keys) != 0 {
		t.Fatalf("CopyKeys of the emptied slot = %q, %v, %v; want it empty", keys, empty, err)
	}
	if _, _, err := s.CopyKeys(1, slot+1, 10); err == nil {
		t.Fatal("CopyKeys of a slot that is not moving: no error")
	}
}

// A client blocked after ASKING in the group a slot moves to stays
// blocked while the map changes, and a push there (after ASKING too)
// serves it through that group's log.
func TestBlockedAfterAskingStaysInTheTarget(t *testing.T) {
	s, _, lc2, slot := movingSlot(t, "{m}")
	a, b := connect(t, s), connect(t, s)
	a.do("ASKING")
	a.write("BLPOP", "{m}q", "0")
	lc2.commit(t) // finds nothing: the client blocks in group 2
	waitBlocked(t, s, 1)
	mapMove(t, s, slot, true)
	b.do("ASKING")
	b.write("LPUSH", "{m}q", "x")
	if got := lc2.commit(t); got != `["LPUSH" "{m}q" "x"]` {
		t.Fatalf("group 2 committed %s", got)
	}
	if got := b.readReply(); got != ":1\r\n" {
		t.Fatalf("LPUSH = %q", got)
	}
	if got := lc2.commit(t); got != `["BLPOP" "{m}q" "0"]` {
		t.Fatalf("group 2 committed %s, want the blocked client's re-try", got)
	}
	a.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got := a.readReply(); got != "*2\r\n$4\r\n{m}q\r\n$1\r\nx\r\n" {
		t.Fatalf("blocked BLPOP = %q", got)
	}
}

// A pipelined write of a moving slot behind a write still in the log is
// answered after it, -ASK included: it waits like a refusal.
func TestAskBehindProposalsKeepsOrder(t *testing.T) {
	s, lc, _, slot := settledMove(t, "{m}", []string{"SET", "{m}a", "v"})
	a := connect(t, s)
	if _, err := a.conn.Write([]byte("*3\r\n$6\r\nAPPEND\r\n$4\r\n{m}a\r\n$1\r\nw\r\n*3\r\n$3\r\nSET\r\n$4\r\n{m}b\r\n$1\r\nx\r\n")); err != nil {
		t.Fatal(err)
	}
	if got := lc.commit(t); got != `["APPEND" "{m}a" "w"]` {
		t.Fatalf("committed %s", got)
	}
	if got := a.readReply(); got != ":2\r\n" {
		t.Fatalf("first reply %q, want APPEND's :2", got)
	}
	if got, want := a.readReply(), fmt.Sprintf("-ASK %d %s\r\n", slot, nodeA.Addr); got != want {
		t.Fatalf("second reply %q, want SET's %q", got, want)
	}
}

// A transaction of a moving slot runs in the source when all its keys
// are there, and its writes count as in flight: a transaction that sets a
// key behind the DEL that removed it keeps the source from answering
// -ASK for that key until it is applied. One with a key there and one
// not gets -TRYAGAIN.
func TestTransactionOfAMovingSlot(t *testing.T) {
	s, lc, _, _ := settledMove(t, "{m}", []string{"SET", "{m}a", "v"})
	a, b, c := connect(t, s), connect(t, s), connect(t, s)
	lc.failLeft(t)
	b.do("MULTI")
	b.do("SET", "{m}a", "x")
	b.do("SET", "{m}b", "x")
	if got := b.do("EXEC"); !strings.HasPrefix(got, "-TRYAGAIN") {
		t.Fatalf("EXEC with a key in the source and one not = %q, want -TRYAGAIN", got)
	}
	a.write("DEL", "{m}a")
	del := lc.next(t)
	b.do("MULTI")
	b.do("SET", "{m}a", "again")
	b.write("EXEC")
	tx := lc.next(t)
	lc.apply(t, del)
	a.readReply()
	if got := c.do("EXISTS", "{m}a"); !strings.HasPrefix(got, "-TRYAGAIN") {
		t.Fatalf("EXISTS {m}a, deleted, with a transaction setting it in flight = %q, want -TRYAGAIN", got)
	}
	lc.apply(t, tx)
	if got := b.readReply(); got != "*1\r\n+OK\r\n" {
		t.Fatalf("EXEC = %q", got)
	}
	if got := c.do("GET", "{m}a"); got != "$5\r\nagain\r\n" {
		t.Fatalf("GET {m}a after the transaction = %q", got)
	}
}

// A read that waited for the leadership check while the mover copied and
// deleted its key is answered -TRYAGAIN, not from a keyspace that no
// longer holds the key (nil, though the target group has it).
func TestReadOfAKeyMovedWhileItWaitedIsRefused(t *testing.T) {
	s, lc, _, slot := settledMove(t, "{m}", []string{"SET", "{m}a", "v"})
	entered, release := make(chan struct{}), make(chan struct{})
	lc.set(func() {
		lc.verify = func() error {
			entered <- struct{}{}
			<-release
			return nil
		}
	})
	a := connect(t, s)
	a.write("GET", "{m}a")
	<-entered
	keys, _, err := s.CopyKeys(1, slot, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMoved(1, keys); err != nil {
		t.Fatal(err)
	}
	lc.commit(t)
	s.EndCopying(1, keys)
	close(release)
	if got := a.readReply(); !strings.HasPrefix(got, "-TRYAGAIN") {
		t.Fatalf("GET of a key moved while the read waited = %q, want -TRYAGAIN", got)
	}
}

// A watched EXEC held until the writes in flight are applied is decided
// again then: its key is being copied by now, so it gets -TRYAGAIN.
func TestHeldExecOfAKeyBeingCopied(t *testing.T) {
	s, lc, _, slot := settledMove(t, "{m}", []string{"SET", "{m}a", "v"}, []string{"SET", "{m}c", "v"})
	a, b := connect(t, s), connect(t, s)
	lc.failLeft(t)
	b.do("WATCH", "{m}a")
	a.write("APPEND", "{m}c", "w")
	set := lc.next(t)
	b.do("MULTI")
	b.do("SET", "{m}a", "z")
	b.write("EXEC") // held: a write of its group is in flight
	waitFor(t, func() bool {
		s.shard.mu.Lock()
		defer s.shard.mu.Unlock()
		return len(s.groupByID(1).prop.held) == 1
	})
	if _, _, err := s.CopyKeys(1, slot, 10); err != nil {
		t.Fatal(err)
	}
	lc.apply(t, set)
	a.readReply()
	b.conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // proposed instead, it would wait for a commit that never comes
	if got := b.readReply(); !strings.HasPrefix(got, "-TRYAGAIN") {
		t.Fatalf("held EXEC of a key being copied = %q, want -TRYAGAIN", got)
	}
}

// A transaction none of whose keys is in the source gets -ASK at EXEC
// (and is over); replayed after ASKING, which holds from MULTI to EXEC
// as in Redis, it runs in the target group.
func TestTransactionAskedToTheTarget(t *testing.T) {
	s, lc, lc2, slot := settledMove(t, "{m}", []string{"SET", "{m}a", "v"})
	a := connect(t, s)
	a.do("MULTI")
	a.do("SET", "{m}b", "x")
	a.do("PING")
	if got, want := a.do("EXEC"), fmt.Sprintf("-ASK %d %s\r\n", slot, nodeA.Addr); got != want {
		t.Fatalf("EXEC of keys not in the source = %q, want %q", got, want)
	}
	if got := a.do("EXEC"); !strings.HasPrefix(got, "-ERR EXEC without MULTI") {
		t.Fatalf("EXEC again = %q: the -ASK should have ended the transaction", got)
	}
	a.do("ASKING")
	a.do("MULTI")
	if got := a.do("SET", "{m}b", "x"); got != "+QUEUED\r\n" {
		t.Fatalf("SET queued after ASKING, MULTI = %q", got)
	}
	a.write("EXEC")
	if got := lc2.commit(t); got != `["SET" "{m}b" "x"]` {
		t.Fatalf("group 2 committed %s", got)
	}
	if got := a.readReply(); got != "*1\r\n+OK\r\n" {
		t.Fatalf("EXEC after ASKING = %q", got)
	}
	if got, want := dump(s), "db0 \"{m}a\" exp=0 string \"v\"\ndb2 \"{m}b\" exp=0 string \"x\"\n"; got != want {
		t.Errorf("keyspace:\n%s\nwant:\n%s", got, want)
	}
	a.write("SET", "{m}c", "y") // ASKING ended with the EXEC: the source answers
	if got := a.readReply(); !strings.HasPrefix(got, "-ASK ") {
		t.Errorf("SET after the transaction = %q, want -ASK from the source", got)
	}
	mapMove(t, s, slot, false) // the move is over (here: called off)
	a.do("ASKING")
	a.do("MULTI")
	a.do("SET", "{m}c", "z")
	a.write("EXEC")
	if got := lc.commit(t); got != `["SET" "{m}c" "z"]` {
		t.Fatalf("group 1, the slot's owner again, committed %s", got)
	}
	if got := a.readReply(); got != "*1\r\n+OK\r\n" {
		t.Errorf("EXEC after ASKING once the slot no longer moves = %q, want it run by the slot's group", got)
	}
}
