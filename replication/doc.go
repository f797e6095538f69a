// Package replication makes a redstream node a voter of Raft groups
// (hashicorp/raft), so that a write is acknowledged only once a majority
// of its group holds it durably, and losing any one node of three loses
// nothing acknowledged.
//
// # Groups on a node
//
// A Node is what a process has once: its ID, its one Raft port (the Mux,
// mux.go, which every group's traffic shares) and the server. Each group
// it hosts is a Group (group.go): one raft instance with its own log,
// snapshots, transport (its stream of the Mux), leadership watch and
// heartbeat tracking, all timed from cluster-node-timeout alike. The
// groups differ only in their directory and their state machine. The main
// group, group 1, applies to the server's database 0 (fsm.go) and is what
// the Node's server.Cluster methods report and propose to; its files are
// directly under DIR/raft (wal/, snapshots/), where a node of one group
// has always kept them. Node.OpenGroup opens any other group, with its
// files under DIR/raft/groups/<id>/; its voters are bootstrapped all at
// once (Group.Bootstrap) or added by its leader, and its leader can hand
// leadership to a given voter (Group.TransferLeadership), as balancing
// leaders over nodes needs. Node.HostDataGroup opens a group whose state
// machine is the server's too, at database id-1, and hands it to the
// server, which sends it the commands of the slots it is given
// (server/groups.go). Closing the node closes every group. The
// metadata group (meta.go, group 0) is such a group too: every node runs
// it, it holds the cluster map, and each node opens the data groups the
// map makes it a voter of (partitions.go). Slots move between groups
// with Redis Cluster's user-facing contract, -ASK and ASKING, and a
// mover that copies keys as a client of the target group (moves.go; the
// argument that every key stays in exactly one group, with no entry in
// the source's log marking the move, is in server/moves.go). The rest of
// this page describes one group, the main one.
//
// A cluster process sizes GOMAXPROCS by its load (procs.go, started by
// the server command): one P while it uses less than most of a core,
// since each goroutine hand-off below costs a thread wake-up while a P
// is idle.
//
// # A write's way
//
//	client ──RPUSH q x──▶ leader's event loop (server/propose.go)
//	                        │ a turn makes the command a record
//	                        │ {time: leader clock, db, argv}; the pass's
//	                        │ records become ONE entry (group commit)
//	                        ▼
//	                      raft.Apply(entry) ─┬─▶ leader's log writer: raft-wal append+fdatasync ─┐
//	                        │  (at once)       ├──AppendEntries──▶ follower 1: append+fdatasync ──┤
//	                        │                  └──AppendEntries──▶ follower 2: append+fdatasync ──┤
//	                        │                                                                     │
//	                      any two of the three hold it durably: committed ◀───────────────────────┘
//	                        │
//	                        ▼ every node, in log order (fsm.ApplyBatch):
//	                      server.ApplyEntry: each record through the server's
//	                      one apply (execute, the clock from the record)
//	                        │ on the leader only: the apply's reply goes to
//	                        ▼ the client that sent it
//	client ◀──:1────────── leader's event loop writes it
//
// The keyspace never holds a write the group has not committed: nothing
// runs a write before its entry is applied, on any node, and the reply a
// client gets is what that apply produced. So no client can observe a
// write that a lost leader proposed and the group never committed, and a
// proposal that fails leaves nothing to undo. (The alternative, executing
// on the leader and logging the result, would need the deposed leader to
// roll its keyspace back; Raft gives no such step.)
//
// The leader stamps each record with its clock, never below the newest
// record time it has applied (server.Shard.now), so `*` IDs, delivery and
// idle times and expiries are the same on every node and across leader
// changes (DESIGN principle 2).
//
// The leader writes its own log while the followers write theirs
// (third_party/raft, a copy of hashicorp/raft v1.8.0 with this change,
// four fixes and a hand-written AppendEntries encoding; REDSTREAM.md
// there says what and why). Upstream, the leader
// fsyncs a batch before it sends it, so a commit waited for two fsyncs
// in a row. The leader still counts itself as holding an entry only
// once its own write has returned, so "committed" keeps meaning "durable
// on a majority": the two followers may commit an entry before the
// leader's disk answers, which the Raft thesis (section 10.2.1) shows
// is safe. A leader whose log write fails steps down; its batch may be
// on followers and committed by the next leader, so its clients get the
// unknown-outcome error. Segments sync with fdatasync, as the AOF does
// (raft-wal preallocates them, so there is no size to commit).
//
// WAIT and INFO replication count a follower by its match index (how
// far its log is known to hold the leader's), which the copy exposes.
// WAITAOF's local count is the leader's own match index, set once its
// log writer has stored an entry: the followers alone may have committed
// it before.
//
// # Reads
//
// A read on the leader waits for one VerifyLeader per event-loop pass (a
// majority still follows it), then runs on the keyspace, which holds every
// write acknowledged before the read began (those were applied before they
// were acknowledged). A new leader serves only after a Barrier: every
// entry of earlier terms applied. A paused or isolated old leader that
// still believes it leads cannot confirm with a majority, so it answers
// no read from stale state; it acknowledges no write either, since its
// entries never commit. READONLY on a follower allows stale reads, as on
// Redis Cluster replicas.
//
// # Blocking commands
//
// BLPOP and friends are proposed like any write. Applied for a client of
// this node, a blocking command that finds nothing leaves the state as it
// was and tells the leader where the client would wait; the client waits
// on the leader's key queues (FIFO, as in Redis). When a committed write
// makes such a key ready, the leader proposes the waiter's command again,
// in queue order, as many waiters as a list holds elements; what it takes
// is the apply's. A waiter whose re-try
// finds nothing goes on waiting in its place. A client that disconnects
// while its re-try is in the log takes nothing: BLPOP/BRPOP push what the
// re-try popped back (other pops may have run between); BLMOVE's element
// is in its destination and XREADGROUP's entries are pending in the group,
// so nothing is lost there. BLMPOP gives back like BLPOP. A node that stops
// leading answers its waiters with -MOVED to the new leader (or
// -CLUSTERDOWN while there is none); clients retry there.
//
// # Expiry
//
// A node never deletes an expired key by its own clock: the others would
// not. Reads treat a key past its time as missing; a write that touches
// it deletes it at the record's time, the same on every node; and the
// leader's expire cycle proposes PEXPIREAT key at GT for each expired key
// it samples, which deletes the key that expired and leaves one that was
// set again since.
//
// # Transactions
//
// MULTI/EXEC is one entry: its records apply under one hold of the lock
// on every node. WATCH lives on the leader (a follower answers -MOVED,
// or watches locally under READONLY, as a Redis Cluster replica does).
// The watches are marked when writes are applied, so a watched EXEC with
// writes waits until every entry the leader has proposed is applied,
// holding newer records back, then checks: every entry before it in the
// log is then applied here (its own drained, earlier terms' before it
// began to serve), and every later one comes after it. The wait is bounded
// by cluster-node-timeout (-CLUSTERDOWN, nothing proposed). The argument
// in full is in server/propose_watch.go.
//
// # Outcomes
//
// A write the node could not propose (it does not lead, or it is handing
// leadership over) answers -MOVED or -CLUSTERDOWN: nothing was applied,
// retrying is safe. A write whose entry was in the log when the node
// stopped leading waits for the new leader's log to settle it (argued in
// outcome.go): it gets its own reply if the entry was committed, and
// -CLUSTERDOWN if another entry took its place. One left unsettled (no
// new leader heard within two election timeouts, a snapshot installed
// meanwhile, the group shut down) answers
//
//	-UNKNOWN the write was proposed but its outcome is unknown ...
//
// It may or may not have been applied. A producer retries such a write
// safely with XADD IDMP (the stream remembers the producer's idempotent ID,
// in the replicated state, so a retry on the new leader returns the first
// ID and adds nothing).
//
// # The log, snapshots and restarts
//
// The Raft log is the node's only write-ahead log: a cluster-enabled node
// keeps no AOF and takes no save points. raft-wal holds the log (segment
// files appended in place, one fsync per append batch) and the stable
// store; raft-boltdb would rewrite B-tree pages per batch. A Raft
// snapshot is the members' client addresses and then the keyspace as an
// RDB file, taken copy-on-write (O(1), DESIGN principle 5) and written
// while writes go on; Restore replaces the whole keyspace. A restart
// restores the newest snapshot and applies the committed entries after
// it, once: the keyspace lives only in memory, so nothing is applied
// twice. raft-snapshot-threshold and raft-trailing-logs set how often a
// snapshot is taken and how much log stays behind it for slow followers.
//
// # Disk faults
//
// Before Raft starts, a node checks its own disk (diskcheck.go), since
// raft-wal verifies only the newest batch it wrote: every batch of every
// log segment against its commit frame's CRC-32C, and, when the log does
// not reach back to an older snapshot, the newest snapshot's checksum. A
// torn last batch (a crash during a write) is dropped and fetched again
// from the leader. Any other damage refuses the start with ErrDamaged,
// naming the file and offset and what to do: remove the node from the
// group, empty DIR/raft, add it again; it then catches up from the
// others. A node never votes or leads with a hole in its log. Each group
// checks its own directory the same way when it opens.
//
// # Membership
//
// A member's client address (for -MOVED and CLUSTER SLOTS) is an 'M'
// entry in the log, committed before the member is made a voter, so every
// node can name every voter. The node's ID (40 hex characters) is kept in
// DIR/raft/node-id. A node joins a group (the main one, or a data group
// the map makes it a voter of) as a non-voter and is made a voter once it
// holds the log the group had when it joined (Group.AddCaughtUp): a voter
// that cannot answer yet would count for the majority at once, and with
// one of three voters down, adding it would stop the group. A data
// group's leader adds the map's new voters this way in goroutines of
// their own and removes the voters the map dropped meanwhile
// (partitions.go addGroupVoter). A node removed from the cluster hands
// the data groups it leads to another voter at once (syncGroupVoters):
// the metadata group drops it as soon as the map forgets it, possibly
// before it has applied the change that names its replacement. An add
// that gives up leaves the node a non-voter that keeps copying; the
// leader's INFO replication shows it (state=send_bulk) and CLUSTER
// DELNODE removes it.
package replication
