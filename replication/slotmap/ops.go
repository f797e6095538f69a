package slotmap

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
)

// Kind says which change an Op makes.
type Kind uint8

// The ops, with the Op fields each one reads. Their numbers are part of
// the encoding: never renumber them.
const (
	OpAddNode     Kind = 1 // Node
	OpRemoveNode  Kind = 2 // Node.ID
	OpCreateGroup Kind = 3 // Group, Voters
	OpRemoveGroup Kind = 4 // Group
	OpAssignSlots Kind = 5 // Ranges, Group: the new owner
	OpBeginMove   Kind = 6 // Ranges, Group: the target
	OpFinishMove  Kind = 7 // Ranges
	OpAbortMove   Kind = 8 // Ranges
	OpSetVoters   Kind = 9 // Group, Voters
)

var kindNames = [...]string{"", "add-node", "remove-node", "create-group", "remove-group",
	"assign-slots", "begin-move", "finish-move", "abort-move", "set-voters"}

func (k Kind) String() string {
	if k == 0 || int(k) >= len(kindNames) {
		return "op " + strconv.Itoa(int(k))
	}
	return kindNames[k]
}

// Op is one change to the map: what one entry of the metadata group's log
// carries. Fields its Kind does not read are ignored (and not encoded).
type Op struct {
	Kind   Kind
	Node   Node
	Group  uint16
	Voters []string
	Ranges []Range
}

// AddNode adds a node to the cluster.
func (m *Map) AddNode(n Node) error { return m.Apply(Op{Kind: OpAddNode, Node: n}) }

// RemoveNode removes a node that is no group's voter.
func (m *Map) RemoveNode(id string) error {
	return m.Apply(Op{Kind: OpRemoveNode, Node: Node{ID: id}})
}

// CreateGroup adds a group of known nodes, which owns no slots yet.
func (m *Map) CreateGroup(id uint16, voters []string) error {
	return m.Apply(Op{Kind: OpCreateGroup, Group: id, Voters: voters})
}

// RemoveGroup removes a group that owns no slots and is no move's target.
func (m *Map) RemoveGroup(id uint16) error { return m.Apply(Op{Kind: OpRemoveGroup, Group: id}) }

// AssignSlots gives unassigned slots to a group.
func (m *Map) AssignSlots(ranges []Range, group uint16) error {
	return m.Apply(Op{Kind: OpAssignSlots, Ranges: ranges, Group: group})
}

// BeginMove starts moving slots that one group owns, and that are not
// moving, to another group.
func (m *Map) BeginMove(ranges []Range, to uint16) error {
	return m.Apply(Op{Kind: OpBeginMove, Ranges: ranges, Group: to})
}

// FinishMove gives moving slots to their targets.
func (m *Map) FinishMove(ranges []Range) error {
	return m.Apply(Op{Kind: OpFinishMove, Ranges: ranges})
}

// AbortMove leaves moving slots with their owners.
func (m *Map) AbortMove(ranges []Range) error { return m.Apply(Op{Kind: OpAbortMove, Ranges: ranges}) }

// SetVoters replaces a group's voters (after a membership change).
func (m *Map) SetVoters(group uint16, voters []string) error {
	return m.Apply(Op{Kind: OpSetVoters, Group: group, Voters: voters})
}

// MaxAddrLen is the longest address a node may have, in bytes: a 253-byte
// DNS name and a port fit.
const MaxAddrLen = 300

// Apply makes the change op describes, or returns why it cannot and
// changes nothing. Each success adds one to Epoch.
func (m *Map) Apply(op Op) error {
	if err := op.check(); err != nil {
		return err
	}
	var err error
	switch op.Kind {
	case OpAddNode:
		err = m.addNode(op.Node)
	case OpRemoveNode:
		err = m.removeNode(op.Node.ID)
	case OpCreateGroup:
		err = m.createGroup(op.Group, op.Voters)
	case OpRemoveGroup:
		err = m.removeGroup(op.Group)
	case OpAssignSlots:
		err = m.assignSlots(op.Ranges, op.Group)
	case OpBeginMove:
		err = m.beginMove(op.Ranges, op.Group)
	case OpFinishMove:
		err = m.endMove(op.Ranges, true)
	case OpAbortMove:
		err = m.endMove(op.Ranges, false)
	case OpSetVoters:
		err = m.setVoters(op.Group, op.Voters)
	}
	if err == nil {
		m.Epoch++
	}
	return err
}

