package radix

import "iter"

// Tree is an ordered map from byte-string keys to values of type V, stored
// as a compressed radix tree. Keys are ordered bytewise, as bytes.Compare
// orders them; a key that is a prefix of another sorts first.
//
// The zero value is an empty tree ready to use. The read methods (Len, Get,
// Min, Max, Seek, All, Backward) may be called on a nil *Tree, which behaves
// as an empty tree.
//
// A Tree is not safe for concurrent use: calls that modify it must not run
// at the same time as any other call.
type Tree[V any] struct {
	root node[V]
	size int
	gen  uint64 // counts structural changes; iterators compare it
}

// Len returns the number of keys in the tree.
func (t *Tree[V]) Len() int {
	if t == nil {
		return 0
	}
	return t.size
}

// Get returns the value stored under key and whether the key is present.
func (t *Tree[V]) Get(key []byte) (v V, ok bool) {
	if t == nil {
		return v, false
	}
	for n := t.root; n != nil; {
		m := n.base()
		if len(key) < len(m.prefix) || string(key[:len(m.prefix)]) != m.prefix {
			return v, false
		}
		key = key[len(m.prefix):]
		if len(key) == 0 {
			return m.val, m.hasVal
		}
		pos := n.find(key[0])
		if pos < 0 {
			return v, false
		}
		_, c, vp := n.slot(pos)
		if c == nil {
			if len(key) == 1 {
				return *vp, true
			}
			return v, false
		}
		n, key = c, key[1:]
	}
	return v, false
}

// Insert stores v under key. If the key was present, its previous value is
// returned with replaced set, and the tree's shape is left untouched: this is
// the cheap way to update a value in place, and it does not disturb
// iterators. The tree keeps its own copy of the key bytes it needs.
func (t *Tree[V]) Insert(key []byte, v V) (old V, replaced bool) {
	n := t.root
	if n == nil {
		t.root, _ = newChild(key, v)
		if t.root == nil { // the empty key
			t.root = &leaf[V]{meta[V]{val: v, hasVal: true}}
		}
		t.grew()
		return old, false
	}
	var parent node[V]
	ppos := -1
	for {
		m := n.base()
		c := commonPrefix(key, m.prefix)
		if c < len(m.prefix) {
			t.split(parent, ppos, n, c, key, v)
			t.grew()
			return old, false
		}
		key = key[c:]
		if len(key) == 0 {
			if m.hasVal {
				old, m.val = m.val, v
				return old, true
			}
			m.val, m.hasVal = v, true
			t.grew()
			return old, false
		}
		pos := n.find(key[0])
		if pos < 0 {
			kid, bv := newChild(key[1:], v)
			t.replace(parent, ppos, n, n.add(key[0], kid, bv))
			t.grew()
			return old, false
		}
		kid := n.kidAt(pos)
		if kid == nil {
			p := n.valAt(pos)
			if len(key) == 1 {
				old, *p = *p, v
				return old, true
			}
			// The bare key is a proper prefix of key: it becomes a node
			// with an empty prefix, its own value, and one child.
			var s node[V] = &leaf[V]{meta[V]{val: *p, hasVal: true}}
			c, bv := newChild(key[2:], v)
			n.setKid(pos, s.add(key[1], c, bv))
			t.grew()
			return old, false
		}
		parent, ppos, n, key = n, pos, kid, key[1:]
	}
}

// split handles a key that leaves n's prefix after c bytes: a new node4
// takes the common part of the prefix and gets two children, n (holding the
// rest of its prefix) and the new key — or n and the new key's value itself
// when the key ends at the split point.
func (t *Tree[V]) split(parent node[V], ppos int, n node[V], c int, key []byte, v V) {
	m := n.base()
	var s node[V] = &node4[V]{meta: meta[V]{prefix: m.prefix[:c]}}
	e := m.prefix[c]
	m.prefix = m.prefix[c+1:]
	if bv, ok := bare(n); ok {
		s = s.add(e, nil, bv)
	} else {
		s = s.add(e, n, bv)
	}
	if c == len(key) {
		sm := s.base()
		sm.val, sm.hasVal = v, true
	} else {
		kid, kv := newChild(key[c+1:], v)
		s = s.add(key[c], kid, kv)
	}
	t.replace(parent, ppos, n, s)
}

// replace puts n2 where n was: the root, or position pos of parent.
func (t *Tree[V]) replace(parent node[V], pos int, n, n2 node[V]) {
	switch {
	case n == n2:
	case parent == nil:
		t.root = n2
	default:
		if v, ok := bare(n2); ok {
			parent.setVal(pos, v)
		} else {
			parent.setKid(pos, n2)
		}
	}
}

func (t *Tree[V]) grew() {
	t.size++
	t.gen++
}

