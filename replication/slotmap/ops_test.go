package slotmap

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// Node IDs of the fixture.
var (
	idA = strings.Repeat("a", 40)
	idB = strings.Repeat("b", 40)
	idC = strings.Repeat("c", 40)
	idD = strings.Repeat("d", 40) // known, in no group
	idX = strings.Repeat("x", 40) // unknown
)

func node(id string, port string) Node {
	return Node{ID: id, Addr: "127.0.0.1:" + port, BusAddr: "127.0.0.1:1" + port}
}

// fixture: nodes A-D; group 1 (A, B, C) owns 0-99, group 2 (B) 100-199,
// of which 150-159 are moving to group 3 (C); group 4 (D) owns nothing;
// 200-16383 are unassigned. Epoch 11.
func fixture(t testing.TB) *Map {
	t.Helper()
	m := new(Map)
	must(t, m.AddNode(node(idA, "7001")))
	must(t, m.AddNode(node(idB, "7002")))
	must(t, m.AddNode(node(idC, "7003")))
	must(t, m.AddNode(node(idD, "7004")))
	must(t, m.CreateGroup(1, []string{idA, idB, idC}))
	must(t, m.CreateGroup(2, []string{idB}))
	must(t, m.CreateGroup(3, []string{idC}))
	must(t, m.CreateGroup(4, []string{idD}))
	must(t, m.AssignSlots([]Range{{0, 99}}, 1))
	must(t, m.AssignSlots([]Range{{100, 199}}, 2))
	must(t, m.BeginMove([]Range{{150, 159}}, 3))
	return m
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func rs(pairs ...int) []Range {
	var out []Range
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Range{pairs[i], pairs[i+1]})
	}
	return out
}

func TestFixture(t *testing.T) {
	m := fixture(t)
	want := []OwnedRange{{Range{0, 99}, 1}, {Range{100, 199}, 2}}
	if got := m.Ranges(); !slices.Equal(got, want) || m.Epoch != 11 {
		t.Fatalf("Ranges %v epoch %d, want %v epoch 11", got, m.Epoch, want)
	}
	if from, to, ok := m.Moving(155); from != 2 || to != 3 || !ok {
		t.Fatalf("Moving(155) = %d, %d, %v", from, to, ok)
	}
	if _, _, ok := m.Moving(160); ok {
		t.Fatal("slot 160 moves")
	}
	if m.Owner(-1) != 0 || m.Owner(NumSlots) != 0 || m.Owner(16383) != 0 {
		t.Fatal("out-of-range or unassigned slot has an owner")
	}
	if got := m.SlotsOf(2); !slices.Equal(got, rs(100, 199)) {
		t.Fatalf("SlotsOf(2) = %v", got)
	}
	if got := m.SlotsOf(0); got != nil {
		t.Fatalf("SlotsOf(0) = %v: unassigned slots belong to no group", got)
	}
}

