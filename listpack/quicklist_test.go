package listpack

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"testing"
)

// checkQuicklist verifies the quicklist's internal invariants and that its
// contents, read forwards and backwards, equal model.
func checkQuicklist(t *testing.T, q *Quicklist, model [][]byte) {
	t.Helper()
	if err := q.check(); err != nil {
		t.Fatal(err)
	}
	if q.Len() != len(model) {
		t.Fatalf("Len = %d, model has %d", q.Len(), len(model))
	}
	i := 0
	q.Iter(false, func(j int, v []byte) bool {
		if j != i || !bytes.Equal(v, model[i]) {
			t.Fatalf("forward %d (index %d): got %q want %q", i, j, short(v), short(model[i]))
		}
		i++
		return true
	})
	if i != len(model) {
		t.Fatalf("forward iteration visited %d of %d", i, len(model))
	}
	q.Iter(true, func(j int, v []byte) bool {
		i--
		if j != i || !bytes.Equal(v, model[i]) {
			t.Fatalf("backward %d (index %d): got %q want %q", i, j, short(v), short(model[i]))
		}
		return true
	})
	if i != 0 {
		t.Fatalf("backward iteration stopped at %d", i)
	}
}

// peek returns node k for reading, without unsharing the array as at
// does: checks must not change what they check.
func (d *nodeDeque) peek(k int) *qnode { return &d.buf[d.lo+k] }

// check verifies the invariants every operation must keep.
func (q *Quicklist) check() error {
	total, lpBytes := 0, 0
	for k := range q.nodes.len() {
		lpBytes += cap(q.nodes.peek(k).lp)
		nd := q.nodes.peek(k)
		var buf []byte
		lp := read(nd, &buf)
		if err := Validate(lp, true); err != nil {
			return fmt.Errorf("node %d: %w", k, err)
		}
		if nd.count == 0 || int(nd.count) != lp.Len() {
			return fmt.Errorf("node %d: count %d, listpack has %d", k, nd.count, lp.Len())
		}
		if err := q.checkCompression(k, nd); err != nil {
			return err
		}
		total += int(nd.count)
	}
	if total != q.count {
		return fmt.Errorf("nodes hold %d elements, count says %d", total, q.count)
	}
	if lpBytes != q.nodes.lpBytes {
		return fmt.Errorf("nodes take %d bytes, %d counted", lpBytes, q.nodes.lpBytes)
	}
	if q.nodes.len() < 2 && q.spare != nil {
		return fmt.Errorf("spare kept by a list of %d nodes", q.nodes.len())
	}
	for i, nd := range q.nodes.buf {
		if (i < q.nodes.lo || i >= q.nodes.hi) && nd.lp != nil {
			return fmt.Errorf("free slot %d still references a listpack", i)
		}
	}
	return nil
}

// checkCompression verifies the depth rule for node k: raw within the
// depth of either end, and beyond it compressed unless compressing does
// not pay.
func (q *Quicklist) checkCompression(k int, nd *qnode) error {
	if !q.inner(k) {
		if nd.compressed() {
			return fmt.Errorf("node %d of %d is compressed within depth %d", k, q.nodes.len(), q.depth)
		}
		return nil
	}
	if nd.compressed() {
		return nil
	}
	trial := *q // compress a copy of the node in a copy of the list
	copyNode := qnode{lp: slices.Clone(nd.lp), count: nd.count}
	trial.spare = nil
	trial.compress(&copyNode)
	if copyNode.compressed() {
		return fmt.Errorf("node %d of %d (%d bytes) is raw beyond depth %d, yet compresses to %d", k, q.nodes.len(), len(nd.lp), q.depth, len(copyNode.lp))
	}
	return nil
}

// checkLargeAlone verifies that every value too large to share a node has
// a node to itself (only meaningful while the fill has not changed).
func checkLargeAlone(t *testing.T, q *Quicklist) {
	t.Helper()
	for k := range q.nodes.len() {
		nd := q.nodes.peek(k)
		var buf []byte
		lp := read(nd, &buf)
		for off := lp.First(); off >= 0; off = lp.Next(off) {
			if v := lp.Get(off, nil); q.isLarge(len(v)) && nd.count != 1 {
				t.Fatalf("node %d holds a large value of %d bytes among %d", k, len(v), nd.count)
			}
		}
	}
}

