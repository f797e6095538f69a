/*
Package listpack implements Redis's listpack byte format and the quicklist,
a list of listpack nodes, that holds LIST values.

# Why this format

A list or stream with a million entries stored as a million Go values
would give the garbage collector a million objects to trace. A listpack
packs many entries into one byte slice, so the GC sees one pointer per
node of about a hundred entries, and per-entry overhead shrinks to a byte
or two. Using Redis's exact bytes, rather than a format of our own, also
means RDB files can carry nodes verbatim in both directions: a node
written by us loads in Redis and a node written by Redis loads here
without being re-encoded.

# Listpack layout

A listpack is a header, zero or more entries, and a terminator. Multi-byte
header fields are little-endian.

	 0       4     6                                          total-1
	+-------+-----+---------+---------+-----+---------+------+
	| total |count| entry 0 | entry 1 | ... | entry N | 0xFF |
	+-------+-----+---------+---------+-----+---------+------+
	 uint32  uint16

total is the size of the whole listpack in bytes, header and terminator
included, so an empty listpack is 07 00 00 00 00 00 FF. count is the number
of entries, or 65535 when there are too many to say, in which case readers
count by walking. 0xFF never starts an entry, so it marks the end.

Each entry is its encoding (which carries the type and, for strings, the
length), its data, and its back-length:

	+----------+------+---------+
	| encoding | data | backlen |
	+----------+------+---------+
	 <------ len ------>

The first byte of the encoding selects one of these forms (x: bits of the
value or length, y: a second byte of it):

	0xxxxxxx                         integer 0..127, no data bytes
	10xxxxxx   + x bytes             string of length 0..63
	110xxxxx yyyyyyyy                integer -4096..4095 (13 bits, two's
	                                 complement, high bits in the first byte)
	1110xxxx yyyyyyyy   + n bytes    string of length 0..4095 (12 bits)
	11110000 <4-byte len> + n bytes  string of length up to 2^32-1
	11110001 <2 bytes>               int16
	11110010 <3 bytes>               int24
	11110011 <4 bytes>               int32
	11110100 <8 bytes>               int64
	11110101 .. 11111110             unused, invalid
	11111111                         terminator, not an entry

Integer payloads and the 32-bit string length are little-endian. A value
that is the canonical decimal form of an int64 (no sign other than a
leading '-', no leading zeros, no spaces; "-0" does not count) is always
stored in the smallest integer form that holds it, so "hello" becomes a
6-bit string and "1000" a 13-bit integer; Get turns the integer back into
the same text. Strings use the smallest string form for their length.

The backlen is len (encoding plus data, not itself) written so that it can
be read from its last byte leftwards, which is how Prev steps back. len is
cut into 7-bit groups; the rightmost byte holds the lowest group, and every
byte but the leftmost has its high bit set to say "more to the left":

	len 5        05                   one byte for 0..127
	len 127      7F
	len 128      01 80                two bytes for 128..16382
	len 200      01 C8                (200 = 1*128 + 72; 72|0x80 = C8)
	len 16382    7F FE
	len 16383    00 FF FF             three bytes from 16383: Redis's
	len 16384    01 80 80             thresholds, kept for identical bytes

So the string "hello" is stored as

	85 68 65 6C 6C 6F 06
	|  h  e  l  l  o  backlen 6
	10 000101: 6-bit string, length 5

(listpack.md in antirez/listpack shows 0x45 for this byte; the code Redis
runs writes 0x85, and so do we), and the integer 1000 as C3 E8 02.

# Quicklist layout

A Quicklist is an array of nodes, each a listpack plus its element count
(and a generation, for snapshots: see below). With a compression depth
(list-compress-depth, here 1), inner nodes hold their listpack
LZF-compressed:

	Quicklist
	+-------------------+
	| nodes ------------+--> [ free | node 0 | node 1 | ... | node n | free ]
	| count, fill       |             |          |
	| spare, epoch,     |             |          +--------------------+
	| depth             |             v                               v
	+-------------------+      +-----------+-------+-----+     +-----------+-------+-----+
	                           | lp []byte | count | gen |     | lp []byte | count | gen |
	                           +-----------+-------+-----+     +-----------+-------+-----+
	                             32 bytes  |                         |
	                                       v                         v
	                   [ total | count | entries... | FF ]     [ total | LZF data ]
	                     raw node (head, tail: within depth)     compressed inner node

The node array keeps free slots at both ends so pushing and popping nodes
at the head or tail is O(1) amortized. The fill setting is Redis's
list-max-listpack-size: negative values -1..-5 cap a node at 4, 8, 16, 32
or 64 KiB of listpack bytes, positive values cap the number of elements
(with an 8 KiB safety cap). A node accepts a value of n bytes while its
size plus n plus 8 stays within the cap, Redis's own estimate, so nodes
split where Redis's split. A value larger than the cap lives alone in its
own node (Redis's "plain" node). Empty nodes are removed; an insert in the
middle of a full node splits it and merges neighbours that fit, as Redis
does.

A small list is one node used as a bare listpack, which Redis 7.2 and
later report as OBJECT ENCODING "listpack": values go into it without the
per-node estimate until a command's values would take it past the cap, and
a list that shrinks back to one node under half the cap returns to it.
Following these rules too is what makes the node bytes equal to Redis's
for the same commands; a test run against a live Redis (see
TestAgainstRedis) compares DUMP output node by node.

Memory is managed with the GC in mind: node buffers are sized by the
quicklist (a new head or tail node of a multi-node list gets its whole
budget at once, a list's only node grows in 1.5x steps), and an emptied
node is kept as a spare for the next new node, so a list used as a queue
produces almost no garbage.

# Compressed nodes

With a depth d > 0, the d nodes at each end of a list stay raw, since
pushes and pops work there, and every node further in is kept
LZF-compressed (package lzf, the compressor Redis uses) when its
listpack has at least 48 bytes and compression makes it more than 8
bytes shorter, Redis's MIN_COMPRESS_BYTES and MIN_COMPRESS_IMPROVE. A
compressed node keeps the listpack's 4-byte total in front of the LZF
data. A listpack's total always equals its length, and a compressed node
is shorter than the total it records, so the first four bytes tell the
two apart, give the node's size for the fill checks without
decompressing it, and need no room in the 32-byte node header.

The rule holds after every operation, at the cost of a few nodes per
operation, as in Redis: when a node is added or removed at an end, the
nodes that came within the depth are decompressed and the node just
inside each boundary is compressed; a change in the middle (LINSERT,
LSET, LREM, LTRIM) decompresses the nodes it works on into buffers of
the live list's own and compresses them again afterwards. Reads (LINDEX,
LRANGE, iteration, a snapshot's writer) decompress a node into a pooled
scratch buffer and change nothing, so views and concurrent readers are
unaffected. A compressed node's bytes are never changed in place, so
compression adds nothing to copy-on-write: a view keeps the bytes it
saw, and the live list gets new ones. An RDB writer stores a compressed
node as the LZF string it already is (Quicklist.StoredNodes), as Redis
does, whose bytes are then Redis's own for the same commands.

A list's depth is set by SetCompressDepth, which the server calls when
it creates or loads a list and while a list is one bare listpack:
Redis fixes the depth when it builds a list's nodes, so CONFIG SET does
not recompress existing long lists.

# Snapshots

Quicklist.Snapshot returns a read-only view of a list for BGSAVE, AOF
rewrite and Raft snapshots to serialize while writes go on (DESIGN.md,
principle 5). It shares the node array and every listpack with the live
list, so it costs the same few hundred nanoseconds whatever the list
holds: the server snapshots every key under its lock, and a 2 GB dataset
has a quarter of a million nodes, whose headers (32 bytes each) it used
to copy there. From then on the live list copies the node array before
it next touches a node (the array is marked shared until then), copies a
node's bytes before it first changes them, and never writes bytes a view
can see.

Each node carries a generation: the list's snapshot epoch at the time the
live list got private bytes for it, by creating or cloning it. Snapshot
advances the list's epoch, so every node it shares is now behind it. A
node may be written in place only while its generation equals the epoch;
before any change (an insert, a delete, a replace, and also an append into
spare capacity, which rewrites the header and moves the terminator) the
list calls own, which clones a node that is behind and stamps the copy
with the epoch. ensureRoom does the same in the copy it makes for room.
Nodes created after a snapshot are stamped with the epoch and never
copied for it. The generation is 32 bits, in the padding of the node
header; when the epoch would wrap, Snapshot first restamps every node as
behind.

	v := q.Snapshot()   q's epoch goes from 1 to 2: all its nodes are behind;
	                    v reads q's node array, q copies it at its next
	                    access (drawn below as already copied)

	   view v                                 live list q, epoch 2
	  +--------+                              +------------+
	  | node 0 |-----> [ lp A ] <-------------| node 0 g=1 |
	  | node 1 |-----> [ lp B ] <-------------| node 1 g=1 |
	  | node 2 |-----> [ lp C ] <-------------| node 2 g=1 |
	  +--------+                              +------------+

	q.PushTail(x)       node 2 is behind (g=1, not 2): own clones it, and x
	                    is appended to the clone

	  +--------+                              +------------+
	  | node 0 |-----> [ lp A ] <-------------| node 0 g=1 |
	  | node 1 |-----> [ lp B ] <-------------| node 1 g=1 |
	  | node 2 |-----> [ lp C ]  [lp C+x] <--| node 2 g=2 |
	  +--------+                              +------------+

Nodes 0 and 1 are still shared. Node 2 is private now, so later pushes
write into it in place: one clone per node touched, not one per write.
A node dropped from the live list stays alive as long as a view refers to
it (the garbage collector sees to that). Only a private node may be kept
as the spare for reuse, so a buffer a view can see is never handed out
again; a node that loses its last element is dropped without a clone.
Several views may live at once: each later Snapshot just advances the
epoch again, and nodes shared with older views stay behind it. A view
never changes (its mutating methods panic), so it may be read from any
goroutine, by several at once, while the owner goroutine goes on changing
the live list; Snapshot itself runs on the owner goroutine.
*/
package listpack
