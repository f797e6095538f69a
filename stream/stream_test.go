package stream

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/redstream/redstream/listpack"
)

func TestParseID(t *testing.T) {
	max := uint64(math.MaxUint64)
	cases := []struct {
		in     string
		strict bool
		want   ID
		ok     bool
	}{
		{"1-2", true, ID{1, 2}, true},
		{"5", true, ID{5, 9}, true}, // missing sequence: the caller's choice (9 here)
		{"0-0", true, ID{}, true},
		{"18446744073709551615-18446744073709551615", true, MaxID, true},
		{"18446744073709551616-0", true, ID{}, false},
		{"-", false, MinID, true},
		{"+", false, MaxID, true},
		{"-", true, ID{}, false},
		{"+", true, ID{}, false},
		{"", false, ID{}, false},
		{"1-", true, ID{}, false},
		{"-1", true, ID{}, false},
		{"1--1", true, ID{}, false},
		{"1-2-3", true, ID{}, false},
		{"0x10", true, ID{}, false},
		{"1.5", true, ID{}, false},
		{"a", true, ID{}, false},
		// What C's strtoull accepts, Redis accepts.
		{" 1", true, ID{1, 9}, true},
		{"+1-+2", true, ID{1, 2}, true},
		{"007-010", true, ID{7, 10}, true},
		{"1--05", true, ID{1, max - 4}, true},
		{"1--0", true, ID{1, 0}, true},
		{"\t3-4", true, ID{3, 4}, true},
		{"1 -2", true, ID{}, false},
		{"5-*", true, ID{}, false},
		// A NUL ends the argument, as in a C string.
		{"7\x00-3", true, ID{7, 9}, true},
		{"+\x00x", false, MaxID, true},
		{string(bytes.Repeat([]byte("1"), 128)), true, ID{}, false},
	}
	for _, c := range cases {
		parse := ParseID
		if c.strict {
			parse = ParseStrictID
		}
		got, err := parse([]byte(c.in), 9)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("parse(%q, strict %v) = %v, %v; want %v, ok %v", c.in, c.strict, got, err, c.want, c.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidID) {
			t.Errorf("parse(%q): error %v is not ErrInvalidID", c.in, err)
		}
	}
}

func TestParseAddAndRangeID(t *testing.T) {
	if id, given, err := ParseAddID([]byte("5-*")); err != nil || given || id != (ID{5, 0}) {
		t.Errorf("5-* = %v %v %v", id, given, err)
	}
	if id, given, err := ParseAddID([]byte("5")); err != nil || !given || id != (ID{5, 0}) {
		t.Errorf("5 = %v %v %v", id, given, err)
	}
	if _, _, err := ParseAddID([]byte("*")); err == nil {
		t.Error("* parsed as an explicit ID")
	}
	for _, c := range []struct {
		in   string
		want ID
		excl bool
		ok   bool
	}{
		{"(1-1", ID{1, 1}, true, true},
		{"(5", ID{5, 0}, true, true},
		{"(", ID{}, false, false},
		{"((1", ID{}, false, false},
		{"(-", ID{}, false, false},
		{"(+", ID{}, false, false},
		{"-", MinID, false, true},
	} {
		id, excl, err := ParseRangeID([]byte(c.in), 0)
		if (err == nil) != c.ok || (c.ok && (id != c.want || excl != c.excl)) {
			t.Errorf("ParseRangeID(%q) = %v %v %v", c.in, id, excl, err)
		}
	}
}

func TestIDArithmetic(t *testing.T) {
	if id, err := (ID{1, math.MaxUint64}).Incr(); err != nil || id != (ID{2, 0}) {
		t.Errorf("incr across ms: %v %v", id, err)
	}
	if id, err := MaxID.Incr(); !errors.Is(err, ErrIDOverflow) || id != MinID {
		t.Errorf("incr max: %v %v", id, err)
	}
	if id, err := (ID{2, 0}).Decr(); err != nil || id != (ID{1, math.MaxUint64}) {
		t.Errorf("decr across ms: %v %v", id, err)
	}
	if id, err := MinID.Decr(); !errors.Is(err, ErrIDOverflow) || id != MaxID {
		t.Errorf("decr min: %v %v", id, err)
	}
	ids := []ID{{0, 1}, {0, 255}, {0, 256}, {1, 0}, {255, 7}, {256, 0}, MaxID}
	for i := 1; i < len(ids); i++ {
		a, b := ids[i-1].Key(), ids[i].Key()
		if bytes.Compare(a[:], b[:]) >= 0 || !ids[i-1].Less(ids[i]) || IDFromKey(b[:]) != ids[i] {
			t.Errorf("key order broken between %v and %v", ids[i-1], ids[i])
		}
	}
	if s := (ID{1526919030474, 55}).String(); s != "1526919030474-55" {
		t.Errorf("String = %q", s)
	}
}

