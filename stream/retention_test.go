package stream

import "testing"

// liveMs lists the stream's live entries' ms parts, in order.
func liveMs(s *Stream) []uint64 {
	var out []uint64
	it := s.Range(MinID, MaxID, false)
	for it.Next() {
		out = append(out, it.ID().Ms)
	}
	it.Close()
	return out
}

// agedStream has entries at ms 1..n, in small nodes so trims cross them.
func agedStream(t *testing.T, n int, r Retention) *Stream {
	t.Helper()
	s := New()
	addN(t, s, n, Limits{MaxEntries: 4})
	s.SetRetention(r)
	return s
}

func TestRetentionSetting(t *testing.T) {
	s := New()
	if s.SetRetention(Retention{}) || s.Retention() != (Retention{}) {
		t.Fatal("a stream starts without an age limit")
	}
	if !s.SetRetention(Retention{MaxAge: 10, Refs: Acked}) || s.SetRetention(Retention{MaxAge: 10, Refs: Acked}) {
		t.Fatal("SetRetention reports a change only when there is one")
	}
	if !s.SetRetention(Retention{MaxAge: 0, Refs: DelRef}) || s.Retention() != (Retention{}) {
		t.Fatalf("MaxAge 0 turns the limit off, policy included: %+v", s.Retention())
	}
	if got := s.Clone().Retention(); got != s.Retention() {
		t.Fatalf("Clone lost the limit: %+v", got)
	}
}

