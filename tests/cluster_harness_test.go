package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The cluster harness runs a three-node Raft group as real processes on
// loopback, each with its own data directory and ports, and does to them
// what faults do: kill -9, SIGSTOP/SIGCONT, restart.

// clusterNodeTimeout is cluster-node-timeout for every test group (ms):
// a follower that has not heard from its leader this long (plus Raft's
// random extra, up to as much again) starts an election.
const clusterNodeTimeout = 1000

// clusterBound bounds every wait for the group to settle. It is a bound,
// not a timing: elections take a few seconds, and a slow machine only
// makes the wait longer.
const clusterBound = 60 * time.Second

// ClusterNode is one node of a test group. Its directory and ports stay
// the same across restarts, as the group's configuration records them.
type ClusterNode struct {
	Name    string
	Dir     string
	Port    int // clients
	BusPort int // cluster-port: Raft traffic
	ID      string
	User    int     // the user it runs as; 0: the test's
	proc    *Server // nil while down
	paused  bool    // SIGSTOPped
}

// Addr is where clients reach the node.
func (n *ClusterNode) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.Port) }

// BusAddr is where the other nodes reach it.
func (n *ClusterNode) BusAddr() string { return "127.0.0.1:" + strconv.Itoa(n.BusPort) }

// Output is what the node's current process has logged ("" while down).
func (n *ClusterNode) Output() string {
	if n.proc == nil {
		return ""
	}
	return n.proc.Output()
}

func (n *ClusterNode) running() bool { return n.proc != nil && !n.paused }

// TestCluster is a three-node group of redstream processes.
type TestCluster struct {
	t     *testing.T
	Nodes []*ClusterNode
	args  []string // directives every node starts with
	// ownUsers runs each node as a user of its own (root only), so
	// iptables can match a node's traffic (partition tests).
	ownUsers bool
	// groups is how many Raft groups the slots are spread over (0: the
	// one group of StartCluster).
	groups int
}

// StartCluster starts three cluster-enabled nodes with args and makes
// them one group: the first bootstraps it and adds the others. The test
// is skipped when the binary has no CLUSTER BOOTSTRAP.
func StartCluster(t *testing.T, args ...string) *TestCluster {
	t.Helper()
	c := &TestCluster{t: t, args: args}
	c.start()
	c.logOnFailure()
	return c
}

// StartClusterOwnUsers is StartCluster with each node running as a user
// of its own (User), which iptables' owner match tells apart. Root only.
func StartClusterOwnUsers(t *testing.T, args ...string) *TestCluster {
	t.Helper()
	c := &TestCluster{t: t, args: args, ownUsers: true}
	// The other users must reach the binary.
	if err := os.Chmod(filepath.Dir(binary), 0o755); err != nil {
		t.Fatal(err)
	}
	c.start()
	return c
}

func (c *TestCluster) start() {
	c.t.Helper()
	c.startNodes()
	c.bootstrap()
}

// logOnFailure has a failed test print what each node logged that says
// why a write's outcome could be unknown: elections, leadership changes,
// slow disks. Registered after the nodes' own cleanups, it runs before
// they are stopped.
func (c *TestCluster) logOnFailure() {
	c.t.Cleanup(func() {
		if !c.t.Failed() {
			return
		}
		for _, n := range c.Nodes {
			var b strings.Builder
			for _, line := range strings.SplitAfter(n.Output(), "\n") {
				if notable(line) {
					b.WriteString(line)
				}
			}
			c.t.Logf("%s's notable log lines:\n%s", n.Name, tail(b.String(), 60))
		}
	})
}

