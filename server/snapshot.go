package server

import (
	"fmt"
	"iter"
	"runtime"
	"time"

	"github.com/google/btree"
	"github.com/redstream/redstream/listpack"
)

// Snapshot is the keyspace at one instant, which another goroutine reads
// at leisure while the server keeps serving writes (DESIGN principle 5).
//
// Taking one costs O(1) under the lock, whatever the number of keys: it
// records an epoch. Every object carries the epoch of its last write
// (Object.ver). The snapshot's reader then walks the live databases a
// chunk of keys per hold of the lock (Entries), taking each key not
// written since the epoch as a frozen view; and a write to a key the walk
// has not reached first hands the key's value, as it was, to the snapshot
// (willChange). So every key that existed at the instant is produced
// once, with its value of then, and no key made later is. This is
// Dragonfly's versioned snapshot. The walk resumes from a cursor in the
// database's ordered key index, as SCAN does (db.go): keys never
// move in that order, so every key present at the instant and not yet
// handed over is reached once.
//
//	take (lock, O(1))   epoch E = sh.epoch; sh.epoch++; sh.snap = this
//	write key k         if k.ver <= E and k not yet taken: k's frozen value → saved
//	                    k.ver = sh.epoch
//	walk (lock/chunk)   for the next keys k: skip if k.ver > E or k taken;
//	                    else take k's frozen value; then hand out saved
//
// Frozen values cost no copy: list and stream nodes are copy-on-write and
// strings are never changed in place. One snapshot is walked at a time, as
// Redis runs one child at a time (cmd_persist.go schedules the other). A
// snapshot read with the lock held throughout (SAVE, the shutdown's save:
// FreezeHeld) needs none of this and walks the maps as they are.
type Snapshot struct {
	Time int64 // the record clock when it was taken, ms
	DBs  []SnapshotDB
	// Dirty is rdb_changes_since_last_save at the moment of the snapshot:
	// once it is saved, that many changes are on disk.
	Dirty int64

	shard   *Shard
	epoch   uint32
	held    bool      // the reader holds the lock throughout: no epochs, no chunks
	walks   []*dbWalk // by database index; nil for a database that was empty
	running int       // walks not finished; at 0 writers stop handing values over
	// restoredVer is the version of the objects a Restore installed while
	// this snapshot was being walked: they were not there when it was
	// taken, so writers never hand them over (restore.go).
	restoredVer uint32
}

// SnapshotDB is one database of a snapshot, with its counts when it was
// taken (hints, as RDB's RESIZEDB: keys that expire meanwhile are left
// out of Entries).
type SnapshotDB struct {
	Index   int
	Keys    int
	Expires int
}

// SnapshotEntry is one key. Value is []byte (a string) or a read-only
// *listpack.Quicklist view (a list); other types add their views here.
type SnapshotEntry struct {
	Key      string
	Value    any
	ExpireAt int64 // unix ms; 0 = none
}

// dbWalk is the walk over one database's keys. Its fields are guarded by
// the server's lock.
type dbWalk struct {
	// The database's map and index as they were taken: FLUSHDB replaces
	// them with new ones, and these then stay as they were.
	keys   map[string]*Object
	order  *btree.BTreeG[scanEntry]
	cursor scanEntry // the last key walked
	begun  bool
	done   bool
	saved  []SnapshotEntry // values writers handed over before changing them
}

// walkChunk is how many keys a walk looks at per hold of the lock: about
// 30 µs of a writer's wait, so a snapshot of any size adds little to
// anybody's latency.
const walkChunk = 64

// Freeze takes a snapshot of the node's shard (Shard.Freeze).
func (s *Server) Freeze(during func()) *Snapshot { return s.shard.Freeze(during) }

// Freeze takes a snapshot for a reader that runs beside the server (see
// FreezeLocked).
func (sh *Shard) Freeze(during func()) *Snapshot {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.FreezeLocked(during)
}

