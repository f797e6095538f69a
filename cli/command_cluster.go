package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
	ucli "github.com/urfave/cli/v2"
)

// clusterCommand is `redstream cluster`: it makes running nodes
// (cluster-enabled yes) one Raft group and changes or checks it, as
// `redis-cli --cluster` does for Redis Cluster. It only sends commands
// (CLUSTER BOOTSTRAP, ADDNODE, DELNODE, NODES, SLOTS, INFO), so tools
// can do the same without it.
func clusterCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "cluster",
		Usage: "make running nodes (cluster-enabled yes) one replicated group, and change or check it",
		Subcommands: []*ucli.Command{
			{Name: "create", Usage: "bootstrap a group on the first node and add the others to it; with --groups, spread the slots over that many groups",
				ArgsUsage: "HOST:PORT [HOST:PORT ...]", Action: runClusterCreate,
				Flags: append(clusterFlags(), &ucli.IntFlag{Name: "groups", Value: 1,
					Usage: "Raft groups to spread the 16384 slots over, each on three of the nodes (1: every node in one group)"})},
			{Name: "add-node", Usage: "add a running node to the group EXISTING is in",
				ArgsUsage: "NEW-HOST:PORT EXISTING-HOST:PORT", Flags: clusterFlags(), Action: runClusterAddNode},
			{Name: "del-node", Usage: "remove the node with NODE-ID from the group EXISTING is in",
				ArgsUsage: "EXISTING-HOST:PORT NODE-ID", Flags: clusterFlags(), Action: runClusterDelNode},
			{Name: "move-slots", Usage: "move slots FIRST..LAST, with their keys, to group GROUP (meanwhile the old group serves the keys it still holds and answers ASK for the others)",
				ArgsUsage: "HOST:PORT FIRST LAST GROUP", Flags: clusterFlags(), Action: runClusterMoveSlots},
			{Name: "status", Usage: "show the group's members, its leader, and each member's Raft term and indexes",
				ArgsUsage: "HOST:PORT", Flags: clusterFlags(), Action: runClusterStatus},
			{Name: "check", Usage: "as status, and fail when the group has no leader or a member does not answer",
				ArgsUsage: "HOST:PORT", Flags: clusterFlags(), Action: runClusterCheck},
		},
	}
}

func clusterFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "password", Usage: "the nodes' requirepass password"},
		&ucli.DurationFlag{Name: "timeout", Value: 30 * time.Second,
			Usage: "how long to wait for a node's answer, or for a new group to elect its leader"},
	}
}

// clusterAdmin talks to the nodes for one `redstream cluster` command.
type clusterAdmin struct {
	password string
	timeout  time.Duration
	out      io.Writer
}

// clusterArgs checks that c has n arguments, the first addrs of them
// HOST:PORT, and returns them with an admin for the command.
func clusterArgs(c *ucli.Context, n, addrs int) ([]string, *clusterAdmin, error) {
	args := c.Args().Slice()
	if len(args) != n && !(n < 0 && len(args) >= -n) {
		return nil, nil, fmt.Errorf("cluster %s takes %s", c.Command.Name, c.Command.ArgsUsage)
	}
	if addrs < 0 {
		addrs = len(args)
	}
	for _, a := range args[:addrs] {
		if err := checkHostPort(a); err != nil {
			return nil, nil, err
		}
	}
	redis.SetLogger(quietLog{}) // its errors reach the user through ours
	return args, &clusterAdmin{password: c.String("password"), timeout: c.Duration("timeout"), out: c.App.Writer}, nil
}

// quietLog drops go-redis's own log lines (a failed dial, logged before
// the error that says the same is returned).
type quietLog struct{}

func (quietLog) Printf(context.Context, string, ...any) {}

func checkHostPort(addr string) error {
	_, p, err := net.SplitHostPort(addr)
	if port, perr := strconv.Atoi(p); err != nil || perr != nil || port <= 0 || port > 65535 {
		return fmt.Errorf("%q is not a node address (HOST:PORT)", addr)
	}
	return nil
}

func (a *clusterAdmin) dial(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, Password: a.password, Protocol: 2, DisableIdentity: true,
		DialTimeout: a.timeout, ReadTimeout: a.timeout, WriteTimeout: a.timeout, MaxRetries: -1,
	})
}

// do sends one command to addr and returns its reply.
func (a *clusterAdmin) do(addr string, args ...any) (any, error) {
	rc := a.dial(addr)
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	v, err := rc.Do(ctx, args...).Result()
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", addr, strings.TrimSpace(fmt.Sprintln(args...)), err)
	}
	return v, nil
}

