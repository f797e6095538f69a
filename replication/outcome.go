package replication

import (
	"fmt"
	"time"

	"github.com/redstream/redstream/server"
)

// What became of an entry whose leader stepped down.
//
// A leader that stops leading (a hand-over, an election it lost, a
// majority it cannot reach) fails every entry of its log not yet applied
// with raft.ErrLeadershipLost. The next leader commits some of them and
// replaces the others. Answering them all -UNKNOWN would be true but
// unhelpful, so the node, now a follower, learns each one's fate from
// the log the new leader commits.
//
// The entry, E, was appended at index i in term T. In Raft a committed
// entry never changes and keeps its index, terms never decrease along a
// log, and the state machine takes committed entries in index order,
// each once. Once this node's state machine is done with an entry at
// index j of term U (raft.FSMApplied: applied, or passed over for a
// barrier or a configuration):
//
//   - if j >= i, every committed entry up to j has been applied here. If
//     E was committed it was the entry at i, and its apply has answered
//     its clients (server.ApplyEntryAt knows it by this process's run ID
//     and the entry's sequence number), so the server finds nothing left
//     to fail;
//   - if U > T, no later index can hold an entry of the older term T
//     after the committed entry at j: if j < i, E can never be committed.
//
// Either way a client still waiting on E is told it was not applied (the
// server's -CLUSTERDOWN, which clients retry). A new leader commits a
// no-op and then a barrier (watchLeadership) at once, and the barrier
// reaches the state machine goroutine, so a node that hears the new
// leader settles its entries within a round trip.
//
// A snapshot restored meanwhile (a follower far behind) may hold E
// without the apply having answered for it: then, as when nothing
// settles E within settleWait, its outcome stays unknown.
func (g *Group) settle(index, term, restores uint64, lost error) error {
	deadline := g.settleDeadline()
	tick := time.NewTicker(5 * time.Millisecond) // a rare path: polling is simpler than a hook in the apply
	defer tick.Stop()
	for {
		// What FSMApplied says first: a restore counts itself before its
		// index is stored.
		j, u := g.raft.FSMApplied()
		if g.restores.Load() != restores {
			return lost
		}
		if j >= index || u > term {
			return fmt.Errorf("%w (the entry it was in, %d of term %d, was replaced by a newer leader)", server.ErrNotProposed, index, term)
		}
		if time.Now().After(deadline) {
			return lost
		}
		select {
		case <-tick.C:
		case <-g.done:
			return lost
		}
	}
}

// settleDeadline is when settle gives up. The entries in flight when
// leadership ended fail together but are settled one after another, in
// log order: they share one deadline rather than each waiting in turn.
func (g *Group) settleDeadline() time.Time {
	g.settleMu.Lock()
	defer g.settleMu.Unlock()
	if now := time.Now(); now.After(g.settleBy) {
		g.settleBy = now.Add(g.settleWait)
	}
	return g.settleBy
}
