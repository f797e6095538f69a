package radix

// This file holds the iterator's moves: descending to the smallest or
// largest key of a subtree, stepping to the neighbouring key, and the
// searches behind the seek operators.

// descendMin positions the iterator on the smallest key under n.
func (it *Iterator[V]) descendMin(n node[V]) {
	for {
		m := n.base()
		it.key = append(it.key, m.prefix...)
		kl := len(it.key)
		if m.hasVal {
			it.push(n, -1, kl)
			it.val = m.val
			return
		}
		p := n.first()
		it.push(n, p, kl)
		e, c, v := n.slot(p)
		it.key = append(it.key, e)
		if c == nil {
			it.val = *v
			return
		}
		n = c
	}
}

// descendMax positions the iterator on the largest key under n.
func (it *Iterator[V]) descendMax(n node[V]) {
	for {
		m := n.base()
		it.key = append(it.key, m.prefix...)
		kl := len(it.key)
		p := n.last()
		if p < 0 {
			it.push(n, -1, kl)
			it.val = m.val
			return
		}
		it.push(n, p, kl)
		e, c, v := n.slot(p)
		it.key = append(it.key, e)
		if c == nil {
			it.val = *v
			return
		}
		n = c
	}
}

// land moves the top frame f to position p and the iterator to the key
// there: the bare value, or the smallest (min) or largest key of the
// subtree.
func (it *Iterator[V]) land(f *frame[V], p int, min bool) {
	f.pos = int32(p)
	e, c, v := f.n.slot(p)
	it.key = append(it.key[:f.kl], e)
	it.state = stValid
	switch {
	case c == nil:
		it.val = *v
	case min:
		it.descendMin(c)
	default:
		it.descendMax(c)
	}
}

// forward moves to the smallest key after the position on top of the
// stack, popping finished nodes; it reports false, exhausted, at the end.
func (it *Iterator[V]) forward() bool {
	for len(it.stack) > 0 {
		f := &it.stack[len(it.stack)-1]
		var p int
		if f.pos < 0 {
			p = f.n.first()
		} else {
			p = f.n.next(int(f.pos))
		}
		if p < 0 {
			it.stack = it.stack[:len(it.stack)-1]
			continue
		}
		it.land(f, p, true)
		return true
	}
	it.state = stDone
	return false
}

// backward moves to the largest key before the position on top of the
// stack; a node's own value comes before all of its children.
func (it *Iterator[V]) backward() bool {
	for len(it.stack) > 0 {
		f := &it.stack[len(it.stack)-1]
		if f.pos >= 0 {
			if p := f.n.prev(int(f.pos)); p >= 0 {
				it.land(f, p, false)
				return true
			}
			f.pos = -1
			if m := f.n.base(); m.hasVal {
				it.key = it.key[:f.kl]
				it.val = m.val
				it.state = stValid
				return true
			}
		}
		it.stack = it.stack[:len(it.stack)-1]
	}
	it.state = stDone
	return false
}

// seekUp positions the iterator on the smallest key >= key (incl) or > key
// under n, whose parent frame, if any, is on top of the stack.
func (it *Iterator[V]) seekUp(n node[V], key []byte, incl bool) bool {
	for {
		m := n.base()
		c := commonPrefix(key, m.prefix)
		if c < len(m.prefix) {
			if c == len(key) || m.prefix[c] > key[c] {
				it.descendMin(n) // every key under n is greater
				return true
			}
			return it.after() // every key under n is smaller
		}
		it.key = append(it.key, m.prefix...)
		kl := len(it.key)
		key = key[c:]
		if len(key) == 0 {
			it.push(n, -1, kl)
			if m.hasVal && incl {
				it.val = m.val
				return true
			}
			return it.after()
		}
		p := n.seek(key[0])
		if p < 0 {
			return it.after()
		}
		e, kid, v := n.slot(p)
		it.push(n, p, kl)
		it.key = append(it.key, e)
		switch {
		case e > key[0] && kid != nil:
			it.descendMin(kid)
			return true
		case kid == nil && (e > key[0] || len(key) == 1 && incl):
			it.val = *v
			return true
		case kid == nil:
			return it.after()
		}
		n, key = kid, key[1:]
	}
}

// seekDown positions the iterator on the largest key <= key (incl) or < key
// under n, whose parent frame, if any, is on top of the stack.
func (it *Iterator[V]) seekDown(n node[V], key []byte, incl bool) bool {
	for {
		m := n.base()
		c := commonPrefix(key, m.prefix)
		if c < len(m.prefix) {
			if c == len(key) || m.prefix[c] > key[c] {
				return it.before() // every key under n is greater
			}
			it.descendMax(n) // every key under n is smaller
			return true
		}
		kl := len(it.key) + len(m.prefix)
		key = key[c:]
		if len(key) == 0 {
			if m.hasVal && incl {
				it.key = append(it.key, m.prefix...)
				it.push(n, -1, kl)
				it.val = m.val
				return true
			}
			return it.before()
		}
		p := n.seek(key[0])
		if p < 0 {
			it.descendMax(n)
			return true
		}
		it.key = append(it.key, m.prefix...)
		e, kid, v := n.slot(p)
		it.push(n, p, kl)
		it.key = append(it.key, e)
		switch {
		case e > key[0]:
			return it.before()
		case kid == nil && (len(key) > 1 || incl):
			it.val = *v
			return true
		case kid == nil:
			return it.before()
		}
		n, key = kid, key[1:]
	}
}

// after moves to the first key after the position on top of the stack and
// leaves the iterator pending there, or exhausted.
func (it *Iterator[V]) after() bool {
	ok := it.forward()
	if ok {
		it.state = stPending
	}
	return ok
}

// before is like after in descending order.
func (it *Iterator[V]) before() bool {
	ok := it.backward()
	if ok {
		it.state = stPending
	}
	return ok
}
