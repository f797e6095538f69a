package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redstream/redstream/stream"
)

// checkAccounting verifies the memory accounting: each object's counted
// bytes are what it holds now, and each DB's total is their sum. Lock
// should be held.
func checkAccounting(s *Server) error {
	for _, db := range s.shard.dbs {
		var sum int64
		for key, o := range db.keys {
			if st, ok := o.value.(*stream.Stream); ok {
				if err := st.Check(); err != nil {
					return fmt.Errorf("db %d key %q: %w", db.index, key, err)
				}
			}
			if now := memoryUsage(key, o); o.mem != now {
				return fmt.Errorf("db %d key %q (%s) is counted as %d bytes, holds %d", db.index, key, typeName(o), o.mem, now)
			}
			sum += o.mem
		}
		if sum != db.used {
			return fmt.Errorf("db %d counts %d bytes, its keys hold %d", db.index, db.used, sum)
		}
	}
	return nil
}

// TestMemoryAccountingFollowsWrites runs every kind of write and checks
// after each that the counted bytes are what the keys hold: a write path
// that changes a value without counting it again shows up here.
func TestMemoryAccountingFollowsWrites(t *testing.T) {
	s := newTestServer(t, nil)
	c := connect(t, s)
	big := strings.Repeat("v", 3000)
	script := [][]string{
		{"SET", "s", "hello"}, {"APPEND", "s", big}, {"SETRANGE", "s", "5000", "x"}, {"INCR", "n"},
		{"SET", "n", big}, {"GETDEL", "n"}, {"SETNX", "k", "v"}, {"MSET", "a", big, "b", "x"},
		{"LPUSH", "l", big, big, "x"}, {"RPUSH", "l", "y"}, {"LSET", "l", "0", "short"},
		{"LINSERT", "l", "BEFORE", "x", big}, {"LREM", "l", "0", big}, {"LTRIM", "l", "0", "1"},
		{"RPUSH", "l2", big, big}, {"LMOVE", "l2", "l", "LEFT", "RIGHT"}, {"RPOPLPUSH", "l2", "l3"},
		{"LPOP", "l", "1"}, {"BLPOP", "l3", "0.01"}, {"LMPOP", "1", "l", "LEFT", "COUNT", "5"},
		{"XADD", "x", "1-1", "f", big}, {"XADD", "x", "2-1", "f", "v", "g", big}, {"XADD", "x", "*", "f", "v"},
		{"XGROUP", "CREATE", "x", "g", "0"}, {"XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "x", ">"},
		{"XCLAIM", "x", "g", "c2", "0", "1-1"}, {"XACK", "x", "g", "1-1"}, {"XAUTOCLAIM", "x", "g", "c3", "0", "0"},
		{"XGROUP", "CREATECONSUMER", "x", "g", "c4"}, {"XGROUP", "DELCONSUMER", "x", "g", "c3"},
		{"XDEL", "x", "2-1"}, {"XTRIM", "x", "MAXLEN", "1"}, {"XSETID", "x", "99999999999999-1"}, {"XGROUP", "DESTROY", "x", "g"},
		{"RENAME", "s", "s2"}, {"COPY", "l", "lc"}, {"COPY", "x", "xc"}, {"COPY", "lc", "lc1", "DB", "1"},
		{"EXPIRE", "a", "100"}, {"PERSIST", "a"}, {"PEXPIRE", "b", "1"},
		{"MULTI"}, {"RPUSH", "m", big}, {"SET", "mm", big}, {"EXEC"}, {"DEL", "a", "m"}, {"UNLINK", "mm"},
		{"FLUSHDB"}, {"SET", "after", big}, {"SELECT", "1"}, {"FLUSHALL"}, {"RPUSH", "end", big},
	}
	for _, cmd := range script {
		reply := c.do(cmd...)
		if strings.HasPrefix(reply, "-") {
			t.Fatalf("%v failed: %q", cmd, reply)
		}
		s.shard.mu.Lock()
		err := checkAccounting(s)
		total := s.shard.datasetBytes()
		s.shard.mu.Unlock()
		if err != nil {
			t.Fatalf("after %v (%q): %v", cmd, reply, err)
		}
		if total <= 0 && cmd[0] != "FLUSHDB" && cmd[0] != "FLUSHALL" && cmd[0] != "SELECT" {
			t.Fatalf("after %v the dataset counts %d bytes", cmd, total)
		}
	}
	// The last key alone: a 3000-byte element in a list.
	s.shard.mu.Lock()
	total := s.shard.datasetBytes()
	s.shard.mu.Unlock()
	if total < 3000 || total > 3000*3 {
		t.Fatalf("one list with a 3000-byte element counts %d bytes", total)
	}
}