// notable says whether a node's log line tells of Raft's state changing.
func notable(line string) bool {
	for _, s := range []string{"election", "leader", "Leader", "term", "transfer", "heartbeat", "timeout", "WARN", "ERROR", "slow"} {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// startNodes starts three fresh cluster-enabled nodes, in no group yet.
func (c *TestCluster) startNodes() {
	c.t.Helper()
	for i := range 3 {
		n := &ClusterNode{Name: "n" + strconv.Itoa(i), Dir: c.t.TempDir(), Port: freePort(c.t), BusPort: freePort(c.t)}
		if c.ownUsers {
			n.User = firstNodeUser + i
			c.giveDir(n)
		}
		c.Nodes = append(c.Nodes, n)
		c.Start(n)
	}
}

// firstNodeUser is the user ID of the first node started as a user of
// its own; the others follow. Nothing else on the machine runs as them.
const firstNodeUser = 64101

// giveDir makes n's directory its user's.
func (c *TestCluster) giveDir(n *ClusterNode) {
	c.t.Helper()
	if err := os.Chown(n.Dir, n.User, n.User); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(n.Dir), 0o755); err != nil { // t.TempDir's parent is the test's, 0700
		c.t.Fatal(err)
	}
}

// Start starts n's process on its directory and ports.
func (c *TestCluster) Start(n *ClusterNode) {
	c.t.Helper()
	if n.proc != nil {
		c.t.Fatalf("%s is already running", n.Name)
	}
	args := []string{"server", "--port", strconv.Itoa(n.Port), "--dir", n.Dir,
		"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(n.BusPort),
		"--cluster-node-timeout", strconv.Itoa(clusterNodeTimeout)}
	var attr *syscall.SysProcAttr
	if n.User != 0 {
		attr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(n.User), Gid: uint32(n.User), NoSetGroups: true}}
	}
	s := startProcessAs(c.t, n.Dir, append(args, c.args...), attr)
	// Cleanups run last-registered first: this one, before s.Stop, lets a
	// stopped process take its SIGTERM even when the test failed mid-pause.
	c.t.Cleanup(func() { _ = s.cmd.Process.Signal(syscall.SIGCONT) })
	n.proc, n.paused = s, false
}

// Kill stops n with SIGKILL, as a crash or power cut would.
func (c *TestCluster) Kill(n *ClusterNode) {
	n.proc.Kill()
	n.proc, n.paused = nil, false
}

// Restart kills n and starts it again on the same directory and ports.
func (c *TestCluster) Restart(n *ClusterNode) {
	c.t.Helper()
	c.Kill(n)
	c.Start(n)
}

// Pause stops n with SIGSTOP: it keeps its sockets and state but does
// nothing, as a node stalled by its machine would.
func (c *TestCluster) Pause(n *ClusterNode) {
	c.signal(n, syscall.SIGSTOP)
	n.paused = true
}

// Resume continues a paused node with SIGCONT.
func (c *TestCluster) Resume(n *ClusterNode) {
	c.signal(n, syscall.SIGCONT)
	n.paused = false
}

func (c *TestCluster) signal(n *ClusterNode, sig syscall.Signal) {
	c.t.Helper()
	if err := n.proc.cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("%v to %s: %v", sig, n.Name, err)
	}
}

// Addrs are the client addresses of every node, up or down.
func (c *TestCluster) Addrs() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Addr())
	}
	return out
}

// Others are the nodes other than n.
func (c *TestCluster) Others(n *ClusterNode) []*ClusterNode {
	var out []*ClusterNode
	for _, m := range c.Nodes {
		if m != n {
			out = append(out, m)
		}
	}
	return out
}

// ClusterClient is a go-redis cluster client seeded with every node; it
// finds the leader through CLUSTER SLOTS and follows MOVED by itself.
func (c *TestCluster) ClusterClient(opts ...func(*redis.ClusterOptions)) *redis.ClusterClient {
	o := &redis.ClusterOptions{Addrs: c.Addrs(), ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	for _, f := range opts {
		f(o)
	}
	cc := redis.NewClusterClient(o)
	c.t.Cleanup(func() { cc.Close() })
	return cc
}

// readOnlyClient is a go-redis client of n alone that sends READONLY
// first, so a follower serves its (possibly stale) reads.
func readOnlyClient(t testing.TB, n *ClusterNode) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1,
		OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }})
	t.Cleanup(func() { c.Close() })
	return c
}

// bootstrap makes the three fresh nodes one group led by the first.
func (c *TestCluster) bootstrap() {
	c.t.Helper()
	first := c.Nodes[0]
	r := c.must(first, "CLUSTER", "BOOTSTRAP")
	if r.Type == '-' && strings.Contains(r.Str, "unknown") {
		c.t.Skipf("this build has no CLUSTER BOOTSTRAP (%s): the CLUSTER commands of issue 13 are not merged yet", r.Str)
	}
	c.expectOK(first, r, "CLUSTER BOOTSTRAP")
	for _, n := range c.Nodes {
		id := c.must(n, "CLUSTER", "MYID")
		if id.Type == '-' || len(id.Str) != 40 {
			c.t.Fatalf("CLUSTER MYID on %s: %s", n.Name, id)
		}
		n.ID = id.Str
	}
	for _, n := range c.Nodes[1:] {
		c.expectOK(first, c.must(first, "CLUSTER", "ADDNODE", n.ID, n.Addr(), n.BusAddr()), "CLUSTER ADDNODE "+n.Name)
	}
	c.WaitSettled()
}

