package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redstream/redstream/server"
)

// fakeGroup is a Raft group as its members' Cluster seams show it: what
// one node's BOOTSTRAP or ADDNODE changes, every node sees at once.
type fakeGroup struct {
	mu      sync.Mutex
	members []server.ClusterMember // by ID
	leader  string
	term    uint64
	// addFaults fail the next AddNode calls, one each, as Raft fails a
	// configuration change whose leader lost its lease while committing
	// it (a new voter that answers slowly makes that happen).
	addFaults []addFault
}

// addFault is one such failure: the change may have taken effect or
// not, and another voter may lead afterwards.
type addFault struct {
	applied   bool
	newLeader string // "" leaves the leader as it was
}

func (g *fakeGroup) size() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.members)
}

// fakeNode is one node's view of a fakeGroup (server.Cluster).
type fakeNode struct {
	g    *fakeGroup
	self server.ClusterMember
}

// inGroup reports whether n is a member. g.mu should be held.
func (n *fakeNode) inGroup() bool {
	return slices.ContainsFunc(n.g.members, func(m server.ClusterMember) bool { return m.ID == n.self.ID })
}

func (n *fakeNode) Self() server.ClusterMember { return n.self }

func (n *fakeNode) Members() []server.ClusterMember {
	n.g.mu.Lock()
	defer n.g.mu.Unlock()
	if !n.inGroup() {
		return nil
	}
	var out []server.ClusterMember
	for _, m := range n.g.members {
		m.Leader = m.ID == n.g.leader
		out = append(out, m)
	}
	return out
}

func (n *fakeNode) Status() server.ClusterStatus {
	n.g.mu.Lock()
	defer n.g.mu.Unlock()
	st := server.ClusterStatus{Role: "follower"}
	if !n.inGroup() {
		return st
	}
	st.Term, st.LeaderID, st.CommitIndex, st.AppliedIndex, st.LastIndex = n.g.term, n.g.leader, 5, 5, 5
	if n.g.leader == n.self.ID {
		st.Role = "leader"
		for _, m := range n.g.members {
			if m.ID != n.self.ID {
				st.Followers = append(st.Followers, server.FollowerStatus{ID: m.ID, Addr: m.Addr, MatchIndex: 5})
			}
		}
	}
	return st
}

func (n *fakeNode) Leading() bool               { return n.Status().Role == "leader" }
func (n *fakeNode) Propose([]byte) func() error { return func() error { return errors.New("fake") } }
func (n *fakeNode) VerifyLeader() error         { return nil }
func (n *fakeNode) Replicas(uint64) int         { return 0 }
func (n *fakeNode) Durable(uint64) bool         { return true }

func (n *fakeNode) Bootstrap() error {
	n.g.mu.Lock()
	defer n.g.mu.Unlock()
	if len(n.g.members) > 0 {
		return errors.New("bootstrap only works on new clusters")
	}
	n.g.members, n.g.leader, n.g.term = []server.ClusterMember{n.self}, n.self.ID, 1
	return nil
}

func (n *fakeNode) AddNode(m server.ClusterMember) error {
	n.g.mu.Lock()
	defer n.g.mu.Unlock()
	if n.g.leader != n.self.ID {
		return errors.New("node is not the leader")
	}
	var fault *addFault
	if len(n.g.addFaults) > 0 {
		fault = &n.g.addFaults[0]
		n.g.addFaults = n.g.addFaults[1:]
	}
	if fault == nil || fault.applied {
		// Adding a voter again changes nothing, as in Raft.
		n.g.members = slices.DeleteFunc(n.g.members, func(old server.ClusterMember) bool { return old.ID == m.ID })
		n.g.members = append(n.g.members, m)
		slices.SortFunc(n.g.members, func(a, b server.ClusterMember) int { return strings.Compare(a.ID, b.ID) })
	}
	if fault == nil {
		return nil
	}
	if fault.newLeader != "" {
		n.g.leader, n.g.term = fault.newLeader, n.g.term+1
	}
	return errors.New("leadership lost while committing log")
}

func (n *fakeNode) RemoveNode(id string) error {
	n.g.mu.Lock()
	defer n.g.mu.Unlock()
	if n.g.leader != n.self.ID {
		return errors.New("node is not the leader")
	}
	n.g.members = slices.DeleteFunc(n.g.members, func(m server.ClusterMember) bool { return m.ID == id })
	return nil
}

// startNode serves a node of g on a free loopback port and returns its
// address and its close function.
func startNode(t *testing.T, g *fakeGroup, id byte) (string, func()) {
	return startNodeOn(t, g, id, server.PortRandom)
}

