package listpack

import (
	"bytes"
	"math/rand"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// value16 returns a 16-byte, non-numeric value that differs per i, like a
// small job ID pushed onto a queue.
func value16(buf []byte, i int) []byte {
	buf = append(buf[:0], "job:"...)
	s := strconv.Itoa(i)
	buf = append(buf, "000000000000"[len(s)%13:]...)
	buf = append(buf, s...)
	return buf[:16]
}

// rssBytes reads the process's resident set size from /proc (Linux); it
// returns 0 where that is not available.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// memoryPerElement pushes n 16-byte values and returns the growth of the
// live heap (HeapInuse after a GC) and of RSS, per element.
func memoryPerElement(n int) (heap, rss float64) {
	var before, after runtime.MemStats
	debug.FreeOSMemory()
	runtime.ReadMemStats(&before)
	rss0 := rssBytes()
	q := NewQuicklist(DefaultFill)
	buf := make([]byte, 0, 32)
	for i := range n {
		q.PushTail(value16(buf, i))
	}
	debug.FreeOSMemory()
	runtime.ReadMemStats(&after)
	rss1 := rssBytes()
	runtime.KeepAlive(q)
	return float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / float64(n),
		float64(rss1-rss0) / float64(n)
}

// TestMemoryPerElement checks the headline memory figure: a 1,000,000
// element list of 16-byte values. Redis stores each as 18 listpack bytes
// in 8 KiB nodes, about 18.1 bytes an element; we must stay within 1.5x.
func TestMemoryPerElement(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 1M elements")
	}
	heap, rss := memoryPerElement(1_000_000)
	t.Logf("1M x 16-byte values: %.2f heap bytes/element, %.2f RSS bytes/element", heap, rss)
	if heap > 27 {
		t.Fatalf("%.2f bytes per element, want <= 27 (1.5x Redis)", heap)
	}
}

func BenchmarkMemoryPerElement(b *testing.B) {
	for range b.N {
		heap, rss := memoryPerElement(1_000_000)
		b.ReportMetric(heap, "heap-B/elem")
		b.ReportMetric(rss, "rss-B/elem")
	}
}

func BenchmarkPushTail(b *testing.B) {
	q := NewQuicklist(DefaultFill)
	v := []byte("0123456789abcdef")
	b.ReportAllocs()
	for range b.N {
		q.PushTail(v)
	}
}

func BenchmarkPushHead(b *testing.B) {
	q := NewQuicklist(DefaultFill)
	v := []byte("0123456789abcdef")
	b.ReportAllocs()
	for range b.N {
		q.PushHead(v)
	}
}

func BenchmarkPopHead(b *testing.B) {
	q := NewQuicklist(DefaultFill)
	v := []byte("0123456789abcdef")
	for range b.N {
		q.PushTail(v)
	}
	var dst []byte
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		dst, _ = q.PopHeadAppend(dst[:0])
	}
}

// BenchmarkQueue is the work-queue pattern: push at the tail, pop at the
// head, with a standing backlog.
func BenchmarkQueue(b *testing.B) {
	q := NewQuicklist(DefaultFill)
	v := []byte("0123456789abcdef")
	for range 10000 {
		q.PushTail(v)
	}
	var dst []byte
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		q.PushTail(v)
		dst, _ = q.PopHeadAppend(dst[:0])
	}
}

func benchList(n int) *Quicklist {
	q := NewQuicklist(DefaultFill)
	buf := make([]byte, 0, 32)
	for i := range n {
		q.PushTail(value16(buf, i))
	}
	return q
}

func BenchmarkIndex(b *testing.B) {
	q := benchList(100_000)
	r := rand.New(rand.NewSource(1))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, ok := q.Index(r.Intn(100_000)); !ok {
			b.Fatal("index out of range")
		}
	}
}

func BenchmarkRange100(b *testing.B) {
	q := benchList(100_000)
	r := rand.New(rand.NewSource(1))
	var n int
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := r.Intn(100_000 - 100)
		q.Range(start, start+99, func(v []byte) bool { n += len(v); return true })
	}
	if n == 0 {
		b.Fatal("no elements")
	}
}

func BenchmarkListpackIterate(b *testing.B) {
	lp := New()
	for i := range 400 {
		lp = lp.Append([]byte(strconv.Itoa(i * 37)))
	}
	scratch := make([]byte, 0, IntBufLen)
	var n int
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for off := lp.First(); off >= 0; off = lp.Next(off) {
			n += len(lp.Get(off, scratch))
		}
	}
	_ = bytes.MinRead + n
}
