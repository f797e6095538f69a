package radix

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/google/btree"
)

// The benchmarks compare Tree with github.com/google/btree's BTreeG on the
// same 1,000,000 sequential stream IDs (ms increasing every 10 keys, seq
// 0..9) with pointer values, each pair in the same run:
//
//	go test -run XXX -bench . -benchmem ./radix/

const benchN = 1_000_000

type btItem struct {
	key [16]byte
	val *pendingEntry
}

func btLess(a, b btItem) bool { return bytes.Compare(a.key[:], b.key[:]) < 0 }

func newBTree() *btree.BTreeG[btItem] { return btree.NewG(32, btLess) }

var bench struct {
	once  sync.Once
	keys  [][]byte
	items []btItem
	order []int // random permutation of key indexes
	radix *Tree[*pendingEntry]
	bt    *btree.BTreeG[btItem]
}

func benchSetup() {
	bench.once.Do(func() {
		pe := &pendingEntry{}
		bench.keys = make([][]byte, benchN)
		bench.items = make([]btItem, benchN)
		bench.radix = &Tree[*pendingEntry]{}
		bench.bt = newBTree()
		for i := range bench.keys {
			k := id(1_700_000_000_000+uint64(i/10), uint64(i%10))
			bench.keys[i] = k
			bench.items[i] = btItem{val: pe}
			copy(bench.items[i].key[:], k)
			bench.radix.Insert(k, pe)
			bench.bt.ReplaceOrInsert(bench.items[i])
		}
		bench.order = rand.New(rand.NewPCG(5, 6)).Perm(benchN)
	})
}

func BenchmarkInsertTail(b *testing.B) {
	benchSetup()
	pe := &pendingEntry{}
	b.Run("radix", func(b *testing.B) {
		b.ReportAllocs()
		var tr *Tree[*pendingEntry]
		for i := 0; i < b.N; i++ {
			j := i % benchN
			if j == 0 {
				tr = &Tree[*pendingEntry]{}
			}
			tr.Insert(bench.keys[j], pe)
		}
	})
	b.Run("btree", func(b *testing.B) {
		b.ReportAllocs()
		var bt *btree.BTreeG[btItem]
		for i := 0; i < b.N; i++ {
			j := i % benchN
			if j == 0 {
				bt = newBTree()
			}
			bt.ReplaceOrInsert(bench.items[j])
		}
	})
}

func BenchmarkGetRandom(b *testing.B) {
	benchSetup()
	b.Run("radix", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, ok := bench.radix.Get(bench.keys[bench.order[i%benchN]]); !ok {
				b.Fatal("missing")
			}
		}
	})
	b.Run("btree", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, ok := bench.bt.Get(bench.items[bench.order[i%benchN]]); !ok {
				b.Fatal("missing")
			}
		}
	})
}

// seekTarget returns a random key below the last 100, so every seek has
// 100 keys to visit.
func seekTarget(i int) int { return 100 + bench.order[i%benchN]%(benchN-200) }

func BenchmarkSeekGE100(b *testing.B) {
	benchSetup()
	b.Run("radix", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			it := bench.radix.Seek(GE, bench.keys[seekTarget(i)])
			for n := 0; n < 100 && it.Next(); n++ {
			}
		}
	})
	b.Run("radix-reuse", func(b *testing.B) {
		b.ReportAllocs()
		it := bench.radix.Seek(First, nil)
		for i := 0; i < b.N; i++ {
			it.Seek(GE, bench.keys[seekTarget(i)])
			for n := 0; n < 100 && it.Next(); n++ {
			}
		}
	})
	b.Run("btree", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			n := 0
			bench.bt.AscendGreaterOrEqual(bench.items[seekTarget(i)], func(btItem) bool {
				n++
				return n < 100
			})
		}
	})
}

func BenchmarkSeekLE100(b *testing.B) {
	benchSetup()
	b.Run("radix", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			it := bench.radix.Seek(LE, bench.keys[seekTarget(i)])
			for n := 0; n < 100 && it.Prev(); n++ {
			}
		}
	})
	b.Run("radix-reuse", func(b *testing.B) {
		b.ReportAllocs()
		it := bench.radix.Seek(First, nil)
		for i := 0; i < b.N; i++ {
			it.Seek(LE, bench.keys[seekTarget(i)])
			for n := 0; n < 100 && it.Prev(); n++ {
			}
		}
	})
	b.Run("btree", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			n := 0
			bench.bt.DescendLessOrEqual(bench.items[seekTarget(i)], func(btItem) bool {
				n++
				return n < 100
			})
		}
	})
}

// BenchmarkDeleteHead deletes keys in ascending order, as trimming a stream
// or acknowledging a PEL in order does, refilling the tree (untimed) when
// it runs empty.
func BenchmarkDeleteHead(b *testing.B) {
	benchSetup()
	b.Run("radix", func(b *testing.B) {
		b.ReportAllocs()
		var tr *Tree[*pendingEntry]
		for i := 0; i < b.N; i++ {
			j := i % benchN
			if j == 0 {
				b.StopTimer()
				tr = &Tree[*pendingEntry]{}
				for _, k := range bench.keys {
					tr.Insert(k, nil)
				}
				b.StartTimer()
			}
			if _, ok := tr.Delete(bench.keys[j]); !ok {
				b.Fatal("missing")
			}
		}
	})
	b.Run("btree", func(b *testing.B) {
		b.ReportAllocs()
		var bt *btree.BTreeG[btItem]
		for i := 0; i < b.N; i++ {
			j := i % benchN
			if j == 0 {
				b.StopTimer()
				bt = newBTree()
				for _, it := range bench.items {
					bt.ReplaceOrInsert(it)
				}
				b.StartTimer()
			}
			if _, ok := bt.Delete(bench.items[j]); !ok {
				b.Fatal("missing")
			}
		}
	})
}
