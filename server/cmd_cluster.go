package server

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redstream/redstream/resp"
)

// The Redis Cluster protocol over the node's Raft groups: each group's
// leader is the master of the group's slots, its other voters that lead
// no group the replicas (cluster_topology.go), so cluster-aware clients find the
// leaders by themselves. With one group its leader is the master of all
// 16384 slots. BOOTSTRAP, ADDNODE and DELNODE are redstream's: the
// membership changes `redstream cluster` makes, on the first group. Without cluster-enabled every command here answers Redis's
// errClusterDisabled, as Redis does.
var clusterSpecs = []spec{
	{name: "cluster", arity: -2, group: "cluster", since: "3.0.0", summary: "A container for Redis Cluster commands."},
	{name: "cluster|info", arity: 2, flags: "stale", group: "cluster", since: "3.0.0",
		summary: "Returns information about the state of a node.", run: clusterOnly(clusterInfoCommand)},
	{name: "cluster|myid", arity: 2, flags: "stale", group: "cluster", since: "3.0.0",
		summary: "Returns the ID of a node.", run: clusterOnly(clusterMyIDCommand)},
	{name: "cluster|slots", arity: 2, flags: "loading stale", group: "cluster", since: "3.0.0",
		summary: "Returns the mapping of cluster slots to nodes.", run: clusterOnly(clusterSlotsCommand)},
	{name: "cluster|shards", arity: 2, flags: "loading stale", group: "cluster", since: "7.0.0",
		summary: "Returns the mapping of cluster slots to shards.", run: clusterOnly(clusterShardsCommand)},
	{name: "cluster|nodes", arity: 2, flags: "stale", group: "cluster", since: "3.0.0",
		summary: "Returns the cluster configuration for a node.", run: clusterOnly(clusterNodesCommand)},
	{name: "cluster|keyslot", arity: 3, flags: "stale", group: "cluster", since: "3.0.0",
		syntax: "key", summary: "Returns the hash slot for a key.", run: clusterOnly(clusterKeyslotCommand)},
	{name: "cluster|countkeysinslot", arity: 3, flags: "stale", group: "cluster", since: "3.0.0",
		syntax: "slot", summary: "Returns the number of keys in a hash slot.", run: clusterOnly(clusterCountKeysCommand)},
	{name: "cluster|getkeysinslot", arity: 4, flags: "stale", group: "cluster", since: "3.0.0",
		syntax: "slot count", summary: "Returns the key names in a hash slot.", run: clusterOnly(clusterGetKeysCommand)},
	{name: "cluster|help", arity: 2, flags: "loading stale", group: "cluster", since: "5.0.0",
		summary: "Returns helpful text about the different subcommands.", run: clusterOnly(clusterHelpCommand)},
	{name: "cluster|bootstrap", arity: 2, flags: "admin stale no_multi", group: "cluster", since: "8.10.0",
		summary: "Makes a fresh node a cluster of one, its leader (redstream).", run: clusterOnly(clusterBootstrapCommand)},
	{name: "cluster|addnode", arity: 5, flags: "admin stale no_multi", group: "cluster", since: "8.10.0",
		syntax: "node-id address bus-address", summary: "Adds a running node to the cluster as a replica; sent to the leader (redstream).", run: clusterOnly(clusterAddNodeCommand)},
	{name: "cluster|delnode", arity: 3, flags: "admin stale no_multi", group: "cluster", since: "8.10.0",
		syntax: "node-id", summary: "Removes a node from the cluster; sent to the leader (redstream).", run: clusterOnly(clusterDelNodeCommand)},
	{name: "cluster|creategroups", arity: 3, flags: "admin stale no_multi", group: "cluster", since: "8.10.0",
		syntax: "count", summary: "Spreads the slots of an empty cluster over count Raft groups (redstream).", run: clusterOnly(clusterCreateGroupsCommand)},
	{name: "cluster|moveslots", arity: 5, flags: "admin stale no_multi", group: "cluster", since: "8.10.0",
		syntax: "start-slot end-slot group", summary: "Moves slots, with their keys, to another Raft group (redstream).", run: clusterOnly(clusterMoveSlotsCommand)},
	{name: "readonly", arity: 1, flags: "fast loading stale", group: "cluster", since: "3.0.0",
		summary: "Enables read-only queries for a connection to a Redis Cluster replica node.", run: clusterOnly(readonlyCommand)},
	{name: "readwrite", arity: 1, flags: "fast loading stale", group: "cluster", since: "3.0.0",
		summary: "Enables read-write queries for a connection to a Redis Cluster replica node.", run: clusterOnly(readwriteCommand)},
	{name: "asking", arity: 1, flags: "fast", group: "cluster", since: "3.0.0",
		summary: "Signals that a cluster client is following an -ASK redirect.", run: clusterOnly(askingCommand)},
}

