package radix_test

import (
	"encoding/binary"
	"fmt"

	"github.com/redstream/redstream/radix"
)

// streamID encodes a stream ID as a 16-byte big-endian key.
func streamID(ms, seq uint64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, ms)
	binary.BigEndian.PutUint64(k[8:], seq)
	return k
}

func show(k []byte) string {
	return fmt.Sprintf("%d-%d", binary.BigEndian.Uint64(k), binary.BigEndian.Uint64(k[8:]))
}

func Example() {
	var t radix.Tree[string]
	t.Insert(streamID(1000, 0), "a")
	t.Insert(streamID(1000, 1), "b")
	t.Insert(streamID(1005, 0), "c")
	t.Insert(streamID(1009, 3), "d")

	// XRANGE 1000-1 +
	for it := t.Seek(radix.GE, streamID(1000, 1)); it.Next(); {
		fmt.Println(show(it.Key()), it.Value())
	}
	// Output:
	// 1000-1 b
	// 1005-0 c
	// 1009-3 d
}

// Both directions start from the key the seek found.
func ExampleTree_Seek() {
	var t radix.Tree[int]
	for i, k := range []string{"apple", "banana", "cherry", "date"} {
		t.Insert([]byte(k), i)
	}
	it := t.Seek(radix.GE, []byte("blueberry"))
	for it.Prev() {
		fmt.Println(string(it.Key()))
	}
	it = t.Seek(radix.LT, []byte("cherry"))
	for it.Next() {
		fmt.Println(string(it.Key()))
	}
	// Output:
	// cherry
	// banana
	// apple
	// banana
	// cherry
	// date
}

// Trimming a stream: delete while iterating.
func ExampleIterator_Next() {
	var t radix.Tree[int]
	for ms := uint64(1); ms <= 5; ms++ {
		t.Insert(streamID(ms, 0), int(ms))
	}
	for it := t.Seek(radix.First, nil); it.Next() && it.Value() <= 3; {
		t.Delete(it.Key())
	}
	for k, v := range t.All() {
		fmt.Println(show(k), v)
	}
	// Output:
	// 4-0 4
	// 5-0 5
}
