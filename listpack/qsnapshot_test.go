package listpack

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// frozenView is a view made by Snapshot and what it must go on reading:
// its elements, its encoding and the exact bytes of its nodes.
type frozenView struct {
	q     *Quicklist
	m     modelList
	enc   string
	fill  int
	nodes [][]byte
	step  int // when it was taken, for messages
}

// freeze takes a snapshot of q, whose contents are m, and records what the
// view must keep reading.
func freeze(q *Quicklist, m modelList, step int) *frozenView {
	v := &frozenView{q: q.Snapshot(), m: slices.Clone(m), enc: q.Encoding(), fill: q.Fill(), step: step}
	v.q.Nodes(func(lp Listpack) bool {
		v.nodes = append(v.nodes, slices.Clone(lp))
		return true
	})
	return v
}

// checkView verifies that a view reads exactly what it read when it was
// taken, through every read method: node bytes, each node walked both
// ways, Iter both ways, Range, Index, Len, Encoding. r, when not nil,
// picks random ranges and indexes to look up.
func checkView(t *testing.T, v *frozenView, r *rand.Rand) {
	t.Helper()
	checkQuicklist(t, v.q, v.m) // invariants, Len, Iter forward and backward
	q, m := v.q, v.m
	if !q.ReadOnly() || q.Encoding() != v.enc || q.Fill() != v.fill || q.NodeCount() != len(v.nodes) {
		t.Fatalf("view from step %d: read-only %v, encoding %s/%s, fill %d/%d, %d/%d nodes",
			v.step, q.ReadOnly(), q.Encoding(), v.enc, q.Fill(), v.fill, q.NodeCount(), len(v.nodes))
	}
	k, i := 0, 0
	q.Nodes(func(lp Listpack) bool {
		if !bytes.Equal(lp, v.nodes[k]) {
			t.Fatalf("view from step %d: node %d bytes changed", v.step, k)
		}
		for off := lp.First(); off >= 0; off = lp.Next(off) {
			if !bytes.Equal(lp.Get(off, nil), m[i]) {
				t.Fatalf("view from step %d: node %d forward: element %d is %q, want %q", v.step, k, i, short(lp.Get(off, nil)), short(m[i]))
			}
			i++
		}
		j := i
		for off := lp.Last(); off >= 0; off = lp.Prev(off) {
			j--
			if !bytes.Equal(lp.Get(off, nil), m[j]) {
				t.Fatalf("view from step %d: node %d backward: element %d is %q, want %q", v.step, k, j, short(lp.Get(off, nil)), short(m[j]))
			}
		}
		k++
		return true
	})
	if i != len(m) || k != len(v.nodes) {
		t.Fatalf("view from step %d: Nodes gave %d elements in %d nodes, want %d in %d", v.step, i, k, len(m), len(v.nodes))
	}
	var got [][]byte
	q.Range(0, -1, func(e []byte) bool { got = append(got, slices.Clone(e)); return true })
	if !slices.EqualFunc(got, m, bytes.Equal) {
		t.Fatalf("view from step %d: Range(0, -1) differs", v.step)
	}
	if r == nil || len(m) == 0 {
		return
	}
	start, stop := r.Intn(2*len(m)+4)-len(m)-2, r.Intn(2*len(m)+4)-len(m)-2
	got = got[:0]
	q.Range(start, stop, func(e []byte) bool { got = append(got, slices.Clone(e)); return true })
	if want := m.lrange(start, stop); !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("view from step %d: Range(%d, %d) differs", v.step, start, stop)
	}
	for range 3 {
		idx := r.Intn(2*len(m)) - len(m)
		j, _ := m.norm(idx)
		if e, ok := q.Index(idx); !ok || !bytes.Equal(e, m[j]) {
			t.Fatalf("view from step %d: Index(%d) = %q, %v", v.step, idx, short(e), ok)
		}
	}
}

// span is the backing array of a slice, as an address range.
func span(b []byte) (lo, hi uintptr) {
	lo = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return lo, lo + uintptr(cap(b))
}

