package server

import (
	"errors"
	"fmt"
)

// Moving a slot from group A to group B (replication/PARTITIONS.md §5;
// the mover is replication's, this is the server's part). While the
// cluster map says the slot moves (MapSlots' targets):
//
//   - A's leader answers every command of the slot -TRYAGAIN (errSlotMoving),
//     reads included, and answers so the clients blocked on its keys:
//     cluster clients retry TRYAGAIN by themselves. Nothing new enters
//     A's log for the slot, so once the mover has waited for the entries
//     already in it (a Barrier), A's keys of the slot stay as they are.
//   - The mover copies each key (SlotKeys: its DUMP payload) to B, as a
//     client of B's leader that sends ASKING first: ASKING sends the next
//     command of a moving slot to its target group (dispatch), so the
//     RESTORE lands in B's database though A still owns the slot. Then it
//     deletes the copied keys from A through A's log (DeleteMoved), and
//     once A holds none it has the map give the slot to B.
//   - B serves nothing of the slot to other clients until the map gives
//     it the slot: its nodes route the slot to A as before.
//
// So a key is served by one group at every point: by A until the slot
// moves (its copy in B unseen), then by B (A's copy deleted before). A
// move that stops half-way (A's leader lost) is picked up by A's next
// leader from the map: it copies again what A still holds, with REPLACE.
//
// This trades the slot's availability during the move (TRYAGAIN for as
// long as copying its keys takes) for an argument that needs no state in
// A's own log: Redis's -ASK keeps serving the keys not yet moved, which
// would need A's voters to agree, entry by entry, on which keys are gone.

// errSlotMoving answers the commands of a slot being moved.
const errSlotMoving = "TRYAGAIN the slot is moving to another group; retry"

// errNotMovingHere answers a command after ASKING whose slot is not
// moving to a group this node hosts (yet: its map may be behind).
const errNotMovingHere = "TRYAGAIN ASKING for a slot not moving to a group of this node"

// moving reports whether slot is moving away from g, the group serving it
// here. Lock should be held.
func (s *Server) moving(slot int, g *clusterGroup) bool {
	return slot >= 0 && s.slotTarget != nil && s.slotTarget[slot] != nil && s.slotGroup[slot] == g
}

// movingTo is the hosted group slot is moving to, nil if none. Lock
// should be held.
func (s *Server) movingTo(slot int) *clusterGroup {
	if slot < 0 || s.slotTarget == nil {
		return nil
	}
	if t := s.slotTarget[slot]; t != nil && t.db >= 0 {
		return t
	}
	return nil
}

// MovingKey is a key of a slot being moved, as its new group restores it.
type MovingKey struct {
	Key      string
	Payload  []byte // DUMP's
	ExpireAt int64  // unix ms, 0: none (RESTORE ... ABSTTL)
}

// errNotLeading refuses a move's step on a node that does not lead the
// group.
var errNotLeading = errors.New("server: this node does not lead the group")

// SlotKeys returns up to count keys of slot in hosted group id's
// database, with their DUMP payloads, on the group's leader.
func (s *Server) SlotKeys(id uint16, slot, count int) ([]MovingKey, error) {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	g := s.groupByID(id)
	switch {
	case g == nil:
		return nil, fmt.Errorf("server: group %d is not hosted here", id)
	case !g.cl.Leading():
		return nil, errNotLeading
	case s.codec == nil:
		return nil, errors.New(errNoCodec)
	}
	db := s.shard.dbs[g.db]
	var out []MovingKey
	for _, key := range keysInSlot(db, slot, int64(count)) {
		o := db.keys[key]
		payload, err := s.codec.Dump(o.value, s.dumpOptions())
		if err != nil {
			return nil, fmt.Errorf("server: DUMP %s: %w", key, err)
		}
		out = append(out, MovingKey{Key: key, Payload: payload, ExpireAt: o.expireAt})
	}
	return out, nil
}

// DeleteMoved proposes to hosted group id, on its leader, the deletion of
// keys its mover copied to their new group.
func (s *Server) DeleteMoved(id uint16, keys []string) error {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	g := s.groupByID(id)
	switch {
	case g == nil:
		return fmt.Errorf("server: group %d is not hosted here", id)
	case !g.cl.Leading():
		return errNotLeading
	}
	for _, k := range keys {
		s.proposeOwn(g, []byte("DEL"), []byte(k))
	}
	return nil
}

// Settled reports whether hosted group id has no write waiting to be
// handed to its log: every write the server took for it so far is in the
// log, so a Barrier proposed now comes after all of them.
func (s *Server) Settled(id uint16) bool {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	g := s.groupByID(id)
	return g != nil && len(g.prop.recs) == 0 && len(g.prop.held) == 0 && !g.prop.sending
}
