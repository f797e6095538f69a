package server

import (
	"fmt"
	"time"

	"github.com/redstream/redstream/listpack"
)

// Snapshot is the keyspace at one instant, which another goroutine may
// read at leisure while the server keeps serving writes (DESIGN principle
// 5). Taking it costs the lock for a walk over the keys and list node
// headers; no element is copied: list nodes are copy-on-write, and
// strings are never changed in place.
type Snapshot struct {
	Time int64 // the record clock when it was taken, ms
	DBs  []SnapshotDB
	// Dirty is rdb_changes_since_last_save at the moment of the snapshot:
	// once it is saved, that many changes are on disk.
	Dirty int64
}

// SnapshotDB is one database of a snapshot.
type SnapshotDB struct {
	Index   int
	Entries []SnapshotEntry
	Expires int // how many entries have an expiry
}

// SnapshotEntry is one key. Value is []byte (a string) or a read-only
// *listpack.Quicklist view (a list); other types add their views here.
type SnapshotEntry struct {
	Key      string
	Value    any
	ExpireAt int64 // unix ms; 0 = none
}

// Freeze takes a snapshot. during, if not nil, runs inside the same
// critical section: the AOF starts a new increment there, so that the
// snapshot plus that increment is exactly the state from then on.
func (s *Server) Freeze(during func()) *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.FreezeLocked(during)
}

// FreezeLocked is Freeze for callers that hold the lock (SAVE, BGSAVE).
// Lock should be held.
func (s *Server) FreezeLocked(during func()) *Snapshot {
	start := time.Now()
	defer func() {
		// The pause a snapshot costs writers, as Redis reports a fork's.
		s.stats.lastFreezeUsec = time.Since(start).Microseconds()
	}()
	snap := &Snapshot{Time: s.now(), Dirty: s.stats.dirty}
	for _, db := range s.dbs {
		sdb := SnapshotDB{Index: db.index, Entries: make([]SnapshotEntry, 0, len(db.keys))}
		for key, o := range db.keys {
			if o.expireAt != 0 && o.expireAt <= snap.Time {
				continue // expired: Redis does not save it either
			}
			sdb.Entries = append(sdb.Entries, SnapshotEntry{Key: key, Value: frozenValue(o.value), ExpireAt: o.expireAt})
			if o.expireAt != 0 {
				sdb.Expires++
			}
		}
		snap.DBs = append(snap.DBs, sdb)
	}
	if during != nil {
		during()
	}
	return snap
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if db < 0 || db >= len(s.dbs) {
		return fmt.Errorf("server: snapshot has database %d, only %d configured (databases)", db, len(s.dbs))
	}
	if expireAt != 0 && expireAt <= s.now() {
		return nil
	}
	switch value.(type) {
	case []byte, *listpack.Quicklist:
	default:
		if !loadableExt(value) {
			return fmt.Errorf("server: cannot load %q: unsupported value %T", key, value)
		}
	}
	d := s.dbs[db]
	d.remove(key)
	d.insert(key, &Object{value: value, expireAt: expireAt, access: s.now()})
	return nil
}

// Dirty returns rdb_changes_since_last_save.
func (s *Server) Dirty() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats.dirty
}

// Saved records that a snapshot taken with dirty changes is on disk.
func (s *Server) Saved(snap *Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.SavedLocked(snap)
}

// SavedLocked is Saved for callers that hold the lock (SAVE). Lock
// should be held.
func (s *Server) SavedLocked(snap *Snapshot) { s.stats.dirty -= snap.Dirty }