// checkOwnership verifies the invariant copy-on-write rests on: nothing
// the live list may write in place (a node stamped with its epoch, the
// spare, or its node array unless marked shared) shares a byte of backing
// array with any node, or the node array, of any view.
func checkOwnership(t *testing.T, q *Quicklist, views []*frozenView) {
	t.Helper()
	if !q.nodes.shared && cap(q.nodes.buf) > 0 {
		qlo := uintptr(unsafe.Pointer(unsafe.SliceData(q.nodes.buf)))
		qhi := qlo + uintptr(cap(q.nodes.buf))*unsafe.Sizeof(qnode{})
		for _, v := range views {
			if cap(v.q.nodes.buf) == 0 {
				continue
			}
			vlo := uintptr(unsafe.Pointer(unsafe.SliceData(v.q.nodes.buf)))
			vhi := vlo + uintptr(cap(v.q.nodes.buf))*unsafe.Sizeof(qnode{})
			if qlo < vhi && vlo < qhi {
				t.Fatalf("view from step %d: its node array is the live list's, which is not marked shared", v.step)
			}
		}
	}
	var private [][]byte
	for k := range q.nodes.len() {
		if nd := q.nodes.peek(k); q.owns(nd) {
			private = append(private, nd.lp)
		}
	}
	if cap(q.spare) > 0 {
		private = append(private, q.spare)
	}
	for _, v := range views {
		for k := range v.q.nodes.len() {
			vlo, vhi := span(v.q.nodes.peek(k).lp)
			for _, p := range private {
				if plo, phi := span(p); plo < vhi && vlo < phi {
					t.Fatalf("view from step %d: node %d shares bytes with a node the live list may write", v.step, k)
				}
			}
		}
	}
}

// seenBytes records the backing arrays of every node of every view taken
// in a test, by start address.
type seenBytes map[uintptr]bool

func (s seenBytes) add(v *Quicklist) {
	for k := range v.nodes.len() {
		lo, _ := span(v.nodes.peek(k).lp) // as stored: compressed or not
		s[lo] = true
	}
}

// checkNoNeedlessClone verifies the other half of copy-on-write: a live
// node whose bytes no view was ever given (it was made, or cloned, after
// the snapshots) is marked private, so it will not be cloned again.
func checkNoNeedlessClone(t *testing.T, q *Quicklist, seen seenBytes) {
	t.Helper()
	for k := range q.nodes.len() {
		nd := q.nodes.peek(k)
		if lo, _ := span(nd.lp); !seen[lo] && !q.owns(nd) {
			t.Fatalf("node %d of %d: bytes no view has seen, yet marked shared (gen %d, list %d)", k, q.nodes.len(), nd.gen, q.gen)
		}
	}
}

// TestSnapshotModel runs random mutations of every kind, SetFill among
// them, with snapshots taken now and then, and checks after every step
// that the live list matches its model and that every view still alive
// reads exactly what it read when it was taken.
func TestSnapshotModel(t *testing.T) {
	fills := []int{1, 2, 3, 5, -1}
	for _, fill := range fills {
		t.Run(fmt.Sprintf("fill=%d", fill), func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(fill) + 2024))
			q := NewQuicklist(fill)
			q.SetCompressDepth(int(uint(fill+5) % 3)) // 0, 1 or 2
			// Start near the top of the epoch counter so that runs cover
			// its wrap-around as well as ordinary epochs.
			q.gen = math.MaxUint32 - 25
			var m modelList
			var views []*frozenView
			seen := seenBytes{}
			steps, maxLen := 2000, 120
			if testing.Short() {
				steps = 500
			}
			snaps := 0
			for s := range steps {
				switch x := r.Intn(100); {
				case x < 6:
					views = append(views, freeze(q, m, s))
					seen.add(views[len(views)-1].q)
					snaps++
					if len(views) > 4 { // let the oldest, or a random, view go
						i := 0
						if r.Intn(2) == 0 {
							i = r.Intn(len(views))
						}
						views = slices.Delete(views, i, i+1)
					}
				case x < 7:
					q.SetFill(fills[r.Intn(len(fills))])
				default:
					m = step(t, r, q, m, maxLen, s/300%3)
				}
				checkQuicklist(t, q, m)
				checkOwnership(t, q, views)
				checkNoNeedlessClone(t, q, seen)
				for _, v := range views {
					checkView(t, v, r)
				}
				if t.Failed() {
					t.Fatalf("failed at step %d", s)
				}
			}
			if snaps < 25 {
				t.Fatalf("only %d snapshots: the epoch did not wrap", snaps)
			}
		})
	}
}

