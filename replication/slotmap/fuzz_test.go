package slotmap

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// ledFixture is the fixture with leader records: C leads group 1 in
// term 7, B group 2 in term 2^64-1; group 4's leader D of term 2 has
// left its voters (now A), so only term 2 is kept.
func ledFixture(t testing.TB) *Map {
	t.Helper()
	m := fixture(t)
	must(t, m.SetLeader(1, idC, 7))
	must(t, m.SetLeader(2, idB, 1<<64-1))
	must(t, m.SetLeader(4, idD, 2))
	must(t, m.SetVoters(4, []string{idA}))
	return m
}

// seedMaps are the fixture (with and without leaders) and the maps of a
// short model run: real encodings to start the fuzzers from.
func seedMaps(f *testing.F) (maps []*Map, ops []Op) {
	maps = append(maps, new(Map), fixture(f), ledFixture(f))
	r := rand.New(rand.NewPCG(1, 14))
	m, md := new(Map), newModel()
	for step := range 300 {
		op := randomOp(r, md)
		md.apply(op)
		if m.Apply(op) == nil {
			ops = append(ops, op)
		}
		if step%30 == 0 {
			maps = append(maps, m.Clone())
		}
	}
	return maps, ops
}

// FuzzDecodeMap: decoding never panics, and whatever decodes is a valid
// map that encodes back to the same bytes.
func FuzzDecodeMap(f *testing.F) {
	maps, _ := seedMaps(f)
	for _, m := range maps {
		f.Add(m.Encode())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeMap(data)
		if err != nil {
			return
		}
		if err := m.check(); err != nil {
			t.Fatalf("decoded an invalid map: %v", err)
		}
		if got := m.Encode(); !bytes.Equal(got, data) {
			t.Fatalf("decoded % x\nencodes to % x", data, got)
		}
	})
}

// FuzzDecodeOp: decoding never panics; whatever decodes encodes back to
// the same bytes, and applying it to the fixture with leaders either
// changes the map (and Epoch) or changes nothing. No op lowers a group's
// recorded term, and a set-leader that applies is what Leader reports.
func FuzzDecodeOp(f *testing.F) {
	_, ops := seedMaps(f)
	for _, op := range ops {
		b, err := op.Encode()
		must(f, err)
		f.Add(b)
	}
	base := ledFixture(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		op, err := DecodeOp(data)
		if err != nil {
			return
		}
		if got, err := op.Encode(); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("decoded % x\nencodes to % x (%v)", data, got, err)
		}
		m := base.Clone()
		if err := m.Apply(op); err != nil {
			wantSame(t, m, base)
			return
		}
		if m.Epoch != base.Epoch+1 {
			t.Fatalf("epoch %d after one op on %d", m.Epoch, base.Epoch)
		}
		must(t, m.check())
		for _, g := range m.Groups() {
			_, was := base.Leader(g.ID)
			if _, term := m.Leader(g.ID); term < was {
				t.Fatalf("%v: group %d went from term %d to %d", op.Kind, g.ID, was, term)
			}
		}
		if op.Kind == OpSetLeader {
			wantLeader(t, m, op.Group, op.Node.ID, op.Term)
		}
	})
}
