package slotmap

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// seedMaps are the fixture and the maps of a short model run: real
// encodings to start the fuzzers from.
func seedMaps(f *testing.F) (maps []*Map, ops []Op) {
	maps = append(maps, new(Map), fixture(f))
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
// the same bytes, and applying it to the fixture either changes the map
// (and Epoch) or changes nothing.
func FuzzDecodeOp(f *testing.F) {
	_, ops := seedMaps(f)
	for _, op := range ops {
		b, err := op.Encode()
		must(f, err)
		f.Add(b)
	}
	base := fixture(f)
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
	})
}