// TestSnapshotViewPanics checks that every mutating method refuses to
// work on a view, whatever state the view is in.
func TestSnapshotViewPanics(t *testing.T) {
	q := NewQuicklist(2)
	q.PushTail([]byte("a"), []byte("b"), []byte("c"))
	full, empty := q.Snapshot(), NewQuicklist(2).Snapshot()
	for _, v := range []*Quicklist{full, empty} {
		if v.Snapshot() != v {
			t.Fatal("Snapshot of a view is not the view itself")
		}
		for name, f := range map[string]func(){
			"PushHead":      func() { v.PushHead([]byte("x")) },
			"PushTail":      func() { v.PushTail([]byte("x")) },
			"PopHead":       func() { v.PopHead() },
			"PopTail":       func() { v.PopTail() },
			"PopHeadAppend": func() { v.PopHeadAppend(nil) },
			"PopTailAppend": func() { v.PopTailAppend(nil) },
			"Insert":        func() { v.Insert(0, []byte("x")) },
			"InsertEnd":     func() { v.Insert(v.Len(), []byte("x")) },
			"InsertAfter":   func() { v.InsertAfter(0, []byte("x")) },
			"Set":           func() { v.Set(0, []byte("x")) },
			"RemoveValue":   func() { v.RemoveValue([]byte("a"), 0) },
			"DeleteRange":   func() { v.DeleteRange(0, 1) },
			"SetFill":       func() { v.SetFill(3) },
			"BeforeAdd":     func() { v.BeforeAdd(1, 1) },
		} {
			func() {
				defer func() {
					msg, _ := recover().(string)
					if !strings.Contains(msg, "read-only Quicklist snapshot") {
						t.Errorf("%s on a view of %d elements: panic %q", name, v.Len(), msg)
					}
				}()
				f()
			}()
		}
	}
	checkQuicklist(t, full, modelList{[]byte("a"), []byte("b"), []byte("c")})
	checkQuicklist(t, q, modelList{[]byte("a"), []byte("b"), []byte("c")})
	if q.ReadOnly() || !full.ReadOnly() {
		t.Fatal("ReadOnly")
	}
}

// sharedNodes counts the live nodes whose bytes are a view's (the same
// backing array).
func sharedNodes(q, v *Quicklist) int {
	seen := map[uintptr]bool{}
	v.Nodes(func(lp Listpack) bool { lo, _ := span(lp); seen[lo] = true; return true })
	n := 0
	q.Nodes(func(lp Listpack) bool {
		if lo, _ := span(lp); seen[lo] {
			n++
		}
		return true
	})
	return n
}

// TestSnapshotCopiesOnlyWhatChanges checks that a snapshot costs a copy
// of the node headers and nothing else, and that a change clones only the
// node it touches, once.
func TestSnapshotCopiesOnlyWhatChanges(t *testing.T) {
	q := benchList(100_000)
	n := q.NodeCount()
	if allocs := testing.AllocsPerRun(100, func() { q.Snapshot() }); allocs != 1 {
		t.Fatalf("Snapshot allocates %v times, want 1 (the view; it shares the node array)", allocs)
	}
	v := q.Snapshot()
	seen := seenBytes{}
	seen.add(v)
	if got := sharedNodes(q, v); got != n {
		t.Fatalf("%d of %d nodes shared right after Snapshot", got, n)
	}
	// A push into the tail node clones it; a push at the full head makes
	// a new node and leaves the old head shared.
	x := []byte("0123456789abcdef")
	q.PushTail(x)
	q.PushTail(x)
	q.PushHead(x)
	if got := sharedNodes(q, v); got != n-1 || q.NodeCount() != n+1 {
		t.Fatalf("after pushes at both ends %d of %d nodes still shared, want %d", got, q.NodeCount(), n-1)
	}
	checkNoNeedlessClone(t, q, seen)
	// The clone, and the node made after the snapshot, are private:
	// further pushes do not copy them again.
	if allocs := testing.AllocsPerRun(100, func() { q.PushTail(x) }); allocs > 0.05 {
		t.Fatalf("push into a node cloned once allocates %v per push", allocs)
	}
	if allocs := testing.AllocsPerRun(100, func() { q.PushHead(x) }); allocs > 0.05 {
		t.Fatalf("push into a node made after the snapshot allocates %v per push", allocs)
	}
	// A Set in the middle clones its node and no other.
	q.Set(q.Len()/2, []byte("needle"))
	if got := sharedNodes(q, v); got != n-2 {
		t.Fatalf("after Set %d nodes shared, want %d", got, n-2)
	}
	checkNoNeedlessClone(t, q, seen)
	// LREM clones only the nodes where it finds a match.
	w, wlen := q.Snapshot(), q.Len()
	if q.RemoveValue([]byte("needle"), 0) != 1 || sharedNodes(q, w) != q.NodeCount()-1 {
		t.Fatalf("LREM of one match cloned more than one node")
	}
	if v.Len() != 100_000 || w.Len() != wlen || q.Len() != wlen-1 || q.NodeCount() != n+1 {
		t.Fatalf("lengths %d %d %d", v.Len(), w.Len(), q.Len())
	}
}