func (a *clusterAdmin) text(addr string, args ...any) (string, error) {
	v, err := a.do(addr, args...)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: %s answered %T, not text", addr, strings.TrimSpace(fmt.Sprintln(args...)), v)
	}
	return s, nil
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, busAddr string
	flags             []string
	master            string // the leader's ID, for a replica
	slots             []string
}

func (n clusterNode) has(flag string) bool {
	for _, f := range n.flags {
		if f == flag {
			return true
		}
	}
	return false
}

// parseClusterNodes reads CLUSTER NODES: <id> <ip:port@cport[,hostname]>
// <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link-state>
// <slot> ...
func parseClusterNodes(text string) ([]clusterNode, error) {
	var nodes []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES line %q has %d fields, want at least 8", line, len(f))
		}
		addr, bus, ok := strings.Cut(f[1], "@")
		bus, _, _ = strings.Cut(bus, ",")
		i := strings.LastIndexByte(addr, ':')
		if !ok || i < 0 {
			return nil, fmt.Errorf("CLUSTER NODES line %q: no ip:port@cport", line)
		}
		host := addr[:i]
		nodes = append(nodes, clusterNode{
			id: f[0], addr: net.JoinHostPort(host, addr[i+1:]), busAddr: net.JoinHostPort(host, bus),
			flags: strings.Split(f[2], ","), master: f[3], slots: f[8:],
		})
	}
	return nodes, nil
}

// leaderOf returns the node that serves slots: the group's leader.
func leaderOf(nodes []clusterNode) (clusterNode, bool) {
	for _, n := range nodes {
		if n.has("master") && len(n.slots) > 0 {
			return n, true
		}
	}
	return clusterNode{}, false
}

func (a *clusterAdmin) nodes(addr string) ([]clusterNode, error) {
	text, err := a.text(addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	return parseClusterNodes(text)
}

// fresh returns the node at addr, which must be in no group yet. A node
// that is still starting (refuses connections, answers LOADING) is
// waited for, so a script can start nodes and create the group at once.
func (a *clusterAdmin) fresh(addr string) (clusterNode, error) {
	deadline := time.Now().Add(a.timeout)
	nodes, err := a.nodes(addr)
	for err != nil && starting(err) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // nothing notifies a start
		nodes, err = a.nodes(addr)
	}
	if err != nil {
		return clusterNode{}, err
	}
	if len(nodes) != 1 || !nodes[0].has("myself") || len(nodes[0].slots) > 0 {
		return clusterNode{}, fmt.Errorf("%s is already in a group (CLUSTER NODES lists %d nodes); remove it from that group first, or start it on an empty dir", addr, len(nodes))
	}
	return nodes[0], nil
}

// starting reports an error a node gives while it starts.
func starting(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" || strings.Contains(err.Error(), "LOADING")
}

// leader finds the leader of the group existing is in.
func (a *clusterAdmin) leader(existing string) (clusterNode, error) {
	nodes, err := a.nodes(existing)
	if err != nil {
		return clusterNode{}, err
	}
	l, ok := leaderOf(nodes)
	if !ok {
		return clusterNode{}, fmt.Errorf("%s knows no leader: its group is electing one, or has lost its majority", existing)
	}
	return l, nil
}

// waitLeading waits until the node at addr leads its group.
func (a *clusterAdmin) waitLeading(addr string) error {
	deadline := time.Now().Add(a.timeout)
	for {
		info, err := a.text(addr, "INFO", "replication")
		if err == nil && infoField(info, "role") == "master" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not become the leader within %s (INFO replication role:%s, err %v)", addr, a.timeout, infoField(info, "role"), err)
		}
		time.Sleep(50 * time.Millisecond) // nothing notifies an election's end
	}
}

