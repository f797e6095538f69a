package server

import (
	"errors"
	"fmt"
	"strconv"
)

// Moving a slot from group A to group B (replication/PARTITIONS.md §5;
// the mover is replication's, this is the server's part). While the
// cluster map says the slot moves (MapSlots' targets), A's leader serves
// the keys it still holds and sends the clients of the others to B with
// -ASK, as a Redis node does for a MIGRATING slot:
//
//   - A command whose keys are all in A's database runs in A as before.
//   - A command none of whose keys is in A gets -ASK slot B's-leader
//     (askTarget). The client sends ASKING then the command to B's
//     leader, which runs it in B's database (dispatch) though the map
//     still gives the slot to A.
//   - A command with some keys in A and some not, or with a key the
//     mover is copying, gets -TRYAGAIN (cluster clients retry by
//     themselves), as Redis answers a multi-key command during a
//     migration. A read that waited for the leadership check, and a
//     watched EXEC that waited for the writes in flight, are decided
//     again when their turn comes: the mover may have taken their keys
//     meanwhile.
//   - The mover copies a batch of keys at a time: it marks them copying
//     (CopyKeys; their blocked clients get -TRYAGAIN), waits until every
//     write A took for them is applied, sends their DUMP payloads to B's
//     leader (ASKING + RESTORE), deletes them from A through A's log, and
//     waits for that too before it lets them go (EndCopying): from then
//     on they are not in A, so they are B's (-ASK).
//   - When A holds none of the slot's keys and has no write of it in
//     flight, the mover has the map give the slot to B.
//
// Why a key is never in both groups. A key gets into B only through
// ASKING: the mover's RESTORE of a key it then deletes from A, or a
// client's command after -ASK. So the danger is a write that creates in
// A a key that A has already sent a client to B for. A command runs in A
// only if all its keys are in A, so it creates none; what could create
// one is a write already proposed but not yet applied when A answers
// -ASK (a push behind a pop that emptied the list). Hence A answers -ASK
// only when, besides the key being absent:
//
//   - no write of the slot taken since the move began is in flight
//     (moveOut.inflight, counted in propose, uncounted in takeInflight);
//   - the mover has seen every write taken before this node knew of the
//     move applied (moveOut.settled: it waits for that, then says so);
//   - the node leads A (Leading: it has applied every entry committed
//     before its term, and a previous leader's entries are all in that),
//     and a majority confirms it after the decision (the answer is
//     queued behind the pass's leadership check, like a read, and taken
//     again under the lock then): a deposed leader's state may miss keys
//     its successor created.
//
// Every voter of A applies the same log in the same order, so what the
// leader decided holds on all of them. The mover runs on A's leader of
// the moment: a new leader settles again before it answers -ASK, and
// copies again (RESTORE ... REPLACE) what A still holds.
//
// A transaction (EXEC) of a moving slot runs in A when every key of
// every command of it is there (its writes are counted in flight like any
// other), gets -ASK when none is (decided as a command's), and -TRYAGAIN
// otherwise. A client replays it after ASKING as a whole: sent before
// MULTI, ASKING holds to EXEC, and the transaction runs in B.

// errSlotMoving answers a command of a moving slot the source group can
// neither serve nor send on yet.
const errSlotMoving = "TRYAGAIN the slot is moving to another group and this key's place is being decided; retry"

// errNotMovingHere answers a command after ASKING whose slot is not
// moving to a group this node hosts (yet: its map may be behind).
const errNotMovingHere = "TRYAGAIN ASKING for a slot not moving to a group of this node"

// moveOut is a hosted group's share of moving slots away, kept by its
// leader (guarded by shard.mu).
type moveOut struct {
	active   bool                // some slot moves away from the group
	inflight map[int]int         // writes proposed and not yet applied or failed, by moving slot
	settled  map[int]bool        // moving slots whose writes taken before the move are applied
	copying  map[string]struct{} // keys the mover is copying
}

// moveVerdict is what the source group's leader does with a command of a
// moving slot.
type moveVerdict int

const (
	serveHere moveVerdict = iota // every key is in the source: run it there
	askTarget                    // no key is, nor can be: -ASK to the target
	tryAgain                     // not decided yet: -TRYAGAIN
)

