// Package server serves the Redis protocol: connections, the command
// table, the keyspace and every command's implementation.
//
// # A request's way through
//
// One event loop serves every client (loop_linux.go), as Redis's does:
//
//	event loop (one goroutine, its own thread)      keyspace lock
//	──────────────────────────────────────────      ─────────────
//	epoll_wait: which sockets are ready
//	                                                ──lock──▶
//	read each ready socket once (resp.Reader.Fill)
//	end the blocked waits whose timeout passed (timer heap)
//	for each client with complete commands, a turn:
//	  resp.Reader.Next, then lookupCommand, arity,
//	  auth, OOM, MULTI queueing (dispatch.go);
//	  execute: handler(*Ctx) writes the reply into
//	  the client's buffer; a write queues
//	  Record{time,db,argv}; serveReady re-runs the
//	  blocked clients whose keys it made ready
//	commit: Log.Append(the pass's records) once
//	                                                ◀─unlock─
//	Log.Wait(the newest ticket a reply may show)
//	                                                ──lock──▶
//	write each client's replies, one write(2) each
//	                                                ◀─unlock─
//
// A turn runs a client's pipelined commands until one blocks, or 128
// have run, or their replies pass 256 KB, or they have run for 1 ms
// (client.go); the rest wait for the client's next turn, after its
// replies are written. When the socket takes less than a client's
// output, the client is held: the loop waits for EPOLLOUT and runs none
// of its commands meanwhile, so a client that stops reading holds one
// turn's output, which `timeout` and client-output-buffer-limit end
// (outputlimit.go). A big reply's buffer is dropped once written, and
// the cron returns that memory to the OS after 64 MB of them (or at the
// end of a burst), instead of leaving it resident until the runtime gets
// round to it.
//
// Other goroutines — the cron, a background save's walk, a CLAIM timer
// — take the lock between the loop's passes; one that leaves a reply to
// write wakes the loop through an eventfd.
//
// # One deterministic state machine
//
// Every write — live, inside EXEC, re-run for a blocked client, or
// replayed from a log — runs through execute, and reads its clock from
// the record's time (Ctx.now), never from the wall. A blocking command
// that was served is logged as its non-blocking form (BLPOP k1 k2 → LPOP
// k2), and an expired key a write finds is deleted with a logged DEL, so
// ApplyBatch(records) rebuilds exactly the state the live server had
// (apply.go: AOF replay applies a frame at a time; a Raft FSM will apply
// a committed entry). Reads are pure: an expired key a read finds is
// only missing to it, so reads never make records. Restore (restore.go)
// swaps in a whole keyspace built aside, as a follower installing a
// snapshot will.
//
// A reply leaves only when every write it may show is durable: a batch
// that ran a command waits for the log's newest ticket, not only its own
// (commitBy), as every reply of a Redis event-loop turn waits for the
// turn's fsync.
//
// # Snapshots
//
// Taking one is O(1) under the lock: objects carry the epoch of their
// last write, the reader walks the live maps a chunk at a time, and a
// write to a key the walk has not reached hands the snapshot the key's
// value first (snapshot.go). The walk state is the database's (DB.walk),
// so snapshots of disjoint databases are walked at once; a database is
// walked by one at a time. BGSAVE and BGREWRITEAOF, which take every
// database, follow Redis's one-child rule (cmd_persist.go).
//
// # The keyspace
//
//	Server (the node: listeners, event loop, clients, commands, config, stats)
//	 └─ shard *Shard (shard.go: mu, the log's queue, snapshot, ready keys)
//	     └─ dbs[i] *DB
//	         ├─ keys     map[string]*Object     ─▶ Object{value, expireAt, access, ver, seen}
//	         │                                      value: []byte          string
//	         │                                             *listpack.Quicklist list
//	         ├─ expires  map[string]int64       keys with a TTL (active expiry samples it)
//	         ├─ order    btree of (hash, key)   slot-major; SCAN's cursor is a hash position
//	         ├─ aged     btree of keys          streams with MAXAGE, for the age sweeper (retention.go)
//	         ├─ waiters  map[string]*list.List  blocked clients per key, FIFO
//	         ├─ watchers map[string][]*Client   WATCHing clients per key
//	         └─ walk     *dbWalk                the snapshot walk its writes hand old values to (snapshot.go)
//
// The node serves one Shard today and shares its lock; replication will
// give each Raft group a Shard of its own, and a node will host several
// (shard.go says what that changes). A command runs against its
// database's shard (Ctx.db.shard).
//
// Values are compact: a list is a quicklist of listpack byte blocks in
// Redis's own format, so the garbage collector sees one pointer per node of
// about 8 KB, not one per element.
//
// # Blocking
//
// See blocking.go: a blocked client waits on a per-key FIFO; writes
// signal their key; after each command the server re-runs, in arrival
// order, the command of each client waiting on a ready key. The loop
// keeps reading a blocked client's socket, so a disconnect is seen
// before the pass runs anyone's commands, and a client gone that way
// takes nothing. A served client's reply joins its buffer and is written
// in the same pass as the pusher's: a delivered message costs one read
// and one write per side, as in Redis, and no goroutine is woken.
//
// # Why an event loop (issue 17)
//
// The server used to run a goroutine per connection. What stood between
// it and Redis on the queue's hot path was the Go scheduler, not our
// code's system calls. Measured with the delivery rows of `redstream
// bench` (server CPU per delivered message, ratio to redis-server 7.0 in
// the same run, 5 rounds, scale 0.3), with bench/loopproto — the
// smallest server that runs those rows, built both ways — standing in
// for redstream (`--redstream /tmp/loopproto`):
//
//	                               list queue 4P/8C   list delivery 5000/s
//	redstream, goroutine per conn       1.92x              1.47x
//	loopproto, goroutine per conn       1.28x              1.26x
//	loopproto, one epoll thread         0.84x              0.98x
//
// (2026-12-01, a loaded 2-core machine.) A perf profile of the goroutine
// server on the list queue row: write(2) 34% and read(2) 11% (in Redis
// too, loopback sends run the receiver's TCP stack), the scheduler 25%
// (findRunnable, park, sysmon waking to retake Ps from threads in
// syscalls), our own code under 15%. Goroutines parked in netpoll and
// woken per request cost about a quarter more CPU than an event loop
// even when nothing else differs; so the server became the event loop
// above. Its own figures are in the closing note of issue 17.
//
// The loop waits for the log inside its pass, as Redis's beforeSleep
// writes and fsyncs the AOF: one fsync covers every client of the pass.
// A Raft commit waits for the network, so replication will hold replies
// in their clients' buffers until the log signals their ticket (an
// eventfd, like the wake above) instead of waiting in the pass.
//
// Lock order is in locking.md.
package server
