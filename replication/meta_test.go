package replication

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redstream/redstream/replication/slotmap"
	"github.com/redstream/redstream/server"
)

func startMetaGroup(t *testing.T) []*memNode {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	return startFSMGroup(t, memTransports(3), func() raft.FSM { return newMetaFSM(logger, nil) })
}

// metaOf is the metadata group's voter on a node of startMetaGroup: a
// Group around the raft instance the test started, which is all that
// propose and proposeAnywhere use.
func metaOf(n *memNode) *metaGroup {
	return &metaGroup{Group: &Group{raft: n.raft}, fsm: n.machine.(*metaFSM)}
}

// mapNode is a cluster map node numbered i.
func mapNode(i int) slotmap.Node {
	return slotmap.Node{ID: strings.Repeat(fmt.Sprint(i), 40), Addr: fmt.Sprintf("127.0.0.1:%d", 7000+i), BusAddr: fmt.Sprintf("127.0.0.1:%d", 17000+i)}
}

// waitSameMap waits until every running node's map encodes as want's.
func waitSameMap(t *testing.T, nodes []*memNode, want *slotmap.Map) {
	t.Helper()
	for i, n := range nodes {
		waitFor(t, fmt.Sprintf("node %d's map at epoch %d", i, want.Epoch), func() bool {
			return bytes.Equal(metaOf(n).fsm.current().Encode(), want.Encode())
		})
	}
}

