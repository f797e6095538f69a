package server

import (
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redstream/redstream/stream"
)

// fillDB writes 300 keys of three types into database db.
func fillDB(c *pipeConn, db int) {
	c.do("SELECT", fmt.Sprint(db))
	for i := range 300 {
		k := fmt.Sprintf("k%d", i)
		switch i % 3 {
		case 0:
			c.do("SET", k, fmt.Sprintf("%d@%d", i, db))
		case 1:
			c.do("RPUSH", k, "a", fmt.Sprint(db), fmt.Sprint(i))
		default:
			c.do("XADD", "s"+k, "*", "f", fmt.Sprint(i))
		}
	}
}

// dbWrite is a random write of the kinds a walked database sees: sets,
// deletes, list pushes and pops, stream adds and trims, and expiries
// (keys given 1 ms to live, which writes or the expire cycle then delete).
func dbWrite(rng *rand.Rand) []string {
	k, v := fmt.Sprintf("k%d", rng.IntN(300)), fmt.Sprint(rng.IntN(100))
	cmds := [][]string{
		{"SET", k, v}, {"DEL", k}, {"RPUSH", k, v}, {"LPOP", k}, {"XADD", "s" + k, "*", "f", v},
		{"XTRIM", "s" + k, "MAXLEN", "1"}, {"PEXPIRE", k, "1"}, {"SET", k, v, "PX", "1"}, {"DEL", "s" + k},
	}
	return cmds[rng.IntN(len(cmds))]
}

// dbAt renders database db's keys not expired at t, as keyspaceAt does.
// Lock should be held.
func dbAt(s *Server, db int, t int64) map[string]string {
	out := map[string]string{}
	for id, v := range keyspaceAt(s, t) {
		if key, ok := strings.CutPrefix(id, fmt.Sprintf("%d ", db)); ok {
			out[key] = v
		}
	}
	return out
}

// freezeDB takes a snapshot of database db and the model of what it must
// yield: a copy of db's keys at the instant.
func freezeDB(t *testing.T, s *Server, db int) (*Snapshot, map[string]string) {
	t.Helper()
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	sn, err := s.shard.freezeLocked([]int{db}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sn, dbAt(s, db, sn.Time)
}

// pulledWalk is a snapshot's walk of one database, read an entry at a time.
type pulledWalk struct {
	next func() (SnapshotEntry, bool)
	stop func()
	got  map[string]string
	done bool
}

func pullWalk(sn *Snapshot, db int) *pulledWalk {
	next, stop := iter.Pull(sn.Entries(db))
	return &pulledWalk{next: next, stop: stop, got: map[string]string{}}
}

// step reads up to n entries; it reports whether the walk goes on.
func (w *pulledWalk) step(t *testing.T, n int) bool {
	t.Helper()
	for range n {
		e, ok := w.next()
		if !ok {
			w.done = true
			return false
		}
		if _, dup := w.got[e.Key]; dup {
			t.Fatalf("the walk yielded %s twice", e.Key)
		}
		w.got[e.Key] = fmt.Sprintf("%s exp=%d", renderValue(e.Value), e.ExpireAt)
	}
	return true
}

// checkWalk compares what a walk yielded with its model.
func checkWalk(t *testing.T, name string, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("%s: %s yielded %q, want %q (its value at the snapshot's instant)", name, k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s yielded %d keys, its database had %d at the instant", name, len(got), len(want))
	}
}

// TestSnapshotsOfDisjointDBs: two snapshots open at once, of database 0
// and of database 1, each walked a few entries at a time while writes hit
// both databases between the steps: each yields exactly its database at
// its own instant, and nothing of the other (PARTITIONS.md §1: groups
// snapshot their databases at the same time).
func TestSnapshotsOfDisjointDBs(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := newTestServer(t, nil)
			c0, c1 := connect(t, s), connect(t, s)
			fillDB(c0, 0)
			fillDB(c1, 1)
			rng := rand.New(rand.NewPCG(seed, 14))
			writes := func() {
				for range rng.IntN(4) {
					c0.do(dbWrite(rng)...)
					c1.do(dbWrite(rng)...)
				}
			}

			snapA, wantA := freezeDB(t, s, 0)
			a := pullWalk(snapA, 0)
			defer a.stop()
			a.step(t, 10) // A's walk is under way when B is taken
			writes()
			snapB, wantB := freezeDB(t, s, 1)
			b := pullWalk(snapB, 1)
			defer b.stop()
			for !a.done || !b.done {
				if !a.done {
					a.step(t, 1+rng.IntN(20))
				}
				writes()
				if !b.done {
					b.step(t, 1+rng.IntN(20))
				}
				writes()
			}
			checkWalk(t, "the snapshot of database 0", a.got, wantA)
			checkWalk(t, "the snapshot of database 1", b.got, wantB)
			for _, other := range []struct {
				sn *Snapshot
				db int
			}{{snapA, 1}, {snapB, 0}} {
				if len(other.sn.DBs) != 1 {
					t.Fatalf("a snapshot of one database lists %d", len(other.sn.DBs))
				}
				for e := range other.sn.Entries(other.db) {
					t.Fatalf("a snapshot yielded %s of database %d, which it does not cover", e.Key, other.db)
				}
			}
			s.shard.mu.Lock()
			released := s.shard.snap == nil && s.shard.dbs[0].walk == nil && s.shard.dbs[1].walk == nil
			s.shard.mu.Unlock()
			if !released {
				t.Fatal("after both walks the server still hands values to a snapshot")
			}
		})
	}
}

