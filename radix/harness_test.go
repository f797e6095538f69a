package radix

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
)

// model is the reference the tree is compared with: a map for lookups plus
// a sorted slice for order.
type model struct {
	m    map[string]int
	keys []string
}

func newModel() *model { return &model{m: map[string]int{}} }

func (m *model) insert(k string, v int) (int, bool) {
	old, ok := m.m[k]
	m.m[k] = v
	if !ok {
		i := sort.SearchStrings(m.keys, k)
		m.keys = slices.Insert(m.keys, i, k)
	}
	return old, ok
}

func (m *model) delete(k string) (int, bool) {
	old, ok := m.m[k]
	if ok {
		delete(m.m, k)
		i := sort.SearchStrings(m.keys, k)
		m.keys = slices.Delete(m.keys, i, i+1)
	}
	return old, ok
}

// seek returns the index of the key op selects, or -1.
func (m *model) seek(op SeekOp, k string) int {
	n := len(m.keys)
	i := -1
	switch op {
	case First:
		i = 0
	case Last:
		i = n - 1
	case GE:
		i = sort.SearchStrings(m.keys, k)
	case GT:
		i = sort.Search(n, func(j int) bool { return m.keys[j] > k })
	case LE:
		i = sort.Search(n, func(j int) bool { return m.keys[j] > k }) - 1
	case LT:
		i = sort.SearchStrings(m.keys, k) - 1
	}
	if i < 0 || i >= n {
		return -1
	}
	return i
}

// modelIter mirrors Iterator by key: a pending seek is resolved when first
// reported, and each move looks up the neighbour of the key last reported,
// which is exactly what Iterator promises even across modifications.
type modelIter struct {
	m     *model
	state iterState
	op    SeekOp
	skey  string
	key   string
	val   int
}

func (mi *modelIter) seekTo(op SeekOp, k string) {
	mi.op, mi.skey = op, k
	mi.state = stPending
	if mi.m.seek(op, k) < 0 {
		mi.state = stDone
	}
}

func (mi *modelIter) move(op SeekOp) bool {
	var i int
	switch mi.state {
	case stDone:
		return false
	case stPending:
		i = mi.m.seek(mi.op, mi.skey)
	default:
		i = mi.m.seek(op, mi.key)
	}
	if i < 0 {
		mi.state = stDone
		return false
	}
	mi.state = stValid
	mi.key = mi.m.keys[i]
	mi.val = mi.m.m[mi.key]
	return true
}

// source supplies the randomness that drives a harness: math/rand in the
// model test, the fuzzer's bytes in FuzzTree.
type source interface {
	IntN(n int) int
}

const debugRuns = false

// harness applies random operations to a Tree and a model in step and
// fails on the first difference.
type harness struct {
	src   source
	tree  *Tree[int]
	model *model
	its   [3]*Iterator[int]
	mits  [3]*modelIter
	seq   int
	ops   int
	log   []logEntry // recent operations, formatted only on failure
}

func newHarness(src source) *harness {
	h := &harness{src: src, tree: &Tree[int]{}, model: newModel()}
	for i := range h.its {
		h.its[i] = h.tree.Seek(First, nil)
		h.mits[i] = &modelIter{m: h.model}
		h.mits[i].seekTo(First, "")
	}
	return h
}

// key draws a key. The shapes stress different parts of the tree: short
// keys over a tiny alphabet (prefixes of each other, splits, merges), keys
// with many distinct bytes at one position (node48/node256), 16-byte stream
// IDs, and random bytes.
func (h *harness) key() []byte {
	switch h.src.IntN(6) {
	case 0, 1:
		const alpha = "ab\x00\xff"
		k := make([]byte, h.src.IntN(5))
		for i := range k {
			k[i] = alpha[h.src.IntN(len(alpha))]
		}
		return k
	case 2:
		return []byte{'w', byte(h.src.IntN(256))}
	case 3:
		return []byte{'w', byte(h.src.IntN(4)), byte(h.src.IntN(256)), 'z'}
	case 4:
		var k [16]byte
		binary.BigEndian.PutUint64(k[:], uint64(h.src.IntN(600)))
		binary.BigEndian.PutUint64(k[8:], uint64(h.src.IntN(20)))
		return k[:]
	default:
		k := make([]byte, h.src.IntN(12))
		for i := range k {
			k[i] = byte(h.src.IntN(256))
		}
		return k
	}
}

