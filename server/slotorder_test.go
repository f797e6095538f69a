package server

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/google/btree"
)

// slotKeys fills db 0 of s with keys over many slots, hash-tagged ones
// ("{tag}x") among them, plus one key in slot 0 and one in slot 16383,
// and returns the model: each slot's keys.
func slotKeys(t *testing.T, s *Server, n int) map[int][]string {
	t.Helper()
	model := map[int][]string{}
	add := func(key string) {
		s.shard.dbs[0].insert(key, &Object{value: []byte("v")})
		slot := keySlot(key)
		model[slot] = append(model[slot], key)
	}
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	for i := range n {
		if i%4 == 0 {
			add(fmt.Sprintf("{tag%d}x%d", i%40, i)) // ten keys per tag's slot at least
		} else {
			add(fmt.Sprintf("k%d", i))
		}
	}
	for _, edge := range []int{0, ClusterSlots - 1} {
		for i := 0; len(model[edge]) == 0; i++ {
			if key := fmt.Sprintf("edge%d", i); keySlot(key) == edge {
				add(key)
			}
		}
	}
	return model
}

// TestKeysInSlotModel: COUNTKEYSINSLOT, GETKEYSINSLOT (with its count)
// and the slot-range walk give exactly the model's keys, for slots with
// many keys (hash tags), one, none, and the first and last slot.
func TestKeysInSlotModel(t *testing.T) {
	s := newTestServer(t, nil)
	model := slotKeys(t, s, 20000)
	db := s.shard.dbs[0]
	empty := -1
	for slot := range ClusterSlots {
		if len(model[slot]) == 0 {
			empty = slot
			break
		}
	}
	one := -1
	for slot, keys := range model {
		if len(keys) == 1 && slot != 0 && slot != ClusterSlots-1 {
			one = slot
			break
		}
	}
	if empty < 0 || one < 0 {
		t.Fatalf("no empty slot (%d) or slot with one key (%d) to check", empty, one)
	}
	slots := []int{0, ClusterSlots - 1, keySlot("{tag0}"), keySlot("{tag7}"), keySlot("k1"), empty, one}

	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	for _, slot := range slots {
		want := slices.Sorted(slices.Values(model[slot]))
		if got := countKeysInSlot(db, slot); got != len(want) {
			t.Errorf("COUNTKEYSINSLOT %d = %d, want %d", slot, got, len(want))
		}
		if got := slices.Sorted(slices.Values(keysInSlot(db, slot, -1))); !slices.Equal(got, want) {
			t.Errorf("GETKEYSINSLOT %d (all) = %q, want %q", slot, got, want)
		}
		for _, limit := range []int64{0, 1, 2, int64(len(want)) + 1} {
			got := keysInSlot(db, slot, limit)
			if len(got) != min(len(want), int(limit)) {
				t.Errorf("GETKEYSINSLOT %d %d = %d keys, want %d", slot, limit, len(got), min(len(want), int(limit)))
			}
			for _, k := range got {
				if !slices.Contains(want, k) {
					t.Errorf("GETKEYSINSLOT %d %d returned %q, of slot %d", slot, limit, k, keySlot(k))
				}
			}
		}
	}
}

// TestAscendSlots: the walk over a slot range visits exactly the keys
// whose slot lies in it, slot by slot, and stops when told to.
func TestAscendSlots(t *testing.T) {
	s := newTestServer(t, nil)
	model := slotKeys(t, s, 5000)
	db := s.shard.dbs[0]
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	for _, r := range [][2]int{{0, 0}, {ClusterSlots - 1, ClusterSlots - 1}, {0, ClusterSlots - 1}, {100, 5000}, {5000, 100}} {
		var want []string
		for slot := r[0]; slot <= r[1]; slot++ {
			want = append(want, model[slot]...)
		}
		var got []string
		db.ascendSlots(r[0], r[1], func(key string) bool {
			got = append(got, key)
			return true
		})
		if !slices.IsSortedFunc(got, func(a, b string) int { return keySlot(a) - keySlot(b) }) {
			t.Errorf("slots [%d, %d]: keys not visited slot by slot", r[0], r[1])
		}
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
			t.Errorf("slots [%d, %d]: visited %d keys, want %d", r[0], r[1], len(got), len(want))
		}
		visited := 0
		db.ascendSlots(r[0], r[1], func(string) bool { visited++; return visited < 3 })
		if visited != min(3, len(want)) {
			t.Errorf("slots [%d, %d]: a visitor that stops after 3 keys was called %d times", r[0], r[1], visited)
		}
	}
}