func short(v []byte) []byte {
	if len(v) > 20 {
		return append(v[:20:20], fmt.Sprintf("...(%d)", len(v))...)
	}
	return v
}

// genValue draws a value for the model tests: many small repeated strings
// and integers (so LREM finds matches), non-canonical numbers, medium
// strings, and now and then one too large to share a node.
func genValue(r *rand.Rand, q *Quicklist) []byte {
	switch r.Intn(12) {
	case 0:
		return []byte(strconv.Itoa(r.Intn(300) - 150))
	case 1:
		return []byte(strconv.FormatInt(r.Int63()-r.Int63(), 10))
	case 2:
		return []byte([]string{"010", "+5", "-0", "00", "5 ", "-"}[r.Intn(6)])
	case 3:
		return bytes.Repeat([]byte{byte('a' + r.Intn(3))}, 64+r.Intn(300))
	case 4:
		if r.Intn(4) == 0 {
			return bytes.Repeat([]byte{'L'}, q.byteLimit()+1+r.Intn(100))
		}
		return bytes.Repeat([]byte{'m'}, r.Intn(q.byteLimit()/3))
	case 5:
		return []byte(strconv.Itoa(r.Intn(5)))
	}
	return []byte("v" + strconv.Itoa(r.Intn(20)))
}

// modelList is the reference implementation: a plain slice.
type modelList [][]byte

func (m modelList) norm(i int) (int, bool) {
	if i < 0 {
		i += len(m)
	}
	return i, i >= 0 && i < len(m)
}

// lrange computes LRANGE start stop on the model.
func (m modelList) lrange(start, stop int) [][]byte {
	n := len(m)
	if start < 0 {
		start = max(start+n, 0)
	}
	if stop < 0 {
		stop += n
	}
	stop = min(stop, n-1)
	if start > stop {
		return nil
	}
	return m[start : stop+1]
}

// lrem applies LREM count v to the model.
func (m modelList) lrem(v []byte, count int) (modelList, int) {
	limit := count
	if limit < 0 {
		limit = -limit
	}
	if limit == 0 {
		limit = len(m)
	}
	removed := 0
	if count >= 0 {
		out := m[:0:0]
		for _, e := range m {
			if removed < limit && bytes.Equal(e, v) {
				removed++
				continue
			}
			out = append(out, e)
		}
		return out, removed
	}
	out := slices.Clone(m)
	for i := len(out) - 1; i >= 0 && removed < limit; i-- {
		if bytes.Equal(out[i], v) {
			out = slices.Delete(out, i, i+1)
			removed++
		}
	}
	return out, removed
}

// Phases of a model run: the operation mix drifts between growing and
// shrinking the list, so runs cover both long lists with many nodes and
// lists emptied down to nothing.
const (
	balanced = iota
	growing
	shrinking
)

