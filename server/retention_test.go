package server

import (
	"slices"
	"testing"

	"github.com/redstream/redstream/stream"
)

func agedKeys(db *DB) []string {
	var out []string
	db.aged.Ascend(func(k string) bool { out = append(out, k); return true })
	return out
}

// nextAged goes round the set a slice at a time, every key once a round,
// whatever the slice size.
func TestNextAgedGoesRound(t *testing.T) {
	s := newTestServer(t, nil)
	db := s.shard.dbs[0]
	keys := []string{"", "a", "b", "c", "d", "e", "f"}
	for _, k := range keys {
		db.aged.ReplaceOrInsert(k)
	}
	for _, n := range []int{1, 2, 3, 7, 10} {
		seen := map[string]int{}
		for range len(keys) * 6 / min(n, len(keys)) {
			for _, k := range db.nextAged(n) {
				seen[k]++
			}
		}
		for _, k := range keys {
			if seen[k] != 6 {
				t.Fatalf("slices of %d: key %q seen %d times in 6 rounds: %v", n, k, seen[k], seen)
			}
		}
	}
	if got := db.nextAged(0); got != nil {
		t.Fatalf("nextAged(0) = %v", got)
	}
}

// A Raft snapshot installed by Restore brings the age limits of its
// streams into the new keyspace's set, and only theirs.
func TestRestoreTracksAgedStreams(t *testing.T) {
	s := newTestServer(t, nil)
	c := connect(t, s)
	c.do("XADD", "before", "*", "f", "v")
	c.do("XCFGSET", "before", "MAXAGE", "10")
	aged, plain := stream.New(), stream.New()
	aged.SetRetention(stream.Retention{MaxAge: 1000, Refs: stream.Acked})
	err := s.Restore(func(put Put) error {
		if err := put(0, "aged", aged, 0); err != nil {
			return err
		}
		return put(0, "plain", plain, 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	if got := agedKeys(s.shard.dbs[0]); !slices.Equal(got, []string{"aged"}) {
		t.Fatalf("aged set after Restore: %v", got)
	}
}
