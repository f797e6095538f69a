package listpack

// Range calls fn for elements start to stop inclusive, in order, until fn
// returns false. start and stop are taken exactly as LRANGE takes them,
// so the caller can pass the command's arguments through: negative values
// count from the tail, start below 0 is treated as 0, stop past the end as
// the last element, and an empty range calls fn not at all. v is valid only
// during the call.
func (q *Quicklist) Range(start, stop int, fn func(v []byte) bool) {
	if start < 0 {
		start = max(start+q.count, 0)
	}
	if stop < 0 {
		stop += q.count
	}
	stop = min(stop, q.count-1)
	if start > stop {
		return
	}
	k, local := q.locate(start)
	scratch := make([]byte, 0, IntBufLen)
	withBuf(func(buf *[]byte) {
		for n := stop - start + 1; n > 0; k++ {
			lp := read(q.nodes.at(k), buf)
			for off := lp.Seek(local); off >= 0 && n > 0; off = lp.Next(off) {
				if !fn(lp.Get(off, scratch)) {
					return
				}
				n--
			}
			local = 0
		}
	})
}

// Iter calls fn for every element with its index from the head (even
// when going backwards), from head to tail, or from tail to head if
// reverse is set, until fn returns false. LPOS, LINSERT's pivot search and
// similar scans use it. v is valid only during the call.
func (q *Quicklist) Iter(reverse bool, fn func(i int, v []byte) bool) {
	withBuf(func(buf *[]byte) {
		if reverse {
			q.iterBackward(buf, fn)
		} else {
			q.iterForward(buf, fn)
		}
	})
}

// iterForward is Iter from the head, reading compressed nodes into buf.
func (q *Quicklist) iterForward(buf *[]byte, fn func(i int, v []byte) bool) {
	scratch := make([]byte, 0, IntBufLen)
	i := 0
	for k := range q.nodes.len() {
		lp := read(q.nodes.at(k), buf)
		for off := lp.First(); off >= 0; off = lp.Next(off) {
			if !fn(i, lp.Get(off, scratch)) {
				return
			}
			i++
		}
	}
}

// iterBackward is Iter from the tail.
func (q *Quicklist) iterBackward(buf *[]byte, fn func(i int, v []byte) bool) {
	scratch := make([]byte, 0, IntBufLen)
	i := q.count - 1
	for k := q.nodes.len() - 1; k >= 0; k-- {
		lp := read(q.nodes.at(k), buf)
		for off := lp.Last(); off >= 0; off = lp.Prev(off) {
			if !fn(i, lp.Get(off, scratch)) {
				return
			}
			i--
		}
	}
}

// RemoveValue deletes elements equal to v with LREM's semantics: count > 0
// removes up to count from the head, count < 0 up to -count from the
// tail, count == 0 all of them. It returns how many were removed.
// Elements compare as strings: v "10" matches a stored 10, "010" does not.
func (q *Quicklist) RemoveValue(v []byte, count int) int {
	q.mustWrite()
	limit := count
	if limit < 0 {
		limit = -limit
	}
	if limit == 0 {
		limit = q.count
	}
	m := newMatcher(v)
	var removed int
	if count < 0 {
		removed = q.removeBackward(m, limit)
	} else {
		removed = q.removeForward(m, limit)
	}
	if removed > 0 {
		q.settle(0, -1) // nodes may have gone from the ends
		q.afterRemove(true)
	}
	return removed
}

// removeForward deletes up to limit matches walking from the head.
func (q *Quicklist) removeForward(m matcher, limit int) int {
	removed := 0
	for k := 0; k < q.nodes.len() && removed < limit; {
		if !q.mayMatch(k, m) {
			k++
			continue
		}
		nd, before := q.open(k), removed
		for off := nd.lp.First(); off >= 0 && removed < limit; {
			if !m.match(nd.lp, off) {
				off = nd.lp.Next(off)
				continue
			}
			q.own(nd) // only nodes with a match are cloned; offsets survive
			q.setLP(nd, nd.lp.Delete(off))
			nd.count--
			removed++
			off = nd.lp.at(off) // the next entry slid into off
		}
		if removed == before || !q.afterDelete(k, true) {
			q.reclose(k, removed != before)
			k++
		}
	}
	q.count -= removed
	return removed
}