// TestOps runs every op that succeeds, with what it changes, and every
// refusal, with its text, against the fixture. A refusal must leave the
// map exactly as it was, Epoch included.
func TestOps(t *testing.T) {
	long := "h" + strings.Repeat("o", MaxAddrLen-len("h:7000")) + ":7000"
	tests := []struct {
		name    string
		setup   func(m *Map) // before the map is copied to compare with
		op      func(m *Map) error
		wantErr string
		check   func(t *testing.T, m *Map) // after a success
	}{
		{name: "add node", op: func(m *Map) error { return m.AddNode(node(idX, "7009")) },
			check: func(t *testing.T, m *Map) { wantNodes(t, m, idA, idB, idC, idD, idX) }},
		{name: "add node, longest address", op: func(m *Map) error {
			return m.AddNode(Node{ID: idX, Addr: long, BusAddr: "[::1]:17009"})
		}, check: func(t *testing.T, m *Map) { wantNodes(t, m, idA, idB, idC, idD, idX) }},
		{name: "add node, address too long", op: func(m *Map) error {
			return m.AddNode(Node{ID: idX, Addr: "h" + long, BusAddr: "[::1]:17009"})
		}, wantErr: `invalid node address "hh` + long[1:] + `": want host:port`},
		{name: "add known node", op: func(m *Map) error { return m.AddNode(node(idA, "7009")) },
			wantErr: "node " + idA + " is already in the cluster"},
		{name: "add node, short ID", op: func(m *Map) error { return m.AddNode(node("abc", "7009")) },
			wantErr: `invalid node ID "abc"`},
		{name: "add node, upper-case ID", op: func(m *Map) error { return m.AddNode(node(strings.Repeat("A", 40), "7009")) },
			wantErr: `invalid node ID "` + strings.Repeat("A", 40) + `"`},
		{name: "add node, no port", op: func(m *Map) error { return m.AddNode(Node{ID: idX, Addr: "h", BusAddr: "h:1"}) },
			wantErr: `invalid node address "h": want host:port`},
		{name: "add node, no host", op: func(m *Map) error { return m.AddNode(Node{ID: idX, Addr: ":1", BusAddr: "h:1"}) },
			wantErr: `invalid node address ":1": want host:port`},
		{name: "add node, bus port 0", op: func(m *Map) error { return m.AddNode(Node{ID: idX, Addr: "h:1", BusAddr: "h:0"}) },
			wantErr: `invalid node address "h:0": want host:port`},
		{name: "add node, port 65536", op: func(m *Map) error { return m.AddNode(Node{ID: idX, Addr: "h:65536", BusAddr: "h:1"}) },
			wantErr: `invalid node address "h:65536": want host:port`},

		{name: "remove node", op: func(m *Map) error { return m.RemoveNode(idX) },
			wantErr: "unknown node " + idX},
		{name: "remove idle node", op: func(m *Map) error {
			must(t, m.RemoveGroup(4))
			return m.RemoveNode(idD)
		}, check: func(t *testing.T, m *Map) { wantNodes(t, m, idA, idB, idC) }},
		{name: "remove voter", op: func(m *Map) error { return m.RemoveNode(idC) },
			wantErr: "node " + idC + " is a voter of group 1"},

		{name: "create group", op: func(m *Map) error { return m.CreateGroup(65535, []string{idD, idA}) },
			check: func(t *testing.T, m *Map) { wantVoters(t, m, 65535, idD, idA) }},
		{name: "create group 0", op: func(m *Map) error { return m.CreateGroup(0, []string{idA}) },
			wantErr: "invalid group 0: groups are numbered 1 to 65535"},
		{name: "create existing group", op: func(m *Map) error { return m.CreateGroup(2, []string{idA}) },
			wantErr: "group 2 already exists"},
		{name: "create group, unknown voter", op: func(m *Map) error { return m.CreateGroup(5, []string{idA, idX}) },
			wantErr: "unknown node " + idX},
		{name: "create group, voter twice", op: func(m *Map) error { return m.CreateGroup(5, []string{idA, idB, idA}) },
			wantErr: "node " + idA + " is given twice"},
		{name: "create group, no voters", op: func(m *Map) error { return m.CreateGroup(5, nil) },
			wantErr: "a group needs at least one voter"},
		{name: "create group, bad voter ID", op: func(m *Map) error { return m.CreateGroup(5, []string{"a"}) },
			wantErr: `invalid node ID "a"`},

		{name: "remove group", op: func(m *Map) error { return m.RemoveGroup(4) },
			check: func(t *testing.T, m *Map) { wantGroups(t, m, 1, 2, 3) }},
		{name: "remove unknown group", op: func(m *Map) error { return m.RemoveGroup(9) },
			wantErr: "unknown group 9"},
		{name: "remove group 0", op: func(m *Map) error { return m.RemoveGroup(0) },
			wantErr: "invalid group 0: groups are numbered 1 to 65535"},
		{name: "remove owning group", op: func(m *Map) error { return m.RemoveGroup(2) },
			wantErr: "group 2 still owns slot 100"},
		{name: "remove move target", op: func(m *Map) error { return m.RemoveGroup(3) },
			wantErr: "slot 150 is moving to group 3"},

		{name: "assign slots", op: func(m *Map) error { return m.AssignSlots(rs(16383, 16383, 200, 299), 4) },
			check: func(t *testing.T, m *Map) {
				wantRanges(t, m, OwnedRange{Range{0, 99}, 1}, OwnedRange{Range{100, 199}, 2},
					OwnedRange{Range{200, 299}, 4}, OwnedRange{Range{16383, 16383}, 4})
			}},
		{name: "assign owned slot", op: func(m *Map) error { return m.AssignSlots(rs(200, 300, 5, 5), 4) },
			wantErr: "slot 5 is already owned by group 1"},
		{name: "assign to unknown group", op: func(m *Map) error { return m.AssignSlots(rs(200, 300), 9) },
			wantErr: "unknown group 9"},
		{name: "assign to group 0", op: func(m *Map) error { return m.AssignSlots(rs(200, 300), 0) },
			wantErr: "invalid group 0: groups are numbered 1 to 65535"},
		{name: "assign no slots", op: func(m *Map) error { return m.AssignSlots(nil, 4) },
			wantErr: "no slots given"},
		{name: "assign slot 16384", op: func(m *Map) error { return m.AssignSlots(rs(16000, 16384), 4) },
			wantErr: "invalid slot range 16000-16384: slots are 0 to 16383"},
		{name: "assign slot -1", op: func(m *Map) error { return m.AssignSlots(rs(-1, 3), 4) },
			wantErr: "invalid slot range -1-3: slots are 0 to 16383"},
		{name: "assign reversed range", op: func(m *Map) error { return m.AssignSlots(rs(300, 200), 4) },
			wantErr: "invalid slot range 300-200: slots are 0 to 16383"},
		{name: "assign overlapping ranges", op: func(m *Map) error { return m.AssignSlots(rs(200, 300, 300, 400), 4) },
			wantErr: "slot 300 is given twice"},

		{name: "begin move", op: func(m *Map) error { return m.BeginMove(rs(50, 59, 0, 0), 2) },
			check: func(t *testing.T, m *Map) {
				wantMoving(t, m, 0, 1, 2)
				wantMoving(t, m, 59, 1, 2)
				wantMoving(t, m, 60, 0, 0)
			}},
		{name: "begin move, two owners", op: func(m *Map) error { return m.BeginMove(rs(90, 109), 4) },
			wantErr: "slot 100 is owned by group 2, not group 1: move one group's slots at a time"},
		{name: "begin move, unassigned", op: func(m *Map) error { return m.BeginMove(rs(99, 99, 200, 201), 4) },
			wantErr: "slot 200 is unassigned"},
		{name: "begin move to owner", op: func(m *Map) error { return m.BeginMove(rs(5, 5), 1) },
			wantErr: "slot 5 is already owned by group 1"},
		{name: "begin move, moving", op: func(m *Map) error { return m.BeginMove(rs(140, 150), 4) },
			wantErr: "slot 150 is already moving to group 3"},
		{name: "begin move to unknown group", op: func(m *Map) error { return m.BeginMove(rs(5, 5), 9) },
			wantErr: "unknown group 9"},
		{name: "begin move, no slots", op: func(m *Map) error { return m.BeginMove(nil, 2) },
			wantErr: "no slots given"},

		{name: "finish move", op: func(m *Map) error { return m.FinishMove(rs(150, 154)) },
			check: func(t *testing.T, m *Map) {
				wantRanges(t, m, OwnedRange{Range{0, 99}, 1}, OwnedRange{Range{100, 149}, 2},
					OwnedRange{Range{150, 154}, 3}, OwnedRange{Range{155, 199}, 2})
				wantMoving(t, m, 154, 0, 0)
				wantMoving(t, m, 155, 2, 3)
			}},
		{name: "finish move, not moving", op: func(m *Map) error { return m.FinishMove(rs(150, 160)) },
			wantErr: "slot 160 is not moving"},
		{name: "finish move, bad range", op: func(m *Map) error { return m.FinishMove(rs(150, 16384)) },
			wantErr: "invalid slot range 150-16384: slots are 0 to 16383"},

		{name: "abort move", op: func(m *Map) error { return m.AbortMove(rs(150, 159)) },
			check: func(t *testing.T, m *Map) {
				wantRanges(t, m, OwnedRange{Range{0, 99}, 1}, OwnedRange{Range{100, 199}, 2})
				wantMoving(t, m, 150, 0, 0)
			}},
		{name: "abort move, not moving", op: func(m *Map) error { return m.AbortMove(rs(151, 152, 3, 3)) },
			wantErr: "slot 3 is not moving"},
		{name: "abort move, no slots", op: func(m *Map) error { return m.AbortMove([]Range{}) },
			wantErr: "no slots given"},

		{name: "set voters", op: func(m *Map) error { return m.SetVoters(1, []string{idD, idA}) },
			check: func(t *testing.T, m *Map) { wantVoters(t, m, 1, idD, idA) }},
		{name: "set voters, unknown group", op: func(m *Map) error { return m.SetVoters(9, []string{idA}) },
			wantErr: "unknown group 9"},
		{name: "set voters, unknown node", op: func(m *Map) error { return m.SetVoters(1, []string{idX}) },
			wantErr: "unknown node " + idX},
		{name: "set voters, none", op: func(m *Map) error { return m.SetVoters(1, []string{}) },
			wantErr: "a group needs at least one voter"},

		{name: "set leader", op: func(m *Map) error { return m.SetLeader(1, idB, 3) },
			check: func(t *testing.T, m *Map) {
				wantLeader(t, m, 1, idB, 3)
				wantLeader(t, m, 2, "", 0)
			}},
		{name: "set leader, next term", setup: leads(1, idA, 3), op: func(m *Map) error { return m.SetLeader(1, idB, 4) },
			check: func(t *testing.T, m *Map) { wantLeader(t, m, 1, idB, 4) }},
		{name: "set leader, same leader in a later term", setup: leads(1, idA, 3),
			op:    func(m *Map) error { return m.SetLeader(1, idA, 9) },
			check: func(t *testing.T, m *Map) { wantLeader(t, m, 1, idA, 9) }},
		// Recording the recorded leader and term again is a success that
		// changes only Epoch, so that a proposer may retry.
		{name: "set leader again", setup: leads(1, idA, 3), op: func(m *Map) error { return m.SetLeader(1, idA, 3) },
			check: func(t *testing.T, m *Map) {
				wantLeader(t, m, 1, idA, 3)
				if m.Epoch != 13 {
					t.Fatalf("epoch %d, want 13", m.Epoch)
				}
			}},
		{name: "set leader, second leader of a term", setup: leads(1, idA, 3),
			op:      func(m *Map) error { return m.SetLeader(1, idB, 3) },
			wantErr: "group 1 already had a leader in term 3"},
		{name: "set leader, older term", setup: leads(1, idA, 3),
			op:      func(m *Map) error { return m.SetLeader(1, idB, 2) },
			wantErr: "group 1 is in term 3, later than term 2"},
		{name: "set leader, same leader in an older term", setup: leads(1, idA, 3),
			op:      func(m *Map) error { return m.SetLeader(1, idA, 1) },
			wantErr: "group 1 is in term 3, later than term 1"},
		{name: "set leader, unknown group", op: func(m *Map) error { return m.SetLeader(9, idA, 1) },
			wantErr: "unknown group 9"},
		{name: "set leader, group 0", op: func(m *Map) error { return m.SetLeader(0, idA, 1) },
			wantErr: "invalid group 0: groups are numbered 1 to 65535"},
		{name: "set leader, not a voter", op: func(m *Map) error { return m.SetLeader(2, idA, 1) },
			wantErr: "node " + idA + " is not a voter of group 2"},
		{name: "set leader, unknown node", op: func(m *Map) error { return m.SetLeader(1, idX, 1) },
			wantErr: "node " + idX + " is not a voter of group 1"},
		{name: "set leader, bad node ID", op: func(m *Map) error { return m.SetLeader(1, "a", 1) },
			wantErr: `invalid node ID "a"`},
		{name: "set leader, term 0", op: func(m *Map) error { return m.SetLeader(1, idA, 0) },
			wantErr: "invalid term 0: Raft terms start at 1"},

		{name: "remove group drops its leader", setup: leads(4, idD, 5), op: func(m *Map) error { return m.RemoveGroup(4) },
			check: func(t *testing.T, m *Map) {
				wantLeader(t, m, 4, "", 0)
				// A new group 4 is a new Raft group: its terms start over.
				must(t, m.CreateGroup(4, []string{idD}))
				must(t, m.SetLeader(4, idD, 1))
			}},
		{name: "set voters keeping the leader", setup: leads(1, idB, 3),
			op:    func(m *Map) error { return m.SetVoters(1, []string{idD, idB}) },
			check: func(t *testing.T, m *Map) { wantLeader(t, m, 1, idB, 3) }},
		// A leader that leaves the voters is cleared, its term kept: no
		// second leader of that term, nor one of an older term, can be
		// recorded after it.
		{name: "set voters dropping the leader", setup: leads(1, idA, 3),
			op: func(m *Map) error { return m.SetVoters(1, []string{idB, idC}) },
			check: func(t *testing.T, m *Map) {
				wantLeader(t, m, 1, "", 3)
				wantErr(t, m.SetLeader(1, idB, 3), "group 1 already had a leader in term 3")
				wantErr(t, m.SetLeader(1, idB, 2), "group 1 is in term 3, later than term 2")
				must(t, m.SetLeader(1, idB, 4))
				wantLeader(t, m, 1, idB, 4)
			}},
		// Not even the cleared leader itself, back among the voters: the map
		// no longer knows who led that term.
		{name: "set leader, cleared leader back in its term", setup: func(m *Map) {
			leads(1, idA, 3)(m)
			must(t, m.SetVoters(1, []string{idB}))
			must(t, m.SetVoters(1, []string{idA, idB}))
		}, op: func(m *Map) error { return m.SetLeader(1, idA, 3) },
			wantErr: "group 1 already had a leader in term 3"},
		{name: "remove leader node", setup: leads(4, idD, 1), op: func(m *Map) error { return m.RemoveNode(idD) },
			wantErr: "node " + idD + " is a voter of group 4"},

		{name: "unknown op", op: func(m *Map) error { return m.Apply(Op{Kind: 11}) },
			wantErr: "unknown cluster map op 11"},
		{name: "op 0", op: func(m *Map) error { return m.Apply(Op{}) },
			wantErr: "unknown cluster map op 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := fixture(t)
			if tt.setup != nil {
				tt.setup(m)
			}
			before := m.Clone()
			err := tt.op(m)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				wantSame(t, m, before)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Epoch <= before.Epoch {
				t.Fatalf("epoch %d after a change from %d", m.Epoch, before.Epoch)
			}
			must(t, m.check())
			tt.check(t, m)
		})
	}
}