// step applies one random operation to both q and the model.
func step(t *testing.T, r *rand.Rand, q *Quicklist, m modelList, maxLen, phase int) modelList {
	n := len(m)
	op := r.Intn(100)
	switch {
	case (n > maxLen || phase == shrinking) && op < 45 && r.Intn(3) != 0:
		op += 45 // removals instead of additions
	case phase == growing && op >= 45 && op < 84 && r.Intn(8) != 0:
		op = r.Intn(45) // additions instead of removals
	}
	switch {
	case op < 20:
		v := genValue(r, q)
		q.PushTail(v)
		m = append(m, v)
	case op < 35:
		v := genValue(r, q)
		q.PushHead(v)
		m = slices.Insert(m, 0, v)
	case op < 41:
		i := r.Intn(n+3) - 1
		if r.Intn(3) == 0 {
			i = -r.Intn(n + 2)
		}
		v := genValue(r, q)
		ok := q.Insert(i, v)
		j, inRange := m.norm(i)
		if i == n {
			j, inRange = n, true
		}
		if ok != inRange {
			t.Fatalf("Insert(%d) on %d elements = %v", i, n, ok)
		}
		if ok {
			m = slices.Insert(m, j, v)
		}
	case op < 45:
		i := r.Intn(n+2) - 1
		v := genValue(r, q)
		ok := q.InsertAfter(i, v)
		j, inRange := m.norm(i)
		if ok != inRange {
			t.Fatalf("InsertAfter(%d) on %d elements = %v", i, n, ok)
		}
		if ok {
			m = slices.Insert(m, j+1, v)
		}
	case op < 55:
		v, ok := q.PopHead()
		if ok != (n > 0) || (ok && !bytes.Equal(v, m[0])) {
			t.Fatalf("PopHead = %q, %v; model %d elements", short(v), ok, n)
		}
		if ok {
			m = m[1:]
		}
	case op < 65:
		v, ok := q.PopTail()
		if ok != (n > 0) || (ok && !bytes.Equal(v, m[n-1])) {
			t.Fatalf("PopTail = %q, %v; model %d elements", short(v), ok, n)
		}
		if ok {
			m = m[:n-1]
		}
	case op < 72:
		i := r.Intn(2*n+5) - n - 2
		v := genValue(r, q)
		ok := q.Set(i, v)
		j, inRange := m.norm(i)
		if ok != inRange {
			t.Fatalf("Set(%d) on %d elements = %v", i, n, ok)
		}
		if ok {
			m[j] = v
		}
	case op < 78:
		var v []byte
		if n > 0 && r.Intn(4) != 0 {
			v = slices.Clone(m[r.Intn(n)])
		} else {
			v = genValue(r, q)
		}
		count := r.Intn(7) - 3
		got := q.RemoveValue(v, count)
		var want int
		m, want = m.lrem(v, count)
		if got != want {
			t.Fatalf("RemoveValue(%q, %d) = %d, want %d", short(v), count, got, want)
		}
	case op < 84:
		start := r.Intn(2*n+5) - n - 2
		cnt := r.Intn(10)
		if r.Intn(5) == 0 {
			cnt = r.Intn(n/3 + 3)
		}
		got := q.DeleteRange(start, cnt)
		j, inRange := m.norm(start)
		want := 0
		if inRange {
			want = min(cnt, n-j)
			m = slices.Delete(m, j, j+want)
		}
		if got != want {
			t.Fatalf("DeleteRange(%d, %d) = %d, want %d", start, cnt, got, want)
		}
	case op < 92:
		i := r.Intn(2*n+5) - n - 2
		v, ok := q.Index(i)
		j, inRange := m.norm(i)
		if ok != inRange || (ok && !bytes.Equal(v, m[j])) {
			t.Fatalf("Index(%d) = %q, %v", i, short(v), ok)
		}
	default:
		start, stop := r.Intn(2*n+5)-n-2, r.Intn(2*n+5)-n-2
		want := m.lrange(start, stop)
		var got [][]byte
		limit := len(want)
		if limit > 0 && r.Intn(4) == 0 {
			limit = r.Intn(limit) + 1 // stop early
		}
		q.Range(start, stop, func(v []byte) bool {
			got = append(got, slices.Clone(v))
			return len(got) < limit
		})
		if len(got) != limit || (limit > 0 && !slices.EqualFunc(got, want[:limit], bytes.Equal)) {
			t.Fatalf("Range(%d, %d) got %d elements, want %d", start, stop, len(got), limit)
		}
	}
	return m
}

func TestQuicklistModel(t *testing.T) {
	for _, fill := range []int{1, 2, 3, 5, -1, DefaultFill, 128, -5} {
		t.Run(fmt.Sprintf("fill=%d", fill), func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(fill) + 100))
			q := NewQuicklist(fill)
			var m modelList
			steps, maxLen := 5000, 600
			if testing.Short() {
				steps = 800
			}
			for s := range steps {
				m = step(t, r, q, m, maxLen, s/400%3)
				checkQuicklist(t, q, m)
				checkLargeAlone(t, q)
				if t.Failed() {
					t.Fatalf("failed at step %d", s)
				}
			}
		})
	}
}

