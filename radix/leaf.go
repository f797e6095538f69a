package radix

// leaf is a node without children: a key whose last bytes (the prefix) no
// other key shares. It always holds a value. At 32 bytes for a pointer value
// it is the cheapest kind; a leaf whose prefix would be empty is never
// allocated, its value lives as a bare value in the parent instead.
type leaf[V any] struct {
	meta[V]
}

func (l *leaf[V]) count() int      { return 0 }
func (l *leaf[V]) find(byte) int   { return -1 }
func (l *leaf[V]) seek(byte) int   { return -1 }
func (l *leaf[V]) first() int      { return -1 }
func (l *leaf[V]) last() int       { return -1 }
func (l *leaf[V]) next(int) int    { return -1 }
func (l *leaf[V]) prev(int) int    { return -1 }
func (l *leaf[V]) edgeAt(int) byte { panic("radix: leaf has no edges") }
func (l *leaf[V]) kidAt(int) node[V] {
	panic("radix: leaf has no children")
}
func (l *leaf[V]) slot(int) (byte, node[V], *V) {
	panic("radix: leaf has no children")
}
func (l *leaf[V]) valAt(int) *V        { panic("radix: leaf has no children") }
func (l *leaf[V]) setKid(int, node[V]) { panic("radix: leaf has no children") }
func (l *leaf[V]) setVal(int, V)       { panic("radix: leaf has no children") }
func (l *leaf[V]) remove(int) node[V]  { panic("radix: leaf has no children") }

// add turns the leaf into a node4 keeping its prefix and value.
func (l *leaf[V]) add(b byte, c node[V], v V) node[V] {
	n := &node4[V]{meta: l.meta}
	return n.add(b, c, v)
}
