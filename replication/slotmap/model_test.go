package slotmap

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// model is the map the naive way: plain Go maps, each op's rules written
// out again slot by slot, for TestModel to compare Map with.
type model struct {
	epoch  uint64
	nodes  map[string]Node
	groups map[uint16][]string
	owner  map[int]uint16 // assigned slots only
	target map[int]uint16 // moving slots only
	// leaders: the last leader recorded for each group and its term;
	// id "" once that leader left the voters.
	leaders map[uint16]struct {
		id   string
		term uint64
	}
}

func newModel() *model {
	return &model{nodes: map[string]Node{}, groups: map[uint16][]string{},
		owner: map[int]uint16{}, target: map[int]uint16{}, leaders: map[uint16]struct {
			id   string
			term uint64
		}{}}
}

// apply reports whether op succeeds, and makes its change if it does.
func (md *model) apply(op Op) bool {
	ok := md.allowed(op)
	if !ok {
		return false
	}
	md.epoch++
	slots := opSlots(op.Ranges)
	switch op.Kind {
	case OpAddNode:
		md.nodes[op.Node.ID] = op.Node
	case OpRemoveNode:
		delete(md.nodes, op.Node.ID)
	case OpCreateGroup, OpSetVoters:
		md.groups[op.Group] = slices.Clone(op.Voters)
		if l, ok := md.leaders[op.Group]; ok && !slices.Contains(op.Voters, l.id) {
			l.id = ""
			md.leaders[op.Group] = l
		}
	case OpRemoveGroup:
		delete(md.groups, op.Group)
		delete(md.leaders, op.Group)
	case OpSetLeader:
		md.leaders[op.Group] = struct {
			id   string
			term uint64
		}{op.Node.ID, op.Term}
	case OpAssignSlots:
		for s := range slots {
			md.owner[s] = op.Group
		}
	case OpBeginMove:
		for s := range slots {
			md.target[s] = op.Group
		}
	case OpFinishMove, OpAbortMove:
		for s := range slots {
			if op.Kind == OpFinishMove {
				md.owner[s] = md.target[s]
			}
			delete(md.target, s)
		}
	}
	return true
}

func (md *model) allowed(op Op) bool {
	_, nodeKnown := md.nodes[op.Node.ID]
	_, groupKnown := md.groups[op.Group]
	slots := opSlots(op.Ranges)
	switch op.Kind {
	case OpAddNode:
		return !nodeKnown && len(op.Node.ID) == 40 && op.Node.Addr != "bad"
	case OpRemoveNode:
		for _, voters := range md.groups {
			if slices.Contains(voters, op.Node.ID) {
				return false
			}
		}
		return nodeKnown
	case OpCreateGroup:
		return op.Group != 0 && !groupKnown && md.votersOK(op.Voters)
	case OpSetVoters:
		return groupKnown && md.votersOK(op.Voters)
	case OpRemoveGroup:
		inUse := slices.Contains(slices.Collect(maps.Values(md.owner)), op.Group) ||
			slices.Contains(slices.Collect(maps.Values(md.target)), op.Group)
		return groupKnown && !inUse
	case OpAssignSlots:
		return groupKnown && slots != nil && !anySlot(slots, func(s int) bool { _, ok := md.owner[s]; return ok })
	case OpBeginMove:
		owners := map[uint16]bool{}
		for s := range slots {
			owners[md.owner[s]] = true
		}
		return groupKnown && len(owners) == 1 && !owners[0] && !owners[op.Group] &&
			!anySlot(slots, func(s int) bool { _, ok := md.target[s]; return ok })
	case OpFinishMove, OpAbortMove:
		return slots != nil && !anySlot(slots, func(s int) bool { _, ok := md.target[s]; return !ok })
	case OpSetLeader:
		l := md.leaders[op.Group]
		isVoter := slices.Contains(md.groups[op.Group], op.Node.ID)
		newer := op.Term > l.term
		again := op.Term == l.term && op.Node.ID == l.id
		return groupKnown && op.Term > 0 && isVoter && (newer || again)
	}
	return false
}

func (md *model) votersOK(voters []string) bool {
	seen := map[string]bool{}
	for _, id := range voters {
		if _, ok := md.nodes[id]; !ok || seen[id] {
			return false
		}
		seen[id] = true
	}
	return len(voters) > 0
}

// opSlots is the set of slots of ranges, nil when they are empty, out of
// range or overlap.
func opSlots(ranges []Range) map[int]bool {
	slots := map[int]bool{}
	for _, r := range ranges {
		for s := r.First; s <= r.Last; s++ {
			if s < 0 || s >= NumSlots || slots[s] {
				return nil
			}
			slots[s] = true
		}
		if r.First > r.Last {
			return nil
		}
	}
	if len(slots) == 0 {
		return nil
	}
	return slots
}

