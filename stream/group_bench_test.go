package stream

import (
	"testing"
	"time"
)

// pelStream builds a stream of n entries all pending in one group, owned
// by four consumers in turn (batches of 100, as XREADGROUP COUNT 100).
func pelStream(tb testing.TB, n int) (*Stream, *Group) {
	tb.Helper()
	s := New()
	fv := [][]byte{[]byte("event"), []byte("click"), []byte("user"), []byte("12345")}
	for i := 1; i <= n; i++ {
		if err := s.Add(ID{Ms: uint64(i)}, fv, DefaultLimits); err != nil {
			tb.Fatal(err)
		}
	}
	g, _ := s.CreateGroup([]byte("g"), MinID, 0)
	var cs []*Consumer
	for _, name := range []string{"c0", "c1", "c2", "c3"} {
		c, _ := g.CreateConsumer([]byte(name), 1)
		cs = append(cs, c)
	}
	for i := 1; i <= n; i++ {
		s.Deliver(g, cs[(i/100)%4], ID{Ms: uint64(i)}, int64(i), false)
	}
	return s, g
}

// BenchmarkSnapshotPEL1M measures Stream.Snapshot with 1,000,000 pending
// entries: what BGSAVE and BGREWRITEAOF hold the lock for. It copies the
// radix indexes of the nodes (10,000) and of the PEL chunks (about 7,800
// for the group, as many for the consumers), not the entries.
func BenchmarkSnapshotPEL1M(b *testing.B) {
	s, _ := pelStream(b, 1_000_000)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s.Snapshot()
	}
}

// TestSnapshotPELCost reports the cost of a snapshot with a million
// pending entries, and of the first writes after it (which copy the
// chunks they touch), and checks it stays far below a full copy.
func TestSnapshotPELCost(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("builds a million pending entries, and times them")
	}
	s, g := pelStream(t, 1_000_000)
	start := time.Now()
	snap := s.Snapshot()
	took := time.Since(start)
	// 10,000 acknowledgements right after: each touches a shared chunk
	// of the group PEL and one of a consumer's, copied once.
	start = time.Now()
	for i := 1; i <= 10_000; i++ {
		g.Ack(ID{Ms: uint64(i)})
	}
	acks := time.Since(start)
	start = time.Now()
	g.clone()
	deep := time.Since(start)
	t.Logf("Snapshot with 1,000,000 pending entries: %v; then 10,000 XACKs (copying the chunks they touch): %v; a deep copy of the group: %v",
		took, acks, deep)
	if sg := snap.Group([]byte("g")); sg.Pending() != 1_000_000 || !sg.pel.Has(ID{Ms: 1}) {
		t.Fatal("the snapshot saw the acknowledgements")
	}
	if took > 2*time.Second {
		t.Fatalf("snapshot took %v", took)
	}
}
