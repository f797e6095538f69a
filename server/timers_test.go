package server

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestBlockTimersModel drives the loop's timer heap with random adds,
// removals (a wait served or unblocked) and pops (a timeout), checked
// against a plain slice: the heap always pops the earliest deadline, each
// wait knows its place in it (removal by that index must take exactly
// that wait), and a wait that left has no place.
func TestBlockTimersModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 12))
	base := time.Unix(1_800_000_000, 0)
	var h blockTimers
	var model []*blockState
	for step := range 20000 {
		switch op := rng.IntN(10); {
		case op < 5 || len(model) == 0: // a client blocks with a timeout
			b := &blockState{deadline: base.Add(time.Duration(rng.IntN(1000)) * time.Millisecond), timer: -1}
			heap.Push(&h, b)
			model = append(model, b)
		case op < 8: // a wait ends early: served or unblocked
			i := rng.IntN(len(model))
			b := model[i]
			heap.Remove(&h, b.timer)
			b.timer = -1
			model = slices.Delete(model, i, i+1)
		default: // the earliest timeout passes
			b := heap.Pop(&h).(*blockState)
			earliest := slices.MinFunc(model, func(x, y *blockState) int { return x.deadline.Compare(y.deadline) })
			if !b.deadline.Equal(earliest.deadline) {
				t.Fatalf("step %d: popped deadline %v, the earliest is %v", step, b.deadline, earliest.deadline)
			}
			if b.timer != -1 {
				t.Fatalf("step %d: a popped wait still has place %d", step, b.timer)
			}
			model = slices.DeleteFunc(model, func(x *blockState) bool { return x == b })
		}
		if len(h) != len(model) {
			t.Fatalf("step %d: heap holds %d waits, model %d", step, len(h), len(model))
		}
		for i, b := range h {
			if b.timer != i {
				t.Fatalf("step %d: wait at %d thinks it is at %d", step, i, b.timer)
			}
			if i > 0 && h[(i-1)/2].deadline.After(b.deadline) {
				t.Fatalf("step %d: heap order broken at %d", step, i)
			}
		}
	}
}
