package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeCluster is a Cluster whose state the test sets; its membership
// changes are recorded and, when gate is set, wait for it to close.
type fakeCluster struct {
	mu       sync.Mutex
	self     ClusterMember
	members  []ClusterMember
	status   ClusterStatus
	replicas int           // what Replicas answers
	err      error         // what the membership changes return
	gate     chan struct{} // nil: they return at once
	entered  chan string   // with gate: each change, as it starts waiting
	calls    []string
}

func (f *fakeCluster) Self() ClusterMember { return f.self }

func (f *fakeCluster) Members() []ClusterMember {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ClusterMember(nil), f.members...)
}

func (f *fakeCluster) Status() ClusterStatus       { return f.status }
func (f *fakeCluster) Leading() bool               { return f.status.Role == "leader" }
func (f *fakeCluster) Propose([]byte) func() error { return func() error { return errors.New("fake") } }
func (f *fakeCluster) VerifyLeader() error         { return nil }
func (f *fakeCluster) Replicas(uint64) int         { return f.replicas }
func (f *fakeCluster) Durable(uint64) bool         { return true }

func (f *fakeCluster) change(call string) error {
	if f.gate != nil {
		f.entered <- call
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	return f.err
}

// set changes the fake's state between commands.
func (f *fakeCluster) set(change func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change()
}

func (f *fakeCluster) Bootstrap() error { return f.change("bootstrap") }
func (f *fakeCluster) AddNode(m ClusterMember) error {
	return f.change("add " + m.ID + " " + m.Addr + " " + m.BusAddr)
}
func (f *fakeCluster) RemoveNode(id string) error { return f.change("remove " + id) }

var (
	nodeA = ClusterMember{ID: strings.Repeat("a", 40), Addr: "127.0.0.1:7001", BusAddr: "127.0.0.1:17001"}
	nodeB = ClusterMember{ID: strings.Repeat("b", 40), Addr: "127.0.0.1:7002", BusAddr: "127.0.0.1:17002"}
	nodeC = ClusterMember{ID: strings.Repeat("c", 40), Addr: "127.0.0.1:7003", BusAddr: "127.0.0.1:17003"}
)

// threeNodes is a group of A, B and C led by A, seen from self.
func threeNodes(self ClusterMember) *fakeCluster {
	a := nodeA
	a.Leader = true
	f := &fakeCluster{self: self, members: []ClusterMember{a, nodeB, nodeC}}
	f.status = ClusterStatus{Role: "follower", Term: 3, LeaderID: nodeA.ID, CommitIndex: 10, AppliedIndex: 9, LastIndex: 11}
	if self.ID == nodeA.ID {
		f.status.Role = "leader"
		f.status.Followers = []FollowerStatus{
			{ID: nodeB.ID, Addr: nodeB.Addr, MatchIndex: 11, LastContact: 500 * time.Millisecond},
			{ID: nodeC.ID, Addr: nodeC.Addr, MatchIndex: 0, LastContact: 20 * time.Second}, // past cluster-node-timeout
		}
	}
	return f
}

// clusterConn is a connection to a server in cluster mode (cl nil: a
// server without it) speaking RESP proto.
func clusterConn(t *testing.T, cl Cluster, proto int) *pipeConn {
	s := newTestServer(t, &recordingLog{})
	if cl != nil {
		s.SetCluster(cl)
	}
	p := connect(t, s)
	if proto == 3 {
		p.send("HELLO", "3")
	}
	return p
}

// send sends a command and renders its whole reply (render).
func (p *pipeConn) send(args ...string) string {
	p.t.Helper()
	return p.roundTrip(args, func() string { return render(p.t, p.r) })
}

// expect sends each command (its words split at spaces) and checks the
// rendered reply.
func (p *pipeConn) expect(cases [][2]string) {
	p.t.Helper()
	for _, c := range cases {
		if got := p.send(strings.Fields(c[0])...); got != c[1] {
			p.t.Errorf("%s = %s, want %s", c[0], got, c[1])
		}
	}
}

// render reads one reply and writes it compactly with its RESP types:
// *2[$"a" :1], %1{$"k" $"v"}, =txt:"..." (verbatim), +OK, -ERR ...
// The test nodes' IDs are shown as <A>, <B>, <C>.
func render(t testing.TB, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	kind, rest := line[0], line[1:]
	n, _ := strconv.Atoi(rest)
	var out string
	switch kind {
	case '$', '=':
		if n < 0 {
			return line
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			t.Fatal(err)
		}
		out = string(kind) + strconv.Quote(string(buf[:n]))
	case '*', '~', '%':
		count := n
		if kind == '%' {
			count *= 2
		}
		elems := make([]string, max(count, 0))
		for i := range elems {
			elems[i] = render(t, r)
		}
		open, close := "[", "]"
		if kind == '%' {
			open, close = "{", "}"
		}
		out = string(kind) + rest + open + strings.Join(elems, " ") + close
	default:
		out = line
	}
	return strings.NewReplacer(nodeA.ID, "<A>", nodeB.ID, "<B>", nodeC.ID, "<C>").Replace(out)
}

func TestClusterDisabled(t *testing.T) {
	p := clusterConn(t, nil, 2)
	for _, cmd := range [][]string{
		{"CLUSTER", "INFO"}, {"CLUSTER", "MYID"}, {"CLUSTER", "SLOTS"}, {"CLUSTER", "SHARDS"}, {"CLUSTER", "NODES"},
		{"CLUSTER", "KEYSLOT", "foo"}, {"CLUSTER", "COUNTKEYSINSLOT", "1"}, {"CLUSTER", "GETKEYSINSLOT", "1", "1"},
		{"CLUSTER", "HELP"}, {"CLUSTER", "BOOTSTRAP"}, {"CLUSTER", "ADDNODE", nodeB.ID, nodeB.Addr, nodeB.BusAddr},
		{"CLUSTER", "DELNODE", nodeB.ID}, {"READONLY"}, {"READWRITE"}, {"ASKING"},
	} {
		if got := p.send(cmd...); got != "-"+errClusterDisabled {
			t.Errorf("%v = %s", cmd, got)
		}
	}
	// The dispatcher's checks come first, as in Redis.
	p.expect([][2]string{
		{"CLUSTER", "-ERR wrong number of arguments for 'cluster' command"},
		{"CLUSTER NOSUCH", "-ERR unknown subcommand 'NOSUCH'. Try CLUSTER HELP."},
		{"CLUSTER KEYSLOT", "-ERR wrong number of arguments for 'cluster|keyslot' command"},
		{"CLUSTER NODES extra", "-ERR wrong number of arguments for 'cluster|nodes' command"},
		{"READONLY extra", "-ERR wrong number of arguments for 'readonly' command"},
		{"CLUSTER ADDNODE a b", "-ERR wrong number of arguments for 'cluster|addnode' command"},
	})
	if info := p.send("INFO", "cluster"); !strings.Contains(info, `cluster_enabled:0\r\n`) {
		t.Errorf("INFO cluster = %s", info)
	}
}

const (
	slotsRESP2 = `*1[*5[:0 :16383 *4[$"127.0.0.1" :7001 $"<A>" *0[]] *4[$"127.0.0.1" :7002 $"<B>" *0[]] *4[$"127.0.0.1" :7003 $"<C>" *0[]]]]`
	slotsRESP3 = `*1[*5[:0 :16383 *4[$"127.0.0.1" :7001 $"<A>" %0{}] *4[$"127.0.0.1" :7002 $"<B>" %0{}] *4[$"127.0.0.1" :7003 $"<C>" %0{}]]]`
)

// shardNode renders one node of a CLUSTER SHARDS reply.
func shardNode(proto int, id string, port int, role string, offset int, health string) string {
	fields := fmt.Sprintf(`$"id" $"%s" $"port" :%d $"ip" $"127.0.0.1" $"endpoint" $"127.0.0.1" $"role" $"%s" $"replication-offset" :%d $"health" $"%s"`,
		id, port, role, offset, health)
	if proto == 3 {
		return "%7{" + fields + "}"
	}
	return "*14[" + fields + "]"
}

func shard(proto int, slots string, nodes ...string) string {
	body := fmt.Sprintf(`$"slots" %s $"nodes" *%d[%s]`, slots, len(nodes), strings.Join(nodes, " "))
	if proto == 3 {
		return "%2{" + body + "}"
	}
	return "*4[" + body + "]"
}

// verbatim renders a bulk (RESP2) or verbatim text (RESP3) reply.
func verbatim(proto int, s string) string {
	if proto == 3 {
		return "=" + strconv.Quote("txt:"+s)
	}
	return "$" + strconv.Quote(s)
}

func TestClusterLeaderView(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", proto), func(t *testing.T) {
			p := clusterConn(t, threeNodes(nodeA), proto)
			check := func(got, want string) {
				t.Helper()
				if got != want {
					t.Errorf("got\n%s\nwant\n%s", got, want)
				}
			}
			check(p.send("CLUSTER", "MYID"), `$"<A>"`)
			check(p.send("CLUSTER", "SLOTS"), map[int]string{2: slotsRESP2, 3: slotsRESP3}[proto])
			check(p.send("CLUSTER", "NODES"), verbatim(proto,
				"<A> 127.0.0.1:7001@17001 myself,master - 0 0 3 connected 0-16383\n"+
					"<B> 127.0.0.1:7002@17002 slave <A> 0 0 3 connected\n"+
					"<C> 127.0.0.1:7003@17003 slave,fail? <A> 0 0 3 disconnected\n"))
			check(p.send("CLUSTER", "SHARDS"), "*1["+shard(proto, "*2[:0 :16383]",
				shardNode(proto, "<A>", 7001, "master", 11, "online"),
				shardNode(proto, "<B>", 7002, "replica", 11, "online"),
				shardNode(proto, "<C>", 7003, "replica", 0, "loading"))+"]")
			check(p.send("CLUSTER", "INFO"), verbatim(proto, "cluster_state:ok\r\ncluster_slots_assigned:16384\r\n"+
				"cluster_slots_ok:16384\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:3\r\n"+
				"cluster_size:1\r\ncluster_current_epoch:3\r\ncluster_my_epoch:3\r\ncluster_stats_messages_sent:0\r\n"+
				"cluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n"))
		})
	}
}

