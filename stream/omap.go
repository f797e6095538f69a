package stream

import (
	"math"
	"slices"

	"github.com/redstream/redstream/radix"
)

// omap is an ordered map from IDs to values of type V: the shape of every
// pending-entries list. Entries live in sorted chunks of up to chunkMax
// IDs and values, held in plain slices, and the chunks are indexed by a
// radix tree under a key no greater than their first ID:
//
//	radix index (16-byte keys)        chunks (sorted, at most chunkMax each)
//	  1-0  ────────────────────▶  ids:  1-0  1-1  2-0 ... 9-3
//	                                vals: v    v    v   ... v
//	  9-4  ────────────────────▶  ids:  9-4  ...
//
// Why chunks rather than one radix key per entry: an entry costs its ID
// and its value and nothing more (no per-entry tree node, no pointer for
// the garbage collector to trace), and a snapshot can share the chunks
// copy-on-write. freeze copies only the index, one key per chunk, and
// moves the live map to a new epoch; a write to a chunk of an older
// epoch copies that chunk first (own), just as Stream.edit does for
// listpack nodes. So freezing a million pending entries copies about
// eight thousand index keys, and the writes after it copy the few chunks
// they touch.
//
// A chunk's index key (lo) stays valid as long as it is no greater than
// the chunk's first ID and greater than every ID of the chunk before it,
// so deleting a chunk's first entry needs no re-keying; only an ID below
// every key moves the first chunk's key down.
type omap[V any] struct {
	idx   radix.Tree[*chunk[V]]
	n     int
	epoch uint64
	it    *radix.Iterator[*chunk[V]] // reused by lookups; never shared with a frozen copy

	// A PEL is written at both ends: deliveries add past its end, acks
	// take from near its start. seekLE remembers the chunk it found last
	// (hot) and the chunk with the greatest key (last), so those two
	// spots cost no tree walk. gen counts changes to the index; a
	// remembered chunk is good only in the gen it was found in.
	gen             uint64
	hot, last       *chunk[V]
	hotGen, lastGen uint64
}

// chunkMax is the most entries a chunk holds. Larger chunks mean fewer
// index keys (cheaper snapshots, less overhead per entry) but longer
// copies when an entry is inserted in the middle or a shared chunk is
// copied; 128 entries of a group PEL are 5 KB.
const chunkMax = 128

// frozenEpoch marks a map that is never written again (a snapshot).
const frozenEpoch = math.MaxUint64

type chunk[V any] struct {
	lo    ID // the index key
	ids   []ID
	vals  []V
	epoch uint64 // the map epoch that may write it in place
}

// Len returns the number of entries.
func (m *omap[V]) Len() int { return m.n }

// seekLE returns the chunk that may hold id (the one with the greatest
// key <= id), or nil when id is below every key. It leaves m.it on it.
func (m *omap[V]) seekLE(id ID) *chunk[V] {
	// The greatest key is the answer for any id at or above it; a chunk's
	// key is the answer for any id up to its last entry, since the next
	// chunk's key is above that entry.
	if c := m.last; c != nil && m.lastGen == m.gen && c.lo.Compare(id) <= 0 {
		return c
	}
	if c := m.hot; c != nil && m.hotGen == m.gen && c.lo.Compare(id) <= 0 && id.Compare(c.ids[len(c.ids)-1]) <= 0 {
		return c
	}
	k := id.Key()
	if m.it == nil {
		m.it = m.idx.Seek(radix.LE, k[:])
	} else {
		m.it.Seek(radix.LE, k[:])
	}
	if !m.it.Next() {
		return nil
	}
	c := m.it.Value()
	m.hot, m.hotGen = c, m.gen
	if m.lastGen != m.gen || m.last == nil {
		_, m.last, _ = m.idx.Max()
		m.lastGen = m.gen
	}
	return c
}

// indexChanged forgets the chunks seekLE remembered: the index changed.
func (m *omap[V]) indexChanged() { m.gen++ }

// search returns where id is, or would be inserted, in the chunk.
func (c *chunk[V]) search(id ID) (int, bool) {
	return slices.BinarySearchFunc(c.ids, id, ID.Compare)
}

// Get returns the value stored under id.
func (m *omap[V]) Get(id ID) (v V, ok bool) {
	c := m.seekLE(id)
	if c == nil {
		return v, false
	}
	i, ok := c.search(id)
	if !ok {
		return v, false
	}
	return c.vals[i], true
}

