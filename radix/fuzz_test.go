package radix

import (
	"math/rand/v2"
	"testing"
)

// byteSource turns fuzz input into the harness's random choices, one byte
// per choice, and reports when the input is used up.
type byteSource struct {
	data []byte
	done bool
}

func (s *byteSource) IntN(n int) int {
	if len(s.data) == 0 {
		s.done = true
		return 0
	}
	v := int(s.data[0])
	s.data = s.data[1:]
	if n > 256 && len(s.data) > 0 {
		v = v<<8 | int(s.data[0])
		s.data = s.data[1:]
	}
	return v % n
}

// FuzzTree decodes the input as a sequence of operations (insert, delete,
// get, seek with every operator, moves both ways on three live iterators,
// SetValue, runs of inserts and deletes, full scans) and compares the tree
// with the model after every step, checking the shape invariants as well.
func FuzzTree(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 2, 'a', 0, 0, 2, 'b', 15, 6, 0, 2, 0, 1, 8, 0, 3})
	// Insert a run under one prefix (grows to node256), seek into it, walk
	// back, delete most of it (shrinks back), scan.
	f.Add([]byte{13, 2, 'x', 1, 0xff, 6, 1, 4, 2, 'x', 10, 1, 7, 14, 0, 0, 1, 0xf0, 15, 9, 1, 5})
	// Stream IDs: inserts, a seek at a millisecond, deletes from the head.
	f.Add([]byte{0, 4, 1, 0, 3, 0, 4, 1, 0, 4, 0, 4, 1, 0, 5, 6, 0, 5, 4, 1, 0, 4, 8, 0, 2, 3, 1, 1, 15})
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 4; i++ {
		b := make([]byte, 64+r.IntN(512))
		for j := range b {
			b[j] = byte(r.UintN(256))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &byteSource{data: data}
		h := newHarness(src)
		for !src.done {
			if err := h.step(); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.verify(); err != nil {
			t.Fatal(err)
		}
	})
}
