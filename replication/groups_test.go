package replication

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/redstream/redstream/server"
)

// hostedGroups are the groups each node of the tests below opens besides
// its main group.
var hostedGroups = []uint16{2, 3, 4}

// groupNode is a testNode with the extra groups it hosts and their state
// machines.
type groupNode struct {
	*testNode
	fsms map[uint16]*listFSM
}

func (n *groupNode) group(id uint16) *Group { return n.node.Group(id) }

// openGroups opens ids on n, each with a fresh listFSM.
func openGroups(t *testing.T, n *testNode, ids []uint16) *groupNode {
	t.Helper()
	gn := &groupNode{testNode: n, fsms: map[uint16]*listFSM{}}
	for _, id := range ids {
		f := &listFSM{}
		if _, err := n.node.OpenGroup(id, f); err != nil {
			t.Fatalf("opening group %d: %v", id, err)
		}
		gn.fsms[id] = f
	}
	return gn
}

// groupLeader waits for a node among the running ones to lead group id.
func groupLeader(t *testing.T, nodes []*groupNode, id uint16) *groupNode {
	t.Helper()
	var leader *groupNode
	waitFor(t, fmt.Sprintf("a leader of group %d", id), func() bool {
		for _, n := range nodes {
			if n.srv != nil && n.group(id).Leading() {
				leader = n
				return true
			}
		}
		return false
	})
	return leader
}

// moveLeadership has group id's leader hand its leadership to target,
// until target leads it.
func moveLeadership(t *testing.T, nodes []*groupNode, id uint16, target *groupNode) {
	t.Helper()
	to := target.node.Self().ID
	waitFor(t, fmt.Sprintf("%s to lead group %d", to, id), func() bool {
		if target.group(id).Leading() {
			return true
		}
		for _, n := range nodes {
			if n != target && n.srv != nil && n.group(id).Leading() {
				// An error (a transfer already under way, the target
				// not caught up in time) is retried on the next poll.
				n.group(id).TransferLeadership(to)
			}
		}
		return false
	})
}

// proposeAll commits each entry through group id's leader.
func proposeAll(t *testing.T, leader *groupNode, id uint16, entries []string) {
	t.Helper()
	for _, e := range entries {
		if _, err := leader.group(id).Propose([]byte(e), 5*time.Second); err != nil {
			t.Fatalf("proposing %q to group %d: %v", e, id, err)
		}
	}
}

// waitGroupApplied waits until every running node's state machine of
// group id holds exactly want, in order.
func waitGroupApplied(t *testing.T, nodes []*groupNode, id uint16, want []string) {
	t.Helper()
	for i, n := range nodes {
		if n.srv == nil {
			continue
		}
		waitForWithin(t, 20*time.Second, fmt.Sprintf("node %d's group %d to hold %q", i, id, want), func() bool {
			return slices.Equal(n.fsms[id].applied(), want)
		}, func() string { return fmt.Sprintf("%q", n.fsms[id].applied()) })
	}
}

