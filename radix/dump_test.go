package radix

import (
	"fmt"
	"strings"
)

// dump renders the tree one node per line, for failure messages.
func (t *Tree[V]) dump() string { return t.render(true) }

// shape is dump without node kinds: two trees holding the same keys and
// values must have the same shape, however they were built, because
// compaction leaves exactly one compressed form for a key set.
func (t *Tree[V]) shape() string { return t.render(false) }

func (t *Tree[V]) render(kinds bool) string {
	var b strings.Builder
	if t.root != nil {
		dumpNode(&b, t.root, 0, "root", kinds)
	}
	return b.String()
}

func dumpNode[V any](b *strings.Builder, n node[V], depth int, edge string, kinds bool) {
	m := n.base()
	fmt.Fprintf(b, "%s%s", strings.Repeat("  ", depth), edge)
	if kinds {
		fmt.Fprintf(b, " %T", n)
	}
	fmt.Fprintf(b, " prefix=%q", m.prefix)
	if m.hasVal {
		fmt.Fprintf(b, " val=%v", m.val)
	}
	b.WriteString("\n")
	for p := n.first(); p >= 0; p = n.next(p) {
		e := fmt.Sprintf("[%q]", n.edgeAt(p))
		if c := n.kidAt(p); c != nil {
			dumpNode(b, c, depth+1, e, kinds)
		} else {
			fmt.Fprintf(b, "%s%s bare=%v\n", strings.Repeat("  ", depth+1), e, *n.valAt(p))
		}
	}
}

// sameShape reports whether two subtrees have the same prefixes, edges,
// bare values and values, whatever their node kinds; see shape.
func sameShape(a, b node[int]) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	am, bm := a.base(), b.base()
	if am.prefix != bm.prefix || am.hasVal != bm.hasVal || am.val != bm.val || a.count() != b.count() {
		return false
	}
	for p, q := a.first(), b.first(); p >= 0; p, q = a.next(p), b.next(q) {
		if a.edgeAt(p) != b.edgeAt(q) {
			return false
		}
		ak, bk := a.kidAt(p), b.kidAt(q)
		if ak == nil && bk == nil {
			if *a.valAt(p) != *b.valAt(q) {
				return false
			}
		} else if !sameShape(ak, bk) {
			return false
		}
	}
	return true
}
