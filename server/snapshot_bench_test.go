package server

import (
	"fmt"
	"testing"
)

// BenchmarkWillChange: what the write path pays in willChange, with no
// snapshot open, and with one open whose walk has not reached the key:
// the first write to each key hands its value over (the slow path, once
// per key and snapshot), later ones compare one epoch. The snapshot is
// taken again, untimed, once every key has been written.
func BenchmarkWillChange(b *testing.B) {
	const keys = 1 << 16
	for _, walking := range []bool{false, true} {
		b.Run(fmt.Sprintf("walking=%v", walking), func(b *testing.B) {
			s := newTestServer(b, nil)
			db := s.shard.dbs[0]
			names := make([]string, keys)
			objects := make([]*Object, keys)
			for i := range names {
				names[i] = fmt.Sprintf("key:%d", i)
				objects[i] = &Object{value: []byte("value")}
				db.insert(names[i], objects[i])
			}
			var snap *Snapshot
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if i%keys == 0 {
					b.StopTimer()
					if snap != nil {
						snap.Close()
					}
					s.shard.mu.Lock()
					s.shard.epoch++ // every key is old again: the next write to it is its first
					s.shard.mu.Unlock()
					if walking {
						snap = s.Freeze(nil)
					}
					b.StartTimer()
				}
				s.shard.willChange(db, names[i%keys], objects[i%keys])
			}
			if snap != nil {
				snap.Close()
			}
		})
	}
}
