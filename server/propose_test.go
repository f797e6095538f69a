package server

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// logCluster is a leading Cluster whose log the test commits by hand:
// Propose queues each entry, and commit applies the oldest (as every
// node would) and lets its proposer's wait return.
type logCluster struct {
	fakeCluster
	s       *Server
	db      int // its group's database: where commit applies
	entries chan pendingEntry
	verify  func() error // VerifyLeader; nil: at once
	deposed bool         // Leading reports false
	taken   []pendingEntry
	closed  chan struct{} // the test has ended
	// duringPropose, if set, runs once inside the next Propose, while the
	// event loop has the lock let go.
	duringPropose func()
}

func (lc *logCluster) Leading() bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return !lc.deposed
}

func (lc *logCluster) VerifyLeader() error {
	lc.mu.Lock()
	verify := lc.verify
	lc.mu.Unlock()
	if verify != nil {
		return verify()
	}
	return nil
}

type pendingEntry struct {
	data []byte
	done chan error
}

func newLogCluster(t *testing.T) (*Server, *logCluster) {
	s := newTestServer(t, nil)
	lc := &logCluster{fakeCluster: *threeNodes(nodeA), s: s, entries: make(chan pendingEntry, 64), closed: make(chan struct{})}
	s.SetCluster(lc)
	t.Cleanup(func() { close(lc.closed) })
	return s, lc
}

// another is a second group's log on lc's server, its state database db.
func (lc *logCluster) another(db int) *logCluster {
	return &logCluster{fakeCluster: *threeNodes(nodeA), s: lc.s, db: db, entries: make(chan pendingEntry, 64), closed: lc.closed}
}

// failLeft lets a test's clients close when it ends before committing
// what they wait on: the entries it took and left in flight, and any
// proposed after, fail as never proposed. Register it after connecting
// the clients (cleanups run last first).
func (lc *logCluster) failLeft(t *testing.T) {
	t.Cleanup(func() {
		lc.mu.Lock()
		taken := lc.taken
		lc.mu.Unlock()
		for _, e := range taken {
			select {
			case e.done <- ErrNotProposed:
			default: // answered already
			}
		}
		go func() {
			for {
				select {
				case e := <-lc.entries:
					e.done <- ErrNotProposed
				case <-lc.closed:
					return
				}
			}
		}()
	})
}

func (lc *logCluster) Propose(entry []byte) func() error {
	lc.mu.Lock()
	during := lc.duringPropose
	lc.duringPropose = nil
	lc.mu.Unlock()
	if during != nil {
		during() // the loop has let the lock go: as another goroutine would
	}
	e := pendingEntry{data: entry, done: make(chan error, 1)}
	lc.entries <- e
	return func() error { return <-e.done }
}

// next waits for the next proposed entry.
func (lc *logCluster) next(t *testing.T) pendingEntry {
	t.Helper()
	select {
	case e := <-lc.entries:
		lc.mu.Lock()
		lc.taken = append(lc.taken, e)
		lc.mu.Unlock()
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no entry was proposed")
		return pendingEntry{}
	}
}

// apply applies e, taken by next, and answers its proposer.
func (lc *logCluster) apply(t *testing.T, e pendingEntry) {
	t.Helper()
	if err := lc.s.ApplyEntryAt(lc.db, e.data); err != nil {
		t.Fatal(err)
	}
	e.done <- nil
}

// commit applies the next entry and answers its proposer.
func (lc *logCluster) commit(t *testing.T) string {
	t.Helper()
	e := lc.next(t)
	lc.apply(t, e)
	_, _, _, recs, _ := parseEntry(e.data)
	var words []string
	for _, r := range recs {
		words = append(words, fmt.Sprintf("%q", r.Argv))
	}
	return strings.Join(words, " ")
}

// write sends a command without waiting for its reply.
func (p *pipeConn) write(args ...string) {
	p.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	p.s.sync()
	if _, err := p.conn.Write([]byte(b.String())); err != nil {
		p.t.Fatal(err)
	}
}

