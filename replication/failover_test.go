package replication

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// leaderOf waits for one of nodes to lead and returns it.
func leaderOf(t *testing.T, nodes []*testNode) *testNode {
	t.Helper()
	var leader *testNode
	waitFor(t, "a leader", func() bool {
		for _, n := range nodes {
			if n.srv != nil && n.node.Leading() {
				leader = n
				return true
			}
		}
		return false
	})
	return leader
}

func TestGroupSurvivesLeaderLoss(t *testing.T) {
	nodes := startGroup(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: nodes[0].addr})
	for i := range 100 {
		if err := c.RPush(ctx, "q", i).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	nodes[0].stop()
	leader := leaderOf(t, nodes[1:])
	c = redis.NewClient(&redis.Options{Addr: leader.addr})
	defer c.Close()
	for i := 100; i < 150; i++ {
		if err := c.RPush(ctx, "q", i).Err(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.LRange(ctx, "q", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 150 {
		t.Fatalf("after failover the list has %d elements, want 150", len(got))
	}
	for i, v := range got {
		if v != strconv.Itoa(i) {
			t.Fatalf("element %d = %q, want %d", i, v, i)
		}
	}
	// The old leader comes back as a follower and catches up.
	back := startNodeOn(t, nodes[0].dir, nodes[0].port, nodes[0].busPort)
	want := digest(t, leader.srv)
	waitFor(t, "the old leader to catch up", func() bool { return digest(t, back.srv) == want })
}

func TestGroupRestartKeepsEverything(t *testing.T) {
	nodes := startGroup(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: nodes[0].addr})
	for i := range 300 {
		if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"n", strconv.Itoa(i)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	want := digest(t, nodes[0].srv)
	for _, n := range nodes {
		n.stop()
	}
	var again []*testNode
	for _, n := range nodes {
		again = append(again, startNodeOn(t, n.dir, n.port, n.busPort))
	}
	leader := leaderOf(t, again)
	for i, n := range again {
		waitFor(t, fmt.Sprintf("node %d to hold every write again", i), func() bool { return digest(t, n.srv) == want })
	}
	c = redis.NewClient(&redis.Options{Addr: leader.addr})
	defer c.Close()
	if n := c.XLen(ctx, "s").Val(); n != 300 {
		t.Fatalf("XLEN after restarting every node = %d, want 300", n)
	}
}

// A producer that retries an XADD with IDMP after a failover, not knowing
// whether its first try was applied, adds the entry once.
func TestIdempotentXAddAcrossFailover(t *testing.T) {
	nodes := startGroup(t)
	ctx := context.Background()
	xadd := []any{"XADD", "orders", "IDMP", "producer-1", "order-42", "*", "item", "book"}
	c := redis.NewClient(&redis.Options{Addr: nodes[0].addr})
	first, err := c.Do(ctx, xadd...).Text()
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	nodes[0].stop()
	leader := leaderOf(t, nodes[1:])
	c = redis.NewClient(&redis.Options{Addr: leader.addr})
	defer c.Close()
	again, err := c.Do(ctx, xadd...).Text()
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Fatalf("the retried XADD returned %s, want the first try's %s", again, first)
	}
	if n := c.XLen(ctx, "orders").Val(); n != 1 {
		t.Fatalf("XLEN after the retry = %d, want 1", n)
	}
}

// The leader shows a follower it cannot reach, for how long, and how
// much of the log it held when it went silent.
func TestLeaderShowsAnUnreachableFollower(t *testing.T) {
	nodes := startGroup(t)
	gone := nodes[2].node.Self().ID
	// The leader counts a voter's match index from the first entry it
	// acknowledges as a voter, which may come after AddNode returned: wait
	// until it shows, or there is nothing for the leader to show.
	waitFor(t, "the follower to hold some of the log", func() bool {
		for _, f := range nodes[0].node.Status().Followers {
			if f.ID == gone && f.MatchIndex > 0 {
				return true
			}
		}
		return false
	})
	nodes[2].stop()
	waitFor(t, "the leader to see its follower silent", func() bool {
		for _, f := range nodes[0].node.Status().Followers {
			if f.ID == gone && f.LastContact > 0 && f.MatchIndex > 0 {
				return true
			}
		}
		return false
	})
	for _, f := range nodes[0].node.Status().Followers {
		if f.ID == nodes[1].node.Self().ID && f.LastContact != 0 {
			t.Fatalf("a follower that answers shows last contact %v", f.LastContact)
		}
	}
}

// Leading holds only in the term whose Barrier set it: a node that lost
// the lead and won it back before watchLeadership caught up is leader in
// a later term, whose earlier entries (another leader's writes) may not
// be applied yet, and it must serve nothing until its own Barrier. Here
// the flag is made to belong to the term before.
func TestLeadingHoldsForTheTermOfItsBarrier(t *testing.T) {
	nodes := startGroup(t)
	g := leaderOf(t, nodes).node.main
	term := g.leadTerm.Load()
	if term == 0 || term != g.raft.CurrentTerm() {
		t.Fatalf("leading in term %d with the Barrier's term %d", g.raft.CurrentTerm(), term)
	}
	g.leadTerm.Store(term - 1)
	if g.Leading() {
		t.Error("Leading with the flag of an earlier term")
	}
	g.leadTerm.Store(term)
	if !g.Leading() {
		t.Error("not Leading in the Barrier's term")
	}
}
