package listpack

import (
	"encoding/binary"
	"sync"

	"github.com/redstream/redstream/lzf"
)

// Node compression, Redis's list-compress-depth: see "Compressed nodes"
// in the package documentation. The thresholds are Redis's
// MIN_COMPRESS_BYTES and MIN_COMPRESS_IMPROVE: a node is compressed only
// if its listpack has at least minCompressBytes and compression makes it
// more than minCompressGain bytes shorter.
const (
	minCompressBytes = 48
	minCompressGain  = 8
	maxDepth         = 1<<16 - 1 // Redis keeps the depth in 16 bits
)

// SetCompressDepth sets the list's compression depth (list-compress-depth:
// 0 is off, more than 65535 counts as 65535) and applies it to every node
// at once, which costs a pass over the list. Redis fixes a list's depth
// when it builds the list's nodes (when the list outgrows one listpack,
// or is loaded), so a server calls this for new and loaded lists rather
// than for every list on CONFIG SET.
func (q *Quicklist) SetCompressDepth(depth int) {
	q.mustWrite()
	q.depth = uint16(min(max(depth, 0), maxDepth))
	for k := range q.nodes.len() {
		if q.inner(k) {
			q.compress(q.nodes.at(k))
		} else {
			q.decompress(q.nodes.at(k))
		}
	}
}

// CompressDepth returns the list's compression depth; 0 means off.
func (q *Quicklist) CompressDepth() int { return int(q.depth) }

// CompressedNodes returns how many nodes are compressed now.
func (q *Quicklist) CompressedNodes() int {
	n := 0
	for k := range q.nodes.len() {
		if q.nodes.at(k).compressed() {
			n++
		}
	}
	return n
}

// inner reports whether node k lies beyond the depth from both ends, so
// that it should be compressed.
func (q *Quicklist) inner(k int) bool {
	d, n := int(q.depth), q.nodes.len()
	return d > 0 && k >= d && k < n-d
}

// size returns the size of the node's listpack, compressed or not: it is
// the listpack's total field, which a compressed node keeps.
func (nd *qnode) size() int { return int(binary.LittleEndian.Uint32(nd.lp)) }

// compressed reports whether the node holds LZF data: a listpack's
// total always equals its length, and compression only keeps a result
// shorter than the listpack.
func (nd *qnode) compressed() bool { return nd.size() != len(nd.lp) }

// compress replaces node nd's listpack by its compressed form if the node
// is big enough and compression saves enough. A buffer the live list
// owned is kept as the spare, for the next node that needs one.
func (q *Quicklist) compress(nd *qnode) {
	if nd.compressed() || len(nd.lp) < minCompressBytes {
		return
	}
	buf := getBuf(len(nd.lp))
	defer putBuf(buf)
	n := lzf.Compress(*buf, nd.lp)
	if n == 0 || n+minCompressGain >= len(nd.lp) {
		return
	}
	z := append(alloc(4+n), nd.lp[:4]...)
	old, owned := nd.lp, q.owns(nd)
	q.setLP(nd, append(z, (*buf)[:n]...))
	nd.gen = q.gen
	if owned {
		q.offerSpare(old)
	}
}

// decompress turns node nd back into a raw listpack that the live list
// owns, in the spare buffer if it is large enough.
func (q *Quicklist) decompress(nd *qnode) {
	if !nd.compressed() {
		return
	}
	size := nd.size()
	var lp []byte
	if cap(q.spare) >= size {
		lp, q.spare = q.spare[:size], nil
	} else {
		lp = alloc(size)[:size]
	}
	inflate(lp, nd.lp)
	q.setLP(nd, lp)
	nd.gen = q.gen
}

// inflate decompresses the compressed node bytes z into lp, which has
// the listpack's size. The data was compressed by this package and has
// not been out of its hands, so failing is a bug.
func inflate(lp Listpack, z []byte) {
	if n, err := lzf.Decompress(lp, z[4:]); err != nil || n != len(lp) {
		panic("listpack: a compressed list node does not decompress")
	}
}

