package slotmap

import (
	"fmt"
	"maps"
	"slices"
)

// NumSlots is the number of Redis Cluster hash slots, 0..NumSlots-1.
const NumSlots = 16384

// Node is one redstream process of the cluster.
type Node struct {
	ID      string // 40 characters of [0-9a-z], as Redis node IDs
	Addr    string // host:port clients connect to
	BusAddr string // host:port of its Raft traffic (cluster-port)
}

// Group is one Raft group: its ID and its voters' node IDs, in the order
// they were given (the order CLUSTER SLOTS lists replicas in).
type Group struct {
	ID     uint16 // 1..65535
	Voters []string
}

// Range is the slots First..Last, both included.
type Range struct{ First, Last int }

// OwnedRange is a run of consecutive slots that one group owns.
type OwnedRange struct {
	Range
	Group uint16
}

// Map is the cluster map. The zero Map is empty and ready to use: no
// nodes, no groups, every slot unassigned, Epoch 0.
//
// A Map is not safe for concurrent use; the metadata FSM applies ops to
// one Map and hands readers a Clone.
type Map struct {
	// Epoch counts the changes applied so far: every op that succeeds
	// adds one, as Redis bumps its config epoch. Nodes that apply the
	// same log have the same map at the same Epoch, so a reader can tell
	// an older map from a newer one.
	Epoch uint64

	nodes   map[string]Node
	groups  map[uint16][]string // group ID → voter node IDs
	leaders map[uint16]leader   // group ID → its leader; no entry: none recorded
	owner   [NumSlots]uint16    // 0: unassigned
	target  [NumSlots]uint16    // the group a slot is moving to; 0: not moving
}

// leader is what the map knows of a group's leader: the node that led it
// in term, the highest term recorded for the group. ID is "" when that
// node has since left the group's voters: the term stays, so that no
// leader of that term or an older one can be recorded again.
type leader struct {
	ID   string
	Term uint64 // at least 1
}

// Owner is the group that owns slot, 0 when it is unassigned or out of
// range.
func (m *Map) Owner(slot int) uint16 {
	if !validSlot(slot) {
		return 0
	}
	return m.owner[slot]
}

// Moving reports whether slot is moving, and from which group to which.
func (m *Map) Moving(slot int) (from, to uint16, ok bool) {
	if !validSlot(slot) || m.target[slot] == 0 {
		return 0, 0, false
	}
	return m.owner[slot], m.target[slot], true
}

// Ranges are the assigned slots as maximal runs of one owner, in slot
// order: the rows of CLUSTER SLOTS and the slots of CLUSTER SHARDS.
// Unassigned slots are left out.
func (m *Map) Ranges() []OwnedRange {
	var out []OwnedRange
	for _, r := range runs(&m.owner) {
		if r.Group != 0 {
			out = append(out, r)
		}
	}
	return out
}

// SlotsOf are the slots that group owns, as maximal ranges in slot order.
func (m *Map) SlotsOf(group uint16) []Range {
	var out []Range
	for _, r := range runs(&m.owner) {
		if r.Group == group && group != 0 {
			out = append(out, r.Range)
		}
	}
	return out
}

// Groups are the groups in ID order (copies: changing them changes
// nothing in m).
func (m *Map) Groups() []Group {
	out := make([]Group, 0, len(m.groups))
	for _, id := range slices.Sorted(maps.Keys(m.groups)) {
		out = append(out, Group{ID: id, Voters: slices.Clone(m.groups[id])})
	}
	return out
}

// Leader is group's current leader and the Raft term it leads in, as
// recorded by SetLeader: "" and 0 when none was ever recorded (or the
// group does not exist). It is "" and the last recorded term when that
// leader has since left the group's voters (see SetVoters).
func (m *Map) Leader(group uint16) (id string, term uint64) {
	l := m.leaders[group]
	return l.ID, l.Term
}

// Nodes are the nodes in ID order.
func (m *Map) Nodes() []Node {
	out := make([]Node, 0, len(m.nodes))
	for _, id := range slices.Sorted(maps.Keys(m.nodes)) {
		out = append(out, m.nodes[id])
	}
	return out
}

// Clone is a deep copy of m.
func (m *Map) Clone() *Map {
	c := *m // copies the slot arrays
	c.nodes = maps.Clone(m.nodes)
	c.groups = make(map[uint16][]string, len(m.groups))
	for id, voters := range m.groups {
		c.groups[id] = slices.Clone(voters)
	}
	c.leaders = maps.Clone(m.leaders)
	return &c
}

// runs cuts the slots into maximal runs of one value, 0 included.
func runs(slots *[NumSlots]uint16) []OwnedRange {
	var out []OwnedRange
	for s := 0; s < NumSlots; {
		e := s
		for e+1 < NumSlots && slots[e+1] == slots[s] {
			e++
		}
		out = append(out, OwnedRange{Range{s, e}, slots[s]})
		s = e + 1
	}
	return out
}

func validSlot(slot int) bool { return 0 <= slot && slot < NumSlots }

// check verifies the invariants of the package doc; decoding runs it on
// every map it returns.
func (m *Map) check() error {
	for id, n := range m.nodes {
		if id != n.ID {
			return fmt.Errorf("node %s is filed under %s", n.ID, id)
		}
		if err := validNode(n); err != nil {
			return err
		}
	}
	for id, voters := range m.groups {
		if err := validGroupID(id); err != nil {
			return err
		}
		if err := m.checkVoters(voters); err != nil {
			return fmt.Errorf("group %d: %w", id, err)
		}
	}
	for id, l := range m.leaders {
		voters, ok := m.groups[id]
		switch {
		case !ok:
			return fmt.Errorf("unknown group %d has a leader", id)
		case l.Term == 0:
			return fmt.Errorf("group %d: leader %q in term 0", id, l.ID)
		case l.ID != "" && !slices.Contains(voters, l.ID):
			return fmt.Errorf("group %d: leader %s is not a voter", id, l.ID)
		}
	}
	return m.checkSlots()
}

// checkSlots checks that owners and targets are known groups, and that
// a moving slot has an owner other than its target.
func (m *Map) checkSlots() error {
	for _, r := range runs(&m.owner) {
		if _, ok := m.groups[r.Group]; r.Group != 0 && !ok {
			return fmt.Errorf("slots %d-%d are owned by unknown group %d", r.First, r.Last, r.Group)
		}
	}
	for _, r := range runs(&m.target) {
		if _, ok := m.groups[r.Group]; r.Group != 0 && !ok {
			return fmt.Errorf("slots %d-%d are moving to unknown group %d", r.First, r.Last, r.Group)
		}
		for s := r.First; s <= r.Last && r.Group != 0; s++ {
			if own := m.owner[s]; own == 0 || own == r.Group {
				return fmt.Errorf("slot %d is moving to group %d from group %d", s, r.Group, own)
			}
		}
	}
	return nil
}