func (h *harness) fail(format string, args ...any) error {
	return fmt.Errorf("op %d: %s\nrecent ops:\n%s", h.ops, fmt.Sprintf(format, args...), h.recent())
}

type logEntry struct {
	format string
	args   []any
}

func (h *harness) recent() string {
	var b bytes.Buffer
	for _, l := range h.log {
		b.WriteString("  " + fmt.Sprintf(l.format, l.args...) + "\n")
	}
	return b.String()
}

// note records an operation; []byte arguments are copied since iterator
// keys are reused.
func (h *harness) note(format string, args ...any) {
	for i, a := range args {
		if b, ok := a.([]byte); ok {
			args[i] = string(b)
		}
	}
	if len(h.log) == 20 {
		h.log = slices.Delete(h.log, 0, 1)
	}
	h.log = append(h.log, logEntry{format, args})
}

// step performs one random operation and compares the outcome.
func (h *harness) step() error {
	h.ops++
	switch op := h.src.IntN(16); op {
	case 0, 1, 2:
		k := h.key()
		h.seq++
		h.note("Insert(%q, %d)", k, h.seq)
		o1, r1 := h.tree.Insert(k, h.seq)
		o2, r2 := h.model.insert(string(k), h.seq)
		if o1 != o2 || r1 != r2 {
			return h.fail("Insert(%q) = %d,%v; model %d,%v", k, o1, r1, o2, r2)
		}
	case 3, 4:
		k := h.key()
		if len(h.model.keys) > 0 && h.src.IntN(2) == 0 {
			k = []byte(h.model.keys[h.src.IntN(len(h.model.keys))])
		}
		h.note("Delete(%q)", k)
		o1, d1 := h.tree.Delete(k)
		o2, d2 := h.model.delete(string(k))
		if o1 != o2 || d1 != d2 {
			return h.fail("Delete(%q) = %d,%v; model %d,%v", k, o1, d1, o2, d2)
		}
	case 5:
		k := h.key()
		v1, ok1 := h.tree.Get(k)
		v2, ok2 := h.model.m[string(k)]
		if v1 != v2 || ok1 != ok2 {
			return h.fail("Get(%q) = %d,%v; model %d,%v", k, v1, ok1, v2, ok2)
		}
		return nil
	case 6, 7:
		i, sop, k := h.src.IntN(len(h.its)), SeekOp(h.src.IntN(6)), h.key()
		h.note("it%d.Seek(%v, %q)", i, sop, k)
		h.its[i].Seek(sop, k)
		h.mits[i].seekTo(sop, string(k))
		return nil
	case 8, 9, 10, 11:
		i, fwd := h.src.IntN(len(h.its)), op < 10
		for n := 1 + h.src.IntN(8); n > 0; n-- {
			if err := h.move(i, fwd); err != nil {
				return err
			}
		}
		return nil
	case 12:
		i := h.src.IntN(len(h.its))
		if h.its[i].Key() == nil {
			return nil
		}
		h.seq++
		h.note("it%d.SetValue(%d) at %q", i, h.seq, h.its[i].Key())
		h.its[i].SetValue(h.seq)
		h.model.insert(h.mits[i].key, h.seq)
		h.mits[i].val = h.seq
	case 13:
		// A run of keys under one prefix, ascending: grows big kinds.
		p, n := h.key(), 1+h.src.IntN(300)
		h.note("InsertRun(%q, %d)", p, n)
		for j := 0; j < n; j++ {
			k := append(slices.Clip(p), byte(j), byte(j>>8))
			h.seq++
			h.tree.Insert(k, h.seq)
			h.model.insert(string(k), h.seq)
		}
	case 14:
		// Delete every key from a seek point on: shrinks kinds.
		k, n := h.key(), h.src.IntN(600)
		h.note("DeleteRun(%q, %d)", k, n)
		for i := h.model.seek(GE, string(k)); i >= 0 && i < len(h.model.keys) && n > 0; n-- {
			dk := h.model.keys[i]
			before := ""
			if debugRuns {
				before = h.tree.dump()
			}
			if _, ok := h.tree.Delete([]byte(dk)); !ok {
				return h.fail("DeleteRun: %q missing\n%s", dk, before)
			}
			h.model.delete(dk)
			if debugRuns {
				if err := h.tree.check(); err != nil {
					return h.fail("DeleteRun %q: %v\nbefore:\n%s\nafter:\n%s", dk, err, before, h.tree.dump())
				}
			}
		}
	default:
		if h.tree.Len() > 3000 && h.ops%16 != 0 {
			return nil
		}
		return h.verify()
	}
	// check is linear in the tree size: run it on every change while the
	// tree is small, which is where the shape rules are hardest to keep.
	if h.tree.Len() < 300 || h.ops%64 == 0 {
		if err := h.tree.check(); err != nil {
			return h.fail("check: %v", err)
		}
	}
	if h.tree.Len() != len(h.model.keys) {
		return h.fail("Len %d, model %d", h.tree.Len(), len(h.model.keys))
	}
	return nil
}

