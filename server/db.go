package server

import (
	"container/list"
	"hash/maphash"
	"strconv"
	"strings"

	"github.com/google/btree"
)

// Object is one value in the keyspace.
type Object struct {
	value    any    // []byte: string; *listpack.Quicklist: list
	expireAt int64  // unix ms; 0 = no expiry. Mirrored in DB.expires.
	access   int64  // last access, unix ms (OBJECT IDLETIME)
	ver      uint32 // Shard.epoch at its last write: a snapshot older than that has its value already (snapshot.go)
	seen     uint32 // the epoch of the last snapshot that took its value
	rawStr   bool   // a string changed in place (APPEND): encoding "raw"
	mem      int64  // the bytes counted for it in its DB's used (memory.go)
}

// DB is one numbered database: a map from key to object, plus what
// serves SCAN, expiry, blocking and WATCH.
//
// SCAN's cursor is a position in the key order: every key also sits in an
// ordered index keyed by (order hash, key), and a cursor is the order hash
// to resume from. Keys never move in that order, so every key present for
// the whole scan is returned, and returned once. The order is slot-major
// (orderHash): a hash slot's keys lie together, so the keys of a slot
// range are found in O(log N) and walked one step each (ascendSlots).
type DB struct {
	index    int
	keys     map[string]*Object
	expires  map[string]int64 // keys with a TTL, for active expiry
	order    *btree.BTreeG[scanEntry]
	seed     maphash.Seed
	waiters  map[string]*list.List // blocked clients per key, FIFO
	readySet map[string]struct{}   // keys already in Shard.ready
	watchers map[string][]*Client  // WATCHing clients per key
	// groupWaits counts the blocked XREADGROUPs per key: deleting such a
	// key ends their wait (group_block.go), so remove signals it.
	groupWaits map[string]int
	used       int64 // the bytes its keys hold, as MEMORY USAGE counts them (memory.go)
	// aged holds the keys of the streams with an age limit, for the
	// sweeper, which resumes after agedCursor (retention.go).
	aged       *btree.BTreeG[string]
	agedCursor string
	// walk is the snapshot walk writers must hand this database's old
	// values to, if one is open (snapshot.go).
	walk  *dbWalk
	shard *Shard
}

type scanEntry struct {
	hash uint64 // orderHash of key
	key  string
}

// slotShift places a key's hash slot in the top 14 bits of its order
// hash (ClusterSlots is 1<<14); the low 50 bits are its seeded hash.
const slotShift = 64 - 14

// orderHash is key's place in DB.order: its Redis Cluster slot first, so
// each slot's keys form one run, then its hash with the database's seed,
// which spreads the keys of a slot evenly (and keys sharing a hash tag
// apart). The one place an order hash is computed.
func orderHash(seed maphash.Seed, key string) uint64 {
	return slotStart(keySlot(key)) | maphash.String(seed, key)>>(64-slotShift)
}

// slotStart is the least order hash a key of slot can have.
func slotStart(slot int) uint64 { return uint64(slot) << slotShift }

func scanLess(a, b scanEntry) bool {
	if a.hash != b.hash {
		return a.hash < b.hash
	}
	return a.key < b.key
}

func newDB(sh *Shard, index int) *DB {
	db := &DB{shard: sh, index: index, seed: maphash.MakeSeed()}
	db.reset()
	db.waiters = make(map[string]*list.List)
	db.readySet = make(map[string]struct{})
	db.watchers = make(map[string][]*Client)
	db.groupWaits = make(map[string]int)
	return db
}

// reset empties the keyspace (FLUSHDB); waiters and watchers stay.
func (db *DB) reset() {
	db.keys = make(map[string]*Object)
	db.expires = make(map[string]int64)
	db.order = btree.NewG(32, scanLess)
	db.aged = newAgedSet()
	db.used = 0
}

func (db *DB) hash(key string) uint64 { return orderHash(db.seed, key) }

// ascendSlots visits, in order, db's keys whose hash slot lies in [from,
// to], until visit returns false: O(log N) to find the first, then one
// step per key; other slots' keys are never read. Slot migration and
// per-group snapshots walk a group's slots with it. Lock should be held.
func (db *DB) ascendSlots(from, to int, visit func(key string) bool) {
	first := scanEntry{hash: slotStart(from)}
	each := func(e scanEntry) bool { return visit(e.key) }
	if to >= ClusterSlots-1 { // no slot after it to stop before
		db.order.AscendGreaterOrEqual(first, each)
		return
	}
	db.order.AscendRange(first, scanEntry{hash: slotStart(to + 1)}, each)
}

// Len is the number of keys, counting expired ones not yet removed.
func (db *DB) Len() int { return len(db.keys) }

// insert adds a key that does not exist. Lock should be held.
func (db *DB) insert(key string, o *Object) {
	o.ver = db.shard.epoch // made after any snapshot being walked: not in it
	db.keys[key] = o
	db.count(key, o)
	db.order.ReplaceOrInsert(scanEntry{db.hash(key), key})
	if o.expireAt != 0 {
		db.expires[key] = o.expireAt
	}
	db.trackAged(key, o)
	db.shard.noteDelayed(db, key, o)
}

// remove deletes key if present and returns its object. Lock should be
// held.
func (db *DB) remove(key string) *Object {
	o := db.keys[key]
	if o == nil {
		return nil
	}
	db.shard.willChange(db, key, o)
	db.used -= o.mem
	delete(db.keys, key)
	db.order.Delete(scanEntry{db.hash(key), key})
	if o.expireAt != 0 {
		delete(db.expires, key)
	}
	if db.aged.Len() > 0 {
		db.aged.Delete(key)
	}
	if len(db.groupWaits) > 0 && db.groupWaits[key] > 0 {
		db.shard.signalReady(db, []byte(key))
	}
	return o
}

