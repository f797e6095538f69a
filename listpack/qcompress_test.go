package listpack

import (
	"bytes"
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"testing"

	"github.com/redstream/redstream/lzf"
)

func TestCompressDepthClamps(t *testing.T) {
	q := NewQuicklist(DefaultFill)
	for _, c := range []struct{ set, want int }{{1, 1}, {-3, 0}, {70000, maxDepth}, {maxDepth, maxDepth}, {0, 0}} {
		q.SetCompressDepth(c.set)
		if got := q.CompressDepth(); got != c.want {
			t.Fatalf("SetCompressDepth(%d): depth %d, want %d", c.set, got, c.want)
		}
	}
}

// compressibleList returns a list of n 100-byte values that compress well.
func compressibleList(n, depth int) *Quicklist {
	q := NewQuicklist(DefaultFill)
	q.SetCompressDepth(depth)
	for i := range n {
		q.PushTail(fmt.Appendf(nil, "job-%07d:%088d", i, 0))
	}
	return q
}

// TestCompressRules checks which nodes are compressed: none within the
// depth of either end, none of a list too short to have inner nodes, and
// none that would be smaller than 48 bytes or save 8 bytes or fewer.
func TestCompressRules(t *testing.T) {
	q := compressibleList(1000, 2) // 13 nodes of 8 KiB
	n := q.NodeCount()
	for k := range n {
		if got, want := q.nodes.at(k).compressed(), k >= 2 && k < n-2; got != want {
			t.Fatalf("node %d of %d: compressed %v", k, n, got)
		}
	}
	if short := compressibleList(300, 2); short.CompressedNodes() != 0 {
		t.Fatalf("a list of %d nodes has compressed nodes at depth 2", short.NodeCount())
	}
	small := NewQuicklist(1) // one element a node
	small.SetCompressDepth(1)
	for range 5 {
		small.PushTail(bytes.Repeat([]byte{'a'}, 39)) // a 48-byte node
		small.PushTail(bytes.Repeat([]byte{'a'}, 38)) // a 47-byte node
	}
	sizes := map[int]bool{}
	for k := 1; k < small.NodeCount()-1; k++ {
		nd := small.nodes.at(k)
		if nd.compressed() != (nd.size() >= minCompressBytes) {
			t.Fatalf("node of %d bytes: compressed %v", nd.size(), nd.compressed())
		}
		sizes[nd.size()] = true
	}
	if !sizes[minCompressBytes] || !sizes[minCompressBytes-1] {
		t.Fatalf("node sizes %v: the threshold was not tried", sizes)
	}
	// Around Redis's threshold: a node is kept compressed only if that
	// saves more than 8 bytes.
	rng := rand.New(rand.NewSource(1))
	noise := make([]byte, 200)
	rng.Read(noise) // incompressible, so the run of 'a' decides the gain
	seen := map[int]bool{}
	for run := range 200 {
		lp := New().Append(append(slices.Clone(noise), bytes.Repeat([]byte{'a'}, run)...))
		m := lzf.Compress(make([]byte, len(lp)), lp)
		if gain := len(lp) - m; m > 0 && (gain == minCompressGain || gain == minCompressGain+1) {
			nd := qnode{lp: lp, count: 1}
			q.compress(&nd)
			if nd.compressed() != (gain > minCompressGain) {
				t.Fatalf("a node that compression makes %d bytes shorter: compressed %v", gain, nd.compressed())
			}
			seen[gain] = true
		}
	}
	if len(seen) != 2 {
		t.Fatalf("gains tried around the threshold: %v", seen)
	}
}

// TestCompressedQueueRecyclesNodes is TestQueueRecyclesNodes at depth 1:
// a node compressed at the head side gives its buffer to the next node
// decompressed at the tail, so a queue still allocates almost nothing
// but the compressed copies.
func TestCompressedQueueRecyclesNodes(t *testing.T) {
	allocs := queueAllocsPerOp(compressibleList(5000, 1), fmt.Appendf(nil, "job-%07d:%088d", 1, 0))
	t.Logf("%.4f allocations per push and pop", allocs)
	if !raceEnabled && allocs > 0.05 { // one compressed node per 75 elements
		t.Fatalf("compressed queue steady state allocates %v per op", allocs)
	}
}

// mallocsPerOp runs fn ops times and returns the heap allocations per
// run. testing.AllocsPerRun would round down to whole allocations per
// run, so a rare allocation (a new node every few dozen pushes) could
// never fail a test.
func mallocsPerOp(ops int, fn func()) float64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range ops {
		fn()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(ops)
}

// queueAllocsPerOp uses q as a queue of v (push one, pop one) until it
// is in its steady state, then returns the allocations per push and pop.
func queueAllocsPerOp(q *Quicklist, v []byte) float64 {
	var dst []byte
	op := func() {
		q.PushTail(v)
		dst, _ = q.PopHeadAppend(dst[:0])
	}
	for range 5000 {
		op()
	}
	return mallocsPerOp(20000, op)
}

// TestBytesCountsCompressed checks that Bytes, and so MEMORY USAGE,
// counts compressed nodes at their compressed size.
func TestBytesCountsCompressed(t *testing.T) {
	raw, packed := compressibleList(10000, 0), compressibleList(10000, 1)
	if packed.Bytes()*5 > raw.Bytes() {
		t.Fatalf("depth 1: %d bytes, depth 0: %d", packed.Bytes(), raw.Bytes())
	}
}
