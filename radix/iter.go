package radix

// SeekOp selects where Seek positions an iterator. The operators follow
// Redis's rax iterator: "^", "$", ">=", ">", "<=", "<".
type SeekOp uint8

// The seek operators.
const (
	First SeekOp = iota // the smallest key ("^"); the seek key is ignored
	Last                // the largest key ("$"); the seek key is ignored
	GE                  // the smallest key >= the seek key (">=")
	GT                  // the smallest key > the seek key (">")
	LE                  // the largest key <= the seek key ("<=")
	LT                  // the largest key < the seek key ("<")
)

var opNames = [...]string{First: "^", Last: "$", GE: ">=", GT: ">", LE: "<=", LT: "<"}

// String returns the Redis spelling of the operator, such as ">=".
func (op SeekOp) String() string {
	if int(op) < len(opNames) {
		return opNames[op]
	}
	return "SeekOp(?)"
}

type iterState uint8

const (
	stDone    iterState = iota // exhausted, or never found anything
	stPending                  // positioned by a seek, not yet reported
	stValid                    // positioned on the key last reported
)

// frame is one node on the iterator's path from the root.
type frame[V any] struct {
	n   node[V]
	pos int32 // child position taken, -1 for the node's own value
	kl  int32 // key length after the node's prefix, before the edge byte
}

// Iterator walks a Tree in key order, in either direction, from the point
// chosen by Seek.
//
// The first call to Next or Prev after a seek reports the key the seek
// found, whichever the direction: Seek(GE, k) followed by Prev reports the
// smallest key >= k and then keys < k in descending order, just as Next
// would report the same first key and then keys > k. Every later call moves
// one key up (Next) or down (Prev) from the key last reported, so the two
// can be mixed freely. When a seek finds no key, or a move runs off either
// end, the call returns false and the iterator is exhausted: all further
// calls to Next and Prev return false until it is seeked again.
//
// Modifying the tree while iterating is allowed and well defined, at the
// price of a fresh descent: an iterator notices that a key was inserted or
// deleted since it last moved and finds its place again by key. Next then
// reports the smallest key greater than the one last reported, in the tree
// as it is now, and Prev the largest smaller one; a pending seek result is
// recomputed from the seek operator and key. Replacing the value of an
// existing key (Insert of a present key, SetValue) is not a structural change
// and costs nothing.
//
// An Iterator holds buffers that point into itself: use it through the
// pointer Seek returns and do not copy it.
type Iterator[V any] struct {
	t     *Tree[V]
	gen   uint64 // t.gen when the stack was built
	state iterState
	op    SeekOp
	stack []frame[V]
	key   []byte
	val   V
	skey  []byte // copy of the seek key, or of key while re-seeking

	stackBuf [8]frame[V]
	keyBuf   [24]byte
	skeyBuf  [24]byte
}

// Seek returns an iterator positioned according to op and key; see
// Iterator for how Next and Prev proceed from there. The key is copied.
// Seek panics if op is not one of the defined operators.
func (t *Tree[V]) Seek(op SeekOp, key []byte) *Iterator[V] {
	it := &Iterator[V]{t: t}
	it.Seek(op, key)
	return it
}

// Seek repositions the iterator on the same tree, reusing its buffers.
// The next Next or Prev reports the key found.
func (it *Iterator[V]) Seek(op SeekOp, key []byte) {
	if op > LT {
		panic("radix: invalid SeekOp")
	}
	if it.stack == nil {
		it.stack, it.key, it.skey = it.stackBuf[:0], it.keyBuf[:0], it.skeyBuf[:0]
	}
	it.op = op
	it.skey = append(it.skey[:0], key...)
	it.seek(op, it.skey)
}

// Key returns the key the iterator is positioned on, or nil when it is not
// positioned. The slice is reused by the next move; copy it to keep it.
func (it *Iterator[V]) Key() []byte {
	if it.state != stValid {
		return nil
	}
	return it.key[:len(it.key):len(it.key)]
}

// Value returns the value stored under Key at the time the iterator moved
// there, or the zero value when it is not positioned.
func (it *Iterator[V]) Value() V {
	if it.state != stValid {
		var zero V
		return zero
	}
	return it.val
}

// SetValue replaces the value stored under Key in the tree. It costs O(1)
// when the tree has not changed shape since the iterator moved, and is
// Insert(Key(), v) otherwise. It panics if the iterator is not positioned.
func (it *Iterator[V]) SetValue(v V) {
	if it.state != stValid {
		panic("radix: SetValue on an iterator that is not positioned")
	}
	it.val = v
	if it.gen != it.t.gen {
		it.t.Insert(it.key, v)
		return
	}
	f := &it.stack[len(it.stack)-1]
	if f.pos < 0 {
		f.n.base().val = v
	} else {
		*f.n.valAt(int(f.pos)) = v
	}
}

// Next moves to the next key in ascending order and reports whether there
// is one. After a seek, the first call reports the key the seek found.
func (it *Iterator[V]) Next() bool {
	switch {
	case it.state == stDone:
		return false
	case it.gen != it.t.gen:
		return it.refresh(GT)
	case it.state == stPending:
		it.report()
		return true
	}
	return it.forward()
}

// Prev moves to the next key in descending order and reports whether there
// is one. After a seek, the first call reports the key the seek found.
func (it *Iterator[V]) Prev() bool {
	switch {
	case it.state == stDone:
		return false
	case it.gen != it.t.gen:
		return it.refresh(LT)
	case it.state == stPending:
		it.report()
		return true
	}
	return it.backward()
}

// refresh rebuilds the path after the tree changed shape: a pending seek is
// redone, otherwise the iterator moves by op from the key last reported.
func (it *Iterator[V]) refresh(op SeekOp) bool {
	if it.state == stValid {
		it.op = op
		it.skey = append(it.skey[:0], it.key...)
	}
	if it.seek(it.op, it.skey) {
		it.state = stValid
		return true
	}
	return false
}

// seek builds the path to the key chosen by op and key (which must not
// alias it.key) and leaves the iterator pending on it, or exhausted.
func (it *Iterator[V]) seek(op SeekOp, key []byte) bool {
	it.stack, it.key = it.stack[:0], it.key[:0]
	it.state = stPending
	if it.t == nil || it.t.root == nil {
		it.state = stDone
		return false
	}
	it.gen = it.t.gen
	root := it.t.root
	switch op {
	case First:
		it.descendMin(root)
		return true
	case Last:
		it.descendMax(root)
		return true
	case GE, GT:
		return it.seekUp(root, key, op == GE)
	default:
		return it.seekDown(root, key, op == LE)
	}
}

// report turns a pending seek result into the current key, reading its
// value afresh in case it was replaced since the seek.
func (it *Iterator[V]) report() {
	it.state = stValid
	f := &it.stack[len(it.stack)-1]
	if f.pos < 0 {
		it.val = f.n.base().val
	} else {
		it.val = *f.n.valAt(int(f.pos))
	}
}

func (it *Iterator[V]) push(n node[V], pos, kl int) {
	it.stack = append(it.stack, frame[V]{n: n, pos: int32(pos), kl: int32(kl)})
}