// TestQuicklistModelCompressed runs the model test with node compression
// at depths 1 to 3 (check verifies the depth rule after every step), and
// now and then re-applies a depth to the whole list, as a load does.
func TestQuicklistModelCompressed(t *testing.T) {
	for _, fill := range []int{1, 3, -1, DefaultFill} {
		for depth := 1; depth <= 3; depth++ {
			t.Run(fmt.Sprintf("fill=%d/depth=%d", fill, depth), func(t *testing.T) {
				r := rand.New(rand.NewSource(int64(fill*10 + depth)))
				q := NewQuicklist(fill)
				q.SetCompressDepth(depth)
				var m modelList
				steps := 3000
				if testing.Short() || raceEnabled {
					steps = 800
				}
				compressed := 0
				for s := range steps {
					if s%700 == 699 {
						q.SetCompressDepth(r.Intn(4))
					}
					m = step(t, r, q, m, 600, s/400%3)
					checkQuicklist(t, q, m)
					checkLargeAlone(t, q)
					compressed = max(compressed, q.CompressedNodes())
					if t.Failed() {
						t.Fatalf("failed at step %d", s)
					}
				}
				if compressed == 0 {
					t.Fatal("no node was ever compressed: the test tests nothing")
				}
			})
		}
	}
}

// TestQuicklistModelSetFill changes the fill in the middle of a random
// run, as CONFIG SET does, and checks the contents stay right.
func TestQuicklistModelSetFill(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	q := NewQuicklist(DefaultFill)
	var m modelList
	fills := []int{-1, 1, 4, -2, 2, -3, 0, 10}
	for s := range 2500 {
		if s%300 == 299 {
			q.SetFill(fills[r.Intn(len(fills))])
		}
		m = step(t, r, q, m, 400, s/150%3)
		checkQuicklist(t, q, m)
	}
}

func TestNodeBoundaries(t *testing.T) {
	// 16-byte strings take 18 bytes each. A node of n of them is 7+18n
	// bytes and accepts one more while 7+18n+16+8 <= 8192, so it stops at
	// 454 entries (8179 bytes).
	q := NewQuicklist(DefaultFill)
	v := []byte("0123456789abcdef")
	for range 1000 {
		q.PushTail(v)
	}
	var sizes, counts []int
	q.Nodes(func(lp Listpack) bool {
		sizes, counts = append(sizes, len(lp)), append(counts, lp.Len())
		return true
	})
	if !slices.Equal(counts, []int{454, 454, 92}) || sizes[0] != 8179 {
		t.Fatalf("counts %v sizes %v", counts, sizes)
	}
	// 2-byte strings at fill -1 (4 KiB): the first node, filled as a bare
	// listpack, takes values while bytes+2 <= 4096 (1022 of them); later
	// nodes while bytes+2+8 <= 4096 (1020), ending one byte short of room
	// for another. (Checked against Redis by TestAgainstRedis.)
	q = NewQuicklist(-1)
	for range 2500 {
		q.PushTail([]byte("ab"))
	}
	counts = counts[:0]
	q.Nodes(func(lp Listpack) bool { counts = append(counts, lp.Len()); return true })
	if !slices.Equal(counts, []int{1022, 1020, 458}) {
		t.Fatalf("fill -1 counts %v", counts)
	}
	// Count fills: fill 3 gives nodes of three.
	q = NewQuicklist(3)
	for i := range 10 {
		q.PushHead([]byte(strconv.Itoa(i)))
	}
	counts = counts[:0]
	q.Nodes(func(lp Listpack) bool { counts = append(counts, lp.Len()); return true })
	if !slices.Equal(counts, []int{1, 3, 3, 3}) {
		t.Fatalf("fill 3 counts %v", counts)
	}
	// fill 0 behaves as 1.
	q = NewQuicklist(0)
	q.PushTail(v)
	q.PushTail(v)
	if q.NodeCount() != 2 {
		t.Fatalf("fill 0: %d nodes", q.NodeCount())
	}
}