// check validates what op says on its own, before the map is looked at.
func (op *Op) check() error {
	switch op.Kind {
	case OpAddNode:
		return validNode(op.Node)
	case OpRemoveNode:
		return validNodeID(op.Node.ID)
	case OpRemoveGroup:
		return validGroupID(op.Group)
	case OpCreateGroup, OpSetVoters:
		return firstErr(validGroupID(op.Group), validVoters(op.Voters))
	case OpAssignSlots, OpBeginMove:
		return firstErr(validGroupID(op.Group), validRanges(op.Ranges))
	case OpFinishMove, OpAbortMove:
		return validRanges(op.Ranges)
	}
	return fmt.Errorf("unknown cluster map op %d", op.Kind)
}

func (m *Map) addNode(n Node) error {
	if _, ok := m.nodes[n.ID]; ok {
		return fmt.Errorf("node %s is already in the cluster", n.ID)
	}
	if m.nodes == nil {
		m.nodes = map[string]Node{}
	}
	m.nodes[n.ID] = n
	return nil
}

func (m *Map) removeNode(id string) error {
	if _, ok := m.nodes[id]; !ok {
		return fmt.Errorf("unknown node %s", id)
	}
	for _, g := range m.Groups() {
		if slices.Contains(g.Voters, id) {
			return fmt.Errorf("node %s is a voter of group %d", id, g.ID)
		}
	}
	delete(m.nodes, id)
	return nil
}

func (m *Map) createGroup(id uint16, voters []string) error {
	if _, ok := m.groups[id]; ok {
		return fmt.Errorf("group %d already exists", id)
	}
	if err := m.checkVoters(voters); err != nil {
		return err
	}
	if m.groups == nil {
		m.groups = map[uint16][]string{}
	}
	m.groups[id] = slices.Clone(voters)
	return nil
}

func (m *Map) removeGroup(id uint16) error {
	if err := m.knownGroup(id); err != nil {
		return err
	}
	for s := range NumSlots {
		if m.owner[s] == id {
			return fmt.Errorf("group %d still owns slot %d", id, s)
		}
		if m.target[s] == id {
			return fmt.Errorf("slot %d is moving to group %d", s, id)
		}
	}
	delete(m.groups, id)
	return nil
}

func (m *Map) setVoters(id uint16, voters []string) error {
	if err := firstErr(m.knownGroup(id), m.checkVoters(voters)); err != nil {
		return err
	}
	m.groups[id] = slices.Clone(voters)
	return nil
}

func (m *Map) assignSlots(ranges []Range, group uint16) error {
	if err := m.knownGroup(group); err != nil {
		return err
	}
	if err := eachSlot(ranges, func(s int) error {
		if own := m.owner[s]; own != 0 {
			return fmt.Errorf("slot %d is already owned by group %d", s, own)
		}
		return nil
	}); err != nil {
		return err
	}
	_ = eachSlot(ranges, func(s int) error { m.owner[s] = group; return nil })
	return nil
}

func (m *Map) beginMove(ranges []Range, to uint16) error {
	if err := m.knownGroup(to); err != nil {
		return err
	}
	from := m.owner[ranges[0].First]
	if err := eachSlot(ranges, func(s int) error { return m.checkMovable(s, from, to) }); err != nil {
		return err
	}
	_ = eachSlot(ranges, func(s int) error { m.target[s] = to; return nil })
	return nil
}

