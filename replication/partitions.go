package replication

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redstream/redstream/replication/slotmap"
	"github.com/redstream/redstream/server"
)

// The node's side of the cluster map (PARTITIONS.md §4). Every node of a
// cluster started on a Raft port takes part in the metadata group
// (meta.go): it is bootstrapped with the main group, and its leader keeps
// its members equal to the main group's, up to five voters, the others
// non-voters, so every node holds a copy of the map.
//
// A map without groups is a cluster that was never partitioned: the
// main group owns every slot, as before. `CLUSTER CREATEGROUPS n`
// (CreateGroups) partitions an empty cluster once: it records the nodes,
// places group g's voters on nodes g-1, g, g+1 (by node ID, modulo the
// node count; group 1, the main group, keeps every node as voter),
// and gives each group an equal share of the slots.
//
// Each node then follows its copy of the map (followMap): it opens and
// bootstraps the data groups it is a voter of (every voter bootstraps
// the same configuration, which Raft allows), hands the server each
// slot's owner (server.MapSlots), records in the map the groups it leads,
// so that every node can name each group's leader, and gives a group it
// leads to the group's preferred leader, its first voter, once that one
// is up and caught up: Kafka's preferred-replica election, which spreads
// leaders one per node with three nodes and three groups, and brings a
// node that returns its share back.
//
// Restart: the map comes back with the metadata group's log, which is
// applied only once its leader is known. Until then a node of a
// partitioned cluster must not serve any slot as the main group's (it
// would take a write of another group's slot), so a partitioned node
// keeps a marker file and starts with every slot unowned (-CLUSTERDOWN)
// until its map has groups again. From then on it serves each group's
// slots as soon as it has that group open (mapSlots); a group it votes
// in keeps its slots unowned until opened.

// partitions is the node's part in the cluster map.
type partitions struct {
	meta    *metaGroup
	forward *GroupStream // the node's forwarded requests (forward.go)
	changed chan struct{}
	done    chan struct{}
	wg      sync.WaitGroup

	moversMu sync.Mutex
	movers   map[int]bool       // moves this node runs, by first slot (moves.go)
	adding   map[addingKey]bool // voters being added (addGroupVoter)

	// Touched by followMap's goroutine only.
	mapped    uint64               // the map Epoch the server's slots were last set from
	hosted    int                  // the data groups hosted then
	transfers map[uint16]transfer  // the last leadership hand-over asked of each group
	leftSince map[uint16]time.Time // hosted groups the map took this node out of, since when
}

// leaveAfter is how long a node keeps a group the map took it out of
// while the group's configuration it knows still lists it.
const leaveAfter = 10 * time.Second

// transfer is a leadership hand-over balance asked for.
type transfer struct {
	to string
	at time.Time
}

// partitionedMarker is the file that says this node's cluster is
// partitioned (see above).
const partitionedMarker = "partitioned"

