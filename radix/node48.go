package radix

import "bytes"

// node48 holds 17 to 48 children. idx maps an edge byte to its slot plus
// one (0 = no such edge), so a lookup is one array read; slots 0..n-1 are
// kept dense. Positions are edge bytes, so visiting them in order scans idx.
// Like node256, it allocates each slot array on first use.
type node48[V any] struct {
	meta[V]
	n    uint8
	idx  [256]uint8
	vals *[48]V
	kids *[48]node[V]
}

func (n *node48[V]) count() int        { return int(n.n) }
func (n *node48[V]) first() int        { return n.seek(0) }
func (n *node48[V]) last() int         { return n.prev(256) }
func (n *node48[V]) edgeAt(p int) byte { return byte(p) }
func (n *node48[V]) valAt(p int) *V    { return &n.vals[n.idx[p]-1] }

func (n *node48[V]) find(b byte) int {
	if n.idx[b] == 0 {
		return -1
	}
	return int(b)
}

func (n *node48[V]) seek(b byte) int {
	for i := int(b); i < 256; i++ {
		if n.idx[i] != 0 {
			return i
		}
	}
	return -1
}

func (n *node48[V]) next(pos int) int {
	if pos >= 255 {
		return -1
	}
	return n.seek(byte(pos + 1))
}

func (n *node48[V]) prev(pos int) int {
	for i := pos - 1; i >= 0; i-- {
		if n.idx[i] != 0 {
			return i
		}
	}
	return -1
}

func (n *node48[V]) kidAt(p int) node[V] {
	if n.kids == nil {
		return nil
	}
	return n.kids[n.idx[p]-1]
}

func (n *node48[V]) slot(p int) (byte, node[V], *V) {
	s := n.idx[p] - 1
	if n.kids != nil && n.kids[s] != nil {
		return byte(p), n.kids[s], nil
	}
	return byte(p), nil, &n.vals[s]
}

func (n *node48[V]) setKid(p int, c node[V]) {
	if n.kids == nil {
		n.kids = new([48]node[V])
	}
	s := n.idx[p] - 1
	n.kids[s] = c
	if n.vals != nil {
		var zero V
		n.vals[s] = zero
	}
}

func (n *node48[V]) setVal(p int, v V) {
	if n.vals == nil {
		n.vals = new([48]V)
	}
	s := n.idx[p] - 1
	if n.kids != nil {
		n.kids[s] = nil
	}
	n.vals[s] = v
}

func (n *node48[V]) add(b byte, c node[V], v V) node[V] {
	if n.n == 48 {
		return n.grow().add(b, c, v)
	}
	n.n++
	n.idx[b] = n.n
	if c != nil {
		n.setKid(int(b), c)
	} else {
		n.setVal(int(b), v)
	}
	return n
}

// remove frees the slot of edge p by moving the last slot into it.
func (n *node48[V]) remove(p int) node[V] {
	s, last := n.idx[p]-1, n.n-1
	if s != last {
		moved := bytes.IndexByte(n.idx[:], last+1)
		n.idx[moved] = s + 1
		if n.vals != nil {
			n.vals[s] = n.vals[last]
		}
		if n.kids != nil {
			n.kids[s] = n.kids[last]
		}
	}
	if n.vals != nil {
		var zero V
		n.vals[last] = zero
	}
	if n.kids != nil {
		n.kids[last] = nil
	}
	n.idx[p] = 0
	n.n--
	if n.n > shrink48 {
		return n
	}
	return n.shrink()
}

// shrink copies the node into a node16, edges in increasing order.
func (n *node48[V]) shrink() *node16[V] {
	s := &node16[V]{meta: n.meta}
	for p := n.first(); p >= 0; p = n.next(p) {
		i := int(s.n)
		s.keys[i] = byte(p)
		s.n++
		if c := n.kidAt(p); c != nil {
			s.setKid(i, c)
		} else {
			s.vals[i] = *n.valAt(p)
		}
	}
	return s
}

// grow copies the node into a node256.
func (n *node48[V]) grow() *node256[V] {
	g := &node256[V]{meta: n.meta}
	for p := n.first(); p >= 0; p = n.next(p) {
		if c := n.kidAt(p); c != nil {
			g.add(byte(p), c, *new(V))
		} else {
			g.add(byte(p), nil, *n.valAt(p))
		}
	}
	return g
}