func anySlot(slots map[int]bool, f func(int) bool) bool {
	for s := range slots {
		if f(s) {
			return true
		}
	}
	return false
}

// ranges is Ranges the naive way: walk the assigned slots, start a new
// range at every gap or change of owner.
func (md *model) ranges() []OwnedRange {
	var out []OwnedRange
	for _, s := range slices.Sorted(maps.Keys(md.owner)) {
		g := md.owner[s]
		switch {
		case len(out) > 0 && out[len(out)-1].Last == s-1 && out[len(out)-1].Group == g:
			out[len(out)-1].Last = s
		default:
			out = append(out, OwnedRange{Range{s, s}, g})
		}
	}
	return out
}

// hotSlots is how many slots randomOp picks from: the first and the last
// half.
const hotSlots = 64

// randomOp draws ops over few nodes, groups and slots (the hot slots,
// mostly), so that ops collide often and many succeed.
func randomOp(r *rand.Rand, md *model) Op {
	ids := []string{idA, idB, idC, idD, idX}
	id := func() string { return ids[r.IntN(len(ids))] }
	voters := func() []string {
		v := make([]string, rarelyZero(r, 2))
		for i := range v {
			v[i] = id()
		}
		return v
	}
	kinds := []Kind{OpAddNode, OpRemoveNode, OpCreateGroup, OpRemoveGroup, OpSetVoters,
		OpAssignSlots, OpAssignSlots, OpBeginMove, OpBeginMove, OpBeginMove, OpFinishMove, OpFinishMove, OpAbortMove,
		OpSetLeader}
	op := Op{Kind: kinds[r.IntN(len(kinds))], Group: uint16(rarelyZero(r, 5))}
	if r.IntN(50) == 0 {
		op.Kind = 0
	}
	switch op.Kind {
	case OpAddNode, OpRemoveNode:
		op.Node = Node{ID: id(), Addr: fmt.Sprintf("n%d:%d", r.IntN(3), 1+r.IntN(9)), BusAddr: "b:1"}
		if r.IntN(20) == 0 {
			op.Node.Addr = "bad"
		}
	case OpCreateGroup, OpSetVoters:
		op.Voters = voters()
	case OpSetLeader:
		// Often a group with a record; mostly a voter of the group, often
		// the recorded leader; in the term before, of or after the
		// recorded one (1 to 3 if none), rarely 0.
		if led := slices.Sorted(maps.Keys(md.leaders)); len(led) > 0 && r.IntN(2) == 0 {
			op.Group = led[r.IntN(len(led))]
		}
		l := md.leaders[op.Group]
		op.Node.ID = id()
		if v := md.groups[op.Group]; len(v) > 0 && r.IntN(4) != 0 {
			op.Node.ID = v[r.IntN(len(v))]
		}
		if l.id != "" && r.IntN(3) == 0 {
			op.Node.ID = l.id
		}
		op.Term = max(l.term, 2) + uint64(r.IntN(3)) - 1
		if r.IntN(20) == 0 {
			op.Term = 0
		}
	case OpAssignSlots, OpBeginMove, OpFinishMove, OpAbortMove:
		op.Ranges = randomRanges(r)
		if r.IntN(2) == 0 {
			op.Ranges = []Range{md.aimedRange(r, op.Kind == OpFinishMove || op.Kind == OpAbortMove)}
		}
	}
	return op
}

// aimedRange is up to four hot slots from a random one on (a moving one
// if moving is set and there is one), alike in owner and target: slots
// that some op can take as a whole.
func (md *model) aimedRange(r *rand.Rand, moving bool) Range {
	first := r.IntN(hotSlots)
	if first >= hotSlots/2 {
		first += NumSlots - hotSlots
	}
	if moving && len(md.target) > 0 {
		slots := slices.Sorted(maps.Keys(md.target))
		first = slots[r.IntN(len(slots))]
	}
	last := first
	for last < min(first+3, NumSlots-1) && md.owner[last+1] == md.owner[first] && md.target[last+1] == md.target[first] {
		last++
	}
	return Range{first, last}
}

// rarelyZero is 1..n, and 0 one time in 20.
func rarelyZero(r *rand.Rand, n int) int {
	if r.IntN(20) == 0 {
		return 0
	}
	return 1 + r.IntN(n)
}

func randomRanges(r *rand.Rand) []Range {
	if r.IntN(200) == 0 {
		return []Range{{0, NumSlots - 1}}
	}
	ranges := make([]Range, rarelyZero(r, 2))
	for i := range ranges {
		first := r.IntN(hotSlots / 2)
		if r.IntN(2) == 0 {
			first = NumSlots - hotSlots/2 + first
		}
		last := min(first+r.IntN(4), NumSlots-1)
		if r.IntN(40) == 0 {
			last = NumSlots // out of range
		}
		ranges[i] = Range{first, last}
	}
	return ranges
}

