package replication

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// These tests drive third_party/raft's change directly: the leader
// sends a batch to its followers while it writes the batch to its own
// log, and counts itself as holding the batch only once that write
// returns.

// gatedStore is an in-memory log store whose writes can be held back
// or made to fail.
type gatedStore struct {
	*raft.InmemStore
	mu   sync.Mutex
	gate chan struct{} // non-nil: StoreLogs waits until it is closed
	fail error         // non-nil: StoreLogs returns it
	// pastEnd is set when a DeleteRange reached past the last entry the
	// store held.
	pastEnd string
}

func (g *gatedStore) DeleteRange(min, max uint64) error {
	if last, _ := g.InmemStore.LastIndex(); max > last {
		g.mu.Lock()
		g.pastEnd = fmt.Sprintf("DeleteRange(%d, %d) with the last entry stored at %d", min, max, last)
		g.mu.Unlock()
	}
	return g.InmemStore.DeleteRange(min, max)
}

func (g *gatedStore) StoreLogs(logs []*raft.Log) error {
	g.mu.Lock()
	gate, fail := g.gate, g.fail
	g.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if fail != nil {
		return fail
	}
	return g.InmemStore.StoreLogs(logs)
}

func (g *gatedStore) StoreLog(l *raft.Log) error { return g.StoreLogs([]*raft.Log{l}) }

func (g *gatedStore) set(gate chan struct{}, fail error) {
	g.mu.Lock()
	g.gate, g.fail = gate, fail
	g.mu.Unlock()
}

// listFSM records the data of every entry applied.
type listFSM struct {
	mu   sync.Mutex
	data []string
}

func (f *listFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data = append(f.data, string(l.Data))
	return nil
}

func (f *listFSM) applied() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.data...)
}

func (f *listFSM) Snapshot() (raft.FSMSnapshot, error) { return listSnapshot(f.applied()), nil }

func (f *listFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var data []string
	if err := json.NewDecoder(rc).Decode(&data); err != nil {
		return err
	}
	f.mu.Lock()
	f.data = data
	f.mu.Unlock()
	return nil
}

type listSnapshot []string

func (l listSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode([]string(l)); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (l listSnapshot) Release() {}

type memNode struct {
	raft    *raft.Raft
	store   *gatedStore
	machine raft.FSM
	fsm     *listFSM // machine, when it is one
	id      raft.ServerID
}

// startMemGroup starts three Raft nodes on the in-memory transport.
func startMemGroup(t *testing.T, opts ...func(*raft.Config)) []*memNode {
	t.Helper()
	return startRaftGroup(t, memTransports(3), opts...)
}

// memTransports are n in-memory transports, all connected.
func memTransports(n int) []raft.Transport {
	var inmem []*raft.InmemTransport
	var trans []raft.Transport
	for i := range n {
		_, tr := raft.NewInmemTransport(raft.ServerAddress(fmt.Sprintf("n%d", i)))
		inmem = append(inmem, tr)
		trans = append(trans, tr)
	}
	connectAll(inmem)
	return trans
}

// startRaftGroup starts one Raft node on each transport, with in-memory
// stores and a listFSM, and bootstraps them as one group.
func startRaftGroup(t *testing.T, trans []raft.Transport, opts ...func(*raft.Config)) []*memNode {
	return startFSMGroup(t, trans, func() raft.FSM { return &listFSM{} }, opts...)
}

// startFSMGroup is startRaftGroup with the state machines newFSM makes.
func startFSMGroup(t *testing.T, trans []raft.Transport, newFSM func() raft.FSM, opts ...func(*raft.Config)) []*memNode {
	t.Helper()
	var nodes []*memNode
	var servers []raft.Server
	for i, tr := range trans {
		id := raft.ServerID(fmt.Sprintf("n%d", i))
		servers = append(servers, raft.Server{ID: id, Address: tr.LocalAddr()})
		n := &memNode{store: &gatedStore{InmemStore: raft.NewInmemStore()}, machine: newFSM(), id: id}
		n.fsm, _ = n.machine.(*listFSM)
		nodes = append(nodes, n)
	}
	for i, n := range nodes {
		cfg := raft.DefaultConfig()
		cfg.LocalID = n.id
		cfg.HeartbeatTimeout = 200 * time.Millisecond
		cfg.ElectionTimeout = 200 * time.Millisecond
		cfg.LeaderLeaseTimeout = 100 * time.Millisecond
		cfg.LogLevel = "ERROR"
		for _, opt := range opts {
			opt(cfg)
		}
		r, err := raft.NewRaft(cfg, n.machine, n.store, raft.NewInmemStore(), raft.NewInmemSnapshotStore(), trans[i])
		if err != nil {
			t.Fatal(err)
		}
		n.raft = r
		t.Cleanup(func() { r.Shutdown().Error() })
	}
	if err := nodes[0].raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		t.Fatal(err)
	}
	return nodes
}

