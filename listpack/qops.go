package listpack

import "strconv"

// PushHead adds copies of vs at the head one after another, as LPUSH
// does, so the last of them ends up first. Redis decides a list's encoding
// once per command from the total size of its values, so a command's
// values should be passed in one call.
func (q *Quicklist) PushHead(vs ...[]byte) {
	q.mustWrite()
	q.beforeAdd(totalLen(vs), len(vs))
	for _, v := range vs {
		q.pushHead(v)
	}
}

// PushTail adds copies of vs at the tail, in order (RPUSH).
func (q *Quicklist) PushTail(vs ...[]byte) {
	q.mustWrite()
	q.beforeAdd(totalLen(vs), len(vs))
	for _, v := range vs {
		q.pushTail(v)
	}
}

// totalLen is the summed length of vs, the size Redis's encoding check
// uses (raw lengths, not encoded sizes).
func totalLen(vs [][]byte) int {
	n := 0
	for _, v := range vs {
		n += len(v)
	}
	return n
}

// pushHead adds v before the first element: into the head node if it
// has room (a listpack-encoded list's one node always has), else into a
// new head node.
func (q *Quicklist) pushHead(v []byte) {
	if q.nodes.len() > 0 {
		if h := q.open(0); q.packed || q.allowInsert(h, len(v)) {
			q.ensureRoom(h, entrySize(v))
			q.setLP(h, h.lp.Prepend(v))
			h.count++
			q.count++
			return
		}
	}
	q.addEdgeNode(0, v)
}

// pushTail adds v after the last element, like pushHead.
func (q *Quicklist) pushTail(v []byte) {
	if n := q.nodes.len(); n > 0 {
		if t := q.open(n - 1); q.packed || q.allowInsert(t, len(v)) {
			q.ensureRoom(t, entrySize(v))
			q.setLP(t, t.lp.Append(v))
			t.count++
			q.count++
			return
		}
	}
	q.addEdgeNode(q.nodes.len(), v)
}

// BeforeAdd applies Redis's encoding check for a command about to add
// addCount values of addBytes total length. The push, insert and set
// methods do this themselves; a command calls it directly only where
// Redis checks even though nothing may be added (LINSERT whose pivot is
// not found), to switch encoding at the same moment Redis does.
func (q *Quicklist) BeforeAdd(addBytes, addCount int) {
	q.mustWrite()
	q.beforeAdd(addBytes, addCount)
}

// addEdgeNode puts a new node holding v at position k, which is 0 (new
// head) or NodeCount() (new tail).
func (q *Quicklist) addEdgeNode(k int, v []byte) {
	var nb *qnode
	if n := q.nodes.len(); n > 0 {
		nb = q.nodes.at(min(k, n-1))
	}
	q.nodes.insert(k, q.newNode(v, nb))
	q.count++
	q.settle(0, -1) // the old edge node may now lie beyond the depth
}

// PopHead removes the first element and returns a copy of it (LPOP).
func (q *Quicklist) PopHead() ([]byte, bool) { return q.PopHeadAppend(nil) }

// PopTail removes the last element and returns a copy of it (RPOP).
func (q *Quicklist) PopTail() ([]byte, bool) { return q.PopTailAppend(nil) }

// PopHeadAppend removes the first element and appends it to dst, so a
// caller can pop straight into a reply buffer without a copy per element.
// It returns dst unchanged and false if the list is empty.
func (q *Quicklist) PopHeadAppend(dst []byte) ([]byte, bool) {
	q.mustWrite()
	if q.count == 0 {
		return dst, false
	}
	dst = q.popAt(0, hdrSize, dst)
	q.afterRemove(true)
	return dst, true
}

// PopTailAppend is PopHeadAppend for the last element.
func (q *Quicklist) PopTailAppend(dst []byte) ([]byte, bool) {
	q.mustWrite()
	if q.count == 0 {
		return dst, false
	}
	k := q.nodes.len() - 1
	dst = q.popAt(k, q.open(k).lp.Last(), dst)
	q.afterRemove(true)
	return dst, true
}

// popAt appends the entry at offset off of node k to dst and deletes it.
func (q *Quicklist) popAt(k, off int, dst []byte) []byte {
	dst = q.open(k).lp.AppendValue(dst, off)
	q.deleteEntry(k, off)
	return dst
}