func TestClusterFollowerView(t *testing.T) {
	p := clusterConn(t, threeNodes(nodeB), 2)
	if got := p.send("CLUSTER", "SLOTS"); got != slotsRESP2 {
		t.Errorf("CLUSTER SLOTS = %s", got)
	}
	want := verbatim(2, "<A> 127.0.0.1:7001@17001 master - 0 0 3 connected 0-16383\n"+
		"<B> 127.0.0.1:7002@17002 myself,slave <A> 0 0 3 connected\n"+
		"<C> 127.0.0.1:7003@17003 slave <A> 0 0 3 connected\n")
	if got := p.send("CLUSTER", "NODES"); got != want {
		t.Errorf("CLUSTER NODES = %s, want %s", got, want)
	}
	// A follower knows the leader has at least the commit index, and its
	// own last index; another follower's it cannot know.
	want = "*1[" + shard(2, "*2[:0 :16383]",
		shardNode(2, "<A>", 7001, "master", 10, "online"),
		shardNode(2, "<B>", 7002, "replica", 11, "online"),
		shardNode(2, "<C>", 7003, "replica", 0, "online")) + "]"
	if got := p.send("CLUSTER", "SHARDS"); got != want {
		t.Errorf("CLUSTER SHARDS = %s, want %s", got, want)
	}
}