func fv(pairs ...string) [][]byte {
	out := make([][]byte, len(pairs))
	for i, p := range pairs {
		out[i] = []byte(p)
	}
	return out
}

func mustAdd(t *testing.T, s *Stream, id ID, lim Limits, pairs ...string) {
	t.Helper()
	if err := s.Add(id, fv(pairs...), lim); err != nil {
		t.Fatalf("Add(%v): %v", id, err)
	}
}

// addN adds n entries with IDs 1-0, 2-0, ... after the stream's last.
func addN(t *testing.T, s *Stream, n int, lim Limits) {
	t.Helper()
	for range n {
		mustAdd(t, s, ID{Ms: s.LastID().Ms + 1}, lim, "xitem", "v")
	}
}

func TestNextID(t *testing.T) {
	s := New()
	if id, _ := s.NextID(100); id != (ID{100, 0}) {
		t.Fatalf("first * = %v", id)
	}
	mustAdd(t, s, ID{100, 0}, DefaultLimits, "f", "v")
	// The clock steps back: IDs keep growing from the last one.
	if id, _ := s.NextID(90); id != (ID{100, 1}) {
		t.Errorf("* with clock behind = %v", id)
	}
	if id, _ := s.NextID(100); id != (ID{100, 1}) {
		t.Errorf("* in the same ms = %v", id)
	}
	if id, _ := s.NextSeq(100); id != (ID{100, 1}) {
		t.Errorf("100-* = %v", id)
	}
	if id, _ := s.NextSeq(200); id != (ID{200, 0}) {
		t.Errorf("200-* = %v", id)
	}
	if id, err := s.NextSeq(50); err != nil || s.Add(id, fv("f", "v"), DefaultLimits) != ErrIDNotGreater {
		t.Errorf("50-*: %v %v", id, err)
	}
	mustAdd(t, s, ID{300, math.MaxUint64}, DefaultLimits, "f", "v")
	if _, err := s.NextSeq(300); !errors.Is(err, ErrIDNotGreater) {
		t.Errorf("300-* after 300-max: %v", err)
	}
	if id, _ := s.NextID(10); id != (ID{301, 0}) {
		t.Errorf("* after 300-max = %v", id)
	}
	mustAdd(t, s, MaxID, DefaultLimits, "f", "v")
	if _, err := s.NextID(1); !errors.Is(err, ErrExhausted) {
		t.Errorf("* after max: %v", err)
	}
	if err := s.Add(MaxID, fv("f", "v"), DefaultLimits); !errors.Is(err, ErrExhausted) {
		t.Errorf("add after max: %v", err)
	}
	if s.Len() != 3 || s.EntriesAdded() != 3 || s.FirstID() != (ID{100, 0}) || s.LastID() != MaxID {
		t.Errorf("counters: %d %d %v %v", s.Len(), s.EntriesAdded(), s.FirstID(), s.LastID())
	}
}

