package stream

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// omapModel is the obvious ordered map: a Go map plus a sort.
type omapModel map[ID]int64

func (m omapModel) sorted() []ID {
	ids := make([]ID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, ID.Compare)
	return ids
}

// contents lists an omap's entries in order.
func contents(m *omap[int64]) (ids []ID, vals []int64) {
	m.Ascend(MinID, func(id ID, v int64) bool {
		ids = append(ids, id)
		vals = append(vals, v)
		return true
	})
	return ids, vals
}

func equalModel(t *testing.T, what string, m *omap[int64], model omapModel) {
	t.Helper()
	if err := m.check(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	ids, vals := contents(m)
	want := model.sorted()
	if !slices.Equal(ids, want) {
		t.Fatalf("%s: ids %v, want %v", what, ids, want)
	}
	for i, id := range ids {
		if vals[i] != model[id] {
			t.Fatalf("%s: %s = %d, want %d", what, id, vals[i], model[id])
		}
	}
}

// TestOmapModel drives an omap and the model with random sets, updates,
// deletes and seeks, appends in order (the common case) and inserts out
// of order (splits), freezing now and then: a frozen view must keep
// exactly what it saw while the live map goes on changing.
func TestOmapModel(t *testing.T) {
	seeds := uint64(20)
	if raceEnabled {
		seeds = 6
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 7))
		var m omap[int64]
		model := omapModel{}
		type frozen struct {
			m     omap[int64]
			model omapModel
		}
		var views []frozen
		next := uint64(1)
		for step := range 4000 {
			var id ID
			switch r := rng.IntN(10); {
			case r < 4: // in order, as deliveries come
				id = ID{Ms: next, Seq: 0}
				next += uint64(1 + rng.IntN(3))
			case r < 6 && len(model) > 0: // an existing one
				ids := model.sorted()
				id = ids[rng.IntN(len(ids))]
			default:
				id = ID{Ms: uint64(rng.IntN(int(next) + 5)), Seq: uint64(rng.IntN(3))}
			}
			switch rng.IntN(6) {
			case 0, 1, 2:
				v := rng.Int64()
				_, had := model[id]
				if inserted := m.Set(id, v); inserted == had {
					t.Fatalf("seed %d step %d: Set(%s) inserted %v, model had %v", seed, step, id, inserted, had)
				}
				model[id] = v
			case 3:
				_, had := model[id]
				if m.Update(id, 42) != had {
					t.Fatalf("Update(%s) disagrees", id)
				}
				if had {
					model[id] = 42
				}
			default:
				v, ok := m.Delete(id)
				want, had := model[id]
				if ok != had || v != want {
					t.Fatalf("seed %d step %d: Delete(%s) = %d %v, want %d %v", seed, step, id, v, ok, want, had)
				}
				delete(model, id)
			}
			if m.Len() != len(model) {
				t.Fatalf("len %d, model %d", m.Len(), len(model))
			}
			if step%500 == 0 {
				equalModel(t, "live", &m, model)
				views = append(views, frozen{m.freeze(), maps(model)})
			}
		}
		equalModel(t, "live", &m, model)
		for i := range views {
			equalModel(t, "frozen view", &views[i].m, views[i].model)
		}
		checkSeeks(t, &m, model, rng)
	}
}

func maps(m omapModel) omapModel {
	c := omapModel{}
	for k, v := range m {
		c[k] = v
	}
	return c
}

func checkSeeks(t *testing.T, m *omap[int64], model omapModel, rng *rand.Rand) {
	t.Helper()
	want := model.sorted()
	for range 200 {
		from := ID{Ms: uint64(rng.IntN(9000)), Seq: uint64(rng.IntN(3))}
		i, _ := slices.BinarySearchFunc(want, from, ID.Compare)
		var got []ID
		m.Ascend(from, func(id ID, _ int64) bool {
			got = append(got, id)
			return len(got) < 5
		})
		exp := want[i:min(i+5, len(want))]
		if !slices.Equal(got, exp) {
			t.Fatalf("Ascend(%s) = %v, want %v", from, got, exp)
		}
	}
	if mn, ok := m.Min(); ok != (len(want) > 0) || (ok && mn != want[0]) {
		t.Fatalf("Min %s %v", mn, ok)
	}
	if mx, ok := m.Max(); ok != (len(want) > 0) || (ok && mx != want[len(want)-1]) {
		t.Fatalf("Max %s %v", mx, ok)
	}
}

// TestFinder checks Find against Has for IDs in order, out of order,
// deleted and missing, across nodes.
func TestFinder(t *testing.T) {
	s := New()
	for i := 1; i <= 500; i++ {
		if err := s.Add(ID{Ms: uint64(i)}, [][]byte{[]byte("f"), []byte("v")}, Limits{MaxEntries: 7}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 3; i <= 500; i += 5 {
		s.Delete(ID{Ms: uint64(i)})
	}
	rng := rand.New(rand.NewPCG(1, 1))
	f := s.Finder()
	defer f.Close()
	for range 5000 {
		id := ID{Ms: uint64(rng.IntN(520)), Seq: uint64(rng.IntN(2))}
		it, ok := f.Find(id)
		if ok != s.Has(id) || (ok && it.ID() != id) {
			t.Fatalf("Find(%s) = %v, Has %v", id, ok, s.Has(id))
		}
		if ok {
			if fv := it.Fields(); len(fv) != 2 || string(fv[1]) != "v" {
				t.Fatalf("Find(%s) fields %q", id, fv)
			}
		}
	}
}