// Delete removes key from the tree and returns the value it held. Nodes left
// empty are freed, and a node left with no value and a single child is
// merged with that child, so the tree stays as compact as if the key had
// never been inserted.
func (t *Tree[V]) Delete(key []byte) (old V, deleted bool) {
	if t == nil || t.root == nil {
		return old, false
	}
	var gp, parent node[V]
	gpos, ppos := -1, -1
	n := t.root
	for {
		m := n.base()
		if len(key) < len(m.prefix) || string(key[:len(m.prefix)]) != m.prefix {
			return old, false
		}
		key = key[len(m.prefix):]
		if len(key) == 0 {
			if !m.hasVal {
				return old, false
			}
			var zero V
			old, m.val, m.hasVal = m.val, zero, false
			break
		}
		pos := n.find(key[0])
		if pos < 0 {
			return old, false
		}
		_, kid, vp := n.slot(pos)
		if kid == nil {
			if len(key) != 1 {
				return old, false
			}
			old = *vp
			n2 := n.remove(pos)
			t.replace(parent, ppos, n, n2)
			n = n2
			break
		}
		gp, gpos, parent, ppos, n, key = parent, ppos, n, pos, kid, key[1:]
	}
	t.size--
	t.gen++
	t.compact(gp, gpos, parent, ppos, n)
	return old, true
}

// compact restores the shape rules after a key was removed from n, whose
// parent and grandparent (nil above the root) were canonical before.
func (t *Tree[V]) compact(gp node[V], gpos int, parent node[V], ppos int, n node[V]) {
	n2 := normalize(n)
	switch {
	case parent == nil:
		t.root = n2
	case n2 != nil:
		t.replace(parent, ppos, n, n2)
	default:
		// n is gone: drop its edge; the parent, canonical before, keeps a
		// value or at least one child, but may now need merging in turn.
		p2 := parent.remove(ppos)
		t.replace(gp, gpos, parent, normalize(p2))
	}
}

// normalize returns what should stand in place of n: nil when it holds
// nothing, a leaf when it has a value but no children, its only child merged
// with it when it has no value and one child, and n itself otherwise.
func normalize[V any](n node[V]) node[V] {
	m := n.base()
	switch n.count() {
	case 0:
		if !m.hasVal {
			return nil
		}
		if _, ok := n.(*leaf[V]); !ok {
			return &leaf[V]{*m}
		}
	case 1:
		if m.hasVal {
			return n
		}
		p := n.first()
		e := n.edgeAt(p)
		c := n.kidAt(p)
		if c == nil {
			return &leaf[V]{meta[V]{prefix: join(m.prefix, e, ""), val: *n.valAt(p), hasVal: true}}
		}
		cm := c.base()
		cm.prefix = join(m.prefix, e, cm.prefix)
		return c
	}
	return n
}

// join returns a+e+b in one allocation.
func join(a string, e byte, b string) string {
	buf := make([]byte, 0, len(a)+1+len(b))
	buf = append(append(append(buf, a...), e), b...)
	return string(buf)
}

// Min returns the smallest key and its value; ok is false when the tree is
// empty. The returned key is a new slice owned by the caller.
func (t *Tree[V]) Min() (key []byte, v V, ok bool) {
	if t == nil || t.root == nil {
		return nil, v, false
	}
	key = make([]byte, 0, 24)
	for n := t.root; ; {
		m := n.base()
		key = append(key, m.prefix...)
		if m.hasVal {
			return key, m.val, true
		}
		p := n.first()
		key = append(key, n.edgeAt(p))
		c := n.kidAt(p)
		if c == nil {
			return key, *n.valAt(p), true
		}
		n = c
	}
}

// Max returns the largest key and its value; ok is false when the tree is
// empty. The returned key is a new slice owned by the caller.
func (t *Tree[V]) Max() (key []byte, v V, ok bool) {
	if t == nil || t.root == nil {
		return nil, v, false
	}
	key = make([]byte, 0, 24)
	for n := t.root; ; {
		m := n.base()
		key = append(key, m.prefix...)
		p := n.last()
		if p < 0 {
			return key, m.val, true
		}
		key = append(key, n.edgeAt(p))
		c := n.kidAt(p)
		if c == nil {
			return key, *n.valAt(p), true
		}
		n = c
	}
}

// All returns an iterator over the keys and values in ascending key order.
// The key passed to the loop body is reused on the next step; copy it to
// keep it.
func (t *Tree[V]) All() iter.Seq2[[]byte, V] {
	return func(yield func([]byte, V) bool) {
		it := t.Seek(First, nil)
		for it.Next() && yield(it.Key(), it.Value()) {
		}
	}
}

// Backward is like All in descending key order.
func (t *Tree[V]) Backward() iter.Seq2[[]byte, V] {
	return func(yield func([]byte, V) bool) {
		it := t.Seek(Last, nil)
		for it.Prev() && yield(it.Key(), it.Value()) {
		}
	}
}
