package server

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The cluster as CLUSTER SLOTS, SHARDS, NODES and INFO describe it, drawn
// from every group this node hosts (groups.go). Redis Cluster knows
// nodes, each a master owning slots or a replica of one master; here a
// slot's owner is a Raft group, and one node votes in several groups,
// leading some and following others. The mapping:
//
//   - A group's slots, merged into contiguous ranges, are served by the
//     group's leader (their master) and its other voters that lead no
//     group (replicas). CLUSTER SLOTS lists each range of each group, in
//     slot order, with that group's own replicas: a range is never merged
//     with a neighbouring one of another group, since their replicas
//     differ. A voter that leads another group is a master, so it is
//     nobody's replica: in Redis Cluster a node is one or the other, and
//     clients rely on it (redis-py takes each node's role from the first
//     range that names it, and sends DBSIZE, KEYS and SCAN to the masters
//     alone: listed as a replica first, a master's keys went unseen).
//   - A node is a master if it leads any group, owning the slots of
//     every group it leads. A Redis master owns all its slots alone, and
//     clients key their shards by the master's address (rueidis builds
//     its shard map from CLUSTER SHARDS so), so the groups one node leads
//     are one shard: their slots, the leader, and each group's replicas.
//   - A node that leads nothing is a replica ("slave") of the leader of
//     the first hosted group it votes in that has one. That it follows
//     other leaders too is what SLOTS and SHARDS show; NODES' one master
//     field cannot.
//   - A node that leads nothing and votes only in groups without a
//     leader is a master of no slots, as every node of a one-group
//     cluster without a leader is.
//   - CLUSTER INFO counts as assigned and ok the hosted slots whose
//     group has a leader; the state is ok while every hosted slot has
//     one. cluster_size counts the masters serving slots, as Redis does
//     (two groups one node leads are one).
//
// A node is the same node in every group it votes in (its
// ClusterMember.ID); its address is the first one any group knows. This
// node is a member of the groups that list it, and of the first group
// always (viewCluster): a group it hosts without being its voter is not
// one it serves.
//
// Slots whose group this node does not host are shown as the cluster map
// describes that group (MapSlots): its voters, and the leader it last
// recorded. With SetCluster alone the one group owns every slot and the
// replies are the one-group ones.
type topology struct {
	groups []*groupTopo // the hosted groups, the first group first
	nodes  []*topoNode  // the voters of every hosted group, each once, in order of first appearance
	byID   map[string]*topoNode
	self   *topoNode
	shards []*topoShard // one per node leading a group, in the order of the groups
}

// groupTopo is one hosted group: its view (viewCluster) and its slots.
type groupTopo struct {
	v      clusterView
	ranges []slotRange // ascending, contiguous ones merged
	slots  int         // how many
}

// slotRange is slots first..last, inclusive.
type slotRange struct{ first, last int }

// topoNode is one node of the cluster.
type topoNode struct {
	m       ClusterMember // ID, addresses (the first known), Self
	groups  []*groupTopo  // the groups it votes in
	leads   []*groupTopo  // the groups it leads
	master  *topoNode     // leading nothing: the leader it replicates, if any
	of      *groupTopo    // the group through which it replicates master
	failing bool          // some leader of a group it votes in has not heard from it (clusterView.failing)
	ranges  []slotRange   // of the groups it leads, ascending and merged
}

// topoShard is a master and its replicas: the groups one node leads.
type topoShard struct {
	leader   *topoNode
	groups   []*groupTopo
	replicas []*topoNode // its groups' replicas (topology.replicas), each once
}

// describedGroups are the groups the topology shows: the hosted ones,
// then those the cluster map names for other slots (MapSlots), by ID.
// Lock should be held.
func (s *Server) describedGroups() []*clusterGroup {
	out := slices.Clone(s.groups)
	for _, id := range slices.Sorted(maps.Keys(s.remote)) {
		if r := s.remote[id]; r != nil {
			out = append(out, r)
		}
	}
	return out
}

