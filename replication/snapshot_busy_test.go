package replication

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A Raft snapshot asked for while a BGSAVE still walks the keyspace waits
// for a later turn: it used to close the save's walk, which then wrote an
// RDB file with keys missing and reported success.
func TestRaftSnapshotLeavesARunningSaveWhole(t *testing.T) {
	nodes := startGroup(t)
	leader := nodes[0]
	c := redis.NewClient(&redis.Options{Addr: leader.addr})
	defer c.Close()
	const keys = 3000
	pipe := c.Pipeline()
	for i := range keys {
		pipe.Set(context.Background(), fmt.Sprintf("k%d", i), "v", 0)
	}
	if _, err := pipe.Exec(context.Background()); err != nil {
		t.Fatal(err)
	}

	save := leader.srv.Freeze(nil) // as BGSAVE takes it
	if err := leader.node.main.raft.Snapshot().Error(); err == nil {
		t.Error("a Raft snapshot was taken while a save walked the keyspace")
	}
	n := 0
	for range save.Entries(0) {
		n++
	}
	save.Close()
	if n != keys {
		t.Fatalf("the save's walk yielded %d keys, want %d", n, keys)
	}
	if err := leader.node.main.raft.Snapshot().Error(); err != nil {
		t.Fatalf("a Raft snapshot after the save: %v", err)
	}
}
