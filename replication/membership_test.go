package replication

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"
	"github.com/redstream/redstream/server"
)

// members is the nodes of a group as a test changes it, for writers to
// find.
type members struct {
	mu    sync.Mutex
	nodes []*testNode
}

func (m *members) add(n *testNode) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes = append(m.nodes, n)
}

func (m *members) remove(n *testNode) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes = slices.DeleteFunc(m.nodes, func(x *testNode) bool { return x == n })
}

func (m *members) list() []*testNode {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.nodes)
}

func (m *members) addrs() []string {
	var out []string
	for _, n := range m.list() {
		out = append(out, n.addr)
	}
	return out
}

// join makes n a member, through the leader.
func (m *members) join(t *testing.T, n *testNode) {
	t.Helper()
	if err := leaderOf(t, m.list()).node.AddNode(n.node.Self()); err != nil {
		t.Fatal(err)
	}
	m.add(n)
}

// leave removes n from the group, through the leader.
func (m *members) leave(t *testing.T, n *testNode) {
	t.Helper()
	if err := leaderOf(t, m.list()).node.RemoveNode(n.node.Self().ID); err != nil {
		t.Fatal(err)
	}
	m.remove(n)
}

// follower is a running member that does not lead.
func (m *members) follower(t *testing.T) *testNode {
	t.Helper()
	leader := leaderOf(t, m.list())
	for _, n := range m.list() {
		if n != leader && n.srv != nil {
			return n
		}
	}
	t.Fatal("no follower")
	return nil
}

// While writers run, the group gains a fourth node, loses one, has a
// dead one replaced, and has one come back after the log it missed was
// compacted away: nothing acknowledged is lost, and every node ends with
// the same keyspace.
func TestMembershipChangesUnderLoad(t *testing.T) {
	// Small segments: raft-wal drops compacted entries a file at a time.
	smallLog := func(c *Config) { c.SnapshotAfter, c.TrailingLogs, c.walSegmentSize = 64, 32, 16<<10 }
	group := &members{nodes: startGroup(t, smallLog)}
	load := startWriteLoad(t, 4, group.addrs)
	load.waitProgress(t, 20)

	// Add a fourth node.
	group.join(t, startNode(t, t.TempDir(), freePort(t), smallLog))
	load.waitProgress(t, 20)

	// Remove one.
	gone := group.follower(t)
	group.leave(t, gone)
	gone.stop()
	load.waitProgress(t, 20)

	// Replace a dead one.
	dead := group.follower(t)
	dead.stop()
	load.waitProgress(t, 20)
	group.leave(t, dead)
	group.join(t, startNode(t, t.TempDir(), freePort(t), smallLog))
	load.waitProgress(t, 20)

	// One is away while the leader compacts past what it has.
	away := group.follower(t)
	away.stop()
	last := away.node.main.raft.LastIndex()
	leader := leaderOf(t, group.list())
	compactPast(t, leader, last+1, load)
	back := startNodeOn(t, away.dir, away.port, away.busPort, smallLog)
	group.remove(away)
	group.add(back)
	load.waitProgress(t, 20)

	load.finish()
	waitSameDigest(t, group.list())
	if snap, _ := strconv.ParseUint(back.node.Stats()["last_snapshot_index"], 10, 64); snap <= last {
		t.Errorf("the node that was away caught up, but not from a snapshot (its last is at %d)", snap)
	}
	load.check(t, leaderOf(t, group.list()).addr)
	if got := len(leader.node.Members()); got != 3 {
		t.Errorf("the group has %d members, want 3", got)
	}
}

// compactPast has the writers write and leader snapshot until its log no
// longer holds entry index. (raft-wal reads a compacted entry until its
// whole segment file is dropped: what counts is whether it can be read.)
func compactPast(t *testing.T, leader *testNode, index uint64, load *writeLoad) {
	t.Helper()
	for range 50 {
		load.waitProgress(t, 50)
		if err := leader.node.main.raft.Snapshot().Error(); err != nil {
			t.Fatal(err)
		}
		if leader.node.main.log.GetLog(index, &raft.Log{}) != nil {
			return
		}
	}
	t.Fatalf("the leader still has entry %d after 50 snapshots", index)
}