// startPartitions opens the metadata group and starts following the map.
func (n *Node) startPartitions() error {
	p := &partitions{changed: make(chan struct{}, 1), done: make(chan struct{}), transfers: map[uint16]transfer{}, leftSince: map[uint16]time.Time{},
		movers: map[int]bool{}, adding: map[addingKey]bool{}}
	if _, err := os.Stat(filepath.Join(n.cfg.Dir, "raft", partitionedMarker)); err == nil {
		if err := n.srv.MapSlots(make([]uint16, slotmap.NumSlots), nil, nil); err != nil {
			return err
		}
	}
	meta, err := n.openMetaGroup(func() {
		select {
		case p.changed <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return err
	}
	p.meta = meta
	if p.forward, err = n.mux.Group(forwardGroup); err != nil {
		return err
	}
	go serveForwards(p.forward, map[byte]forwardHandler{forwardMetaOp: meta.handleForwarded}, n.logger)
	n.parts = p
	p.wg.Add(1)
	go n.followMap()
	return nil
}

// stopPartitions stops following the map (the groups close with the
// node).
func (n *Node) stopPartitions() {
	if n.parts == nil {
		return
	}
	close(n.parts.done)
	n.parts.wg.Wait()
	n.parts.forward.Close()
}

// followMap brings the node in line with its map whenever the map
// changes, and every second (memberships, leaders, balance).
func (n *Node) followMap() {
	p := n.parts
	defer p.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		n.syncMap()
		select {
		case <-p.done:
			return
		case <-p.changed:
		case <-tick.C:
		}
	}
}

// syncMap is one pass of followMap.
func (n *Node) syncMap() {
	p := n.parts
	if p.meta.Leading() {
		if n.removedFromMain() {
			// The map must record the removal, and only a main member
			// does: hand the metadata group to another node.
			if err := p.meta.raft.LeadershipTransfer().Error(); err != nil {
				n.logger.Warn("could not hand the metadata group over after leaving the cluster", "err", err)
			}
		} else {
			n.syncMetaMembers()
		}
	}
	m := p.meta.fsm.current()
	groups := m.Groups()
	if len(groups) == 0 {
		return // never partitioned: the main group owns every slot
	}
	n.markPartitioned()
	if n.dropLeftGroups(m) {
		p.mapped = math.MaxUint64 // its slots were unset: map them again
	}
	// The slots of the groups open now are served before the others are
	// opened: opening one reads its log, which may take seconds, and a
	// restarted node's main group (or an open data group) need not wait.
	if !n.mapSlots() {
		return
	}
	for _, g := range groups {
		if !n.votesIn(g) || n.Group(g.ID) != nil {
			continue
		}
		if n.hostMapped(m, g) && !n.mapSlots() {
			return
		}
	}
	if p.meta.Leading() && n.placeMembers(m) {
		return // the map changed: the next pass works from the new one
	}
	n.syncGroupVoters(m, groups)
	n.runMovers(m)
	n.recordLeaders(m, groups)
	n.balance(m, groups)
}

// mapSlots hands the server each slot's owner from the current map,
// when the map or the data groups this node has open changed since it
// last did. It reads the map afresh, not the pass's: a group can take
// seconds to open, and the map a pass began with may be one the node
// was still applying its log into (a restart), without slot ranges yet.
// A slot of a group this node votes in but has not opened (yet, or it
// failed to) is left unowned, -CLUSTERDOWN: the map may name this very
// node its leader, from before a restart, and -MOVED would send
// clients back here. It reports false if the server refused the slots.
func (n *Node) mapSlots() bool {
	p := n.parts
	m := p.meta.fsm.current()
	hosted, closed := 0, map[uint16]bool{}
	for _, g := range m.Groups() {
		switch {
		case !n.votesIn(g):
		case n.Group(g.ID) == nil:
			closed[g.ID] = true
		default:
			hosted++
		}
	}
	if m.Epoch == p.mapped && hosted == p.hosted {
		return true
	}
	owners, targets := make([]uint16, slotmap.NumSlots), make([]uint16, slotmap.NumSlots)
	for _, r := range m.Ranges() {
		for s := r.First; s <= r.Last; s++ {
			if !closed[r.Group] {
				owners[s] = r.Group
			}
			if _, to, ok := m.Moving(s); ok {
				targets[s] = to
			}
		}
	}
	remote := func(id uint16) server.Cluster { return mapGroup{n: n, m: m, id: id} }
	if err := n.srv.MapSlots(owners, targets, remote); err != nil {
		n.logger.Error("could not take the cluster map's slots", "err", err)
		return false
	}
	p.mapped, p.hosted = m.Epoch, hosted
	return true
}

// votesIn reports whether g is a data group with this node among its
// voters.
func (n *Node) votesIn(g slotmap.Group) bool {
	return g.ID != mainGroup && slices.Contains(g.Voters, n.self.ID)
}

// placeMembers, on the metadata leader of a partitioned cluster, follows
// the main group's membership in the map: a node added to the main group
// is recorded; a node removed from it is replaced, in every data group it
// was a voter of, by the member of fewest groups that is not one yet (or
// only dropped when there is none), keeping its place in the voter list,
// and is then forgotten. The main group's voters in the map are the main
// group's. It reports whether it proposed a change.
func (n *Node) placeMembers(m *slotmap.Map) bool {
	cf := n.main.raft.GetConfiguration()
	if cf.Error() != nil {
		return false
	}
	addrs := n.fsm.clientAddrs()
	var members []string
	bus := map[string]string{}
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			members = append(members, string(s.ID))
			bus[string(s.ID)] = string(s.Address)
		}
	}
	if !slices.Contains(members, n.self.ID) {
		return false
	}
	known := map[string]bool{}
	for _, nd := range m.Nodes() {
		known[nd.ID] = true
	}
	var ops []slotmap.Op
	for _, id := range members {
		if !known[id] && addrs[id] != "" {
			ops = append(ops, slotmap.Op{Kind: slotmap.OpAddNode, Node: slotmap.Node{ID: id, Addr: addrs[id], BusAddr: bus[id]}})
		}
	}
	load := map[string]int{}
	for _, g := range m.Groups() {
		for _, v := range g.Voters {
			load[v]++
		}
	}
	voting := map[string]bool{}
	for _, g := range m.Groups() {
		want := g.Voters
		if g.ID == mainGroup {
			want = followMembers(g.Voters, members)
		} else {
			want = replaceGone(g.Voters, members, load, known)
		}
		for _, v := range want {
			voting[v] = true
		}
		if !slices.Equal(want, g.Voters) {
			ops = append(ops, slotmap.Op{Kind: slotmap.OpSetVoters, Group: g.ID, Voters: want})
		}
	}
	for id := range known {
		if !slices.Contains(members, id) && !voting[id] {
			ops = append(ops, slotmap.Op{Kind: slotmap.OpRemoveNode, Node: slotmap.Node{ID: id}})
		}
	}
	if len(ops) == 0 {
		if op, ok := spreadVoters(m, members, known); ok {
			ops = append(ops, op)
		}
	}
	for _, op := range ops {
		n.logger.Info("following the main group's membership in the cluster map", "op", op.Kind.String(), "group", op.Group, "node", op.Node.ID)
		if err := n.parts.meta.propose(op, 5*time.Second); err != nil {
			n.logger.Warn("could not change the cluster map", "op", op.Kind.String(), "err", err)
			return true
		}
	}
	return len(ops) > 0
}

