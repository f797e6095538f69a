package server

import (
	"errors"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"time"

	"github.com/google/btree"
	"github.com/redstream/redstream/listpack"
)

// Snapshot is the keyspace at one instant, or some of its databases,
// which another goroutine reads at leisure while the server keeps serving
// writes (DESIGN principle 5).
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
//	take (lock, O(1))   epoch E = sh.epoch; sh.epoch++; db.walk = this walk, per database taken
//	write key k in db   if k.ver <= E and k not yet taken: k's frozen value → db.walk's saved
//	                    k.ver = sh.epoch
//	walk (lock/chunk)   for the next keys k: skip if k.ver > E or k taken;
//	                    else take k's frozen value; then hand out saved
//
// The walk state lives with the database it walks, so several snapshots
// can be walked at once, each of its own databases (a Raft group's
// snapshot is its one database's, taken while other groups take theirs):
//
//	Shard   epoch (one counter)        snap: the snapshots being walked
//	 ├─ dbs[0] walk ─▶ dbWalk{keys, order, cursor, saved} ─┐
//	 ├─ dbs[1] walk ─▶ dbWalk ─────────────────────────────┼─▶ Snapshot A {epoch 7, walks[0], walks[1]}
//	 ├─ dbs[2] walk ─▶ dbWalk ───────────────────────────────▶ Snapshot B {epoch 9, walks[2]}
//	 └─ dbs[3] walk = nil (no snapshot walks it)
//
// A database is walked by one snapshot at a time: taking a snapshot of a
// database another one walks fails (ErrSnapshotBusy). A write asks only
// its own database's walk, so the cost per write stays one comparison
// when no walk needs its key's value, however many walks are open.
//
// The epoch stays one counter for the shard, bumped by every snapshot of
// any databases. A walk needs three things of it, and each holds for
// every open walk at once: a key written after the walk's instant has
// ver > E (ver is set from the counter, which only grows past E); a key
// not written since has ver <= E (nothing rewrote it); and seen == E
// names this walk's taking alone (each snapshot gets an epoch of its
// own). Another database's snapshot bumping the counter only makes later
// writes newer still, which they are. And willChange's fast path, ver ==
// sh.epoch, means written since the newest snapshot was taken, so after
// every open walk's instant: none of them needs the value.
//
// Frozen values cost no copy: list and stream nodes are copy-on-write and
// strings are never changed in place. The persister walks one snapshot of
// all the databases at a time, as Redis runs one child at a time
// (cmd_persist.go schedules the other). A snapshot read with the lock
// held throughout (SAVE, the shutdown's save: FreezeHeld) needs none of
// this and walks the maps as they are.
type Snapshot struct {
	Time int64 // the record clock when it was taken, ms
	DBs  []SnapshotDB
	// Dirty is rdb_changes_since_last_save at the moment of the snapshot:
	// once it is saved, that many changes are on disk.
	Dirty int64

	shard   *Shard
	epoch   uint32
	held    bool      // the reader holds the lock throughout: no epochs, no chunks
	walks   []*dbWalk // by database index; nil for a database not taken, or empty
	running int       // walks not finished; at 0 writers stop handing values over
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

// dbWalk is a snapshot's walk over one database's keys. Its fields are
// guarded by the server's lock.
type dbWalk struct {
	sn *Snapshot
	db *DB // whose walk this is while writers must hand it values
	// The database's map and index as they were taken: FLUSHDB and
	// Restore replace them with new ones, and these then stay as they were.
	keys   map[string]*Object
	order  *btree.BTreeG[scanEntry]
	cursor scanEntry // the last key walked
	begun  bool
	done   bool
	saved  []SnapshotEntry // values writers handed over before changing them
}

// ErrSnapshotBusy is returned for a snapshot of a database that another
// snapshot is still walking.
var ErrSnapshotBusy = errors.New("server: a snapshot of that database is still being walked")

// walkChunk is how many keys a walk looks at per hold of the lock: about
// 30 µs of a writer's wait, so a snapshot of any size adds little to
// anybody's latency.
const walkChunk = 64

// Freeze takes a snapshot of the node's shard (Shard.Freeze).
func (s *Server) Freeze(during func()) *Snapshot { return s.shard.Freeze(during) }

// FreezeDBs takes a snapshot of some of the node's shard's databases, or
// of all (nil), unless another snapshot walks one (Shard.FreezeDBs).
func (s *Server) FreezeDBs(dbs []int, during func()) (*Snapshot, error) {
	return s.shard.FreezeDBs(dbs, during)
}

// Freeze takes a snapshot for a reader that runs beside the server (see
// FreezeLocked).
func (sh *Shard) Freeze(during func()) *Snapshot {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.FreezeLocked(during)
}

// FreezeLocked takes a snapshot of every database, to be read beside the
// server: BGSAVE, save points, BGREWRITEAOF. during, if not nil, runs in
// the same critical section: the AOF starts a new increment there, so
// that the snapshot plus that increment is exactly the state from then
// on. The reader must read every database's Entries to the end or Close
// it, so that writers stop handing values over. A snapshot still being
// walked is closed first (its reader's walk ends there): the persister's
// scheduling keeps that from happening. Lock should be held.
func (sh *Shard) FreezeLocked(during func()) *Snapshot {
	sh.closeSnapshots()
	sn, _ := sh.freezeLocked(sh.allDBs(), during) // nothing is walked now: it cannot fail
	return sn
}

// FreezeDBs takes a snapshot of the databases dbs (nil: all of them), to
// be read beside the server as FreezeLocked's is. It fails with
// ErrSnapshotBusy, and takes nothing, if another snapshot is still walking
// one of them; snapshots of other databases go on.
func (sh *Shard) FreezeDBs(dbs []int, during func()) (*Snapshot, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if dbs == nil {
		dbs = sh.allDBs()
	}
	return sh.freezeLocked(dbs, during)
}

// freezeLocked is FreezeDBs. Lock should be held.
func (sh *Shard) freezeLocked(dbs []int, during func()) (*Snapshot, error) {
	if err := sh.checkDBs(dbs); err != nil {
		return nil, err
	}
	for _, i := range dbs {
		if sh.dbs[i].walk != nil {
			return nil, fmt.Errorf("%w (database %d)", ErrSnapshotBusy, i)
		}
	}
	start := time.Now()
	// The pass's records so far are in the snapshot: they belong to the
	// log before the new increment, not in it, or a replay of snapshot
	// plus increment would apply them twice.
	sh.logPending()
	sn := sh.newSnapshot(dbs, false)
	if during != nil {
		during()
	}
	// The pause a snapshot costs writers, as Redis reports a fork's.
	sh.node.stats.lastFreezeUsec = time.Since(start).Microseconds()
	return sn, nil
}

// checkDBs reports an index in dbs that is no database, or one given
// twice.
func (sh *Shard) checkDBs(dbs []int) error {
	for i, d := range dbs {
		if d < 0 || d >= len(sh.dbs) {
			return fmt.Errorf("server: no database %d, only %d configured (databases)", d, len(sh.dbs))
		}
		if slices.Contains(dbs[:i], d) {
			return fmt.Errorf("server: database %d given twice", d)
		}
	}
	return nil
}

// allDBs returns every database's index.
func (sh *Shard) allDBs() []int {
	all := make([]int, len(sh.dbs))
	for i := range all {
		all[i] = i
	}
	return all
}

// FreezeHeld takes a snapshot for a reader that holds the lock until it
// is done (SAVE, the shutdown's save): nothing changes meanwhile, so it
// reads the live values. Lock should be held.
func (sh *Shard) FreezeHeld() *Snapshot { return sh.newSnapshot(sh.allDBs(), true) }

// newSnapshot takes a snapshot of the databases dbs, which no other
// snapshot walks (unless held: it walks nothing beside the server). Lock
// should be held.
func (sh *Shard) newSnapshot(dbs []int, held bool) *Snapshot {
	sn := &Snapshot{Time: sh.now(), Dirty: sh.dirty, shard: sh, held: held, walks: make([]*dbWalk, len(sh.dbs))}
	if !held {
		sn.epoch = sh.epoch
		sh.epoch++ // wraps after 4 billion snapshots: years of one a second
	}
	for _, i := range slices.Sorted(slices.Values(dbs)) { // DBs in index order, as a file lists them
		db := sh.dbs[i]
		if len(db.keys) == 0 {
			continue
		}
		sn.DBs = append(sn.DBs, SnapshotDB{Index: db.index, Keys: len(db.keys), Expires: len(db.expires)})
		w := &dbWalk{sn: sn, db: db, keys: db.keys, order: db.order}
		sn.walks[db.index] = w
		sn.running++
		if !held {
			db.walk = w
		}
	}
	if !held && sn.running > 0 {
		sh.snap = append(sh.snap, sn)
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

// endWalk ends a walk; writers of its database hand it nothing any more.
// Lock should be held (or the snapshot held).
func (sn *Snapshot) endWalk(w *dbWalk) {
	if w.done {
		return
	}
	w.done = true
	w.keys, w.order = nil, nil
	w.db.detach(w)
	if sn.running--; sn.running == 0 {
		sn.shard.forget(sn)
	}
}

// detach stops writers of db handing values to w: its walk ended, or
// went on over keys db no longer holds (Restore). Lock should be held.
func (db *DB) detach(w *dbWalk) {
	if db.walk == w {
		db.walk = nil
	}
}

// forget drops sn, whose walks have all ended, from the snapshots being
// walked. Lock should be held.
func (sh *Shard) forget(sn *Snapshot) {
	sh.snap = slices.DeleteFunc(sh.snap, func(open *Snapshot) bool { return open == sn })
	if len(sh.snap) == 0 {
		sh.snap = nil // none: what persistBusy and the tests look for
	}
}

// closeSnapshots closes every snapshot being walked. Lock should be held.
func (sh *Shard) closeSnapshots() {
	for _, sn := range slices.Clone(sh.snap) {
		sn.closeLocked()
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
// the snapshot walking db still needs o's value, it gets it now. It
// costs one comparison once o has been written since the last snapshot
// began. Lock should be held.
func (sh *Shard) willChange(db *DB, key string, o *Object) {
	if o.ver == sh.epoch {
		return
	}
	if w := db.walk; w != nil && o.ver <= w.sn.epoch && o.seen != w.sn.epoch {
		o.seen = w.sn.epoch
		if o.expireAt == 0 || o.expireAt > w.sn.Time {
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