func TestLargeElementsLiveAlone(t *testing.T) {
	q := NewQuicklist(-1) // 4 KiB nodes
	small, big := []byte("s"), bytes.Repeat([]byte("B"), 5000)
	q.PushTail(small)
	q.PushTail(big)
	q.PushTail(small)
	q.PushHead(big)
	if q.NodeCount() != 4 {
		t.Fatalf("%d nodes, want 4", q.NodeCount())
	}
	// Insert a large value in the middle of a node: it splits.
	q2 := NewQuicklist(-1)
	for i := range 10 {
		q2.PushTail([]byte(strconv.Itoa(i)))
	}
	q2.Insert(5, big)
	q2.Set(2, big)
	checkLargeAlone(t, q2)
	model := modelList{}
	for i := range 10 {
		model = append(model, []byte(strconv.Itoa(i)))
	}
	model = slices.Insert(model, 5, big)
	model[2] = big
	checkQuicklist(t, q2, model)
	// Replacing the large value with a small one dissolves its node.
	q2.Set(2, []byte("2"))
	q2.Set(5, []byte("x"))
	model[2], model[5] = []byte("2"), []byte("x")
	checkQuicklist(t, q2, model)
	if q2.NodeCount() != 3 {
		t.Fatalf("%d nodes after replacing large values", q2.NodeCount())
	}
	for _, tc := range []struct{ fill, size int }{{-1, 4097}, {-1, 4096}, {5, 8193}, {5, 8192}, {-2, 8193}, {-2, 8192}} {
		q := NewQuicklist(tc.fill)
		q.PushTail(bytes.Repeat([]byte{'p'}, tc.size))
		var plain bool
		q.Nodes(func(lp Listpack) bool { _, plain = q.PlainValue(lp); return true })
		if want := tc.size > 4096 && tc.fill == -1 || tc.size > 8192; plain != want {
			t.Errorf("fill %d, %d bytes: plain %v", tc.fill, tc.size, plain)
		}
	}
}

func TestRemoveValueComparesAsStrings(t *testing.T) {
	q := NewQuicklist(2)
	for _, v := range []string{"10", "010", "10", "ten", "10", "+10"} {
		q.PushTail([]byte(v))
	}
	if got := q.RemoveValue([]byte("010"), 0); got != 1 {
		t.Fatalf("removed %d of \"010\"", got)
	}
	if got := q.RemoveValue([]byte("10"), -2); got != 2 {
		t.Fatalf("removed %d of \"10\"", got)
	}
	checkQuicklist(t, q, modelList{[]byte("10"), []byte("ten"), []byte("+10")})
}

func TestQuicklistFromNodes(t *testing.T) {
	src := NewQuicklist(3)
	var model modelList
	for i := range 20 {
		v := []byte("e" + strconv.Itoa(i))
		src.PushTail(v)
		model = append(model, v)
	}
	// Put all nodes back to back in one buffer, as an RDB reader might,
	// plus an empty listpack that must be skipped.
	var buf []byte
	var spans [][2]int
	src.Nodes(func(lp Listpack) bool {
		spans = append(spans, [2]int{len(buf), len(buf) + len(lp)})
		buf = append(buf, lp...)
		return true
	})
	nodes := []Listpack{New()}
	for _, s := range spans {
		nodes = append(nodes, Listpack(buf[s[0]:s[1]]))
	}
	q := QuicklistFromNodes(3, nodes)
	if q.NodeCount() != src.NodeCount() {
		t.Fatalf("%d nodes, want %d", q.NodeCount(), src.NodeCount())
	}
	checkQuicklist(t, q, model)
	// The list owns node 0's bytes now, but must not write past them into
	// the next node's.
	rest := slices.Clone(buf[spans[1][0]:])
	q.Insert(1, []byte("new"))
	q.PushHead([]byte("head"))
	if !bytes.Equal(buf[spans[1][0]:], rest) {
		t.Fatal("a change to node 0 wrote into node 1's bytes")
	}
	model = slices.Insert(model, 1, []byte("new"))
	checkQuicklist(t, q, slices.Insert(model, 0, []byte("head")))
}

func TestSetFillClamps(t *testing.T) {
	q := NewQuicklist(-100)
	if q.Fill() != -5 {
		t.Fatalf("fill %d", q.Fill())
	}
	q.SetFill(1 << 20)
	if q.Fill() != 1<<15-1 {
		t.Fatalf("fill %d", q.Fill())
	}
}

func TestQueueRecyclesNodes(t *testing.T) {
	q := NewQuicklist(DefaultFill)
	v := []byte("0123456789abcdef")
	for range 5000 {
		q.PushTail(v)
	}
	// Steady state: push one, pop one. After warming up, whole node
	// buffers are recycled and the popped copy reuses its buffer.
	allocs := queueAllocsPerOp(q, v)
	t.Logf("%.4f allocations per push and pop", allocs)
	if !raceEnabled && allocs > 0.001 {
		t.Fatalf("queue steady state allocates %v per op", allocs)
	}
}

