package server

import (
	"cmp"
	"fmt"
	"slices"
)

// A node hosts voters of several Raft groups (replication/PARTITIONS.md
// §1, §3). Each hosted group's state is one database of the node's shard,
// and each of the 16384 slots belongs to one group. A command runs
// against the database of its keys' slot's group, is proposed to that
// group, and is read only once that group's leadership is confirmed:
//
//	slot ──slotGroup──▶ clusterGroup{id, cl: its log, db: its database, prop: its pass's proposals}
//	                         │                         │
//	   Propose / VerifyLeader ▼             records of  ▼ database 0 land in database db (ApplyEntryAt)
//
// Clients in cluster mode see database 0 only (SELECT is refused), so a
// client's records always carry database 0 and the group's database is
// where its log applies them.
//
// Why not one keyspace shared by the groups on a node: during a slot
// move a key is copied into the target group before the source deletes
// it (replication/PARTITIONS.md §5); a node voting in both groups would
// hold the key twice in one keyspace, and the source's delete would
// remove the target's copy. And a group's snapshot and restore must cover
// exactly its own state (replication's fsm: FreezeDBs, RestoreDBs of its
// database).
//
// Why not one shard (lock and event loop) per group: a node applies a few
// µs of work per write, so its one lock is not what limits it, and
// keeping one keeps the event loop and the per-database machinery (SCAN
// order, the expire cycle, blocking queues, snapshot walks) as they are.
//
// With SetCluster alone the node hosts group 1, database 0, every slot:
// the one-group cluster.

// clusterGroup is one Raft group this node hosts.
type clusterGroup struct {
	id   uint16
	cl   Cluster
	db   int      // the database its state is (ApplyEntryAt's base)
	prop proposer // guarded by shard.mu
	out  moveOut  // its slots moving away (moves.go), guarded by shard.mu
}

// firstGroup is the group SetCluster installs: the one group of a
// one-group cluster, and where a write or transaction without keys goes
// (FLUSHDB and FLUSHALL alone go to every group this node leads:
// keyless.go).
const firstGroup uint16 = 1

// HostGroup makes this node hold group id's state in database db, with c
// its log. It owns no slot until AssignSlots gives it some. Call it
// before the group applies anything.
func (s *Server) HostGroup(id uint16, db int, c Cluster) error {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	if db < 0 || db >= len(s.shard.dbs) {
		return fmt.Errorf("server: group %d's database %d: only %d configured (databases)", id, db, len(s.shard.dbs))
	}
	for _, g := range s.groups {
		if g.id == id || g.db == db {
			return fmt.Errorf("server: group %d or database %d is hosted already", id, db)
		}
	}
	s.groups = append(s.groups, &clusterGroup{id: id, cl: c, db: db})
	return nil
}

// AssignSlots makes slots first..last (inclusive) group id's. The group
// must be hosted here.
func (s *Server) AssignSlots(first, last int, id uint16) error {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	g := s.groupByID(id)
	if g == nil {
		return fmt.Errorf("server: group %d is not hosted here", id)
	}
	if first < 0 || last >= numSlots || first > last {
		return fmt.Errorf("server: slots %d-%d: out of range", first, last)
	}
	for slot := first; slot <= last; slot++ {
		s.slotGroup[slot] = g
	}
	return nil
}

const numSlots = 16384

// MapSlots gives every slot to the group owners[slot] names, as the
// cluster map says (0: no group), and marks the slots moving to the group
// targets[slot] names (nil, or 0: not moving; moves.go). A hosted group's
// slots are served here; another group's are redirected to its leader,
// which remote describes (its Members, the leader flagged): nil, or a
// group it does not know, leaves the slot answering -CLUSTERDOWN. It
// replaces every earlier assignment at once.
func (s *Server) MapSlots(owners, targets []uint16, remote func(id uint16) Cluster) error {
	if len(owners) != numSlots || (targets != nil && len(targets) != numSlots) {
		return fmt.Errorf("server: %d slot owners and %d targets, want %d", len(owners), len(targets), numSlots)
	}
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	if s.slotRemote == nil {
		s.slotRemote = make([]*clusterGroup, numSlots)
		s.slotTarget = make([]*clusterGroup, numSlots)
	}
	others := map[uint16]*clusterGroup{}
	group := func(id uint16) (hosted, far *clusterGroup) {
		if id == 0 {
			return nil, nil
		}
		if g := s.groupByID(id); g != nil {
			return g, nil
		}
		r, seen := others[id]
		if !seen {
			if c := remoteCluster(remote, id); c != nil {
				r = &clusterGroup{id: id, cl: c, db: -1}
			}
			others[id] = r
		}
		return nil, r
	}
	s.remote = map[uint16]*clusterGroup{} // the groups that own slots here without being hosted
	for slot, id := range owners {
		s.slotGroup[slot], s.slotRemote[slot] = group(id)
		if r := s.slotRemote[slot]; r != nil {
			s.remote[id] = r
		}
		s.slotTarget[slot] = nil
		if targets != nil && targets[slot] != 0 {
			hosted, far := group(targets[slot])
			s.slotTarget[slot] = cmp.Or(hosted, far)
		}
	}
	s.noteMoves()
	s.redirectMovedWaiters()
	return nil
}

