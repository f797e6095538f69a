package server

import (
	"sync"
	"time"

	"github.com/redstream/redstream/resp"
)

// Shard is one keyspace and the state machine that changes it: its
// databases, the records its writes queue for its log, the snapshots being
// walked, and which blocked clients its writes may serve. The node
// (Server) owns what is not the keyspace's: listeners, the event loop and
// its clients, the command table, configuration, statistics, the slow log
// and the persister. Replication will give each Raft group one Shard,
// and a node will host many, routed to by Redis Cluster slot.
//
//	Server (node): listeners, loop, clients, commands, cfg, stats, slowlog
//	 └─ shard *Shard: mu, dbs, pending, log, snap, ready, served
//
// The node has exactly one shard today, and its client table shares the
// shard's lock: Shard.mu guards the keyspace and everything of the node's
// that locking.md lists, and the loop holds it for a whole pass. With
// several shards, each has its own mu, and the loop's pass takes the lock
// of the shard a command routes to; clients and node statistics then need
// a lock of their own. Nothing of that is built yet.
//
// Statistics and configuration stay on the node: a shard's commands are
// counted where the node counts every command, and the configuration is
// one per process. The exception is dirty (rdb_changes_since_last_save),
// trivially the shard's: it counts changes since the shard's last
// snapshot was saved, and a snapshot is of one shard.
//
// What a Raft group's state machine will call is the shard's: ApplyBatch,
// Restore, Freeze. They reach the node through Shard.node for what is the
// node's: the command table and execute (which counts the command), the
// clients that WATCH or wait on keys, the configuration. The node's
// Server methods of the same names act on its one shard. Code that needs
// the node and the shard alike (commit, serveReady, blockClient, the
// loop) stays on Server and reaches the shard as s.shard; a command's
// shard is its database's (Ctx.db.shard).
type Shard struct {
	// mu is the keyspace lock. Every field below it is guarded by mu.
	// See locking.md for the order.
	mu sync.Mutex

	node     *Server
	dbs      []*DB
	log      Log       // where applied writes go to become durable; nil: none
	lastTime int64     // newest record time handed out (ms); keeps time monotonic
	pending  []Record  // records of the command being executed, logged at commit
	writers  []*Client // the clients whose writes are in pending (Client.woff)
	// pendingChanges counts the records in pending that change data, not
	// only delivery bookkeeping (Ctx.bookkept): what dirty counts.
	pendingChanges int64
	dirty          int64        // changes since the last save: rdb_changes_since_last_save
	resized        []resizedKey // objects the command being executed may have grown or shrunk (memory.go)
	lastTicket     uint64       // the log's newest ticket: what any reply may show (commitBy)
	epoch          uint32       // bumped by each snapshot; objects carry the one of their last write
	snap           []*Snapshot  // the snapshots being walked beside the server; nil: none (snapshot.go)
	ready          []readyKey   // keys a write may have made servable to blocked clients
	served         []*Client    // blocked clients served by the current command
	replayW        resp.Writer
	replayCtx      Ctx        // the record being applied (ApplyBatch)
	delays         delayIndex // which stream has delayed entries due next (stream_delay.go)
}

// newShard returns a shard of node with n empty databases, logging to log.
func newShard(node *Server, n int, log Log) *Shard {
	sh := &Shard{
		node:  node,
		log:   log,
		epoch: 1, // never 0: an object's seen is 0 until a snapshot takes it
	}
	sh.dbs = make([]*DB, n)
	for i := range sh.dbs {
		sh.dbs[i] = newDB(sh, i)
	}
	return sh
}

// now returns the time for the next record in ms: the wall clock, but
// never earlier than a time already handed out. Lock should be held.
func (sh *Shard) now() int64 { return sh.nowFrom(time.Now()) }

// nowFrom is now for a clock reading the caller already has.
func (sh *Shard) nowFrom(wall time.Time) int64 {
	t := wall.UnixMilli()
	if t < sh.lastTime {
		return sh.lastTime
	}
	sh.lastTime = t
	return t
}