// TestNodeLimits checks where entries split into nodes.
func TestNodeLimits(t *testing.T) {
	s := New()
	addN(t, s, 250, DefaultLimits)
	if s.Nodes() != 3 {
		t.Errorf("250 entries, 100 a node: %d nodes", s.Nodes())
	}
	s = New()
	big := string(bytes.Repeat([]byte("x"), 1000))
	for i := range 10 {
		mustAdd(t, s, ID{Ms: uint64(i + 1)}, DefaultLimits, "f", big)
	}
	// 4096 bytes: four 1000-byte values fit (the check counts the node
	// before the add plus the raw value), the fifth starts a node; Redis
	// 7.0 also has 3 nodes here.
	if s.Nodes() != 3 {
		t.Errorf("10 x 1000 bytes, 4096 a node: %d nodes", s.Nodes())
	}
	s = New()
	addN(t, s, 50, Limits{}) // no limits at all
	if s.Nodes() != 1 {
		t.Errorf("unlimited: %d nodes", s.Nodes())
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
}

func TestDelete(t *testing.T) {
	s := New()
	lim := Limits{MaxEntries: 2}
	for i := 1; i <= 5; i++ {
		mustAdd(t, s, ID{1, uint64(i)}, lim, string(rune('a'+i-1)), fmt.Sprint(i))
	}
	if s.Delete(ID{9, 9}) || s.Delete(ID{0, 1}) {
		t.Fatal("deleted a missing entry")
	}
	for _, id := range []ID{{1, 1}, {1, 4}, {1, 5}} {
		if !s.Delete(id) {
			t.Fatalf("Delete(%v) = false", id)
		}
	}
	if s.Delete(ID{1, 1}) {
		t.Fatal("deleted twice")
	}
	if s.Len() != 2 || s.FirstID() != (ID{1, 2}) || s.MaxDeletedID() != (ID{1, 5}) || s.LastID() != (ID{1, 5}) {
		t.Fatalf("after deletes: len %d first %v maxdel %v last %v", s.Len(), s.FirstID(), s.MaxDeletedID(), s.LastID())
	}
	// Nodes: [1-1 1-2] [1-3 1-4] [1-5]: the last node lost its only
	// entry and went; the others keep a tombstone each.
	if s.Nodes() != 2 {
		t.Errorf("%d nodes, want 2", s.Nodes())
	}
	// An add after the tail went fills the previous node's free slot?
	// No: it holds 2 entries (one a tombstone), so a new node starts.
	mustAdd(t, s, ID{2, 0}, lim, "f", "v")
	if s.Nodes() != 3 {
		t.Errorf("%d nodes, want 3", s.Nodes())
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []ID{{1, 2}, {1, 3}, {2, 0}} {
		s.Delete(id)
	}
	if s.Len() != 0 || s.Nodes() != 0 || s.FirstID() != (ID{}) || s.LastID() != (ID{2, 0}) {
		t.Fatalf("emptied: len %d nodes %d first %v last %v", s.Len(), s.Nodes(), s.FirstID(), s.LastID())
	}
	mustAdd(t, s, ID{3, 0}, lim, "f", "v")
	if err := s.Check(); err != nil || s.FirstID() != (ID{3, 0}) {
		t.Fatalf("re-add: %v, first %v", err, s.FirstID())
	}
}

// TestTrimLikeRedis replays trims from Redis's own stream tests, whose
// results depend on node boundaries.
func TestTrimLikeRedis(t *testing.T) {
	s := New()
	for range 1000 {
		id, _ := s.NextID(1)
		mustAdd(t, s, id, DefaultLimits, "xitem", "v")
		s.Trim(Trim{Strategy: TrimMaxLen, MaxLen: 555, Approx: true, Limit: 10000})
	}
	if s.Len() != 600 {
		t.Errorf("XADD MAXLEN ~ 555 x1000: len %d, want 600", s.Len())
	}

	s = New()
	addN(t, s, 1000, DefaultLimits)
	for _, c := range []struct {
		n      uint64
		approx bool
		want   uint64
	}{{666, false, 666}, {555, false, 555}, {444, true, 500}, {400, true, 400}} {
		s.Trim(Trim{Strategy: TrimMaxLen, MaxLen: c.n, Approx: c.approx, Limit: 10000 * b2i(c.approx)})
		if s.Len() != c.want {
			t.Errorf("MAXLEN %v %d: len %d, want %d", c.approx, c.n, s.Len(), c.want)
		}
	}

	s = New()
	lim := Limits{MaxEntries: 10}
	addN(t, s, 101, lim)
	s.Trim(Trim{Strategy: TrimMaxLen, MaxLen: 55, Approx: true, Limit: 30})
	addN(t, s, 1, lim)
	n2 := s.Trim(Trim{Strategy: TrimMaxLen, MaxLen: 55, Approx: true, Limit: 30})
	if s.Len() != 62 || n2 != 10 {
		t.Errorf("MAXLEN ~ 55 LIMIT 30 twice: len %d (removed %d), want 62 (10)", s.Len(), n2)
	}

	s = New()
	addN(t, s, 102, Limits{MaxEntries: 1})
	s.Trim(Trim{Strategy: TrimMaxLen, MaxLen: 1, Approx: true, Limit: 100})
	if s.Len() != 2 {
		t.Errorf("~ limited to 100 nodes of 1: len %d, want 2", s.Len())
	}

	s = New()
	addN(t, s, 3, Limits{MaxEntries: 2})
	if n := s.Trim(Trim{Strategy: TrimMaxLen, Approx: true, Limit: 1}); n != 0 {
		t.Errorf("LIMIT 1 with 2-entry nodes removed %d", n)
	}
	if n := s.Trim(Trim{Strategy: TrimMaxLen, Approx: true, Limit: 2}); n != 2 {
		t.Errorf("LIMIT 2 removed %d", n)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func TestTrimMinID(t *testing.T) {
	s := New()
	for _, id := range []ID{{1, 0}, {1641544570597, 0}, {1641544570597, 1}} {
		mustAdd(t, s, id, DefaultLimits, "f", "v")
	}
	if n := s.Trim(Trim{Strategy: TrimMinID, MinID: ID{1641544570597, 0}}); n != 1 || s.FirstID() != (ID{1641544570597, 0}) {
		t.Errorf("MINID with a big delta: removed %d, first %v", n, s.FirstID())
	}

	// A node whose last entry is a tombstone at or past MINID keeps only
	// tombstones after the trim, as in Redis.
	s = New()
	for i := uint64(1); i <= 3; i++ {
		mustAdd(t, s, ID{i, 0}, DefaultLimits, "f", "v")
	}
	s.Delete(ID{3, 0})
	if n := s.Trim(Trim{Strategy: TrimMinID, MinID: ID{3, 0}}); n != 2 || s.Len() != 0 || s.Nodes() != 1 {
		t.Errorf("MINID past the live entries: removed %d, len %d, nodes %d", n, s.Len(), s.Nodes())
	}
	mustAdd(t, s, ID{4, 0}, DefaultLimits, "f", "v")
	if err := s.Check(); err != nil || s.Len() != 1 || s.FirstID() != (ID{4, 0}) {
		t.Errorf("add after: %v, len %d first %v", err, s.Len(), s.FirstID())
	}
	if first, _ := s.FirstEntryID(true); first != (ID{1, 0}) {
		t.Errorf("first entry with tombstones = %v", first)
	}
}

func TestSetID(t *testing.T) {
	s := New()
	mustAdd(t, s, ID{1, 1}, DefaultLimits, "a", "1")
	mustAdd(t, s, ID{1, 2}, DefaultLimits, "b", "2")
	mustAdd(t, s, ID{1, 3}, DefaultLimits, "c", "3")
	s.Delete(ID{1, 2})
	s.Delete(ID{1, 3})
	if err := s.SetID(ID{1, 2}, -1, ID{}); !errors.Is(err, ErrSetIDBelowMaxDeleted) {
		t.Errorf("below max deleted: %v", err)
	}
	if err := s.SetID(ID{1, 0}, -1, ID{}); !errors.Is(err, ErrSetIDBelowMaxDeleted) {
		t.Errorf("below top: %v", err)
	}
	if err := s.SetID(ID{5, 0}, 0, ID{}); !errors.Is(err, ErrEntriesAddedBelowLength) {
		t.Errorf("entries added below length: %v", err)
	}
	if err := s.SetID(ID{5, 0}, 10, ID{4, 0}); err != nil {
		t.Fatal(err)
	}
	if s.LastID() != (ID{5, 0}) || s.EntriesAdded() != 10 || s.MaxDeletedID() != (ID{4, 0}) {
		t.Errorf("after SetID: %v %d %v", s.LastID(), s.EntriesAdded(), s.MaxDeletedID())
	}
	s2 := New()
	mustAdd(t, s2, ID{9, 0}, DefaultLimits, "f", "v")
	if err := s2.SetID(ID{8, 0}, -1, ID{}); !errors.Is(err, ErrSetIDBelowTop) {
		t.Errorf("below the top entry: %v", err)
	}
}

// TestRadixNodes compares with radix-tree-nodes as redis-server 7.0
// reports it, one entry a node.
func TestRadixNodes(t *testing.T) {
	if n := New().RadixNodes(); n != 1 {
		t.Errorf("empty: %d", n)
	}
	for _, c := range []struct{ n, want int }{{1, 2}, {2, 6}, {3, 8}, {5, 12}, {17, 36}, {256, 518}, {300, 607}} {
		s := New()
		for i := 1; i <= c.n; i++ {
			mustAdd(t, s, ID{uint64(i*1000 + i%7), uint64(i)}, Limits{MaxEntries: 1}, "f", "v")
		}
		if got := s.RadixNodes(); got != c.want {
			t.Errorf("%d keys: %d rax nodes, Redis has %d", c.n, got, c.want)
		}
	}
	s := New()
	for i := 1; i < 40; i++ {
		mustAdd(t, s, ID{uint64(i * i * 12345), uint64(i * 3)}, Limits{MaxEntries: 1}, "f", "v")
	}
	for _, i := range []int{4, 9, 10, 11, 25, 30, 31} {
		s.Delete(ID{uint64(i * i * 12345), uint64(i * 3)})
	}
	if got := s.RadixNodes(); got != 69 || s.Nodes() != 32 {
		t.Errorf("after deletes: %d rax nodes for %d keys, Redis has 69 for 32", got, s.Nodes())
	}
}

func TestIteratorRanges(t *testing.T) {
	s := New()
	for i := 1; i <= 30; i++ {
		mustAdd(t, s, ID{uint64(i / 3), uint64(i % 3)}, Limits{MaxEntries: 4}, "f", fmt.Sprint(i))
	}
	collect := func(start, end ID, rev bool) []ID {
		var out []ID
		for it := s.Range(start, end, rev); it.Next(); {
			out = append(out, it.ID())
		}
		return out
	}
	if got := collect(ID{3, 1}, ID{4, 1}, false); fmt.Sprint(got) != "[3-1 3-2 4-0 4-1]" {
		t.Errorf("forward: %v", got)
	}
	if got := collect(ID{3, 1}, ID{4, 1}, true); fmt.Sprint(got) != "[4-1 4-0 3-2 3-1]" {
		t.Errorf("backward: %v", got)
	}
	if got := collect(ID{11, 0}, MaxID, false); len(got) != 0 {
		t.Errorf("past the end: %v", got)
	}
	if got := collect(MinID, ID{0, 0}, true); len(got) != 0 {
		t.Errorf("before the start, backward: %v", got)
	}
	if got := collect(ID{5, 0}, ID{4, 0}, false); len(got) != 0 {
		t.Errorf("empty range: %v", got)
	}
	it := s.Range(ID{0, 1}, MaxID, false)
	it.Next()
	if it.Size() != len("0-1")+len("f")+len("1") || it.NumFields() != 1 {
		t.Errorf("Size %d", it.Size())
	}
	if f, v := it.Pair(); string(f) != "f" || string(v) != "1" {
		t.Errorf("Pair = %q %q", f, v)
	}
	if f, v := it.Pair(); f != nil || v != nil {
		t.Errorf("Pair past the fields = %q %q", f, v)
	}
}

func TestIDMP(t *testing.T) {
	s := New()
	pid, iid := []byte("p1"), []byte("req-1")
	if _, ok := s.IDMPLookup(pid, iid, 1000); ok {
		t.Fatal("found in an empty map")
	}
	s.IDMPRecord(pid, iid, ID{1, 0}, 1000)
	if id, ok := s.IDMPLookup(pid, iid, 2000); !ok || id != (ID{1, 0}) {
		t.Fatalf("lookup = %v %v", id, ok)
	}
	if _, ok := s.IDMPLookup([]byte("p2"), iid, 2000); ok {
		t.Fatal("producers are not isolated")
	}
	// Expiry: 100 s by default.
	if _, ok := s.IDMPLookup(pid, iid, 1000+100*1000); ok {
		t.Fatal("not expired after the duration")
	}
	st := s.IDMPStats(200_000)
	if st.PIDs != 0 || st.IIDs != 0 || st.Added != 1 || st.Duplicates != 1 || st.Duration != 100 || st.MaxSize != 100 {
		t.Fatalf("stats %+v", st)
	}
	// Maxsize: the oldest go first.
	s.SetIDMPConfig(60, 3)
	for i := range 5 {
		s.IDMPRecord(pid, []byte(fmt.Sprint("r", i)), ID{2, uint64(i)}, 300_000)
	}
	for i := range 5 {
		_, ok := s.IDMPLookup(pid, []byte(fmt.Sprint("r", i)), 300_000)
		if ok != (i >= 2) {
			t.Errorf("r%d remembered = %v", i, ok)
		}
	}
	if st := s.IDMPStats(300_000); st.PIDs != 1 || st.IIDs != 3 || st.Added != 6 {
		t.Errorf("stats %+v", st)
	}
	// Expired iids do not count even before an add purges them.
	if st := s.IDMPStats(400_000); st.PIDs != 0 || st.IIDs != 0 {
		t.Errorf("stats after expiry %+v", st)
	}
	if s.SetIDMPConfig(60, 3) {
		t.Error("same settings reported a change")
	}
	c := s.Clone()
	if !s.SetIDMPConfig(0, 5) || s.IDMPStats(300_000).IIDs != 0 {
		t.Error("a new maxsize did not clear the map")
	}
	if st := c.IDMPStats(300_000); st.IIDs != 3 {
		t.Errorf("clone lost its map: %+v", st)
	}
}

func TestAutoIID(t *testing.T) {
	a := AutoIID(fv("f1", "a", "f2", "b"))
	if !bytes.Equal(a, AutoIID(fv("f2", "b", "f1", "a"))) {
		t.Error("order matters")
	}
	for _, other := range [][][]byte{fv("f1", "a", "f2", "c"), fv("f1a", "", "f2", "b"), fv("f1", "a"), fv("f1", "a", "f2", "b", "f1", "a")} {
		if bytes.Equal(a, AutoIID(other)) {
			t.Errorf("%q collides", other)
		}
	}
}

func TestCloneAndMemory(t *testing.T) {
	s := New()
	addN(t, s, 150, DefaultLimits)
	s.Delete(ID{5, 0})
	c := s.Clone()
	s.Delete(ID{6, 0})
	if c.Len() != 149 || s.Len() != 148 {
		t.Errorf("clone shares state: %d %d", c.Len(), s.Len())
	}
	if err := c.Check(); err != nil {
		t.Error(err)
	}
	if m := s.MemoryUsage(); m < 150*10 || m > 150*100 {
		t.Errorf("MemoryUsage = %d", m)
	}
}

// TestSnapshotConcurrentRead reads a snapshot in another goroutine while
// the stream goes on being written, trimmed and deleted from: under -race
// this proves the view and the stream share no bytes that get written.
func TestSnapshotConcurrentRead(t *testing.T) {
	s := New()
	lim := Limits{MaxEntries: 7}
	addN(t, s, 500, lim)
	view := s.Snapshot()
	done := make(chan error)
	go func() {
		n := 0
		for it := view.Range(MinID, MaxID, false); it.Next(); n++ {
			for range it.NumFields() {
				it.Pair()
			}
		}
		if n != 500 {
			done <- fmt.Errorf("the view has %d entries, want 500", n)
			return
		}
		done <- view.Check()
	}()
	for i := range 300 {
		mustAdd(t, s, ID{Ms: s.LastID().Ms + 1}, lim, "xitem", "w")
		s.Delete(ID{Ms: uint64(2 + 3*i)})
		if i%50 == 0 {
			s.Trim(Trim{Strategy: TrimMaxLen, MaxLen: 400})
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestStateRoundTrip exports a stream as RDB does (nodes verbatim, the
// counters, the IDMP state) and rebuilds it.
func TestStateRoundTrip(t *testing.T) {
	s := New()
	addN(t, s, 250, Limits{MaxEntries: 9})
	s.Delete(ID{Ms: 1})
	s.Delete(ID{Ms: 100})
	s.Trim(Trim{Strategy: TrimMinID, MinID: ID{Ms: 20}})
	s.IDMPRecord([]byte("p1"), []byte("a"), ID{Ms: 200}, 5000)
	s.IDMPRecord([]byte("p0"), []byte("b"), ID{Ms: 201}, 6000)
	s.SetIDMPConfig(0, 50)
	s.IDMPRecord([]byte("p1"), []byte("c"), ID{Ms: 202}, 7000)
	st := s.State()
	var nodes []Node
	for _, n := range st.Nodes {
		nodes = append(nodes, Node{n.Master, append(listpack.Listpack(nil), n.Listpack...)})
	}
	st.Nodes = nodes
	r, err := FromState(&st)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	if got, want := r.State(), s.State(); !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip differs: %d nodes, IDMP %+v; want %d nodes, IDMP %+v", len(got.Nodes), got.IDMP, len(want.Nodes), want.IDMP)
	}
	mustAdd(t, r, ID{Ms: 999}, Limits{MaxEntries: 9}, "after", "load")
	if id, ok := r.IDMPLookup([]byte("p1"), []byte("c"), 7001); !ok || id != (ID{Ms: 202}) {
		t.Errorf("IDMP after load: %v %v", id, ok)
	}
	if New().State().IDMP != nil {
		t.Error("a stream at the IDMP defaults exports IDMP state")
	}
	bad := s.State()
	bad.Length++
	if _, err := FromState(&bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("wrong length: %v", err)
	}
	swapped := s.State()
	swapped.Nodes = []Node{nodes[1], nodes[0]}
	if _, err := FromState(&swapped); !errors.Is(err, ErrCorrupt) {
		t.Errorf("nodes out of order: %v", err)
	}
}
