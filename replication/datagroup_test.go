package replication

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redstream/redstream/server"
)

// Three nodes serve keys of two data groups: group 1 (the main group,
// led by node 0) keeps every slot but q's, which group 2, led by node 1,
// owns. A write of q goes through group 2's log into database 1 on every
// node; the other nodes redirect q to group 2's leader, and node 1
// redirects group 1's keys to node 0.
func TestNodesServeKeysOfTwoGroups(t *testing.T) {
	q := []byte("q")
	nodes := startDataGroups(t, slotRange{server.KeySlot(q), server.KeySlot(q), 2})
	groupLeader(t, nodes, 2)
	moveLeadership(t, nodes, 2, nodes[1])
	ctx := context.Background()
	client := func(n *groupNode) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: n.addr, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		return c
	}
	if n, err := client(nodes[1]).RPush(ctx, "q", "a", "b").Result(); err != nil || n != 2 {
		t.Fatalf("RPUSH q on group 2's leader: %d, %v", n, err)
	}
	want := fmt.Sprintf("MOVED %d %s", server.KeySlot(q), nodes[1].addr)
	for _, n := range []*groupNode{nodes[0], nodes[2]} {
		if err := client(n).RPush(ctx, "q", "c").Err(); err == nil || err.Error() != want {
			t.Errorf("RPUSH q on %s: %v, want %s", n.addr, err, want)
		}
	}
	if err := client(nodes[1]).Set(ctx, "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED") || !strings.HasSuffix(err.Error(), nodes[0].addr) {
		t.Errorf("SET k (group 1) on group 2's leader: %v, want MOVED to %s", err, nodes[0].addr)
	}
	if err := client(nodes[0]).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET k on group 1's leader: %v", err)
	}
	// Every node holds q in group 2's database (1), k in group 1's (0):
	// a READONLY read on a follower runs in the group's database too.
	for _, n := range nodes {
		c := client(n)
		if err := c.ReadOnly(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "q and k on "+n.addr, func() bool {
			got, err := c.LRange(ctx, "q", 0, -1).Result()
			v, err2 := c.Get(ctx, "k").Result()
			return err == nil && strings.Join(got, ",") == "a,b" && err2 == nil && v == "v"
		})
		for db, want := range map[int]string{0: "k", 1: "q"} {
			if got := keysIn(t, n.srv, db); got != want {
				t.Errorf("%s: database %d holds %q, want %q", n.addr, db, got, want)
			}
		}
	}
}

// slotRange is slots first..last, given to group id.
type slotRange struct {
	first, last int
	id          uint16
}

// startDataGroups starts three nodes of one main group (group 1, led by
// the first), each hosting a data group for every range's group, all
// three its voters, and gives each range to its group on every node.
func startDataGroups(t *testing.T, ranges ...slotRange) []*groupNode {
	t.Helper()
	started := startGroup(t)
	var voters []server.ClusterMember
	for _, n := range started {
		voters = append(voters, n.node.Self())
	}
	var nodes []*groupNode
	for _, n := range started {
		opened := map[uint16]bool{}
		for _, r := range ranges {
			if !opened[r.id] {
				opened[r.id] = true
				g, err := n.node.HostDataGroup(r.id)
				if err != nil {
					t.Fatal(err)
				}
				if err := g.Bootstrap(voters); err != nil {
					t.Fatal(err)
				}
			}
			if err := n.srv.AssignSlots(r.first, r.last, r.id); err != nil {
				t.Fatal(err)
			}
		}
		nodes = append(nodes, &groupNode{testNode: n})
	}
	return nodes
}

// keysIn lists database db's keys, comma-separated, in the server's order.
func keysIn(t *testing.T, srv *server.Server, db int) string {
	t.Helper()
	snap, err := srv.FreezeDBs([]int{db}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	var keys []string
	for e := range snap.Entries(db) {
		keys = append(keys, e.Key)
	}
	return strings.Join(keys, ",")
}