// Has reports whether id is in the map.
func (m *omap[V]) Has(id ID) bool {
	_, ok := m.Get(id)
	return ok
}

// own returns c ready to be written in place: c itself when the live
// epoch owns it, else a copy that replaces it in the index.
func (m *omap[V]) own(c *chunk[V]) *chunk[V] {
	if c.epoch == m.epoch {
		return c
	}
	d := &chunk[V]{lo: c.lo, ids: slices.Clone(c.ids), vals: slices.Clone(c.vals), epoch: m.epoch}
	k := c.lo.Key()
	m.idx.Insert(k[:], d) // replaces the value; the tree keeps its shape
	m.indexChanged()
	return d
}

// Update replaces the value of an entry that exists; it reports false
// (and stores nothing) when id is absent.
func (m *omap[V]) Update(id ID, v V) bool {
	c := m.seekLE(id)
	if c == nil {
		return false
	}
	i, ok := c.search(id)
	if !ok {
		return false
	}
	c = m.own(c)
	c.vals[i] = v
	return true
}

// Set stores v under id and reports whether id is new.
func (m *omap[V]) Set(id ID, v V) bool {
	_, replaced := m.Put(id, v)
	return !replaced
}

// Put stores v under id and returns the value it replaced, if any.
func (m *omap[V]) Put(id ID, v V) (old V, replaced bool) {
	c := m.seekLE(id)
	if c == nil {
		if c = m.firstChunk(); c == nil {
			m.addChunk(id, id, v, 4)
			m.n++
			return old, false
		}
		c = m.rekey(c, id) // id is below every key: the first chunk takes it
	}
	i, found := c.search(id)
	if found {
		c = m.own(c)
		old, c.vals[i] = c.vals[i], v
		return old, true
	}
	m.insertAt(c, i, id, v)
	m.n++
	return old, false
}

// insertAt puts a new entry at position i of chunk c, splitting a full
// chunk. An entry past the end of a full chunk starts a new chunk with
// room for chunkMax: that is the common case of IDs delivered in order,
// which so fill every chunk exactly.
func (m *omap[V]) insertAt(c *chunk[V], i int, id ID, v V) {
	if len(c.ids) < chunkMax {
		c = m.own(c)
		c.ids = slices.Insert(c.ids, i, id)
		c.vals = slices.Insert(c.vals, i, v)
		return
	}
	if i == len(c.ids) {
		m.addChunk(id, id, v, chunkMax)
		return
	}
	c = m.own(c)
	half := len(c.ids) / 2
	d := &chunk[V]{lo: c.ids[half], epoch: m.epoch}
	d.ids = append(make([]ID, 0, chunkMax), c.ids[half:]...)
	d.vals = append(make([]V, 0, chunkMax), c.vals[half:]...)
	clear(c.vals[half:])
	c.ids, c.vals = c.ids[:half], c.vals[:half]
	k := d.lo.Key()
	m.idx.Insert(k[:], d)
	m.indexChanged()
	if i > half { // at i == half the entry ends the lower chunk: d's key is above it
		c, i = d, i-half
	}
	c.ids = slices.Insert(c.ids, i, id)
	c.vals = slices.Insert(c.vals, i, v)
}

// addChunk indexes a new chunk holding one entry.
func (m *omap[V]) addChunk(lo, id ID, v V, capacity int) {
	c := &chunk[V]{lo: lo, ids: make([]ID, 1, capacity), vals: make([]V, 1, capacity), epoch: m.epoch}
	c.ids[0], c.vals[0] = id, v
	k := lo.Key()
	m.idx.Insert(k[:], c)
	m.indexChanged()
}

func (m *omap[V]) firstChunk() *chunk[V] {
	_, c, ok := m.idx.Min()
	if !ok {
		return nil
	}
	return c
}

// rekey moves chunk c under the lower key lo.
func (m *omap[V]) rekey(c *chunk[V], lo ID) *chunk[V] {
	c = m.own(c)
	old := c.lo.Key()
	m.idx.Delete(old[:])
	c.lo = lo
	k := lo.Key()
	m.idx.Insert(k[:], c)
	m.indexChanged()
	return c
}

