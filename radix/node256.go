package radix

import "math/bits"

// node256 holds 49 to 256 children indexed directly by edge byte. A bitmap
// records which edges exist, so ordered scans skip 64 empty edges per step.
// Both arrays are allocated on first use: a node256 whose children are all
// subtrees carries no value array, and one whose children are all bare
// values (a millisecond with many stream IDs) carries no kids array.
type node256[V any] struct {
	meta[V]
	n    uint16
	bits [4]uint64
	vals *[256]V
	kids *[256]node[V]
}

func (n *node256[V]) count() int        { return int(n.n) }
func (n *node256[V]) first() int        { return n.seek(0) }
func (n *node256[V]) last() int         { return n.prev(256) }
func (n *node256[V]) edgeAt(p int) byte { return byte(p) }
func (n *node256[V]) valAt(p int) *V    { return &n.vals[p] }

func (n *node256[V]) has(b int) bool { return n.bits[b>>6]&(1<<(b&63)) != 0 }

func (n *node256[V]) find(b byte) int {
	if !n.has(int(b)) {
		return -1
	}
	return int(b)
}

func (n *node256[V]) seek(b byte) int {
	w := int(b >> 6)
	m := n.bits[w] &^ (1<<(b&63) - 1)
	for {
		if m != 0 {
			return w<<6 | bits.TrailingZeros64(m)
		}
		if w++; w == 4 {
			return -1
		}
		m = n.bits[w]
	}
}

func (n *node256[V]) next(pos int) int {
	if pos >= 255 {
		return -1
	}
	return n.seek(byte(pos + 1))
}

func (n *node256[V]) prev(pos int) int {
	if pos <= 0 {
		return -1
	}
	pos--
	w := pos >> 6
	m := n.bits[w] & (2<<(pos&63) - 1)
	for {
		if m != 0 {
			return w<<6 | (63 - bits.LeadingZeros64(m))
		}
		if w--; w < 0 {
			return -1
		}
		m = n.bits[w]
	}
}

func (n *node256[V]) kidAt(p int) node[V] {
	if n.kids == nil {
		return nil
	}
	return n.kids[p]
}

func (n *node256[V]) slot(p int) (byte, node[V], *V) {
	if n.kids != nil && n.kids[p] != nil {
		return byte(p), n.kids[p], nil
	}
	return byte(p), nil, &n.vals[p]
}

func (n *node256[V]) setKid(p int, c node[V]) {
	if n.kids == nil {
		n.kids = new([256]node[V])
	}
	n.kids[p] = c
	if n.vals != nil {
		var zero V
		n.vals[p] = zero
	}
}

func (n *node256[V]) setVal(p int, v V) {
	if n.vals == nil {
		n.vals = new([256]V)
	}
	if n.kids != nil {
		n.kids[p] = nil
	}
	n.vals[p] = v
}

func (n *node256[V]) add(b byte, c node[V], v V) node[V] {
	n.bits[b>>6] |= 1 << (b & 63)
	n.n++
	if c != nil {
		n.setKid(int(b), c)
	} else {
		n.setVal(int(b), v)
	}
	return n
}

func (n *node256[V]) remove(p int) node[V] {
	n.bits[p>>6] &^= 1 << (p & 63)
	n.n--
	if n.kids != nil {
		n.kids[p] = nil
	}
	if n.vals != nil {
		var zero V
		n.vals[p] = zero
	}
	if n.n > shrink256 {
		return n
	}
	s := &node48[V]{meta: n.meta}
	var sn node[V] = s
	for q := n.first(); q >= 0; q = n.next(q) {
		if c := n.kidAt(q); c != nil {
			sn = sn.add(byte(q), c, *new(V))
		} else {
			sn = sn.add(byte(q), nil, n.vals[q])
		}
	}
	return sn
}