func TestTrimAgedKeepRef(t *testing.T) {
	s := agedStream(t, 20, Retention{MaxAge: 10})
	if n := s.TrimAged(10); n != 0 {
		t.Fatalf("at 10 nothing is older than 10 ms, trimmed %d", n)
	}
	// At 25 the cutoff is 15: entries 1..14 go, 15 (exactly 10 ms old) stays.
	if n := s.TrimAged(25); n != 14 {
		t.Fatalf("TrimAged(25) = %d, want 14", n)
	}
	if got := liveMs(s); len(got) != 6 || got[0] != 15 || s.FirstID().Ms != 15 {
		t.Fatalf("left %v, first %v", got, s.FirstID())
	}
	if n := s.TrimAged(25); n != 0 {
		t.Fatalf("a second trim at the same time removed %d", n)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if s.SetRetention(Retention{}); s.TrimAged(1000) != 0 {
		t.Fatal("without a limit nothing is trimmed")
	}
}

func TestAgeTrimBoundLimit(t *testing.T) {
	s := agedStream(t, 20, Retention{MaxAge: 5})
	minID, n := s.AgeTrimBound(25, 6) // 19 entries too old, 6 allowed
	if n != 6 || minID != (ID{Ms: 7}) {
		t.Fatalf("AgeTrimBound(25, 6) = %v %d, want 7-0 6", minID, n)
	}
	minID, n = s.AgeTrimBound(25, 100)
	if n != 19 || minID != (ID{Ms: 20}) {
		t.Fatalf("AgeTrimBound(25, 100) = %v %d, want the cutoff 20-0, 19", minID, n)
	}
	if _, n = s.AgeTrimBound(5, 100); n != 0 {
		t.Fatal("a cutoff at or before 0 makes nothing due")
	}
}

// groupAt makes group g on s, delivered up to last, with pending holding
// the IDs (by ms) still unacknowledged.
func groupAt(t *testing.T, s *Stream, name string, last uint64, pending ...uint64) {
	t.Helper()
	g, err := s.CreateGroup([]byte(name), MinID, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := g.CreateConsumer([]byte("c"), 0)
	for ms := uint64(1); ms <= last; ms++ {
		s.Deliver(g, c, ID{Ms: ms}, 0, false)
	}
	keep := map[uint64]bool{}
	for _, ms := range pending {
		keep[ms] = true
	}
	for ms := uint64(1); ms <= last; ms++ {
		if !keep[ms] {
			g.Ack(ID{Ms: ms})
		}
	}
}

func TestTrimAgedModesWithGroup(t *testing.T) {
	const now, maxAge = 30, 10 // cutoff 20: entries 1..19 are too old
	for _, tc := range []struct {
		refs    RefPolicy
		removed int64
		first   uint64
		pending int // left in the group's PEL
	}{
		{KeepRef, 19, 20, 2},
		{DelRef, 19, 20, 0},
		// Entries 3 and 7 are pending, 13.. undelivered: 1,2,4,5,6,8..12 go.
		{Acked, 10, 3, 2},
	} {
		s := agedStream(t, 25, Retention{MaxAge: maxAge, Refs: tc.refs})
		groupAt(t, s, "g", 12, 3, 7)
		if n := s.TrimAged(now); n != tc.removed {
			t.Errorf("refs %d: TrimAged = %d, want %d", tc.refs, n, tc.removed)
		}
		if got := s.FirstID().Ms; got != tc.first {
			t.Errorf("refs %d: first entry %d, want %d (left %v)", tc.refs, got, tc.first, liveMs(s))
		}
		if got := s.Group([]byte("g")).Pending(); got != tc.pending {
			t.Errorf("refs %d: %d pending, want %d", tc.refs, got, tc.pending)
		}
		if _, n := s.AgeTrimBound(now, 0); n != 0 {
			t.Errorf("refs %d: still due after the trim", tc.refs)
		}
		if err := s.Check(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAgeTrimBoundAckedLimit(t *testing.T) {
	s := agedStream(t, 25, Retention{MaxAge: 10, Refs: Acked})
	groupAt(t, s, "g", 12, 3, 7)
	// Removable: 1,2,4,5,6,8,... Three entries looked at (1,2,3) hold
	// two removable ones; the trim stops at 4.
	minID, n := s.AgeTrimBound(30, 3)
	if n != 2 || minID != (ID{Ms: 4}) {
		t.Fatalf("AgeTrimBound(30, 3) = %v %d, want 4-0 2", minID, n)
	}
	// Past the slowest group's last ID everything is needed: the bound stops there.
	minID, n = s.AgeTrimBound(30, 100)
	if n != 10 || minID != (ID{Ms: 12, Seq: 1}) {
		t.Fatalf("AgeTrimBound(30, 100) = %v %d, want 12-1 10", minID, n)
	}
}

func TestRetentionStateRoundTrip(t *testing.T) {
	s := agedStream(t, 3, Retention{MaxAge: 1500, Refs: DelRef})
	st := s.State()
	c, err := FromState(&st)
	if err != nil {
		t.Fatal(err)
	}
	if c.Retention() != s.Retention() {
		t.Fatalf("round trip: %+v, want %+v", c.Retention(), s.Retention())
	}
	for _, bad := range []Retention{{MaxAge: -1}, {MaxAge: 5, Refs: Acked + 1}, {MaxAge: 0, Refs: Acked}} {
		st := agedStream(t, 3, Retention{}).State()
		st.Retention = bad
		if _, err := FromState(&st); err == nil {
			t.Errorf("FromState took retention %+v", bad)
		}
	}
}

// Under ACKED, XADD's trim looks for a removable entry among the first
// ackedCheckLimit too-old ones only: behind a longer run of entries a
// group holds, it trims nothing, and the sweeper's bounded trims take
// over as the run is released.
func TestTrimAgedAckedCheckIsBounded(t *testing.T) {
	held := ackedCheckLimit + 10
	s := agedStream(t, held+20, Retention{MaxAge: 10, Refs: Acked})
	var pending []uint64
	for ms := 1; ms <= held; ms++ {
		pending = append(pending, uint64(ms))
	}
	groupAt(t, s, "g", uint64(held+20), pending...)
	now := int64(held + 20 + 100) // every entry is too old
	if n := s.TrimAged(now); n != 0 {
		t.Fatalf("TrimAged walked past %d held entries and removed %d", ackedCheckLimit, n)
	}
	if _, n := s.AgeTrimBound(now, 100); n != 0 {
		t.Fatalf("a sweep of 100 looked past its window: n=%d", n)
	}
	minID, n := s.AgeTrimBound(now, 1000)
	if n != 20 || minID != (ID{Ms: uint64(held + 20), Seq: 1}) {
		t.Fatalf("AgeTrimBound(now, 1000) = %v %d, want the 20 released entries", minID, n)
	}
	if got := s.Trim(Trim{Strategy: TrimMinID, MinID: minID, Refs: Acked}); got != 20 {
		t.Fatalf("the sweeper's trim removed %d", got)
	}
}