// Delete removes id and returns its value.
func (m *omap[V]) Delete(id ID) (v V, ok bool) {
	c := m.seekLE(id)
	if c == nil {
		return v, false
	}
	i, ok := c.search(id)
	if !ok {
		return v, false
	}
	v = c.vals[i]
	m.n--
	if len(c.ids) == 1 {
		k := c.lo.Key()
		m.idx.Delete(k[:])
		m.indexChanged()
		return v, true
	}
	c = m.own(c)
	if i == 0 {
		// Acknowledgements mostly take the oldest entry: slicing it off
		// costs nothing, and the key stays below the new first ID.
		var zero V
		c.vals[0] = zero
		c.ids, c.vals = c.ids[1:], c.vals[1:]
	} else {
		c.ids = slices.Delete(c.ids, i, i+1)
		c.vals = slices.Delete(c.vals, i, i+1)
	}
	if cap(c.ids) >= 16 && cap(c.ids) >= 4*len(c.ids) {
		// Mostly emptied: give the room back.
		c.ids = append(make([]ID, 0, 2*len(c.ids)), c.ids...)
		c.vals = append(make([]V, 0, 2*len(c.vals)), c.vals...)
	}
	return v, true
}

// Min returns the smallest ID.
func (m *omap[V]) Min() (ID, bool) {
	c := m.firstChunk()
	if c == nil {
		return ID{}, false
	}
	return c.ids[0], true
}

// Max returns the largest ID.
func (m *omap[V]) Max() (ID, bool) {
	_, c, ok := m.idx.Max()
	if !ok {
		return ID{}, false
	}
	return c.ids[len(c.ids)-1], true
}

// Ascend calls fn for every entry with an ID >= from, in ID order, until
// fn returns false. fn must not change the map (collect, then change).
func (m *omap[V]) Ascend(from ID, fn func(ID, V) bool) {
	k := from.Key()
	it := m.idx.Seek(radix.LE, k[:])
	if !it.Next() {
		it.Seek(radix.First, nil)
		if !it.Next() {
			return
		}
	}
	c := it.Value()
	i, _ := c.search(from)
	for {
		for ; i < len(c.ids); i++ {
			if !fn(c.ids[i], c.vals[i]) {
				return
			}
		}
		if !it.Next() {
			return
		}
		c, i = it.Value(), 0
	}
}

// freeze returns a view of the map that later writes cannot change, for
// snapshots: a copy of the index sharing every chunk. The live map moves
// to a new epoch, so its next write to a shared chunk copies it first.
// The view must only be read.
func (m *omap[V]) freeze() omap[V] {
	f := omap[V]{n: m.n, epoch: frozenEpoch}
	for k, c := range m.idx.All() {
		f.idx.Insert(k, c)
	}
	m.epoch++
	return f
}

// clone returns a deep copy (for COPY).
func (m *omap[V]) clone() omap[V] {
	c := omap[V]{n: m.n}
	for k, ch := range m.idx.All() {
		c.idx.Insert(k, &chunk[V]{lo: ch.lo, ids: slices.Clone(ch.ids), vals: slices.Clone(ch.vals)})
	}
	return c
}

// bytes estimates the memory the map holds (MEMORY USAGE, maxmemory)
// from its counts alone, without a walk: the server counts it after every
// write. The chunks' spare room is not counted.
func (m *omap[V]) bytes(valSize int) int64 {
	const perChunk = 80 + 48 // chunk header and its index slot
	return int64(m.idx.Len())*perChunk + int64(m.n)*int64(KeyLen+valSize)
}

// check verifies the map's structure: keys below their chunk's IDs and
// above the previous chunk's, sorted non-empty chunks, the count right.
func (m *omap[V]) check() error {
	n := 0
	var prev ID
	first := true
	for k, c := range m.idx.All() {
		lo := IDFromKey(k)
		if lo != c.lo || len(c.ids) == 0 || len(c.ids) != len(c.vals) || len(c.ids) > chunkMax {
			return errorf("pel chunk %s: key %s, %d ids, %d values", lo, c.lo, len(c.ids), len(c.vals))
		}
		if c.ids[0].Less(lo) || (!first && lo.Compare(prev) <= 0) {
			return errorf("pel chunk %s out of order (first %s, previous %s)", lo, c.ids[0], prev)
		}
		for i := 1; i < len(c.ids); i++ {
			if c.ids[i].Compare(c.ids[i-1]) <= 0 {
				return errorf("pel chunk %s not sorted at %d", lo, i)
			}
		}
		prev, first = c.ids[len(c.ids)-1], false
		n += len(c.ids)
	}
	if n != m.n {
		return errorf("pel holds %d entries, counts %d", n, m.n)
	}
	return nil
}