func TestProposedWriteIsInvisibleUntilCommitted(t *testing.T) {
	s, lc := newLogCluster(t)
	a, b := connect(t, s), connect(t, s)
	a.write("RPUSH", "q", "x")
	e := lc.next(t) // proposed, not committed
	if got := b.do("LLEN", "q"); got != ":0\r\n" {
		t.Fatalf("LLEN before the commit = %q, want :0", got)
	}
	if err := s.ApplyEntry(e.data); err != nil {
		t.Fatal(err)
	}
	e.done <- nil
	if got := a.readReply(); got != ":1\r\n" {
		t.Fatalf("RPUSH reply = %q, want :1", got)
	}
	if got := b.do("LLEN", "q"); got != ":1\r\n" {
		t.Fatalf("LLEN after the commit = %q, want :1", got)
	}
}

func TestProposalOutcomes(t *testing.T) {
	s, lc := newLogCluster(t)
	a := connect(t, s)
	a.write("RPUSH", "q", "x")
	lc.next(t).done <- ErrNotProposed
	if got := a.readReply(); got != "-"+errClusterDown+"\r\n" {
		t.Fatalf("a write never proposed answered %q", got)
	}
	a.write("RPUSH", "q", "x")
	lc.next(t).done <- fmt.Errorf("leadership lost while committing log")
	if got := a.readReply(); got != "-"+errUnknownOutcome+"\r\n" {
		t.Fatalf("a write of unknown outcome answered %q", got)
	}
	// A proposal that failed leaves nothing behind, and the client goes on.
	if got := a.do("LLEN", "q"); got != ":0\r\n" {
		t.Fatalf("LLEN = %q", got)
	}
}

func TestBlockedClientGoneBeforeItsPopCommitsTakesNothing(t *testing.T) {
	for _, tc := range []struct {
		block    []string
		giveBack string
		left     string
	}{
		{[]string{"BLPOP", "q", "0"}, `["LPUSH" "q" "j1"]`, "*3\r\n$2\r\nj1\r\n$2\r\nj2\r\n$2\r\nj3\r\n"},
		{[]string{"BRPOP", "q", "0"}, `["RPUSH" "q" "j3"]`, "*3\r\n$2\r\nj1\r\n$2\r\nj2\r\n$2\r\nj3\r\n"},
		{[]string{"BLMPOP", "0", "1", "q", "LEFT", "COUNT", "2"}, `["LPUSH" "q" "j2" "j1"]`, "*3\r\n$2\r\nj1\r\n$2\r\nj2\r\n$2\r\nj3\r\n"},
		{[]string{"BLMPOP", "0", "1", "q", "RIGHT", "COUNT", "2"}, `["RPUSH" "q" "j2" "j3"]`, "*3\r\n$2\r\nj1\r\n$2\r\nj2\r\n$2\r\nj3\r\n"},
	} {
		t.Run(tc.block[0]+" "+tc.block[len(tc.block)-3], func(t *testing.T) {
			s, lc := newLogCluster(t)
			waiter, pusher, reader := connect(t, s), connect(t, s), connect(t, s)
			waiter.write(tc.block...)
			lc.commit(t) // finds nothing: the waiter blocks
			waitBlocked(t, s, 1)
			pusher.write("RPUSH", "q", "j1", "j2", "j3")
			lc.commit(t) // the push makes q ready: the waiter's re-try is proposed
			if got := pusher.readReply(); got != ":3\r\n" {
				t.Fatalf("RPUSH = %q", got)
			}
			retry := lc.next(t)
			waiter.conn.Close()
			<-waiter.done // the server has closed it
			if err := s.ApplyEntry(retry.data); err != nil {
				t.Fatal(err)
			}
			retry.done <- nil
			if got := lc.commit(t); got != tc.giveBack {
				t.Fatalf("after the re-try of a gone client the server proposed %s, want %s", got, tc.giveBack)
			}
			if got := reader.do("LRANGE", "q", "0", "-1"); got != tc.left {
				t.Fatalf("LRANGE = %q, want %q", got, tc.left)
			}
		})
	}
}

