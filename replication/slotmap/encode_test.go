package slotmap

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGolden pins the byte layouts drawn in the package doc.
func TestGolden(t *testing.T) {
	b, err := Op{Kind: OpAssignSlots, Group: 1, Ranges: rs(0, 5460)}.Encode()
	must(t, err)
	if want := unhex(t, "01 05 0001 00000001 0000 1554"); !bytes.Equal(b, want) {
		t.Fatalf("assign-slots op is % x, want % x", b, want)
	}

	id := hex.EncodeToString([]byte(idA))
	b, err = Op{Kind: OpSetLeader, Group: 3, Node: Node{ID: idA}, Term: 258}.Encode()
	must(t, err)
	if want := unhex(t, "01 0a 0028"+id+"0003 0000000000000102"); !bytes.Equal(b, want) {
		t.Fatalf("set-leader op is % x, want % x", b, want)
	}

	m := new(Map)
	must(t, m.AddNode(Node{ID: idA, Addr: "h:1", BusAddr: "h:2"}))
	must(t, m.AddNode(Node{ID: idB, Addr: "h:3", BusAddr: "h:4"}))
	must(t, m.CreateGroup(3, []string{idA}))
	must(t, m.CreateGroup(7, []string{idA}))
	must(t, m.CreateGroup(8, []string{idA, idB}))
	must(t, m.AssignSlots(rs(0, 9, 20, 20), 3))
	must(t, m.BeginMove(rs(5, 9), 7))
	must(t, m.SetLeader(8, idA, 2))
	must(t, m.SetVoters(8, []string{idB})) // clears 8's leader, keeps term 2
	must(t, m.SetLeader(3, idA, 258))
	idb := hex.EncodeToString([]byte(idB))
	want := unhex(t, "01 000000000000000a"+ // version, epoch 10
		"00000002 0028"+id+"0003"+hex.EncodeToString([]byte("h:1"))+"0003"+hex.EncodeToString([]byte("h:2"))+
		"0028"+idb+"0003"+hex.EncodeToString([]byte("h:3"))+"0003"+hex.EncodeToString([]byte("h:4"))+
		"00000003 0003 00000001 0028"+id+" 0007 00000001 0028"+id+" 0008 00000001 0028"+idb+ // groups 3, 7, 8
		"00000002 0000 0009 0003 0014 0014 0003"+ // 0-9 and 20 owned by 3
		"00000001 0005 0009 0007"+ // 5-9 moving to 7
		"00000002 0003 0028"+id+"0000000000000102 0008 0000 0000000000000002") // leaders of 3 and 8
	if got := m.Encode(); !bytes.Equal(got, want) {
		t.Fatalf("map is\n% x\nwant\n% x", got, want)
	}
}

// TestOpRoundTrip encodes and decodes one op of each kind.
func TestOpRoundTrip(t *testing.T) {
	for _, op := range []Op{
		{Kind: OpAddNode, Node: node(idA, "7001")},
		{Kind: OpRemoveNode, Node: Node{ID: idA}},
		{Kind: OpCreateGroup, Group: 65535, Voters: []string{idB, idA}},
		{Kind: OpRemoveGroup, Group: 1},
		{Kind: OpAssignSlots, Group: 2, Ranges: rs(16383, 16383, 0, 5)},
		{Kind: OpBeginMove, Group: 3, Ranges: rs(7, 9)},
		{Kind: OpFinishMove, Ranges: rs(0, 16383)},
		{Kind: OpAbortMove, Ranges: rs(1, 1, 3, 3)},
		{Kind: OpSetVoters, Group: 4, Voters: []string{idC}},
		{Kind: OpSetLeader, Group: 5, Node: Node{ID: idD}, Term: 1<<64 - 1},
	} {
		b, err := op.Encode()
		must(t, err)
		got, err := DecodeOp(b)
		must(t, err)
		if b2, _ := got.Encode(); !bytes.Equal(b2, b) || got.Kind != op.Kind || got.Group != op.Group || got.Node != op.Node || got.Term != op.Term {
			t.Fatalf("%v: decoded %+v from %+v", op.Kind, got, op)
		}
	}
	// Fields the kind does not read are not encoded.
	b, _ := Op{Kind: OpRemoveGroup, Group: 1, Voters: []string{idA}, Ranges: rs(1, 1)}.Encode()
	if want := unhex(t, "01 04 0001"); !bytes.Equal(b, want) {
		t.Fatalf("remove-group is % x, want % x", b, want)
	}
}