// TestSnapshotPopsLargeWithoutCloning pops nodes a view shares that hold
// one value each (large values, in nodes of their own): they are dropped
// as they are, not cloned first.
func TestSnapshotPopsLargeWithoutCloning(t *testing.T) {
	q := NewQuicklist(-1)
	big := bytes.Repeat([]byte{'B'}, 10000)
	for range 300 {
		q.PushTail(big)
	}
	v := freeze(q, slices.Repeat(modelList{big}, 300), 0)
	dst := make([]byte, 0, len(big))
	allocs := testing.AllocsPerRun(100, func() {
		dst, _ = q.PopHeadAppend(dst[:0])
		dst, _ = q.PopTailAppend(dst[:0])
	})
	if allocs != 0 {
		t.Fatalf("popping a shared single-value node allocates %v times", allocs)
	}
	checkView(t, v, nil)
}

// TestSnapshotEpochWraps takes a snapshot as the epoch counter wraps
// around, with nodes stamped in the epoch it wraps to: they must still
// count as shared.
func TestSnapshotEpochWraps(t *testing.T) {
	q := NewQuicklist(2)
	q.gen = 1
	var m modelList
	for i := range 9 {
		v := []byte(fmt.Sprint("e", i))
		q.PushTail(v)
		m = append(m, v)
	}
	q.gen = math.MaxUint32 // four billion snapshots later, these nodes untouched
	v := freeze(q, m, 0)
	if q.gen != 1 {
		t.Fatalf("epoch %d after wrapping, want 1", q.gen)
	}
	q.PushHead([]byte("h"))
	q.Set(3, []byte("s"))
	q.DeleteRange(5, 2)
	q.PopTail()
	checkView(t, v, nil)
	checkOwnership(t, q, []*frozenView{v})
	var want modelList
	for _, e := range strings.Fields("h e0 e1 s e3 e6 e7") {
		want = append(want, []byte(e))
	}
	checkQuicklist(t, q, want)
}

// TestSnapshotQueueSpare runs a queue (push at the tail, pop at the head)
// past a snapshot until every node the view sees has been popped: none of
// those nodes may come back as the spare for a new tail node, and once the
// old nodes are gone the queue recycles its buffers again.
func TestSnapshotQueueSpare(t *testing.T) {
	q := NewQuicklist(DefaultFill)
	var m modelList
	buf := make([]byte, 0, 32)
	for i := range 5000 {
		v := slices.Clone(value16(buf, i))
		q.PushTail(v)
		m = append(m, v)
	}
	var dst []byte
	for i := range 3000 { // warm up: the spare is in use
		q.PushTail(value16(buf, i))
		dst, _ = q.PopHeadAppend(dst[:0])
	}
	m = nil
	q.Iter(false, func(_ int, v []byte) bool { m = append(m, slices.Clone(v)); return true })
	view := freeze(q, m, 0)
	for i := range 20000 {
		q.PushTail(value16(buf, i))
		dst, _ = q.PopHeadAppend(dst[:0])
		if i%500 == 0 {
			checkOwnership(t, q, []*frozenView{view})
			checkView(t, view, nil)
		}
	}
	if sharedNodes(q, view.q) != 0 {
		t.Fatal("nodes still shared after the queue turned over")
	}
	checkView(t, view, nil)
	allocs := testing.AllocsPerRun(20000, func() {
		q.PushTail(value16(buf, 1))
		dst, _ = q.PopHeadAppend(dst[:0])
	})
	if allocs > 0.001 {
		t.Fatalf("queue steady state after a snapshot allocates %v per op", allocs)
	}
}

