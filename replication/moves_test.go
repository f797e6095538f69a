package replication

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redstream/redstream/replication/slotmap"
	"github.com/redstream/redstream/server"
)

// A slot moves from group 1 to group 2 while a client keeps pushing to a
// list in it: every acknowledged push is in the list afterwards, once and
// in order; the slot's keys are in group 2's database on every node and
// in none of group 1's; a stream's consumer group (its pending entries)
// and a key's expiry move with them; and cluster clients follow.
func TestMoveSlotUnderLoad(t *testing.T) {
	nodes := partitioned(t, 3)
	waitBalanced(t, nodes, 3)
	ctx := context.Background()
	tag := strings.TrimSuffix(strings.TrimPrefix(keyOfGroup(1, 3), "orders:{"), "}")
	list, stream, temp := "l:{"+tag+"}", "s:{"+tag+"}", "e:{"+tag+"}"
	slot := server.KeySlot([]byte(list))
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].addr}, MaxRedirects: 100})
	defer cc.Close()
	for i := range 3 {
		if err := cc.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []string{"n", fmt.Sprint(i)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cc.XGroupCreate(ctx, stream, "g", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := cc.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{stream, ">"}, Count: 2}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cc.Set(ctx, temp, "v", 10*time.Minute).Err(); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var acked []string
	unknown := map[string]bool{}
	wg.Add(1)
	go func() { // one pusher: its acknowledged pushes must be in order
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprint(i)
			err := cc.RPush(ctx, list, v).Err()
			mu.Lock()
			switch {
			case err == nil:
				acked = append(acked, v)
			case strings.HasPrefix(err.Error(), "TRYAGAIN"), strings.HasPrefix(err.Error(), "MOVED"):
				// refused before the log: not applied
			default:
				unknown[v] = true
			}
			mu.Unlock()
		}
	}()
	waitFor(t, "pushes before the move", func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= 20 })
	admin := redis.NewClient(&redis.Options{Addr: nodes[2].addr})
	defer admin.Close()
	if err := admin.Do(ctx, "CLUSTER", "MOVESLOTS", slot, slot, 2).Err(); err != nil {
		t.Fatalf("CLUSTER MOVESLOTS: %v", err)
	}
	n := len(acked)
	waitFor(t, "pushes after the move", func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= n+20 })
	close(stop)
	wg.Wait()

	got, err := cc.LRange(ctx, list, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, v := range got {
		if i < len(acked) && v == acked[i] {
			i++
		} else if !unknown[v] {
			t.Fatalf("%s holds %q, neither acknowledged next (%d of %d) nor of unknown outcome", list, v, i, len(acked))
		}
	}
	if i != len(acked) {
		t.Fatalf("%d of %d acknowledged pushes are in %s", i, len(acked), list)
	}
	if p, err := cc.XPending(ctx, stream, "g").Result(); err != nil || p.Count != 2 {
		t.Errorf("XPENDING after the move: %+v, %v: want the 2 pending entries", p, err)
	}
	if ttl, err := cc.PTTL(ctx, temp).Result(); err != nil || ttl <= 0 {
		t.Errorf("PTTL %s after the move: %v, %v", temp, ttl, err)
	}
	for _, nd := range nodes {
		waitFor(t, "the slot's keys in group 2's database only, on "+nd.addr, func() bool {
			return len(splitKeys(keysIn(t, nd.srv, 0))) == 0 && len(splitKeys(keysIn(t, nd.srv, 1))) == 3
		})
	}
	rows, err := admin.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if int(r.Start) <= slot && slot <= int(r.End) && r.Nodes[0].Addr != preferred(nodes, 2).addr {
			t.Errorf("CLUSTER SLOTS gives slot %d to %s, want group 2's leader %s", slot, r.Nodes[0].Addr, preferred(nodes, 2).addr)
		}
	}
	t.Logf("%d pushes acknowledged, %d of unknown outcome", len(acked), len(unknown))
}

