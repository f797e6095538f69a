package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

var nodeD = ClusterMember{ID: strings.Repeat("d", 40), Addr: "127.0.0.1:7004", BusAddr: "127.0.0.1:17004"}

// groupOf is a group of members led by leader (none: the zero member) in
// term, seen from self. Its indexes follow from the term (commit 10*term,
// last 10*term+1), so a reply shows which group's view an offset is from;
// a leader's followers hold every committed entry and were heard from
// just now.
func groupOf(self, leader ClusterMember, term uint64, members ...ClusterMember) *fakeCluster {
	f := &fakeCluster{self: self, status: ClusterStatus{Role: "follower", Term: term, LeaderID: leader.ID,
		CommitIndex: 10 * term, AppliedIndex: 10 * term, LastIndex: 10*term + 1}}
	if leader.ID == "" {
		f.status.Role = "candidate"
	}
	for _, m := range members {
		m.Leader = leader.ID != "" && m.ID == leader.ID
		f.members = append(f.members, m)
		if self.ID == leader.ID && m.ID != self.ID {
			f.status.Role = "leader"
			f.status.Followers = append(f.status.Followers,
				FollowerStatus{ID: m.ID, Addr: m.Addr, MatchIndex: 10 * term, LastContact: 100 * time.Millisecond})
		}
	}
	return f
}

// slotsOf gives group id the slot ranges, each "first-last".
type slotsOf struct {
	id     uint16
	ranges []string
}

// groupsConn is a connection, speaking RESP proto, to a server whose
// first group is first and which hosts others[i] as group i+2 in
// database i+1, the slots given to each.
func groupsConn(t *testing.T, proto int, first Cluster, others []Cluster, slots ...slotsOf) *pipeConn {
	t.Helper()
	p := clusterConn(t, first, proto)
	for i, cl := range others {
		if err := p.s.HostGroup(uint16(i+2), i+1, cl); err != nil {
			t.Fatal(err)
		}
	}
	for _, so := range slots {
		for _, r := range so.ranges {
			a, b, _ := strings.Cut(r, "-")
			lo, _ := strconv.Atoi(a)
			hi, _ := strconv.Atoi(b)
			if err := p.s.AssignSlots(lo, hi, so.id); err != nil {
				t.Fatal(err)
			}
		}
	}
	return p
}

// slotNode renders one node of a CLUSTER SLOTS entry.
func slotNode(proto int, id string, port int) string {
	m := "*0[]"
	if proto == 3 {
		m = "%0{}"
	}
	return fmt.Sprintf(`*4[$"127.0.0.1" :%d $"%s" %s]`, port, id, m)
}

