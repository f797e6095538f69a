package server

import (
	"fmt"
	"hash/maphash"

	"github.com/google/btree"
	"github.com/redstream/redstream/listpack"
)

// Put installs one key of a snapshot being restored (see Restore).
type Put func(db int, key string, value any, expireAt int64) error

// Restore replaces the node's shard's keyspace (Shard.Restore).
func (s *Server) Restore(load func(put Put) error) error { return s.shard.Restore(load) }

// RestoreDBs replaces some of the node's shard's databases
// (Shard.RestoreDBs).
func (s *Server) RestoreDBs(dbs []int, load func(put Put) error) error {
	return s.shard.RestoreDBs(dbs, load)
}

// Restore replaces the whole keyspace with what load puts: RestoreDBs of
// every database.
func (sh *Shard) Restore(load func(put Put) error) error {
	return sh.RestoreDBs(sh.allDBs(), load) // the number of databases is fixed at start
}

// RestoreDBs replaces the databases dbs with what load puts, while the
// server serves: the new databases are built aside, without the lock, and
// swapped in under it in one step, as a Raft follower installing its
// leader's snapshot must (DESIGN principle 5; hashicorp/raft's
// FSM.Restore discards all prior state). Clients see the old databases,
// then the new ones, never a mix. Keys expired by now are dropped, as a
// load drops them. After the swap, transactions WATCHing a key of a
// replaced database fail, and clients blocked on a key are served if the
// new database has what they wait for. The other databases, and any
// snapshot walking them, are left as they were. A put for a database not
// in dbs fails, and so does the restore, which then changes nothing.
//
// A snapshot walking a replaced database when the swap comes (a BGSAVE)
// still yields it as it was when taken: its walk goes on over the old
// keys, which nothing changes any more, so the swap detaches it from the
// database and writers to the new keys hand it nothing.
func (sh *Shard) RestoreDBs(dbs []int, load func(put Put) error) error {
	sh.mu.Lock()
	if err := sh.checkDBs(dbs); err != nil {
		sh.mu.Unlock()
		return err
	}
	// The new objects are as new as a write now: older than any snapshot
	// taken after the swap, which takes them; the snapshots walking the
	// old databases are detached from them at the swap.
	ver, now, n, depth := sh.epoch, sh.now(), len(sh.dbs), sh.node.cfg.ListCompressDepth
	fresh := make([]*restoredDB, n) // nil for a database not replaced
	for _, i := range dbs {
		fresh[i] = &restoredDB{keys: map[string]*Object{}, expires: map[string]int64{}, order: btree.NewG(32, scanLess), aged: newAgedSet(), seed: sh.dbs[i].seed}
	}
	sh.mu.Unlock()

	var delayed []delayKey // streams with delayed entries, for the index
	put := func(db int, key string, value any, expireAt int64) error {
		if db < 0 || db >= n {
			return fmt.Errorf("server: snapshot has database %d, only %d configured (databases)", db, n)
		}
		if fresh[db] == nil {
			return fmt.Errorf("server: snapshot has database %d, which is not being restored", db)
		}
		if !loadable(value) {
			return fmt.Errorf("server: cannot restore %q: unsupported value %T", key, value)
		}
		if expireAt != 0 && expireAt <= now {
			return nil
		}
		compressLoaded(value, depth) // outside the lock, like the rest of the build
		fresh[db].put(key, &Object{value: value, expireAt: expireAt, access: now, ver: ver})
		if hasDelayed(value) {
			delayed = append(delayed, delayKey{db, key})
		}
		return nil
	}
	if err := load(put); err != nil {
		return err
	}

	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, i := range dbs {
		db := sh.dbs[i]
		for key := range db.watchers {
			sh.node.touchWatched(db, []byte(key))
		}
		db.keys, db.expires, db.order, db.aged, db.used = fresh[i].keys, fresh[i].expires, fresh[i].order, fresh[i].aged, fresh[i].used
		db.walk = nil // a walk of it goes on over the old keys, which no writer reaches
		for key := range db.waiters {
			sh.signalReady(db, []byte(key))
		}
	}
	sh.resetDelays(dbs, delayed)
	sh.node.serveReady()
	sh.node.commit()
	return nil
}

// restoredDB is a database being built by Restore.
type restoredDB struct {
	keys    map[string]*Object
	expires map[string]int64
	order   *btree.BTreeG[scanEntry]
	aged    *btree.BTreeG[string] // streams with an age limit (a replaced key may stay: stale entries are fine)
	seed    maphash.Seed
	used    int64
}

func (r *restoredDB) put(key string, o *Object) {
	if old, dup := r.keys[key]; !dup {
		r.order.ReplaceOrInsert(scanEntry{orderHash(r.seed, key), key})
	} else {
		r.used -= old.mem
	}
	o.mem = memoryUsage(key, o)
	r.used += o.mem
	r.keys[key] = o
	delete(r.expires, key)
	if o.expireAt != 0 {
		r.expires[key] = o.expireAt
	}
	if hasAgeLimit(o) {
		r.aged.ReplaceOrInsert(key)
	}
}

// loadable reports whether a snapshot value is one the server holds.
func loadable(v any) bool {
	switch v.(type) {
	case []byte, *listpack.Quicklist:
		return true
	}
	return loadableExt(v)
}
