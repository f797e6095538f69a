package radix

import (
	"math/rand/v2"
	"testing"
)

// TestModel runs long random operation sequences against the model.
func TestModel(t *testing.T) {
	seeds, steps := 4, 40000
	if testing.Short() || raceEnabled {
		seeds, steps = 2, 15000
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		h := newHarness(rand.New(rand.NewPCG(seed, seed*7919)))
		for i := 0; i < steps; i++ {
			if err := h.step(); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
		if err := h.verify(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}
