/*
Package slotmap holds the cluster map of a partitioned redstream cluster:
its nodes, its Raft groups, which group owns each of the 16384 Redis
Cluster hash slots, and which slots are moving from one group to another.

It is plain data. Nothing here speaks Raft or the network, reads the clock
or draws random numbers, so applying the same ops in the same order gives
the same map on every node.

# Who changes it

The map is the state of the cluster's small metadata Raft group. Every
change is an Op: `redstream cluster` and the slot mover propose an encoded
Op to the metadata group, and once the entry commits every node decodes it
and calls Map.Apply, in log order. An op that Apply refuses changes nothing
(not even Epoch), and refuses alike on every node, so the map never forks.
Snapshots of the metadata group are Map.Encode; restoring one is DecodeMap.
Every node renders CLUSTER SLOTS, SHARDS and NODES from its map (Ranges,
Groups, Nodes), naming each group's current leader (Leader) as master,
also for groups the node does not host: each group's leader records
itself with SetLeader once elected.

	m := new(slotmap.Map)
	m.AddNode(slotmap.Node{ID: id, Addr: "10.0.0.1:6379", BusAddr: "10.0.0.1:16379"})
	m.CreateGroup(1, []string{id})
	m.AssignSlots([]slotmap.Range{{First: 0, Last: 16383}}, 1)
	m.Owner(12182) // 1

# Invariants

  - Every slot has at most one owner: a group that exists, or 0, unassigned.
  - A moving slot has an owner, and a target that exists and differs from
    it. Moves begin (BeginMove) only on slots owned by one group, and end
    with FinishMove (the target becomes the owner) or AbortMove.
  - Every voter of a group is a known node, listed once; a group has at
    least one voter. A node that is a voter cannot be removed, nor a group
    that owns slots or is a move's target.
  - A group has at most one recorded leader, with the Raft term it leads
    in (1 or more); that leader is one of its voters. Terms recorded for a
    group only grow, and each names one leader. Removing the group drops
    its record (a group created again under its ID is a new Raft group,
    whose terms start over); a SetVoters that drops the leader clears the
    leader but keeps the term.
  - Node IDs are 40 characters of [0-9a-z] (what CLUSTER ADDNODE accepts),
    addresses host:port with a port of 1..65535, group IDs 1..65535.

Epoch counts the successful ops, as Redis's config epoch counts
configuration changes: nodes that apply the same log have the same map at
the same Epoch.

# Encoding

Both encodings start with a version byte (Version, now 1). Integers are
big-endian; a string is its length (u16) and its bytes; a list is its
count (u32) and its items; a range is two u16 slots, first and last, both
included.

An Op, one Raft entry:

	+---------+------+--------------------+
	| version | kind | fields of the kind |
	+---------+------+--------------------+
	   u8       u8

	kind                 fields
	1 add-node           id string | addr string | bus-addr string
	2 remove-node        id string
	3 create-group       group u16 | voters: count u32, count × string
	4 remove-group       group u16
	5 assign-slots       group u16 | ranges: count u32, count × (first u16 | last u16)
	6 begin-move         group u16 (the target) | ranges
	7 finish-move        ranges
	8 abort-move         ranges
	9 set-voters         group u16 | voters
	10 set-leader        id string | group u16 | term u64

Every kind writes its fields in one order shared by all kinds (node, node
ID, group, voters, ranges, term), so set-leader's node ID comes before its
group.

So "assign slots 0-5460 to group 1" is

	01 05 0001 00000001 0000 1554
	|  |  |    |        |    last 5460
	|  |  |    |        first 0
	|  |  |    one range
	|  |  group 1
	|  assign-slots
	version 1

A Map, one snapshot:

	+---------+-------+-------+--------+--------+-------+---------+
	| version | epoch | nodes | groups | owners | moves | leaders |
	+---------+-------+-------+--------+--------+-------+---------+
	   u8       u64

	nodes    count u32, count × (id string | addr string | bus-addr string), by ID
	groups   count u32, count × (group u16 | voters), by group ID
	owners   count u32, count × (first u16 | last u16 | group u16)
	moves    count u32, count × (first u16 | last u16 | target u16)
	leaders  count u32, count × (group u16 | id string | term u64), by group ID

owners lists the assigned slots as maximal runs of one owner, in slot
order; moves does the same for the moving slots and their targets (a
moving slot's source is its owner). leaders has one record per group that
has one; id is empty (length 0) when the recorded leader has left the
voters and only its term is kept.

Decoding is strict: it returns an error wrapping ErrCorrupt, and never
panics, for an unknown version or kind, short input, trailing bytes,
out-of-range slots, overlapping runs, duplicate nodes or groups, anything
out of the order above or not merged into maximal runs, and any map that
breaks an invariant or op that could never apply. So whatever decodes
encodes back to the same bytes.
*/
package slotmap
