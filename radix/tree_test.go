package radix

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
)

func id(ms, seq uint64) []byte {
	var k [16]byte
	binary.BigEndian.PutUint64(k[:], ms)
	binary.BigEndian.PutUint64(k[8:], seq)
	return k[:]
}

func mustCheck[V any](t *testing.T, tr *Tree[V]) {
	t.Helper()
	if err := tr.check(); err != nil {
		t.Fatalf("check: %v\n%s", err, tr.dump())
	}
}

func keysOf[V any](tr *Tree[V]) []string {
	var ks []string
	for k := range tr.All() {
		ks = append(ks, string(k))
	}
	return ks
}

func TestNilAndZeroTree(t *testing.T) {
	var nilTree *Tree[int]
	if nilTree.Len() != 0 {
		t.Fatal("nil Len")
	}
	if _, ok := nilTree.Get([]byte("a")); ok {
		t.Fatal("nil Get")
	}
	if _, _, ok := nilTree.Min(); ok {
		t.Fatal("nil Min")
	}
	if _, _, ok := nilTree.Max(); ok {
		t.Fatal("nil Max")
	}
	if _, ok := nilTree.Delete([]byte("a")); ok {
		t.Fatal("nil Delete")
	}
	for op := First; op <= LT; op++ {
		it := nilTree.Seek(op, []byte("a"))
		if it.Next() || it.Prev() || it.Key() != nil {
			t.Fatalf("nil Seek(%v) yielded", op)
		}
	}
	for range nilTree.All() {
		t.Fatal("nil All yielded")
	}
	var zero Tree[int]
	if zero.Len() != 0 || zero.Seek(First, nil).Next() {
		t.Fatal("zero tree not empty")
	}
	zero.Insert([]byte("x"), 1)
	if v, ok := zero.Get([]byte("x")); !ok || v != 1 {
		t.Fatal("zero tree Insert/Get")
	}
}