// checkMovable refuses a move of slot s from group from to group to
// unless s is owned by from, from is not to, and s is not moving already.
func (m *Map) checkMovable(s int, from, to uint16) error {
	switch own := m.owner[s]; {
	case own == 0:
		return fmt.Errorf("slot %d is unassigned", s)
	case own == to:
		return fmt.Errorf("slot %d is already owned by group %d", s, to)
	case own != from:
		return fmt.Errorf("slot %d is owned by group %d, not group %d: move one group's slots at a time", s, own, from)
	case m.target[s] != 0:
		return fmt.Errorf("slot %d is already moving to group %d", s, m.target[s])
	}
	return nil
}

// endMove ends the moves of the slots in ranges: finish gives each slot
// to its target, otherwise it stays with its owner.
func (m *Map) endMove(ranges []Range, finish bool) error {
	if err := eachSlot(ranges, func(s int) error {
		if m.target[s] == 0 {
			return fmt.Errorf("slot %d is not moving", s)
		}
		return nil
	}); err != nil {
		return err
	}
	_ = eachSlot(ranges, func(s int) error {
		if finish {
			m.owner[s] = m.target[s]
		}
		m.target[s] = 0
		return nil
	})
	return nil
}

func (m *Map) knownGroup(id uint16) error {
	if _, ok := m.groups[id]; !ok {
		return fmt.Errorf("unknown group %d", id)
	}
	return nil
}

// checkVoters validates voters and checks that each is a known node.
func (m *Map) checkVoters(voters []string) error {
	if err := validVoters(voters); err != nil {
		return err
	}
	for _, id := range voters {
		if _, ok := m.nodes[id]; !ok {
			return fmt.Errorf("unknown node %s", id)
		}
	}
	return nil
}

// eachSlot calls f on every slot of ranges in order, and stops at the
// first error.
func eachSlot(ranges []Range, f func(int) error) error {
	for _, r := range ranges {
		for s := r.First; s <= r.Last; s++ {
			if err := f(s); err != nil {
				return err
			}
		}
	}
	return nil
}

func validNode(n Node) error {
	if err := validNodeID(n.ID); err != nil {
		return err
	}
	return firstErr(validAddr(n.Addr), validAddr(n.BusAddr))
}

// validNodeID accepts what CLUSTER ADDNODE accepts: 40 characters of
// [0-9a-z], as Redis checks node IDs.
func validNodeID(id string) error {
	ok := len(id) == 40
	for _, c := range []byte(id) {
		ok = ok && ('0' <= c && c <= '9' || 'a' <= c && c <= 'z')
	}
	if !ok {
		return fmt.Errorf("invalid node ID %q", id)
	}
	return nil
}

func validAddr(addr string) error {
	host, p, err := net.SplitHostPort(addr)
	port, perr := strconv.Atoi(p)
	if err != nil || perr != nil || host == "" || port < 1 || port > 65535 || len(addr) > MaxAddrLen {
		return fmt.Errorf("invalid node address %q: want host:port", addr)
	}
	return nil
}

func validGroupID(id uint16) error {
	if id == 0 {
		return errors.New("invalid group 0: groups are numbered 1 to 65535")
	}
	return nil
}

func validVoters(voters []string) error {
	if len(voters) == 0 {
		return errors.New("a group needs at least one voter")
	}
	for i, id := range voters {
		if err := validNodeID(id); err != nil {
			return err
		}
		if slices.Contains(voters[:i], id) {
			return fmt.Errorf("node %s is given twice", id)
		}
	}
	return nil
}

// validRanges accepts one or more ranges of slots in 0..16383, none
// overlapping another; they need not be in order.
func validRanges(ranges []Range) error {
	if len(ranges) == 0 {
		return errors.New("no slots given")
	}
	var seen [NumSlots]bool
	for _, r := range ranges {
		if !validSlot(r.First) || !validSlot(r.Last) || r.First > r.Last {
			return fmt.Errorf("invalid slot range %d-%d: slots are 0 to %d", r.First, r.Last, NumSlots-1)
		}
		for s := r.First; s <= r.Last; s++ {
			if seen[s] {
				return fmt.Errorf("slot %d is given twice", s)
			}
			seen[s] = true
		}
	}
	return nil
}

// firstErr is the first error that is not nil. (errors.Join would put
// several on separate lines, which a RESP error cannot carry.)
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
