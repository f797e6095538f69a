/*
Package radix provides Tree, an ordered map from byte-string keys to values,
stored as a compressed radix tree, with an Iterator that seeks the way Redis's
rax iterator does (^ $ >= > <= <) and then walks in either direction.

redstream indexes a stream's listpack nodes by their first entry ID, and keeps
consumer groups' pending-entry lists (PELs) and group and consumer names, in
such trees. Stream IDs are encoded as 16-byte big-endian keys (milliseconds,
then sequence number), so byte order is numeric order and appending entries
means inserting ever larger keys at the tail.

A zero Tree is empty and ready to use:

	var pel radix.Tree[*PendingEntry]
	pel.Insert(id[:], pe)     // the tree copies the key bytes it needs
	pe, ok := pel.Get(id[:])
	pel.Delete(id[:])

Insert of a key that is already present replaces its value without changing
the tree's shape; that is how a value is updated in place.

# Seeking and iterating

Seek returns an Iterator positioned on the key selected by a SeekOp: the
smallest (First) or largest (Last) key, or the nearest key on either side of a
given key (GE, GT, LE, LT). The first Next or Prev reports that key; later
calls move up (Next) or down (Prev) from the key last reported:

	// XRANGE start end COUNT 100
	it := tree.Seek(radix.GE, start)
	for n := 0; n < 100 && it.Next() && bytes.Compare(it.Key(), end) <= 0; n++ {
		use(it.Key(), it.Value())
	}

	// XREVRANGE end start
	it = tree.Seek(radix.LE, end)
	for it.Prev() && bytes.Compare(it.Key(), start) >= 0 {
		use(it.Key(), it.Value())
	}

	// XADD: the last node of the stream
	it = tree.Seek(radix.Last, nil)
	if it.Next() { tail = it.Value() }

The seek result is reported by whichever of Next and Prev is called first, so
Seek(GE, k) followed by Prev yields the smallest key >= k and then the keys
below k, in descending order. An iterator that finds nothing, or that runs
off either end, is exhausted and stays so until it is seeked again.

Modifying the tree while an iterator is open is allowed. The iterator detects
any insertion or deletion made since it last moved and finds its place again
by key: Next reports the smallest key above the key last reported, in the
tree as it is now, and Prev the largest key below it. For example, deleting
each key right after visiting it, as a trim does, works as expected. The
re-descent costs a seek, so the stream code prefers to collect and then
modify, or to re-seek.

All and Backward return range-over-func iterators over the whole tree.

# Layout

A plain trie spends one node per key byte. Here are the keys "roam", "roams"
and "roast" in one; * marks a node where a key ends:

	     (.)
	      | r
	     (.)
	      | o
	     (.)
	      | a
	     (.)
	   m /  \ s
	  (*)    (.)
	 s |      | t
	  (*)    (*)
	"roams" "roast"

A compressed (radix) tree stores each run of bytes that only one path uses
as the prefix of a single node, so a node exists only where keys branch or
end. In this package a child slot also holds a value directly when the key
ends right after the slot's edge byte and nothing continues below it; such a
"bare value" needs no node at all. The same three keys:

	      +-----------------------+
	      | prefix "roa"          |  no value
	      | edges    m      s     |
	      +----------|------|-----+
	                 |      |
	      +----------+      +-------------+
	      v                               v
	+-------------------+         +----------------+
	| prefix ""         |         | prefix "t"     |  (a leaf)
	| value of "roam"   |         | value of       |
	| edges  s          |         |   "roast"      |
	|        bare value |         +----------------+
	|        of "roams" |
	+-------------------+

Inserting "rope", which leaves the prefix "roa" after two bytes, splits that
node: a new node takes the shared part "ro" and branches on the first byte
that differs; the old node keeps the rest of its prefix (here nothing) and
the new key gets a leaf holding its remaining bytes:

	            +-------------------+
	            | prefix "ro"       |  new node
	            | edges   a     p   |
	            +---------|-----|---+
	                      |     |
	        +-------------+     +-----------+
	        v                               v
	+-----------------+            +----------------+
	| prefix ""       |  old node, | prefix "e"     |  new leaf
	| edges  m    s   |  prefix    | value of       |
	+--------|----|---+  cut       |   "rope"       |
	         |    |                +----------------+
	   (as before: "roam" and "roams" under m,
	    the leaf "t" for "roast" under s)

Deletion undoes this: a node left with neither a value nor children is
removed, and a node left without a value and with a single child is merged
with that child (prefix + edge + child's prefix), or turned into a leaf when
the child is a bare value. A leaf whose prefix would be empty is always
stored as a bare value instead. So a given set of keys has exactly one
shape, however it was built; only the node kinds below may differ, as a node
shrinks to a smaller kind later than it grew.

# Node memory

Nodes come in five kinds, chosen by the number of children. Every kind begins
with the same header, 32 bytes when V is a pointer (sizes below are for
amd64 and a pointer V):

	header:  prefix (string: pointer, length) | value V | hasValue bool
	         16                                 8         1 + 7 padding

	leaf     header                                                 32 bytes
	         (no children)

	node4    header | n | edges [4]byte | values [4]V | kids *[4]   80 bytes
	node16   header | n | edges [16]byte | values [16]V | kids *[16] 192 bytes
	         edges sorted; values[i] is the bare value of edge i, or
	         kids[i] its subtree; the [N]node kids array (16 bytes an entry)
	         is allocated only once some child is a subtree

	node48   header | n | index [256]uint8 | values *[48] | kids *[48] 312 bytes
	         index[b] is edge b's slot + 1, 0 when absent

	node256  header | n | bitmap [4]uint64 | values *[256] | kids *[256] 88 bytes
	         indexed by edge byte; the bitmap makes ordered scans fast

A node grows to the next kind when full (4, 16, 48 children) and shrinks back
at 3, 12 and 40 children.

For 1,000,000 sequential IDs with ten per millisecond, each millisecond's ten
keys share their first 15 bytes, so they end up as one node16 whose prefix is
the seven zero bytes of the sequence number and whose ten bare values are
the keys' values: 192 bytes for ten keys, in one allocation. Above those sit
node256s branching on the low bytes of the milliseconds. The whole tree takes
about 23 bytes per key, where Redis's rax needs about 30 (a compressed node, a
ten-way node and ten leaf nodes per millisecond).
*/
package radix
