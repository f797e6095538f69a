package radix

// meta is the part every node kind shares: the compressed path that leads
// into the node and the value of the key that ends right after that path.
type meta[V any] struct {
	prefix string // bytes consumed on entering the node; never written in place
	val    V      // value of the key ending after prefix, valid when hasVal
	hasVal bool   // a key ends exactly at this node
}

func (m *meta[V]) base() *meta[V] { return m }

// node is one vertex of the tree. Its children are addressed by "positions":
// an index into sorted arrays for the small kinds, the edge byte itself for
// node48 and node256. Positions visit the edges in increasing byte order, and
// -1 means "none". A child slot holds either a subtree (kidAt != nil) or a
// bare value (kidAt == nil): the key that ends right after the edge byte.
type node[V any] interface {
	base() *meta[V]
	count() int            // number of occupied child slots
	find(b byte) int       // position of edge b, or -1
	seek(b byte) int       // first position whose edge is >= b, or -1
	first() int            // lowest position, or -1
	last() int             // highest position, or -1
	next(pos int) int      // position after pos, or -1
	prev(pos int) int      // position before pos, or -1
	edgeAt(pos int) byte   // edge byte of an occupied position
	kidAt(pos int) node[V] // subtree at pos, nil for a bare value
	valAt(pos int) *V      // storage of the bare value at pos
	// slot returns everything about an occupied position in one call: its
	// edge byte and either its subtree or the storage of its bare value.
	slot(pos int) (e byte, kid node[V], v *V)
	setKid(pos int, c node[V]) // make pos a subtree slot holding c
	setVal(pos int, v V)       // make pos a bare value slot holding v

	// add inserts a new edge b, a subtree when c != nil and the bare value v
	// otherwise. It returns the node that now holds the children: the
	// receiver, or a bigger kind when the receiver was full.
	add(b byte, c node[V], v V) node[V]
	// remove clears position pos and returns the node that now holds the
	// children: the receiver, or a smaller kind when it became sparse.
	remove(pos int) node[V]
}

// Kind sizes. A kind shrinks only well below the point where it grew, so a
// key inserted and deleted at the boundary does not reallocate every time.
const (
	shrink16  = 3  // node16 -> node4 at this many children
	shrink48  = 12 // node48 -> node16
	shrink256 = 40 // node256 -> node48
)

// commonPrefix returns the length of the longest common prefix of key and p.
func commonPrefix(key []byte, p string) int {
	if len(key) >= len(p) && string(key[:len(p)]) == p {
		return len(p)
	}
	n := min(len(key), len(p))
	for i := 0; i < n; i++ {
		if key[i] != p[i] {
			return i
		}
	}
	return n
}

// newChild returns what a slot holds for a key whose bytes after the edge
// are rest: a bare value when rest is empty, a new leaf otherwise.
func newChild[V any](rest []byte, v V) (node[V], V) {
	if len(rest) == 0 {
		return nil, v
	}
	var zero V
	return &leaf[V]{meta[V]{prefix: string(rest), val: v, hasVal: true}}, zero
}

// bare reports whether n must be stored as a bare value in its parent: a leaf
// with an empty prefix adds nothing but a value.
func bare[V any](n node[V]) (V, bool) {
	if l, ok := n.(*leaf[V]); ok && l.prefix == "" {
		return l.val, true
	}
	var zero V
	return zero, false
}

// sortedSeek returns the first index i < n with keys[i] >= b, or -1.
func sortedSeek(keys []byte, b byte) int {
	for i, k := range keys {
		if k >= b {
			return i
		}
	}
	return -1
}

// sortedFind returns the index of b in keys, or -1.
func sortedFind(keys []byte, b byte) int {
	for i, k := range keys {
		if k == b {
			return i
		}
	}
	return -1
}

// sortedAdd inserts edge b into the sorted arrays holding n entries, which
// have room for one more. kids may be nil when c is nil.
func sortedAdd[V any](keys []byte, vals []V, kids []node[V], n int, b byte, c node[V], v V) {
	i := sortedSeek(keys[:n], b)
	if i < 0 {
		i = n
	} else {
		copy(keys[i+1:n+1], keys[i:n])
		copy(vals[i+1:n+1], vals[i:n])
		if kids != nil {
			copy(kids[i+1:n+1], kids[i:n])
		}
	}
	keys[i] = b
	if c != nil {
		kids[i] = c
		var zero V
		vals[i] = zero
	} else {
		vals[i] = v
		if kids != nil {
			kids[i] = nil
		}
	}
}

// sortedRemove deletes entry i from the sorted arrays holding n entries and
// clears the freed last slot so it does not keep garbage alive.
func sortedRemove[V any](keys []byte, vals []V, kids []node[V], n, i int) {
	copy(keys[i:n-1], keys[i+1:n])
	copy(vals[i:n-1], vals[i+1:n])
	var zero V
	vals[n-1] = zero
	keys[n-1] = 0
	if kids != nil {
		copy(kids[i:n-1], kids[i+1:n])
		kids[n-1] = nil
	}
}