const (
	errClusterDisabled = "ERR This instance has cluster support disabled"
	errInvalidSlot     = "ERR Invalid slot"
	errInvalidSlotKeys = "ERR Invalid slot or number of keys"
)

// clusterOnly runs a cluster command in cluster mode, and answers Redis's
// error without it.
func clusterOnly(run func(x *Ctx, cl Cluster)) func(*Ctx) {
	return func(x *Ctx) {
		if x.s.cluster == nil {
			x.error(errClusterDisabled)
			return
		}
		run(x, x.s.cluster)
	}
}

// clusterView is one look at the group, from which a reply is drawn.
type clusterView struct {
	self    ClusterMember
	members []ClusterMember // this node included
	status  ClusterStatus
	leader  *ClusterMember // nil while no leader is known
	timeout time.Duration  // cluster-node-timeout: a follower silent longer is failing
}

func viewCluster(s *Server, cl Cluster) clusterView { return viewGroup(s, cl, true) }

// viewGroup is viewCluster; addSelf lists this node as a member even
// when the group does not (a fresh node, in no group yet, is the first
// group's only member). Another group that does not list this node
// holds it as no voter: it is none of that group's members.
func viewGroup(s *Server, cl Cluster, addSelf bool) clusterView {
	v := clusterView{self: cl.Self(), status: cl.Status(), timeout: time.Duration(s.cfg.ClusterNodeTimeout) * time.Millisecond}
	selfListed := false
	for _, m := range cl.Members() {
		m.Self = m.ID == v.self.ID
		m.Leader = m.Leader || (m.ID == v.status.LeaderID && m.ID != "")
		selfListed = selfListed || m.Self
		v.members = append(v.members, m)
	}
	if !selfListed && addSelf { // a fresh node, in no group yet
		v.self.Self = true
		v.members = append([]ClusterMember{v.self}, v.members...)
	}
	for i := range v.members {
		if v.members[i].Leader {
			v.leader = &v.members[i]
			break
		}
	}
	return v
}

// replicas are the members other than the leader; empty with no leader.
func (v clusterView) replicas() []ClusterMember {
	if v.leader == nil {
		return nil
	}
	var out []ClusterMember
	for _, m := range v.members {
		if m.ID != v.leader.ID {
			out = append(out, m)
		}
	}
	return out
}

// follower is the leader's record of member id, when this node leads.
func (v clusterView) follower(id string) (FollowerStatus, bool) {
	for _, f := range v.status.Followers {
		if f.ID == id {
			return f, true
		}
	}
	return FollowerStatus{}, false
}

// failing reports a follower its leader has not heard from for longer
// than cluster-node-timeout (Redis's PFAIL: this node's opinion).
func (v clusterView) failing(m ClusterMember) bool {
	f, ok := v.follower(m.ID)
	return ok && f.LastContact > v.timeout
}

// offset is a member's replication offset as this node knows it (a Raft
// log index): its own last index, a follower's match index on the
// leader, at least the commit index for the leader. ok is false when
// this node cannot know it (another follower, seen from a follower).
func (v clusterView) offset(m ClusterMember) (offset uint64, ok bool) {
	switch {
	case m.Self:
		return v.status.LastIndex, true
	case m.Leader:
		return v.status.CommitIndex, true
	}
	f, ok := v.follower(m.ID)
	return f.MatchIndex, ok
}

// hostPort splits a member's address; a malformed one gives its whole
// text as the host and port 0.
func hostPort(addr string) (string, int) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	port, _ := strconv.Atoi(p)
	return host, port
}

func clusterMyIDCommand(x *Ctx, cl Cluster) {
	id := cl.Self().ID
	if id == "" {
		x.error("ERR No ID yet")
		return
	}
	x.w.BulkString(id)
}

func clusterInfoCommand(x *Ctx, _ Cluster) {
	t := x.s.topology()
	served := t.slotsServed()
	state := "ok"
	if served == 0 || t.leaderless() {
		state = "fail"
	}
	myEpoch := uint64(0)
	if t.self != nil {
		myEpoch = t.self.epoch()
	}
	var b strings.Builder
	field(&b, "cluster_state", state)
	field(&b, "cluster_slots_assigned", served)
	field(&b, "cluster_slots_ok", served)
	field(&b, "cluster_slots_pfail", 0)
	field(&b, "cluster_slots_fail", 0)
	field(&b, "cluster_known_nodes", len(t.nodes))
	field(&b, "cluster_size", t.masters())
	// Raft's term is a group's configuration epoch: each leader has its
	// own, as each Redis master's failover bumps its epoch.
	field(&b, "cluster_current_epoch", t.epoch())
	field(&b, "cluster_my_epoch", myEpoch)
	field(&b, "cluster_stats_messages_sent", 0)
	field(&b, "cluster_stats_messages_received", 0)
	field(&b, "total_cluster_links_buffer_limit_exceeded", 0)
	x.w.Verbatim(b.String())
}