// Three groups led by three nodes, seen from A: each range of each group
// in slot order with the group's leader, each node a master of its
// group's slots, one shard per group. No master is listed as another's
// replica: in Redis Cluster a node is one or the other, and redis-py takes
// a node's role from the first range that names it.
func TestClusterGroupsEachLed(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", proto), func(t *testing.T) {
			g1 := groupOf(nodeA, nodeA, 3, nodeA, nodeB, nodeC)
			g1.status.Followers[1].LastContact = 20 * time.Second // C, as group 1's leader A sees it
			p := groupsConn(t, proto, g1, []Cluster{
				groupOf(nodeA, nodeB, 5, nodeA, nodeB, nodeC),
				groupOf(nodeA, nodeC, 7, nodeA, nodeB, nodeC),
			},
				// Adjacent assignments of one group are one range.
				slotsOf{2, []string{"100-149", "150-199", "5000-5999"}},
				slotsOf{3, []string{"10000-16383"}})
			check := func(cmd, want string) {
				t.Helper()
				if got := p.send("CLUSTER", cmd); got != want {
					t.Errorf("CLUSTER %s:\ngot  %s\nwant %s", cmd, got, want)
				}
			}
			a, b, c := slotNode(proto, "<A>", 7001), slotNode(proto, "<B>", 7002), slotNode(proto, "<C>", 7003)
			check("SLOTS", "*6["+
				"*3[:0 :99 "+a+"] "+
				"*3[:100 :199 "+b+"] "+
				"*3[:200 :4999 "+a+"] "+
				"*3[:5000 :5999 "+b+"] "+
				"*3[:6000 :9999 "+a+"] "+
				"*3[:10000 :16383 "+c+"]]")
			check("NODES", verbatim(proto,
				"<A> 127.0.0.1:7001@17001 myself,master - 0 0 3 connected 0-99 200-4999 6000-9999\n"+
					"<B> 127.0.0.1:7002@17002 master - 0 0 5 connected 100-199 5000-5999\n"+
					"<C> 127.0.0.1:7003@17003 master,fail? - 0 0 7 disconnected 10000-16383\n"))
			// Offsets as A knows them: its own last index in group 1, the
			// other leaders' commit indexes.
			check("SHARDS", "*3["+
				shard(proto, "*6[:0 :99 :200 :4999 :6000 :9999]",
					shardNode(proto, "<A>", 7001, "master", 31, "online"))+" "+
				shard(proto, "*4[:100 :199 :5000 :5999]",
					shardNode(proto, "<B>", 7002, "master", 50, "online"))+" "+
				shard(proto, "*2[:10000 :16383]",
					shardNode(proto, "<C>", 7003, "master", 70, "online"))+"]")
			check("INFO", verbatim(proto, "cluster_state:ok\r\ncluster_slots_assigned:16384\r\n"+
				"cluster_slots_ok:16384\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:3\r\n"+
				"cluster_size:3\r\ncluster_current_epoch:7\r\ncluster_my_epoch:3\r\ncluster_stats_messages_sent:0\r\n"+
				"cluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n"))
		})
	}
}

// Seen from C, which leads nothing: A leads groups 1 and 2, which are one
// master's slots, one shard; B leads group 3; group 4 has no leader, so
// its slots are served by nobody and left out, and D, only in group 4,
// is a master of no slots. Slots 3000-3099 belong to a group C does not
// host: left out too.
func TestClusterGroupsSharedLeader(t *testing.T) {
	p := groupsConn(t, 2, groupOf(nodeC, nodeA, 3, nodeA, nodeB, nodeC), []Cluster{
		groupOf(nodeC, nodeA, 4, nodeA, nodeB), // C is no voter of group 2
		groupOf(nodeC, nodeB, 6, nodeB, nodeC),
		groupOf(nodeC, ClusterMember{}, 8, nodeB, nodeC, nodeD),
	},
		slotsOf{2, []string{"0-999", "2000-2999"}},
		slotsOf{3, []string{"8192-12287"}},
		slotsOf{4, []string{"12288-16383"}})
	p.s.shard.mu.Lock()
	for slot := 3000; slot <= 3099; slot++ {
		p.s.slotGroup[slot] = nil // as the cluster map will for another node's group
	}
	p.s.shard.mu.Unlock()
	check := func(cmd, want string) {
		t.Helper()
		if got := p.send("CLUSTER", cmd); got != want {
			t.Errorf("CLUSTER %s:\ngot  %s\nwant %s", cmd, got, want)
		}
	}
	a, b, c := slotNode(2, "<A>", 7001), slotNode(2, "<B>", 7002), slotNode(2, "<C>", 7003)
	// Each group's ranges apart, with its own replicas; B leads group 3,
	// so it is no replica of A's.
	check("SLOTS", "*5["+
		"*3[:0 :999 "+a+"] "+
		"*4[:1000 :1999 "+a+" "+c+"] "+
		"*3[:2000 :2999 "+a+"] "+
		"*4[:3100 :8191 "+a+" "+c+"] "+
		"*4[:8192 :12287 "+b+" "+c+"]]")
	// A's slots are its two groups' together.
	check("NODES", verbatim(2,
		"<A> 127.0.0.1:7001@17001 master - 0 0 4 connected 0-2999 3100-8191\n"+
			"<B> 127.0.0.1:7002@17002 master - 0 0 6 connected 8192-12287\n"+
			"<C> 127.0.0.1:7003@17003 myself,slave <A> 0 0 3 connected\n"+
			nodeD.ID+" 127.0.0.1:7004@17004 master - 0 0 8 connected\n"))
	check("SHARDS", "*3["+
		shard(2, "*4[:0 :2999 :3100 :8191]",
			shardNode(2, "<A>", 7001, "master", 30, "online"),
			shardNode(2, "<C>", 7003, "replica", 31, "online"))+" "+
		shard(2, "*2[:8192 :12287]",
			shardNode(2, "<B>", 7002, "master", 60, "online"),
			shardNode(2, "<C>", 7003, "replica", 61, "online"))+" "+
		shard(2, "*0[]", shardNode(2, nodeD.ID, 7004, "master", 0, "online"))+"]")
	// Served: group 1's 1000 + 5092, group 2's 2000, group 3's 4096.
	check("INFO", verbatim(2, "cluster_state:fail\r\ncluster_slots_assigned:12188\r\n"+
		"cluster_slots_ok:12188\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:4\r\n"+
		"cluster_size:2\r\ncluster_current_epoch:8\r\ncluster_my_epoch:3\r\ncluster_stats_messages_sent:0\r\n"+
		"cluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n"))
}