// setExpire sets or clears (at == 0) o's expiry. Lock should be held.
func (db *DB) setExpire(key string, o *Object, at int64) {
	o.expireAt = at
	if at == 0 {
		delete(db.expires, key)
	} else {
		db.expires[key] = at
	}
}

// lookup returns key's object, or nil if it does not exist or has expired
// by x.now. Reads are pure: an expired key a read finds is only missing
// to it, and stays until active expiry or a write removes it. A write
// that finds one deletes it (and, live, logs the deletion as a DEL, so
// replay agrees). So whether and when a key expires is decided by writes
// and the expire cycle alone, which under replication run on the leader,
// and a read never makes a record. Lock should be held.
func (x *Ctx) lookup(key []byte) *Object {
	o := x.db.keys[string(key)]
	if o == nil {
		return nil
	}
	if o.expireAt != 0 && o.expireAt <= x.now {
		if x.replay || (x.cmd != nil && x.cmd.Flags&FlagWrite != 0) {
			x.s.expireKey(x.db, string(key), x.now, x.replay)
		}
		return nil
	}
	if x.c == nil || !x.c.noTouch || x.cmd.Name == "touch" { // TOUCH touches even under NO-TOUCH
		o.access = x.now
	}
	if x.cmd != nil && x.cmd.Flags&FlagWrite != 0 {
		// A write command may change what it looks up, in place: a
		// snapshot being walked takes the value first, and its size is
		// counted again once the command is done.
		x.db.shard.willChange(x.db, string(key), o)
		x.db.shard.resized = append(x.db.shard.resized, resizedKey{x.db, string(key), o})
	}
	return o
}

// peek returns key's object, or nil if it does not exist or has expired
// by x.now, as lookup does for a read, but leaves its access time alone:
// EXISTS, TYPE, TTL and the like ask about a key without using it, and
// OBJECT IDLETIME (and so allkeys-lru) must not count them. Lock should be
// held.
func (x *Ctx) peek(key []byte) *Object {
	o := x.db.keys[string(key)]
	if o == nil || o.expireAt != 0 && o.expireAt <= x.now {
		return nil
	}
	return o
}

// exists reports whether key exists at x.now without touching it.
func (x *Ctx) exists(key []byte) bool { return x.peek(key) != nil }

// setKey stores o at key, replacing any value and its TTL. Lock should be
// held.
func (x *Ctx) setKey(key []byte, o *Object) {
	k := string(key)
	x.db.remove(k)
	o.access = x.now
	x.db.insert(k, o)
	// A value is often stored empty and filled by the same command
	// (LPUSH to a new key): count it again after the command.
	x.db.shard.resized = append(x.db.shard.resized, resizedKey{x.db, k, o})
	x.modified(key)
	x.signalReady(key)
}

// deleteKey removes key; it reports whether it existed (and had not
// expired). Lock should be held.
func (x *Ctx) deleteKey(key []byte) bool {
	if x.lookup(key) == nil {
		return false
	}
	x.db.remove(string(key))
	x.modified(key)
	return true
}

// expireKey deletes a key whose time has passed. Live, the deletion is
// logged as a DEL record; during replay the log already holds it. Lock
// should be held.
func (s *Server) expireKey(db *DB, key string, now int64, replay bool) {
	db.remove(key)
	s.stats.expiredKeys++
	s.touchWatchedByExpiry(db, key)
	if !replay {
		s.shard.logDirect(db.index, now, []byte("DEL"), []byte(key))
	}
}

// activeExpire samples keys with a TTL and deletes the expired ones, as
// Redis's active expire cycle does, so memory is reclaimed even for keys
// nobody reads. It repeats while many samples were expired, within a
// bounded effort. Lock should be held.
func (s *Server) activeExpire() {
	const sample, rounds = 20, 16
	now := s.shard.now()
	for _, db := range s.shard.dbs {
		for r := 0; r < rounds && len(db.expires) > 0; r++ {
			expired, seen := 0, 0
			for key, at := range db.expires { // map order is random: a sample
				if seen++; seen > sample {
					break
				}
				if at <= now {
					s.expireKey(db, key, now, false)
					expired++
				}
			}
			if expired < sample/4 {
				break
			}
		}
	}
	s.serveReady() // a blocked XREADGROUP whose stream expired hears NOGROUP now
	s.commit()
}

// proposeExpiries is the active expire cycle of the groups this node
// leads, each in its own database. A node
// may not delete by its own clock (the others would not), so the leader
// proposes, for each expired key its sample finds, PEXPIREAT key at GT: a
// write whose lookup deletes the key on every node at the record's time
// if it is still the key that expired, and changes nothing if it was set
// again since (GT never shortens a TTL, nor gives one to a key without).
// Lock should be held.
func (s *Server) proposeExpiries() {
	const sample, most = 20, 200
	now := s.shard.now()
	proposed := 0
	for _, g := range s.groups {
		if !g.cl.Leading() {
			continue
		}
		db := s.shard.dbs[g.db]
		seen := 0
		for key, at := range db.expires { // map order is random: a sample
			if seen++; seen > sample || proposed >= most {
				break
			}
			if at <= now {
				s.proposeOwn(g, []byte("PEXPIREAT"), []byte(key), strconv.AppendInt(nil, at, 10), []byte("GT"))
				proposed++
			}
		}
	}
}

// matchType compares a SCAN TYPE filter with o's type.
func matchType(o *Object, want string) bool { return strings.EqualFold(typeName(o), want) }