// clusterNodesCommand writes one line per node, in Redis's format:
// <id> <ip:port@cport> <flags> <master> <ping-sent> <pong-recv>
// <config-epoch> <link-state> <slot> ... (cluster_topology.go says who
// is a master and a replica of whom).
func clusterNodesCommand(x *Ctx, _ Cluster) {
	t := x.s.topology()
	var b strings.Builder
	for _, n := range t.nodes {
		b.WriteString(t.nodeLine(n))
		b.WriteByte('\n')
	}
	x.w.Verbatim(b.String())
}

// clusterSlotsCommand: each contiguous range of each group that has a
// leader, in slot order, served by the leader and the group's replicas
// (topology.replicas); none while no group has a leader.
func clusterSlotsCommand(x *Ctx, _ Cluster) {
	t := x.s.topology()
	type entry struct {
		r  slotRange
		gt *groupTopo
	}
	var entries []entry
	for _, gt := range t.groups {
		if gt.v.leader == nil {
			continue
		}
		for _, r := range gt.ranges {
			entries = append(entries, entry{r, gt})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return a.r.first - b.r.first })
	x.w.Array(len(entries))
	for _, e := range entries {
		replicas := t.replicas(e.gt)
		x.w.Array(3 + len(replicas))
		x.w.Int(int64(e.r.first))
		x.w.Int(int64(e.r.last))
		for _, n := range append([]*topoNode{t.byID[e.gt.v.leader.ID]}, replicas...) {
			host, port := hostPort(n.m.Addr)
			x.w.Array(4)
			x.w.BulkString(host)
			x.w.Int(int64(port))
			x.w.BulkString(n.m.ID)
			x.w.Map(0) // no other endpoints: the ip is the preferred one
		}
	}
}

// clusterShardsCommand: one shard per node leading groups, with their
// slots, the leader and the groups' replicas; then each node in no
// such shard (its groups have no leader) as a master of no slots, its
// own shard.
func clusterShardsCommand(x *Ctx, _ Cluster) {
	t := x.s.topology()
	var alone []*topoNode
	for _, n := range t.nodes {
		in := false
		for _, sh := range t.shards {
			in = in || sh.leader == n || slices.Contains(sh.replicas, n)
		}
		if !in {
			alone = append(alone, n)
		}
	}
	x.w.Array(len(t.shards) + len(alone))
	for _, sh := range t.shards {
		writeShardHead(x.w, sh.leader.ranges, 1+len(sh.replicas))
		writeShardNode(x.w, sh.groups[0].v, sh.leader.member(sh.groups[0]), "master")
		for _, r := range sh.replicas {
			for _, gt := range sh.groups { // the first of the shard's groups it votes in
				if slices.Contains(r.groups, gt) {
					writeShardNode(x.w, gt.v, r.member(gt), "replica")
					break
				}
			}
		}
	}
	for _, n := range alone {
		writeShardHead(x.w, nil, 1)
		writeShardNode(x.w, n.groups[0].v, n.member(n.groups[0]), "master")
	}
}

// writeShardHead starts a shard: its slot ranges, then nodes nodes
// follow (writeShardNode).
func writeShardHead(w *resp.Writer, ranges []slotRange, nodes int) {
	w.Map(2)
	w.BulkString("slots")
	w.Array(2 * len(ranges))
	for _, r := range ranges {
		w.Int(int64(r.first))
		w.Int(int64(r.last))
	}
	w.BulkString("nodes")
	w.Array(nodes)
}

// writeShardNode writes m, a member of the group v is a view of, with
// its role in the shard.
func writeShardNode(w *resp.Writer, v clusterView, m ClusterMember, role string) {
	host, port := hostPort(m.Addr)
	offset, known := v.offset(m)
	health := "online"
	if role == "replica" && known && offset == 0 {
		health = "loading" // as Redis: a replica that has nothing yet
	}
	w.Map(7)
	w.BulkString("id")
	w.BulkString(m.ID)
	w.BulkString("port")
	w.Int(int64(port))
	w.BulkString("ip")
	w.BulkString(host)
	w.BulkString("endpoint")
	w.BulkString(host)
	w.BulkString("role")
	w.BulkString(role)
	w.BulkString("replication-offset")
	w.Int(int64(offset))
	w.BulkString("health")
	w.BulkString(health)
}