func startNodeOn(t *testing.T, g *fakeGroup, id byte, port int) (string, func()) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Dir, cfg.Port, cfg.Bind, cfg.AppendOnly, cfg.Save = t.TempDir(), port, []string{"127.0.0.1"}, false, ""
	s, err := server.New(cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	addr := s.Addrs()[0].String()
	s.SetCluster(&fakeNode{g: g, self: server.ClusterMember{ID: strings.Repeat(string(id), 40), Addr: addr, BusAddr: "127.0.0.1:1" + addr[len(addr)-4:]}})
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = s.Close(ctx)
			<-done
		})
	}
	t.Cleanup(stop)
	return addr, stop
}

// runCluster runs `redstream cluster args...` and returns its output.
func runCluster(args ...string) (string, error) {
	var out bytes.Buffer
	app := newApp(&out, &out)
	err := app.Run(flagsFirst(app, append([]string{"redstream", "cluster"}, args...)))
	return out.String(), err
}

func TestClusterCommandArguments(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"create"}, "cluster create takes HOST:PORT [HOST:PORT ...]"},
		{[]string{"create", "127.0.0.1"}, `"127.0.0.1" is not a node address (HOST:PORT)`},
		{[]string{"create", "127.0.0.1:7001", "h:0"}, `"h:0" is not a node address (HOST:PORT)`},
		{[]string{"add-node", "127.0.0.1:7001"}, "cluster add-node takes NEW-HOST:PORT EXISTING-HOST:PORT"},
		{[]string{"add-node", "127.0.0.1:7001", "x"}, `"x" is not a node address (HOST:PORT)`},
		{[]string{"del-node", "127.0.0.1:7001"}, "cluster del-node takes EXISTING-HOST:PORT NODE-ID"},
		{[]string{"status"}, "cluster status takes HOST:PORT"},
		{[]string{"check", "a:1", "b:2"}, "cluster check takes HOST:PORT"},
	}
	for _, c := range cases {
		if _, err := runCluster(c.args...); err == nil || err.Error() != c.want {
			t.Errorf("cluster %v: error %v, want %q", c.args, err, c.want)
		}
	}
}

func TestParseClusterNodes(t *testing.T) {
	text := "aaa 127.0.0.1:7001@17001 myself,master - 0 0 3 connected 0-16383\n" +
		"bbb ::1:7002@17002,host.example slave aaa 0 0 3 connected\n"
	nodes, err := parseClusterNodes(text)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%+v", nodes)
	want := "[{id:aaa addr:127.0.0.1:7001 busAddr:127.0.0.1:17001 flags:[myself master] master:- slots:[0-16383]} " +
		"{id:bbb addr:[::1]:7002 busAddr:[::1]:17002 flags:[slave] master:aaa slots:[]}]"
	if got != want {
		t.Fatalf("parsed\n%s\nwant\n%s", got, want)
	}
	if l, ok := leaderOf(nodes); !ok || l.id != "aaa" {
		t.Fatalf("leaderOf = %v, %v", l, ok)
	}
	if _, err := parseClusterNodes("aaa 127.0.0.1:7001 myself,master - 0 0 3 connected\n"); err == nil {
		t.Fatal("a line without @cport parsed")
	}
}

// create, check, del-node, add-node and a check that fails, against
// three in-process servers whose Cluster seams share one fake group.
func TestClusterCommands(t *testing.T) {
	g := &fakeGroup{}
	a, _ := startNode(t, g, 'a')
	b, _ := startNode(t, g, 'b')
	c, stopC := startNode(t, g, 'c')
	idB, idC := strings.Repeat("b", 40), strings.Repeat("c", 40)

	out, err := runCluster("create", a, b, c, "--timeout", "10s")
	if err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	for _, want := range []string{"bootstrapped " + strings.Repeat("a", 40), "added " + idB, "added " + idC, "leader: " + strings.Repeat("a", 40)} {
		if !strings.Contains(out, want) {
			t.Errorf("create printed no %q:\n%s", want, out)
		}
	}
	if g.size() != 3 {
		t.Fatalf("after create the group has %d members", g.size())
	}
	if out, err := runCluster("create", a, b); err == nil || !strings.Contains(err.Error(), "is already in a group") {
		t.Errorf("create on nodes in a group: %v\n%s", err, out)
	}
	if out, err := runCluster("check", b); err != nil || strings.Count(out, "follower") != 2 || !strings.Contains(out, "leader") {
		t.Errorf("check: %v\n%s", err, out)
	} else if !regexp.MustCompile(`(?m)^0-16383 +` + regexp.QuoteMeta(a) + ` +\S+ \S+$`).MatchString(out) {
		t.Errorf("check shows no slot map with the leader %s as master of every slot and two replicas:\n%s", a, out)
	}
	if out, err := runCluster("del-node", b, idC); err != nil || !strings.Contains(out, "removed "+idC) {
		t.Fatalf("del-node: %v\n%s", err, out)
	}
	if g.size() != 2 {
		t.Fatalf("after del-node the group has %d members", g.size())
	}
	if out, err := runCluster("add-node", c, b); err != nil || !strings.Contains(out, "added "+idC) {
		t.Fatalf("add-node: %v\n%s", err, out)
	}
	stopC()
	out, err = runCluster("check", a, "--timeout", "2s")
	if err == nil || !strings.Contains(err.Error(), "1 of 3 members do not answer: "+c) || !strings.Contains(out, "unreachable") {
		t.Errorf("check with a member down: %v\n%s", err, out)
	}
	if out, err := runCluster("status", a, "--timeout", "2s"); err != nil {
		t.Errorf("status with a member down: %v\n%s", err, out)
	}
}