func TestOpEncodeRefusesBadOps(t *testing.T) {
	for _, op := range []Op{
		{},
		{Kind: OpAddNode, Node: Node{ID: idA, Addr: strings.Repeat("h", 70000) + ":1", BusAddr: "h:1"}},
		{Kind: OpAssignSlots, Group: 1, Ranges: rs(0, 70000)},
		{Kind: OpCreateGroup, Group: 1},
		{Kind: OpSetLeader, Group: 1, Node: Node{ID: idA}},
	} {
		if b, err := op.Encode(); err == nil {
			t.Errorf("%+v encoded to % x", op, b)
		}
	}
}

func TestMapRoundTrip(t *testing.T) {
	led := ledFixture(t)
	for _, m := range []*Map{new(Map), fixture(t), led} {
		d, err := DecodeMap(m.Encode())
		must(t, err)
		wantSame(t, d, m)
		if len(d.Nodes()) != len(m.Nodes()) || len(d.Groups()) != len(m.Groups()) {
			t.Fatal("nodes or groups lost")
		}
		for g := range uint16(6) {
			id, term := m.Leader(g)
			wantLeader(t, d, g, id, term)
		}
	}
	wantLeader(t, led, 4, "", 2)
}

// mapBytes builds a map encoding field by field, for corrupt ones.
type mapBytes struct {
	nodes, groups [][]byte
	owners, moves [][3]uint16
	leaders       [][]byte
	version       byte
	tail          []byte
}

func (mb mapBytes) bytes() []byte {
	b := binary.BigEndian.AppendUint64([]byte{mb.version}, 1)
	for _, items := range [][][]byte{mb.nodes, mb.groups} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(items)))
		for _, item := range items {
			b = append(b, item...)
		}
	}
	for _, runs := range [][][3]uint16{mb.owners, mb.moves} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(runs)))
		for _, r := range runs {
			b = binary.BigEndian.AppendUint16(appendRange(b, Range{int(r[0]), int(r[1])}), r[2])
		}
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(mb.leaders)))
	for _, l := range mb.leaders {
		b = append(b, l...)
	}
	return append(b, mb.tail...)
}

func leaderRec(group uint16, id string, term uint64) []byte {
	return binary.BigEndian.AppendUint64(appendString(binary.BigEndian.AppendUint16(nil, group), id), term)
}

func group(id uint16, voters ...string) []byte {
	return appendStrings(binary.BigEndian.AppendUint16(nil, id), voters)
}