// FreezeLocked takes a snapshot to be read beside the server: BGSAVE,
// save points, BGREWRITEAOF. during, if not nil, runs in the same
// critical section: the AOF starts a new increment there, so that the
// snapshot plus that increment is exactly the state from then on. The
// reader must read every database's Entries to the end or Close it, so
// that writers stop handing values over. Lock should be held.
func (sh *Shard) FreezeLocked(during func()) *Snapshot {
	start := time.Now()
	// The pass's records so far are in the snapshot: they belong to the
	// log before the new increment, not in it, or a replay of snapshot
	// plus increment would apply them twice.
	sh.logPending()
	sn := sh.newSnapshot(false)
	if during != nil {
		during()
	}
	// The pause a snapshot costs writers, as Redis reports a fork's.
	sh.node.stats.lastFreezeUsec = time.Since(start).Microseconds()
	return sn
}

// FreezeHeld takes a snapshot for a reader that holds the lock until it
// is done (SAVE, the shutdown's save): nothing changes meanwhile, so it
// reads the live values. Lock should be held.
func (sh *Shard) FreezeHeld() *Snapshot { return sh.newSnapshot(true) }

// newSnapshot takes a snapshot. Lock should be held.
func (sh *Shard) newSnapshot(held bool) *Snapshot {
	sn := &Snapshot{Time: sh.now(), Dirty: sh.dirty, shard: sh, held: held, walks: make([]*dbWalk, len(sh.dbs))}
	if !held {
		if sh.snap != nil {
			sh.snap.closeLocked() // one at a time; the persister's scheduling keeps this from happening
		}
		sn.epoch = sh.epoch
		sh.epoch++ // wraps after 4 billion snapshots: years of one a second
		sh.snap = sn
	}
	for _, db := range sh.dbs {
		if len(db.keys) == 0 {
			continue
		}
		sn.DBs = append(sn.DBs, SnapshotDB{Index: db.index, Keys: len(db.keys), Expires: len(db.expires)})
		sn.walks[db.index] = &dbWalk{keys: db.keys, order: db.order}
		sn.running++
	}
	if sn.running == 0 && sh.snap == sn {
		sh.snap = nil
	}
	return sn
}

// Entries yields database index's keys as they were when the snapshot was
// taken (index is a SnapshotDB's Index). Unless the snapshot is held, it
// takes the lock for a chunk of keys at a time, and yields without it.
func (sn *Snapshot) Entries(index int) iter.Seq[SnapshotEntry] {
	return func(yield func(SnapshotEntry) bool) {
		w := sn.walks[index]
		if w == nil {
			return
		}
		var batch []SnapshotEntry
		for {
			batch = sn.chunk(w, batch[:0])
			if !sn.held {
				// A writer that waited for the lock was woken by the
				// unlock, onto this P: let it run before the next chunk
				// takes the lock again (Go's mutex would otherwise let
				// this loop barge in, and the writer wait 1 ms).
				runtime.Gosched()
			}
			if len(batch) == 0 && w.done {
				return
			}
			for _, e := range batch {
				if !yield(e) {
					return
				}
			}
			clear(batch) // let the values go as the reader writes them
		}
	}
}

// chunk walks on over w's keys and returns what it took, and what writers
// handed over meanwhile; nothing means the walk is over.
func (sn *Snapshot) chunk(w *dbWalk, out []SnapshotEntry) []SnapshotEntry {
	if !sn.held {
		sn.shard.mu.Lock()
		defer sn.shard.mu.Unlock()
	}
	if w.done {
		return append(out, sn.takeSaved(w)...)
	}
	n := 0
	w.order.AscendGreaterOrEqual(w.cursor, func(e scanEntry) bool {
		if w.begun && e == w.cursor {
			return true // walked in the last chunk
		}
		if n++; n > walkChunk {
			return false
		}
		w.cursor, w.begun = e, true
		out = sn.take(e.key, w.keys[e.key], out)
		return true
	})
	if n <= walkChunk {
		sn.endWalk(w)
	}
	return append(out, sn.takeSaved(w)...)
}