func memLeader(t *testing.T, nodes []*memNode) *memNode {
	t.Helper()
	var leader *memNode
	waitFor(t, "a leader", func() bool {
		for _, n := range nodes {
			if n.raft.State() == raft.Leader {
				leader = n
				return true
			}
		}
		return false
	})
	return leader
}

func TestLeaderCommitsWhileItsOwnWriteWaits(t *testing.T) {
	nodes := startMemGroup(t)
	leader := memLeader(t, nodes)
	if err := leader.raft.Apply([]byte("first"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}

	gate := make(chan struct{})
	leader.store.set(gate, nil)
	f := leader.raft.Apply([]byte("second"), 0)
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(gate)
		t.Fatal("an entry the followers hold was not committed while the leader's own write waited")
	}
	idx := f.Index()
	matches := leader.raft.MatchIndexes()
	if matches[leader.id] >= idx {
		t.Fatalf("the leader counts itself at %d while its write of %d has not returned", matches[leader.id], idx)
	}
	held := 0
	for id, m := range matches {
		if id != leader.id && m >= idx {
			held++
		}
	}
	if held != 2 {
		t.Fatalf("match indexes %v: want both followers at %d or past", matches, idx)
	}

	leader.store.set(nil, nil)
	close(gate)
	waitFor(t, "the leader to count itself", func() bool { return leader.raft.MatchIndexes()[leader.id] >= idx })
	if got := leader.fsm.applied(); len(got) != 2 || got[1] != "second" {
		t.Fatalf("the leader applied %q", got)
	}
	var stored raft.Log
	if err := leader.store.GetLog(idx, &stored); err != nil || string(stored.Data) != "second" {
		t.Fatalf("the leader's log at %d: %q, %v", idx, stored.Data, err)
	}
}

func TestLeaderWhoseLogFailsStepsDown(t *testing.T) {
	nodes := startMemGroup(t)
	leader := memLeader(t, nodes)
	if err := leader.raft.Apply([]byte("first"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	stored, err := leader.store.LastIndex()
	if err != nil {
		t.Fatal(err)
	}

	leader.store.set(nil, errors.New("disk gone"))
	// The followers may hold the batch and commit it under a new leader:
	// whatever this future says, it must not hang.
	f := leader.raft.Apply([]byte("lost or not"), 5*time.Second)
	_ = f.Error()
	// Stepping down ends with forgetting the unwritten batch; poll for
	// its end state rather than for the state change alone.
	waitForWithin(t, 10*time.Second, "the old leader to step down and claim no entry its store lacks", func() bool {
		return leader.raft.State() != raft.Leader && leader.raft.MatchIndexes() == nil && leader.raft.LastIndex() <= stored
	}, func() string {
		return fmt.Sprintf("state %v, match indexes %v, last index %d, stored %d",
			leader.raft.State(), leader.raft.MatchIndexes(), leader.raft.LastIndex(), stored)
	})

	leader.store.set(nil, nil)
	next := memLeader(t, nodes)
	if err := next.raft.Apply([]byte("after"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	want := next.fsm.applied()
	for _, n := range nodes {
		waitFor(t, fmt.Sprintf("%s to apply what the new leader applied", n.id), func() bool {
			return fmt.Sprint(n.fsm.applied()) == fmt.Sprint(want)
		})
	}
}

// A leader may apply entries its own store does not hold yet. A
// snapshot that covers them is kept only once the store holds them: a
// restart must never find a snapshot past the end of its log, and
// compaction must never delete past it, even with no trailing entries
// kept.
func TestLeaderSnapshotsOnlyWhatItsStoreHolds(t *testing.T) {
	nodes := startMemGroup(t, func(c *raft.Config) { c.TrailingLogs = 0 })
	leader := memLeader(t, nodes)
	if err := leader.raft.Apply([]byte("first"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	leader.store.set(gate, nil)
	released := false
	release := func() {
		if !released {
			released = true
			leader.store.set(nil, nil)
			close(gate)
		}
	}
	defer release()
	f := leader.raft.Apply([]byte("in flight"), 10*time.Second)
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	snap := make(chan raft.SnapshotFuture, 1)
	go func() {
		s := leader.raft.Snapshot()
		s.Error()
		snap <- s
	}()
	select {
	case s := <-snap:
		t.Fatalf("a snapshot covering entry %d finished while the leader's store did not hold it (error %v)", f.Index(), s.Error())
	case <-time.After(300 * time.Millisecond):
	}
	release()
	s := <-snap
	if err := s.Error(); err != nil {
		t.Fatal(err)
	}
	meta, rc, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if meta.Index < f.Index() {
		t.Fatalf("snapshot at %d: want it to cover %d", meta.Index, f.Index())
	}
	leader.store.mu.Lock()
	defer leader.store.mu.Unlock()
	if leader.store.pastEnd != "" {
		t.Fatalf("the leader compacted entries it had not stored: %s", leader.store.pastEnd)
	}
}