// A node in no group yet is a master of no slots, and the cluster is
// down, as a fresh Redis Cluster node says.
func TestClusterFreshNode(t *testing.T) {
	f := &fakeCluster{self: nodeA, status: ClusterStatus{Role: "follower"}}
	p := clusterConn(t, f, 2)
	p.expect([][2]string{
		{"CLUSTER NODES", verbatim(2, "<A> 127.0.0.1:7001@17001 myself,master - 0 0 0 connected\n")},
		{"CLUSTER SLOTS", "*0[]"},
		{"CLUSTER SHARDS", "*1[" + shard(2, "*0[]", shardNode(2, "<A>", 7001, "master", 0, "online")) + "]"},
		{"CLUSTER MYID", `$"<A>"`},
	})
	info := p.send("CLUSTER", "INFO")
	for _, line := range []string{"cluster_state:fail", "cluster_slots_assigned:0", "cluster_known_nodes:1", "cluster_size:0"} {
		if !strings.Contains(info, line+`\r\n`) {
			t.Errorf("CLUSTER INFO lacks %s: %s", line, info)
		}
	}
}

func TestClusterKeySlots(t *testing.T) {
	p := clusterConn(t, threeNodes(nodeA), 2)
	p.s.shard.mu.Lock()
	for _, k := range []string{"{user1000}.following", "{user1000}.followers", "user1000", "foo"} {
		p.s.shard.dbs[0].insert(k, &Object{value: []byte("v")})
	}
	p.s.shard.mu.Unlock()
	slot := strconv.Itoa(KeySlot([]byte("user1000")))
	p.expect([][2]string{
		{"CLUSTER KEYSLOT foo", ":12182"},
		{"CLUSTER KEYSLOT {user1000}.following", ":" + slot},
		{"CLUSTER COUNTKEYSINSLOT " + slot, ":3"},
		{"CLUSTER COUNTKEYSINSLOT 12182", ":1"},
		{"CLUSTER COUNTKEYSINSLOT 0", ":0"},
		{"CLUSTER COUNTKEYSINSLOT 16384", "-ERR Invalid slot"},
		{"CLUSTER COUNTKEYSINSLOT -1", "-ERR Invalid slot"},
		{"CLUSTER COUNTKEYSINSLOT x", "-ERR value is not an integer or out of range"},
		{"CLUSTER GETKEYSINSLOT 12182 10", `*1[$"foo"]`},
		{"CLUSTER GETKEYSINSLOT 12182 0", "*0[]"},
		{"CLUSTER GETKEYSINSLOT 16384 1", "-ERR Invalid slot or number of keys"},
		{"CLUSTER GETKEYSINSLOT 1 -1", "-ERR Invalid slot or number of keys"},
		{"CLUSTER GETKEYSINSLOT 1 x", "-ERR value is not an integer or out of range"},
	})
	// COUNT bounds the reply; the keys are the slot's.
	got := p.send("CLUSTER", "GETKEYSINSLOT", slot, "2")
	if !strings.HasPrefix(got, "*2[") || strings.Contains(got, "foo") {
		t.Errorf("CLUSTER GETKEYSINSLOT %s 2 = %s", slot, got)
	}
}

