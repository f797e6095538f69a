package server

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/stream"
)

// renderValue renders a live or frozen value for comparison.
func renderValue(v any) string {
	switch v := v.(type) {
	case []byte:
		return fmt.Sprintf("string %q", v)
	case *listpack.Quicklist:
		var b strings.Builder
		b.WriteString("list [")
		v.Iter(false, func(_ int, e []byte) bool { fmt.Fprintf(&b, "%q ", e); return true })
		return b.String() + "]"
	case *stream.Stream:
		return fmt.Sprintf("stream len=%d first=%v last=%v added=%d", v.Len(), v.FirstID(), v.LastID(), v.EntriesAdded())
	}
	return fmt.Sprintf("%T", v)
}

// keyspaceAt renders every key not expired at t, by "db key". Lock
// should be held.
func keyspaceAt(s *Server, t int64) map[string]string {
	out := map[string]string{}
	for _, db := range s.shard.dbs {
		for k, o := range db.keys {
			if o.expireAt == 0 || o.expireAt > t {
				out[fmt.Sprintf("%d %s", db.index, k)] = fmt.Sprintf("%s exp=%d", renderValue(o.value), o.expireAt)
			}
		}
	}
	return out
}

// snapshotWrites are the writes a model run draws from while a snapshot
// is walked: changes in place, deletions, replacements, moves between
// keys, expiries and, rarely, a whole database flushed.
func snapshotWrite(rng *rand.Rand) []string {
	k, k2 := fmt.Sprintf("k%d", rng.IntN(400)), fmt.Sprintf("k%d", rng.IntN(400))
	v := fmt.Sprint(rng.IntN(100))
	cmds := [][]string{
		{"RPUSH", k, v}, {"LPOP", k}, {"SET", k, v}, {"DEL", k}, {"RENAME", k, k2}, {"COPY", k, k2, "REPLACE"},
		{"APPEND", k, v}, {"LSET", k, "0", v}, {"PEXPIRE", k, "100000"}, {"PERSIST", k}, {"GETDEL", k},
		{"XADD", "s" + k, "*", "f", v}, {"XTRIM", "s" + k, "MAXLEN", "1"}, {"LMOVE", k, k2, "LEFT", "RIGHT"},
		{"SELECT", fmt.Sprint(rng.IntN(2))}, {"FLUSHDB"},
	}
	for {
		cmd := cmds[rng.IntN(len(cmds))]
		if cmd[0] != "FLUSHDB" || rng.IntN(400) == 0 {
			return cmd
		}
	}
}

// TestSnapshotWalkModel: a snapshot walked a chunk at a time, with random
// writes between every key it yields, yields exactly the keyspace as it
// was when taken — every key once, with its value of then — and releases
// the writers when the walk ends (issue 12 §2: the walk replaced a freeze
// that held the lock over every key).
func TestSnapshotWalkModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := newTestServer(t, nil)
			c := connect(t, s)
			rng := rand.New(rand.NewPCG(seed, 12))
			for db := range 2 {
				c.do("SELECT", fmt.Sprint(db))
				for i := range 400 {
					k := fmt.Sprintf("k%d", i)
					switch i % 3 {
					case 0:
						c.do("SET", k, fmt.Sprint(i))
					case 1:
						c.do("RPUSH", k, "a", "b", fmt.Sprint(i))
					default:
						c.do("XADD", "s"+k, "*", "f", fmt.Sprint(i))
					}
				}
			}
			c.do("SELECT", "0")

			s.shard.mu.Lock()
			snap := s.shard.FreezeLocked(nil)
			want := keyspaceAt(s, snap.Time)
			s.shard.mu.Unlock()

			got := map[string]string{}
			for _, sdb := range snap.DBs {
				next, stop := iter.Pull(snap.Entries(sdb.Index))
				for {
					e, ok := next()
					if !ok {
						break
					}
					id := fmt.Sprintf("%d %s", sdb.Index, e.Key)
					if _, dup := got[id]; dup {
						t.Fatalf("the walk yielded %s twice", id)
					}
					got[id] = fmt.Sprintf("%s exp=%d", renderValue(e.Value), e.ExpireAt)
					for range rng.IntN(3) {
						c.do(snapshotWrite(rng)...)
					}
				}
				stop()
			}
			for id, w := range want {
				if got[id] != w {
					t.Fatalf("%s: the walk yielded %q, want %q (its value when the snapshot was taken)", id, got[id], w)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("the walk yielded %d keys, the keyspace had %d", len(got), len(want))
			}
			s.shard.mu.Lock()
			released := s.shard.snap == nil
			s.shard.mu.Unlock()
			if !released {
				t.Fatal("after the whole walk the server still hands values to the snapshot")
			}
		})
	}
}

// TestSnapshotCloseReleases: a reader that stops early and closes the
// snapshot releases the writers, and the next snapshot (a new epoch)
// walks everything again.
func TestSnapshotCloseReleases(t *testing.T) {
	s := newTestServer(t, nil)
	c := connect(t, s)
	for i := range 500 {
		c.do("SET", fmt.Sprintf("k%d", i), "v")
	}
	snap := s.Freeze(nil)
	for range snap.Entries(0) {
		break // one key, then stop
	}
	c.do("SET", "k1", "changed")
	snap.Close()
	s.shard.mu.Lock()
	released := s.shard.snap == nil
	s.shard.mu.Unlock()
	if !released {
		t.Fatal("Close did not release the writers")
	}
	n := 0
	second := s.Freeze(nil)
	for e := range second.Entries(0) {
		n++
		if e.Key == "k1" && string(e.Value.([]byte)) != "changed" {
			t.Fatalf("the second snapshot has k1 = %q", e.Value)
		}
	}
	if n != 500 {
		t.Fatalf("the second snapshot yielded %d keys, want 500", n)
	}
}

// TestFreezeLogsPendingFirst: records applied before a snapshot but not
// yet handed to the log (the event loop commits once per pass, after
// every client's turn) go to the log before the snapshot's `during` hook
// starts the AOF's new increment. Otherwise they would be both in the
// snapshot and in the increment after it, and a replay of the two would
// apply them twice (a stream entry added twice, at a new ID).
func TestFreezeLogsPendingFirst(t *testing.T) {
	log := &recordingLog{}
	s := newTestServer(t, log)
	s.shard.mu.Lock()
	s.shard.logDirect(0, s.shard.now(), []byte("DEL"), []byte("k"))
	logged := -1
	sn := s.shard.FreezeLocked(func() { logged = len(log.records) })
	pending := len(s.shard.pending)
	s.shard.mu.Unlock()
	sn.Close()
	if logged != 1 {
		t.Fatalf("when the new increment began the log held %d records, want 1 (the one applied before the snapshot)", logged)
	}
	if pending != 0 {
		t.Fatalf("%d records still pending after the snapshot", pending)
	}
}