// The source group's leader stops half-way through a move: the next
// leader carries it on from the map, and afterwards every key is in the
// target group, once, with its value, and none is left in the source.
func TestMoveCarriesOnAfterTheSourceLeaderStops(t *testing.T) {
	nodes := partitioned(t, 3)
	waitBalanced(t, nodes, 3)
	ctx := context.Background()
	tag := strings.TrimSuffix(strings.TrimPrefix(keyOfGroup(1, 3), "orders:{"), "}")
	slot := server.KeySlot([]byte("{" + tag + "}"))
	const keys = 3000
	source, _ := fillSlot(t, nodes, tag, keys)
	var other *testNode
	for _, n := range nodes {
		if n != source {
			other = n
		}
	}
	done := make(chan error, 1)
	go func() { done <- other.node.MoveSlots(slot, slot, 2, 60*time.Second) }()
	waitFor(t, "some keys copied", func() bool {
		return len(splitKeys(keysIn(t, other.srv, 1))) > 0
	})
	source.stop()
	if err := <-done; err != nil {
		t.Fatalf("MoveSlots: %v", err)
	}
	for _, n := range nodes {
		if n == source {
			continue
		}
		waitFor(t, "every key in group 2's database only, on "+n.addr, func() bool {
			return len(splitKeys(keysIn(t, n.srv, 0))) == 0 && len(splitKeys(keysIn(t, n.srv, 1))) == keys
		})
	}
	// A node whose map has not heard of the end of the move yet answers
	// TRYAGAIN for up to the metadata group's 500 ms commit interval:
	// the client retries.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{other.addr}, MaxRedirects: 100})
	defer cc.Close()
	for _, i := range []int{0, 1, keys / 2, keys - 1} {
		if v, err := cc.Get(ctx, fmt.Sprintf("k{%s}:%d", tag, i)).Result(); err != nil || v != fmt.Sprint(i) {
			t.Errorf("GET k{%s}:%d after the move = %q, %v", tag, i, v, err)
		}
	}
}