// moving reports whether slot is moving away from g, the group serving it
// here. Lock should be held.
func (s *Server) moving(slot int, g *clusterGroup) bool {
	return slot >= 0 && g.out.active && s.slotTarget[slot] != nil && s.slotGroup[slot] == g
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

// verdict decides a command of argv's keys, in slot, which moves away
// from g, led here; db is the client's database in g. Lock should be
// held.
func (s *Server) verdict(g *clusterGroup, slot int, cmd *Command, argv [][]byte, db *DB) moveVerdict {
	var k keyPlaces
	k.count(g, cmd, argv, db)
	return k.verdict(g, slot)
}

// keyPlaces counts where the keys of one or more commands are: in the
// source's database or not, and whether one is being copied.
type keyPlaces struct {
	here, away int
	copying    bool
}

func (k *keyPlaces) count(g *clusterGroup, cmd *Command, argv [][]byte, db *DB) {
	cmd.eachKey(argv, func(i int) bool {
		switch _, copying := g.out.copying[string(argv[i])]; {
		case copying:
			k.copying = true
		case db.keys[string(argv[i])] != nil:
			k.here++
		default:
			k.away++
		}
		return true
	})
}

// verdict is what the keys counted say, for slot moving away from g.
func (k *keyPlaces) verdict(g *clusterGroup, slot int) moveVerdict {
	switch {
	case k.copying:
		return tryAgain
	case k.away == 0:
		return serveHere
	case k.here > 0 || g.out.inflight[slot] > 0 || !g.out.settled[slot]:
		return tryAgain
	}
	return askTarget
}

// ask is the -ASK error that sends a client to the leader of the group
// slot is moving to; -TRYAGAIN if that group has no leader known here.
// Lock should be held.
func (s *Server) ask(slot int) string {
	if t := s.slotTarget[slot]; t != nil {
		if addr := leaderAddr(t); addr != "" {
			return "ASK " + strconv.Itoa(slot) + " " + addr
		}
	}
	return errSlotMoving
}

// countMoving counts a write of argv proposed to g while one of g's
// slots moves away, if argv's keys are in such a slot, and marks the
// proposal o so that takeInflight uncounts it. Lock should be held.
func (s *Server) countMoving(g *clusterGroup, argv [][]byte, o *proposal) {
	if !g.out.active {
		return
	}
	cmd, _ := s.lookupCommand(argv)
	if cmd == nil {
		return
	}
	if slot, ok := commandSlot(cmd, argv, -1); ok && s.moving(slot, g) {
		if g.out.inflight == nil {
			g.out.inflight = map[int]int{}
		}
		g.out.inflight[slot]++
		o.movingSlot = int32(slot) + 1
	}
}

// txVerdict decides the transaction c queued, in a slot moving away
// from g, led here, as one command of all its commands' keys. Lock should
// be held.
func (s *Server) txVerdict(g *clusterGroup, c *Client) moveVerdict {
	db := s.shard.dbs[g.db+c.db]
	var k keyPlaces
	for _, q := range c.multi.cmds {
		k.count(g, q.cmd, q.argv, db)
	}
	return k.verdict(g, c.multi.slot-1)
}

// readServedHere reports whether a read of g (argv, or the transaction of
// reads c queued for EXEC) that waited for the leadership check may still
// run here: a move may have copied its keys away meanwhile. Lock should
// be held.
func (s *Server) readServedHere(g *clusterGroup, c *Client, argv [][]byte) bool {
	if !g.out.active {
		return true
	}
	if c.multi != nil {
		return !s.moving(c.multi.slot-1, g) || s.txVerdict(g, c) == serveHere
	}
	cmd, _ := s.lookupCommand(argv)
	if cmd == nil {
		return true
	}
	slot, ok := commandSlot(cmd, argv, -1)
	return !ok || !s.moving(slot, g) || s.verdict(g, slot, cmd, argv, s.shard.dbs[g.db+c.db]) == serveHere
}

// countMovingTx counts the records of a transaction proposed to g, as
// countMoving counts one write. Lock should be held.
func (s *Server) countMovingTx(g *clusterGroup, recs []Record, owners []proposal) {
	for i := range owners {
		s.countMoving(g, recs[i].Argv, &owners[i])
	}
}

// uncountMoving ends the count of proposals that left g's flight.
func (g *clusterGroup) uncountMoving(owners []proposal) {
	for _, o := range owners {
		if o.movingSlot == 0 {
			continue
		}
		slot := int(o.movingSlot) - 1
		if n := g.out.inflight[slot] - 1; n > 0 {
			g.out.inflight[slot] = n
		} else {
			delete(g.out.inflight, slot)
		}
	}
}

// noteMoves brings each hosted group's moveOut up to the map: which of
// its slots move away, forgetting the slots that no longer do. Lock
// should be held.
func (s *Server) noteMoves() {
	for _, g := range s.groups {
		g.out.active = false
		for slot, h := range s.slotGroup {
			if h == g && s.slotTarget[slot] != nil {
				g.out.active = true
				break
			}
		}
		for slot := range g.out.settled {
			if !s.moving(slot, g) {
				delete(g.out.settled, slot)
			}
		}
	}
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

// leadGroup is hosted group id, if this node leads it. Lock should be
// held.
func (s *Server) leadGroup(id uint16) (*clusterGroup, error) {
	g := s.groupByID(id)
	switch {
	case g == nil:
		return nil, fmt.Errorf("server: group %d is not hosted here", id)
	case !g.cl.Leading():
		return nil, errNotLeading
	}
	return g, nil
}

// MoveSettled tells the leader of hosted group id that every write it
// took for slots first..last before it knew they move is applied (the
// mover waited for it): from now on it may send the clients of keys it
// does not hold to the target group.
func (s *Server) MoveSettled(id uint16, first, last int) error {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	g, err := s.leadGroup(id)
	if err != nil {
		return err
	}
	for slot := first; slot <= last; slot++ {
		if !s.moving(slot, g) {
			return fmt.Errorf("server: slot %d is not moving away from group %d here", slot, id)
		}
		if g.out.settled == nil {
			g.out.settled = map[int]bool{}
		}
		g.out.settled[slot] = true
	}
	return nil
}

// CopyKeys marks up to count keys of slot, in hosted group id's database
// on its leader, as being copied: their commands answer -TRYAGAIN, and so
// do the clients blocked on them, until EndCopying. With no key left, it
// reports whether the slot is empty for good: no write of it in flight
// could bring one back (the mover may then give it away).
func (s *Server) CopyKeys(id uint16, slot, count int) (keys []string, empty bool, err error) {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	g, err := s.leadGroup(id)
	if err != nil {
		return nil, false, err
	}
	if !s.moving(slot, g) {
		return nil, false, fmt.Errorf("server: slot %d is not moving away from group %d here", slot, id)
	}
	keys = keysInSlot(s.shard.dbs[g.db], slot, int64(count))
	if len(keys) == 0 {
		return nil, g.out.inflight[slot] == 0 && g.out.settled[slot], nil
	}
	if g.out.copying == nil {
		g.out.copying = map[string]struct{}{}
	}
	for _, k := range keys {
		g.out.copying[k] = struct{}{}
	}
	for _, c := range s.clients {
		b := c.blocked
		if b == nil || b.inflight || b.db != g.db+c.db {
			continue
		}
		for _, k := range b.keys {
			if _, ok := g.out.copying[k]; ok {
				s.unblock(c)
				c.out.Error(errSlotMoving)
				c.answered()
				break
			}
		}
	}
	return keys, false, nil
}

// EndCopying lets keys go that CopyKeys marked in hosted group id: the
// mover has deleted them, or stopped.
func (s *Server) EndCopying(id uint16, keys []string) {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	if g := s.groupByID(id); g != nil {
		for _, k := range keys {
			delete(g.out.copying, k)
		}
	}
}

// DumpKeys returns the DUMP payloads of those of keys that hosted group
// id's database holds, on the group's leader.
func (s *Server) DumpKeys(id uint16, keys []string) ([]MovingKey, error) {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	g, err := s.leadGroup(id)
	if err != nil {
		return nil, err
	}
	if s.codec == nil {
		return nil, errors.New(errNoCodec)
	}
	db := s.shard.dbs[g.db]
	var out []MovingKey
	for _, key := range keys {
		o := db.keys[key]
		if o == nil {
			continue
		}
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
	g, err := s.leadGroup(id)
	if err != nil {
		return err
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

// askConfirmed answers, once a majority has confirmed that this node
// leads g, a command of slot that was to get -ASK: the verdict is taken
// again, as the keyspace may have changed meanwhile. Lock should be held.
func (s *Server) askConfirmed(g *clusterGroup, c *Client, slot int, argv [][]byte) string {
	msg := errSlotMoving
	still := g.cl.Leading() && s.moving(slot, g)
	if c.multi != nil { // EXEC: the transaction is answered, and ends
		if still && s.txVerdict(g, c) == askTarget {
			msg = s.ask(slot)
		}
		c.multi = nil
		s.unwatchAll(c)
	} else if cmd, _ := s.lookupCommand(argv); cmd != nil && still &&
		s.verdict(g, slot, cmd, argv, s.shard.dbs[g.db+c.db]) == askTarget {
		msg = s.ask(slot)
	}
	s.stats.countError(msg)
	return msg
}