// TestCountKeysInSlotReadsOnlyItsSlot: counting a slot's one key among
// 100k reads neither other slots' entries nor more than a seek's worth
// of the index. Entries placed in the index at other slots' positions
// under a name of the counted slot would be counted by any walk that
// reads them; the index's comparisons bound the seek.
func TestCountKeysInSlotReadsOnlyItsSlot(t *testing.T) {
	s := newTestServer(t, nil)
	db := s.shard.dbs[0]
	compares := 0
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	db.order = btree.NewG(32, func(a, b scanEntry) bool { compares++; return scanLess(a, b) })
	const lone = "{lone}"
	slot := keySlot(lone)
	db.insert(lone, &Object{value: []byte("v")})
	for i := 0; db.Len() < 100_000; i++ {
		if key := fmt.Sprintf("k%d", i); keySlot(key) != slot {
			db.insert(key, &Object{value: []byte("v")})
		}
	}
	for _, other := range []int{0, slot - 1, slot + 1, ClusterSlots - 1} {
		db.order.ReplaceOrInsert(scanEntry{hash: slotStart(other) + 1, key: lone + "decoy"})
	}

	compares = 0
	if n := countKeysInSlot(db, slot); n != 1 {
		t.Errorf("COUNTKEYSINSLOT %d = %d, want 1 (it read entries of other slots)", slot, n)
	}
	if compares > 100 {
		t.Errorf("COUNTKEYSINSLOT over 100k keys made %d comparisons in the index, want a seek's worth (≤ 100)", compares)
	}
}

// TestScanAcrossSlotsWithChurn: a SCAN over keys of many slots, with keys
// deleted and added between its pages, returns every key present for the
// whole scan, and walks the keyspace slot by slot.
func TestScanAcrossSlotsWithChurn(t *testing.T) {
	s := newTestServer(t, nil)
	model := slotKeys(t, s, 3000)
	c := connect(t, s)
	var initial []string
	for _, keys := range model {
		initial = append(initial, keys...)
	}
	slices.Sort(initial)
	doomed := map[string]bool{} // deleted during the scan, one in five
	for i, k := range initial {
		if i%5 == 0 {
			doomed[k] = true
		}
	}
	bulk := regexp.MustCompile(`\$("(?:[^"\\]|\\.)*")`)
	seen := map[string]bool{}
	cursor, lastSlot, page := "0", 0, 0
	for {
		var words []string
		for _, m := range bulk.FindAllStringSubmatch(c.send("SCAN", cursor, "COUNT", "37"), -1) {
			w, err := strconv.Unquote(m[1])
			if err != nil {
				t.Fatal(err)
			}
			words = append(words, w)
		}
		cursor = words[0]
		for _, k := range words[1:] {
			if keySlot(k) < lastSlot {
				t.Fatalf("SCAN returned %q (slot %d) after a key of slot %d", k, keySlot(k), lastSlot)
			}
			lastSlot = keySlot(k)
			seen[k] = true
		}
		if cursor == "0" {
			break
		}
		page++
		for i := page * 7; i < page*7+7 && i < len(initial); i++ { // a few deletes, spread over every slot
			if k := initial[(i*7919)%len(initial)]; doomed[k] {
				c.send("DEL", k)
			}
		}
		c.send("SET", fmt.Sprintf("new%d", page), "v")
		c.send("SET", fmt.Sprintf("{tag%d}new%d", page%40, page), "v")
	}
	for _, k := range initial {
		if !doomed[k] && !seen[k] {
			t.Errorf("SCAN missed %q (slot %d), present for the whole scan", k, keySlot(k))
		}
	}
}
