// Copyright (c) redstream authors
// SPDX-License-Identifier: MPL-2.0

package raft

import (
	"fmt"
	"sync"
	"time"
)

// redstream's addition to hashicorp/raft: the leader writes its own log
// in a goroutine of its own, while its replicators send the same entries
// to the followers (Raft thesis, section 10.2.1). See REDSTREAM.md.

// inFlightLogs holds the entries the leader has dispatched and its log
// store does not hold yet, in index order. Replicators read them here;
// the log writer takes them from the front once they are durable.
type inFlightLogs struct {
	mu   sync.RWMutex
	logs []*Log
	// stored is the batch written last. A follower's next request names
	// its last entry as the previous one, so keeping it saves a read from
	// the store per request.
	stored []*Log
}

func (f *inFlightLogs) add(logs []*Log) {
	f.mu.Lock()
	f.logs = append(f.logs, logs...)
	f.mu.Unlock()
}

// pending returns the entries not yet written. Later adds do not change
// the slice returned: they only append past its end.
func (f *inFlightLogs) pending() []*Log {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.logs[:len(f.logs):len(f.logs)]
}

// dropThrough forgets the entries up to index, which the store now holds.
func (f *inFlightLogs) dropThrough(index uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for n < len(f.logs) && f.logs[n].Index <= index {
		n++
	}
	f.stored = f.logs[:n:n]
	f.logs = append([]*Log(nil), f.logs[n:]...)
}

// clear forgets everything: a server that stops leading may see its log
// rewritten by the next leader, so what it wrote as leader may not stay.
func (f *inFlightLogs) clear() {
	f.mu.Lock()
	f.logs, f.stored = nil, nil
	f.mu.Unlock()
}

// get copies the entry at index into out, if it is in flight or was in
// the batch written last.
func (f *inFlightLogs) get(index uint64, out *Log) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return copyFrom(f.logs, index, out) || copyFrom(f.stored, index, out)
}

// copyFrom copies the entry at index from logs, consecutive entries.
func copyFrom(logs []*Log, index uint64, out *Log) bool {
	if len(logs) == 0 || index < logs[0].Index || index > logs[len(logs)-1].Index {
		return false
	}
	*out = *logs[index-logs[0].Index]
	return true
}

// replicatedLog reads the entry at index for a follower: from the
// entries in flight, else from the log store. The writer drops entries
// only after the store holds them, so one of the two always has it.
func (r *Raft) replicatedLog(index uint64, out *Log) error {
	if r.inFlight.get(index, out) {
		return nil
	}
	return r.logs.GetLog(index, out)
}

// leaderLogWriter is the goroutine that makes the leader's entries
// durable. All that is in flight when it wakes goes to the store as one
// StoreLogs call (one fsync), so a slow disk makes bigger batches rather
// than a queue.
type leaderLogWriter struct {
	wake   chan struct{} // an entry was added (capacity 1)
	stop   chan struct{}
	done   chan struct{}
	failed chan error // the store failed: the leader steps down (capacity 1)
}

func (r *Raft) startLeaderLogWriter(c *commitment) *leaderLogWriter {
	w := &leaderLogWriter{
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		failed: make(chan error, 1),
	}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.wake:
			case <-w.stop:
				// What is in flight is written before a follower's
				// code may use the store.
				if err := r.writeInFlight(c); err != nil {
					r.logger.Error("failed to write logs while stepping down", "error", err)
				}
				return
			}
			if err := r.writeInFlight(c); err != nil {
				w.failed <- err
				return
			}
		}
	}()
	return w
}

// writeInFlight stores every entry in flight and counts the leader as
// holding them.
func (r *Raft) writeInFlight(c *commitment) error {
	logs := r.inFlight.pending()
	if len(logs) == 0 {
		return nil
	}
	if err := r.logs.StoreLogs(logs); err != nil {
		return err
	}
	last := logs[len(logs)-1].Index
	r.inFlight.dropThrough(last)
	c.match(r.localID, last)
	return nil
}

// stopLeaderLogWriter waits for the writer to finish, then settles the
// log (settleLeaderLog) and forgets what it kept: a server that stops
// leading may see its log rewritten by the next leader.
func (r *Raft) stopLeaderLogWriter(w *leaderLogWriter) {
	close(w.stop)
	<-w.done
	r.settleLeaderLog(w)
	r.inFlight.clear()
}

// settleLeaderLog waits until the store holds every entry this leader
// dispatched, so that the last log index is the store's, before code
// that may rewrite the log runs. If the writer failed, the entries it
// could not write are forgotten and the last log index goes back to
// what the store holds: they were never committed with this node's
// vote, and followers that hold any may still commit them under a new
// leader.
func (r *Raft) settleLeaderLog(w *leaderLogWriter) {
	for len(r.inFlight.pending()) > 0 {
		select {
		case <-w.done:
			if len(r.inFlight.pending()) > 0 {
				r.forgetUnwritten()
			}
			return
		case <-time.After(100 * time.Microsecond):
		}
	}
}

// forgetUnwritten drops the entries in flight and sets the last log
// index back to what the store holds.
func (r *Raft) forgetUnwritten() {
	r.inFlight.clear()
	last, err := r.logs.LastIndex()
	var entry Log
	if err == nil && last > 0 {
		err = r.logs.GetLog(last, &entry)
	}
	if err != nil {
		r.logger.Error("failed to read the last log after a failed write", "error", err)
		return
	}
	r.setLastLog(last, entry.Term)
}

// MatchIndexes returns, while this server leads, the index up to which
// each voter's log is known to hold the leader's entries durably (the
// leader's own included); nil when it does not lead. redstream answers
// WAIT and INFO replication from it.
func (r *Raft) MatchIndexes() map[ServerID]uint64 {
	c := r.matchView.Load()
	if c == nil {
		return nil
	}
	c.Lock()
	defer c.Unlock()
	out := make(map[ServerID]uint64, len(c.matchIndexes))
	for id, idx := range c.matchIndexes {
		out[id] = idx
	}
	return out
}

// ReplicatedIndex is, while this server leads, the last index the server
// id (a voter or a non-voter) is known to hold, and whether this server
// replicates to it. A non-voter that has caught up can be made a voter
// without leaving the group short of a majority (redstream).
func (r *Raft) ReplicatedIndex(id ServerID) (uint64, bool) {
	s := r.replicator(id)
	if s == nil {
		return 0, false
	}
	return s.replicated.Load(), true
}

// FollowerContact is, while this server leads, when the server id (a
// voter or a non-voter) last answered it, a heartbeat or an
// AppendEntries, and whether this server replicates to it. It starts at
// the time this server began to lead (redstream).
func (r *Raft) FollowerContact(id ServerID) (time.Time, bool) {
	s := r.replicator(id)
	if s == nil {
		return time.Time{}, false
	}
	return s.LastContact(), true
}

// replicator is, while this server leads, its replicator for server id;
// nil otherwise.
func (r *Raft) replicator(id ServerID) *followerReplication {
	view := r.replView.Load()
	if view == nil {
		return nil
	}
	return (*view)[id]
}

// awaitStored waits until this server's log store holds index: a leader
// applies entries the followers made durable before its own writer has
// stored them. It gives up after ten seconds (a failing disk; the
// snapshot is tried again later).
func (r *Raft) awaitStored(index uint64) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		last, err := r.logs.LastIndex()
		if err != nil {
			return err
		}
		if last >= index {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("snapshot up to %d abandoned: the log store holds entries up to %d only", index, last)
		}
		select {
		case <-r.shutdownCh:
			return ErrRaftShutdown
		case <-time.After(time.Millisecond):
		}
	}
}
