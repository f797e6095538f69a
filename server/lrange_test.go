package server

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/redstream/redstream/listpack"
)

// TestRangeLenMatchesRange: LRANGE writes its array header before its
// elements, so the count rangeLen computes must be exactly what the
// list's Range yields, for every list length and every pair of indexes,
// negative and out of range included.
func TestRangeLenMatchesRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 3))
	edges := []int{0, 1, -1, 2, -2, 5, -5, math.MaxInt32, math.MinInt32, 1000, -1000}
	for n := range 40 {
		q := listpack.NewQuicklist(4) // small nodes: ranges cross them
		for i := range n {
			q.PushTail([]byte{byte(i)})
		}
		for range 200 {
			start, stop := edges[rng.IntN(len(edges))], edges[rng.IntN(len(edges))]
			if rng.IntN(2) == 0 {
				start, stop = rng.IntN(2*n+3)-n-1, rng.IntN(2*n+3)-n-1
			}
			got := 0
			q.Range(start, stop, func([]byte) bool { got++; return true })
			if want := rangeLen(n, start, stop); got != want {
				t.Fatalf("list of %d, LRANGE %d %d: Range yields %d, rangeLen says %d", n, start, stop, got, want)
			}
		}
	}
}