// topology draws the cluster from the hosted groups. Lock should be held
// (slotGroup).
func (s *Server) topology() *topology {
	t := &topology{byID: map[string]*topoNode{}}
	owned := make(map[*clusterGroup]*groupTopo, len(s.groups)+len(s.remote))
	for i, g := range s.describedGroups() {
		gt := &groupTopo{v: viewGroup(s, g.cl, i == 0)}
		owned[g] = gt
		t.groups = append(t.groups, gt)
		for _, m := range gt.v.members {
			n := t.byID[m.ID]
			if n == nil {
				n = &topoNode{m: ClusterMember{ID: m.ID}}
				t.byID[m.ID] = n
				t.nodes = append(t.nodes, n)
			}
			if n.m.Addr == "" {
				n.m.Addr = m.Addr
			}
			if n.m.BusAddr == "" {
				n.m.BusAddr = m.BusAddr
			}
			if m.Self {
				n.m.Self = true
				if t.self == nil {
					t.self = n
				}
			}
			n.groups = append(n.groups, gt)
			n.failing = n.failing || gt.v.failing(m)
		}
	}
	for slot, g := range s.slotGroup {
		if g == nil && s.slotRemote != nil {
			g = s.slotRemote[slot]
		}
		gt := owned[g]
		if gt == nil {
			continue // no group serves it
		}
		gt.slots++
		if k := len(gt.ranges) - 1; k >= 0 && gt.ranges[k].last == slot-1 {
			gt.ranges[k].last = slot
		} else {
			gt.ranges = append(gt.ranges, slotRange{slot, slot})
		}
	}
	for _, gt := range t.groups {
		if gt.v.leader == nil {
			continue
		}
		n := t.byID[gt.v.leader.ID]
		n.leads = append(n.leads, gt)
		n.ranges = append(n.ranges, gt.ranges...)
	}
	for _, n := range t.nodes {
		if len(n.leads) > 0 {
			slices.SortFunc(n.ranges, func(a, b slotRange) int { return a.first - b.first })
			n.ranges = mergeRanges(n.ranges)
			continue
		}
		for _, gt := range n.groups {
			if gt.v.leader != nil {
				n.master, n.of = t.byID[gt.v.leader.ID], gt
				break
			}
		}
	}
	for _, gt := range t.groups {
		if gt.v.leader == nil {
			continue
		}
		leader := t.byID[gt.v.leader.ID]
		var sh *topoShard
		for _, x := range t.shards {
			if x.leader == leader {
				sh = x
			}
		}
		if sh == nil {
			sh = &topoShard{leader: leader}
			t.shards = append(t.shards, sh)
		}
		sh.groups = append(sh.groups, gt)
		for _, r := range t.replicas(gt) {
			if !slices.Contains(sh.replicas, r) {
				sh.replicas = append(sh.replicas, r)
			}
		}
	}
	return t
}

// replicas are group gt's voters other than its leader that lead no
// group; none while it has no leader.
func (t *topology) replicas(gt *groupTopo) []*topoNode {
	var out []*topoNode
	for _, m := range gt.v.replicas() {
		if n := t.byID[m.ID]; len(n.leads) == 0 {
			out = append(out, n)
		}
	}
	return out
}

// mergeRanges joins the adjacent ranges of ascending, disjoint rs.
func mergeRanges(rs []slotRange) []slotRange {
	var out []slotRange
	for _, r := range rs {
		if k := len(out) - 1; k >= 0 && out[k].last == r.first-1 {
			out[k].last = r.last
		} else {
			out = append(out, r)
		}
	}
	return out
}

// String writes a range as CLUSTER NODES does: "first-last", or the
// slot alone.
func (r slotRange) String() string {
	if r.first == r.last {
		return strconv.Itoa(r.first)
	}
	return strconv.Itoa(r.first) + "-" + strconv.Itoa(r.last)
}

// member is n as a member of gt, its addresses the node's.
func (n *topoNode) member(gt *groupTopo) ClusterMember {
	for _, m := range gt.v.members {
		if m.ID == n.m.ID {
			m.Addr, m.BusAddr = n.m.Addr, n.m.BusAddr
			return m
		}
	}
	return n.m
}

// epoch is n's configuration epoch: the newest term of the groups it
// leads; for a replica, the term of the group through which it follows
// its master; otherwise the newest term of its groups. (Each group's
// term is as this node knows it.) With one group, its term.
func (n *topoNode) epoch() uint64 {
	var groups []*groupTopo
	switch {
	case len(n.leads) > 0:
		groups = n.leads
	case n.of != nil:
		groups = []*groupTopo{n.of}
	default:
		groups = n.groups
	}
	var e uint64
	for _, gt := range groups {
		e = max(e, gt.v.status.Term)
	}
	return e
}

// slotsServed is how many hosted slots have a leader to serve them.
func (t *topology) slotsServed() int {
	n := 0
	for _, gt := range t.groups {
		if gt.v.leader != nil {
			n += gt.slots
		}
	}
	return n
}

// leaderless reports whether some hosted group owning slots has no known
// leader: those slots cannot be served now.
func (t *topology) leaderless() bool {
	for _, gt := range t.groups {
		if gt.slots > 0 && gt.v.leader == nil {
			return true
		}
	}
	return false
}

// masters counts the nodes that serve slots (Redis's cluster_size).
func (t *topology) masters() int {
	n := 0
	for _, node := range t.nodes {
		if len(node.ranges) > 0 {
			n++
		}
	}
	return n
}

// epoch is the newest term of the hosted groups (cluster_current_epoch).
func (t *topology) epoch() uint64 {
	var e uint64
	for _, gt := range t.groups {
		e = max(e, gt.v.status.Term)
	}
	return e
}

// nodeLine is n's line of CLUSTER NODES, without its newline.
func (t *topology) nodeLine(n *topoNode) string {
	host, port := hostPort(n.m.Addr)
	_, busPort := hostPort(n.m.BusAddr)
	var flags []string
	if n.m.Self {
		flags = append(flags, "myself")
	}
	master := "-"
	if n.master == nil {
		flags = append(flags, "master")
	} else {
		flags = append(flags, "slave")
		master = n.master.m.ID
	}
	link := "connected"
	if n.failing {
		flags = append(flags, "fail?")
		link = "disconnected"
	}
	var b strings.Builder
	// ping-sent and pong-recv are 0: there is no gossip to time.
	b.WriteString(n.m.ID + " " + host + ":" + strconv.Itoa(port) + "@" + strconv.Itoa(busPort) + " " +
		strings.Join(flags, ",") + " " + master + " 0 0 " + strconv.FormatUint(n.epoch(), 10) + " " + link)
	for _, r := range n.ranges {
		b.WriteString(" " + r.String())
	}
	return b.String()
}
