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
	OpAddNode     Kind = 1  // Node
	OpRemoveNode  Kind = 2  // Node.ID
	OpCreateGroup Kind = 3  // Group, Voters
	OpRemoveGroup Kind = 4  // Group
	OpAssignSlots Kind = 5  // Ranges, Group: the new owner
	OpBeginMove   Kind = 6  // Ranges, Group: the target
	OpFinishMove  Kind = 7  // Ranges
	OpAbortMove   Kind = 8  // Ranges
	OpSetVoters   Kind = 9  // Group, Voters
	OpSetLeader   Kind = 10 // Group, Node.ID: the leader, Term
)

// field is a part of an Op that some kinds read, and encode in this
// order.
type field uint8

const (
	fNode   field = 1 << iota // Node: ID, Addr and BusAddr
	fNodeID                   // Node.ID only
	fGroup
	fVoters
	fRanges
	fTerm
)

// kinds: each kind's name, the fields it reads, and its change, which
// checks the map and changes it only if it may.
var kinds = [...]struct {
	name   string
	fields field
	apply  func(*Map, *Op) error
}{
	OpAddNode:     {"add-node", fNode, (*Map).addNode},
	OpRemoveNode:  {"remove-node", fNodeID, (*Map).removeNode},
	OpCreateGroup: {"create-group", fGroup | fVoters, (*Map).createGroup},
	OpRemoveGroup: {"remove-group", fGroup, (*Map).removeGroup},
	OpAssignSlots: {"assign-slots", fGroup | fRanges, (*Map).assignSlots},
	OpBeginMove:   {"begin-move", fGroup | fRanges, (*Map).beginMove},
	OpFinishMove:  {"finish-move", fRanges, (*Map).endMove},
	OpAbortMove:   {"abort-move", fRanges, (*Map).endMove},
	OpSetVoters:   {"set-voters", fGroup | fVoters, (*Map).setVoters},
	OpSetLeader:   {"set-leader", fNodeID | fGroup | fTerm, (*Map).setLeader},
}

func (k Kind) known() bool { return k != 0 && int(k) < len(kinds) }

// fields are the fields of an Op of kind k; none if k is unknown.
func (k Kind) fields() field {
	if !k.known() {
		return 0
	}
	return kinds[k].fields
}

func (k Kind) String() string {
	if !k.known() {
		return "op " + strconv.Itoa(int(k))
	}
	return kinds[k].name
}