// The metadata group's voters apply the same ops in the same order, so
// their maps are equal; an op the map refuses changes no voter's map and
// is the proposer's error; after the leader goes, the others go on.
func TestMetaGroupAgreesOnTheMap(t *testing.T) {
	nodes := startMetaGroup(t)
	leader := metaOf(memLeader(t, nodes))
	var voters []string
	for i := 1; i <= 3; i++ {
		if err := leader.propose(slotmap.Op{Kind: slotmap.OpAddNode, Node: mapNode(i)}, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		voters = append(voters, mapNode(i).ID)
	}
	for _, op := range []slotmap.Op{
		{Kind: slotmap.OpCreateGroup, Group: 1, Voters: voters},
		{Kind: slotmap.OpAssignSlots, Group: 1, Ranges: []slotmap.Range{{First: 0, Last: slotmap.NumSlots - 1}}},
	} {
		if err := leader.propose(op, 5*time.Second); err != nil {
			t.Fatalf("%v: %v", op.Kind, err)
		}
	}
	want := leader.fsm.current()
	if want.Owner(0) != 1 || want.Owner(slotmap.NumSlots-1) != 1 || len(want.Nodes()) != 3 {
		t.Fatalf("the leader's map: %+v", want.Ranges())
	}
	waitSameMap(t, nodes, want)

	err := leader.propose(slotmap.Op{Kind: slotmap.OpAssignSlots, Group: 1, Ranges: []slotmap.Range{{First: 5, Last: 5}}}, 5*time.Second)
	if !errors.Is(err, errMapRefused) || !strings.Contains(err.Error(), "already owned") {
		t.Fatalf("assigning an owned slot again: %v", err)
	}
	// A later op reaches every node: the refused one changed nothing.
	if err := leader.propose(slotmap.Op{Kind: slotmap.OpCreateGroup, Group: 2, Voters: voters}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	want = leader.fsm.current()
	waitSameMap(t, nodes, want)

	if err := leader.raft.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	var rest []*memNode
	for _, n := range nodes {
		if n.raft != leader.raft {
			rest = append(rest, n)
		}
	}
	next := metaOf(memLeader(t, rest))
	move := slotmap.Op{Kind: slotmap.OpBeginMove, Group: 2, Ranges: []slotmap.Range{{First: 0, Last: 99}}}
	if err := next.propose(move, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	want = next.fsm.current()
	if from, to, ok := want.Moving(50); !ok || from != 1 || to != 2 {
		t.Fatalf("slot 50 after BeginMove: %d -> %d, %v", from, to, ok)
	}
	waitSameMap(t, rest, want)
}

// A snapshot restores the map it was taken from; a snapshot that is not
// a map is refused and leaves the map as it was.
func TestMetaSnapshotRestores(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := newMetaFSM(logger, nil)
	for i, op := range []slotmap.Op{
		{Kind: slotmap.OpAddNode, Node: mapNode(1)},
		{Kind: slotmap.OpCreateGroup, Group: 3, Voters: []string{mapNode(1).ID}},
		{Kind: slotmap.OpAssignSlots, Group: 3, Ranges: []slotmap.Range{{First: 100, Last: 200}}},
	} {
		b, err := op.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if err, _ := f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: b}).(error); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	g := newMetaFSM(logger, nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g.current().Encode(), f.current().Encode()) || g.current().Owner(150) != 3 {
		t.Fatalf("restored map differs: %+v", g.current().Ranges())
	}
	if err := g.Restore(io.NopCloser(strings.NewReader("not a map"))); err == nil {
		t.Fatal("a garbage snapshot was restored")
	}
	if g.current().Owner(150) != 3 {
		t.Fatal("a refused restore changed the map")
	}
}

// An entry this version cannot decode is skipped, the same way on every
// voter: the map does not change and the proposer gets the error.
func TestMetaSkipsUnreadableEntries(t *testing.T) {
	f := newMetaFSM(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	before := f.current().Encode()
	if err, _ := f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: []byte{0x7f, 1, 2}}).(error); err == nil {
		t.Fatal("an unreadable entry was applied")
	}
	if !bytes.Equal(f.current().Encode(), before) {
		t.Fatal("an unreadable entry changed the map")
	}
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { return nil }

// startMetaOnNodes bootstraps the metadata group every node runs on
// three nodes that form no main group, and returns each node's voter and
// forward stream.
func startMetaOnNodes(t *testing.T) ([]*metaGroup, []*GroupStream) {
	t.Helper()
	var nodes []*testNode
	var voters []server.ClusterMember
	for range 3 {
		n := startNode(t, t.TempDir(), freePort(t))
		nodes = append(nodes, n)
		voters = append(voters, n.node.Self())
	}
	var groups []*metaGroup
	var streams []*GroupStream
	for _, n := range nodes {
		g := n.node.parts.meta // every node runs one, not bootstrapped until its cluster is
		if err := g.Bootstrap(voters); err != nil {
			t.Fatal(err)
		}
		groups = append(groups, g)
		streams = append(streams, n.node.parts.forward)
	}
	return groups, streams
}

// metaLeader waits for one of groups to lead.
func metaLeader(t *testing.T, groups []*metaGroup) int {
	t.Helper()
	leader := -1
	waitFor(t, "a metadata leader", func() bool {
		for i, g := range groups {
			if g.Leading() {
				leader = i
				return true
			}
		}
		return false
	})
	return leader
}

// A map change asked of a node that does not lead the metadata group is
// forwarded to the one that does: the op commits everywhere, and a
// refusal comes back as the map's refusal.
func TestMetaOpsForwardToTheLeader(t *testing.T) {
	groups, streams := startMetaOnNodes(t)
	leader := metaLeader(t, groups)
	follower := (leader + 1) % len(groups)
	g := groups[follower]
	for i := 1; i <= 2; i++ {
		if err := g.proposeAnywhere(streams[follower], slotmap.Op{Kind: slotmap.OpAddNode, Node: mapNode(i)}, 10*time.Second); err != nil {
			t.Fatalf("AddNode %d from a follower: %v", i, err)
		}
	}
	want := groups[leader].fsm.current()
	if len(want.Nodes()) != 2 {
		t.Fatalf("the leader's map has %d nodes, want 2", len(want.Nodes()))
	}
	for i, m := range groups {
		waitFor(t, fmt.Sprintf("node %d's map at epoch %d", i, want.Epoch), func() bool {
			return bytes.Equal(m.fsm.current().Encode(), want.Encode())
		})
	}

	err := g.proposeAnywhere(streams[follower], slotmap.Op{Kind: slotmap.OpAddNode, Node: mapNode(1)}, 10*time.Second)
	if !errors.Is(err, errMapRefused) || strings.Count(err.Error(), "cluster map") != 1 {
		t.Fatalf("adding a known node again from a follower: %v, want the map's refusal", err)
	}
	// A kind the other node does not serve is refused with its reason.
	addr, _ := g.raft.LeaderWithID()
	_, err = forward(streams[follower], addr, 99, nil, 5*time.Second)
	var fe *ForwardError
	if !errors.As(err, &fe) || !strings.Contains(fe.Text, "kind 99") {
		t.Fatalf("an unknown kind: %v", err)
	}
	if files, _ := filepath.Glob(filepath.Join(groups[0].dir, "wal", "*.wal")); len(files) == 0 ||
		filepath.Base(groups[0].dir) != "0" {
		t.Fatalf("the metadata group's log is not under Dir/raft/groups/0: %s holds %v", groups[0].dir, files)
	}
}

// A frame longer than the limit is refused before it is read.
func TestForwardFrameLimit(t *testing.T) {
	long := binary.BigEndian.AppendUint32([]byte{1}, maxForwardPayload+1)
	if _, _, err := readFrame(bytes.NewReader(long)); !errors.Is(err, errFrameTooLong) {
		t.Fatalf("a frame past the limit: %v", err)
	}
	at := appendFrame(nil, 1, make([]byte, 10))
	if kind, p, err := readFrame(bytes.NewReader(at)); err != nil || kind != 1 || len(p) != 10 {
		t.Fatalf("a frame within the limit: %d %d %v", kind, len(p), err)
	}
}