// TestSnapshotConcurrentReaders mutates the live list on this goroutine
// while other goroutines read views of it in a loop, the way a BGSAVE or
// AOF rewrite writes a snapshot while clients push and pop. Run under
// -race it proves the live list never writes what a view reads; the
// readers also check that their view reads the same each time.
func TestSnapshotConcurrentReaders(t *testing.T) {
	r := rand.New(rand.NewSource(99))
	q := NewQuicklist(-1) // 4 KiB nodes: many of them, and splits
	q.SetCompressDepth(1) // views read compressed nodes while q compresses its own
	var m modelList
	buf := make([]byte, 0, 32)
	for i := range 8000 {
		v := slices.Clone(value16(buf, i))
		if i%7 == 0 {
			v = []byte(fmt.Sprint(i)) // integers too
		}
		q.PushTail(v)
		m = append(m, v)
	}
	const readers, minPasses = 3, 3
	var wg sync.WaitGroup
	stop := make(chan struct{})
	passes := make([]chan struct{}, readers)
	for g := range readers {
		// Each reader gets a view taken after some more mutations, so
		// several generations are alive and read at once.
		for range 300 {
			m = step(t, r, q, m, 12000, balanced)
		}
		v := freeze(q, m, g)
		passes[g] = make(chan struct{}, 1000)
		wg.Add(1)
		go func() {
			defer wg.Done()
			readLoop(t, v, stop, passes[g])
		}()
	}
	// Mutate until every reader has read its view a few times over (and
	// at least a few thousand operations), taking and dropping snapshots
	// as we go.
	done := make([]int, readers)
	for ops := 0; ops < 2000 || slices.Min(done) < minPasses; ops++ {
		if ops > 2_000_000 {
			t.Fatal("readers made no progress")
		}
		m = step(t, r, q, m, 12000, balanced)
		if ops%500 == 0 {
			_ = q.Snapshot()
		}
		for g, c := range passes {
			select {
			case <-c:
				done[g]++
			default:
			}
		}
	}
	close(stop)
	wg.Wait()
	checkQuicklist(t, q, m)
	t.Logf("readers made %v passes", done)
}

// readLoop reads view v in a loop until stop is closed, reporting each
// complete pass that found the view unchanged.
func readLoop(t *testing.T, v *frozenView, stop <-chan struct{}, passes chan<- struct{}) {
	flat := slices.Concat(v.nodes...)
	for {
		select {
		case <-stop:
			return
		default:
		}
		var b []byte
		v.q.Nodes(func(lp Listpack) bool {
			b = append(b, lp...)
			v.q.PlainValue(lp)
			return true
		})
		if !bytes.Equal(b, flat) {
			t.Errorf("view %d: node bytes changed", v.step)
			return
		}
		i, ok := 0, true
		v.q.Iter(false, func(j int, e []byte) bool {
			ok = j == i && bytes.Equal(e, v.m[i])
			i++
			return ok
		})
		v.q.Iter(true, func(j int, e []byte) bool {
			i--
			ok = ok && j == i && bytes.Equal(e, v.m[i])
			return ok
		})
		e, _ := v.q.Index(len(v.m) / 3)
		ok = ok && i == 0 && bytes.Equal(e, v.m[len(v.m)/3])
		n := 0
		v.q.Range(-100, -1, func(e []byte) bool { ok = ok && bytes.Equal(e, v.m[len(v.m)-100+n]); n++; return ok })
		if !ok || n != 100 || v.q.Len() != len(v.m) || v.q.Bytes() <= 0 || v.q.Encoding() != v.enc {
			t.Errorf("view %d: contents changed", v.step)
			return
		}
		select {
		case passes <- struct{}{}:
		case <-stop:
			return
		}
	}
}

// FuzzSnapshot runs the quicklist fuzz programs with two more operations,
// Snapshot and SetFill, and checks every view after every step.
func FuzzSnapshot(f *testing.F) {
	f.Add([]byte{0, 0, 5, 'h', 'e', 'l', 'l', 'o', 8, 1, 1, 4, 1, 2, 3, 4, 0, 2, 8, 3, 9, 1, 7, 0, 3}, int8(1))
	f.Add(bytes.Repeat([]byte{0, 4, 1, 1, 8, 4, 2, 3, 2, 0, 5, 6, 1, 2, 9, 3, 7, 1, 2}, 10), int8(-1))
	f.Add(bytes.Repeat([]byte{1, 3, 0x10, 0x10, 8, 4, 0x81, 4, 7, 0xFE, 3, 6, 0, 1, 0}, 8), int8(3))
	f.Fuzz(func(t *testing.T, data []byte, fill int8) {
		runSnapshotProg(t, &prog{b: data}, int(fill)%16-5, fuzzDepth(fill))
	})
}

