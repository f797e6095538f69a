package listpack

// Insert adds a copy of v before element i (LINSERT BEFORE). Negative i
// counts from the tail; i == Len() appends. It returns false, changing
// nothing, if i is out of range.
func (q *Quicklist) Insert(i int, v []byte) bool {
	q.mustWrite()
	if i == q.count {
		q.PushTail(v)
		return true
	}
	i, ok := q.norm(i)
	if ok {
		q.beforeAdd(len(v), 1)
		q.insertAt(i, v, false)
		k, _ := q.locate(i)
		q.settleAround(k)
	}
	return ok
}

// InsertAfter adds a copy of v after element i (LINSERT AFTER). Negative
// i counts from the tail. It returns false if i is out of range. It is not
// the same as Insert(i+1, v): at a node boundary the two choose different
// nodes, and matching Redis's choice keeps node layouts alike.
func (q *Quicklist) InsertAfter(i int, v []byte) bool {
	q.mustWrite()
	i, ok := q.norm(i)
	if ok {
		q.beforeAdd(len(v), 1)
		q.insertAt(i, v, true)
		k, _ := q.locate(i + 1)
		q.settleAround(k)
	}
	return ok
}

// insertAt puts v beside element i (after it if after is set), choosing
// the node the way Redis does: the element's own node if it has room; the
// neighbouring node if v goes at this node's edge and the neighbour has
// room; a new node at the edge otherwise; and in the middle of a full
// node, a split.
func (q *Quicklist) insertAt(i int, v []byte, after bool) {
	k, local := q.locate(i)
	nd := q.nodes.at(k)
	atTail := after && local == int(nd.count)-1
	atHead := !after && local == 0
	switch {
	case q.packed:
		q.insertInNode(k, local, v, after)
	case q.isLarge(len(v)):
		q.insertLarge(k, local, v, after, atTail || atHead)
	case q.allowInsert(nd, len(v)):
		q.insertInNode(k, local, v, after)
	case atTail && k+1 < q.nodes.len() && q.allowInsert(q.nodes.at(k+1), len(v)):
		q.insertInNode(k+1, 0, v, false)
	case atHead && k > 0 && q.allowInsert(q.nodes.at(k-1), len(v)):
		q.insertInNode(k-1, int(q.nodes.at(k-1).count)-1, v, true)
	case atTail || atHead:
		q.insertNodeBeside(k, after, v)
	default:
		q.splitInsert(k, local, v, after)
	}
	q.count++
}

// insertInNode inserts v into node k beside its element local.
func (q *Quicklist) insertInNode(k, local int, v []byte, after bool) {
	nd := q.open(k)
	off := nd.lp.Seek(local)
	if after {
		off = nd.lp.entryEnd(off)
	}
	q.ensureRoom(nd, entrySize(v))
	q.setLP(nd, nd.lp.Insert(off, v))
	nd.count++
}

// insertNodeBeside puts a new node holding v right after (or before) node
// k. A node that becomes the new head or tail gets an edge node's budget.
func (q *Quicklist) insertNodeBeside(k int, after bool, v []byte) {
	pos := k
	if after {
		pos = k + 1
	}
	var nb *qnode
	if pos == 0 || pos == q.nodes.len() {
		nb = q.nodes.at(k)
	}
	q.nodes.insert(pos, q.newNode(v, nb))
}

// insertLarge stores a large v in a node of its own beside element local
// of node k, splitting node k first unless v goes at one of its edges.
func (q *Quicklist) insertLarge(k, local int, v []byte, after, atEdge bool) {
	switch {
	case atEdge:
		q.insertNodeBeside(k, after, v)
	case after:
		q.nodes.insert(k+1, q.cutTail(k, local+1, 0))
		q.nodes.insert(k+1, q.newNode(v, nil))
	default:
		q.nodes.insert(k, q.cutHead(k, local, 0))
		q.nodes.insert(k+1, q.newNode(v, nil))
	}
}