// wantSame fails unless m and want hold the same map and epoch.
func wantSame(t *testing.T, m, want *Map) {
	t.Helper()
	if m.Epoch != want.Epoch || !bytes.Equal(m.Encode(), want.Encode()) {
		t.Fatalf("map changed: epoch %d, was %d", m.Epoch, want.Epoch)
	}
}

// leads is a setup that records node id as group's leader in term.
func leads(group uint16, id string, term uint64) func(m *Map) {
	return func(m *Map) {
		if err := m.SetLeader(group, id, term); err != nil {
			panic(err)
		}
	}
}

func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

func wantLeader(t *testing.T, m *Map, group uint16, id string, term uint64) {
	t.Helper()
	if gotID, gotTerm := m.Leader(group); gotID != id || gotTerm != term {
		t.Fatalf("Leader(%d) = %q, %d; want %q, %d", group, gotID, gotTerm, id, term)
	}
}

func wantNodes(t *testing.T, m *Map, ids ...string) {
	t.Helper()
	var got []string
	for _, n := range m.Nodes() {
		got = append(got, n.ID)
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("nodes %v, want %v", got, ids)
	}
}

func wantGroups(t *testing.T, m *Map, ids ...uint16) {
	t.Helper()
	var got []uint16
	for _, g := range m.Groups() {
		got = append(got, g.ID)
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("groups %v, want %v", got, ids)
	}
}

