package radix

// node4 holds up to 4 children in arrays sorted by edge byte. Bare values
// live inline in vals; the kids array is allocated only once a child needs a
// subtree, so a node whose children are all bare values is one allocation.
type node4[V any] struct {
	meta[V]
	n    uint8
	keys [4]byte
	vals [4]V
	kids *[4]node[V]
}

func (n *node4[V]) count() int        { return int(n.n) }
func (n *node4[V]) find(b byte) int   { return sortedFind(n.keys[:n.n], b) }
func (n *node4[V]) seek(b byte) int   { return sortedSeek(n.keys[:n.n], b) }
func (n *node4[V]) last() int         { return int(n.n) - 1 }
func (n *node4[V]) prev(pos int) int  { return pos - 1 }
func (n *node4[V]) edgeAt(p int) byte { return n.keys[p] }
func (n *node4[V]) valAt(p int) *V    { return &n.vals[p] }

func (n *node4[V]) first() int {
	if n.n == 0 {
		return -1
	}
	return 0
}

func (n *node4[V]) next(pos int) int {
	if pos+1 < int(n.n) {
		return pos + 1
	}
	return -1
}

func (n *node4[V]) kidAt(p int) node[V] {
	if n.kids == nil {
		return nil
	}
	return n.kids[p]
}

func (n *node4[V]) slot(p int) (byte, node[V], *V) {
	if n.kids != nil && n.kids[p] != nil {
		return n.keys[p], n.kids[p], nil
	}
	return n.keys[p], nil, &n.vals[p]
}

func (n *node4[V]) kidSlice() []node[V] {
	if n.kids == nil {
		return nil
	}
	return n.kids[:]
}

func (n *node4[V]) setKid(p int, c node[V]) {
	if n.kids == nil {
		n.kids = new([4]node[V])
	}
	n.kids[p] = c
	var zero V
	n.vals[p] = zero
}

func (n *node4[V]) setVal(p int, v V) {
	if n.kids != nil {
		n.kids[p] = nil
	}
	n.vals[p] = v
}

func (n *node4[V]) add(b byte, c node[V], v V) node[V] {
	if n.n == 4 {
		return n.grow().add(b, c, v)
	}
	if c != nil && n.kids == nil {
		n.kids = new([4]node[V])
	}
	sortedAdd(n.keys[:], n.vals[:], n.kidSlice(), int(n.n), b, c, v)
	n.n++
	return n
}

func (n *node4[V]) remove(p int) node[V] {
	sortedRemove(n.keys[:], n.vals[:], n.kidSlice(), int(n.n), p)
	n.n--
	return n
}

// grow copies the node into a node16.
func (n *node4[V]) grow() *node16[V] {
	g := &node16[V]{meta: n.meta, n: n.n}
	copy(g.keys[:], n.keys[:])
	copy(g.vals[:], n.vals[:])
	if n.kids != nil {
		g.kids = new([16]node[V])
		copy(g.kids[:], n.kids[:])
	}
	return g
}