// While a move copies the keys of its first slot, the source's leader
// still serves a key of its second slot, not copied yet, and sends a
// client of a key it does not hold to the target's leader with -ASK: the
// slots stay available (the move used to answer -TRYAGAIN for all of
// them until it ended).
func TestMoveKeepsServingKeysNotYetCopied(t *testing.T) {
	nodes := partitioned(t, 3)
	waitBalanced(t, nodes, 3)
	ctx := context.Background()
	first, second := adjacentTags(t)
	slot := server.KeySlot([]byte("{" + first + "}"))
	source, c := fillSlot(t, nodes, first, 3000)
	held, absent := "held{"+second+"}", "absent{"+second+"}"
	if err := c.Set(ctx, held, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- source.node.MoveSlots(slot, slot+1, 2, 60*time.Second) }()
	ask := fmt.Sprintf("ASK %d %s", slot+1, preferred(nodes, 2).addr)
	asked, servedAfter := false, false
	for !servedAfter {
		select {
		case err := <-done:
			t.Fatalf("the move ended (%v) before the source served %s after answering -ASK for %s", err, held, absent)
		default:
		}
		err := c.Get(ctx, absent).Err()
		switch {
		case err != nil && err.Error() == ask:
			asked = true
		case err != nil && err != redis.Nil && !strings.HasPrefix(err.Error(), "TRYAGAIN"):
			t.Fatalf("GET %s during the move: %v", absent, err)
		}
		v, err := c.Get(ctx, held).Result()
		switch {
		case err == nil && v == "v":
			servedAfter = asked
		case err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN"):
			t.Fatalf("GET %s during the move: %q, %v", held, v, err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("MoveSlots: %v", err)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{source.addr}})
	defer cc.Close()
	if v, err := cc.Get(ctx, held).Result(); err != nil || v != "v" {
		t.Fatalf("GET %s after the move: %q, %v", held, v, err)
	}
}

// adjacentTags are two hash tags of group 1's slots (of 3 groups) whose
// slots are consecutive.
func adjacentTags(t *testing.T) (first, second string) {
	t.Helper()
	bySlot := map[int]string{}
	for i := 0; i < 100000; i++ {
		tag := fmt.Sprint("t", i)
		s := server.KeySlot([]byte(tag))
		if s >= slotmap.NumSlots/3-1 {
			continue
		}
		bySlot[s] = tag
		if other, ok := bySlot[s-1]; ok {
			return other, tag
		}
		if other, ok := bySlot[s+1]; ok {
			return tag, other
		}
	}
	t.Fatal("no two tags of consecutive slots")
	return "", ""
}

// MoveSlots asked again while the slots move to the same group (a retry
// after a timeout, a second operator) waits for that move instead of
// failing, and asked once they are the group's, returns at once; asked to
// send them elsewhere meanwhile, it fails.
func TestMoveSlotsAskedAgainWaits(t *testing.T) {
	nodes := partitioned(t, 3)
	waitBalanced(t, nodes, 3)
	first, _ := adjacentTags(t)
	slot := server.KeySlot([]byte("{" + first + "}"))
	source, _ := fillSlot(t, nodes, first, 2000)
	done := make(chan error, 1)
	go func() { done <- source.node.MoveSlots(slot, slot, 2, time.Minute) }()
	waitFor(t, "the move begun", func() bool {
		_, _, moving := source.node.parts.meta.fsm.current().Moving(slot)
		return moving
	})
	if err := source.node.MoveSlots(slot, slot, 3, time.Minute); err == nil {
		t.Error("MoveSlots to group 3 of a slot moving to group 2: no error")
	}
	if err := source.node.MoveSlots(slot, slot, 2, time.Minute); err != nil {
		t.Fatalf("MoveSlots asked again during the move: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the first MoveSlots: %v", err)
	}
	if err := source.node.MoveSlots(slot, slot, 2, time.Second); err != nil {
		t.Fatalf("MoveSlots of a slot the group owns already: %v", err)
	}
}

// A move logs how far it is as it goes (here after every batch), with
// the keys copied so far.
func TestMoveLogsProgress(t *testing.T) {
	defer func(d time.Duration) { moveProgressEvery = d }(moveProgressEvery)
	moveProgressEvery = 0
	logs := &logLines{}
	nodes := startGroup(t, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	if err := nodes[0].node.CreateGroups(3); err != nil {
		t.Fatal(err)
	}
	waitBalanced(t, nodes, 3)
	first, _ := adjacentTags(t)
	slot := server.KeySlot([]byte("{" + first + "}"))
	source, _ := fillSlot(t, nodes, first, 3*moveBatch)
	if err := source.node.MoveSlots(slot, slot, 2, time.Minute); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, want := range []string{fmt.Sprintf("keys=%d", moveBatch), fmt.Sprintf("keys=%d", 3*moveBatch)} {
		if !strings.Contains(out, `msg="moving slots: progress"`) || !strings.Contains(out, want) {
			t.Fatalf("no progress line with %s in the logs:\n%s", want, out)
		}
	}
}

// fillSlot writes count keys k{tag}:i through the leader of group 1 of
// nodes, pipelined, and returns a client of that leader.
func fillSlot(t *testing.T, nodes []*testNode, tag string, count int) (*testNode, *redis.Client) {
	t.Helper()
	source := preferred(nodes, 1)
	c := redis.NewClient(&redis.Options{Addr: source.addr, Protocol: 2})
	t.Cleanup(func() { c.Close() })
	for base := 0; base < count; base += 500 {
		pipe := c.Pipeline()
		for i := base; i < min(base+500, count); i++ {
			pipe.Set(context.Background(), fmt.Sprintf("k{%s}:%d", tag, i), i, 0)
		}
		if _, err := pipe.Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return source, c
}
