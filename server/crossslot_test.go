package server

import (
	"strconv"
	"testing"
)

// In cluster mode a command's keys, and a transaction's, must hash to one
// slot, as Redis Cluster answers; the check comes before any redirect.
func TestClusterCrossSlot(t *testing.T) {
	p := clusterConn(t, threeNodes(nodeB), 2)
	const cross = "-CROSSSLOT Keys in request don't hash to the same slot"
	moved := "-MOVED " + strconv.Itoa(KeySlot([]byte("t"))) + " 127.0.0.1:7001"
	p.expect([][2]string{
		{"MSET a 1 b 2", cross},
		{"DEL a b", cross},
		{"RENAME a b", cross},
		{"BLMOVE a b LEFT RIGHT 0", cross},
		{"XREAD STREAMS a b 0 0", cross},
		{"WATCH a b", cross},
		{"MSET {t}a 1 {t}b 2", moved}, // one slot: on to the leader
		{"RPOPLPUSH {t}a {t}b", moved},
		{"PING", "+PONG"},
		// A transaction's keys share one slot too: the offending command is
		// refused and EXEC discards the transaction.
		{"MULTI", "+OK"},
		{"SET a 1", "+QUEUED"},
		{"PING", "+QUEUED"},
		{"GET b", cross},
		{"EXEC", "-EXECABORT Transaction discarded because of previous errors."},
		// A new transaction starts with no slot.
		{"MULTI", "+OK"},
		{"SET b 1", "+QUEUED"},
		{"GET {b}x", "+QUEUED"},
		{"DISCARD", "+OK"},
	})
	p.s.shard.mu.Lock()
	n := p.s.stats.errorCodes["CROSSSLOT"]
	p.s.shard.mu.Unlock()
	if n != 7 {
		t.Errorf("errorstat_CROSSSLOT = %d, want 7", n)
	}
}

// Without cluster mode keys may hash anywhere.
func TestCrossSlotOnlyInClusterMode(t *testing.T) {
	p := clusterConn(t, nil, 2)
	p.expect([][2]string{{"MSET a 1 b 2", "+OK"}, {"DEL a b", ":2"}})
}

// A cluster has database 0 only: SELECT of another is refused, as Redis
// Cluster does, after the index is checked to be a number.
func TestClusterSelectDB0Only(t *testing.T) {
	p := clusterConn(t, threeNodes(nodeB), 2)
	p.expect([][2]string{
		{"SELECT 1", "-ERR SELECT is not allowed in cluster mode"},
		{"SELECT x", "-ERR value is not an integer or out of range"},
		{"SELECT 0", "+OK"},
	})
}