func (h *harness) move(i int, fwd bool) error {
	it, mi := h.its[i], h.mits[i]
	var ok1, ok2 bool
	if fwd {
		ok1, ok2 = it.Next(), mi.move(GT)
	} else {
		ok1, ok2 = it.Prev(), mi.move(LT)
	}
	h.note("it%d.Next=%v (fwd %v) %q", i, ok1, fwd, it.Key())
	if ok1 != ok2 {
		return h.fail("it%d move(fwd=%v) = %v, model %v (model key %q)", i, fwd, ok1, ok2, mi.key)
	}
	if !ok1 {
		if it.Key() != nil {
			return h.fail("exhausted iterator has key %q", it.Key())
		}
		return nil
	}
	if string(it.Key()) != mi.key || it.Value() != mi.val {
		return h.fail("it%d at %q=%d, model %q=%d", i, it.Key(), it.Value(), mi.key, mi.val)
	}
	return nil
}

// verify compares whole-tree views: full scans both ways, Min, Max.
func (h *harness) verify() error {
	if err := h.tree.check(); err != nil {
		return h.fail("check: %v", err)
	}
	var got []string
	for k, v := range h.tree.All() {
		if h.model.m[string(k)] != v {
			return h.fail("All: %q=%d, model %d", k, v, h.model.m[string(k)])
		}
		got = append(got, string(k))
	}
	if !slices.Equal(got, h.model.keys) {
		return h.fail("All: %q\nmodel %q", got, h.model.keys)
	}
	got = got[:0]
	for k := range h.tree.Backward() {
		got = append(got, string(k))
	}
	slices.Reverse(got)
	if !slices.Equal(got, h.model.keys) {
		return h.fail("Backward: %q\nmodel %q", got, h.model.keys)
	}
	fresh := &Tree[int]{}
	for _, k := range h.model.keys {
		fresh.Insert([]byte(k), h.model.m[k])
	}
	if !sameShape(h.tree.root, fresh.root) {
		return h.fail("shape differs from a fresh tree with the same keys:\n%s\nfresh:\n%s", h.tree.shape(), fresh.shape())
	}
	mk, mv, mok := h.tree.Min()
	xk, xv, xok := h.tree.Max()
	if n := len(h.model.keys); n == 0 {
		if mok || xok {
			return h.fail("Min/Max ok on empty tree")
		}
	} else {
		lo, hi := h.model.keys[0], h.model.keys[n-1]
		if !mok || string(mk) != lo || mv != h.model.m[lo] || !xok || string(xk) != hi || xv != h.model.m[hi] {
			return h.fail("Min %q=%d Max %q=%d; model %q %q", mk, mv, xk, xv, lo, hi)
		}
	}
	return nil
}
