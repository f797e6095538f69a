package listpack

import "unsafe"

// Fill limits, as Redis applies them to list-max-listpack-size.
const (
	// DefaultFill is Redis's default list-max-listpack-size: 8 KiB nodes.
	DefaultFill = -2

	fillMax = 1<<15 - 1 // largest positive fill Redis accepts
	fillMin = -5        // -5 means 64 KiB; anything lower is clamped to it

	// sizeSafetyLimit caps the bytes of a node whose fill is a count, so a
	// count limit cannot make nodes huge.
	sizeSafetyLimit = 8192

	// entryOverhead is the worst-case encoding overhead Redis assumes when
	// it checks whether one more value of length n fits a node: node bytes
	// + n + 8 must stay within the limit. We use the same estimate so that
	// our nodes split where Redis's do.
	entryOverhead = 8
)

// Quicklist holds a Redis LIST value: an ordered sequence of listpack
// nodes. Each node is a Listpack in Redis's byte format, so an RDB writer
// can emit nodes verbatim, and the GC sees one pointer per node instead of
// one per element.
//
// The fill setting bounds a node the way list-max-listpack-size does:
// -1 to -5 allow 4, 8, 16, 32 or 64 KiB of listpack bytes per node; a
// positive value allows that many elements (and at most 8 KiB). A value too
// large for any node (longer than the byte limit) gets a node to itself,
// the equivalent of Redis's "plain" node (see PlainValue).
//
// Like Redis 7.2 and later, a small list is kept as one bare listpack that
// ignores the per-node limits (Encoding reports "listpack") until adding
// values would take it past them; see encoding.go. The node layouts that
// result match Redis's for the same commands, so RDB output can match.
//
// Values passed in are copied. Values passed to callbacks point into the
// nodes and are valid only during the callback; the Quicklist must not be
// modified from inside a callback. A Quicklist is not safe for concurrent
// use, except that read-only methods may run concurrently with each other,
// and that a view returned by Snapshot may be read from any goroutine
// while the list it came from goes on changing.
// The zero value is not ready for use: create lists with NewQuicklist or
// QuicklistFromNodes.
type Quicklist struct {
	nodes  nodeDeque
	count  int      // elements in all nodes
	fill   int      // list-max-listpack-size, clamped
	spare  Listpack // an emptied edge node kept for the next new edge node; never seen by a view
	gen    uint32   // snapshot epoch: nodes stamped with it are private to this list
	packed bool     // in Redis's "listpack" encoding; see Encoding
	frozen bool     // a read-only view made by Snapshot
	depth  uint16   // list-compress-depth; see qcompress.go
}

// NewQuicklist returns an empty list whose nodes follow fill, a
// list-max-listpack-size value (see DefaultFill).
func NewQuicklist(fill int) *Quicklist {
	return &Quicklist{fill: clampFill(fill), packed: true}
}

// clampFill limits fill to what Redis accepts, as Redis does.
func clampFill(fill int) int {
	return min(max(fill, fillMin), fillMax)
}

// SetFill changes the node limit for later inserts, as CONFIG SET
// list-max-listpack-size does. Existing nodes are left as they are.
func (q *Quicklist) SetFill(fill int) {
	q.mustWrite()
	q.fill = clampFill(fill)
	q.spare = nil
}

// Fill returns the node limit in force (after clamping).
func (q *Quicklist) Fill() int { return q.fill }

// Len returns the number of elements.
func (q *Quicklist) Len() int { return q.count }

// NodeCount returns the number of listpack nodes.
func (q *Quicklist) NodeCount() int { return q.nodes.len() }

// Bytes estimates the memory the list holds, for MEMORY USAGE and the
// server's maxmemory accounting, which asks after every write: the
// listpacks' allocated capacity (a compressed node's compressed bytes),
// kept as nodes change (setLP), the node array and the struct itself.
func (q *Quicklist) Bytes() int {
	return int(unsafe.Sizeof(*q)) + cap(q.nodes.buf)*int(unsafe.Sizeof(qnode{})) + cap(q.spare) + q.nodes.lpBytes
}

// setLP replaces the bytes of nd, a node in the list, counting the change
// in allocation. Every change of a stored node's slice goes through here.
func (q *Quicklist) setLP(nd *qnode, lp Listpack) {
	q.nodes.lpBytes += cap(lp) - cap(nd.lp)
	nd.lp = lp
}

// byteLimit returns the most listpack bytes a node may hold: the size
// chosen by a negative fill, or the safety cap under a count fill. It is
// also the size above which a value is "large" and lives alone.
func (q *Quicklist) byteLimit() int {
	if q.fill >= 0 {
		return sizeSafetyLimit
	}
	return 4096 << (-q.fill - 1)
}

// exceeds reports whether a node of sz bytes and n elements would break
// the fill limit.
func (q *Quicklist) exceeds(sz, n int) bool {
	if q.fill < 0 {
		return sz > q.byteLimit()
	}
	return sz > sizeSafetyLimit || n > max(q.fill, 1)
}

// isLarge reports whether a value of length sz is too big to share a node.
func (q *Quicklist) isLarge(sz int) bool { return sz > q.byteLimit() }

// PlainValue reports whether node lp, as passed to the Nodes callback,
// holds a single value too large to share a node, and returns that value.
// Redis keeps such a value in a "plain" node, which RDB stores as
// container 1 with the raw value instead of a listpack; an RDB writer that
// wants Redis's exact bytes does the same. (Writing the node as a
// listpack is also valid: Redis loads it as an ordinary node.)
func (q *Quicklist) PlainValue(lp Listpack) ([]byte, bool) {
	if lp.headerCount() != 1 {
		return nil, false
	}
	s, _, isStr := decodeAt(lp, hdrSize)
	if !isStr || !q.isLarge(len(s)) {
		return nil, false
	}
	return s, true
}

// allowInsert reports whether a value of length sz may join node nd. A
// node holding one large value never accepts more, because its size is
// already past the limit.
func (q *Quicklist) allowInsert(nd *qnode, sz int) bool {
	if q.isLarge(sz) {
		return false
	}
	return !q.exceeds(nd.size()+sz+entryOverhead, int(nd.count)+1)
}

// allowMerge reports whether nodes a and b fit in one node. The merged
// listpack loses one header and one terminator (7 bytes).
func (q *Quicklist) allowMerge(a, b *qnode) bool {
	return !q.exceeds(a.size()+b.size()-emptySize, int(a.count+b.count))
}

// isPlain reports whether nd holds a single large string, which Redis
// would have kept as a plain node.
func (q *Quicklist) isPlain(nd *qnode) bool {
	if nd.count != 1 || nd.size() <= q.byteLimit() { // the value is smaller still
		return false
	}
	var ok bool
	withBuf(func(buf *[]byte) { _, ok = q.PlainValue(read(nd, buf)) })
	return ok
}