func clusterKeyslotCommand(x *Ctx, _ Cluster) { x.w.Int(int64(KeySlot(x.argv[2]))) }

// parseSlot reads a slot argument; ok is false once the error is written.
func parseSlot(x *Ctx, arg []byte, invalid string) (int, bool) {
	n, ok := resp.ParseInt(arg)
	if !ok {
		x.error(resp.ErrNotInteger)
		return 0, false
	}
	if n < 0 || n >= ClusterSlots {
		x.error(invalid)
		return 0, false
	}
	return int(n), true
}

func clusterCountKeysCommand(x *Ctx, _ Cluster) {
	slot, ok := parseSlot(x, x.argv[2], errInvalidSlot)
	if !ok {
		return
	}
	db := x.s.slotDB(slot)
	if db == nil {
		x.w.Int(0)
		return
	}
	x.w.Int(int64(countKeysInSlot(db, slot)))
}

// slotDB is the database of slot's group, where its keys are; nil if
// this node does not host the group (it has none of the slot's keys).
// Lock should be held.
func (s *Server) slotDB(slot int) *DB {
	g := s.groupOfSlot(slot)
	if g == nil {
		return nil
	}
	return s.shard.dbs[g.db]
}

func clusterGetKeysCommand(x *Ctx, _ Cluster) {
	slot, ok := resp.ParseInt(x.argv[2])
	count, ok2 := resp.ParseInt(x.argv[3])
	if !ok || !ok2 {
		x.error(resp.ErrNotInteger)
		return
	}
	if slot < 0 || slot >= ClusterSlots || count < 0 {
		x.error(errInvalidSlotKeys)
		return
	}
	var keys []string
	if db := x.s.slotDB(int(slot)); db != nil {
		keys = keysInSlot(db, int(slot), count)
	}
	x.w.Array(len(keys))
	for _, k := range keys {
		x.w.BulkString(k)
	}
}

// keysInSlot returns up to limit (negative: all) of db's keys that hash
// to slot, in SCAN order, counting expired keys not yet removed as Redis
// does. O(log N + k) for k keys returned: the slot's keys lie together
// in the key order (DB). Lock should be held.
func keysInSlot(db *DB, slot int, limit int64) []string {
	var keys []string
	db.ascendSlots(slot, slot, func(key string) bool {
		if int64(len(keys)) == limit {
			return false
		}
		keys = append(keys, key)
		return true
	})
	return keys
}

// countKeysInSlot is how many keys of db hash to slot, expired ones not
// yet removed included: O(log N + k) for k keys in the slot (Redis keeps
// a count per slot and answers in O(1)). Lock should be held.
func countKeysInSlot(db *DB, slot int) int {
	n := 0
	db.ascendSlots(slot, slot, func(string) bool { n++; return true })
	return n
}

func clusterHelpCommand(x *Ctx, _ Cluster) {
	writeHelp(x.w, "CLUSTER", []string{
		"COUNTKEYSINSLOT <slot>", "    Return the number of keys in <slot>.",
		"GETKEYSINSLOT <slot> <count>", "    Return key names stored by current node in a slot.",
		"INFO", "    Return information about the cluster.",
		"KEYSLOT <key>", "    Return the hash slot for <key>.",
		"MYID", "    Return the node id.",
		"NODES", "    Return cluster configuration seen by node. Output format:",
		"    <id> <ip:port@bus-port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
		"SLOTS", "    Return information about slots range mappings. Each range is made of:",
		"    start, end, master and replicas IP addresses, ports and ids",
		"SHARDS", "    Return information about slot range mappings and the nodes associated with them.",
		"BOOTSTRAP", "    Make this fresh node a cluster of one, its leader (redstream).",
		"ADDNODE <node-id> <ip:port> <bus-ip:bus-port>", "    Add a running node to the cluster; sent to the leader (redstream).",
		"DELNODE <node-id>", "    Remove a node from the cluster; sent to the leader (redstream).",
		"CREATEGROUPS <count>", "    Spread the slots of an empty cluster over <count> Raft groups (redstream).",
		"MOVESLOTS <start-slot> <end-slot> <group>", "    Move slots, with their keys, to another Raft group (redstream).",
	})
}

func clusterBootstrapCommand(x *Ctx, cl Cluster) {
	x.c.await(func() func(*resp.Writer) { return okOrError(cl.Bootstrap()) })
}

