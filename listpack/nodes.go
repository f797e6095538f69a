package listpack

// qnode is one quicklist node: a listpack and its element count. The
// count is kept beside the bytes so that finding the node that holds an
// index reads one contiguous array instead of touching every listpack's
// header (a cache miss per node). Eight KiB nodes make the array about
// 1/250th of the data, and the GC sees one pointer per node.
//
// gen is the snapshot epoch in which the live list last got private bytes
// for the node (created it, or cloned it): the node may be changed in
// place only while gen equals the list's epoch; see Snapshot. It fits in
// the padding after count, so a node is still 32 bytes.
type qnode struct {
	lp    Listpack
	count uint32
	gen   uint32
}

// nodeDeque stores the nodes in order in one array, with free slots kept
// at both ends so that adding or removing a node at the head or the tail,
// which is what queues do, costs O(1) amortized and no allocation. A
// linked list would cost an extra object and two pointers per node.
//
// A snapshot's view shares the array (shared is set on the live deque):
// the live list copies it before it first touches a node after the
// snapshot, so taking a snapshot costs no copy of the headers and the
// array a view reads is never written again.
type nodeDeque struct {
	buf     []qnode
	lo, hi  int  // live nodes are buf[lo:hi]
	shared  bool // a view reads buf: copy it before any access (unshare)
	lpBytes int  // the live nodes' listpack capacities, summed (Quicklist.Bytes)
}

// len returns the number of nodes.
func (d *nodeDeque) len() int { return d.hi - d.lo }

// at returns node k (0 is the head). The pointer is valid until the next
// insert or remove. Callers write through it, so it gets the live list
// its own array first.
func (d *nodeDeque) at(k int) *qnode {
	if d.shared {
		d.unshare()
	}
	return &d.buf[d.lo+k]
}

// unshare gives the deque an array of its own, laid out as before, and
// leaves the old one to the views that read it.
func (d *nodeDeque) unshare() {
	nb := make([]qnode, len(d.buf))
	copy(nb[d.lo:d.hi], d.buf[d.lo:d.hi])
	d.buf, d.shared = nb, false
}

// share marks the array as read by a view and returns a deque over it
// for the view.
func (d *nodeDeque) share() nodeDeque {
	if d.len() == 0 {
		return nodeDeque{}
	}
	d.shared = true
	return nodeDeque{buf: d.buf, lo: d.lo, hi: d.hi, lpBytes: d.lpBytes}
}

// insert puts nd at position k (0 <= k <= len), shifting the shorter side
// of the array so that head and tail inserts stay cheap.
func (d *nodeDeque) insert(k int, nd qnode) {
	if d.shared {
		d.unshare()
	}
	n := d.len()
	switch {
	case k == 0 && d.lo > 0:
		d.lo--
	case k == n && d.hi < len(d.buf):
		d.hi++
	default:
		if d.lo == 0 && d.hi == len(d.buf) {
			d.resize(n + 1)
		}
		if d.lo > 0 && (k < n/2 || d.hi == len(d.buf)) {
			copy(d.buf[d.lo-1:], d.buf[d.lo:d.lo+k])
			d.lo--
		} else {
			copy(d.buf[d.lo+k+1:d.hi+1], d.buf[d.lo+k:d.hi])
			d.hi++
		}
	}
	d.buf[d.lo+k] = nd
	d.lpBytes += cap(nd.lp)
}

// remove deletes node k, shifting the shorter side, and clears the freed
// slot so the GC does not keep its listpack alive.
func (d *nodeDeque) remove(k int) {
	if d.shared {
		d.unshare()
	}
	d.lpBytes -= cap(d.buf[d.lo+k].lp)
	n := d.len()
	if k < n/2 {
		copy(d.buf[d.lo+1:d.lo+k+1], d.buf[d.lo:d.lo+k])
		d.buf[d.lo] = qnode{}
		d.lo++
	} else {
		copy(d.buf[d.lo+k:], d.buf[d.lo+k+1:d.hi])
		d.hi--
		d.buf[d.hi] = qnode{}
	}
	switch n--; {
	case n == 0:
		d.lo, d.hi = len(d.buf)/2, len(d.buf)/2
	case len(d.buf) > 16 && n < len(d.buf)/4:
		d.resize(n)
	}
}

// resize moves the live nodes into a new array with room for about twice
// n nodes, centred so both ends have free slots. The array is small next
// to the listpacks (32 bytes a node), so doubling costs little.
func (d *nodeDeque) resize(n int) {
	size := 2 * n
	if n == 1 {
		size = 1 // most lists are one node: no spare slot
	}
	nb := make([]qnode, size)
	start := (size - d.len()) / 2
	copy(nb[start:], d.buf[d.lo:d.hi])
	d.hi = start + d.len()
	d.lo = start
	d.buf, d.shared = nb, false
}
