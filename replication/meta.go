package replication

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redstream/redstream/replication/slotmap"
)

// The metadata group holds the cluster map (package slotmap): the nodes,
// the data groups and their voters, which group owns each hash slot and
// which slots are moving. It is a Raft group of its own, group 0 on every
// node's Mux, so the map is as consistent as the data it routes: a change
// is an entry of its log, applied in the same order on every voter, and a
// node that answers CLUSTER SLOTS from its copy shows a map some majority
// agreed on (possibly an older one, as a Redis Cluster node may; clients
// follow MOVED to the newer).
//
// Its entries are slotmap ops (Op.Encode); its snapshot is the encoded
// map. An op the map refuses (a slot already owned, a voter not known)
// changes nothing on any voter and its error is the proposer's answer.
// An entry that does not decode cannot come from this version: every
// voter logs it and skips it, so the copies stay equal.

// metaGroupID is the metadata group's number on the Mux.
const metaGroupID uint16 = 0

// metaFSM applies the metadata group's entries to its map.
type metaFSM struct {
	logger   *slog.Logger
	onChange func() // if set, hears of each applied op and restore (quickly)
	mu       sync.RWMutex
	m        *slotmap.Map
}

func newMetaFSM(logger *slog.Logger, onChange func()) *metaFSM {
	return &metaFSM{logger: logger, onChange: onChange, m: &slotmap.Map{}}
}

func (f *metaFSM) changed() {
	if f.onChange != nil {
		f.onChange()
	}
}

// Apply applies one op (raft.FSM); the op's refusal, if any, is the
// response the proposer reads.
func (f *metaFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	op, err := slotmap.DecodeOp(l.Data)
	if err != nil {
		f.logger.Error("skipped a cluster map entry this version cannot read", "index", l.Index, "err", err)
		return err
	}
	f.mu.Lock()
	err = f.m.Apply(op)
	f.mu.Unlock()
	if err == nil {
		f.changed()
		return nil
	}
	return err
}

// current returns a copy of the map, safe to read while entries apply.
func (f *metaFSM) current() *slotmap.Map {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.m.Clone()
}

// Snapshot encodes the map (raft.FSM); it is small, so the copy is taken
// at once.
func (f *metaFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return metaSnapshot(f.m.Encode()), nil
}

// Restore replaces the map with a snapshot's (raft.FSM).
func (f *metaFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	m, err := slotmap.DecodeMap(b)
	if err != nil {
		return fmt.Errorf("replication: restoring the cluster map: %w", err)
	}
	f.mu.Lock()
	f.m = m
	f.mu.Unlock()
	f.changed()
	return nil
}

type metaSnapshot []byte

func (s metaSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s metaSnapshot) Release() {}

// metaGroup is this node's voter of the metadata group: a Group whose
// state machine is a metaFSM.
type metaGroup struct {
	*Group
	fsm *metaFSM
}

// openMetaGroup opens this node's voter of the metadata group, under
// Dir/raft/groups/0 like any other group; onChange, if set, hears of
// every change of its map.
func (n *Node) openMetaGroup(onChange func()) (*metaGroup, error) {
	f := newMetaFSM(n.logger.With("group", metaGroupID), onChange)
	g, err := n.openGroup(metaGroupID, f, func(g *Group) { g.commitTimeout = metaCommitTimeout })
	if err != nil {
		return nil, err
	}
	return &metaGroup{Group: g, fsm: f}, nil
}

// metaCommitTimeout is how often the metadata group's idle leader tells
// followers its commit index: the map changes rarely, so every 500 ms
// instead of the data groups' 50 saves every node the idle traffic; a
// change reaches the followers at once all the same (propose's Barrier).
var metaCommitTimeout = 500 * time.Millisecond

// forwardMetaOp is the forwarded request that proposes a cluster map op
// on the metadata group's leader (forward.go).
const forwardMetaOp byte = 1

// errNoMetaLeader is the answer when no metadata leader took an op in
// time: nothing was proposed.
var errNoMetaLeader = errors.New("replication: the cluster map has no leader to take the change; retry")

// errMapRefused wraps the map's refusal of a committed op.
var errMapRefused = errors.New("cluster map")

// propose commits op and returns the map's answer: nil, or why it was
// refused (wrapping errMapRefused), or the Raft error when the op was
// not committed in time or this node does not lead.
func (g *metaGroup) propose(op slotmap.Op, timeout time.Duration) error {
	b, err := op.Encode()
	if err != nil {
		return fmt.Errorf("%w: %w", errMapRefused, err)
	}
	resp, err := g.Propose(b, timeout)
	if err != nil {
		return err
	}
	if err, _ := resp.(error); err != nil {
		return fmt.Errorf("%w: %w", errMapRefused, err)
	}
	// Followers learn that an entry is committed from the next entry the
	// leader sends, which an idle metadata group sends only every 500 ms
	// or more (its commitTimeout): a Barrier is that next entry at once,
	// so every node has the change within a round trip (a finished move's
	// slots stop answering TRYAGAIN everywhere).
	g.raft.Barrier(0)
	return nil
}

// handleForwarded proposes an op another node forwarded, if this node
// leads the metadata group; raft's not-leader error tells the sender to
// look again.
func (g *metaGroup) handleForwarded(payload []byte) ([]byte, error) {
	op, err := slotmap.DecodeOp(payload)
	if err != nil {
		return nil, err
	}
	return nil, g.propose(op, forwardTimeout)
}

// forwardTimeout bounds one forwarded proposal.
const forwardTimeout = 10 * time.Second

// proposeAnywhere commits op through the metadata group's leader, here or
// on the node it forwards to, and returns the map's answer. It retries
// only while no leader has taken the op (none known, or the one asked
// does not lead): a proposal whose outcome is unknown (leadership lost
// after it was made) is returned as is, since an op applied twice is not
// the same as once.
func (g *metaGroup) proposeAnywhere(stream *GroupStream, op slotmap.Op, timeout time.Duration) error {
	payload, err := op.Encode()
	if err != nil {
		return fmt.Errorf("%w: %w", errMapRefused, err)
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if g.raft.State() == raft.Leader {
			err = g.propose(op, time.Until(deadline))
		} else if addr, _ := g.raft.LeaderWithID(); addr != "" {
			_, err = forward(stream, addr, forwardMetaOp, payload, time.Until(deadline))
		} else {
			err = raft.ErrNotLeader
		}
		if !errors.Is(err, raft.ErrNotLeader) {
			return err
		}
		time.Sleep(20 * time.Millisecond) // an election is under way
	}
	return errNoMetaLeader
}
