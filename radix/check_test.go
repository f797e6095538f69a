package radix

import (
	"bytes"
	"fmt"
)

// check verifies the tree's invariants and returns the first violation:
//   - Len matches the number of keys, and the keys come out strictly
//     ascending in a walk of the structure;
//   - compaction: no node without a value has fewer than two children (the
//     root included), so no empty nodes and no mergeable chains exist;
//   - canonical slots: no child is a leaf with an empty prefix (that must
//     be a bare value) and leaves always hold a value;
//   - each kind holds a child count inside its range, node4/node16 edges
//     are sorted, node48's index and node256's bitmap agree with the count,
//     and freed slots hold no stale subtree.
func (t *Tree[V]) check() error {
	if t.root == nil {
		if t.size != 0 {
			return fmt.Errorf("empty root but size %d", t.size)
		}
		return nil
	}
	var prev []byte
	n := 0
	err := checkNode(t.root, nil, true, func(k []byte) error {
		if n > 0 && bytes.Compare(prev, k) >= 0 {
			return fmt.Errorf("keys out of order: %x then %x", prev, k)
		}
		prev = append(prev[:0], k...)
		n++
		return nil
	})
	if err != nil {
		return err
	}
	if n != t.size {
		return fmt.Errorf("walk found %d keys, Len is %d", n, t.size)
	}
	return nil
}

func checkNode[V any](n node[V], path []byte, root bool, emit func([]byte) error) error {
	m := n.base()
	path = append(path, m.prefix...)
	cnt := n.count()
	if !m.hasVal && cnt < 2 {
		return fmt.Errorf("node %x: no value and %d children", path, cnt)
	}
	if !root {
		if _, ok := bare(n); ok {
			return fmt.Errorf("node %x: leaf with empty prefix below root", path)
		}
	}
	if err := checkKind(n, cnt); err != nil {
		return fmt.Errorf("node %x: %w", path, err)
	}
	if m.hasVal {
		if err := emit(path); err != nil {
			return err
		}
	}
	seen, last := 0, -1
	for p := n.first(); p >= 0; p = n.next(p) {
		e := int(n.edgeAt(p))
		if e <= last {
			return fmt.Errorf("node %x: edges not ascending (%d after %d)", path, e, last)
		}
		last = e
		seen++
		k := append(path, byte(e))
		if c := n.kidAt(p); c != nil {
			if err := checkNode(c, k, false, emit); err != nil {
				return err
			}
		} else if err := emit(k); err != nil {
			return err
		}
	}
	if seen != cnt {
		return fmt.Errorf("node %x: walked %d children, count %d", path, seen, cnt)
	}
	// Walking backwards must visit the same positions.
	back := 0
	for p := n.last(); p >= 0; p = n.prev(p) {
		back++
	}
	if back != cnt {
		return fmt.Errorf("node %x: walked %d children backwards, count %d", path, back, cnt)
	}
	return nil
}

func checkKind[V any](n node[V], cnt int) error {
	switch n := n.(type) {
	case *leaf[V]:
		if !n.hasVal {
			return fmt.Errorf("leaf without value")
		}
	case *node4[V]:
		if cnt < 1 || cnt > 4 {
			return fmt.Errorf("node4 with %d children", cnt)
		}
		if n.kids != nil {
			for i := cnt; i < 4; i++ {
				if n.kids[i] != nil {
					return fmt.Errorf("node4 stale kid at %d", i)
				}
			}
		}
	case *node16[V]:
		if cnt <= shrink16 || cnt > 16 {
			return fmt.Errorf("node16 with %d children", cnt)
		}
		if n.kids != nil {
			for i := cnt; i < 16; i++ {
				if n.kids[i] != nil {
					return fmt.Errorf("node16 stale kid at %d", i)
				}
			}
		}
	case *node48[V]:
		if cnt <= shrink48 || cnt > 48 {
			return fmt.Errorf("node48 with %d children", cnt)
		}
		used := make([]bool, 48)
		for b, s := range n.idx {
			if s == 0 {
				continue
			}
			if int(s) > cnt || used[s-1] {
				return fmt.Errorf("node48 bad slot %d for edge %d", s, b)
			}
			used[s-1] = true
		}
		if n.kids != nil {
			for i := cnt; i < 48; i++ {
				if n.kids[i] != nil {
					return fmt.Errorf("node48 stale kid at %d", i)
				}
			}
		}
	case *node256[V]:
		if cnt <= shrink256 || cnt > 256 {
			return fmt.Errorf("node256 with %d children", cnt)
		}
		for b := 0; b < 256; b++ {
			if !n.has(b) && n.kids != nil && n.kids[b] != nil {
				return fmt.Errorf("node256 stale kid at %d", b)
			}
		}
	default:
		return fmt.Errorf("unknown kind %T", n)
	}
	return nil
}