func (c *TestCluster) expectOK(n *ClusterNode, r Reply, what string) {
	c.t.Helper()
	if r.Type != '+' || r.Str != "OK" {
		c.t.Fatalf("%s on %s: %s\n%s", what, n.Name, r, c.describe())
	}
}

// must sends one command to a running node; a node that does not answer
// fails the test.
func (c *TestCluster) must(n *ClusterNode, args ...string) Reply {
	c.t.Helper()
	r, err := ask(n, args...)
	if err != nil {
		c.t.Fatalf("%s to %s: %v\n%s", strings.Join(args, " "), n.Name, err, c.describe())
	}
	return r
}

// ask sends one command to n on a connection of its own.
func ask(n *ClusterNode, args ...string) (Reply, error) {
	q, err := dialQuiet(n.Addr())
	if err != nil {
		return Reply{}, err
	}
	defer q.Conn.Close()
	return q.do(args...)
}

// WaitSettled waits until every running node names the same leader in
// CLUSTER SLOTS, that leader is running, and it serves a read (which it
// does only once a majority confirms it leads), and returns it.
func (c *TestCluster) WaitSettled() *ClusterNode {
	c.t.Helper()
	return c.WaitSettledAmong(c.Nodes)
}

// WaitSettledAmong is WaitSettled for the running nodes among nodes: the
// side of a partition.
func (c *TestCluster) WaitSettledAmong(nodes []*ClusterNode) *ClusterNode {
	c.t.Helper()
	deadline := time.Now().Add(clusterBound)
	for {
		if leader := c.settledLeader(nodes); leader != nil {
			return leader
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the running nodes did not agree on a serving leader within %v\n%s", clusterBound, c.describe())
		}
		time.Sleep(50 * time.Millisecond) // polling the group: there is nothing to wait on
	}
}

func (c *TestCluster) settledLeader(nodes []*ClusterNode) *ClusterNode {
	var leader *ClusterNode
	for _, n := range nodes {
		if !n.running() {
			continue
		}
		m := c.byPort(slotsMaster(n))
		if m == nil || !m.running() || !slices.Contains(nodes, m) || (leader != nil && m != leader) {
			return nil
		}
		leader = m
	}
	if leader == nil {
		return nil
	}
	r, err := ask(leader, "EXISTS", "cluster-harness-probe")
	if err != nil || r.Type != ':' {
		return nil
	}
	return leader
}

// SetOnLeader sets key to value on the leader, trying again (a SET twice
// is a SET once) until it is acknowledged: leadership may move meanwhile.
func (c *TestCluster) SetOnLeader(key, value string) {
	c.t.Helper()
	c.SetOnLeaderAmong(c.Nodes, key, value)
}

// SetOnLeaderAmong is SetOnLeader on the leader among nodes.
func (c *TestCluster) SetOnLeaderAmong(nodes []*ClusterNode, key, value string) {
	c.t.Helper()
	deadline := time.Now().Add(clusterBound)
	for {
		r, err := ask(c.WaitSettledAmong(nodes), "SET", key, value)
		if err == nil && r.Type == '+' {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("SET %s: not acknowledged within %v: %v %s\n%s", key, clusterBound, err, r, c.describe())
		}
	}
}

// slotsMaster is the port of the master CLUSTER SLOTS on n names for
// slot 0, or 0 when it names none.
func slotsMaster(n *ClusterNode) int {
	r, err := ask(n, "CLUSTER", "SLOTS")
	if err != nil || r.Type != '*' || len(r.Elems) == 0 {
		return 0
	}
	rng := r.Elems[0].Elems
	if len(rng) < 3 || len(rng[2].Elems) < 2 {
		return 0
	}
	return int(rng[2].Elems[1].Int)
}

func (c *TestCluster) byPort(port int) *ClusterNode {
	for _, n := range c.Nodes {
		if n.Port == port {
			return n
		}
	}
	return nil
}