// TestFreezeBusyDB: a snapshot of a database another snapshot still
// walks is refused, and the refusal changes nothing: the open walk
// yields all it should. Another database can be taken meanwhile, and
// once the open snapshot is closed its database can be taken again.
func TestFreezeBusyDB(t *testing.T) {
	s := newTestServer(t, nil)
	c := connect(t, s)
	fillDB(c, 1)
	fillDB(c, 0)
	snap, want := freezeDB(t, s, 0)
	s.shard.mu.Lock()
	epoch := s.shard.epoch
	s.shard.mu.Unlock()

	for _, dbs := range [][]int{{0}, {1, 0}} {
		if sn, err := s.FreezeDBs(dbs, nil); !errors.Is(err, ErrSnapshotBusy) || sn != nil {
			t.Fatalf("FreezeDBs(%v) while database 0 is walked: %v, %v; want ErrSnapshotBusy", dbs, sn, err)
		}
	}
	s.shard.mu.Lock()
	unchanged := s.shard.epoch == epoch && s.shard.dbs[1].walk == nil && len(s.shard.snap) == 1
	s.shard.mu.Unlock()
	if !unchanged {
		t.Fatal("a refused FreezeDBs changed the snapshot state")
	}
	for _, dbs := range [][]int{{-1}, {16}, {1, 1}} {
		if _, err := s.FreezeDBs(dbs, nil); err == nil || errors.Is(err, ErrSnapshotBusy) {
			t.Fatalf("FreezeDBs(%v) = %v, want an error naming the bad index", dbs, err)
		}
	}

	c.do("SET", "k0", "after the snapshot")
	other, err := s.FreezeDBs([]int{1}, nil)
	if err != nil {
		t.Fatalf("FreezeDBs of another database while database 0 is walked: %v", err)
	}
	other.Close()
	w := pullWalk(snap, 0)
	for w.step(t, 50) {
	}
	w.stop()
	checkWalk(t, "the snapshot of database 0", w.got, want)

	again, err := s.FreezeDBs([]int{0}, nil)
	if err != nil {
		t.Fatalf("FreezeDBs of database 0 after its walk ended: %v", err)
	}
	if _, err := s.FreezeDBs([]int{0}, nil); !errors.Is(err, ErrSnapshotBusy) {
		t.Fatalf("FreezeDBs of database 0 while a snapshot of it is open, unread: %v, want ErrSnapshotBusy", err)
	}
	again.Close()
	if sn, err := s.FreezeDBs([]int{0}, nil); err != nil {
		t.Fatalf("FreezeDBs of database 0 after Close: %v", err)
	} else {
		sn.Close()
	}
}