// runSnapshotProg is runQuicklistProg with snapshots and fill changes.
func runSnapshotProg(t *testing.T, p *prog, fill, depth int) {
	q, m := NewQuicklist(fill), modelList(nil)
	q.SetCompressDepth(depth)
	var views []*frozenView
	for s := 0; !p.done() && s < 64; s++ {
		n := len(m)
		switch p.byte() % 10 {
		case 0:
			v := p.value()
			q.PushTail(v)
			m = append(m, v)
		case 1:
			v := p.value()
			q.PushHead(v)
			m = slices.Insert(m, 0, v)
		case 2:
			if v, ok := q.PopHead(); ok != (n > 0) || ok && !bytes.Equal(v, m[0]) {
				t.Fatal("PopHead mismatch")
			} else if ok {
				m = m[1:]
			}
		case 3:
			if v, ok := q.PopTail(); ok != (n > 0) || ok && !bytes.Equal(v, m[n-1]) {
				t.Fatal("PopTail mismatch")
			} else if ok {
				m = m[:n-1]
			}
		case 4:
			i, v := p.index(n), p.value()
			j, _ := m.norm(i)
			if i == n {
				j = n
			}
			if q.Insert(i, v) {
				m = slices.Insert(m, j, v)
			}
		case 5:
			i, v := p.index(n), p.value()
			if j, ok := m.norm(i); ok && q.InsertAfter(i, v) {
				m = slices.Insert(m, j+1, v)
			}
		case 6:
			i, v := p.index(n), p.value()
			if j, ok := m.norm(i); ok && q.Set(i, v) {
				m[j] = v
			}
		case 7:
			i, c := p.index(n), int(p.byte()%8)
			if n > 0 && c == 0 { // LREM of an element present
				c = int(int8(p.byte())) % 4
				v := m[int(p.byte())%n]
				var want int
				m, want = m.lrem(v, c)
				if got := q.RemoveValue(v, c); got != want {
					t.Fatalf("RemoveValue = %d, want %d", got, want)
				}
			} else if j, ok := m.norm(i); q.DeleteRange(i, c) > 0 && ok {
				m = slices.Delete(m, j, min(j+c, n))
			}
		case 8:
			views = append(views, freeze(q, m, s))
			if len(views) > 4 {
				views = views[1:]
			}
		case 9:
			if b := p.byte(); b&0x80 != 0 {
				q.SetCompressDepth(int(b & 3))
			} else {
				q.SetFill(int(int8(b<<1))%16 - 5)
			}
		}
		checkQuicklist(t, q, m)
		checkOwnership(t, q, views)
		for _, v := range views {
			checkView(t, v, nil)
		}
	}
}

// BenchmarkSnapshot times Snapshot of a 1,000,000-element list of 16-byte
// values (8 KiB nodes): a copy of the node headers, whatever the element
// count.
func BenchmarkSnapshot(b *testing.B) {
	q := benchList(1_000_000)
	b.ReportAllocs()
	for b.Loop() {
		q.Snapshot()
	}
	b.ReportMetric(float64(q.NodeCount()), "nodes")
}

// BenchmarkFirstWriteAfterSnapshot measures what a snapshot adds to the
// next write: the clone of the node it touches. The list has three 8 KiB
// nodes, the tail one half full. "tail" pushes and pops at the tail (the
// push clones the half-full tail node); "head" pops and pushes at the head
// (the pop clones the full head node). "first" takes a snapshot before each
// operation, "plain" never does, and "snapshot" is the snapshot alone:
// first - plain - snapshot is the cost of the clone.
func BenchmarkFirstWriteAfterSnapshot(b *testing.B) {
	v := []byte("0123456789abcdef")
	dst := make([]byte, 0, 64)
	ops := map[string]func(q *Quicklist){
		"tail": func(q *Quicklist) { q.PushTail(v); dst, _ = q.PopTailAppend(dst[:0]) },
		"head": func(q *Quicklist) { dst, _ = q.PopHeadAppend(dst[:0]); q.PushHead(v) },
	}
	for _, end := range []string{"tail", "head"} {
		for _, mode := range []string{"first", "plain", "snapshot"} {
			b.Run(end+"/"+mode, func(b *testing.B) {
				q := benchList(2*454 + 227)
				op := ops[end]
				b.ReportAllocs()
				for b.Loop() {
					if mode != "plain" {
						q.Snapshot()
					}
					if mode != "snapshot" {
						op(q)
					}
				}
			})
		}
	}
}