// Partitioner is a Cluster that can spread the slots over several Raft
// groups (replication's Node: its cluster map).
type Partitioner interface {
	CreateGroups(count int) error
	MoveSlots(first, last int, to uint16, timeout time.Duration) error
}

// clusterMoveSlotsCommand moves slots to another group and answers once
// the map gives them to it (moves.go).
func clusterMoveSlotsCommand(x *Ctx, cl Cluster) {
	p, ok := cl.(Partitioner)
	if !ok {
		x.error("ERR this node cannot partition its cluster")
		return
	}
	first, ok1 := resp.ParseInt(x.argv[2])
	last, ok2 := resp.ParseInt(x.argv[3])
	to, ok3 := resp.ParseInt(x.argv[4])
	switch {
	case !ok1 || !ok2 || !ok3:
		x.error(resp.ErrNotInteger)
		return
	case first < 0 || last >= ClusterSlots || first > last:
		x.error(errInvalidSlot)
		return
	case to < 1 || to > 65535:
		x.error("ERR invalid group " + x.arg(4))
		return
	}
	x.c.await(func() func(*resp.Writer) {
		return okOrError(p.MoveSlots(int(first), int(last), uint16(to), time.Minute))
	})
}

// clusterCreateGroupsCommand partitions the cluster: group g's state is
// database g-1 (groups.go), so there are at most databases groups. The
// keys of a slot stay in the group that took them, so only an empty
// cluster is partitioned: moving slots with their keys is a move
// (replication/PARTITIONS.md §5).
func clusterCreateGroupsCommand(x *Ctx, cl Cluster) {
	p, ok := cl.(Partitioner)
	if !ok {
		x.error("ERR this node cannot partition its cluster")
		return
	}
	count, err := strconv.Atoi(x.arg(2))
	if err != nil || count < 1 || count > x.s.cfg.Databases {
		x.error(fmt.Sprintf("ERR invalid group count %s: 1 to databases (%d)", x.arg(2), x.s.cfg.Databases))
		return
	}
	for _, db := range x.s.shard.dbs {
		if db.Len() > 0 {
			x.error("ERR the cluster holds keys: only an empty cluster is partitioned")
			return
		}
	}
	x.c.await(func() func(*resp.Writer) { return okOrError(p.CreateGroups(count)) })
}

func clusterAddNodeCommand(x *Ctx, cl Cluster) {
	m := ClusterMember{ID: x.arg(2), Addr: x.arg(3), BusAddr: x.arg(4)}
	if !validNodeID(m.ID) {
		x.error("ERR Invalid node ID " + m.ID)
		return
	}
	for _, addr := range []string{m.Addr, m.BusAddr} {
		if _, port := hostPort(addr); port <= 0 || port > 65535 {
			x.error("ERR Invalid node address specified: " + addr)
			return
		}
	}
	x.c.await(func() func(*resp.Writer) { return okOrError(cl.AddNode(m)) })
}

func clusterDelNodeCommand(x *Ctx, cl Cluster) {
	id := x.arg(2)
	known := false
	for _, m := range cl.Members() {
		known = known || m.ID == id
	}
	for _, f := range cl.Status().Followers {
		known = known || f.ID == id // a node an add left catching up, too
	}
	if !known {
		x.error("ERR Unknown node " + id) // CLUSTER FORGET's words
		return
	}
	x.c.await(func() func(*resp.Writer) { return okOrError(cl.RemoveNode(id)) })
}

// validNodeID: 40 characters of [0-9a-z], as Redis checks node IDs.
func validNodeID(id string) bool {
	if len(id) != 40 {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

// okOrError is the reply to a membership change: +OK, or its error. An
// error that already carries a code (MOVED, TRYAGAIN) keeps it; any
// other is an ERR.
func okOrError(err error) func(*resp.Writer) {
	return func(w *resp.Writer) {
		if err == nil {
			w.OK()
			return
		}
		msg := err.Error()
		if code, _, _ := strings.Cut(msg, " "); code == "" || code != strings.ToUpper(code) || strings.ToLower(code) == code {
			msg = "ERR " + msg
		}
		w.Error(msg)
	}
}

// readonlyCommand lets the connection read a follower's (possibly
// stale) data instead of being redirected to the leader.
func readonlyCommand(x *Ctx, _ Cluster) {
	x.c.readonly = true
	x.w.OK()
}

func readwriteCommand(x *Ctx, _ Cluster) {
	x.c.readonly = false
	x.w.OK()
}

// askingCommand sends the connection's next command of a moving slot to
// the slot's target group (moves.go).
func askingCommand(x *Ctx, _ Cluster) {
	x.c.asking = true
	x.w.OK()
}