// take appends key's value to out if the walk still needs it. Lock
// should be held (or the snapshot held).
func (sn *Snapshot) take(key string, o *Object, out []SnapshotEntry) []SnapshotEntry {
	value := o.value
	if !sn.held {
		if o.ver > sn.epoch || o.seen == sn.epoch {
			return out // written since: its value of then was handed over (saved)
		}
		o.seen = sn.epoch
		value = frozenValue(value)
	}
	if o.expireAt == 0 || o.expireAt > sn.Time { // expired: Redis does not save it either
		out = append(out, SnapshotEntry{Key: key, Value: value, ExpireAt: o.expireAt})
	}
	return out
}

// takeSaved returns, and forgets, what writers handed w over. Lock
// should be held.
func (sn *Snapshot) takeSaved(w *dbWalk) []SnapshotEntry {
	saved := w.saved
	w.saved = nil
	return saved
}

// endWalk ends a walk; after the last one, writers hand nothing over any
// more. Lock should be held (or the snapshot held).
func (sn *Snapshot) endWalk(w *dbWalk) {
	if w.done {
		return
	}
	w.done = true
	w.keys, w.order = nil, nil
	if sn.running--; sn.running == 0 && sn.shard.snap == sn {
		sn.shard.snap = nil
	}
}

// Close ends the snapshot: a reader that stops before reading everything
// must call it, or writers go on handing it values. Reading every
// database to the end closes it too; Close is then a no-op.
func (sn *Snapshot) Close() {
	if sn.held {
		sn.closeLocked()
		return
	}
	sn.shard.mu.Lock()
	defer sn.shard.mu.Unlock()
	sn.closeLocked()
}

// closeLocked is Close. Lock should be held.
func (sn *Snapshot) closeLocked() {
	for _, w := range sn.walks {
		if w != nil {
			sn.endWalk(w)
			w.saved = nil
		}
	}
}

// willChange is called before key's object o in db changes or goes: if
// the snapshot being walked still needs o's value, it gets it now. It
// costs one comparison once o has been written since the last snapshot
// began. Lock should be held.
func (sh *Shard) willChange(db *DB, key string, o *Object) {
	if o.ver == sh.epoch {
		return
	}
	if sn := sh.snap; sn != nil && o.ver <= sn.epoch && o.seen != sn.epoch && o.ver != sn.restoredVer {
		o.seen = sn.epoch
		if w := sn.walks[db.index]; w != nil && (o.expireAt == 0 || o.expireAt > sn.Time) {
			w.saved = append(w.saved, SnapshotEntry{Key: key, Value: frozenValue(o.value), ExpireAt: o.expireAt})
		}
	}
	o.ver = sh.epoch
}

// frozenValue returns a view of v that later writes cannot change.
func frozenValue(v any) any {
	switch v := v.(type) {
	case []byte:
		return v // strings are replaced, never changed in place (see SETRANGE)
	case *listpack.Quicklist:
		return v.Snapshot()
	}
	return frozenValueExt(v)
}

// Load installs a value read from a snapshot file (RDB). Loading restores
// state; it is not a write, so nothing is logged. A key already expired at
// the time of loading is dropped, as Redis does. The server must not be
// serving yet.
func (s *Server) Load(db int, key string, value any, expireAt int64) error {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	if db < 0 || db >= len(s.shard.dbs) {
		return fmt.Errorf("server: snapshot has database %d, only %d configured (databases)", db, len(s.shard.dbs))
	}
	if expireAt != 0 && expireAt <= s.shard.now() {
		return nil
	}
	if !loadable(value) {
		return fmt.Errorf("server: cannot load %q: unsupported value %T", key, value)
	}
	compressLoaded(value, s.cfg.ListCompressDepth)
	d := s.shard.dbs[db]
	d.remove(key)
	d.insert(key, &Object{value: value, expireAt: expireAt, access: s.shard.now()})
	return nil
}

// Dirty returns rdb_changes_since_last_save.
func (s *Server) Dirty() int64 {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	return s.shard.dirty
}

// Saved records that a snapshot taken with dirty changes is on disk.
func (s *Server) Saved(snap *Snapshot) {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	s.SavedLocked(snap)
}

// SavedLocked is Saved for callers that hold the lock (SAVE). Lock
// should be held.
func (s *Server) SavedLocked(snap *Snapshot) { s.shard.dirty -= snap.Dirty }