// TestModel applies random ops to a Map and to the model and compares
// them after each: whether the op succeeded, Epoch, every slot's owner
// and move, Ranges, nodes and groups; and every so often that the map and
// the op survive encoding.
func TestModel(t *testing.T) {
	succeeded := map[Kind]int{}
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 14))
			m, md := new(Map), newModel()
			for step := range 500 {
				op := randomOp(r, md)
				err := m.Apply(op)
				if ok := md.apply(op); ok != (err == nil) {
					t.Fatalf("step %d: %+v: error %v, model says success %v", step, op, err, ok)
				}
				if err == nil {
					succeeded[op.Kind]++
				}
				compare(t, m, md, step%20 == 0)
				if step%20 == 0 {
					roundTrip(t, m, op)
				}
			}
		})
	}
	for k := OpAddNode; k <= OpSetLeader; k++ {
		if succeeded[k] < 10 {
			t.Errorf("%v succeeded only %d times: the generator needs tuning", k, succeeded[k])
		}
	}
	t.Logf("successes: %v", succeeded)
}

// compare compares m with the model: every slot when all is set, else
// the hot ones (Ranges covers every slot's owner).
func compare(t *testing.T, m *Map, md *model, all bool) {
	t.Helper()
	if m.Epoch != md.epoch {
		t.Fatalf("epoch %d, model %d", m.Epoch, md.epoch)
	}
	for s := range NumSlots {
		if !all && s >= hotSlots/2 && s < NumSlots-hotSlots/2 {
			continue
		}
		from, to, ok := m.Moving(s)
		_, wantOK := md.target[s]
		if m.Owner(s) != md.owner[s] || ok != wantOK || to != md.target[s] || ok && from != md.owner[s] {
			t.Fatalf("slot %d: owner %d, moving %d→%d %v; model owner %d target %d",
				s, m.Owner(s), from, to, ok, md.owner[s], md.target[s])
		}
	}
	if got, want := m.Ranges(), md.ranges(); !slices.Equal(got, want) {
		t.Fatalf("Ranges %v, model %v", got, want)
	}
	for _, g := range m.Groups() {
		if !slices.Equal(g.Voters, md.groups[g.ID]) {
			t.Fatalf("group %d voters %v, model %v", g.ID, g.Voters, md.groups[g.ID])
		}
		if !all {
			continue
		}
		if got, want := m.SlotsOf(g.ID), slotsOf(md, g.ID); !slices.Equal(got, want) {
			t.Fatalf("SlotsOf(%d) = %v, model %v", g.ID, got, want)
		}
	}
	for g := range uint16(7) {
		id, term := m.Leader(g)
		if want := md.leaders[g]; id != want.id || term != want.term {
			t.Fatalf("Leader(%d) = %q, %d; model %q, %d", g, id, term, want.id, want.term)
		}
	}
	if len(m.Groups()) != len(md.groups) || !slices.Equal(m.Nodes(), sortedNodes(md)) {
		t.Fatalf("groups %v nodes %v; model %v %v", m.Groups(), m.Nodes(), md.groups, md.nodes)
	}
	if all {
		must(t, m.check())
	}
}

func slotsOf(md *model, group uint16) []Range {
	var out []Range
	for _, r := range md.ranges() {
		if r.Group == group {
			out = append(out, r.Range)
		}
	}
	return out
}

func sortedNodes(md *model) []Node {
	var out []Node
	for _, id := range slices.Sorted(maps.Keys(md.nodes)) {
		out = append(out, md.nodes[id])
	}
	return out
}

// roundTrip checks that m decodes from its encoding to the same map, and
// that op, if it encodes, decodes to an op that does to a copy of m what
// op does.
func roundTrip(t *testing.T, m *Map, op Op) {
	t.Helper()
	b := m.Encode()
	d, err := DecodeMap(b)
	if err != nil {
		t.Fatalf("decoding the map: %v", err)
	}
	if !bytes.Equal(d.Encode(), b) || d.Epoch != m.Epoch || !slices.Equal(d.Ranges(), m.Ranges()) {
		t.Fatal("the map changed in encoding")
	}
	ob, err := op.Encode()
	if err != nil {
		if !strings.Contains(fmt.Sprint(m.Clone().Apply(op)), err.Error()) {
			t.Fatalf("op %+v does not encode (%v) but applies", op, err)
		}
		return
	}
	dop, err := DecodeOp(ob)
	if err != nil {
		t.Fatalf("decoding op %+v: %v", op, err)
	}
	m1, m2 := m.Clone(), m.Clone()
	err1, err2 := m1.Apply(op), m2.Apply(dop)
	if fmt.Sprint(err1) != fmt.Sprint(err2) || !bytes.Equal(m1.Encode(), m2.Encode()) {
		t.Fatalf("op %+v and its decoding %+v differ: %v, %v", op, dop, err1, err2)
	}
}