// removeBackward deletes up to limit matches walking from the tail.
func (q *Quicklist) removeBackward(m matcher, limit int) int {
	removed := 0
	for k := q.nodes.len() - 1; k >= 0 && removed < limit; k-- {
		if !q.mayMatch(k, m) {
			continue
		}
		nd, before := q.open(k), removed
		for off := nd.lp.Last(); off >= 0 && removed < limit; {
			prev := nd.lp.Prev(off) // unaffected by deleting at off
			if m.match(nd.lp, off) {
				q.own(nd)
				q.setLP(nd, nd.lp.Delete(off))
				nd.count--
				removed++
			}
			off = prev
		}
		if removed == before || !q.afterDelete(k, true) {
			q.reclose(k, removed != before)
		}
	}
	q.count -= removed
	return removed
}

// mayMatch reports whether node k may hold an entry m matches: a raw node
// is simply searched by the caller, a compressed one is read first so
// that it is opened (and compressed again) only if it has a match.
func (q *Quicklist) mayMatch(k int, m matcher) bool {
	nd := q.nodes.at(k)
	if !nd.compressed() {
		return true
	}
	found := false
	withBuf(func(buf *[]byte) {
		lp := read(nd, buf)
		for off := lp.First(); off >= 0 && !found; off = lp.Next(off) {
			found = m.match(lp, off)
		}
	})
	return found
}

// reclose compresses node k again, if it lies beyond the depth, after a
// change opened it. A node left unchanged is left alone: it is raw
// because compressing it did not pay.
func (q *Quicklist) reclose(k int, changed bool) {
	if changed && q.inner(k) {
		q.compress(q.nodes.at(k))
	}
}

// matcher compares entries with one value, parsing the value once: an
// integer entry can only equal a canonical integer string.
type matcher struct {
	v     []byte
	n     int64
	isInt bool
}

// newMatcher prepares to compare entries with v.
func newMatcher(v []byte) matcher {
	n, isInt := parseInt(v)
	return matcher{v: v, n: n, isInt: isInt}
}

// match reports whether the entry at off of lp equals the value.
func (m matcher) match(lp Listpack, off int) bool {
	s, n, isStr := decodeAt(lp, off)
	if isStr {
		return string(s) == string(m.v)
	}
	return m.isInt && n == m.n
}

// DeleteRange deletes n elements starting at element start (negative
// counts from the tail), as LTRIM needs; a range running past the end is
// cut short. It returns how many elements were deleted. Whole nodes in the
// range are dropped without being walked.
func (q *Quicklist) DeleteRange(start, n int) int {
	q.mustWrite()
	defer q.afterRemove(true) // LTRIM checks the encoding even if it deletes nothing
	start, ok := q.norm(start)
	if !ok || n <= 0 {
		return 0
	}
	n = min(n, q.count-start)
	k, local := q.locate(start)
	for left := n; left > 0; local = 0 {
		nd := q.nodes.at(k)
		take := min(left, int(nd.count)-local)
		left -= take
		if take == int(nd.count) {
			q.nodes.remove(k)
			continue
		}
		nd = q.open(k)
		q.own(nd)
		q.setLP(nd, nd.lp.DeleteRange(nd.lp.Seek(local), take))
		nd.count -= uint32(take)
		q.afterDelete(k, true)
		k++
	}
	q.count -= n
	if q.nodes.len() < 2 {
		q.spare = nil
	}
	q.settle(k-2, k)
	return n
}

// Nodes calls fn with each node's listpack, head to tail, until fn returns
// false. The RDB writer emits these bytes verbatim. fn must not modify or
// keep the slice.
func (q *Quicklist) Nodes(fn func(lp Listpack) bool) {
	withBuf(func(buf *[]byte) {
		for k := range q.nodes.len() {
			if !fn(read(q.nodes.at(k), buf)) {
				return
			}
		}
	})
}

// QuicklistFromNodes builds a list from listpacks read from an RDB file,
// taking ownership of them. The caller must have checked each with
// Validate(lp, true). Empty listpacks are skipped, as Redis skips them.
// Each node's capacity is clipped to its length, so that a node cut from a
// larger read buffer reallocates on its first insert instead of writing
// over the bytes that follow it.
func QuicklistFromNodes(fill int, nodes []Listpack) *Quicklist {
	q := NewQuicklist(fill)
	for _, lp := range nodes {
		n := lp.Len()
		if n == 0 {
			continue
		}
		q.nodes.insert(q.nodes.len(), qnode{lp: lp[:len(lp):len(lp)], count: uint32(n), gen: q.gen})
		q.count += n
	}
	// Redis converts a loaded list to the encoding its size calls for: a
	// single node within the (full, not halved) limits is a listpack.
	q.packed = false
	q.afterRemove(false)
	return q
}