// Three nodes host groups 2, 3 and 4 on their one Raft port. Each group
// elects, leadership is spread one group per node, each group applies
// exactly its own entries on every node, a node's loss moves its group's
// leadership elsewhere, and the node comes back and catches up in every
// group.
func TestNodeHostsSeveralGroups(t *testing.T) {
	baseline := runtime.NumGoroutine()
	var nodes []*groupNode
	for range 3 {
		nodes = append(nodes, openGroups(t, startNode(t, t.TempDir(), freePort(t)), hostedGroups))
	}
	var voters []server.ClusterMember
	for _, n := range nodes {
		voters = append(voters, n.node.Self())
	}
	for _, id := range hostedGroups {
		for _, n := range nodes {
			if err := n.group(id).Bootstrap(voters); err != nil {
				t.Fatalf("bootstrapping group %d: %v", id, err)
			}
		}
	}
	for _, id := range hostedGroups {
		groupLeader(t, nodes, id)
	}

	// Node i leads group hostedGroups[i], and nothing else.
	for i, id := range hostedGroups {
		moveLeadership(t, nodes, id, nodes[i])
	}
	for i, n := range nodes {
		var led []uint16
		for _, id := range hostedGroups {
			if n.group(id).Leading() {
				led = append(led, id)
			}
		}
		if !slices.Equal(led, []uint16{hostedGroups[i]}) {
			t.Fatalf("node %d leads groups %v, want only group %d", i, led, hostedGroups[i])
		}
		if n.node.Leading() {
			t.Fatalf("node %d leads the main group, which was never bootstrapped", i)
		}
	}

	want := map[uint16][]string{}
	for i, id := range hostedGroups {
		for j := range 5 {
			want[id] = append(want[id], fmt.Sprintf("g%d-%d", id, j))
		}
		proposeAll(t, nodes[i], id, want[id])
	}
	for i, id := range hostedGroups {
		waitGroupApplied(t, nodes, id, want[id])
		st := nodes[0].group(id).Status()
		if st.LeaderID != nodes[i].node.Self().ID {
			t.Fatalf("group %d's status on node 0: %+v, want node %d its leader", id, st, i)
		}
	}
	if st := nodes[0].group(hostedGroups[0]).Status(); st.Role != "leader" || len(st.Followers) != 2 {
		t.Fatalf("the leader's status of group %d: %+v, want a leader with two followers", hostedGroups[0], st)
	}

	// Node 0, leader of group 2, goes away: group 2 elects another leader
	// and takes writes, and so do the groups it did not lead.
	gone := nodes[0]
	gone.stop()
	for _, id := range hostedGroups {
		leader := groupLeader(t, nodes, id)
		if leader == gone {
			t.Fatalf("a stopped node leads group %d", id)
		}
		more := fmt.Sprintf("g%d-after", id)
		proposeAll(t, leader, id, []string{more})
		want[id] = append(want[id], more)
		waitGroupApplied(t, nodes, id, want[id])
	}

	// It comes back from its directory, on its ports, and catches up.
	back := openGroups(t, startNodeOn(t, gone.dir, gone.port, gone.busPort), hostedGroups)
	nodes[0] = back
	if back.node.Self().ID != gone.node.Self().ID {
		t.Fatalf("the node came back as %s, was %s", back.node.Self().ID, gone.node.Self().ID)
	}
	for _, id := range hostedGroups {
		waitGroupApplied(t, nodes, id, want[id])
	}
	// It takes its group back and serves writes for it.
	moveLeadership(t, nodes, hostedGroups[0], back)
	proposeAll(t, back, hostedGroups[0], []string{"g2-back"})
	want[hostedGroups[0]] = append(want[hostedGroups[0]], "g2-back")
	waitGroupApplied(t, nodes, hostedGroups[0], want[hostedGroups[0]])

	for _, n := range nodes {
		n.stop()
	}
	// Closing the nodes closed every group: what they started has ended.
	waitForWithin(t, 20*time.Second, "the nodes' goroutines to end", func() bool {
		return runtime.NumGoroutine() <= baseline
	}, func() string {
		buf := make([]byte, 1<<20)
		return fmt.Sprintf("%d goroutines, %d before the test:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
	})
}

// A group's state is under Dir/raft/groups/<id>, and the main group's
// files are where a node of one group has always kept them. A node
// reopened from its directory finds both.
func TestGroupFilesLayout(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir, freePort(t))
	if err := n.node.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	gn := openGroups(t, n, []uint16{5})
	self := []server.ClusterMember{n.node.Self()}
	if err := gn.group(5).Bootstrap(self); err != nil {
		t.Fatal(err)
	}
	if err := gn.group(5).Bootstrap(self); err == nil {
		t.Fatal("a group with Raft state was bootstrapped again")
	}
	if _, err := n.node.OpenGroup(5, &listFSM{}); err == nil {
		t.Fatal("group 5 was opened twice")
	}
	if _, err := n.node.OpenGroup(mainGroup, &listFSM{}); err == nil {
		t.Fatal("OpenGroup opened the main group")
	}
	waitFor(t, "the node to lead group 5", gn.group(5).Leading)
	proposeAll(t, gn, 5, []string{"a", "b"})
	if err := gn.group(5).raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	if err := n.node.main.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	proposeAll(t, gn, 5, []string{"c"})

	raftDir := filepath.Join(dir, "raft")
	for _, pattern := range []string{
		"node-id", "wal/*.wal", "wal/wal-meta.db", "snapshots/*/state.bin",
		"groups/5/wal/*.wal", "groups/5/wal/wal-meta.db", "groups/5/snapshots/*/state.bin",
	} {
		if files, _ := filepath.Glob(filepath.Join(raftDir, pattern)); len(files) == 0 {
			t.Errorf("no file matches %s under %s", pattern, raftDir)
		}
	}
	var top []string
	entries, err := os.ReadDir(raftDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		top = append(top, e.Name())
	}
	if want := []string{"groups", "node-id", "snapshots", "wal"}; !slices.Equal(top, want) {
		t.Errorf("%s holds %v, want %v", raftDir, top, want)
	}
	if files, _ := filepath.Glob(filepath.Join(raftDir, "groups", "5", "node-id")); len(files) != 0 {
		t.Errorf("group 5 has a node ID of its own: %v", files)
	}

	id := n.node.Self().ID
	n.stop()
	again := openGroups(t, startNodeOn(t, dir, n.port, n.busPort), []uint16{5})
	if again.node.Self().ID != id {
		t.Fatalf("the node reopened as %s, was %s", again.node.Self().ID, id)
	}
	waitFor(t, "the reopened node to lead its main group", again.node.Leading)
	waitFor(t, "the reopened node to lead group 5", again.group(5).Leading)
	if got := again.fsms[5].applied(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("group 5 reopened with %q", got)
	}
	if len(again.node.Members()) != 1 || len(again.group(5).Members()) != 1 {
		t.Fatalf("members after reopening: main %v, group 5 %v", again.node.Members(), again.group(5).Members())
	}
}