// A node added while it cannot answer (here: nothing listens on its
// Raft port) never counts for the majority: with one voter of three down,
// a fourth voter added at once would leave two of four alive, and the
// group could neither commit nor elect a leader. Added as a non-voter
// that is promoted only once caught up, it leaves the group writing, and
// ADDNODE answers TRYAGAIN.
func TestAddingANodeThatCannotAnswerKeepsTheGroupWriting(t *testing.T) {
	shortCatchUpWait(t, 2*time.Second)
	nodes := startGroup(t)
	nodes[2].stop()
	mute := server.ClusterMember{ID: strings.Repeat("d", 40), Addr: "127.0.0.1:1",
		BusAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))}
	err := nodes[0].node.AddNode(mute)
	if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN ") {
		t.Errorf("adding a node that cannot answer: %v, want TRYAGAIN", err)
	}
	if got := len(leaderOf(t, nodes[:2]).node.Members()); got != 3 {
		t.Errorf("after the failed add the group has %d voters, want 3", got)
	}
	rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].addr, nodes[1].addr}, MaxRedirects: 20})
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rc.Set(ctx, "after-the-add", "1", 0).Err(); err != nil {
		t.Fatalf("a write after adding a node that cannot answer: %v", err)
	}
	// The node the add left catching up shows in INFO, and an operator
	// who gives up on it can remove it (it is no voter, but a member).
	leader := leaderOf(t, nodes[:2])
	lc := redis.NewClient(&redis.Options{Addr: leader.addr})
	defer lc.Close()
	info, err := lc.Info(ctx, "replication").Result()
	if err != nil || !strings.Contains(info, "ip=127.0.0.1,port=1,state=send_bulk,") {
		t.Errorf("INFO replication on the leader shows no node catching up (%v):\n%s", err, info)
	}
	if err := lc.Do(ctx, "CLUSTER", "DELNODE", mute.ID).Err(); err != nil {
		t.Fatalf("CLUSTER DELNODE of the node catching up: %v", err)
	}
	for _, f := range leader.node.Status().Followers {
		if f.ID == mute.ID {
			t.Errorf("the removed node still shows: %+v", f)
		}
	}
}

// A non-voter promoted to voter may acknowledge the configuration entry
// that promotes it before the leader's commitment counts it as a voter.
// That acknowledgement used to be dropped, and on an idle group nothing
// was sent to it again: the promotion never committed (AddNode hung in
// CI once). Here a second node is promoted and demoted again and again
// on the in-memory transport, where its answer comes back within
// microseconds; every promotion must commit.
func TestPromotingANonVoterCommitsOnAnIdleGroup(t *testing.T) {
	trans := memTransports(2)
	var nodes []*raft.Raft
	for i, tr := range trans {
		cfg := raft.DefaultConfig()
		cfg.LocalID = raft.ServerID(fmt.Sprintf("n%d", i))
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
		cfg.LogLevel = "ERROR"
		r, err := raft.NewRaft(cfg, &listFSM{}, raft.NewInmemStore(), raft.NewInmemStore(), raft.NewInmemSnapshotStore(), tr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Shutdown().Error() })
		nodes = append(nodes, r)
	}
	leader, id, addr := nodes[0], raft.ServerID("n1"), trans[1].LocalAddr()
	if err := leader.BootstrapCluster(raft.Configuration{Servers: []raft.Server{{ID: "n0", Address: trans[0].LocalAddr()}}}).Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "n0 to lead", func() bool { return leader.State() == raft.Leader })
	for i := range 100 {
		if err := leader.AddNonvoter(id, addr, 0, time.Second).Error(); err != nil {
			t.Fatalf("round %d: AddNonvoter: %v", i, err)
		}
		target := leader.LastIndex()
		waitFor(t, "the non-voter to hold the log", func() bool {
			held, _ := leader.ReplicatedIndex(id)
			return held >= target
		})
		f := leader.AddVoter(id, addr, 0, time.Second)
		done := make(chan error, 1)
		go func() { done <- f.Error() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: promotion: %v", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: the promotion of a caught-up non-voter did not commit in 5 s", i)
		}
		if err := leader.DemoteVoter(id, 0, time.Second).Error(); err != nil {
			t.Fatalf("round %d: DemoteVoter: %v", i, err)
		}
	}
}

// shortCatchUpWait sets catchUpWait for one test, and sets it back once
// the test's nodes have stopped: cleanups run last-registered first, so
// this one, registered before the nodes start, runs after theirs.
func shortCatchUpWait(t *testing.T, d time.Duration) {
	old := catchUpWait
	catchUpWait = d
	t.Cleanup(func() { catchUpWait = old })
}