// deleteEntry removes the entry at offset off of node k. A node losing
// its only entry is dropped as it is: there is no point cloning the bytes
// of a node a snapshot still sees (a large value's, say) only to empty it.
func (q *Quicklist) deleteEntry(k, off int) {
	if q.nodes.at(k).count == 1 {
		q.count--
		q.dropNode(k)
		return
	}
	nd := q.open(k)
	q.own(nd)
	q.setLP(nd, nd.lp.Delete(off))
	nd.count--
	q.count--
	q.afterDelete(k, false)
}

// norm turns an index that may count from the tail (-1 is the last
// element) into one from the head, and reports whether it is in range.
func (q *Quicklist) norm(i int) (int, bool) {
	if i < 0 {
		i += q.count
	}
	return i, i >= 0 && i < q.count
}

// locate returns the node holding element i (0 <= i < Len) and the
// element's position inside that node, walking the node counts from the
// nearer end of the list.
func (q *Quicklist) locate(i int) (k, local int) {
	if i < q.count/2 {
		for k = 0; ; k++ {
			c := int(q.nodes.at(k).count)
			if i < c {
				return k, i
			}
			i -= c
		}
	}
	j := q.count - 1 - i // distance from the tail
	for k = q.nodes.len() - 1; ; k-- {
		c := int(q.nodes.at(k).count)
		if j < c {
			return k, c - 1 - j
		}
		j -= c
	}
}

// Index returns a copy of element i (LINDEX); negative i counts from the
// tail. It returns false if i is out of range.
func (q *Quicklist) Index(i int) ([]byte, bool) {
	i, ok := q.norm(i)
	if !ok {
		return nil, false
	}
	k, local := q.locate(i)
	var v []byte
	withBuf(func(buf *[]byte) {
		lp := read(q.nodes.at(k), buf)
		s, n, isStr := decodeAt(lp, lp.Seek(local))
		if isStr {
			v = append(make([]byte, 0, len(s)), s...)
		} else {
			v = strconv.AppendInt(nil, n, 10)
		}
	})
	return v, true
}

// Set replaces element i with a copy of v (LSET); negative i counts from
// the tail. It returns false if i is out of range, changing nothing but
// possibly the encoding, as LSET does.
// Like Redis it replaces in place even if the node grows past its limit,
// except when v must live alone (or the old value did), and re-checks the
// encoding before (as for an added value) and after (as for a removal).
func (q *Quicklist) Set(i int, v []byte) bool {
	q.mustWrite()
	if q.count == 0 {
		return false // no key in Redis: LSET fails before any check
	}
	q.beforeAdd(len(v), 1) // Redis checks before it looks at the index
	i, ok := q.norm(i)
	if !ok {
		return false
	}
	q.set(i, v)
	k, _ := q.locate(i)
	q.settleAround(k)
	q.afterRemove(true)
	return true
}

// set is Set for an index known to be in range, after the encoding check.
func (q *Quicklist) set(i int, v []byte) {
	k, local := q.locate(i)
	nd := q.open(k)
	large, plain := q.isLarge(len(v)), q.isPlain(nd)
	switch {
	case q.packed || large == plain:
		off := nd.lp.Seek(local)
		q.ensureRoom(nd, max(0, entrySize(v)-(nd.lp.entryEnd(off)-off)))
		q.setLP(nd, nd.lp.Replace(off, v))
	case plain:
		// A small value replacing a large one: put it beside the large
		// node (where it may join a neighbour) and drop the large node.
		q.insertAt(i, v, true)
		k, _ = q.locate(i)
		q.deleteEntry(k, hdrSize)
	default:
		q.replaceWithLarge(k, local, v)
	}
}

// replaceWithLarge replaces element local of node k with a large value,
// which must get a node of its own: the node is split after the element,
// the new node goes between the halves, and the old element is deleted.
func (q *Quicklist) replaceWithLarge(k, local int, v []byte) {
	if local != int(q.nodes.at(k).count)-1 {
		q.nodes.insert(k+1, q.cutTail(k, local+1, 0))
	}
	q.nodes.insert(k+1, q.newNode(v, nil))
	if q.nodes.at(k).count == 1 {
		q.nodes.remove(k)
		return
	}
	nd := q.open(k)
	q.own(nd)
	q.setLP(nd, nd.lp.Delete(nd.lp.Last()))
	nd.count--
	q.mergeAround(k + 1)
}