// Op is one change to the map: what one entry of the metadata group's log
// carries. Fields its Kind does not read are ignored (and not encoded).
type Op struct {
	Kind   Kind
	Node   Node
	Group  uint16
	Voters []string
	Ranges []Range
	Term   uint64 // a Raft term of Group, 1 or more
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

// SetLeader records that node id leads group in Raft term term, as the
// group's new leader announces once elected. The group must exist, id
// must be one of its voters, and term must be at least the term recorded
// for the group: a late record from a deposed leader, of a lower term, is
// refused, and so is a second leader for the recorded term (Raft elects
// one per term), also after the recorded leader left the voters. Recording
// the recorded leader and term again succeeds and changes nothing but
// Epoch, so a proposer may retry.
func (m *Map) SetLeader(group uint16, id string, term uint64) error {
	return m.Apply(Op{Kind: OpSetLeader, Group: group, Node: Node{ID: id}, Term: term})
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
	err := kinds[op.Kind].apply(m, &op)
	if err == nil {
		m.Epoch++
	}
	return err
}

// check validates the fields op's kind reads, before the map is looked
// at.
func (op *Op) check() error {
	if !op.Kind.known() {
		return fmt.Errorf("unknown cluster map op %d", op.Kind)
	}
	f := op.Kind.fields()
	return firstErr(
		f.only(fNode, validNode(op.Node)),
		f.only(fNodeID, validNodeID(op.Node.ID)),
		f.only(fGroup, validGroupID(op.Group)),
		f.only(fVoters, validVoters(op.Voters)),
		f.only(fRanges, validRanges(op.Ranges)),
		f.only(fTerm, validTerm(op.Term)))
}

// only is err if f includes field g, else nil.
func (f field) only(g field, err error) error {
	if f&g == 0 {
		return nil
	}
	return err
}

func (m *Map) addNode(op *Op) error {
	if _, ok := m.nodes[op.Node.ID]; ok {
		return fmt.Errorf("node %s is already in the cluster", op.Node.ID)
	}
	if m.nodes == nil {
		m.nodes = map[string]Node{}
	}
	m.nodes[op.Node.ID] = op.Node
	return nil
}

func (m *Map) removeNode(op *Op) error {
	if _, ok := m.nodes[op.Node.ID]; !ok {
		return fmt.Errorf("unknown node %s", op.Node.ID)
	}
	for _, g := range m.Groups() {
		if slices.Contains(g.Voters, op.Node.ID) {
			return fmt.Errorf("node %s is a voter of group %d", op.Node.ID, g.ID)
		}
	}
	delete(m.nodes, op.Node.ID)
	return nil
}

func (m *Map) createGroup(op *Op) error {
	if _, ok := m.groups[op.Group]; ok {
		return fmt.Errorf("group %d already exists", op.Group)
	}
	if err := m.checkVoters(op.Voters); err != nil {
		return err
	}
	if m.groups == nil {
		m.groups = map[uint16][]string{}
	}
	m.groups[op.Group] = slices.Clone(op.Voters)
	return nil
}

func (m *Map) removeGroup(op *Op) error {
	if err := m.knownGroup(op.Group); err != nil {
		return err
	}
	for s := range NumSlots {
		if m.owner[s] == op.Group {
			return fmt.Errorf("group %d still owns slot %d", op.Group, s)
		}
		if m.target[s] == op.Group {
			return fmt.Errorf("slot %d is moving to group %d", s, op.Group)
		}
	}
	delete(m.groups, op.Group)
	delete(m.leaders, op.Group)
	return nil
}

func (m *Map) setVoters(op *Op) error {
	if err := firstErr(m.knownGroup(op.Group), m.checkVoters(op.Voters)); err != nil {
		return err
	}
	m.groups[op.Group] = slices.Clone(op.Voters)
	// A leader that is no longer a voter leads no more. Its term stays,
	// so that no leader of that term or an older one can be recorded
	// after it: not a late op of a deposed leader, and not the cleared
	// leader itself in its old term should it become a voter again.
	if l, ok := m.leaders[op.Group]; ok && !slices.Contains(op.Voters, l.ID) {
		m.leaders[op.Group] = leader{Term: l.Term}
	}
	return nil
}

func (m *Map) setLeader(op *Op) error {
	if err := m.knownGroup(op.Group); err != nil {
		return err
	}
	if !slices.Contains(m.groups[op.Group], op.Node.ID) {
		return fmt.Errorf("node %s is not a voter of group %d", op.Node.ID, op.Group)
	}
	switch l := m.leaders[op.Group]; {
	case op.Term < l.Term:
		return fmt.Errorf("group %d is in term %d, later than term %d", op.Group, l.Term, op.Term)
	case op.Term == l.Term && op.Node.ID != l.ID:
		return fmt.Errorf("group %d already had a leader in term %d", op.Group, l.Term)
	}
	if m.leaders == nil {
		m.leaders = map[uint16]leader{}
	}
	m.leaders[op.Group] = leader{ID: op.Node.ID, Term: op.Term}
	return nil
}

func (m *Map) assignSlots(op *Op) error {
	if err := m.knownGroup(op.Group); err != nil {
		return err
	}
	if err := eachSlot(op.Ranges, func(s int) error {
		if own := m.owner[s]; own != 0 {
			return fmt.Errorf("slot %d is already owned by group %d", s, own)
		}
		return nil
	}); err != nil {
		return err
	}
	setSlots(&m.owner, op.Ranges, op.Group)
	return nil
}

func (m *Map) beginMove(op *Op) error {
	if err := m.knownGroup(op.Group); err != nil {
		return err
	}
	from := m.owner[op.Ranges[0].First]
	if err := eachSlot(op.Ranges, func(s int) error { return m.checkMovable(s, from, op.Group) }); err != nil {
		return err
	}
	setSlots(&m.target, op.Ranges, op.Group)
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

// endMove ends the moves of the slots of op: FinishMove gives each slot
// to its target, AbortMove leaves it with its owner.
func (m *Map) endMove(op *Op) error {
	if err := eachSlot(op.Ranges, func(s int) error {
		if m.target[s] == 0 {
			return fmt.Errorf("slot %d is not moving", s)
		}
		return nil
	}); err != nil {
		return err
	}
	if op.Kind == OpFinishMove {
		_ = eachSlot(op.Ranges, func(s int) error { m.owner[s] = m.target[s]; return nil })
	}
	setSlots(&m.target, op.Ranges, 0)
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

// setSlots sets the slots of ranges to v.
func setSlots(slots *[NumSlots]uint16, ranges []Range, v uint16) {
	for _, r := range ranges {
		for s := r.First; s <= r.Last; s++ {
			slots[s] = v
		}
	}
}

func validNode(n Node) error {
	return firstErr(validNodeID(n.ID), validAddr(n.Addr), validAddr(n.BusAddr))
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

func validTerm(term uint64) error {
	if term == 0 {
		return errors.New("invalid term 0: Raft terms start at 1")
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
