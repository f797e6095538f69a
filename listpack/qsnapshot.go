package listpack

import "math"

// Snapshot returns a read-only view of the list as it is now. It shares
// the node array and every node's listpack bytes, so it costs the same
// small constant whatever the list holds: a snapshot of the whole
// keyspace is taken under the server's lock, and a 2 GB dataset has a
// quarter of a million nodes.
//
// The view supports every read method and may be read from any goroutine,
// for as long as it is referenced, while the list it came from goes on
// changing on its own goroutine: from now on the live list copies the
// node array before it next touches a node, and clones a node's bytes
// before it first changes them, so nothing the view can see is ever
// written again (see "Snapshots" in the package documentation). Several
// views may be alive at once; a later one does not disturb an earlier one.
// Calling a mutating method on a view panics. Snapshot of a view returns
// the view itself.
//
// Snapshot itself belongs to the live list's goroutine, like any other
// change to the list: it advances the list's snapshot epoch.
func (q *Quicklist) Snapshot() *Quicklist {
	if q.frozen {
		return q
	}
	// Every node now in the list is shared with the view: its gen is
	// behind the new epoch. The spare is not in the list, so the view
	// does not see it, and it only ever holds a node that was private
	// when it was dropped; it stays usable.
	if q.gen == math.MaxUint32 {
		// Wrapping around could make an old stamp look current again.
		// Restamp every node as "before the epoch" (one pass over the
		// headers, once every 4 billion snapshots of this list), before
		// the view shares them.
		for k := range q.nodes.len() {
			q.nodes.at(k).gen = 0
		}
		q.gen = 0
	}
	q.gen++
	return &Quicklist{count: q.count, fill: q.fill, depth: q.depth, packed: q.packed, frozen: true, nodes: q.nodes.share()}
}

// ReadOnly reports whether q is a view made by Snapshot.
func (q *Quicklist) ReadOnly() bool { return q.frozen }

// mustWrite panics if q is a view: every exported method that changes the
// list calls it first.
func (q *Quicklist) mustWrite() {
	if q.frozen {
		panic("listpack: mutating a read-only Quicklist snapshot (a view made by Snapshot); change the live list instead")
	}
}

// owns reports whether node nd's bytes are private to the live list, so
// that they may be changed in place: it created or cloned them since the
// latest Snapshot, so no view can see them.
func (q *Quicklist) owns(nd *qnode) bool { return nd.gen == q.gen }

// own makes node nd's bytes private before they are changed: a node that
// a view may still see is cloned (with the same capacity, so the list's
// growth policy is unaffected). Every change to a node's bytes, appends
// into spare capacity included (they rewrite the header and the
// terminator), goes through own or ensureRoom, which calls it.
func (q *Quicklist) own(nd *qnode) {
	if !q.owns(nd) {
		q.realloc(nd, cap(nd.lp))
	}
}

// realloc moves node nd's bytes to a new buffer with capacity c (at least
// their length) that belongs to the live list alone.
func (q *Quicklist) realloc(nd *qnode, c int) {
	q.setLP(nd, append(Listpack(alloc(c)), nd.lp...))
	nd.gen = q.gen
}