// spreadVoters gives a member that votes in no data group (a node added
// to the cluster) the place of a voter of the member voting in most, in
// a group that member is the preferred leader of if it is one, so that
// the new node leads that group once it has caught up. One change at a
// time, and only while it narrows the gap: the next pass sees the new
// map.
func spreadVoters(m *slotmap.Map, members []string, known map[string]bool) (slotmap.Op, bool) {
	load := map[string]int{}
	for _, g := range m.Groups() {
		if g.ID != mainGroup {
			for _, v := range g.Voters {
				load[v]++
			}
		}
	}
	idle, busiest := "", ""
	for _, id := range slices.Sorted(slices.Values(members)) {
		if known[id] && load[id] == 0 && idle == "" {
			idle = id
		}
		if busiest == "" || load[id] > load[busiest] {
			busiest = id
		}
	}
	if idle == "" || load[busiest] < 2 {
		return slotmap.Op{}, false
	}
	var pick *slotmap.Group
	for _, g := range m.Groups() {
		if g.ID == mainGroup || !slices.Contains(g.Voters, busiest) {
			continue
		}
		if pick == nil || g.Voters[0] == busiest {
			pick = &g
		}
	}
	if pick == nil {
		return slotmap.Op{}, false
	}
	voters := slices.Clone(pick.Voters)
	voters[slices.Index(voters, busiest)] = idle
	return slotmap.Op{Kind: slotmap.OpSetVoters, Group: pick.ID, Voters: voters}, true
}