// redirectMovedWaiters answers each client blocked on a key whose slot
// now belongs to another group than the one whose database it waits in:
// -MOVED to the slot's group leader (this node, if it leads it: the
// client blocks again there), as Redis answers the clients blocked on a
// slot that moved away. While the slot moves, those blocked in the source
// on keys it still holds stay, and so do those blocked after ASKING in
// the target; the others get -TRYAGAIN (moves.go). Lock should be held.
func (s *Server) redirectMovedWaiters() {
	for _, c := range s.clients {
		b := c.blocked
		if b == nil || b.inflight || len(b.keys) == 0 {
			continue
		}
		slot := KeySlot([]byte(b.keys[0]))
		g := s.slotGroup[slot]
		if t := s.movingTo(slot); t != nil && t.db+c.db == b.db {
			continue // blocked after ASKING, in the group the slot moves to
		}
		moving := g != nil && s.moving(slot, g) &&
			!(g.cl.Leading() && s.verdict(g, slot, b.cmd, b.argv, s.shard.dbs[b.db]) == serveHere)
		if g != nil && g.db+c.db == b.db && !moving {
			continue
		}
		s.unblock(c)
		switch {
		case moving:
			c.out.Error(errSlotMoving)
		case g != nil:
			c.out.Error(s.redirect(g, slot))
		default:
			c.out.Error(s.slotRedirect(slot))
		}
		c.answered()
	}
}

func remoteCluster(remote func(uint16) Cluster, id uint16) Cluster {
	if remote == nil {
		return nil
	}
	return remote(id)
}

// errGroupDropped answers the clients blocked on keys of a group this
// node stops hosting.
const errGroupDropped = "TRYAGAIN this node no longer votes in the key's group; retry"

// DropGroup stops hosting group id, which no longer counts this node
// among its voters: its slots serve nothing here until MapSlots names
// them again, and its database is emptied (its state is the group's
// voters' now). Clients blocked on its keys are answered -TRYAGAIN.
func (s *Server) DropGroup(id uint16) error {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	g := s.groupByID(id)
	if g == nil || id == firstGroup {
		return fmt.Errorf("server: group %d is not a hosted data group", id)
	}
	s.groups = slices.DeleteFunc(s.groups, func(h *clusterGroup) bool { return h == g })
	for slot, h := range s.slotGroup {
		if h == g {
			s.slotGroup[slot] = nil
		}
	}
	for _, c := range s.clients {
		if b := c.blocked; b != nil && !b.inflight && b.db == g.db+c.db {
			s.unblock(c)
			c.out.Error(errGroupDropped)
			c.answered()
		}
	}
	s.flush(s.shard.dbs[g.db])
	return nil
}

// groupByID is the hosted group id, nil if none. Lock should be held.
func (s *Server) groupByID(id uint16) *clusterGroup {
	for _, g := range s.groups {
		if g.id == id {
			return g
		}
	}
	return nil
}

// groupOfDB is the hosted group whose state is database db, nil if none.
// Lock should be held.
func (s *Server) groupOfDB(db int) *clusterGroup {
	for _, g := range s.groups {
		if g.db == db {
			return g
		}
	}
	return nil
}

// groupOfSlot is the group that owns slot, or, for a command without
// keys (slot -1), the first group. nil: the slot's group is not hosted
// here. Lock should be held.
func (s *Server) groupOfSlot(slot int) *clusterGroup {
	if slot < 0 {
		return s.groupByID(firstGroup)
	}
	return s.slotGroup[slot]
}
