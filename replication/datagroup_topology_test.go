package replication

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redstream/redstream/server"
)

// Three nodes, three groups: node 0 leads group 1 (slots 0-5460), node 1
// leads groups 2 (5461-10922) and 3 (10923-16383). Every node describes
// the same slot map in CLUSTER SLOTS, each node under one ID and address
// in every group; go-redis's ClusterClient (CLUSTER SLOTS) and rueidis
// (CLUSTER SHARDS) send each key straight to its group's leader, never
// meeting a -MOVED. (rueidis keys its shards by master address: were
// node 1's two groups two shards, one's slots would be lost.)
func TestClusterClientsRouteToEachGroupsLeader(t *testing.T) {
	nodes := startDataGroups(t, slotRange{5461, 10922, 2}, slotRange{10923, 16383, 3})
	moveLeadership(t, nodes, 1, nodes[0])
	moveLeadership(t, nodes, 2, nodes[1])
	moveLeadership(t, nodes, 3, nodes[1])

	ctx := context.Background()
	client := func(n *groupNode) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: n.addr, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		return c
	}
	masterOf := map[[2]int]*groupNode{{0, 5460}: nodes[0], {5461, 10922}: nodes[1], {10923, 16383}: nodes[1]}
	// Node 2 leads nothing: it is every group's one replica (a master is
	// nobody's replica).
	slotMap := func(n *groupNode) ([]redis.ClusterSlot, error) { return client(n).ClusterSlots(ctx).Result() }
	// The followers learn each new leader from its heartbeats.
	waitForWithin(t, 20*time.Second, "every node to name each group's leader", func() bool {
		for _, n := range nodes {
			slots, err := slotMap(n)
			if err != nil || len(slots) != 3 {
				return false
			}
			for _, s := range slots {
				m := masterOf[[2]int{s.Start, s.End}]
				if m == nil || len(s.Nodes) != 2 || s.Nodes[0].Addr != m.addr || s.Nodes[1].Addr != nodes[2].addr {
					return false
				}
			}
		}
		return true
	}, func() string { s, err := slotMap(nodes[2]); return fmt.Sprint(s, err) })
	first, _ := slotMap(nodes[0])
	ids := map[string]string{}
	for _, n := range nodes {
		ids[n.addr] = n.node.Self().ID
		if got, _ := slotMap(n); !reflect.DeepEqual(got, first) {
			t.Errorf("CLUSTER SLOTS on %s:\n%v\nwant (as node 0 says)\n%v", n.addr, got, first)
		}
	}
	for _, s := range first {
		for _, m := range s.Nodes {
			if ids[m.Addr] != m.ID {
				t.Errorf("slots %d-%d name %s as %s, want %s", s.Start, s.End, m.Addr, m.ID, ids[m.Addr])
			}
		}
	}
	nodesLine, err := client(nodes[0]).ClusterNodes(ctx).Result()
	want := fmt.Sprintf("%s %s@", ids[nodes[1].addr], nodes[1].addr)
	found := false
	for _, line := range strings.Split(nodesLine, "\n") {
		if strings.HasPrefix(line, want) {
			found = strings.Contains(line, " master - ") && strings.HasSuffix(line, " connected 5461-16383")
		}
	}
	if err != nil || !found {
		t.Errorf("CLUSTER NODES on node 0: %q, %v; want node 1 the master of 5461-16383", nodesLine, err)
	}

	// A key in each group's slots.
	keys := map[uint16]string{}
	for i := 0; len(keys) < 3; i++ {
		k := fmt.Sprintf("key:%d", i)
		id := uint16(1)
		switch slot := server.KeySlot([]byte(k)); {
		case slot > 10922:
			id = 3
		case slot > 5460:
			id = 2
		}
		if keys[id] == "" {
			keys[id] = k
		}
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[2].addr}, MaxRedirects: -1})
	t.Cleanup(func() { cc.Close() })
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{nodes[2].addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("rueidis: %v", err)
	}
	t.Cleanup(rc.Close)
	for id, k := range keys {
		if err := cc.Set(ctx, k, "go-redis", 0).Err(); err != nil {
			t.Errorf("go-redis SET %s (group %d): %v", k, id, err)
		}
		if err := rc.Do(ctx, rc.B().Set().Key(k).Value("rueidis").Build()).Error(); err != nil {
			t.Errorf("rueidis SET %s (group %d): %v", k, id, err)
		}
	}
	for _, n := range nodes {
		info, err := client(n).Info(ctx, "errorstats").Result()
		if err != nil || strings.Contains(info, "errorstat_MOVED") {
			t.Errorf("%s redirected a client: %q, %v", n.addr, info, err)
		}
	}
}
