package stream

import (
	"runtime"
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

// TestSnapshotPELCost checks that a snapshot of a stream with many
// pending entries, and the first acknowledgements after it (which copy
// the chunks they touch), cost far less than a copy of the group: it
// compares bytes allocated, a counted quantity that a slow or loaded
// machine (or -race) does not change, and logs the times. Under -race it
// uses 20,000 entries instead of a million: the structure, and so the
// ratio, is the same.
func TestSnapshotPELCost(t *testing.T) {
	n := 1_000_000
	if testing.Short() || raceEnabled {
		n = 20_000
	}
	s, g := pelStream(t, n)
	var snap *Stream
	snapBytes, took := allocated(func() { snap = s.Snapshot() })
	// A hundredth of the entries acknowledged right after: each ack
	// touches a shared chunk of the group PEL and one of a consumer's,
	// copied once.
	ackBytes, acks := allocated(func() {
		for i := 1; i <= n/100; i++ {
			g.Ack(ID{Ms: uint64(i)})
		}
	})
	deepBytes, deep := allocated(func() { g.clone() })
	t.Logf("%d pending entries: snapshot %v (%d bytes allocated); then %d XACKs %v (%d bytes); a deep copy of the group %v (%d bytes)",
		n, took, snapBytes, n/100, acks, ackBytes, deep, deepBytes)
	if sg := snap.Group([]byte("g")); sg.Pending() != n || !sg.pel.Has(ID{Ms: 1}) {
		t.Fatal("the snapshot saw the acknowledgements")
	}
	// About 1/16 each; 1/4 leaves room for any allocator change.
	if snapBytes > deepBytes/4 || ackBytes > deepBytes/4 {
		t.Fatalf("snapshot allocated %d bytes and the acks after it %d, a deep copy %d: want each far below it",
			snapBytes, ackBytes, deepBytes)
	}
}

// allocated runs f and returns the bytes it allocated and its time.
func allocated(f func()) (uint64, time.Duration) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, took
}
