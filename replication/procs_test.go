package replication

import (
	"io"
	"log/slog"
	"runtime"
	"testing"
)

// The rule grows at once when the Ps are busy and shrinks only after
// procsShrinkAfter quiet periods in a row.
func TestNextProcsGrowsAtOnceAndShrinksAfterQuietPeriods(t *testing.T) {
	steps := []struct {
		used float64
		want int
	}{
		{0.10, 1}, // idle: one P
		{0.79, 1}, // below growAt of one P
		{0.95, 2}, // busy: grow at once
		{1.70, 3},
		{2.50, 4},
		{3.50, 4}, // at the most allowed
		{1.00, 4}, // 1.0 < 0.6*3: quiet, but only once
		{2.00, 4}, // not quiet: the count starts again
		{1.00, 4}, {1.00, 4}, {1.00, 4},
		{1.00, 3}, // the fourth quiet period in a row
		{0.50, 3}, {0.50, 3}, {0.50, 3},
		{0.50, 2},
		{0.59, 2}, {0.59, 2}, {0.59, 2},
		{0.59, 1},
	}
	procs, low := 1, 0
	for i, s := range steps {
		procs = nextProcs(procs, 4, s.used, &low)
		if procs != s.want {
			t.Fatalf("step %d (%.2f cores used): %d Ps, want %d", i, s.used, procs, s.want)
		}
	}
}

func TestProcsGovernorStartsAtOnePAndGivesThemBack(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	g := StartProcsGovernor(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("GOMAXPROCS %d after the start, want 1", n)
	}
	g.Stop()
	if n := runtime.GOMAXPROCS(0); n != 3 {
		t.Fatalf("GOMAXPROCS %d after Stop, want the 3 it started with", n)
	}
	g.Stop() // twice is harmless

	runtime.GOMAXPROCS(1)
	g = StartProcsGovernor(slog.New(slog.NewTextHandler(io.Discard, nil)))
	g.Stop()
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("GOMAXPROCS %d, want 1: a process started with one P has nothing to size", n)
	}
}
