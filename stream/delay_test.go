package stream

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
)

// delayModel is the reference for delayed entries: a sorted slice.
type delayModel []dentry

func (m *delayModel) add(id ID, fv [][]byte) {
	i, _ := slices.BinarySearchFunc(*m, id, func(e dentry, id ID) int { return e.id.Compare(id) })
	*m = slices.Insert(*m, i, dentry{id, fv})
}

func (m *delayModel) remove(id ID) bool {
	i, ok := slices.BinarySearchFunc(*m, id, func(e dentry, id ID) int { return e.id.Compare(id) })
	if ok {
		*m = slices.Delete(*m, i, i+1)
	}
	return ok
}

// checkDelay compares the structure with the model entry by entry, and
// checks its node invariants and byte count.
func checkDelay(t *testing.T, d *delayed, m delayModel) {
	t.Helper()
	if d.Len() != len(m) {
		t.Fatalf("Len %d, model %d", d.Len(), len(m))
	}
	i := 0
	d.each(func(id ID, fv [][]byte) bool {
		if i >= len(m) || id != m[i].id || !slices.EqualFunc(fv, m[i].fv, bytes.Equal) {
			t.Fatalf("entry %d: %v %q, model %v", i, id, fv, m[min(i, len(m)-1)])
		}
		i++
		return true
	})
	if i != len(m) {
		t.Fatalf("walked %d entries, model has %d", i, len(m))
	}
	var bytes int64
	prevLast, first := ID{}, true
	for k, n := range d.idx.All() {
		base := IDFromKey(k)
		bytes += int64(cap(n.lp)) + dnodeOverhead
		es := n.decode(base)
		if len(es) != n.count || n.count == 0 || n.last != es[len(es)-1].id {
			t.Fatalf("node %v: count %d last %v, holds %d", base, n.count, n.last, len(es))
		}
		if es[0].id.Less(base) || (!first && !prevLast.Less(base)) {
			t.Fatalf("node %v: base out of place (first %v, previous last %v)", base, es[0].id, prevLast)
		}
		prevLast, first = es[len(es)-1].id, false
	}
	if bytes != d.bytes {
		t.Fatalf("bytes %d, nodes take %d", d.bytes, bytes)
	}
}

// runDelayOps drives the structure and the model with ops decoded from
// data: add (at an ID chosen near others, so nodes fill, split and
// rebase), remove, pop the minimum, floor queries, and snapshots whose
// frozen view must not change.
func runDelayOps(t *testing.T, data []byte) {
	var d delayed
	var m delayModel
	var frozen *delayed
	var frozenModel delayModel
	for len(data) >= 3 {
		op, a, b := data[0]%8, uint64(data[1]), uint64(data[2])
		data = data[3:]
		id := ID{Ms: a % 64 * 3, Seq: b % 5}
		switch op {
		case 0, 1, 2, 3:
			if _, ok := slices.BinarySearchFunc(m, id, func(e dentry, id ID) int { return e.id.Compare(id) }); ok {
				continue
			}
			fv := [][]byte{[]byte("job"), []byte(fmt.Sprintf("v%d-%s", b, bytes.Repeat([]byte{'x'}, int(a%40))))}
			if b%7 == 0 {
				fv = append(fv, []byte("n"), []byte(fmt.Sprint(a)))
			}
			d.add(id, fv)
			m.add(id, fv)
		case 4:
			if got, want := d.remove(id), m.remove(id); got != want {
				t.Fatalf("remove %v: %v, model %v", id, got, want)
			}
		case 5:
			e, ok := d.popMin()
			if ok != (len(m) > 0) || ok && e.id != m[0].id {
				t.Fatalf("popMin %v %v, model %v", e.id, ok, m)
			}
			if ok {
				m = m[1:]
			}
		case 6:
			got, ok := d.floor(id)
			i, found := slices.BinarySearchFunc(m, id, func(e dentry, id ID) int { return e.id.Compare(id) })
			if found {
				i++
			}
			if ok != (i > 0) || ok && got != m[i-1].id {
				t.Fatalf("floor %v: %v %v, model index %d", id, got, ok, i)
			}
		case 7:
			f := d.freeze()
			frozen, frozenModel = &f, slices.Clone(m)
		}
		checkDelay(t, &d, m)
	}
	if frozen != nil {
		checkDelay(t, frozen, frozenModel)
	}
	c := d.clone()
	checkDelay(t, &c, m)
}