func TestTransactionIsOneEntry(t *testing.T) {
	s, lc := newLogCluster(t)
	a, b := connect(t, s), connect(t, s)
	a.write("MULTI")
	a.write("RPUSH", "q", "x", "y")
	a.write("LLEN", "q")
	a.write("LPOP", "q")
	a.write("EXEC")
	for _, want := range []string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "+QUEUED\r\n"} {
		if got := a.readReply(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	if got := lc.commit(t); got != `["RPUSH" "q" "x" "y"] ["LLEN" "q"] ["LPOP" "q"]` {
		t.Fatalf("the transaction was proposed as %s", got)
	}
	if got := a.readReply(); got != "*3\r\n:2\r\n:2\r\n$1\r\nx\r\n" {
		t.Fatalf("EXEC = %q", got)
	}
	if got := b.do("LRANGE", "q", "0", "-1"); got != "*1\r\n$1\r\ny\r\n" {
		t.Fatalf("LRANGE = %q", got)
	}
	// A follower applying the same entry skips the transaction's read.
	f := newTestServer(t, nil)
	f.SetCluster(threeNodes(nodeB))
	s.shard.mu.Lock()
	entry := encodeEntry(s.runID, 99, []proposal{{proto: 2, txPart: true, txHead: 2}, {proto: 2, txPart: true, txLast: true}},
		[]Record{{Time: 1, Argv: [][]byte{[]byte("RPUSH"), []byte("k"), []byte("v")}}, {Time: 1, Argv: [][]byte{[]byte("LLEN"), []byte("k")}}})
	s.shard.mu.Unlock()
	if err := f.ApplyEntry(entry); err != nil {
		t.Fatalf("a follower applying a transaction with a read: %v", err)
	}
	if got := dump(f); !strings.Contains(got, "k") {
		t.Fatalf("follower keyspace after the transaction: %s", got)
	}
}

// An entry proposed before a restart, committed after it, carries the old
// process's run_id: it answers nobody, even if its seq matches a new
// proposal's.
func TestEntryOfAnEarlierRunAnswersNobody(t *testing.T) {
	s, lc := newLogCluster(t)
	a := connect(t, s)
	a.write("RPUSH", "q", "new")
	mine := lc.next(t)
	_, seq, _, _, _ := parseEntry(mine.data)
	old := encodeEntry(nodeA.ID, seq, // what an earlier process of node A wrote (not this run_id)
		[]proposal{{proto: 2}},
		[]Record{{Time: 1, Argv: [][]byte{[]byte("RPUSH"), []byte("q"), []byte("old")}}})
	if err := s.ApplyEntry(old); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyEntry(mine.data); err != nil {
		t.Fatal(err)
	}
	mine.done <- nil
	if got := a.readReply(); got != ":2\r\n" {
		t.Fatalf("RPUSH answered %q, want :2 (its own apply, after the old entry's)", got)
	}
}

// A write answered through the log counts in INFO where it is answered.
func TestProposedWriteIsCounted(t *testing.T) {
	s, lc := newLogCluster(t)
	a := connect(t, s)
	a.write("RPUSH", "q", "x")
	lc.commit(t)
	a.readReply()
	if got := a.do("INFO", "commandstats"); !strings.Contains(got, "cmdstat_rpush:calls=1,") {
		t.Fatalf("INFO commandstats after an RPUSH through the log:\n%s", got)
	}
}

// A push re-tries as many of a list's waiters as it has elements, in
// their order, not every waiter for each push.
func TestPushRetriesAsManyWaitersAsElements(t *testing.T) {
	s, lc := newLogCluster(t)
	var waiters []*pipeConn
	for i := range 3 {
		w := connect(t, s)
		w.write("BLPOP", "q", "0")
		lc.commit(t)
		waiters = append(waiters, w)
		waitBlocked(t, s, int64(i+1))
	}
	pusher := connect(t, s)
	pusher.write("RPUSH", "q", "a")
	lc.commit(t)
	pusher.readReply()
	if got := lc.commit(t); got != `["BLPOP" "q" "0"]` {
		t.Fatalf("one element re-tried %s, want one waiter's BLPOP", got)
	}
	if got := waiters[0].readReply(); got != "*2\r\n$1\r\nq\r\n$1\r\na\r\n" {
		t.Fatalf("the first waiter got %q", got)
	}
	pusher.write("RPUSH", "q", "b", "c")
	lc.commit(t)
	pusher.readReply()
	if got := lc.commit(t); got != `["BLPOP" "q" "0"] ["BLPOP" "q" "0"]` {
		t.Fatalf("two elements re-tried %s, want the two waiters left", got)
	}
	for i, want := range []string{"b", "c"} {
		if got := waiters[i+1].readReply(); got != "*2\r\n$1\r\nq\r\n$1\r\n"+want+"\r\n" {
			t.Fatalf("waiter %d got %q", i+1, got)
		}
	}
}

// A transaction of reads only waits for the pass's leadership check, like
// any read on the leader: a node that finds it no longer leads answers
// no stale read.
func TestReadOnlyTransactionWaitsForLeadership(t *testing.T) {
	s, lc := newLogCluster(t)
	a := connect(t, s)
	a.write("RPUSH", "q", "x")
	lc.commit(t)
	a.readReply()
	lc.set(func() { lc.verify = func() error { return fmt.Errorf("node is not the leader") } })
	a.write("MULTI")
	a.write("LLEN", "q")
	a.write("EXEC")
	for _, want := range []string{"+OK\r\n", "+QUEUED\r\n"} {
		if got := a.readReply(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	want := "-MOVED " + fmt.Sprint(KeySlot([]byte("q"))) + " " + nodeA.Addr + "\r\n"
	if got := a.readReply(); got != want {
		t.Fatalf("EXEC on a node that lost leadership = %q, want %q", got, want)
	}
	lc.set(func() { lc.verify = nil })
	if got := a.do("LLEN", "q"); got != ":1\r\n" {
		t.Fatalf("LLEN after = %q", got)
	}
}

// waitHeld waits until n watched EXECs wait for the entries in flight,
// and q records are queued behind them.
func waitHeld(t *testing.T, s *Server, n, q int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.shard.mu.Lock()
		p := &s.groupByID(firstGroup).prop
		held, queued := len(p.held), len(p.recs)
		s.shard.mu.Unlock()
		if held == n && queued == q {
			return
		}
	}
	t.Fatalf("never %d watched EXECs held with %d records queued", n, q)
}

// watchedTx has c WATCH key and queue an RPUSH to key in a transaction,
// then send EXEC (its reply is the caller's to read).
func watchedTx(t *testing.T, c *pipeConn, key, elem string) {
	t.Helper()
	for _, cmd := range [][]string{{"WATCH", key}, {"MULTI"}, {"RPUSH", key, elem}} {
		if got := c.do(cmd...); got != "+OK\r\n" && got != "+QUEUED\r\n" {
			t.Fatalf("%s = %q", cmd, got)
		}
	}
	c.write("EXEC")
}

// A write proposed before a watched EXEC and applied after it arrived
// dooms it, as on one node: the EXEC waits for it, and nothing proposed
// meanwhile goes ahead of the check.
func TestWatchedExecWaitsForWritesInFlight(t *testing.T) {
	s, lc := newLogCluster(t)
	writer, watcher, other := connect(t, s), connect(t, s), connect(t, s)
	lc.failLeft(t)
	writer.write("RPUSH", "q", "x")
	inflight := lc.next(t)
	watchedTx(t, watcher, "q", "y")
	waitHeld(t, s, 1, 0)
	other.write("RPUSH", "r", "z")
	waitHeld(t, s, 1, 1) // held back, not proposed
	if err := s.ApplyEntry(inflight.data); err != nil {
		t.Fatal(err)
	}
	inflight.done <- nil
	if got := writer.readReply(); got != ":1\r\n" {
		t.Fatalf("RPUSH = %q", got)
	}
	if got := watcher.readReply(); got != "*-1\r\n" {
		t.Fatalf("EXEC after a write to its watched key = %q, want a null array", got)
	}
	if got := lc.commit(t); got != `["RPUSH" "r" "z"]` {
		t.Fatalf("after the refused EXEC the server proposed %s", got)
	}
	if got := other.readReply(); got != ":1\r\n" {
		t.Fatalf("the held RPUSH = %q", got)
	}
	if got := watcher.do("LRANGE", "q", "0", "-1"); got != "*1\r\n$1\r\nx\r\n" {
		t.Fatalf("LRANGE q = %q", got)
	}
}

// A watched EXEC that may run goes first in the next entry, ahead of the
// records held back while it waited.
func TestWatchedExecGoesAheadOfHeldRecords(t *testing.T) {
	s, lc := newLogCluster(t)
	writer, watcher, other := connect(t, s), connect(t, s), connect(t, s)
	lc.failLeft(t)
	hello3(t, watcher)
	writer.write("RPUSH", "q", "x")
	inflight := lc.next(t)
	watchedTx(t, watcher, "w", "y")
	waitHeld(t, s, 1, 0)
	other.write("RPUSH", "w", "z")
	waitHeld(t, s, 1, 1)
	if err := s.ApplyEntry(inflight.data); err != nil {
		t.Fatal(err)
	}
	inflight.done <- nil
	writer.readReply()
	if got := lc.commit(t); got != `["RPUSH" "w" "y"] ["RPUSH" "w" "z"]` {
		t.Fatalf("the watched EXEC and the held write were proposed as %s", got)
	}
	if got := watcher.readReply(); got != "*1\r\n:1\r\n" {
		t.Fatalf("EXEC = %q", got)
	}
	if got := other.readReply(); got != ":2\r\n" {
		t.Fatalf("the held RPUSH = %q", got)
	}
	// The watch is gone with the EXEC: a write now dooms nothing.
	if got := watcher.do("WATCH", "w"); got != "+OK\r\n" {
		t.Fatalf("WATCH = %q", got)
	}
	other.write("RPUSH", "w", "v")
	lc.commit(t)
	other.readReply()
	watchedTx(t, watcher, "w", "u") // nothing in flight: decided in its own pass
	if got := watcher.readReply(); got != "_\r\n" {
		t.Fatalf("RESP3 EXEC after a write to its watched key = %q, want _", got)
	}
}

// The wait is bounded: an EXEC whose drain does not end within
// cluster-node-timeout is refused (nothing of it proposed) and what it
// held back goes; one whose node stops leading meanwhile is redirected.
func TestWatchedExecWaitIsBounded(t *testing.T) {
	s, lc := newLogCluster(t)
	s.shard.mu.Lock()
	s.cfg.ClusterNodeTimeout = 100
	s.shard.mu.Unlock()
	writer, watcher, other := connect(t, s), connect(t, s), connect(t, s)
	lc.failLeft(t)
	writer.write("RPUSH", "q", "x")
	stuck := lc.next(t)
	watchedTx(t, watcher, "w", "y")
	waitHeld(t, s, 1, 0)
	other.write("RPUSH", "r", "z")
	if got := watcher.readReply(); got != "-"+errClusterDown+"\r\n" {
		t.Fatalf("EXEC whose wait passed its bound = %q", got)
	}
	if got := lc.commit(t); got != `["RPUSH" "r" "z"]` {
		t.Fatalf("after the refused EXEC the server proposed %s", got)
	}
	other.readReply()
	if got := watcher.do("EXEC"); got != "-ERR EXEC without MULTI\r\n" {
		t.Fatalf("the refused transaction is still open: EXEC = %q", got)
	}

	s.shard.mu.Lock()
	s.cfg.ClusterNodeTimeout = math.MaxInt32 // this time the drain ends first
	s.shard.mu.Unlock()
	watchedTx(t, watcher, "w", "y")
	waitHeld(t, s, 1, 0)
	lc.set(func() { lc.deposed = true })
	stuck.done <- fmt.Errorf("leadership lost while committing log")
	if got := writer.readReply(); got != "-"+errUnknownOutcome+"\r\n" {
		t.Fatalf("RPUSH = %q", got)
	}
	want := "-MOVED " + fmt.Sprint(KeySlot([]byte("w"))) + " " + nodeA.Addr + "\r\n"
	if got := watcher.readReply(); got != want {
		t.Fatalf("EXEC on a node that stopped leading = %q, want %q", got, want)
	}
	s.shard.mu.Lock()
	watching := len(s.shard.dbs[0].watchers)
	s.shard.mu.Unlock()
	if watching != 0 {
		t.Fatalf("%d keys still watched after the refused EXECs", watching)
	}
}

// hello3 switches c to RESP3 and reads HELLO's map.
func hello3(t *testing.T, c *pipeConn) {
	t.Helper()
	c.write("HELLO", "3")
	var n int
	if line := c.readReply(); !strings.HasPrefix(line, "%") {
		t.Fatalf("HELLO 3 = %q", line)
	} else {
		fmt.Sscanf(line[1:], "%d", &n)
	}
	for range 2 * n {
		c.readReply()
	}
}

// WATCH is routed as Redis Cluster routes a keyed command that is not a
// write: a follower redirects it to the leader, or keeps the watch itself
// for a READONLY client (whose reads are stale anyway).
func TestWatchOnAFollower(t *testing.T) {
	s := newTestServer(t, nil)
	s.SetCluster(threeNodes(nodeB))
	c := connect(t, s)
	want := "-MOVED " + fmt.Sprint(KeySlot([]byte("k"))) + " " + nodeA.Addr + "\r\n"
	if got := c.do("WATCH", "k"); got != want {
		t.Fatalf("WATCH on a follower = %q, want %q", got, want)
	}
	c.do("READONLY")
	if got := c.do("WATCH", "k"); got != "+OK\r\n" {
		t.Fatalf("WATCH on a follower after READONLY = %q", got)
	}
	s.shard.mu.Lock()
	watched := len(s.shard.dbs[0].watchers["k"])
	s.shard.mu.Unlock()
	if watched != 1 {
		t.Fatalf("%d clients watch k on the follower, want 1", watched)
	}
}

// CLIENT REPLY SKIP/OFF in cluster mode silence replies that come later
// too: a read answered after the pass's leadership check, a transaction
// answered by its entry's apply.
func TestReplySkipSilencesALeaderRead(t *testing.T) {
	s, _ := newLogCluster(t)
	a := connect(t, s)
	a.write("CLIENT", "REPLY", "SKIP")
	a.write("LLEN", "q")
	if got := a.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("after CLIENT REPLY SKIP and a read, PING's reply = %q, want +PONG", got)
	}
}

func TestReplyOffSilencesATransaction(t *testing.T) {
	s, lc := newLogCluster(t)
	a := connect(t, s)
	a.write("CLIENT", "REPLY", "OFF")
	a.write("MULTI")
	a.write("RPUSH", "q", "a")
	a.write("RPUSH", "q", "b")
	a.write("EXEC")
	lc.commit(t)
	if got := a.do("CLIENT", "REPLY", "ON"); got != "+OK\r\n" {
		t.Fatalf("after a transaction under CLIENT REPLY OFF, CLIENT REPLY ON's reply = %q, want +OK", got)
	}
	if got := a.do("LLEN", "q"); got != ":2\r\n" {
		t.Fatalf("LLEN = %q, want :2", got)
	}
}

// A node hosting two groups sends each write to the group of its key's
// slot, and the group's entries land in the group's own database: a
// record of database 0 applied at base 2 is in database 2, on the leader
// (which answers its client) and on a follower alike.
func TestWritesGoToTheirSlotsGroup(t *testing.T) {
	s, lc, lc2 := twoGroups(t, "q")
	a := connect(t, s)
	a.write("RPUSH", "q", "x", "y")
	if got := lc2.commit(t); got != `["RPUSH" "q" "x" "y"]` {
		t.Fatalf("group 2 committed %s", got)
	}
	if got := a.readReply(); got != ":2\r\n" {
		t.Fatalf("RPUSH answered %q, want :2", got)
	}
	a.write("RPUSH", "other", "z") // a slot group 1 keeps
	if got := lc.commit(t); got != `["RPUSH" "other" "z"]` {
		t.Fatalf("group 1 committed %s", got)
	}
	if got := a.readReply(); got != ":1\r\n" {
		t.Fatalf("RPUSH answered %q, want :1", got)
	}
	if got := a.do("LRANGE", "q", "0", "-1"); got != "*2\r\n$1\r\nx\r\n$1\r\ny\r\n" {
		t.Fatalf("LRANGE q (read in group 2's database) = %q", got)
	}
	want := "db0 \"other\" exp=0 list [\"z\" ]\ndb2 \"q\" exp=0 list [\"x\" \"y\" ]\n"
	if got := dump(s); got != want {
		t.Errorf("leader keyspace:\n%s\nwant:\n%s", got, want)
	}
	f := newTestServer(t, nil) // a follower of group 2
	f.SetCluster(threeNodes(nodeB))
	if err := f.HostGroup(2, 2, threeNodes(nodeB)); err != nil {
		t.Fatal(err)
	}
	lc2.mu.Lock()
	entry := lc2.taken[0].data
	lc2.mu.Unlock()
	if err := f.ApplyEntryAt(2, entry); err != nil {
		t.Fatal(err)
	}
	if got, want := dump(f), "db2 \"q\" exp=0 list [\"x\" \"y\" ]\n"; got != want {
		t.Errorf("follower keyspace:\n%s\nwant:\n%s", got, want)
	}
	if err := f.ApplyEntryAt(len(f.shard.dbs), entry); err == nil {
		t.Error("an entry for a database past the configured ones was applied")
	}
}
