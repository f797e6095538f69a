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

// Restore replaces the whole keyspace with what load puts, while the
// server serves: the new databases are built aside, without the lock, and
// swapped in under it in one step, as a Raft follower installing its
// leader's snapshot must (DESIGN principle 5; hashicorp/raft's
// FSM.Restore discards all prior state). Clients see the old keyspace,
// then the new one, never a mix. Keys expired by now are dropped, as a
// load drops them. After the swap, transactions WATCHing a key of a
// replaced database fail, and clients blocked on a key are served if the
// new keyspace has what they wait for.
//
// A snapshot being walked when the swap comes (a BGSAVE) still yields
// the keyspace as it was when taken: its walk goes on over the old
// databases, which nothing changes any more.
func (sh *Shard) Restore(load func(put Put) error) error {
	sh.mu.Lock()
	sh.epoch++ // the new objects are newer than any snapshot taken so far
	ver, now, n, depth := sh.epoch, sh.now(), len(sh.dbs), sh.node.cfg.ListCompressDepth
	seeds := make([]maphash.Seed, n)
	for i, db := range sh.dbs {
		seeds[i] = db.seed
	}
	sh.mu.Unlock()

	fresh := make([]restoredDB, n)
	for i := range fresh {
		fresh[i] = restoredDB{keys: map[string]*Object{}, expires: map[string]int64{}, order: btree.NewG(32, scanLess), aged: newAgedSet(), seed: seeds[i]}
	}
	var delayed []delayKey // streams with delayed entries, for the index
	put := func(db int, key string, value any, expireAt int64) error {
		if db < 0 || db >= n {
			return fmt.Errorf("server: snapshot has database %d, only %d configured (databases)", db, n)
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
	if sn := sh.snap; sn != nil && sn.epoch >= ver {
		sn.restoredVer = ver // it began during the build: the new objects are not in it
	}
	for i, db := range sh.dbs {
		for key := range db.watchers {
			sh.node.touchWatched(db, []byte(key))
		}
		db.keys, db.expires, db.order, db.aged, db.used = fresh[i].keys, fresh[i].expires, fresh[i].order, fresh[i].aged, fresh[i].used
		for key := range db.waiters {
			sh.signalReady(db, []byte(key))
		}
	}
	sh.resetDelays(delayed)
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
