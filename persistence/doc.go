/*
Package persistence keeps redstream's data on disk: the append-only file
and RDB snapshots in Redis's format. This page describes the RDB codec;
the append-only file documents itself in aof.go.

# Reading and writing snapshots

A Decoder reads a file one key at a time and an Encoder writes one as a
stream, so neither holds a whole dataset in memory:

	d := persistence.NewDecoder(f, nil)
	for {
		e, err := d.Next()
		if err == io.EOF {
			break // the checksum has been verified
		}
		if err != nil {
			return err // a *DecodeError: what went wrong, where, in which key
		}
		install(e.DB, e.Key, e.Value, e.ExpireAt, e.HasExpire)
	}

	err := persistence.Encode(w, &persistence.EncodeOptions{}, []persistence.DB{
		{ID: 0, Keys: n, Expires: m, Entries: db0Entries}, // an iter.Seq2[*Entry, error]
	})

Values cross the boundary as plain Go values: a String is its bytes, a
List is its quicklist nodes (listpacks, for listpack.QuicklistFromNodes),
a Stream is the live *stream.Stream. The codec has no stream model of
its own: it writes Stream.State (nodes as (master ID, listpack) pairs,
counters, groups with their PELs and consumers, IDMP tables) and reads
into a stream.State that stream.FromState checks and builds, so every
check a loader needs is made once, in package stream, and the decoder
never hands out a stream that check refused. Listpacks are passed
through verbatim in both directions, so loading and saving a snapshot
never re-encodes an element. FromValue and ToValue convert between the
codec's values and the server's; WriteSnapshot and ReadSnapshot use
them for whole files (saves, AOF bases, and Raft snapshots to come).

# File layout

An RDB file is a header, a series of opcodes and values, and a trailer.
Multi-byte integers are little-endian unless said otherwise.

	+-----------+------------------+--------------------------------+-----+----------+
	| REDIS0010 | AUX name value.. | SELECTDB n  RESIZEDB k e       | EOF | checksum |
	|  9 bytes  |                  | [EXPIRETIME_MS t] type key val |0xFF |  8 bytes |
	|           |                  | [...more keys, more dbs]       |     |          |
	+-----------+------------------+--------------------------------+-----+----------+

The header is "REDIS" and the version in four decimal digits. We write
version 10, which Redis 7.0 reads, and read versions 9 to 12 (Redis 6.0
to 7.4). The checksum is the CRC-64 (Jones polynomial, reflected, initial
value 0; see CRC64) of every byte before it, the EOF opcode included. A
writer with checksums turned off (rdbchecksum no) stores 0 there, and a
reader then checks nothing.

Each item starts with one byte. Values 0 to 25 are value types; the top
of the range holds opcodes:

	0xFA AUX          two strings, a name and a value: redis-ver, redis-bits,
	                  ctime, used-mem, aof-base (and our redstream-ver).
	                  Readers ignore names they do not know.
	0xFE SELECTDB     a length: the db of the keys that follow
	0xFB RESIZEDB     two lengths: the db's key and expiry counts (hints)
	0xFC EXPIRETIME_MS 8 bytes: the next key's expiry, Unix ms
	0xFD EXPIRETIME   4 bytes: the same in seconds (old files)
	0xF8 IDLE         a length: the next key's LRU idle seconds
	0xF9 FREQ         1 byte: the next key's LFU counter
	0xF7 MODULE_AUX   module data outside keys (read past, never served)
	0xF5 FUNCTION2    a function library's source (read past, never served)
	0xF4 SLOT_INFO    three lengths: cluster slot sizes (ignored)
	0xFF EOF          the end; the checksum follows

A key entry is the type byte, the key as a string, then the value.

Lengths use the top two bits of their first byte: 00 leaves six bits of
length, 01 fourteen (with the next byte, big-endian), 0x80 is followed by
a 32-bit and 0x81 by a 64-bit big-endian length. 11 marks a specially
encoded string instead, the low six bits saying which: 0, 1, 2 are 8,
16 and 32-bit integers (the string is their decimal form), 3 is LZF.

A string is a length and its bytes, or one of those encodings. As Redis
does, the writer stores a string of at most 11 bytes that is the
canonical decimal form of a 32-bit integer as that integer, and (with
compression on) a string over 20 bytes as LZF when that saves at least
four bytes: the marker 0xC3, the compressed length, the original length,
the compressed bytes (see package lzf).

# Value layouts

String (type 0): one string.

List (type 18, QUICKLIST_2, which we write): a node count, then per node
a container length (2: a listpack follows; 1: "plain", a single element
follows as a string) and the node as a string. A node holding one value
too large for a node under list-max-listpack-size is written plain, as
Redis 7.2 and later do; every other node is its listpack's bytes. A node
the list holds compressed (list-compress-depth) is written as the LZF
string it already is, whatever rdbcompression says, as Redis writes it;
the reader expands LZF strings wherever they appear. The reader also
accepts type 14 (QUICKLIST: a node count, then a ziplist per
node), type 10 (one ziplist) and type 1 (a count, then each element),
converting ziplists to listpacks. Every listpack passes
listpack.Validate(lp, true) before it is used.

Stream (type 19, STREAM_LISTPACKS_2, which we write):

	node count
	  per node:  master ID (a 16-byte string: ms, seq, big-endian) | listpack
	length | last ID | first ID | max deleted ID       (IDs as two lengths)
	entries added
	group count
	  per group: name | last delivered ID | entries read (2^64-1: unknown)
	             PEL count
	               per entry: ID (16 raw bytes) | delivery time (8 bytes) | delivery count
	             consumer count
	               per consumer: name | seen time (8 bytes)
	                             PEL count | IDs (16 raw bytes each)

Type 15 (Redis 5 and 6) lacks the first ID, max deleted ID, entries added
and entries read; the reader derives them as Redis does (entries added
from the length, each group's entries read by
stream.Stream.EstimateEntriesRead). Type 21 (Redis 7.2) adds an 8-byte
active time after each consumer's seen time; types 15 and 19 lack it, and
the reader takes the seen time, as Redis does. The first ID is always
recomputed from the nodes. Every node listpack must pass
stream.ValidateNode, and the whole must pass stream.FromState.

Hashes, sets, sorted sets and module values are read past only when
DecodeOptions.SkipUnsupported is set (for inspection); otherwise they are
an UnsupportedError naming the key.

# State version 10 has no place for

Some stream state is newer than RDB version 10: a consumer's active time
(Redis 7.2 keeps it in type 21), the idempotent-producer tables of Redis
8.6 (XADD IDMP / IDMPAUTO, XCFGSET), and redstream's own consumer-group
policies (XGROUP SETPOLICY) with their dead-letter counts, delayed entries
(XADD DELAY) and age limit (XCFGSET MAXAGE). So that they survive a
restart while the file still loads in Redis 7.0, the writer puts them in
an AUX field named "redstream-stream-ext" placed just before the stream's
key (and before its expiry). Redis ignores the field; our reader holds it
until the key arrives and attaches it. The field is written only when
needed: when some consumer's active time differs from its seen time (the
reader's default, as in Redis), the stream has IDMP state, delayed
entries or an age limit, or a group has a policy or has dead-lettered
entries.

The field's value is binary, made of RDB lengths (len), plain strings
(str: a length and the bytes, never integer- or LZF-encoded) and 8-byte
little-endian millisecond times (ms):

	version   1 byte, 1
	db        len       the key's db
	key       str       the key
	sections  until the end of the value, each:
	            tag   1 byte
	            body  str   (a reader skips tags it does not know)

	tag 1, consumer active times (only consumers whose active time
	differs from their seen time):
	    group count len
	      per group: name str | consumer count len
	                 per consumer: name str | active time ms

	tag 2, idempotent-producer state:
	    duration len (seconds) | max size len | iids added len
	    iids duplicates len | producer count len
	      per producer: pid str | iid count len
	                    per iid (oldest first): iid str | entry ID ms len
	                                            entry ID seq len | recorded at ms

	tag 3, consumer-group policies (only groups with a policy or a
	dead-letter count):
	    group count len
	      per group: name str | max deliver len | dead-letter key str ("": none)
	                 ack wait len (ms) | backoff step count len
	                 per step: ms len
	                 dead-lettered len

	tag 4, delayed entries (XADD DELAY / AT) not yet due, in ID order:
	    entry count len
	      per entry: reserved ID ms len | reserved ID seq len
	                 field-and-value count len | each: str

	tag 5, age limit (only when set):
	    max age len (ms, > 0) | policy 1 byte (0 KEEPREF, 1 DELREF, 2 ACKED)

A stream without delayed entries writes no tag 4 (and no field at all
when it needs none of the others), so its file loads in Redis 7
unchanged; Redis ignores the field, and with it the delayed entries, in
any case.

A field that names a key the file does not hold, a group or consumer the
stream lacks, or has a version other than 1 is an error.

# DUMP payloads

DUMP and RESTORE carry one value as RDB encodes it, followed by the RDB
version (2 bytes, little-endian) and a CRC-64 of everything before it;
dump.go draws the layout.

# Errors

Decoding fails with a *DecodeError carrying the byte offset, the db and
the key being read, wrapping one of ErrNotRDB, ErrRDBVersion,
ErrRDBTruncated, ErrRDBChecksum, ErrRDBCorrupt or ErrRDBUnsupported. The
decoder never panics, and never allocates ahead of the bytes it has read
by more than a small chunk: a length claiming 4 GiB in a 100-byte file is
an error, not an allocation.

A file with a changed byte usually fails long before its checksum is
read, as truncated or corrupt; DiagnoseDamage tells that apart from a cut
file by the checksum at its end.
*/
package persistence
