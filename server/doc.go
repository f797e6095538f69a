// Package server serves the Redis protocol: connections, the command
// table, the keyspace and every command's implementation.
//
// # A request's way through
//
//	conn goroutine                     keyspace lock held
//	──────────────                     ──────────────────
//	resp.Reader.Next ×N  (a pipeline)
//	                      ──lock──▶    for each command of the turn:
//	                                     lookupCommand, arity, auth, OOM,
//	                                     MULTI queueing  (dispatch.go)
//	                                     execute: handler(*Ctx) writes the
//	                                       reply into the client's buffer;
//	                                       a write queues Record{time,db,argv}
//	                                     serveReady: re-run blocked clients
//	                                       whose keys this made ready
//	                                   commit: Log.Append(records) once
//	                                   check the client's output limit
//	                      ◀─unlock──
//	wait(durable) ─▶ conn.Write(the replies)
//
// A turn (one hold of the lock) runs a pipeline's commands until one
// blocks, or 128 have run, or their replies pass 256 KB, or they have run
// for 1 ms; the replies are written when the input runs dry or before the
// next turn once they pass 64 KB (client.go). So a pipeline of big or
// slow commands lets other clients in between, and a client that stops
// reading holds one turn's output: its goroutine waits in the write,
// which `timeout` and client-output-buffer-limit end (outputlimit.go).
// A big reply's buffer is dropped once written, and the cron returns
// that memory to the OS after 64 MB of them (or at the end of a burst),
// instead of leaving it resident until the runtime gets round to it.
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
// value first (snapshot.go). One is walked at a time; BGSAVE and
// BGREWRITEAOF follow Redis's one-child rule (cmd_persist.go).
//
// # The keyspace
//
//	Server
//	 └─ dbs[i] *DB
//	     ├─ keys     map[string]*Object     ─▶ Object{value, expireAt, access, ver, seen}
//	     │                                      value: []byte          string
//	     │                                             *listpack.Quicklist list
//	     ├─ expires  map[string]int64       keys with a TTL (active expiry samples it)
//	     ├─ order    btree of (hash, key)   SCAN's cursor is a hash position
//	     ├─ waiters  map[string]*list.List  blocked clients per key, FIFO
//	     └─ watchers map[string][]*Client   WATCHing clients per key
//
// Values are compact: a list is a quicklist of listpack byte blocks in
// Redis's own format, so the garbage collector sees one pointer per node of
// about 8 KB, not one per element.
//
// # Blocking
//
// See blocking.go: a blocked client waits on a per-key FIFO; writes
// signal their key; after each command the server re-runs, in arrival
// order, the command of each client waiting on a ready key. The connection
// goroutine of a blocked client keeps reading its socket, so a disconnect
// is seen at once, and a waiter whose peer has closed is never served.
//
// A served client's reply is written by the pusher on the served
// client's socket, in the pusher's turn (handoff.go); the served
// goroutine is not woken, and parks in its read until its client sends
// again. So a delivered message costs one read and one write per side,
// as in Redis.
//
// # Why a goroutine per connection, and what it costs (issue 17)
//
// What remains between this server and Redis on the queue's hot path is
// the Go scheduler, not our code's system calls. Measured with the
// delivery rows of `redstream bench` (server CPU per delivered message,
// ratio to redis-server 7.0 in the same run, 5 rounds, scale 0.3), with
// bench/loopproto — the smallest server that runs those rows, built both
// ways — standing in for redstream (`--redstream /tmp/loopproto`):
//
//	                               list queue 4P/8C   list delivery 5000/s
//	redstream                           1.92x              1.47x
//	loopproto, goroutine per conn       1.28x              1.26x
//	loopproto, one epoll thread         0.84x              0.98x
//
// (2026-12-01, a loaded 2-core machine; on a quiet one redstream was
// 1.46x and 1.65x.) A perf profile of redstream on the list queue row:
// write(2) 34% and read(2) 11% (in Redis too, loopback sends run the
// receiver's TCP stack), the scheduler 25% (findRunnable, park, sysmon
// waking to retake Ps from threads in syscalls), our own code under 15%.
// Goroutines parked in netpoll and woken per request cost about a
// quarter more CPU than an event loop even when nothing else differs.
//
// Decision: the connection layer becomes an event loop — one
// thread in epoll_wait that reads, runs turns and writes, with replies
// that wait for durability (fsync now, Raft commit later) held in the
// client's buffer until the log signals their ticket, blocked clients
// with no goroutine at all, timeouts from a timer heap, and big replies
// written on EPOLLOUT. Until it lands (issue 17 stays open), the
// goroutine model above is the one to read; its turn bounds, output
// limits and handoff rules carry over unchanged.
//
// Lock order is in locking.md.
package server
