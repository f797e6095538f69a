package replication

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redstream/redstream/replication/slotmap"
	"github.com/redstream/redstream/server"
)

// Moving slots between groups: the mover. server/moves.go has the
// argument; in short, the map says the slots move (BeginMove); the
// source group's leader keeps serving the keys it holds and sends the
// clients of the others to the target (-ASK) once the mover has seen the
// writes it took before the move applied (MoveSettled). The mover then
// copies the keys a batch at a time: it marks them (CopyKeys: -TRYAGAIN
// for them meanwhile), waits until every write taken for them is
// applied, restores them on the target group's leader (ASKING, RESTORE
// ... REPLACE ABSTTL: answered once the target group has committed it),
// deletes them from the source through the source's log, waits for that
// too, and lets them go (EndCopying): from then on they are the
// target's. When the source holds none of a slot's keys and none can
// come back, it has the map give the slots to the target (FinishMove). A
// mover that stops (its node lost the source's leadership, the target
// did not answer) is started again by the source's leader of the moment,
// from the map.

// moveBatch is how many keys a mover copies at a time: they answer
// -TRYAGAIN until the batch is done. 32 keys take about 20 ms here,
// inside the retries go-redis makes by default (3, from 8 ms up), and
// move about as fast as 256 did (3,000 keys in 2.1 s; 256: 1.9-2.7 s),
// whose 160 ms window clients saw as errors.
const moveBatch = 32

// moveRange is a run of slots moving from one group to another.
type moveRange struct {
	slotmap.Range
	from, to uint16
}

// movingRanges are the map's moves, as maximal runs.
func movingRanges(m *slotmap.Map) []moveRange {
	var out []moveRange
	for s := 0; s < slotmap.NumSlots; s++ {
		from, to, ok := m.Moving(s)
		if !ok {
			continue
		}
		if k := len(out) - 1; k >= 0 && out[k].Last == s-1 && out[k].from == from && out[k].to == to {
			out[k].Last = s
			continue
		}
		out = append(out, moveRange{slotmap.Range{First: s, Last: s}, from, to})
	}
	return out
}

// runMovers starts a mover for each move whose source this node leads
// and that has none running.
func (n *Node) runMovers(m *slotmap.Map) {
	p := n.parts
	for _, mv := range movingRanges(m) {
		grp := n.dataOrMain(mv.from)
		if grp == nil || !grp.Leading() {
			continue
		}
		startOnce(p, p.movers, mv.First, func() {
			if err := n.move(grp, mv); err != nil {
				n.logger.Warn("moving slots stopped; the source's leader starts again", "slots", fmt.Sprintf("%d-%d", mv.First, mv.Last),
					"from", mv.from, "to", mv.to, "err", err)
			}
		})
	}
}

// dataOrMain is the group id this node hosts (the main group for 1).
func (n *Node) dataOrMain(id uint16) *Group {
	if id == mainGroup {
		return n.main
	}
	return n.Group(id)
}

// move copies the slots of mv from its source group, led here by grp, to
// its target, and has the map give them to the target.
func (n *Node) move(grp *Group, mv moveRange) error {
	if _, _, ok := n.parts.meta.fsm.current().Moving(mv.First); !ok {
		return nil // finished meanwhile: runMovers had an older map
	}
	n.logger.Info("moving slots", "slots", fmt.Sprintf("%d-%d", mv.First, mv.Last), "from", mv.from, "to", mv.to)
	if err := n.settle(grp, mv.from); err != nil {
		return err
	}
	if err := n.srv.MoveSettled(mv.from, mv.First, mv.Last); err != nil {
		return err
	}
	var target *redis.Client
	defer func() {
		if target != nil {
			target.Close()
		}
	}()
	progress := moveProgress{mv: mv, started: time.Now(), logged: time.Now()}
	for s := mv.First; s <= mv.Last; s++ {
		if err := n.moveSlot(grp, mv, s, &target, &progress); err != nil {
			return err
		}
	}
	op := slotmap.Op{Kind: slotmap.OpFinishMove, Ranges: []slotmap.Range{mv.Range}}
	if err := n.parts.meta.proposeAnywhere(n.parts.forward, op, 10*time.Second); err != nil {
		return fmt.Errorf("finishing the move in the map: %w", err)
	}
	n.logger.Info("moved slots", "slots", fmt.Sprintf("%d-%d", mv.First, mv.Last), "from", mv.from, "to", mv.to, "keys", progress.keys)
	return nil
}

// moveProgressEvery is how often a move logs how far it is.
var moveProgressEvery = 10 * time.Second

// moveProgress counts a move's keys and logs them now and then: a slot
// range of millions of keys moves for minutes.
type moveProgress struct {
	mv              moveRange
	started, logged time.Time
	keys            int
}

func (p *moveProgress) copied(n *Node, slot, keys int) {
	p.keys += keys
	if now := time.Now(); now.Sub(p.logged) >= moveProgressEvery {
		p.logged = now
		n.logger.Info("moving slots: progress", "slots", fmt.Sprintf("%d-%d", p.mv.First, p.mv.Last), "at_slot", slot,
			"keys", p.keys, "keys_per_sec", int(float64(p.keys)/now.Sub(p.started).Seconds()))
	}
}