// open returns node k ready to be changed: decompressed (see settle for
// when it is compressed again).
func (q *Quicklist) open(k int) *qnode {
	nd := q.nodes.at(k)
	q.decompress(nd)
	return nd
}

// settle restores the depth rule after nodes were added or removed, or
// opened: the depth nodes at each end are made raw, the first node past
// each boundary is compressed, and so are the nodes from lo to hi that lie
// beyond the depth (the ones the change worked on; lo > hi for none).
func (q *Quicklist) settle(lo, hi int) {
	d, n := int(q.depth), q.nodes.len()
	if d == 0 {
		return
	}
	for k := range min(d, n) {
		q.decompress(q.nodes.at(k))
		q.decompress(q.nodes.at(n - 1 - k))
	}
	if n <= 2*d {
		return
	}
	q.compress(q.nodes.at(d))
	q.compress(q.nodes.at(n - 1 - d))
	for k := max(lo, d+1); k <= min(hi, n-2-d); k++ {
		q.compress(q.nodes.at(k))
	}
}

// settleAround is settle for a change that worked on the nodes near node
// k: splits and merges reach two nodes to either side.
func (q *Quicklist) settleAround(k int) { q.settle(k-2, k+2) }

// read returns node nd's listpack without changing the node: its own
// bytes, or a compressed node's decompressed into *buf, which it grows as
// needed. It is safe on a view and alongside other readers.
func read(nd *qnode, buf *[]byte) Listpack {
	if !nd.compressed() {
		return nd.lp
	}
	if size := nd.size(); cap(*buf) < size {
		*buf = make([]byte, size)
	}
	lp := Listpack((*buf)[:nd.size()])
	inflate(lp, nd.lp)
	return lp
}

// bufPool holds scratch buffers for compressing and reading compressed
// nodes, so that neither allocates a node-sized buffer every time.
var bufPool = sync.Pool{New: func() any { return new([]byte) }}

// getBuf returns a pooled buffer of length n.
func getBuf(n int) *[]byte {
	b := bufPool.Get().(*[]byte)
	if cap(*b) < n {
		*b = make([]byte, n)
	}
	*b = (*b)[:n]
	return b
}

// putBuf returns b to the pool, unless it is too large to be worth
// keeping (a node holding one large value).
func putBuf(b *[]byte) {
	if cap(*b) <= 128<<10 {
		bufPool.Put(b)
	}
}

// withBuf runs fn with a pooled scratch buffer for read.
func withBuf(fn func(buf *[]byte)) {
	b := bufPool.Get().(*[]byte)
	defer putBuf(b)
	fn(b)
}

// StoredNodes calls fn with each node as it is stored, head to tail,
// until fn returns false: a raw node's listpack as lp, or a compressed
// node's LZF data as z with the size of its listpack. An RDB writer
// stores z as an LZF string without decompressing it, as Redis does. A
// node of one element is always passed as lp, since a writer must look
// at its value to see whether Redis would store it plain. fn must not
// modify or keep the slices.
func (q *Quicklist) StoredNodes(fn func(lp Listpack, z []byte, size int) bool) {
	withBuf(func(buf *[]byte) {
		for k := range q.nodes.len() {
			nd := q.nodes.at(k)
			var more bool
			if nd.compressed() && nd.count > 1 {
				more = fn(nil, nd.lp[4:], nd.size())
			} else {
				more = fn(read(nd, buf), nil, 0)
			}
			if !more {
				return
			}
		}
	})
}

// Listpacks returns every node's listpack, head to tail: a raw node's own
// bytes, which must not be modified (a view's never change), and a
// compressed node's decompressed into memory of its own.
func (q *Quicklist) Listpacks() []Listpack {
	out := make([]Listpack, 0, q.nodes.len())
	for k := range q.nodes.len() {
		var buf []byte
		out = append(out, read(q.nodes.at(k), &buf))
	}
	return out
}
