package replication

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redstream/redstream/server"
)

// WAIT and INFO replication count what each follower's log holds (its
// Raft match index), not what a majority must hold.
func TestWaitCountsFollowersThatHoldTheWrites(t *testing.T) {
	nodes := startGroup(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: nodes[0].addr})
	defer rdb.Close()
	if err := rdb.RPush(ctx, "q", "a").Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Wait(ctx, 2, 10*time.Second).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 10000 with both followers up = %d, %v; want 2", n, err)
	}
	// WAITAOF: the Raft log is the append-only file, on the leader and on
	// each follower that holds the write.
	if got, err := rdb.Do(ctx, "WAITAOF", "1", "2", "10000").Int64Slice(); err != nil || len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("WAITAOF 1 2 10000 with both followers up = %v, %v; want [1 2]", got, err)
	}
	// Under a steady stream of other clients' writes, WAIT counts up to
	// what was applied when it came, not a target that moves on.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		other := redis.NewClient(&redis.Options{Addr: nodes[0].addr})
		defer other.Close()
		for i := 0; i < 100000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			other.RPush(ctx, "busy", i)
		}
	}()
	for range 5 {
		if n, err := rdb.Wait(ctx, 2, 10*time.Second).Result(); err != nil || n != 2 {
			close(stop)
			<-done
			t.Fatalf("WAIT 2 10000 beside a steady writer = %d, %v; want 2", n, err)
		}
	}
	close(stop)
	<-done
	held := slaveOffsets(t, rdb)
	if len(held) != 2 || held[0] == 0 || held[1] == 0 {
		t.Fatalf("INFO replication offsets with both followers caught up: %v", held)
	}

	nodes[2].stop()
	if err := rdb.RPush(ctx, "q", "b").Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if n, err := rdb.Wait(ctx, 2, 300*time.Millisecond).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 2 300 with one follower down = %d, %v; want 1", n, err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Fatalf("WAIT 2 300 answered after %v, before its timeout", waited)
	}
	if n, err := rdb.Wait(ctx, 1, 10*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 10000 with one follower down = %d, %v; want 1", n, err)
	}
	if got, err := rdb.Do(ctx, "WAITAOF", "1", "2", "200").Int64Slice(); err != nil || len(got) != 2 || got[0] != 1 || got[1] != 1 {
		t.Fatalf("WAITAOF 1 2 200 with one follower down = %v, %v; want [1 1]", got, err)
	}
	now := slaveOffsets(t, rdb)
	if len(now) != 2 || min(now[0], now[1]) == 0 || now[0] == now[1] {
		t.Fatalf("INFO replication offsets with one follower down = %v; want the stopped one behind the other, not at 0", now)
	}
}

var slaveLine = regexp.MustCompile(`slave\d+:ip=[^,]+,port=\d+,state=online,offset=(\d+),`)

// slaveOffsets reads each follower's offset from INFO replication.
func slaveOffsets(t *testing.T, rdb *redis.Client) []uint64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, m := range slaveLine.FindAllStringSubmatch(info, -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		out = append(out, n)
	}
	return out
}

// A connection that wrote to two groups is told how many replicas hold
// its writes in both: the fewest of either group. Here group 2 has no
// voter but its leader, so WAIT answers 0 after an RPUSH to it, even
// when the connection's last write went to group 1, whose two
// followers hold it (counting only the last-written group said 2).
func TestWaitCountsEveryGroupTheConnectionWroteTo(t *testing.T) {
	nodes := startGroup(t)
	leader := nodes[0]
	alone, err := leader.node.HostDataGroup(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := alone.Bootstrap([]server.ClusterMember{leader.node.Self()}); err != nil {
		t.Fatal(err)
	}
	q := []byte("q")
	if err := leader.srv.AssignSlots(server.KeySlot(q), server.KeySlot(q), 2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "group 2 to elect its only voter", alone.Leading)
	ctx := context.Background()
	client := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: leader.addr, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		return c
	}

	one := client()
	if err := one.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := one.Wait(ctx, 2, 10*time.Second).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 after a write to group 1 only = %d, %v; want 2", n, err)
	}

	both := client()
	if err := both.RPush(ctx, "q", "a").Err(); err != nil {
		t.Fatal(err)
	}
	if err := both.Set(ctx, "k", "w", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := both.Wait(ctx, 2, 200*time.Millisecond).Result(); err != nil || n != 0 {
		t.Fatalf("WAIT 2 200 after writes to groups 2 and 1 = %d, %v; want 0 (group 2 has no replica)", n, err)
	}
}