// infoField is one field of an INFO reply, "" when absent.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// addNode makes n a voter of the group the nodes at members are in. A
// new voter is needed for the next commit at once (one voter becoming
// two), so one that answers slowly can cost the leader its lease: ADDNODE
// then fails with "leadership lost", the change may or may not have
// taken effect, and the group elects a leader, maybe another one. So
// addNode sends ADDNODE to whichever node leads at the time, again until
// one answers OK (committed) or the timeout passes; adding a voter that
// is one already changes nothing. An error that says the request itself
// is wrong ends it at once.
func (a *clusterAdmin) addNode(members []string, n clusterNode) error {
	deadline := time.Now().Add(a.timeout)
	said := ""
	for {
		leader, err := a.leaderAmong(members)
		if err == nil {
			_, err = a.do(leader.addr, "CLUSTER", "ADDNODE", n.id, n.addr, n.busAddr)
			if err == nil {
				fmt.Fprintf(a.out, "added %s (%s, bus %s)\n", n.id, n.addr, n.busAddr)
				return nil
			}
			if !transient(err) {
				return err
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("adding %s: %w (still failing after %s)", n.addr, err, a.timeout)
		}
		if err.Error() != said { // once per reason, not ten lines a second
			said = err.Error()
			fmt.Fprintf(a.out, "adding %s: %v; asking the leader again\n", n.addr, err)
		}
		time.Sleep(100 * time.Millisecond) // nothing notifies an election's end
	}
}

// leaderAmong finds the group's leader from the first of addrs that
// knows one.
func (a *clusterAdmin) leaderAmong(addrs []string) (clusterNode, error) {
	var err error
	for _, addr := range addrs {
		var l clusterNode
		if l, err = a.leader(addr); err == nil {
			return l, nil
		}
	}
	return clusterNode{}, err
}

// transient reports an error that a group electing a leader gives, after
// which the same request may succeed.
func transient(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) || errors.Is(err, io.EOF) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"leadership lost", "not the leader", "knows no leader", "leadership transfer",
		"MOVED", "CLUSTERDOWN", "TRYAGAIN", "UNKNOWN", "LOADING", "timed out"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func runClusterCreate(c *ucli.Context) error {
	addrs, a, err := clusterArgs(c, -1, -1)
	if err != nil {
		return err
	}
	var nodes []clusterNode
	seen := map[string]string{}
	for _, addr := range addrs {
		n, err := a.fresh(addr)
		if err != nil {
			return err
		}
		if other, dup := seen[n.id]; dup {
			return fmt.Errorf("%s and %s are the same node (%s)", other, addr, n.id)
		}
		seen[n.id] = addr
		nodes = append(nodes, n)
	}
	if _, err := a.do(addrs[0], "CLUSTER", "BOOTSTRAP"); err != nil {
		return err
	}
	fmt.Fprintf(a.out, "bootstrapped %s (%s)\n", nodes[0].id, addrs[0])
	if err := a.waitLeading(addrs[0]); err != nil {
		return err
	}
	for i, n := range nodes[1:] {
		if err := a.addNode(addrs[:i+1], n); err != nil {
			return err
		}
	}
	if groups := c.Int("groups"); groups > 1 {
		leader, err := a.leaderAmong(addrs)
		if err != nil {
			return err
		}
		if _, err := a.do(leader.addr, "CLUSTER", "CREATEGROUPS", groups); err != nil {
			return err
		}
		if err := a.waitServed(addrs, groups); err != nil {
			return err
		}
		fmt.Fprintf(a.out, "spread the slots over %d groups\n", groups)
	}
	_, err = a.status(addrs[0])
	return err
}

// waitServed waits until every node's CLUSTER SLOTS shows the slots in
// (at least) groups ranges, each with a master: every group has elected
// its leader and every node has the cluster map.
func (a *clusterAdmin) waitServed(addrs []string, groups int) error {
	deadline := time.Now().Add(a.timeout)
	for _, addr := range addrs {
		for {
			rows, err := a.slots(addr)
			if err == nil && len(rows) >= groups {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s does not serve %d groups within %s (%d slot ranges with a master, err %v)", addr, groups, a.timeout, len(rows), err)
			}
			time.Sleep(50 * time.Millisecond) // nothing notifies a group's first election
		}
	}
	return nil
}

// slots are the ranges of CLUSTER SLOTS at addr that have a master.
func (a *clusterAdmin) slots(addr string) ([]redis.ClusterSlot, error) {
	rc := a.dial(addr)
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	rows, err := rc.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(rows, func(r redis.ClusterSlot) bool { return len(r.Nodes) == 0 || r.Nodes[0].Addr == "" }), nil
}

func runClusterAddNode(c *ucli.Context) error {
	args, a, err := clusterArgs(c, 2, 2)
	if err != nil {
		return err
	}
	n, err := a.fresh(args[0])
	if err != nil {
		return err
	}
	return a.addNode(args[1:], n)
}

func runClusterDelNode(c *ucli.Context) error {
	args, a, err := clusterArgs(c, 2, 1)
	if err != nil {
		return err
	}
	leader, err := a.leader(args[0])
	if err != nil {
		return err
	}
	if _, err := a.do(leader.addr, "CLUSTER", "DELNODE", args[1]); err != nil {
		return err
	}
	fmt.Fprintf(a.out, "removed %s\n", args[1])
	return nil
}

func runClusterMoveSlots(c *ucli.Context) error {
	args, a, err := clusterArgs(c, 4, 1)
	if err != nil {
		return err
	}
	if _, err := a.do(args[0], "CLUSTER", "MOVESLOTS", args[1], args[2], args[3]); err != nil {
		return err
	}
	fmt.Fprintf(a.out, "moved slots %s-%s to group %s\n", args[1], args[2], args[3])
	_, err = a.status(args[0])
	return err
}

func runClusterStatus(c *ucli.Context) error {
	args, a, err := clusterArgs(c, 1, 1)
	if err != nil {
		return err
	}
	_, err = a.status(args[0])
	return err
}

func runClusterCheck(c *ucli.Context) error {
	args, a, err := clusterArgs(c, 1, 1)
	if err != nil {
		return err
	}
	st, err := a.status(args[0])
	if err != nil {
		return err
	}
	return st.problem()
}

// groupStatus is the group as one node sees it, and each member as it
// answers for itself.
type groupStatus struct {
	leader  *clusterNode
	members []memberStatus
	// The slot map as addr serves it: each range's group leader (master)
	// and its replicas (its other voters that lead no group: a master is
	// nobody's replica); ranges of a group without a leader are left out.
	slots    []redis.ClusterSlot
	slotsErr error
}

type memberStatus struct {
	node clusterNode
	info string // its INFO replication
	err  error  // why it did not answer
}

// problem is what `cluster check` fails for: no leader, or a member that
// does not answer.
func (st groupStatus) problem() error {
	var down []string
	for _, m := range st.members {
		if m.err != nil {
			down = append(down, m.node.addr)
		}
	}
	covered := 0
	for _, r := range st.slots {
		covered += int(r.End-r.Start) + 1
	}
	switch {
	case st.leader == nil:
		return errors.New("the group has no leader")
	case st.slotsErr == nil && covered < 16384:
		return fmt.Errorf("%d of 16384 slots have no leader", 16384-covered)
	case len(down) > 0:
		return fmt.Errorf("%d of %d members do not answer: %s", len(down), len(st.members), strings.Join(down, ", "))
	}
	return nil
}

// status asks addr for the group's members, asks each member for its
// Raft state, and prints both.
func (a *clusterAdmin) status(addr string) (groupStatus, error) {
	nodes, err := a.nodes(addr)
	if err != nil {
		return groupStatus{}, err
	}
	var st groupStatus
	if l, ok := leaderOf(nodes); ok {
		st.leader = &l
	}
	for _, n := range nodes {
		info, err := a.text(n.addr, "INFO", "replication")
		st.members = append(st.members, memberStatus{node: n, info: info, err: err})
	}
	st.slots, st.slotsErr = a.slots(addr)
	st.print(a.out)
	return st, nil
}

func (st groupStatus) print(out io.Writer) {
	if st.leader != nil {
		fmt.Fprintf(out, "leader: %s (%s)\n", st.leader.id, st.leader.addr)
	} else {
		fmt.Fprintln(out, "leader: none")
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tADDRESS\tBUS\tSTATE\tTERM\tCOMMIT\tAPPLIED\tLAST")
	for _, m := range st.members {
		n := m.node
		if m.err != nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\tunreachable: %v\t\t\t\t\n", n.id, n.addr, n.busAddr, m.err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.id, n.addr, n.busAddr,
			infoField(m.info, "raft_state"), infoField(m.info, "raft_term"), infoField(m.info, "raft_commit_index"),
			infoField(m.info, "raft_applied_index"), infoField(m.info, "raft_last_index"))
	}
	tw.Flush()
	if st.slotsErr != nil {
		fmt.Fprintf(out, "slots: %v\n", st.slotsErr)
		return
	}
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SLOTS\tMASTER (GROUP LEADER)\tREPLICAS")
	covered := 0
	for _, r := range st.slots {
		var replicas []string
		for _, n := range r.Nodes[1:] {
			replicas = append(replicas, n.Addr)
		}
		covered += int(r.End-r.Start) + 1
		fmt.Fprintf(tw, "%d-%d\t%s\t%s\n", r.Start, r.End, r.Nodes[0].Addr, strings.Join(replicas, " "))
	}
	tw.Flush()
	if covered < 16384 {
		fmt.Fprintf(out, "%d of 16384 slots have no leader\n", 16384-covered)
	}
}