// TestDecodeMapStrict: every way a map encoding can be wrong is refused,
// with ErrCorrupt. The first case is the valid base the others change.
func TestDecodeMapStrict(t *testing.T) {
	nA, nB := appendNode(nil, node(idA, "1")), appendNode(nil, node(idB, "2"))
	base := mapBytes{version: 1, nodes: [][]byte{nA, nB}, groups: [][]byte{group(1, idA), group(2, idB)},
		owners: [][3]uint16{{0, 9, 1}, {10, 19, 2}}, moves: [][3]uint16{{5, 9, 2}},
		leaders: [][]byte{leaderRec(1, idA, 5), leaderRec(2, "", 3)}}
	if _, err := DecodeMap(base.bytes()); err != nil {
		t.Fatalf("base: %v", err)
	}
	tests := map[string]func(mb *mapBytes){
		"version 0":             func(mb *mapBytes) { mb.version = 0 },
		"version 2":             func(mb *mapBytes) { mb.version = 2 },
		"trailing byte":         func(mb *mapBytes) { mb.tail = []byte{0} },
		"duplicate node":        func(mb *mapBytes) { mb.nodes = [][]byte{nA, nA} },
		"nodes out of order":    func(mb *mapBytes) { mb.nodes = [][]byte{nB, nA} },
		"bad node ID":           func(mb *mapBytes) { mb.nodes[1] = appendNode(nil, node("b", "2")) },
		"bad address":           func(mb *mapBytes) { mb.nodes[1] = appendNode(nil, Node{idB, "h", "h:1"}) },
		"duplicate group":       func(mb *mapBytes) { mb.groups = [][]byte{group(1, idA), group(1, idB)} },
		"groups out of order":   func(mb *mapBytes) { mb.groups = [][]byte{group(2, idB), group(1, idA)} },
		"group 0":               func(mb *mapBytes) { mb.groups[0] = group(0, idA) },
		"unknown voter":         func(mb *mapBytes) { mb.groups[0] = group(1, idX) },
		"voter twice":           func(mb *mapBytes) { mb.groups[0] = group(1, idA, idA) },
		"no voters":             func(mb *mapBytes) { mb.groups[0] = group(1) },
		"unknown owner":         func(mb *mapBytes) { mb.owners[1][2] = 3 },
		"owner 0":               func(mb *mapBytes) { mb.owners[1][2] = 0 },
		"slot 16384":            func(mb *mapBytes) { mb.owners[1] = [3]uint16{10, NumSlots, 2} },
		"reversed run":          func(mb *mapBytes) { mb.owners[1] = [3]uint16{19, 10, 2} },
		"overlapping runs":      func(mb *mapBytes) { mb.owners[1][0] = 9 },
		"runs out of order":     func(mb *mapBytes) { mb.owners[0], mb.owners[1] = mb.owners[1], mb.owners[0] },
		"runs not merged":       func(mb *mapBytes) { mb.owners = [][3]uint16{{0, 4, 1}, {5, 9, 1}, {10, 19, 2}} },
		"move to owner":         func(mb *mapBytes) { mb.moves[0][2] = 1 },
		"move to unknown group": func(mb *mapBytes) { mb.moves[0][2] = 3 },
		"move of free slot":     func(mb *mapBytes) { mb.moves[0] = [3]uint16{20, 20, 1} },
		"huge count":            func(mb *mapBytes) { mb.nodes = nil; mb.tail = nil },
		"leader of no group":    func(mb *mapBytes) { mb.leaders = append(mb.leaders, leaderRec(3, idA, 1)) },
		"cleared, of no group":  func(mb *mapBytes) { mb.leaders = append(mb.leaders, leaderRec(3, "", 1)) },
		"leader not a voter":    func(mb *mapBytes) { mb.leaders[0] = leaderRec(1, idB, 5) },
		"leader unknown":        func(mb *mapBytes) { mb.leaders[0] = leaderRec(1, idX, 5) },
		"leader in term 0":      func(mb *mapBytes) { mb.leaders[0] = leaderRec(1, idA, 0) },
		"cleared in term 0":     func(mb *mapBytes) { mb.leaders[1] = leaderRec(2, "", 0) },
		"leader of group 0":     func(mb *mapBytes) { mb.leaders[0] = leaderRec(0, idA, 5) },
		"two leaders":           func(mb *mapBytes) { mb.leaders[1] = leaderRec(1, idA, 5) },
		"leaders out of order":  func(mb *mapBytes) { mb.leaders[0], mb.leaders[1] = mb.leaders[1], mb.leaders[0] },
		"huge leader count":     func(mb *mapBytes) { mb.leaders = nil },
	}
	for name, change := range tests {
		t.Run(name, func(t *testing.T) {
			mb := base
			mb.nodes, mb.groups = append([][]byte(nil), base.nodes...), append([][]byte(nil), base.groups...)
			mb.owners, mb.moves = append([][3]uint16(nil), base.owners...), append([][3]uint16(nil), base.moves...)
			mb.leaders = append([][]byte(nil), base.leaders...)
			change(&mb)
			b := mb.bytes()
			if name == "huge count" {
				b = append(b[:9], 0xff, 0xff, 0xff, 0xff)
			}
			if name == "huge leader count" { // the last count, of no leaders
				b = append(b[:len(b)-4], 0xff, 0xff, 0xff, 0xff)
			}
			if m, err := DecodeMap(b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decoded %v, error %v", m, err)
			}
		})
	}
	// Every prefix of a valid encoding is refused.
	full := base.bytes()
	for n := range len(full) {
		if _, err := DecodeMap(full[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%d of %d bytes: error %v", n, len(full), err)
		}
	}
}

func TestDecodeOpStrict(t *testing.T) {
	tests := map[string]string{
		"empty":                  "",
		"version only":           "01",
		"version 2":              "02 04 0001",
		"unknown kind":           "01 0b",
		"set-leader, term 0":     "01 0a 0028" + hex.EncodeToString([]byte(idA)) + "0001 0000000000000000",
		"set-leader, short term": "01 0a 0028" + hex.EncodeToString([]byte(idA)) + "0001 00000000000001",
		"set-leader, bad ID":     "01 0a 0001 61 0001 0000000000000001",
		"set-leader, group 0":    "01 0a 0028" + hex.EncodeToString([]byte(idA)) + "0000 0000000000000001",
		"kind 0":                 "01 00",
		"trailing byte":          "01 04 0001 00",
		"short":                  "01 04 00",
		"group 0":                "01 04 0000",
		"slot 16384":             "01 07 00000001 0000 4000",
		"reversed range":         "01 07 00000001 0005 0004",
		"overlap":                "01 07 00000002 0000 0005 0005 0006",
		"no ranges":              "01 07 00000000",
		"huge count":             "01 07 ffffffff 0000 0001",
		"bad node ID":            "01 02 0001 61",
		"no voters":              "01 03 0001 00000000",
	}
	for name, h := range tests {
		if op, err := DecodeOp(unhex(t, h)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: decoded %+v, error %v", name, op, err)
		}
	}
}
