package replication

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"
)

// inmemGroup is a three-node group whose Raft traffic goes over raft's
// in-memory transports, so a test can cut and heal links while clients
// still reach every node.
type inmemGroup struct {
	nodes []*testNode
	trans []*raft.InmemTransport
}

func startInmemGroup(t *testing.T, opts ...func(*Config)) *inmemGroup {
	t.Helper()
	g := &inmemGroup{}
	for range 3 {
		addr, tr := raft.NewInmemTransport("")
		g.trans = append(g.trans, tr)
		g.nodes = append(g.nodes, startNode(t, t.TempDir(), 0, append([]func(*Config){func(c *Config) {
			c.Transport, c.BusAddr = tr, string(addr)
			c.NodeTimeout = 500 * time.Millisecond
		}}, opts...)...))
	}
	g.heal()
	formGroup(t, g.nodes)
	return g
}

// isolate cuts node i off from the others, both ways.
func (g *inmemGroup) isolate(i int) {
	g.trans[i].DisconnectAll()
	for j, tr := range g.trans {
		if j != i {
			tr.Disconnect(g.trans[i].LocalAddr())
		}
	}
}

// heal connects every node to every other.
func (g *inmemGroup) heal() { connectAll(g.trans) }

// connectAll connects every in-memory transport to every other.
func connectAll(trans []*raft.InmemTransport) {
	for i, a := range trans {
		for j, b := range trans {
			if i != j {
				a.Connect(b.LocalAddr(), b)
			}
		}
	}
}

func (g *inmemGroup) addrs() []string {
	var out []string
	for _, n := range g.nodes {
		out = append(out, n.addr)
	}
	return out
}

// leaderOtherThan waits for a node other than not to lead.
func (g *inmemGroup) leaderOtherThan(t *testing.T, not int) int {
	t.Helper()
	others := slices.Clone(g.nodes)
	others[not] = &testNode{} // stopped, as leaderOf sees it
	return slices.Index(g.nodes, leaderOf(t, others))
}

// While the leader is cut off from both followers, and while one
// follower is, writers go on; afterwards every node holds the same
// keyspace, every acknowledged write exactly once, and the isolated
// leader acknowledged nothing once it was alone.
func TestPartitionsLoseNoAcknowledgedWrite(t *testing.T) {
	g := startInmemGroup(t)
	load := startWriteLoad(t, 4, g.addrs)
	load.waitProgress(t, 20)
	leader := 0
	for cycle := range 3 {
		g.isolate(leader)
		assertIsolatedLeaderRefuses(t, g.nodes[leader].addr, fmt.Sprintf("isolated-%d", cycle))
		newLeader := g.leaderOtherThan(t, leader)
		load.waitProgress(t, 20)
		g.heal()
		waitFor(t, "the old leader to follow", func() bool { return !g.nodes[leader].node.Leading() })
		leader = newLeader

		follower := (leader + 1 + cycle%2) % 3
		g.isolate(follower)
		load.waitProgress(t, 20)
		g.heal()
		leader = slices.Index(g.nodes, leaderOf(t, g.nodes))
	}
	load.waitProgress(t, 20)
	load.finish()
	waitSameDigest(t, g.nodes)
	load.check(t, g.nodes[leader].addr)
	for cycle := range 3 {
		if held := heldPayloads(t, g.nodes[leader].addr)[fmt.Sprintf("isolated-%d", cycle)]; len(held) != 0 {
			t.Errorf("the write sent to isolated leader in cycle %d is held: %v", cycle, held)
		}
	}
}

// assertIsolatedLeaderRefuses sends a write to a leader just cut off
// from its group: it must fail (the outcome unknown, or a redirect once
// the node knows it no longer leads), never succeed.
func assertIsolatedLeaderRefuses(t *testing.T, addr, payload string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	defer c.Close()
	err := c.RPush(context.Background(), "q", payload).Err()
	if err == nil {
		t.Fatalf("a leader cut off from its group acknowledged RPUSH q %s", payload)
	}
	t.Logf("the isolated leader answered: %v", err)
}