// moveSlot copies the keys of slot, one of mv's, until the source
// group, led here by grp, holds none and can get none back.
func (n *Node) moveSlot(grp *Group, mv moveRange, slot int, target **redis.Client, progress *moveProgress) error {
	for {
		select {
		case <-n.parts.done:
			return errors.New("the node is closing")
		default:
		}
		keys, empty, err := n.srv.CopyKeys(mv.from, slot, moveBatch)
		switch {
		case err != nil:
			return err
		case empty:
			return nil
		case len(keys) == 0:
			// A write taken while a key was there is still in flight: it
			// may bring one back.
			err = n.settle(grp, mv.from)
		default:
			if err = n.copyKeys(grp, mv, keys, target); err == nil {
				progress.copied(n, slot, len(keys))
			}
		}
		if err != nil {
			return err
		}
	}
}

// copyKeys copies keys, which CopyKeys marked, from mv's source group,
// led here by grp, to the target's leader (target: the client of the
// last one), deletes them from the source, and lets them go.
func (n *Node) copyKeys(grp *Group, mv moveRange, keys []string, target **redis.Client) error {
	defer n.srv.EndCopying(mv.from, keys)
	if err := n.settle(grp, mv.from); err != nil {
		return err
	}
	payloads, err := n.srv.DumpKeys(mv.from, keys)
	if err != nil {
		return err
	}
	addr, err := n.leaderAddr(mv.to)
	if err != nil {
		return err
	}
	if *target == nil || (*target).Options().Addr != addr {
		if *target != nil {
			(*target).Close()
		}
		*target = redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	}
	if err := restoreAsking(*target, payloads); err != nil {
		return err
	}
	if err := n.srv.DeleteMoved(mv.from, keys); err != nil {
		return err
	}
	return n.settle(grp, mv.from)
}

// settle waits until every write the server took for group id is
// applied here: it is in the log (Settled), and a Barrier behind it has
// been applied. grp must stay the leader throughout.
func (n *Node) settle(grp *Group, id uint16) error {
	deadline := time.Now().Add(10 * time.Second)
	for !n.srv.Settled(id) {
		select {
		case <-n.parts.done:
			return errors.New("the node is closing")
		default:
		}
		if time.Now().After(deadline) || !grp.Leading() {
			return errors.New("the source group's writes did not settle")
		}
		time.Sleep(time.Millisecond) // the event loop hands its pass's entry over: no notification
	}
	if err := grp.raft.Barrier(10 * time.Second).Error(); err != nil {
		return err
	}
	if !grp.Leading() {
		return errNotLeading
	}
	return nil
}

var errNotLeading = errors.New("this node no longer leads the source group")

// leaderAddr is the client address of group id's leader, as the map
// records it.
func (n *Node) leaderAddr(id uint16) (string, error) {
	m := n.parts.meta.fsm.current()
	leader, _ := m.Leader(id)
	for _, nd := range m.Nodes() {
		if nd.ID == leader && leader != "" {
			return nd.Addr, nil
		}
	}
	return "", fmt.Errorf("group %d has no leader in the map", id)
}

// restoreAsking restores keys on the target group's leader, each after
// ASKING, pipelined; it returns once every RESTORE is answered, that is,
// committed by the target group.
func restoreAsking(target *redis.Client, keys []server.MovingKey) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := target.Conn()
	defer conn.Close()
	cmds, err := conn.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Do(ctx, "ASKING")
			p.Do(ctx, "RESTORE", k.Key, k.ExpireAt, k.Payload, "REPLACE", "ABSTTL")
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return fmt.Errorf("%v: %w", c.Args()[:2], err)
		}
	}
	return nil
}

// goingTo reports whether every slot of first..last is group to's in m,
// or moving to it: a MoveSlots asked again (a retry after a timeout, a
// second operator) then waits for the move under way.
func goingTo(m *slotmap.Map, first, last int, to uint16) bool {
	for s := first; s <= last; s++ {
		if _, target, moving := m.Moving(s); m.Owner(s) != to && (!moving || target != to) {
			return false
		}
	}
	return true
}

// MoveSlots moves slots first..last, all owned by one group and none
// moving, to group to: it has the map begin the move, and waits (up to
// timeout) until the map gives them to the target. Asked again while the
// slots move to that group, or once they are its, it waits, or returns
// at once.
func (n *Node) MoveSlots(first, last int, to uint16, timeout time.Duration) error {
	if n.parts == nil {
		return errors.New("replication: this node has no Raft port to run the cluster map on")
	}
	op := slotmap.Op{Kind: slotmap.OpBeginMove, Ranges: []slotmap.Range{{First: first, Last: last}}, Group: to}
	if err := n.parts.meta.proposeAnywhere(n.parts.forward, op, timeout); err != nil && !goingTo(n.parts.meta.fsm.current(), first, last, to) {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		m := n.parts.meta.fsm.current()
		done := true
		for s := first; s <= last && done; s++ {
			done = m.Owner(s) == to
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the slots are still moving after %s: the move goes on", timeout)
		}
		time.Sleep(20 * time.Millisecond) // the map's changes are not waited on: poll
	}
}
