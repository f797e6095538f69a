package replication

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redstream/redstream/persistence"
	"github.com/redstream/redstream/server"
)

// A data group's snapshot is its own database and nothing else, and its
// restore replaces that database alone: another group's state on the
// same node is neither saved into it nor overwritten by it.
func TestGroupSnapshotIsItsDatabaseAlone(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	src, srcAddr := startPlainServer(t)
	dst, dstAddr := startPlainServer(t)
	fill(t, srcAddr, map[int][]string{0: {"a0", "b0"}, 1: {"g1", "h1"}})
	fill(t, dstAddr, map[int][]string{0: {"own0"}, 1: {"old1"}})

	snap, err := newGroupFSM(src, logger, 1).Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink bufferSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()

	// Into a group of another database: refused, nothing changed.
	if err := newGroupFSM(dst, logger, 2).Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err == nil {
		t.Error("a snapshot of database 1 was restored into database 2's group")
	}
	if err := newGroupFSM(dst, logger, 1).Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	want := map[int][]string{0: {"own0"}, 1: {"g1", "h1"}, 2: nil}
	for db, keys := range want {
		if got := keysOf(t, dstAddr, db); !equalStrings(got, keys) {
			t.Errorf("database %d after the restore holds %v, want %v", db, got, keys)
		}
	}
}

func startPlainServer(t *testing.T) (*server.Server, string) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Port = freePort(t)
	cfg.Dir = t.TempDir()
	cfg.Bind = []string{"127.0.0.1"}
	cfg.AppendOnly = false
	cfg.Save = ""
	srv, err := server.New(cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Codec: persistence.DumpCodec{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	return srv, srv.Addrs()[0].String()
}

// fill sets each database's keys to "v".
func fill(t *testing.T, addr string, keys map[int][]string) {
	t.Helper()
	for db, ks := range keys {
		c := redis.NewClient(&redis.Options{Addr: addr, DB: db})
		for _, k := range ks {
			if err := c.Set(context.Background(), k, "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
	}
}

func keysOf(t *testing.T, addr string, db int) []string {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	defer c.Close()
	keys, err := c.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

func equalStrings(a, b []string) bool { return slices.Equal(a, b) || len(a) == 0 && len(b) == 0 }

// bufferSink is a raft.SnapshotSink in memory.
type bufferSink struct{ bytes.Buffer }

func (s *bufferSink) ID() string    { return "test" }
func (s *bufferSink) Cancel() error { return nil }
func (s *bufferSink) Close() error  { return nil }
