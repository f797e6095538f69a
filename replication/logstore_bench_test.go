package replication

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	boltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// BenchmarkLogStore compares the two Raft log stores issue 13 names on
// what a leader does per batch: StoreLogs of a batch of entries, which
// each store makes durable (fsync) before it returns. The figure that
// matters is ns/op for one batch (one group commit), at the batch sizes a
// loaded group sees.
//
//	go test -run '^$' -bench LogStore -benchtime 2000x ./replication/
func BenchmarkLogStore(b *testing.B) {
	stores := map[string]func(dir string) (raft.LogStore, func()){
		"raft-wal": func(dir string) (raft.LogStore, func()) {
			meta := &metadb.BoltMetaDB{}
			w, err := wal.Open(dir, wal.WithMetaStore(meta))
			if err != nil {
				b.Fatal(err)
			}
			return w, func() { w.Close(); meta.Close() }
		},
		"raft-boltdb": func(dir string) (raft.LogStore, func()) {
			s, err := boltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
			if err != nil {
				b.Fatal(err)
			}
			return s, func() { s.Close() }
		},
	}
	for _, name := range []string{"raft-wal", "raft-boltdb"} {
		for _, batch := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("%s/batch=%d", name, batch), func(b *testing.B) {
				dir := b.TempDir()
				os.MkdirAll(dir, 0o755)
				store, closeStore := stores[name](dir)
				defer closeStore()
				data := make([]byte, 200) // an entry of a few XADDs
				index := uint64(1)
				b.SetBytes(int64(batch * len(data)))
				b.ResetTimer()
				for range b.N {
					logs := make([]*raft.Log, batch)
					for i := range logs {
						logs[i] = &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}
						index++
					}
					if err := store.StoreLogs(logs); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