// A voter added while the leader's lease runs out makes ADDNODE fail
// with the change's outcome unknown, and the group may elect another
// leader: create asks the leader of the moment again until each node is
// a member, and spreads groups from whichever node leads then.
func TestClusterCreateRetriesALostAddNode(t *testing.T) {
	idB, idC := strings.Repeat("b", 40), strings.Repeat("c", 40)
	g := &fakeGroup{addFaults: []addFault{
		{applied: true, newLeader: idB}, // b joined, then leads: c must be added by b
		{applied: false},                // c's first ADDNODE at b did nothing
	}}
	a, _ := startNode(t, g, 'a')
	b, _ := startNode(t, g, 'b')
	c, _ := startNode(t, g, 'c')
	out, err := runCluster("create", a, b, c, "--timeout", "10s")
	if err != nil {
		t.Fatalf("create with ADDNODE failing twice: %v\n%s", err, out)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var ids []string
	for _, m := range g.members {
		ids = append(ids, m.ID[:1])
	}
	if got := strings.Join(ids, ","); got != "a,b,c" || g.leader != idB || len(g.addFaults) != 0 {
		t.Fatalf("after create: members %s, leader %.1s, %d faults unused; want a,b,c led by b, none unused\n%s", got, g.leader, len(g.addFaults), out)
	}
	for _, want := range []string{"added " + idB, "added " + idC, "leader: " + idB} {
		if !strings.Contains(out, want) {
			t.Errorf("create printed no %q:\n%s", want, out)
		}
	}
}

// create waits for a node that is not listening yet, as `make cluster`
// needs: it runs create right after starting the nodes.
func TestClusterCreateWaitsForStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there until the node starts
	done := make(chan error, 1)
	go func() {
		_, err := runCluster("create", fmt.Sprintf("127.0.0.1:%d", port), "--timeout", "20s")
		done <- err
	}()
	time.Sleep(time.Second) // the node starts late: that is the case tested
	startNodeOn(t, &fakeGroup{}, 'a', port)
	if err := <-done; err != nil {
		t.Fatalf("create on a node that started late: %v", err)
	}
}

// Cluster clients read the group from the replies: go-redis parses
// CLUSTER SLOTS and SHARDS into the leader and its replicas, and
// redis-cli --cluster check finds every slot covered.
func TestClusterRepliesParse(t *testing.T) {
	g := &fakeGroup{}
	a, _ := startNode(t, g, 'a')
	b, _ := startNode(t, g, 'b')
	c, _ := startNode(t, g, 'c')
	if out, err := runCluster("create", a, b, c); err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	rc := redis.NewClient(&redis.Options{Addr: b})
	defer rc.Close()
	ctx := context.Background()
	slots, err := rc.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%d-%d", slots[0].Start, slots[0].End)
	for _, n := range slots[0].Nodes {
		got += " " + n.Addr
	}
	if want := "0-16383 " + a + " " + b + " " + c; len(slots) != 1 || got != want {
		t.Errorf("CLUSTER SLOTS via go-redis: %d ranges, %s; want %s", len(slots), got, want)
	}
	shards, err := rc.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 1 || len(shards[0].Slots) != 1 || shards[0].Slots[0].End != 16383 || len(shards[0].Nodes) != 3 ||
		shards[0].Nodes[0].Role != "master" || shards[0].Nodes[1].Role != "replica" || shards[0].Nodes[1].Health != "online" {
		t.Errorf("CLUSTER SHARDS via go-redis: %+v", shards)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed (apt-get install redis-tools); skipping its check")
	}
	out, err := exec.Command(cli, "--cluster", "check", b).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "[OK] All 16384 slots covered.") {
		t.Errorf("redis-cli --cluster check: %v\n%s", err, out)
	}
}
