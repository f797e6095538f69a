package persistence

import (
	"bytes"
	"strconv"

	"github.com/redstream/redstream/listpack"
)

// list reads a list value of any encoding as listpack nodes. Empty nodes
// are dropped, as Redis drops them; an empty result means an empty key.
func (d *Decoder) list(t byte) (List, error) {
	switch t {
	case typeList:
		return d.linkedList()
	case typeListZiplist:
		zl, err := d.r.str("a list ziplist")
		if err != nil {
			return nil, err
		}
		return d.repack(func(push func([]byte)) error { return ziplistValues(zl, push) })
	}
	n, err := d.r.count("a list's node count")
	if err != nil {
		return nil, err
	}
	if err := d.r.countFits(n, 2, "a list's node count"); err != nil {
		return nil, err
	}
	nodes := make(List, 0, min(n, 1024))
	for range n {
		lp, err := d.listNode(t)
		if err != nil {
			return nil, err
		}
		if lp.Len() > 0 {
			nodes = append(nodes, lp)
		}
	}
	return nodes, nil
}

// listNode reads one quicklist node: a ziplist (QUICKLIST), or a
// container number and a listpack or plain element (QUICKLIST_2).
func (d *Decoder) listNode(t byte) (listpack.Listpack, error) {
	container := uint64(containerPacked)
	if t == typeListQuicklist2 {
		var err error
		if container, err = d.r.count("a list node container"); err != nil {
			return nil, err
		}
		if container != containerPacked && container != containerPlain {
			return nil, rdbCorruptf("list node container %d is neither plain (1) nor packed (2)", container)
		}
	}
	b, err := d.r.str("a list node")
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, rdbCorruptf("list node is empty")
	}
	switch {
	case container == containerPlain:
		return listpack.New().Append(b), nil
	case t == typeListQuicklist:
		return ziplistToListpack(b)
	}
	if err := listpack.Validate(b, true); err != nil {
		return nil, corruptWrap(err, "list node")
	}
	return listpack.Listpack(b), nil
}

// linkedList reads the oldest list encoding, a count and the elements.
func (d *Decoder) linkedList() (List, error) {
	n, err := d.r.count("a list's length")
	if err != nil {
		return nil, err
	}
	if err := d.r.countFits(n, 1, "a list's length"); err != nil {
		return nil, err
	}
	return d.repack(func(push func([]byte)) error {
		for range n {
			v, err := d.r.str("a list element")
			if err != nil {
				return err
			}
			push(v)
		}
		return nil
	})
}

// repack pushes the values gen produces onto a quicklist with the
// decoder's fill and returns copies of its nodes.
func (d *Decoder) repack(gen func(push func([]byte)) error) (List, error) {
	q := listpack.NewQuicklist(d.opt.ListFill)
	if err := gen(func(v []byte) { q.PushTail(v) }); err != nil {
		return nil, err
	}
	var nodes List
	q.Nodes(func(lp listpack.Listpack) bool {
		nodes = append(nodes, bytes.Clone(lp))
		return true
	})
	return nodes, nil
}

// ziplistValues validates zl and calls push with each element as text.
func ziplistValues(zl []byte, push func([]byte)) error {
	var num []byte
	return walkZiplist(zl, func(e zlEntry) {
		if e.isInt {
			num = strconv.AppendInt(num[:0], e.n, 10)
			push(num)
			return
		}
		push(e.str)
	})
}

// ziplistToListpack converts a ziplist node to a listpack with the same
// elements.
func ziplistToListpack(zl []byte) (listpack.Listpack, error) {
	lp := listpack.New().Grow(len(zl))
	err := walkZiplist(zl, func(e zlEntry) {
		if e.isInt {
			lp = lp.AppendInt(e.n)
		} else {
			lp = lp.Append(e.str)
		}
	})
	return lp, err
}