// describe is the group's state for a failure message: each node's
// state, its view of the group, and the tail of its log.
func (c *TestCluster) describe() string {
	var b strings.Builder
	for _, n := range c.Nodes {
		state := "running"
		switch {
		case n.proc == nil:
			state = "down"
		case n.paused:
			state = "paused"
		}
		fmt.Fprintf(&b, "== %s %s (port %d, bus %d, id %s)\n", n.Name, state, n.Port, n.BusPort, n.ID)
		if n.running() {
			if r, err := ask(n, "CLUSTER", "NODES"); err == nil {
				b.WriteString(r.Str)
			}
		}
		b.WriteString(tail(n.Output(), 15))
	}
	return b.String()
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

// StartPartitionedCluster starts three cluster-enabled nodes and makes
// them one cluster whose slots are spread over groups Raft groups, the
// way a user does: `redstream cluster create --groups N`. It returns once
// every group is led by its preferred node (WaitGroupsBalanced).
func StartPartitionedCluster(t *testing.T, groups int, args ...string) *TestCluster {
	t.Helper()
	c := &TestCluster{t: t, args: args, groups: groups}
	c.startNodes()
	ctx, cancel := context.WithTimeout(context.Background(), 2*clusterBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"cluster", "create", "--groups", strconv.Itoa(groups),
		"--timeout", clusterBound.String()}, c.Addrs()...)...)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("redstream cluster create --groups %d: %v\n%s\n%s", groups, err, out, c.describe())
	}
	for _, n := range c.Nodes {
		id := c.must(n, "CLUSTER", "MYID")
		if id.Type == '-' || len(id.Str) != 40 {
			c.t.Fatalf("CLUSTER MYID on %s: %s", n.Name, id)
		}
		n.ID = id.Str
	}
	c.logOnFailure()
	c.WaitGroupsBalanced()
	return c
}

// GroupSlots are the first and last slot of group g (1-based) of a
// cluster partitioned into groups.
func GroupSlots(g, groups int) (first, last int) {
	return (g - 1) * 16384 / groups, g*16384/groups - 1
}

// slotRow is one row of CLUSTER SLOTS: a range and its master's port.
type slotRow struct{ first, last, port int }

// slotRows are n's CLUSTER SLOTS rows in slot order (port 0: no master).
func slotRows(n *ClusterNode) ([]slotRow, error) {
	r, err := ask(n, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, err
	}
	if r.Type != '*' {
		return nil, fmt.Errorf("CLUSTER SLOTS on %s: %s", n.Name, r)
	}
	var rows []slotRow
	for _, e := range r.Elems {
		if len(e.Elems) < 2 {
			return nil, fmt.Errorf("CLUSTER SLOTS row on %s: %s", n.Name, e)
		}
		row := slotRow{first: int(e.Elems[0].Int), last: int(e.Elems[1].Int)}
		if len(e.Elems) > 2 && len(e.Elems[2].Elems) >= 2 {
			row.port = int(e.Elems[2].Elems[1].Int)
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b slotRow) int { return a.first - b.first })
	return rows, nil
}

// WaitGroupsSettled waits until every running node's CLUSTER SLOTS has
// one row per group, with the group's slots, and every node names the
// same running master for each; and each master serves a read of its
// group's slots. It returns the leaders, by group (index 0: group 1).
func (c *TestCluster) WaitGroupsSettled() []*ClusterNode {
	c.t.Helper()
	return c.waitGroups(false)
}

// WaitGroupsBalanced is WaitGroupsSettled until, besides, no node leads
// two groups while a running node leads none: the balancer has handed
// each group to its preferred node (one per node with three groups).
func (c *TestCluster) WaitGroupsBalanced() []*ClusterNode {
	c.t.Helper()
	return c.waitGroups(true)
}

func (c *TestCluster) waitGroups(balanced bool) []*ClusterNode {
	c.t.Helper()
	deadline := time.Now().Add(clusterBound)
	var why string
	for {
		var leaders []*ClusterNode
		leaders, why = c.groupLeaders(balanced)
		if leaders != nil {
			return leaders
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the %d groups did not settle (balanced: %v) within %v: %s\n%s", c.groups, balanced, clusterBound, why, c.describe())
		}
		time.Sleep(50 * time.Millisecond) // polling the nodes: nothing notifies an election or a handover
	}
}