func TestClusterReadonly(t *testing.T) {
	p := clusterConn(t, threeNodes(nodeB), 2)
	readonly := func() bool {
		p.s.shard.mu.Lock()
		defer p.s.shard.mu.Unlock()
		for _, c := range p.s.clients {
			return c.readonly
		}
		return false
	}
	for _, step := range []struct {
		cmd  string
		want bool
	}{{"READONLY", true}, {"READWRITE", false}, {"READONLY", true}, {"RESET", false}, {"ASKING", false}} {
		if got := p.send(step.cmd); got != "+OK" && got != "+RESET" {
			t.Fatalf("%s = %s", step.cmd, got)
		}
		if readonly() != step.want {
			t.Fatalf("after %s readonly = %v", step.cmd, !step.want)
		}
	}
}

// Membership changes run off the loop: while one waits on the group,
// other clients are served; its reply comes when the change is done.
func TestClusterMembershipChanges(t *testing.T) {
	f := &fakeCluster{self: nodeA, status: ClusterStatus{Role: "follower"}, gate: make(chan struct{}), entered: make(chan string, 16)}
	p := clusterConn(t, f, 2)
	other := connect(t, p.s)
	done := make(chan string)
	go func() { done <- p.send("CLUSTER", "BOOTSTRAP") }()
	select {
	case <-f.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("CLUSTER BOOTSTRAP did not reach the group in 10s")
	}
	if got := other.send("CLUSTER", "MYID"); got != `$"<A>"` {
		t.Fatalf("another client during BOOTSTRAP: CLUSTER MYID = %s", got)
	}
	close(f.gate)
	if got := <-done; got != "+OK" {
		t.Fatalf("CLUSTER BOOTSTRAP = %s", got)
	}
	f.set(func() { f.members = []ClusterMember{nodeA, nodeB} })
	p.expect([][2]string{
		{"CLUSTER ADDNODE " + nodeC.ID + " 127.0.0.1:7003 127.0.0.1:17003", "+OK"},
		{"CLUSTER DELNODE " + nodeB.ID, "+OK"},
		{"CLUSTER DELNODE " + nodeC.ID, "-ERR Unknown node <C>"}, // the fake's members did not change
		{"CLUSTER ADDNODE xyz 127.0.0.1:7003 127.0.0.1:17003", "-ERR Invalid node ID xyz"},
		{"CLUSTER ADDNODE " + nodeC.ID + " 127.0.0.1 127.0.0.1:17003", "-ERR Invalid node address specified: 127.0.0.1"},
		{"CLUSTER ADDNODE " + nodeC.ID + " 127.0.0.1:7003 h:0", "-ERR Invalid node address specified: h:0"},
	})
	want := []string{"bootstrap", "add <C> 127.0.0.1:7003 127.0.0.1:17003", "remove <B>"}
	var got string
	f.set(func() {
		got = strings.NewReplacer(nodeB.ID, "<B>", nodeC.ID, "<C>").Replace(strings.Join(f.calls, ","))
	})
	if got != strings.Join(want, ",") {
		t.Errorf("calls %s, want %v", got, want)
	}
	// The group's errors reach the client, with an ERR code unless they
	// carry their own.
	f.set(func() { f.err = errors.New("bootstrap only works on new clusters") })
	if got := p.send("CLUSTER", "BOOTSTRAP"); got != "-ERR bootstrap only works on new clusters" {
		t.Errorf("failed CLUSTER BOOTSTRAP = %s", got)
	}
	f.set(func() { f.err = errors.New("TRYAGAIN leadership lost while adding the node") })
	if got := p.send("CLUSTER", "ADDNODE", nodeC.ID, nodeC.Addr, nodeC.BusAddr); got != "-TRYAGAIN leadership lost while adding the node" {
		t.Errorf("failed CLUSTER ADDNODE = %s", got)
	}
	// Not inside MULTI: a reply there cannot wait for the group. (In
	// cluster mode MULTI itself is refused for now, so the flag is what
	// can be checked.)
	for _, sub := range []string{"bootstrap", "addnode", "delnode"} {
		if commandTable()["cluster"].Sub[sub].Flags&FlagNoMulti == 0 {
			t.Errorf("CLUSTER %s may run inside MULTI", sub)
		}
	}
}

