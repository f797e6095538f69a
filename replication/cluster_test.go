package replication

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redstream/redstream/internal/testport"
	"github.com/redstream/redstream/persistence"
	"github.com/redstream/redstream/server"
)

// testNode is one node of an in-process group: a real server on a
// loopback port and its Raft node on another.
type testNode struct {
	srv     *server.Server
	node    *Node
	addr    string
	dir     string
	port    int
	busPort int
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := testport.Free()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func startNode(t *testing.T, dir string, bus int, opts ...func(*Config)) *testNode {
	t.Helper()
	return startNodeOn(t, dir, freePort(t), bus, opts...)
}

// startNodeOn starts a node on given ports (a restart keeps them: the
// group's log holds them); opts change its replication Config.
func startNodeOn(t *testing.T, dir string, port, bus int, opts ...func(*Config)) *testNode {
	t.Helper()
	n, err := openNodeOn(t, dir, port, bus, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// openNodeOn is startNodeOn for a node that may refuse to start: it
// returns Open's error.
func openNodeOn(t *testing.T, dir string, port, bus int, opts ...func(*Config)) (*testNode, error) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Port = port
	cfg.Dir = dir
	cfg.Bind = []string{"127.0.0.1"}
	cfg.AppendOnly = false
	cfg.Save = ""
	cfg.ClusterEnabled = true
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.Default()
	}
	srv, err := server.New(cfg, server.Options{Logger: logger, Codec: persistence.DumpCodec{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	addr := srv.Addrs()[0].String()
	busAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(bus))
	rcfg := Config{Dir: dir, BindAddr: busAddr, BusAddr: busAddr, ClientAddr: addr,
		NodeTimeout: time.Second, SnapshotAfter: 8192, TrailingLogs: 10240, Logger: logger}
	for _, opt := range opts {
		opt(&rcfg)
	}
	node, err := Open(rcfg, srv)
	if err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Close(ctx)
		return nil, err
	}
	go srv.Serve()
	n := &testNode{srv: srv, node: node, addr: addr, dir: dir, port: port, busPort: bus}
	t.Cleanup(func() { n.stop() })
	return n, nil
}

func (n *testNode) stop() {
	if n.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n.srv.Close(ctx)
	n.node.Close()
	n.srv = nil
}

// startGroup starts three nodes and makes them one group, the first its
// leader.
func startGroup(t *testing.T, opts ...func(*Config)) []*testNode {
	t.Helper()
	var nodes []*testNode
	for range 3 {
		nodes = append(nodes, startNode(t, t.TempDir(), freePort(t), opts...))
	}
	formGroup(t, nodes)
	return nodes
}

// formGroup makes nodes one group, the first its leader.
func formGroup(t *testing.T, nodes []*testNode) {
	t.Helper()
	if err := nodes[0].node.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes[1:] {
		if err := nodes[0].node.AddNode(n.node.Self()); err != nil {
			t.Fatal(err)
		}
	}
}

// digest is a hash of a node's whole keyspace, to compare nodes.
func digest(t *testing.T, srv *server.Server) string {
	t.Helper()
	snap := srv.Freeze(nil)
	defer snap.Close()
	h := sha256.New()
	for _, db := range snap.DBs {
		var ents []server.SnapshotEntry
		for e := range snap.Entries(db.Index) {
			ents = append(ents, e)
		}
		slices.SortFunc(ents, func(a, b server.SnapshotEntry) int {
			if a.Key < b.Key {
				return -1
			}
			if a.Key > b.Key {
				return 1
			}
			return 0
		})
		for _, e := range ents {
			payload, err := persistence.DumpCodec{}.Dump(e.Value, server.DumpOptions{})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(h, "%d %q %d %x\n", db.Index, e.Key, e.ExpireAt, payload)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitForWithin(t, 20*time.Second, what, cond, nil)
}

// waitForWithin is waitFor with its own limit; detail, if set, says what
// was last seen when it times out.
func waitForWithin(t *testing.T, limit time.Duration, what string, cond func() bool, detail func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			if detail != nil {
				what += " (last seen: " + detail() + ")"
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestGroupAppliesTheSameWrites(t *testing.T) {
	nodes := startGroup(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: nodes[0].addr})
	defer rdb.Close()
	for i := range 50 {
		if err := rdb.RPush(ctx, "q", i).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"n", strconv.Itoa(i)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := rdb.LLen(ctx, "q").Result(); err != nil || got != 50 {
		t.Fatalf("LLEN on the leader = %d, %v; want 50", got, err)
	}
	want := digest(t, nodes[0].srv)
	for i, n := range nodes[1:] {
		waitFor(t, fmt.Sprintf("follower %d to catch up", i+1), func() bool { return digest(t, n.srv) == want })
	}
	// A write sent to a follower is redirected to the leader.
	f := redis.NewClient(&redis.Options{Addr: nodes[1].addr})
	defer f.Close()
	err := f.LPush(ctx, "q", "x").Err()
	if err == nil || err.Error() != "MOVED "+strconv.Itoa(server.KeySlot([]byte("q")))+" "+nodes[0].addr {
		t.Fatalf("LPUSH on a follower: %v, want MOVED to %s", err, nodes[0].addr)
	}
}