// TestRestoreDBsBesideWalk: RestoreDBs of database 1 while a snapshot of
// database 0 is walked replaces database 1 alone: database 0's keys and
// the walk's result are as they were, database 1 holds exactly the
// restored keys, a put for database 0 is refused, and a restore whose
// load fails changes nothing.
func TestRestoreDBsBesideWalk(t *testing.T) {
	s := newTestServer(t, nil)
	c0, c1 := connect(t, s), connect(t, s)
	fillDB(c0, 0)
	fillDB(c1, 1)
	snap, want := freezeDB(t, s, 0)
	w := pullWalk(snap, 0)
	defer w.stop()
	w.step(t, 100) // past the first chunks
	c0.do("SET", "k3", "written during the walk")

	s.shard.mu.Lock()
	db0 := dbAt(s, 0, s.shard.now())
	db1 := dbAt(s, 1, s.shard.now())
	s.shard.mu.Unlock()
	failed := errors.New("the load failed")
	err := s.RestoreDBs([]int{1}, func(put Put) error {
		put(1, "half", []byte("built"), 0)
		return failed
	})
	s.shard.mu.Lock()
	db1After := dbAt(s, 1, s.shard.now())
	s.shard.mu.Unlock()
	if !errors.Is(err, failed) || fmt.Sprint(db1After) != fmt.Sprint(db1) {
		t.Fatalf("a restore whose load failed returned %v and left database 1 with %d keys, want the load's error and %d keys", err, len(db1After), len(db1))
	}

	var refused error
	err = s.RestoreDBs([]int{1}, func(put Put) error {
		refused = put(0, "k0", []byte("not restored"), 0)
		if err := put(1, "r1", []byte("one"), 0); err != nil {
			return err
		}
		return put(1, "r2", []byte("two"), time.Now().Add(time.Hour).UnixMilli())
	})
	if err != nil {
		t.Fatal(err)
	}
	s.shard.mu.Lock()
	db0After := dbAt(s, 0, s.shard.now())
	restored := dbAt(s, 1, s.shard.now())
	used := s.shard.dbs[1].used
	s.shard.mu.Unlock()
	checkWalk(t, "database 0 after the restore of database 1", db0After, db0)
	if refused == nil {
		t.Fatal("a put for database 0 in a restore of database 1 was accepted")
	}
	if len(restored) != 2 || !strings.HasPrefix(restored["r1"], `string "one"`) || !strings.HasPrefix(restored["r2"], `string "two"`) {
		t.Fatalf("database 1 after its restore holds %v, want r1 and r2 alone", restored)
	}
	if got := c1.do("DBSIZE"); got != ":2\r\n" || used <= 0 || used > 1000 {
		t.Fatalf("database 1 after its restore: DBSIZE %q, %d bytes used; want 2 keys and their bytes alone", got, used)
	}

	c0.do("DEL", "k6")
	c1.do("SET", "r1", "changed")
	for w.step(t, 50) {
	}
	checkWalk(t, "the snapshot of database 0 walked across the restore of database 1", w.got, want)
}

// TestRestoreDBsKeepsOtherDelays: the delayed-entries index keeps the
// streams of the databases a restore leaves alone, drops those of the
// database it replaces, and queues what it installs.
func TestRestoreDBsKeepsOtherDelays(t *testing.T) {
	s := newTestServer(t, nil)
	c := connect(t, s)
	c.do("XADD", "kept", "DELAY", "100000", "*", "f", "v")
	c.do("SELECT", "1")
	c.do("XADD", "replaced", "DELAY", "100000", "*", "f", "v")
	st := stream.New()
	if _, err := st.AddDelayed(uint64(time.Now().UnixMilli()+100000), [][]byte{[]byte("f"), []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if err := s.RestoreDBs([]int{1}, func(put Put) error { return put(1, "restored", st, 0) }); err != nil {
		t.Fatal(err)
	}
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	var queued []delayKey
	for _, it := range s.shard.delays.items {
		queued = append(queued, it.k)
	}
	if len(queued) != 2 || s.shard.delays.at[delayKey{0, "kept"}] == 0 || s.shard.delays.at[delayKey{1, "restored"}] == 0 {
		t.Fatalf("the index after RestoreDBs([1]) holds %v, want {0 kept} and {1 restored}", queued)
	}
}

// TestRestoreDBsDetachesWalk: a restore of a database that a snapshot
// walks leaves that walk on the old keys, and writers to the new keys
// hand it nothing; the database is free for a new snapshot at once,
// which yields the restored keys.
func TestRestoreDBsDetachesWalk(t *testing.T) {
	s := newTestServer(t, nil)
	c := connect(t, s)
	fillDB(c, 0)
	old, want := freezeDB(t, s, 0)
	w := pullWalk(old, 0)
	defer w.stop()
	w.step(t, 100)
	err := s.RestoreDBs([]int{0}, func(put Put) error {
		if err := put(0, "k0", []byte("restored"), 0); err != nil {
			return err
		}
		return put(0, "k200", []byte("restored"), 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	fresh, wantFresh := freezeDB(t, s, 0)
	nw := pullWalk(fresh, 0)
	defer nw.stop()
	c.do("SET", "k0", "written after")
	c.do("DEL", "k200")
	for w.step(t, 50) {
	}
	for nw.step(t, 50) {
	}
	checkWalk(t, "the snapshot walked across the restore", w.got, want)
	checkWalk(t, "the snapshot taken after the restore", nw.got, wantFresh)
	if len(wantFresh) != 2 {
		t.Fatalf("the model of the restored database has %d keys, want 2", len(wantFresh))
	}
}
