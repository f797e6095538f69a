package listpack

// Capacity policy. The Go heap, not the listpack bytes, is what the list
// costs: a freed node is garbage until the next GC cycle and counts toward
// RSS meanwhile, and append's doubling leaves up to half of a node unused.
// So the quicklist sizes node buffers itself instead of leaving it to
// append:
//
//   - A list's only node grows in 1.5x steps, capped at the node byte
//     limit, so small lists stay small.
//   - Once a list has more than one node, a node created at the head or
//     tail gets its whole byte budget at once and never reallocates while
//     pushes fill it.
//   - A node emptied by pops is kept as a spare for the next new edge
//     node, so a list used as a queue recycles its buffers.
//   - A node left with much spare capacity is trimmed when a neighbour is
//     created next to it (it is then "sealed": full, and no longer an edge).

// ensureRoom makes sure node nd can take extra more bytes without
// reallocating inside a Listpack method, and that its bytes are the live
// list's own (see own): when it must copy, it does both in one copy.
func (q *Quicklist) ensureRoom(nd *qnode, extra int) {
	need, c := len(nd.lp)+extra, cap(nd.lp)
	switch lim := q.byteLimit(); {
	case need <= c:
		if q.owns(nd) {
			return
		}
	case need <= lim:
		c = min(max(c+c/2, need), lim)
	default:
		c = need // past the node limit (a large value): no headroom
	}
	q.realloc(nd, c)
}

// edgeBudget is the capacity to give a new head or tail node whose
// neighbour is nb: the byte limit for size fills, and for count fills the
// neighbour's size plus an eighth, since values in one list tend to be
// alike in size.
func (q *Quicklist) edgeBudget(nb *qnode) int {
	if q.fill < 0 {
		return q.byteLimit()
	}
	return min(nb.size()+nb.size()/8, sizeSafetyLimit)
}

// newNode returns a node holding just v. If nb is not nil the node is
// going to be a new head or tail next to nb: it gets its full budget (from
// the spare when possible) and nb is sealed. Otherwise, or for a large
// value, it gets just the room it needs.
func (q *Quicklist) newNode(v []byte, nb *qnode) qnode {
	need := emptySize + entrySize(v)
	c := need
	if nb != nil && !q.isLarge(len(v)) {
		c = max(c, q.edgeBudget(nb))
		q.seal(nb)
	}
	var lp Listpack
	if cap(q.spare) >= c {
		lp, q.spare = q.spare.reset(), nil // private: see dropNode
	} else {
		lp = newWithCap(c)
	}
	return qnode{lp: lp.Append(v), count: 1, gen: q.gen}
}

// seal trims the spare capacity of a node that has just stopped being the
// head or tail, if that spare is big enough to be worth a copy.
func (q *Quicklist) seal(nd *qnode) {
	if free := cap(nd.lp) - len(nd.lp); free > 256 && free > cap(nd.lp)/8 {
		q.realloc(nd, len(nd.lp))
	}
}

// dropNode removes node k, which has become empty (or whose contents have
// moved elsewhere). A list that still has several nodes keeps the buffer
// as its spare, since queues empty nodes at one end while filling new ones
// at the other; a list down to one node does not need one. Only a buffer
// the live list owns may become the spare: one a view still sees must
// never be handed out again.
func (q *Quicklist) dropNode(k int) {
	nd := q.nodes.at(k)
	lp, owned := nd.lp, q.owns(nd)
	q.nodes.remove(k)
	switch {
	case q.nodes.len() < 2:
		q.spare = nil
	case owned:
		q.offerSpare(lp)
	}
	q.settle(0, -1) // a node within the depth may have moved in
}

// offerSpare keeps lp, a buffer the live list owns and no node uses any
// more, as the spare if it has about a node's budget and more than the
// spare has now.
func (q *Quicklist) offerSpare(lp Listpack) {
	lim := q.byteLimit()
	if c := cap(lp); c >= lim/2 && c <= lim+lim/2 && c > cap(q.spare) {
		q.spare = lp[:0] // not a large value's buffer, which may be huge
	}
}

// shrink gives back memory when a list's only node has shrunk to under a
// quarter of its capacity, leaving half again its size as headroom so that
// a list hovering around one size does not reallocate on every operation.
// Multi-node lists are left alone: their head and tail nodes empty out and
// are dropped anyway, and the middle ones do not shrink through pops.
func (q *Quicklist) shrink(nd *qnode) {
	if c := cap(nd.lp); c >= 512 && len(nd.lp) < c/4 {
		q.realloc(nd, len(nd.lp)+len(nd.lp)/2)
	}
}

// afterDelete tidies node k after entries were removed from it: an empty
// node is dropped, a sparse one shrunk (only when it alone holds the list,
// or after a range delete or LREM, which can leave a node nearly empty in
// one go). It reports whether the node was dropped.
func (q *Quicklist) afterDelete(k int, bulk bool) bool {
	nd := q.nodes.at(k)
	switch {
	case nd.count == 0:
		q.dropNode(k)
		return true
	case bulk || q.nodes.len() == 1:
		q.shrink(nd)
	}
	return false
}
