package replication

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestGroupServesBlockedClients(t *testing.T) {
	nodes := startGroup(t)
	ctx := context.Background()
	leader := nodes[0].addr
	pop := redis.NewClient(&redis.Options{Addr: leader})
	defer pop.Close()
	push := redis.NewClient(&redis.Options{Addr: leader})
	defer push.Close()

	// BLPOP waits, then takes what a later push commits.
	got := make(chan []string, 1)
	go func() {
		v, err := pop.BLPop(ctx, 10*time.Second, "jobs").Result()
		if err != nil {
			v = []string{"error", err.Error()}
		}
		got <- v
	}()
	waitFor(t, "the BLPOP to block", func() bool {
		return push.Info(ctx, "clients").Val() != "" && blockedClients(t, push) == 1
	})
	if err := push.RPush(ctx, "jobs", "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	if v := <-got; len(v) != 2 || v[0] != "jobs" || v[1] != "a" {
		t.Fatalf("BLPOP = %q, want [jobs a]", v)
	}
	if n := push.LLen(ctx, "jobs").Val(); n != 1 {
		t.Fatalf("LLEN after the pop = %d, want 1", n)
	}

	// A timeout answers nil and takes nothing.
	start := time.Now()
	if err := pop.BLPop(ctx, time.Second, "empty").Err(); err != redis.Nil {
		t.Fatalf("BLPOP on an empty key = %v, want nil", err)
	}
	if time.Since(start) < 900*time.Millisecond {
		t.Fatalf("BLPOP timed out after %v, before its 1s", time.Since(start))
	}

	// XREADGROUP BLOCK is served by an XADD, and the entry is pending on
	// every node.
	if err := push.XGroupCreateMkStream(ctx, "events", "g", "$").Err(); err != nil {
		t.Fatal(err)
	}
	gotX := make(chan string, 1)
	go func() {
		res, err := pop.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c1", Streams: []string{"events", ">"}, Block: 10 * time.Second}).Result()
		if err != nil {
			gotX <- "error " + err.Error()
			return
		}
		gotX <- res[0].Messages[0].ID
	}()
	waitFor(t, "the XREADGROUP to block", func() bool { return blockedClients(t, push) == 1 })
	id, err := push.XAdd(ctx, &redis.XAddArgs{Stream: "events", Values: []string{"k", "v"}}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if v := <-gotX; v != id {
		t.Fatalf("XREADGROUP got %q, want %q", v, id)
	}
	want := digest(t, nodes[0].srv)
	for _, n := range nodes[1:] {
		waitFor(t, "followers to agree", func() bool { return digest(t, n.srv) == want })
	}
}

func blockedClients(t *testing.T, c *redis.Client) int {
	t.Helper()
	info := c.Info(context.Background(), "clients").Val()
	const field = "blocked_clients:"
	for i := 0; i+len(field) <= len(info); i++ {
		if info[i:i+len(field)] == field {
			j := i + len(field)
			k := j
			for k < len(info) && info[k] >= '0' && info[k] <= '9' {
				k++
			}
			n, _ := strconv.Atoi(info[j:k])
			return n
		}
	}
	return -1
}

func TestGroupKeepsPipelineOrder(t *testing.T) {
	nodes := startGroup(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: nodes[0].addr})
	defer c.Close()
	pipe := c.Pipeline()
	var lens []*redis.IntCmd
	for i := range 20 {
		lens = append(lens, pipe.RPush(ctx, "p", i))
		if i%5 == 4 {
			lens = append(lens, pipe.LLen(ctx, "p")) // a read behind writes sees them
		}
	}
	ping := pipe.Ping(ctx)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	for i, cmd := range lens {
		if cmd.Args()[0] == "rpush" {
			want++
		}
		if cmd.Val() != want {
			t.Fatalf("reply %d (%v) = %d, want %d", i, cmd.Args(), cmd.Val(), want)
		}
	}
	if ping.Val() != "PONG" {
		t.Fatalf("PING behind the writes = %q", ping.Val())
	}
}

// A client that sends writes and closes its side of the connection (as
// `redis-cli < file` does) still gets every reply: they come once the
// group has applied the writes.
func TestHalfClosedClientGetsItsReplies(t *testing.T) {
	nodes := startGroup(t)
	conn, err := net.Dial("tcp", nodes[0].addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("*3\r\n$5\r\nRPUSH\r\n$1\r\nq\r\n$1\r\na\r\n*3\r\n$5\r\nRPUSH\r\n$1\r\nq\r\n$1\r\nb\r\n*2\r\n$4\r\nLLEN\r\n$1\r\nq\r\n")); err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).CloseWrite()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != ":1\r\n:2\r\n:2\r\n" {
		t.Fatalf("replies = %q, want :1 :2 :2", got)
	}
}

// Keys whose time has passed are deleted on every node by the leader's
// expire cycle, through the log, without a write touching them.
func TestGroupExpiresKeys(t *testing.T) {
	nodes := startGroup(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: nodes[0].addr})
	defer c.Close()
	for i := range 10 {
		key := "temp:" + strconv.Itoa(i)
		if err := c.RPush(ctx, key, "x").Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.PExpire(ctx, key, 50*time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.RPush(ctx, "kept", "x").Err(); err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		waitFor(t, fmt.Sprintf("node %d to hold only the key without a TTL", i), func() bool {
			return keyCount(n) == 1
		})
	}
}

// keyCount is how many keys a node holds, expired or not.
func keyCount(n *testNode) int {
	snap := n.srv.Freeze(nil)
	defer snap.Close()
	keys := 0
	for _, db := range snap.DBs {
		keys += db.Keys
	}
	return keys
}