// groupLeaders are the groups' leaders as waitGroups wants them, or nil
// and why not.
func (c *TestCluster) groupLeaders(balanced bool) ([]*ClusterNode, string) {
	leaders := make([]*ClusterNode, c.groups)
	running := 0
	for _, n := range c.Nodes {
		if !n.running() {
			continue
		}
		running++
		rows, err := slotRows(n)
		if err != nil {
			return nil, err.Error()
		}
		if len(rows) != c.groups {
			return nil, fmt.Sprintf("%s's CLUSTER SLOTS has %d rows: %v", n.Name, len(rows), rows)
		}
		for g, row := range rows {
			first, last := GroupSlots(g+1, c.groups)
			m := c.byPort(row.port)
			switch {
			case row.first != first || row.last != last:
				return nil, fmt.Sprintf("%s's CLUSTER SLOTS row %d is %d-%d, want %d-%d", n.Name, g, row.first, row.last, first, last)
			case m == nil || !m.running():
				return nil, fmt.Sprintf("%s names port %d master of group %d: not a running node", n.Name, row.port, g+1)
			case leaders[g] != nil && leaders[g] != m:
				return nil, fmt.Sprintf("the nodes name %s and %s master of group %d", leaders[g].Name, m.Name, g+1)
			}
			leaders[g] = m
		}
	}
	if running == 0 {
		return nil, "no node is running"
	}
	for g, m := range leaders {
		key := KeyInGroup("cluster-harness-probe", g+1, c.groups)
		if r, err := ask(m, "EXISTS", key); err != nil || r.Type != ':' {
			return nil, fmt.Sprintf("%s, master of group %d, answers EXISTS %s with %s %v", m.Name, g+1, key, r, err)
		}
	}
	if balanced {
		leading := map[*ClusterNode]bool{}
		for _, m := range leaders {
			leading[m] = true
		}
		if len(leading) < min(running, c.groups) {
			return nil, fmt.Sprintf("not balanced: %s", leaderNames(leaders))
		}
		// Balanced is also where leader balancing leaves the groups: each
		// led by its preferred leader when that one runs, so no hand-over
		// follows the wait.
		for g, m := range leaders {
			preferred, err := c.preferredLeader(m, g+1)
			if err != nil {
				return nil, err.Error()
			}
			if p := c.byID(preferred); p != m && p != nil && p.running() {
				return nil, fmt.Sprintf("group %d is led by %s, its preferred leader is %s", g+1, m.Name, p.Name)
			}
		}
	}
	return leaders, ""
}

// preferredLeader is the ID of group g's preferred leader as n's INFO
// replication names it.
func (c *TestCluster) preferredLeader(n *ClusterNode, g int) (string, error) {
	r, err := ask(n, "INFO", "replication")
	if err != nil {
		return "", err
	}
	prefix := fmt.Sprintf("raft_group%d:", g)
	for _, line := range strings.Split(r.Str, "\r\n") {
		if fields, ok := strings.CutPrefix(line, prefix); ok {
			for _, f := range strings.Split(fields, ",") {
				if id, ok := strings.CutPrefix(f, "preferred_leader_id="); ok {
					return id, nil
				}
			}
		}
	}
	return "", fmt.Errorf("%s's INFO replication names no preferred leader of group %d:\n%s", n.Name, g, r.Str)
}

// byID is the node with that ID, or nil.
func (c *TestCluster) byID(id string) *ClusterNode {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

func leaderNames(leaders []*ClusterNode) string {
	var names []string
	for g, m := range leaders {
		names = append(names, fmt.Sprintf("group %d: %s", g+1, m.Name))
	}
	return strings.Join(names, ", ")
}

// KeySlot is the Redis Cluster hash slot of key: CRC16 (XMODEM) of its
// hash tag, or of the whole key when it has none, modulo 16384.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// GroupOfSlot is the group (1-based) of a cluster partitioned into
// groups that owns slot.
func GroupOfSlot(slot, groups int) int {
	for g := 1; g <= groups; g++ {
		if _, last := GroupSlots(g, groups); slot <= last {
			return g
		}
	}
	return groups
}

// KeyInGroup is the first of prefix:0, prefix:1, ... whose slot is in
// group g.
func KeyInGroup(prefix string, g, groups int) string {
	for i := 0; ; i++ {
		key := prefix + ":" + strconv.Itoa(i)
		if GroupOfSlot(KeySlot(key), groups) == g {
			return key
		}
	}
}