// A node's address is the first one any of its groups knows: a data group
// may not know a voter's client address (replication's Members leaves it
// empty), and the node must not show up with two.
func TestClusterGroupsOneAddressPerNode(t *testing.T) {
	g2 := groupOf(nodeA, nodeB, 5, nodeA, nodeB)
	g2.members[1].Addr = ""
	p := groupsConn(t, 2, groupOf(nodeA, nodeA, 3, nodeA, nodeB), []Cluster{g2}, slotsOf{2, []string{"0-0"}})
	a, b := slotNode(2, "<A>", 7001), slotNode(2, "<B>", 7002)
	want := "*2[*3[:0 :0 " + b + "] *3[:1 :16383 " + a + "]]"
	if got := p.send("CLUSTER", "SLOTS"); got != want {
		t.Errorf("CLUSTER SLOTS:\ngot  %s\nwant %s", got, want)
	}
	want = verbatim(2, "<A> 127.0.0.1:7001@17001 myself,master - 0 0 3 connected 1-16383\n"+
		"<B> 127.0.0.1:7002@17002 master - 0 0 5 connected 0\n")
	if got := p.send("CLUSTER", "NODES"); got != want {
		t.Errorf("CLUSTER NODES:\ngot  %s\nwant %s", got, want)
	}
}

// COUNTKEYSINSLOT and GETKEYSINSLOT look in the database of the slot's
// group; a slot of a group not hosted here has no keys here.
func TestClusterKeysInSlotOfGroup(t *testing.T) {
	p := groupsConn(t, 2, groupOf(nodeA, nodeA, 3, nodeA, nodeB), []Cluster{groupOf(nodeA, nodeB, 5, nodeA, nodeB)})
	slot := KeySlot([]byte("q"))
	if err := p.s.AssignSlots(slot, slot, 2); err != nil {
		t.Fatal(err)
	}
	p.s.shard.mu.Lock()
	p.s.shard.dbs[1].insert("q", &Object{value: []byte("v")})
	p.s.shard.dbs[0].insert("{q}stale", &Object{value: []byte("v")}) // not group 2's database
	p.s.shard.mu.Unlock()
	s := strconv.Itoa(slot)
	p.expect([][2]string{
		{"CLUSTER COUNTKEYSINSLOT " + s, ":1"},
		{"CLUSTER GETKEYSINSLOT " + s + " 10", `*1[$"q"]`},
	})
	p.s.shard.mu.Lock()
	p.s.slotGroup[slot] = nil
	p.s.shard.mu.Unlock()
	p.expect([][2]string{
		{"CLUSTER COUNTKEYSINSLOT " + s, ":0"},
		{"CLUSTER GETKEYSINSLOT " + s + " 10", "*0[]"},
	})
}
