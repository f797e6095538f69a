package radix

// node16 holds 5 to 16 children in arrays sorted by edge byte, laid out like
// node4. It is the kind that ends a run of sequential stream IDs: the last
// byte of up to 16 IDs sharing a millisecond, their values inline.
type node16[V any] struct {
	meta[V]
	n    uint8
	keys [16]byte
	vals [16]V
	kids *[16]node[V]
}

func (n *node16[V]) count() int        { return int(n.n) }
func (n *node16[V]) find(b byte) int   { return sortedFind(n.keys[:n.n], b) }
func (n *node16[V]) seek(b byte) int   { return sortedSeek(n.keys[:n.n], b) }
func (n *node16[V]) last() int         { return int(n.n) - 1 }
func (n *node16[V]) prev(pos int) int  { return pos - 1 }
func (n *node16[V]) edgeAt(p int) byte { return n.keys[p] }
func (n *node16[V]) valAt(p int) *V    { return &n.vals[p] }

func (n *node16[V]) first() int {
	if n.n == 0 {
		return -1
	}
	return 0
}

func (n *node16[V]) next(pos int) int {
	if pos+1 < int(n.n) {
		return pos + 1
	}
	return -1
}

func (n *node16[V]) kidAt(p int) node[V] {
	if n.kids == nil {
		return nil
	}
	return n.kids[p]
}

func (n *node16[V]) slot(p int) (byte, node[V], *V) {
	if n.kids != nil && n.kids[p] != nil {
		return n.keys[p], n.kids[p], nil
	}
	return n.keys[p], nil, &n.vals[p]
}

func (n *node16[V]) kidSlice() []node[V] {
	if n.kids == nil {
		return nil
	}
	return n.kids[:]
}

func (n *node16[V]) setKid(p int, c node[V]) {
	if n.kids == nil {
		n.kids = new([16]node[V])
	}
	n.kids[p] = c
	var zero V
	n.vals[p] = zero
}

func (n *node16[V]) setVal(p int, v V) {
	if n.kids != nil {
		n.kids[p] = nil
	}
	n.vals[p] = v
}

func (n *node16[V]) add(b byte, c node[V], v V) node[V] {
	if n.n == 16 {
		return n.grow().add(b, c, v)
	}
	if c != nil && n.kids == nil {
		n.kids = new([16]node[V])
	}
	sortedAdd(n.keys[:], n.vals[:], n.kidSlice(), int(n.n), b, c, v)
	n.n++
	return n
}

func (n *node16[V]) remove(p int) node[V] {
	sortedRemove(n.keys[:], n.vals[:], n.kidSlice(), int(n.n), p)
	n.n--
	if n.n > shrink16 {
		return n
	}
	s := &node4[V]{meta: n.meta, n: n.n}
	copy(s.keys[:], n.keys[:n.n])
	copy(s.vals[:], n.vals[:n.n])
	if n.kids != nil {
		s.kids = new([4]node[V])
		copy(s.kids[:], n.kids[:n.n])
	}
	return s
}

// grow copies the node into a node48.
func (n *node16[V]) grow() *node48[V] {
	g := &node48[V]{meta: n.meta}
	for i := range int(n.n) {
		if c := n.kidAt(i); c != nil {
			g.add(n.keys[i], c, *new(V))
		} else {
			g.add(n.keys[i], nil, n.vals[i])
		}
	}
	return g
}