func TestInsertGetDelete(t *testing.T) {
	var tr Tree[int]
	keys := []string{"", "a", "ab", "abc", "abd", "b", "ba", "\x00", "\xff\xff", "abcdefghijklmnop"}
	for i, k := range keys {
		if _, replaced := tr.Insert([]byte(k), i); replaced {
			t.Fatalf("Insert(%q) replaced", k)
		}
		mustCheck(t, &tr)
	}
	if tr.Len() != len(keys) {
		t.Fatalf("Len %d", tr.Len())
	}
	for i, k := range keys {
		if v, ok := tr.Get([]byte(k)); !ok || v != i {
			t.Fatalf("Get(%q) = %d,%v", k, v, ok)
		}
	}
	for _, k := range []string{"abe", "ac", "c", "\x00\x00", "abcd", "abcdefghijklmno"} {
		if _, ok := tr.Get([]byte(k)); ok {
			t.Fatalf("Get(%q) found", k)
		}
	}
	if old, replaced := tr.Insert([]byte("ab"), 100); !replaced || old != 2 {
		t.Fatalf("replace = %d,%v", old, replaced)
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	if got := keysOf(&tr); !slices.Equal(got, want) {
		t.Fatalf("order %q, want %q", got, want)
	}
	for _, k := range keys {
		if _, ok := tr.Delete([]byte(k)); !ok {
			t.Fatalf("Delete(%q) missed", k)
		}
		if _, ok := tr.Delete([]byte(k)); ok {
			t.Fatalf("Delete(%q) twice", k)
		}
		mustCheck(t, &tr)
	}
	if tr.Len() != 0 || tr.root != nil {
		t.Fatalf("not empty after deleting all: %s", tr.dump())
	}
}

// TestInsertCopiesKey makes sure the tree does not keep the caller's slice.
func TestInsertCopiesKey(t *testing.T) {
	var tr Tree[int]
	k := []byte("hello")
	tr.Insert(k, 1)
	k2 := []byte("help")
	tr.Insert(k2, 2)
	copy(k, "XXXXX")
	copy(k2, "YYYY")
	if v, ok := tr.Get([]byte("hello")); !ok || v != 1 {
		t.Fatal("key bytes shared with caller")
	}
	if v, ok := tr.Get([]byte("help")); !ok || v != 2 {
		t.Fatal("key bytes shared with caller")
	}
}

// TestSplit builds the trees drawn in doc.go: "roam", "roams", "roast",
// then a split after inserting "rope", then the merge when it goes away.
func TestSplit(t *testing.T) {
	var tr Tree[int]
	tr.Insert([]byte("roam"), 1)
	tr.Insert([]byte("roams"), 2)
	tr.Insert([]byte("roast"), 3)
	compressed := `root prefix="roa"
  ['m'] prefix="" val=1
    ['s'] bare=2
  ['s'] prefix="t" val=3
`
	if got := tr.shape(); got != compressed {
		t.Fatalf("compressed:\n%s\nwant:\n%s", got, compressed)
	}
	tr.Insert([]byte("rope"), 4)
	split := `root prefix="ro"
  ['a'] prefix=""
    ['m'] prefix="" val=1
      ['s'] bare=2
    ['s'] prefix="t" val=3
  ['p'] prefix="e" val=4
`
	if got := tr.shape(); got != split {
		t.Fatalf("after split:\n%s\nwant:\n%s", got, split)
	}
	mustCheck(t, &tr)
	tr.Delete([]byte("rope"))
	if got := tr.shape(); got != compressed {
		t.Fatalf("after delete:\n%s\nwant:\n%s", got, compressed)
	}
	tr.Delete([]byte("roam"))
	want := `root prefix="roa"
  ['m'] prefix="s" val=2
  ['s'] prefix="t" val=3
`
	if got := tr.shape(); got != want {
		t.Fatalf("after deleting roam:\n%s\nwant:\n%s", got, want)
	}
}

// TestKindsGrowAndShrink walks one node through every kind and back.
func TestKindsGrowAndShrink(t *testing.T) {
	var tr Tree[int]
	kind := func() string { return fmt.Sprintf("%T", tr.root) }
	wantKinds := map[int]string{1: "*radix.leaf[int]", 2: "*radix.node4[int]", 5: "*radix.node16[int]", 17: "*radix.node48[int]", 49: "*radix.node256[int]"}
	for i := 0; i < 256; i++ {
		tr.Insert([]byte{'p', byte(i)}, i)
		if w, ok := wantKinds[i+1]; ok && kind() != w {
			t.Fatalf("%d keys: root is %s, want %s", i+1, kind(), w)
		}
	}
	mustCheck(t, &tr)
	wantKinds = map[int]string{shrink256: "*radix.node48[int]", shrink48: "*radix.node16[int]", shrink16: "*radix.node4[int]", 1: "*radix.leaf[int]"}
	for i := 255; i >= 0; i-- {
		tr.Delete([]byte{'p', byte(i)})
		mustCheck(t, &tr)
		if w, ok := wantKinds[i]; ok && kind() != w {
			t.Fatalf("%d keys: root is %s, want %s", i, kind(), w)
		}
	}
}

func collect(it *Iterator[int], fwd bool, n int) []string {
	var out []string
	for len(out) < n {
		var ok bool
		if fwd {
			ok = it.Next()
		} else {
			ok = it.Prev()
		}
		if !ok {
			break
		}
		out = append(out, string(it.Key()))
	}
	return out
}

func TestSeekSemantics(t *testing.T) {
	var tr Tree[int]
	for i, k := range []string{"b", "d", "dd", "f"} {
		tr.Insert([]byte(k), i)
	}
	cases := []struct {
		op        SeekOp
		key       string
		next, prv []string
	}{
		{First, "", []string{"b", "d", "dd", "f"}, []string{"b"}},
		{Last, "", []string{"f"}, []string{"f", "dd", "d", "b"}},
		{GE, "d", []string{"d", "dd", "f"}, []string{"d", "b"}},
		{GE, "c", []string{"d", "dd", "f"}, []string{"d", "b"}},
		{GE, "g", nil, nil},
		{GT, "d", []string{"dd", "f"}, []string{"dd", "d", "b"}},
		{GT, "", []string{"b", "d", "dd", "f"}, []string{"b"}},
		{LE, "d", []string{"d", "dd", "f"}, []string{"d", "b"}},
		{LE, "de", []string{"dd", "f"}, []string{"dd", "d", "b"}},
		{LE, "a", nil, nil},
		{LT, "d", []string{"b", "d", "dd", "f"}, []string{"b"}},
		{LT, "\xff", []string{"f"}, []string{"f", "dd", "d", "b"}},
	}
	for _, c := range cases {
		if got := collect(tr.Seek(c.op, []byte(c.key)), true, 10); !slices.Equal(got, c.next) {
			t.Errorf("Seek(%v,%q)+Next: %q, want %q", c.op, c.key, got, c.next)
		}
		if got := collect(tr.Seek(c.op, []byte(c.key)), false, 10); !slices.Equal(got, c.prv) {
			t.Errorf("Seek(%v,%q)+Prev: %q, want %q", c.op, c.key, got, c.prv)
		}
	}
}

func TestIteratorDirectionChangeAndExhaustion(t *testing.T) {
	var tr Tree[int]
	for i := 0; i < 5; i++ {
		tr.Insert([]byte{byte('a' + i)}, i)
	}
	it := tr.Seek(GE, []byte("b"))
	var got []string
	for _, fwd := range []bool{true, true, true, false, false, true} {
		var ok bool
		if fwd {
			ok = it.Next()
		} else {
			ok = it.Prev()
		}
		if ok {
			got = append(got, string(it.Key()))
		}
	}
	if want := []string{"b", "c", "d", "c", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	it = tr.Seek(Last, nil)
	it.Next()
	if it.Next() || it.Prev() || it.Next() {
		t.Fatal("exhausted iterator moved again")
	}
	if it.Key() != nil || it.Value() != 0 {
		t.Fatal("exhausted iterator has a key")
	}
	it.Seek(First, nil) // reuse
	if !it.Next() || string(it.Key()) != "a" {
		t.Fatal("re-seek failed")
	}
}

func TestIteratorSurvivesModification(t *testing.T) {
	var tr Tree[int]
	for i := uint64(0); i < 100; i++ {
		tr.Insert(id(i/10, i%10), int(i))
	}
	// Delete each key as it is visited, as a trim would.
	it := tr.Seek(First, nil)
	n := 0
	for it.Next() {
		if it.Value() != n {
			t.Fatalf("at %x value %d, want %d", it.Key(), it.Value(), n)
		}
		tr.Delete(it.Key())
		n++
	}
	if n != 100 || tr.Len() != 0 {
		t.Fatalf("visited %d, left %d", n, tr.Len())
	}
	// A pending seek is recomputed when the tree changed since Seek.
	tr.Insert([]byte("m"), 1)
	it = tr.Seek(GE, []byte("a"))
	tr.Insert([]byte("c"), 2)
	if !it.Next() || string(it.Key()) != "c" {
		t.Fatalf("pending seek not redone: %q", it.Key())
	}
	// Insert behind the iterator, then go back.
	tr.Insert([]byte("b"), 3)
	if !it.Prev() || string(it.Key()) != "b" {
		t.Fatalf("Prev after insert: %q", it.Key())
	}
}

func TestSetValue(t *testing.T) {
	var tr Tree[int]
	for i := 0; i < 40; i++ {
		tr.Insert([]byte{'k', byte(i)}, i)
	}
	tr.Insert([]byte("k"), -1) // a node's own value
	for it := tr.Seek(First, nil); it.Next(); {
		it.SetValue(it.Value() * 10)
	}
	for k, v := range tr.All() {
		want := -10
		if len(k) == 2 {
			want = int(k[1]) * 10
		}
		if v != want {
			t.Fatalf("%q = %d, want %d", k, v, want)
		}
	}
	it := tr.Seek(GE, []byte("k\x05"))
	it.Next()
	tr.Delete([]byte("k\x06")) // stale path: SetValue falls back to Insert
	it.SetValue(7)
	if v, _ := tr.Get([]byte("k\x05")); v != 7 {
		t.Fatalf("stale SetValue: %d", v)
	}
	mustCheck(t, &tr)
}

func TestMinMax(t *testing.T) {
	var tr Tree[int]
	for i := uint64(0); i < 1000; i++ {
		tr.Insert(id(1000+i*7, i%3), int(i))
	}
	k, v, ok := tr.Min()
	if !ok || !bytes.Equal(k, id(1000, 0)) || v != 0 {
		t.Fatalf("Min %x %d", k, v)
	}
	k, v, ok = tr.Max()
	if !ok || !bytes.Equal(k, id(1000+999*7, 0)) || v != 999 {
		t.Fatalf("Max %x %d", k, v)
	}
	tr.Insert(nil, 5)
	if k, v, _ := tr.Min(); len(k) != 0 || v != 5 {
		t.Fatalf("Min with empty key: %q %d", k, v)
	}
}

// TestSequentialIDs builds a stream-like index and trims it from the head.
func TestSequentialIDs(t *testing.T) {
	var tr Tree[int]
	const n = 50000
	for i := uint64(0); i < n; i++ {
		tr.Insert(id(1700000000000+i/10, i%10), int(i))
	}
	mustCheck(t, &tr)
	it := tr.Seek(LE, id(1700000000000+2500, 3))
	if !it.Next() || it.Value() != 25003 {
		t.Fatalf("LE seek: %d", it.Value())
	}
	it = tr.Seek(LT, id(1700000000000+2500, 0))
	if !it.Prev() || it.Value() != 24999 || !it.Prev() || it.Value() != 24998 {
		t.Fatalf("LT seek: %d", it.Value())
	}
	for i := uint64(0); i < n-1; i++ {
		if _, ok := tr.Delete(id(1700000000000+i/10, i%10)); !ok {
			t.Fatalf("Delete %d", i)
		}
		if i%997 == 0 {
			mustCheck(t, &tr)
		}
	}
	if k, v, _ := tr.Min(); v != n-1 || !bytes.Equal(k, id(1700000000000+(n-1)/10, (n-1)%10)) {
		t.Fatalf("last key %x=%d", k, v)
	}
	if _, ok := tr.root.(*leaf[int]); !ok {
		t.Fatalf("single key not a leaf: %s", tr.dump())
	}
}

func TestSeekOpString(t *testing.T) {
	got := []string{}
	for op := First; op <= LT+1; op++ {
		got = append(got, op.String())
	}
	if want := []string{"^", "$", ">=", ">", "<=", "<", "SeekOp(?)"}; !slices.Equal(got, want) {
		t.Fatalf("%q", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("invalid op did not panic")
		}
	}()
	(&Tree[int]{}).Seek(LT+1, nil)
}

// TestMergeHighEdgeByte is a regression test: merging a node into its only
// child joins prefix + edge byte + child prefix, and an edge byte >= 0x80
// must be copied as a byte, not converted as a rune.
func TestMergeHighEdgeByte(t *testing.T) {
	var tr Tree[int]
	tr.Insert([]byte("a\x9abc"), 1)
	tr.Insert([]byte("a\x9abd"), 2)
	tr.Insert([]byte("a\x01"), 3)
	tr.Insert([]byte("a\xffz"), 4)
	tr.Delete([]byte("a\x01"))
	tr.Delete([]byte("a\xffz")) // root merges with the 0x9a child
	mustCheck(t, &tr)
	if got := tr.root.base().prefix; got != "a\x9ab" {
		t.Fatalf("merged prefix %q", got)
	}
	for k, want := range map[string]int{"a\x9abc": 1, "a\x9abd": 2} {
		if v, ok := tr.Get([]byte(k)); !ok || v != want {
			t.Fatalf("Get(%q) = %d,%v", k, v, ok)
		}
	}
	tr.Delete([]byte("a\x9abd")) // the node becomes a leaf via a bare value
	if v, ok := tr.Get([]byte("a\x9abc")); !ok || v != 1 || tr.root.base().prefix != "a\x9abc" {
		t.Fatalf("Get after leaf merge = %d,%v, root %q", v, ok, tr.root.base().prefix)
	}
}

// TestSeekExactSubtreeEdge is a regression test: a GE seek whose last key
// byte matches an edge leading to a subtree must descend into it, not read
// the slot as a bare value.
func TestSeekExactSubtreeEdge(t *testing.T) {
	var tr Tree[int]
	tr.Insert([]byte("ab"), 1)
	tr.Insert([]byte("abc"), 2)
	tr.Insert([]byte("ax"), 3)
	for _, op := range []SeekOp{GE, LE} {
		it := tr.Seek(op, []byte("ab"))
		if !it.Next() || string(it.Key()) != "ab" || it.Value() != 1 {
			t.Fatalf("Seek(%v, ab) = %q %d", op, it.Key(), it.Value())
		}
	}
	it := tr.Seek(GT, []byte("ab"))
	if !it.Next() || string(it.Key()) != "abc" {
		t.Fatalf("Seek(>, ab) = %q", it.Key())
	}
}
