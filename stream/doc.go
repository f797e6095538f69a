// Package stream implements the Redis stream type: an append-only log of
// entries, each a list of field-value pairs under a unique, ever-growing
// ID, stored in the exact node layout Redis uses, so that RDB files can
// carry nodes between Redis and redstream without re-encoding.
//
// The package is a pure data structure. It returns Go values and errors,
// never protocol replies; the server turns them into Redis's replies and
// error texts. A Stream is not safe for concurrent use.
//
//	s := stream.New()
//	id, _ := s.NextID(uint64(nowMillis))            // what "*" gives
//	_ = s.Add(id, [][]byte{[]byte("event"), []byte("click")}, stream.DefaultLimits)
//	it := s.Range(stream.MinID, stream.MaxID, false) // XRANGE - +
//	for it.Next() {
//		for range it.NumFields() {
//			field, value := it.Pair()
//			...
//		}
//	}
//
// # IDs
//
// An ID is two unsigned 64-bit numbers, milliseconds and a sequence
// number, written "ms-seq". In the radix tree an ID is a 16-byte key, both
// numbers big-endian, so that byte order is numeric order:
//
//	1526919030474-55  ->  00 00 01 63 83 77 66 ca | 00 00 00 00 00 00 00 37
//	                      milliseconds            | sequence
//
// IDs only grow. "*" takes the caller's clock (the record's time) unless
// the last ID is at or past it, in which case it takes the last ID plus
// one; that keeps IDs monotonic when the clock steps back. Incr and Decr
// report ErrIDOverflow instead of wrapping silently.
//
// # Nodes
//
// Entries live in listpacks (see package listpack) of up to
// stream-node-max-entries entries or stream-node-max-bytes bytes. Each
// listpack is a node, stored in the radix tree under its master ID: the ID
// of the first entry added to it. A node opens with a master entry, which
// records the field names of that first entry so that later entries with
// the same names need not repeat them:
//
//	+-------+---------+------------+---------+-----+---------+---+
//	| count | deleted | num-fields | field-1 | ... | field-N | 0 |
//	+-------+---------+------------+---------+-----+---------+---+
//
// count is the number of live entries in the node and deleted the number
// of entries flagged deleted (tombstones still stored), so the node holds
// count+deleted entries. The closing 0 plays the part of an lp-count
// (below) of zero: walking backwards, it says "no more entries".
//
// Every entry follows, in ID order, as
//
//	+-------+---------+----------+------------+---------+---------+-----+---------+---------+----------+
//	| flags | ms-diff | seq-diff | num-fields | field-1 | value-1 | ... | field-N | value-N | lp-count |
//	+-------+---------+----------+------------+---------+---------+-----+---------+---------+----------+
//
// or, when the flags carry SAMEFIELDS (the entry's field names are the
// master's, in the same order), without num-fields and names:
//
//	+-------+---------+----------+---------+-----+---------+----------+
//	| flags | ms-diff | seq-diff | value-1 | ... | value-N | lp-count |
//	+-------+---------+----------+---------+-----+---------+----------+
//
// flags is 1 (DELETED) for a tombstone, plus 2 (SAMEFIELDS). ms-diff and
// seq-diff are the entry's ID minus the master ID, part by part, modulo
// 2^64 (so they are small integers, stored in one or two bytes). lp-count
// is the number of elements before it in the entry (3 + N with
// SAMEFIELDS, 3 + 2N + 1 without), so that a reader at the end of an entry
// can step back to its flags: that is how XREVRANGE walks a node from its
// last element. Every number is a listpack integer, and so is every field
// or value that is the canonical form of one, exactly as Redis stores
// them. For "XADD s 5-0 event click user 12345" on an empty stream, the
// node is (elements, before listpack encoding):
//
//	1 0 2 "event" "user" 0  |  2 0 0 "click" 12345 5
//	master entry            |  first entry: SAMEFIELDS, 5-0 minus 5-0, lp-count 5
//
// A new entry goes into the last node unless that node is full, in which
// case it starts a new node (and the old one is shrunk to fit). Deleting
// an entry (XDEL) flags it and moves it from count to deleted; when a
// node's last live entry goes, the node is removed from the tree. Trimming
// removes whole nodes from the head while it can, and then (unless "~")
// flags entries in the next node. Like Redis, a MINID trim may leave a
// node that holds only tombstones when its last entry was already deleted.
//
// # Reading
//
// Iterator is the one way to read entries: it seeks the radix tree to the
// node that may hold the start of a range, walks the node's listpack
// forward, or backward from its last element using the lp-counts, skips
// tombstones, and moves on to the next or previous node.
//
// # Mutation and snapshots
//
// Every change to a node's bytes goes through Stream.edit, the stream's
// one copy-on-write point. Stream.Snapshot (for BGSAVE, AOF rewrite and
// Raft snapshots) copies only the radix tree, shares every node with the
// frozen view and starts a new epoch; edit copies a node of an older epoch
// before its first write. A snapshot therefore costs one tree walk, and a
// write after it copies at most the few nodes it touches, so writes never
// stop for a snapshot (DESIGN principle 5).
//
// # Counters and idempotent producers
//
// Like Redis 7, a stream keeps its length, last ID, first live ID, the
// largest deleted ID and the number of entries ever added; consumer groups
// use them to compute lag (Stream.Lag). Redis 8.6's idempotent
// production (XADD IDMP/IDMPAUTO, XCFGSET) keeps per-producer maps of
// recent idempotency IDs: see IDMPLookup. Beyond Redis, an age limit
// (XCFGSET MAXAGE) says which entries are too old at a given time; the
// caller trims them (Retention, AgeTrimBound, TrimAged).
//
// # Consumer groups
//
// A Group has a last delivered ID, a logical read counter (entries-read)
// and a pending-entries list (PEL) of the entries it delivered and no
// consumer acknowledged; each Consumer has its own PEL of the IDs it owns:
//
//	group PEL  (ID → delivered ms, deliveries, order, owner handle)
//	  1-0  t=…  n=1  #1 ─────┐          consumers by name (radix tree)
//	  2-0  t=…  n=3  #2 ─────┼───────▶  alice #1   PEL: 1-0 4-0
//	  3-0  t=0  n=1  –       │ released bob   #2   PEL: 2-0
//	  4-0  t=…  n=1  #1 ─────┘
//
// The group PEL holds the only copy of each entry's state; a consumer's
// PEL holds IDs, keys into it. So an entry's delivery time and count are
// changed in one place and seen from both sides, which is what Redis gets
// by sharing one NACK struct between the two PELs, without a pointer per
// entry. An entry released by XNACK (Redis 8.8) has no owner and delivery
// time 0. Every PEL is an omap: sorted chunks of up to 128 IDs and values
// in plain slices, indexed by a radix tree under their first IDs; the
// group PEL costs 40 bytes an entry and a consumer's 16, and the garbage
// collector sees one pointer per chunk.
//
// Snapshots freeze groups the way they freeze nodes: Snapshot copies the
// groups and consumers (a few words each) and the chunk indexes, and
// shares the chunks, which carry the epoch that may write them; the live
// PELs copy a chunk of an older epoch before changing it. A snapshot of a
// million pending entries copies some sixteen thousand index keys.
//
// CLAIM (XREADGROUP CLAIM, Redis 8.4) takes pending entries in time
// order: released entries in the order they were released, then the
// others longest idle first. Ordering by (delivery time, order number)
// gives both, since a released entry's time is 0 and every change of an
// entry's delivery time draws the next order number.
//
// Deleting entries may keep or drop the PEL entries that reference them
// (Redis 8.2's KEEPREF, DELREF, ACKED): see DeleteRef and Trim.Refs.
//
// # Delayed entries
//
// XADD … DELAY ms | AT unix-ms (a redstream extension) stores an entry
// now that joins the stream at its due time d. AddDelayed reserves the
// ID d-k, k one more than the largest ID already reserved in millisecond
// d (else 0), and keeps the entry outside the nodes, so no read, length
// or trim sees it; Release appends the due ones in ID order. An entry
// keeps its reserved ID when that is above the stream's last ID — the
// common case, since the server releases due entries before every XADD
// and at each due time — and otherwise takes the next ID after the last:
// that happens only when an explicit ID or SETID went past a reservation
// (or the clock stepped back), and then the reply's ID and the entry's
// differ. Readers of the log still read in ID order either way.
//
// The pending entries live in listpack nodes of their own (delay.go),
// each holding up to 128 entries as (ms-diff, seq-diff, num-fields,
// fields and values) relative to the node's base ID, the nodes indexed
// in a radix tree by base: a B+tree-like sorted set with insertion
// inside a node and splits when one is full. Each node remembers its
// last ID, so adding past it — entries reserved in due order, as with
// one DELAY for all — walks nothing. Adding and releasing cost O(log n)
// and a copy of at most one node. A pending entry of the bench shape
// (job, a 16-byte value) takes 32.6 bytes against 28.2 once visible:
// 1.2x, where a map from ID to a byte slice would take about 3x. The
// nodes are shared with snapshots copy-on-write by epoch, like the
// stream's own.
//
// # Export and load
//
// State is the whole stream as plain data: the nodes as (master ID,
// listpack) pairs, the counters, each group with its PEL and consumers,
// the IDMP tables and the delayed entries. It is what RDB files and DUMP payloads carry, and
// the only form in which a stream leaves or enters this package: package
// persistence writes Stream.State and reads into a State that FromState
// turns back into a stream. FromState trusts nothing: every node passes
// ValidateNode, nodes and entries must be in order, the counters must
// agree with the nodes, and every PEL entry must belong to one consumer
// or be released, or the error wraps ErrCorrupt.
//
//	st := s.State()              // on a Snapshot, outside the lock
//	s2, err := stream.FromState(&st)
package stream