func wantVoters(t *testing.T, m *Map, group uint16, voters ...string) {
	t.Helper()
	for _, g := range m.Groups() {
		if g.ID == group && slices.Equal(g.Voters, voters) {
			return
		}
	}
	t.Fatalf("group %d does not have voters %v: %v", group, voters, m.Groups())
}

func wantRanges(t *testing.T, m *Map, want ...OwnedRange) {
	t.Helper()
	if got := m.Ranges(); !slices.Equal(got, want) {
		t.Fatalf("Ranges %v, want %v", got, want)
	}
}

func wantMoving(t *testing.T, m *Map, slot int, from, to uint16) {
	t.Helper()
	f, tt, ok := m.Moving(slot)
	if f != from || tt != to || ok != (to != 0) {
		t.Fatalf("Moving(%d) = %d, %d, %v; want %d, %d", slot, f, tt, ok, from, to)
	}
}

// TestCloneIsDeep changes a clone and a value Groups returned, and checks
// that the original sees neither.
func TestCloneIsDeep(t *testing.T) {
	m := fixture(t)
	must(t, m.SetLeader(2, idB, 1))
	want := m.Encode()
	c := m.Clone()
	wantLeader(t, c, 2, idB, 1)
	must(t, c.SetLeader(2, idB, 2))
	must(t, c.SetLeader(3, idC, 1))
	must(t, c.SetVoters(1, []string{idD}))
	must(t, c.AssignSlots(rs(500, 600), 4))
	must(t, c.AddNode(node(idX, "7009")))
	m.Groups()[0].Voters[0] = idX
	if !bytes.Equal(m.Encode(), want) {
		t.Fatal("changing a clone or Groups' result changed the map")
	}
	voters := []string{idA}
	must(t, m.CreateGroup(7, voters))
	voters[0] = idB
	wantVoters(t, m, 7, idA)
}

func TestZeroMap(t *testing.T) {
	var m Map
	if id, term := m.Leader(1); m.Ranges() != nil || len(m.Groups()) != 0 || len(m.Nodes()) != 0 || m.Owner(0) != 0 || id != "" || term != 0 {
		t.Fatal("zero map is not empty")
	}
	c := m.Clone()
	must(t, c.AddNode(node(idA, "7001")))
	if len(m.Nodes()) != 0 {
		t.Fatal("clone of the zero map shares its nodes")
	}
}