// splitInsert handles an insert in the middle of a full node, as Redis
// does: the part of node k on v's side of the element is moved to a new
// node, v joins that new node next to the cut, and then neighbouring nodes
// are merged where they fit.
func (q *Quicklist) splitInsert(k, local int, v []byte, after bool) {
	extra := entrySize(v)
	if after {
		nn := q.cutTail(k, local+1, extra)
		nn.lp = nn.lp.Prepend(v)
		nn.count++
		q.nodes.insert(k+1, nn)
		q.mergeAround(k)
		return
	}
	nn := q.cutHead(k, local, extra)
	nn.lp = nn.lp.Append(v)
	nn.count++
	q.nodes.insert(k, nn)
	q.mergeAround(k + 1)
}

// cutTail moves the elements of node k from position at onwards into a
// new node (with room for extra more bytes) and returns it.
func (q *Quicklist) cutTail(k, at, extra int) qnode {
	nd := q.open(k)
	q.own(nd)
	off := nd.lp.Seek(at)
	nn := q.fromEntries(nd.lp[off:len(nd.lp)-1], int(nd.count)-at, extra)
	q.setLP(nd, nd.lp.splice(off, len(nd.lp)-1-off, 0))
	nd.lp.setCount(at)
	nd.count = uint32(at)
	return nn
}

// cutHead moves the elements of node k before position at into a new node
// (with room for extra more bytes) and returns it.
func (q *Quicklist) cutHead(k, at, extra int) qnode {
	nd := q.open(k)
	q.own(nd)
	off := nd.lp.Seek(at)
	nn := q.fromEntries(nd.lp[hdrSize:off], at, extra)
	q.setLP(nd, nd.lp.splice(hdrSize, off-hdrSize, 0))
	nd.count -= uint32(at)
	nd.lp.setCount(int(nd.count))
	return nn
}

// fromEntries builds a node, private to the live list, from raw entry
// bytes holding n entries.
func (q *Quicklist) fromEntries(body []byte, n, extra int) qnode {
	lp := newWithCap(emptySize + len(body) + extra)
	lp = lp.splice(hdrSize, 0, len(body))
	copy(lp[hdrSize:], body)
	lp.setCount(n)
	return qnode{lp: lp, count: uint32(n), gen: q.gen}
}

// mergeAround tries, as Redis does after a split, to merge the two nodes
// before node c, the two after it, then c with its left and its right
// neighbour, wherever the result fits the fill limit. It returns c's new
// position.
func (q *Quicklist) mergeAround(c int) int {
	if c >= 2 && q.allowMerge(q.nodes.at(c-2), q.nodes.at(c-1)) {
		q.merge(c - 2)
		c--
	}
	if c+2 < q.nodes.len() && q.allowMerge(q.nodes.at(c+1), q.nodes.at(c+2)) {
		q.merge(c + 1)
	}
	if c >= 1 && q.allowMerge(q.nodes.at(c-1), q.nodes.at(c)) {
		q.merge(c - 1)
		c--
	}
	if c+1 < q.nodes.len() && q.allowMerge(q.nodes.at(c), q.nodes.at(c+1)) {
		q.merge(c)
	}
	return c
}

// merge joins node k+1 onto node k. The bytes are moved into whichever
// node has more elements, as Redis does, to move fewer bytes; only that
// node's bytes are written (ensureRoom makes them private first), and node
// k takes them over with their ownership.
func (q *Quicklist) merge(k int) {
	a, b := q.open(k), q.open(k+1)
	if a.count >= b.count {
		q.ensureRoom(a, len(b.lp)-emptySize)
		q.setLP(a, Concat(a.lp, b.lp))
	} else {
		q.ensureRoom(b, len(a.lp)-emptySize)
		q.setLP(a, concatFront(a.lp, b.lp))
		a.gen = b.gen
	}
	a.count += b.count
	q.nodes.remove(k + 1)
}
