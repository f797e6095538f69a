package listpack

import "math"

// Redis 7.2 and later keep a small list as one bare listpack (OBJECT
// ENCODING "listpack", RDB type "list listpack") and switch it to a
// quicklist only when that listpack would pass the node limit; a quicklist
// goes back once it is a single node under half the limit. The choice is
// visible (OBJECT ENCODING, DEBUG, the RDB type byte) and shapes the
// nodes: in listpack encoding, values are added without the per-node
// estimate, so the first node can end up a few values fuller than a
// quicklist node would be. So the Quicklist tracks the encoding Redis
// would have, and while "packed" it is a single node that ignores node
// limits, exactly like Redis's bare listpack.

// Encoding returns the name Redis's OBJECT ENCODING would give this list:
// "listpack" while the list is small enough to be one bare listpack,
// "quicklist" after it outgrew that. A "listpack" list has at most one
// node, which the RDB writer can store as a single listpack.
func (q *Quicklist) Encoding() string {
	if q.packed {
		return "listpack"
	}
	return "quicklist"
}

// beforeAdd is Redis's conversion check before a command adds addCount
// values of addBytes total length: a listpack-encoded list that would
// pass the node limit becomes a quicklist (its one node stays as it is).
func (q *Quicklist) beforeAdd(addBytes, addCount int) {
	if !q.packed {
		return
	}
	sz := emptySize
	if q.nodes.len() > 0 {
		sz = q.nodes.at(0).size()
	}
	if q.exceeds(sz+addBytes, q.count+addCount) {
		q.packed = false
	}
}

// afterRemove is Redis's conversion check after a command removed values
// (or on load, with shrinking false): a quicklist that is one ordinary
// node within the limits, halved when shrinking so that a list hovering
// at the limit does not flip on every command, becomes a listpack again.
// An empty list counts as a new list, which starts as a listpack.
func (q *Quicklist) afterRemove(shrinking bool) {
	if q.packed || q.count == 0 {
		q.packed = true
		return
	}
	if q.nodes.len() != 1 || q.isPlain(q.nodes.at(0)) {
		return
	}
	szLim, cntLim := math.MaxInt, math.MaxInt
	if q.fill < 0 {
		szLim = q.byteLimit()
	} else {
		cntLim = max(q.fill, 1)
	}
	if shrinking {
		szLim, cntLim = szLim/2, cntLim/2
	}
	if nd := q.nodes.at(0); nd.size() <= szLim && int(nd.count) <= cntLim {
		q.packed = true
		q.spare = nil
	}
}
