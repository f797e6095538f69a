package persistence

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/redstream/redstream/listpack"
)

// compressedListOps applies the same list commands to q and, through do,
// to another server: pushes of repetitive values, a large value (unless
// large is false), and changes in the middle, so that inner nodes are
// compressed, opened and compressed again.
func compressedListOps(q *listpack.Quicklist, large bool, do func(args ...string)) {
	for i := range 3000 {
		v := fmt.Sprintf("value-%04d-%s", i%50, strings.Repeat("x", 80))
		do("RPUSH", "l", v)
		q.PushTail([]byte(v))
	}
	if large {
		big := strings.Repeat("large value ", 1000)
		do("LINSERT", "l", "BEFORE", "value-0025-"+strings.Repeat("x", 80), big)
		q.Insert(25, []byte(big))
	}
	do("LSET", "l", "1500", "changed")
	q.Set(1500, []byte("changed"))
	do("LREM", "l", "3", "value-0007-"+strings.Repeat("x", 80))
	q.RemoveValue([]byte("value-0007-"+strings.Repeat("x", 80)), 3)
}

// TestCompressedListRoundTrip writes a list with compressed nodes and
// reads it back: the nodes are stored as LZF strings even with
// rdbcompression off (as Redis stores them), and decode to the same
// elements.
func TestCompressedListRoundTrip(t *testing.T) {
	q := listpack.NewQuicklist(listpack.DefaultFill)
	q.SetCompressDepth(1)
	compressedListOps(q, true, func(...string) {})
	if q.CompressedNodes() < q.NodeCount()-3 {
		t.Fatalf("%d of %d nodes compressed", q.CompressedNodes(), q.NodeCount())
	}
	file := encodeEntries(t, &EncodeOptions{NoCompression: true}, []*Entry{{Key: []byte("l"), Value: liveList{q}}})
	raw := encodeEntries(t, &EncodeOptions{NoCompression: true}, []*Entry{{Key: []byte("l"), Value: List(q.Listpacks())}})
	if len(file)*4 > len(raw) {
		t.Fatalf("file with compressed nodes has %d bytes, uncompressed %d: nodes not written as LZF", len(file), len(raw))
	}
	es, _, err := decodeAll(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got, want [][]byte
	for _, lp := range es[0].Value.(List) {
		for off := lp.First(); off >= 0; off = lp.Next(off) {
			got = append(got, lp.Get(off, nil))
		}
	}
	q.Iter(false, func(_ int, v []byte) bool { want = append(want, bytes.Clone(v)); return true })
	if len(got) != len(want) || !bytes.Equal(bytes.Join(got, nil), bytes.Join(want, nil)) {
		t.Fatalf("decoded %d elements, want %d, or they differ", len(got), len(want))
	}
}

// TestCompressedListMatchesRedis runs the same commands on redis-server
// with list-compress-depth 1 and on a quicklist of depth 1, and compares
// the RDB bytes of the key: the same nodes, compressed into the same LZF
// bytes. Redis 7.0 stores the large value packed, not plain, so it is
// left out here.
func TestCompressedListMatchesRedis(t *testing.T) {
	needRedis(t)
	rs := startRedis(t, t.TempDir(), "--list-compress-depth", "1")
	q := listpack.NewQuicklist(listpack.DefaultFill)
	q.SetCompressDepth(1)
	compressedListOps(q, false, func(args ...string) { rs.must(t, args...) })
	ours := encodeEntries(t, nil, []*Entry{{Key: []byte("l"), Value: liveList{q}}})
	compareKeyBytes(t, rs.save(t), ours)
}