// INFO in cluster mode: Redis's replication fields for the leader and a
// follower, and the Raft state under our own names.
func TestClusterInfo(t *testing.T) {
	cases := []struct {
		self ClusterMember
		want []string
	}{
		{nodeA, []string{"role:master", "connected_slaves:2",
			"slave0:ip=127.0.0.1,port=7002,state=online,offset=11,lag=0",
			"slave1:ip=127.0.0.1,port=7003,state=online,offset=0,lag=20",
			"master_repl_offset:11", "raft_state:leader"}},
		{nodeB, []string{"role:slave", "master_host:127.0.0.1", "master_port:7001", "master_link_status:up",
			"slave_repl_offset:11", "connected_slaves:0", "raft_state:follower"}},
	}
	for _, c := range cases {
		p := clusterConn(t, threeNodes(c.self), 2)
		info := p.send("INFO")
		want := append(c.want, "cluster_enabled:1", "redis_mode:cluster", "raft_term:3", "raft_leader_id:<A>",
			"raft_commit_index:10", "raft_applied_index:9", "raft_last_index:11")
		for _, line := range want {
			if !strings.Contains(info, `\r\n`+line+`\r\n`) {
				t.Errorf("INFO on %s lacks %q:\n%s", c.want[0], line, info)
			}
		}
	}
	// A follower with no leader to follow says its link is down.
	p := clusterConn(t, &fakeCluster{self: nodeA, status: ClusterStatus{Role: "candidate", Term: 4}}, 2)
	info := p.send("INFO", "replication")
	for _, line := range []string{"role:slave", "master_link_status:down", "raft_state:candidate", "raft_leader_id:"} {
		if !strings.Contains(info, `\r\n`+line+`\r\n`) {
			t.Errorf("INFO replication with no leader lacks %q:\n%s", line, info)
		}
	}
	if strings.Contains(info, "master_host") {
		t.Errorf("INFO replication with no leader names a master:\n%s", info)
	}
}

// A command answered off the loop (await) holds the client's pipeline:
// the commands sent behind it run, and answer, after it.
func TestAwaitKeepsPipelineOrder(t *testing.T) {
	f := &fakeCluster{self: nodeA, status: ClusterStatus{Role: "follower"}, gate: make(chan struct{}), entered: make(chan string, 16)}
	p := clusterConn(t, f, 2)
	p.s.sync()
	if _, err := p.conn.Write([]byte("*2\r\n$7\r\nCLUSTER\r\n$9\r\nBOOTSTRAP\r\n*2\r\n$7\r\nCLUSTER\r\n$4\r\nMYID\r\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("CLUSTER BOOTSTRAP did not reach the group in 10s")
	}
	close(f.gate)
	if first, second := render(t, p.r), render(t, p.r); first != "+OK" || second != `$"<A>"` {
		t.Fatalf("replies %s, %s; want +OK, then the ID", first, second)
	}
}

// ACL categories as Redis gives them: READONLY, READWRITE and ASKING
// change the connection, the CLUSTER container and its subcommands not.
func TestClusterACLCategories(t *testing.T) {
	table := commandTable()
	for name, want := range map[string]string{
		"readonly": "@connection @fast", "readwrite": "@connection @fast", "asking": "@connection @fast",
		"cluster": "@slow",
	} {
		if got := strings.Join(table[name].aclCategories(), " "); got != want {
			t.Errorf("%s: ACL categories %q, want %q", name, got, want)
		}
	}
	if got := strings.Join(table["cluster"].Sub["info"].aclCategories(), " "); got != "@slow" {
		t.Errorf("cluster|info: ACL categories %q, want @slow", got)
	}
}