func TestBytesAccounting(t *testing.T) {
	q := NewQuicklist(DefaultFill)
	if b := q.Bytes(); b <= 0 || b > 200 {
		t.Fatalf("empty list: %d bytes", b)
	}
	for range 10000 {
		q.PushTail([]byte("0123456789abcdef"))
	}
	// About 18 bytes an element plus node overhead.
	if b := q.Bytes(); b < 180000 || b > 200000 {
		t.Fatalf("10000 elements: %d bytes", b)
	}
}

func TestEncodingTransitions(t *testing.T) {
	q := NewQuicklist(3)
	enc := func(want string, nodes int) {
		t.Helper()
		if q.Encoding() != want || q.NodeCount() != nodes {
			t.Fatalf("encoding %s with %d nodes, want %s with %d", q.Encoding(), q.NodeCount(), want, nodes)
		}
	}
	enc("listpack", 0)
	q.PushTail([]byte("a"), []byte("b"), []byte("c"))
	enc("listpack", 1)
	q.PushTail([]byte("d")) // a fourth value passes fill 3
	enc("quicklist", 2)
	q.PopHead()
	q.PopHead()
	enc("quicklist", 2) // two nodes: stays a quicklist
	q.PopHead()
	enc("listpack", 1) // one node, 1 <= 3/2 values
	// A multi-value push is checked once, with all its values: four
	// values at once convert before any is added, so the quicklist rules
	// split them 3 + 2 instead of letting the listpack take them all.
	q = NewQuicklist(3)
	q.PushTail([]byte("x"))
	q.PushTail([]byte("1"), []byte("2"), []byte("3"), []byte("4"))
	enc("quicklist", 2)
	// Byte fills: a listpack grows past the per-node estimate.
	q = NewQuicklist(-1)
	v := []byte("zzzzz") // 7-byte entries
	for q.Encoding() == "listpack" {
		q.PushTail(v)
	}
	// The listpack takes values while bytes+5 <= 4096, so at 583 values
	// (4088 bytes) it takes a 584th, where a quicklist node, which wants
	// bytes+5+8 <= 4096, would not.
	var counts []int
	q.Nodes(func(lp Listpack) bool { counts = append(counts, lp.Len()); return true })
	if !slices.Equal(counts, []int{584, 1}) {
		t.Fatalf("node counts %v", counts)
	}
	// Loading: a single small node is a listpack, two nodes a quicklist.
	if QuicklistFromNodes(-2, []Listpack{New().Append(v)}).Encoding() != "listpack" ||
		QuicklistFromNodes(-2, []Listpack{New().Append(v), New().Append(v)}).Encoding() != "quicklist" ||
		QuicklistFromNodes(-2, nil).Encoding() != "listpack" {
		t.Fatal("encoding after load")
	}
}

// TestNodeDequeShare: once a view shares the node array, no change of the
// live deque — insert or remove at either end or in the middle, or a
// write through at — may show through the view.
func TestNodeDequeShare(t *testing.T) {
	ops := map[string]func(d *nodeDeque){
		"remove head":   func(d *nodeDeque) { d.remove(0) },
		"remove tail":   func(d *nodeDeque) { d.remove(d.len() - 1) },
		"remove middle": func(d *nodeDeque) { d.remove(d.len() / 2) },
		"insert middle": func(d *nodeDeque) { d.insert(d.len()/2, qnode{lp: Listpack("new"), count: 1}) },
		"write at":      func(d *nodeDeque) { d.at(3).count = 99 },
	}
	for name, op := range ops {
		var d nodeDeque
		for i := range 8 {
			d.insert(d.len(), qnode{lp: Listpack(fmt.Sprint(i)), count: uint32(i + 1)})
		}
		v := d.share()
		op(&d)
		if d.shared {
			t.Errorf("%s: the live deque still shares its array", name)
		}
		for k := range v.len() {
			if nd := v.peek(k); string(nd.lp) != fmt.Sprint(k) || nd.count != uint32(k+1) {
				t.Errorf("%s: the view's node %d became %q/%d", name, k, nd.lp, nd.count)
			}
		}
	}
}