// followMembers is voters without the nodes no longer members, then the
// members not in it, in order.
func followMembers(voters, members []string) []string {
	out := slices.DeleteFunc(slices.Clone(voters), func(v string) bool { return !slices.Contains(members, v) })
	for _, id := range members {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// replaceGone is voters with each node no longer a member replaced, in
// its place, by the recorded member (known) of fewest groups (load) that
// is not a voter yet, lowest ID first on a tie; dropped when there is
// none. load is updated.
func replaceGone(voters, members []string, load map[string]int, known map[string]bool) []string {
	out := slices.Clone(voters)
	for i := 0; i < len(out); i++ {
		if slices.Contains(members, out[i]) {
			continue
		}
		best := ""
		for _, id := range members {
			if !known[id] || slices.Contains(out, id) {
				continue
			}
			if best == "" || load[id] < load[best] || (load[id] == load[best] && id < best) {
				best = id
			}
		}
		if best == "" {
			out = slices.Delete(out, i, i+1)
			i--
			continue
		}
		load[best]++
		out[i] = best
	}
	return out
}

// syncGroupVoters makes each data group this node leads have the map's
// voters: a new voter is added (it opens the group when its map says so
// and catches up from the leader; addGroupVoter), a removed one removed.
//
// A node removed from the cluster hands each group it leads to another
// voter instead: the metadata group may drop it before it has applied
// the map change that replaces it (a removed follower never learns the
// commit index of entries sent to it last), and it would then lead on
// without ever adding its replacement. The new leader stays in the
// metadata group and makes the change.
func (n *Node) syncGroupVoters(m *slotmap.Map, groups []slotmap.Group) {
	leaving := n.removedFromMain()
	for _, g := range groups {
		grp := n.Group(g.ID)
		if g.ID == mainGroup || grp == nil || !grp.Leading() {
			continue
		}
		if leaving {
			n.logger.Info("handing a group over after leaving the cluster", "group", g.ID)
			if err := grp.raft.LeadershipTransfer().Error(); err != nil {
				n.logger.Warn("could not hand a group over after leaving the cluster", "group", g.ID, "err", err)
			}
			continue
		}
		cf := grp.raft.GetConfiguration()
		if cf.Error() != nil {
			continue
		}
		in, voter := map[string]bool{}, map[string]bool{}
		for _, s := range cf.Configuration().Servers {
			in[string(s.ID)] = true
			voter[string(s.ID)] = s.Suffrage == raft.Voter
		}
		for _, mb := range mapMembers(m, g.Voters) {
			if !voter[mb.ID] && mb.BusAddr != "" {
				n.addGroupVoter(grp, mb)
			}
		}
		for id := range in {
			if id == n.self.ID && n.addingTo(grp) {
				// Removing itself ends this node's lead, and the adds it
				// runs with it: the next pass after they end removes it.
				continue
			}
			if !slices.Contains(g.Voters, id) {
				n.logger.Info("removing a voter the map no longer lists", "group", g.ID, "node", id)
				if err := grp.RemoveVoter(id); err != nil {
					n.logger.Warn("could not remove a voter", "group", g.ID, "node", id, "err", err)
				}
			}
		}
	}
}

// addingKey is a voter being added to a group.
type addingKey struct {
	group uint16
	node  string
}

// addGroupVoter makes mb a voter of grp once it has caught up
// (Group.AddCaughtUp), in a goroutine of its own, so that the pass goes on
// (moves, balancing) while mb copies the group's log. A voter the map
// replaces is removed meanwhile: the group keeps its majority among the
// voters that answer, and mb counts once it can. One that has not caught
// up stays a non-voter, and a later pass tries again.
func (n *Node) addGroupVoter(grp *Group, mb server.ClusterMember) {
	p := n.parts
	startOnce(p, p.adding, addingKey{grp.ID(), mb.ID}, func() {
		n.logger.Info("adding the map's new voter to a group", "group", grp.ID(), "node", mb.ID)
		if err := grp.AddCaughtUp(mb); err != nil {
			n.logger.Warn("could not add a voter yet", "group", grp.ID(), "node", mb.ID, "err", err)
		}
		select {
		case p.changed <- struct{}{}: // a pass now, not at the next tick
		default:
		}
	})
}

// addingTo reports whether addGroupVoter is adding a voter to grp.
func (n *Node) addingTo(grp *Group) bool {
	p := n.parts
	p.moversMu.Lock()
	defer p.moversMu.Unlock()
	for key := range p.adding {
		if key.group == grp.ID() {
			return true
		}
	}
	return false
}

// startOnce runs fn in a goroutine the node waits for on close, unless
// one runs for key already: running holds the keys of those that run
// (guarded by moversMu).
func startOnce[K comparable](p *partitions, running map[K]bool, key K, fn func()) {
	p.moversMu.Lock()
	busy := running[key]
	running[key] = true
	p.moversMu.Unlock()
	if busy {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer func() {
			p.moversMu.Lock()
			delete(running, key)
			p.moversMu.Unlock()
		}()
		fn()
	}()
}

// dropLeftGroups closes each data group this node hosts that the map no
// longer makes it a voter of, once the group's configuration no longer
// lists it either (its leader has removed it: until then it still counts
// in the group's majority), or leaveAfter after it saw the map change. Its directory is kept aside, renamed, and the
// server drops its state. It reports whether it closed any.
func (n *Node) dropLeftGroups(m *slotmap.Map) (dropped bool) {
	voters := map[uint16][]string{}
	for _, g := range m.Groups() {
		voters[g.ID] = g.Voters
	}
	n.mu.Lock()
	var left []*Group
	for id, g := range n.groups {
		if id != mainGroup && id != metaGroupID && !slices.Contains(voters[id], n.self.ID) {
			left = append(left, g)
		}
	}
	n.mu.Unlock()
	for id := range n.parts.leftSince {
		if !slices.ContainsFunc(left, func(g *Group) bool { return g.id == id }) {
			delete(n.parts.leftSince, id)
		}
	}
	for _, g := range left {
		since, seen := n.parts.leftSince[g.id]
		if !seen {
			since = time.Now()
			n.parts.leftSince[g.id] = since
		}
		// A removed voter seldom hears of its own removal (the leader
		// stops sending to it), so after a while the map's word is
		// enough: by then the leader has removed it (syncGroupVoters
		// does so on its next pass) or is gone.
		cf := g.raft.GetConfiguration()
		listed := cf.Error() != nil || lists(cf.Configuration(), n.self.ID)
		if listed && time.Since(since) < leaveAfter {
			continue
		}
		delete(n.parts.leftSince, g.id)
		n.mu.Lock()
		delete(n.groups, g.id)
		n.mu.Unlock()
		if err := g.close(); err != nil {
			n.logger.Warn("closing a group this node left", "group", g.id, "err", err)
		}
		if err := n.srv.DropGroup(g.id); err != nil {
			n.logger.Warn("dropping a group this node left", "group", g.id, "err", err)
		}
		aside := fmt.Sprintf("%s.left-%d", g.dir, time.Now().UnixMilli())
		if err := os.Rename(g.dir, aside); err != nil {
			n.logger.Warn("could not set aside a group this node left", "group", g.id, "err", err)
		}
		n.logger.Info("left a group the cluster map no longer makes this node a voter of", "group", g.id, "kept", aside)
		dropped = true
	}
	return dropped
}

// hostMapped opens data group g, which the map makes this node a voter
// of, and bootstraps it when it is new: when it never had a leader (no
// term recorded), its voters are the ones it was created with, and every
// one of them bootstraps that same configuration. A group that had a
// leader is never bootstrapped again: a voter without its state (a
// wiped disk) waits for the leader to send it the log, since a second
// bootstrap would write a different entry at index 1 than the group's.
func (n *Node) hostMapped(m *slotmap.Map, g slotmap.Group) bool {
	grp, err := n.HostDataGroup(g.ID)
	if err != nil {
		n.logger.Error("could not open a group of the cluster map", "group", g.ID, "err", err)
		return false
	}
	if _, term := m.Leader(g.ID); term != 0 {
		return true
	}
	err = grp.Bootstrap(mapMembers(m, g.Voters))
	if err == nil {
		n.logger.Info("bootstrapped a group of the cluster map", "group", g.ID, "voters", len(g.Voters))
	} else if !errors.Is(err, errHasState) {
		n.logger.Error("could not bootstrap a group of the cluster map", "group", g.ID, "err", err)
	}
	return true
}

// markPartitioned writes the marker once.
func (n *Node) markPartitioned() {
	path := filepath.Join(n.cfg.Dir, "raft", partitionedMarker)
	if _, err := os.Stat(path); err == nil {
		return
	}
	if err := os.WriteFile(path, []byte("this node's cluster is partitioned: it serves no slot until its cluster map is back\n"), 0o644); err != nil {
		n.logger.Error("could not mark the node partitioned", "err", err)
		return
	}
	if err := syncFile(path); err != nil {
		n.logger.Error("could not mark the node partitioned", "err", err)
	}
}

// mapMembers are the map's nodes with these IDs, as group members.
func mapMembers(m *slotmap.Map, ids []string) []server.ClusterMember {
	nodes := map[string]slotmap.Node{}
	for _, nd := range m.Nodes() {
		nodes[nd.ID] = nd
	}
	out := make([]server.ClusterMember, 0, len(ids))
	for _, id := range ids {
		out = append(out, server.ClusterMember{ID: id, Addr: nodes[id].Addr, BusAddr: nodes[id].BusAddr})
	}
	return out
}

// lists reports whether cf has a member with that ID.
func lists(cf raft.Configuration, id string) bool {
	return slices.ContainsFunc(cf.Servers, func(s raft.Server) bool { return string(s.ID) == id })
}

// removedFromMain reports whether the main group's configuration, as this
// node knows it, has members but not this node: it was removed.
func (n *Node) removedFromMain() bool {
	cf := n.main.raft.GetConfiguration()
	if cf.Error() != nil || len(cf.Configuration().Servers) == 0 {
		return false
	}
	return !lists(cf.Configuration(), n.self.ID)
}

// syncMetaMembers, on the metadata leader, makes the metadata group's
// members the main group's voters (the first five voters, the others
// non-voters) and records every main member the map lacks.
func (n *Node) syncMetaMembers() {
	meta := n.parts.meta
	mainCf := n.main.raft.GetConfiguration()
	metaCf := meta.raft.GetConfiguration()
	if mainCf.Error() != nil || metaCf.Error() != nil {
		return
	}
	in := map[raft.ServerID]raft.ServerSuffrage{}
	voters := 0
	for _, s := range metaCf.Configuration().Servers {
		in[s.ID] = s.Suffrage
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	if !lists(mainCf.Configuration(), n.self.ID) {
		return // no main group here (yet): nothing to follow
	}
	want := map[raft.ServerID]bool{}
	for _, s := range mainCf.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		want[s.ID] = true
		if _, ok := in[s.ID]; ok {
			continue
		}
		var err error
		if voters < 5 {
			err = meta.raft.AddVoter(s.ID, s.Address, 0, 5*time.Second).Error()
			voters++
		} else {
			err = meta.raft.AddNonvoter(s.ID, s.Address, 0, 5*time.Second).Error()
		}
		if err != nil {
			n.logger.Warn("could not add a node to the metadata group", "node", s.ID, "err", err)
			return
		}
	}
	// A node removed from the main group stays in the metadata group while
	// the map still lists it (placeMembers forgets it last), so that it
	// most often sees the map replace it; one that does not hands its
	// groups over (syncGroupVoters).
	mapped := map[raft.ServerID]bool{}
	for _, nd := range n.parts.meta.fsm.current().Nodes() {
		mapped[raft.ServerID(nd.ID)] = true
	}
	for id := range in {
		if !want[id] && string(id) != n.self.ID && !mapped[id] {
			if err := meta.raft.RemoveServer(id, 0, 5*time.Second).Error(); err != nil {
				n.logger.Warn("could not remove a node from the metadata group", "node", id, "err", err)
				return
			}
		}
	}
}

// recordLeaders records in the map each group this node leads whose
// record names another leader or an older term.
func (n *Node) recordLeaders(m *slotmap.Map, groups []slotmap.Group) {
	for _, g := range groups {
		grp := n.dataOrMain(g.ID)
		if grp == nil || !grp.Leading() {
			continue
		}
		term := grp.raft.CurrentTerm()
		if id, at := m.Leader(g.ID); id == n.self.ID && at == term {
			continue
		}
		op := slotmap.Op{Kind: slotmap.OpSetLeader, Group: g.ID, Node: slotmap.Node{ID: n.self.ID}, Term: term}
		if err := n.parts.meta.proposeAnywhere(n.parts.forward, op, 2*time.Second); err != nil && !errors.Is(err, errMapRefused) {
			n.logger.Warn("could not record leading a group in the cluster map", "group", g.ID, "err", err)
		}
	}
}

// balance hands each group this node leads to the group's preferred
// leader (its first voter in the map) once that node is a voter that
// answers and has the log, asking the same hand-over at most every 10
// seconds (a new preferred leader is asked at once). A
// group whose slots are moving out keeps its leader, whose mover would
// otherwise start over.
func (n *Node) balance(m *slotmap.Map, groups []slotmap.Group) {
	moving := map[uint16]bool{}
	for _, mv := range movingRanges(m) {
		moving[mv.from] = true
	}
	for _, g := range groups {
		if len(g.Voters) == 0 || g.Voters[0] == n.self.ID || moving[g.ID] {
			continue
		}
		grp := n.dataOrMain(g.ID)
		want := g.Voters[0]
		if last := n.parts.transfers[g.ID]; grp == nil || !grp.Leading() || (last.to == want && time.Since(last.at) < 10*time.Second) {
			continue // not ours, or the same hand-over was asked lately
		}
		match, ok := grp.raft.MatchIndexes()[raft.ServerID(want)]
		if !ok || grp.lastContact(want) > 0 || match+64 < grp.raft.LastIndex() {
			continue // down, or behind: it would only stall the group
		}
		n.parts.transfers[g.ID] = transfer{to: want, at: time.Now()}
		n.logger.Info("handing a group's leadership to its preferred leader", "group", g.ID, "to", want)
		if err := grp.TransferLeadership(want); err != nil {
			n.logger.Warn("leadership transfer failed", "group", g.ID, "to", want, "err", err)
		}
	}
}

// preferredLeader is the first voter the map gives group id, the leader
// balance hands it to; "" before the cluster is partitioned.
func (n *Node) preferredLeader(id uint16) string {
	if n.parts == nil {
		return ""
	}
	for _, g := range n.parts.meta.fsm.current().Groups() {
		if g.ID == id && len(g.Voters) > 0 {
			return g.Voters[0]
		}
	}
	return ""
}

// CreateGroups partitions the cluster into count groups (see above). The
// cluster must hold no keys; the caller (the server's command) checks.
func (n *Node) CreateGroups(count int) error {
	if n.parts == nil {
		return errors.New("replication: this node has no Raft port to run the cluster map on")
	}
	if m := n.parts.meta.fsm.current(); len(m.Groups()) > 0 {
		return errors.New("the cluster is partitioned already")
	}
	members := n.main.Members()
	for _, mb := range members {
		if mb.Addr == "" {
			return fmt.Errorf("node %s has no client address in the group's log yet; retry", mb.ID)
		}
	}
	if count < 1 || count > slotmap.NumSlots {
		return fmt.Errorf("%d groups: want 1..%d", count, slotmap.NumSlots)
	}
	var ops []slotmap.Op
	for _, mb := range members {
		ops = append(ops, slotmap.Op{Kind: slotmap.OpAddNode, Node: slotmap.Node{ID: mb.ID, Addr: mb.Addr, BusAddr: mb.BusAddr}})
	}
	for g := 1; g <= count; g++ {
		ops = append(ops, slotmap.Op{Kind: slotmap.OpCreateGroup, Group: uint16(g), Voters: placeVoters(members, g)})
	}
	for g := 1; g <= count; g++ {
		first, last := (g-1)*slotmap.NumSlots/count, g*slotmap.NumSlots/count-1
		ops = append(ops, slotmap.Op{Kind: slotmap.OpAssignSlots, Group: uint16(g), Ranges: []slotmap.Range{{First: first, Last: last}}})
	}
	for _, op := range ops {
		if err := n.parts.meta.proposeAnywhere(n.parts.forward, op, 10*time.Second); err != nil {
			return fmt.Errorf("%s: %w", op.Kind, err)
		}
	}
	return nil
}

// placeVoters are group g's voters: nodes g-1, g, g+1 of members (by ID,
// wrapping), the first its preferred leader; group 1, the main group,
// has every node.
func placeVoters(members []server.ClusterMember, g int) []string {
	k := len(members)
	size := min(3, k)
	if g == int(mainGroup) {
		size = k
	}
	out := make([]string, 0, size)
	for j := range size {
		out = append(out, members[(g-1+j)%k].ID)
	}
	return out
}

// mapGroup is a group this node does not host, as its map describes it
// (server.Cluster, for redirects and CLUSTER SLOTS): its voters and the
// leader it last recorded.
type mapGroup struct {
	n  *Node
	m  *slotmap.Map
	id uint16
}

func (g mapGroup) Self() server.ClusterMember { return g.n.self }

func (g mapGroup) Members() []server.ClusterMember {
	leader, _ := g.m.Leader(g.id)
	for _, grp := range g.m.Groups() {
		if grp.ID == g.id {
			out := mapMembers(g.m, grp.Voters)
			for i := range out {
				out[i].Leader = out[i].ID == leader
			}
			return out
		}
	}
	return nil
}

func (g mapGroup) Status() server.ClusterStatus {
	leader, term := g.m.Leader(g.id)
	return server.ClusterStatus{Role: "follower", Term: term, LeaderID: leader}
}

var errNotHosted = errors.New("replication: this node holds no voter of the group")

func (g mapGroup) Leading() bool                      { return false }
func (g mapGroup) Propose([]byte) func() error        { return func() error { return errNotHosted } }
func (g mapGroup) VerifyLeader() error                { return errNotHosted }
func (g mapGroup) Bootstrap() error                   { return errNotHosted }
func (g mapGroup) AddNode(server.ClusterMember) error { return errNotHosted }
func (g mapGroup) RemoveNode(string) error            { return errNotHosted }
func (g mapGroup) Replicas(uint64) int                { return 0 }
func (g mapGroup) Durable(uint64) bool                { return false }
