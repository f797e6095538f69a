package persistence

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// benchFile is a file of one 100k-entry stream (1000 nodes) and a list of
// 100k elements, about 4 MB.
func benchFile(b *testing.B) ([]*Entry, []byte) {
	var es []sEntry
	for i := range 100_000 {
		es = append(es, sEntry{id: sid(uint64(1_700_000_000_000+i), 0),
			fields: []string{"event", "click", "user", fmt.Sprint(i % 977), "n", fmt.Sprint(i)}})
	}
	var list List
	for n := 0; n < 100_000; n += 500 {
		lp := lpOf()
		for i := n; i < n+500; i++ {
			lp = lp.Append([]byte(fmt.Sprintf("job-%08d", i)))
		}
		list = append(list, lp)
	}
	ents := []*Entry{{Key: []byte("events"), Value: mustStream(buildStream(es, 100))}, {Key: []byte("jobs"), Value: list}}
	return ents, encodeEntries(b, nil, ents)
}

func BenchmarkDecode(b *testing.B) {
	_, file := benchFile(b)
	b.SetBytes(int64(len(file)))
	for b.Loop() {
		d := NewDecoder(bytes.NewReader(file), nil)
		for {
			if _, err := d.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	ents, file := benchFile(b)
	b.SetBytes(int64(len(file)))
	for b.Loop() {
		e := NewEncoder(io.Discard, nil)
		for _, ent := range ents {
			if err := e.WriteEntry(ent); err != nil {
				b.Fatal(err)
			}
		}
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