func FuzzDelayed(f *testing.F) {
	seed := make([]byte, 3000)
	for i := range seed {
		seed[i] = byte(i*13 + i/7)
	}
	f.Add(seed)
	f.Add([]byte{0, 1, 1, 0, 0, 1, 7, 0, 0, 0, 2, 2, 5, 0, 0, 4, 2, 2})
	f.Fuzz(runDelayOps)
}

func TestDelayedModel(t *testing.T) {
	for s := range 6 {
		data := make([]byte, 3000)
		for i := range data {
			data[i] = byte((i*(s+3) + i/5*s + s) % 251)
		}
		runDelayOps(t, data)
	}
}

func TestAddDelayedReservesInMillisecond(t *testing.T) {
	s := New()
	fv := [][]byte{[]byte("f"), []byte("v")}
	for want := range uint64(3) {
		id, err := s.AddDelayed(1000, fv)
		if err != nil || id != (ID{1000, want}) {
			t.Fatalf("AddDelayed: %v %v, want 1000-%d", id, err, want)
		}
	}
	if id, _ := s.AddDelayed(500, fv); id != (ID{500, 0}) {
		t.Fatalf("an earlier due time: %v", id)
	}
	if s.Len() != 0 || s.DelayedLen() != 4 {
		t.Fatalf("Len %d DelayedLen %d before release", s.Len(), s.DelayedLen())
	}
	if due, ok := s.NextDue(); !ok || due != 500 {
		t.Fatalf("NextDue %d %v", due, ok)
	}
}

func TestReleaseKeepsOrFollowsIDs(t *testing.T) {
	s := New()
	fv := [][]byte{[]byte("f"), []byte("v")}
	a, _ := s.AddDelayed(1000, fv)
	b, _ := s.AddDelayed(2000, fv)
	if n, err := s.Release(999, DefaultLimits); n != 0 || err != nil {
		t.Fatalf("release before due: %d %v", n, err)
	}
	if n, _ := s.Release(1000, DefaultLimits); n != 1 || s.LastID() != a {
		t.Fatalf("released %d, last %v, want %v", n, s.LastID(), a)
	}
	// An explicit ID past the reservation: the entry takes the next ID.
	if err := s.Add(ID{3000, 5}, fv, DefaultLimits); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Release(5000, DefaultLimits); n != 1 || s.LastID() != (ID{3000, 6}) || b == s.LastID() {
		t.Fatalf("released %d, last %v", n, s.LastID())
	}
	if s.Len() != 3 || s.DelayedLen() != 0 {
		t.Fatalf("Len %d DelayedLen %d", s.Len(), s.DelayedLen())
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestCancelDelayed(t *testing.T) {
	s := New()
	id, _ := s.AddDelayed(1000, [][]byte{[]byte("f"), []byte("v")})
	if s.CancelDelayed(ID{1000, 1}) || !s.CancelDelayed(id) || s.DelayedLen() != 0 {
		t.Fatalf("cancel: %d left", s.DelayedLen())
	}
}

// TestDelayedMemory holds delayed entries of the bench shape to within
// twice what the same entries take once visible (issue 15).
func TestDelayedMemory(t *testing.T) {
	const n = 100_000
	delayed, visible := New(), New()
	for i := range n {
		fv := [][]byte{[]byte("job"), fmt.Appendf(nil, "%016d", i)}
		if _, err := delayed.AddDelayed(uint64(1_000_000+i/10), fv); err != nil {
			t.Fatal(err)
		}
		if err := visible.Add(ID{Ms: uint64(1_000_000 + i/10), Seq: uint64(i % 10)}, fv, DefaultLimits); err != nil {
			t.Fatal(err)
		}
	}
	d, v := float64(delayed.MemoryUsage())/n, float64(visible.MemoryUsage())/n
	t.Logf("bytes per entry: delayed %.1f, visible %.1f (%.2fx)", d, v, d/v)
	if d > 2*v {
		t.Fatalf("a delayed entry takes %.1f bytes, more than twice a visible one's %.1f", d, v)
	}
}

// BenchmarkAddDelayed adds entries of the bench shape due in order (the
// common case: one DELAY for all), beside BenchmarkAddVisible.
func BenchmarkAddDelayed(b *testing.B) {
	s := New()
	fv := [][]byte{[]byte("job"), []byte("v:00000000000000")}
	for i := range b.N {
		if _, err := s.AddDelayed(uint64(1_000_000+i/8), fv); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAddVisible(b *testing.B) {
	s := New()
	fv := [][]byte{[]byte("job"), []byte("v:00000000000000")}
	for i := range b.N {
		if err := s.Add(ID{Ms: uint64(1_000_000 + i/8), Seq: uint64(i % 8)}, fv, DefaultLimits); err != nil {
			b.Fatal(err)
		}
	}
}
