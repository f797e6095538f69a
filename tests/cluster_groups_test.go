package tests

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// Issue 14's tests of a partitioned cluster: three nodes whose slots are
// spread over three Raft groups by `redstream cluster create --groups 3`,
// one group led by each node. Clients route each key to its group's
// leader; a fault moves some groups' leadership and nothing acknowledged
// is lost.

// partitionedGroups is how many groups the tests below spread slots over.
const partitionedGroups = 3

// groupClient is a cluster-aware client as the partitioned tests use it:
// any command of one key (its reply printed; key is the one of args the
// command is routed by), and BLPOP, which a client must know blocks.
type groupClient struct {
	routingClient
	do    doFunc
	blpop func(ctx context.Context, key string) (string, error)
}

// tag is the client's name as a key part ("redis-cli -c": "redis-cli").
func (cl groupClient) tag() string { return strings.Fields(cl.name)[0] }

type doFunc func(ctx context.Context, key string, args ...string) (string, error)

func newGroupClient(name string, do doFunc, blpop func(ctx context.Context, key string) (string, error)) groupClient {
	return groupClient{
		routingClient: routingClient{
			name: name,
			set: func(ctx context.Context, k, v string) error {
				out, err := do(ctx, k, "SET", k, v)
				if err == nil && out != "OK" {
					err = fmt.Errorf("SET answered %q", out)
				}
				return err
			},
			get: func(ctx context.Context, k string) (string, error) { return do(ctx, k, "GET", k) },
		},
		do:    do,
		blpop: blpop,
	}
}

// goRedisGroups is go-redis's ClusterClient seeded with one node,
// re-reading the slot map every second (see goRedisRouting).
func goRedisGroups(t *testing.T, seed *ClusterNode) groupClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{seed.Addr()}, ClusterStateReloadInterval: time.Second})
	t.Cleanup(func() { cc.Close() })
	return newGroupClient("go-redis",
		func(ctx context.Context, _ string, args ...string) (string, error) {
			var a []any
			for _, s := range args {
				a = append(a, s)
			}
			v, err := cc.Do(ctx, a...).Result()
			return fmt.Sprint(v), err
		},
		func(ctx context.Context, key string) (string, error) {
			v, err := cc.BLPop(ctx, 30*time.Second, key).Result()
			return strings.Join(v, " "), err
		})
}

// rueidisGroups is rueidis in cluster mode seeded with one node.
func rueidisGroups(t *testing.T, seed *ClusterNode) groupClient {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{seed.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatalf("rueidis: %v", err)
	}
	t.Cleanup(rc.Close)
	if len(rc.Nodes()) != 3 {
		t.Fatalf("rueidis does not see the three nodes of a cluster: %v", keysOf(rc.Nodes()))
	}
	return newGroupClient("rueidis",
		func(ctx context.Context, key string, args ...string) (string, error) {
			i := slices.Index(args, key) // Keys routes the command by it
			if i < 1 {
				return "", fmt.Errorf("key %s is not among the arguments %v", key, args)
			}
			v, err := rc.Do(ctx, rc.B().Arbitrary(args[:i]...).Keys(key).Args(args[i+1:]...).Build()).ToAny()
			return fmt.Sprint(v), err
		},
		func(ctx context.Context, key string) (string, error) {
			v, err := rc.Do(ctx, rc.B().Blpop().Key(key).Timeout(30).Build()).AsStrSlice()
			return strings.Join(v, " "), err
		})
}

// cliGroups is redis-cli -c pointed at the first running node: a key of
// a group that node does not lead takes a -MOVED, which it follows.
func cliGroups(c *TestCluster) groupClient {
	cli := func(ctx context.Context, _ string, args ...string) (string, error) {
		var n *ClusterNode
		for _, m := range c.Nodes {
			if m.running() {
				n = m
				break
			}
		}
		if n == nil {
			return "", errors.New("no node is running")
		}
		full := append([]string{"-c", "-p", strconv.Itoa(n.Port)}, args...)
		out, err := exec.CommandContext(ctx, "redis-cli", full...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("redis-cli via %s: %v: %s", n.Name, err, out)
		}
		s := strings.TrimSuffix(string(out), "\n")
		// redis-cli exits 0 on an error reply (it prints "(error) ..." on
		// a terminal only): an error is a reply starting with its code.
		if code, _, _ := strings.Cut(s, " "); code != "" && code == strings.ToUpper(code) && strings.Trim(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" && code != "OK" {
			return "", fmt.Errorf("redis-cli via %s: %s", n.Name, s)
		}
		return s, nil
	}
	return newGroupClient("redis-cli -c", cli,
		func(ctx context.Context, key string) (string, error) {
			out, err := cli(ctx, key, "BLPOP", key, "30")
			return strings.ReplaceAll(out, "\n", " "), err
		})
}

// TestPartitionedClusterClients: go-redis's ClusterClient, rueidis and
// redis-cli -c, each seeded with (or pointed at) the node that leads
// group 1, write and read a key of every group, add to and read a stream
// of every group through a consumer group, and wait in BLPOP on a key of
// group 2 until another client pushes to it. Then the node leading group
// 2 is killed, and the same clients must reach the group's new leader by
// themselves.
func TestPartitionedClusterClients(t *testing.T) {
	c := StartPartitionedCluster(t, partitionedGroups)
	leaders := c.WaitGroupsBalanced()
	t.Logf("balanced: %s", leaderNames(leaders))
	checkGroupTopology(t, c, leaders)
	checkRedirects(t, c, leaders)

	seed := leaders[0]
	clients := []groupClient{goRedisGroups(t, seed), rueidisGroups(t, seed)}
	if _, err := exec.LookPath("redis-cli"); err == nil {
		clients = append(clients, cliGroups(c))
	} else {
		t.Log("redis-cli is not installed: only go-redis and rueidis are checked")
	}
	pusher := c.ClusterClient()
	for _, cl := range clients {
		for g := 1; g <= partitionedGroups; g++ {
			key := KeyInGroup("route:"+cl.tag(), g, partitionedGroups)
			if err := writeAndRead(cl.routingClient, key, "v"+strconv.Itoa(g)); err != nil {
				t.Fatalf("%s, group %d (%s): %v", cl.name, g, key, err)
			}
			checkStreamGroup(t, cl, KeyInGroup("orders:"+cl.tag(), g, partitionedGroups))
		}
		checkBlockingPop(t, c, cl, pusher, KeyInGroup("jobs:"+cl.tag(), 2, partitionedGroups), leaders[1])
	}

	c.Kill(leaders[1])
	after := c.WaitGroupsSettled()
	if slices.Contains(after, leaders[1]) {
		t.Fatalf("the killed %s still leads a group: %s", leaders[1].Name, leaderNames(after))
	}
	t.Logf("after killing %s: %s", leaders[1].Name, leaderNames(after))
	for _, cl := range clients {
		for g := 1; g <= partitionedGroups; g++ {
			checkRoutingKey(t, cl.routingClient, KeyInGroup("after:"+cl.tag(), g, partitionedGroups), g)
		}
	}
}

// checkGroupTopology checks what every node says of the groups: CLUSTER
// KEYSLOT as KeySlot computes it, one CLUSTER SHARDS shard per leading
// node with the slots of the groups it leads.
func checkGroupTopology(t *testing.T, c *TestCluster, leaders []*ClusterNode) {
	t.Helper()
	for _, n := range c.Nodes {
		for _, key := range []string{"a", "orders:{7}", KeyInGroup("x", 2, partitionedGroups)} {
			if r := c.must(n, "CLUSTER", "KEYSLOT", key); r.Type != ':' || int(r.Int) != KeySlot(key) {
				t.Fatalf("CLUSTER KEYSLOT %s on %s: %s, want %d", key, n.Name, r, KeySlot(key))
			}
		}
		r := c.must(n, "CLUSTER", "SHARDS")
		shards := map[int]string{} // master port -> its slots
		for _, sh := range r.Elems {
			var slots, port string
			for i := 0; i+1 < len(sh.Elems); i += 2 {
				switch sh.Elems[i].Str {
				case "slots":
					var s []string
					for _, e := range sh.Elems[i+1].Elems {
						s = append(s, strconv.FormatInt(e.Int, 10))
					}
					slots = strings.Join(s, "-")
				case "nodes":
					for _, nd := range sh.Elems[i+1].Elems {
						if strings.Contains(nd.String(), `$"role" $"master"`) {
							port = portOf(nd)
						}
					}
				}
			}
			if slots != "" {
				p, _ := strconv.Atoi(port)
				shards[p] = slots
			}
		}
		for g, m := range leaders {
			first, last := GroupSlots(g+1, partitionedGroups)
			if want := fmt.Sprintf("%d-%d", first, last); shards[m.Port] != want {
				t.Fatalf("CLUSTER SHARDS on %s: the shard of %s (port %d) has slots %q, want %s\n%s", n.Name, m.Name, m.Port, shards[m.Port], want, r)
			}
		}
		if len(shards) != partitionedGroups {
			t.Fatalf("CLUSTER SHARDS on %s: %d shards with slots, want %d\n%s", n.Name, len(shards), partitionedGroups, r)
		}
	}
}

// portOf is the "port" field of a CLUSTER SHARDS node ("" when none).
func portOf(nd Reply) string {
	for i := 0; i+1 < len(nd.Elems); i += 2 {
		if nd.Elems[i].Str == "port" {
			return strconv.FormatInt(nd.Elems[i+1].Int, 10)
		}
	}
	return ""
}

// checkRedirects sends a write of every group to every node that does
// not lead it: each must answer -MOVED with the key's slot and the
// group's leader, and not apply it.
func checkRedirects(t *testing.T, c *TestCluster, leaders []*ClusterNode) {
	t.Helper()
	for g, m := range leaders {
		key := KeyInGroup("moved", g+1, partitionedGroups)
		want := fmt.Sprintf("MOVED %d %s", KeySlot(key), m.Addr())
		for _, n := range c.Others(m) {
			if r := c.must(n, "SET", key, n.Name); r.Type != '-' || r.Str != want {
				t.Fatalf("SET %s (group %d) on %s: %s, want -%s", key, g+1, n.Name, r, want)
			}
		}
		if r := c.must(m, "EXISTS", key); r.Type != ':' || r.Int != 0 {
			t.Fatalf("EXISTS %s on %s after only redirected writes: %s, want 0", key, m.Name, r)
		}
	}
}

// checkStreamGroup adds an entry to key through cl and reads it back
// through a consumer group, then acknowledges it.
func checkStreamGroup(t *testing.T, cl groupClient, key string) {
	t.Helper()
	ctx := ctx(t)
	if out, err := cl.do(ctx, key, "XGROUP", "CREATE", key, "billing", "$", "MKSTREAM"); err != nil || out != "OK" {
		t.Fatalf("%s: XGROUP CREATE %s: %q %v", cl.name, key, out, err)
	}
	payload := "order-" + key
	id, err := cl.do(ctx, key, "XADD", key, "*", "order", payload)
	if err != nil || !strings.Contains(id, "-") {
		t.Fatalf("%s: XADD %s: %q %v", cl.name, key, id, err)
	}
	got, err := cl.do(ctx, key, "XREADGROUP", "GROUP", "billing", "w", "COUNT", "10", "STREAMS", key, ">")
	if err != nil || !strings.Contains(got, id) || !strings.Contains(got, payload) {
		t.Fatalf("%s: XREADGROUP %s: %q %v, want entry %s with %s", cl.name, key, got, err, id, payload)
	}
	if n, err := cl.do(ctx, key, "XACK", key, "billing", id); err != nil || n != "1" {
		t.Fatalf("%s: XACK %s %s: %q %v", cl.name, key, id, n, err)
	}
}

// checkBlockingPop has cl wait in BLPOP on key, which leader's group
// holds, until pusher pushes to it; the pop must return the value.
func checkBlockingPop(t *testing.T, c *TestCluster, cl groupClient, pusher *redis.ClusterClient, key string, leader *ClusterNode) {
	t.Helper()
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	popCtx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	base := blockedClients(t, c, leader)
	go func() {
		out, err := cl.blpop(popCtx, key)
		done <- result{out, err}
	}()
	deadline := time.Now().Add(clusterBound)
	for blockedClients(t, c, leader) <= base {
		select {
		case r := <-done:
			t.Fatalf("%s: BLPOP %s returned before anything was pushed: %q %v", cl.name, key, r.out, r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: BLPOP %s is not blocked on %s, its group's leader, within %v", cl.name, key, leader.Name, clusterBound)
		}
		time.Sleep(20 * time.Millisecond) // polling INFO clients: nothing notifies a block
	}
	value := "job-for-" + cl.name
	if err := pusher.LPush(ctx(t), key, value).Err(); err != nil {
		t.Fatalf("LPUSH %s: %v", key, err)
	}
	r := <-done // bounded by popCtx
	if r.err != nil || r.out != key+" "+value {
		t.Fatalf("%s: BLPOP %s after LPUSH: %q %v, want %q", cl.name, key, r.out, r.err, key+" "+value)
	}
	t.Logf("%s: BLPOP %s served on %s after a push", cl.name, key, leader.Name)
}

// blockedClients is INFO clients' blocked_clients on n.
func blockedClients(t *testing.T, c *TestCluster, n *ClusterNode) int {
	t.Helper()
	r := c.must(n, "INFO", "clients")
	for _, line := range strings.Split(r.Str, "\r\n") {
		if v, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
			k, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("INFO clients on %s: blocked_clients:%s", n.Name, v)
			}
			return k
		}
	}
	t.Fatalf("INFO clients on %s has no blocked_clients:\n%s", n.Name, r.Str)
	return 0
}

// checkRoutingKey has cl write key (of group g) and read it back; as in
// checkRouting, it may fail a few times while it finds a new leader, and
// must succeed within the bound by itself.
func checkRoutingKey(t *testing.T, cl routingClient, key string, g int) {
	t.Helper()
	deadline := time.Now().Add(clusterBound)
	for attempt := 1; ; attempt++ {
		err := writeAndRead(cl, key, "after-"+key)
		if err == nil {
			t.Logf("%s, group %d after the failover: written and read back at attempt %d", cl.name, g, attempt)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s, group %d after the failover: %v (%d attempts in %v)", cl.name, g, err, attempt, clusterBound)
		}
		time.Sleep(100 * time.Millisecond) // as an application would, before trying again
	}
}

// TestPartitionedStreamRecipe runs the README's partitioned-stream
// recipe (TestClusterPartitionedStream) on a cluster of three groups:
// the 16 partitions are spread over all three, each led by another node.
func TestPartitionedStreamRecipe(t *testing.T) {
	c := StartPartitionedCluster(t, partitionedGroups)
	leaders := c.WaitGroupsBalanced()
	spreadOver(t, 16, func(i int) string { return fmt.Sprintf("orders:{%d}", i) }) // the recipe's partition keys
	partitionedStreamRecipe(t, leaders[0])
}

// spreadOver fails the test unless keys 0..n-1 fall in every group.
func spreadOver(t *testing.T, n int, key func(int) string) {
	t.Helper()
	per := map[int]int{}
	for i := range n {
		per[GroupOfSlot(KeySlot(key(i)), partitionedGroups)]++
	}
	if len(per) != partitionedGroups {
		t.Fatalf("keys %s..%s fall in groups %v, not all %d", key(0), key(n-1), per, partitionedGroups)
	}
}

// TestPartitionedClusterFaults: producers write to 16 lists and 16
// streams spread over the three groups while, each cycle, the leader of
// one group is killed with SIGKILL and restarted, or stopped with
// SIGSTOP until the others have taken over its groups and continued.
// After each cycle the checker reads everything back through the groups'
// leaders: every acknowledged write there exactly once, nothing unsent.
// Then, every node back, the groups must be balanced again (one leader
// per node), and the checker's own control: keys tampered with through the
// cluster must be reported as exactly that.
func TestPartitionedClusterFaults(t *testing.T) {
	c := StartPartitionedCluster(t, partitionedGroups)
	var lists, streams []string
	for i := range 16 {
		lists = append(lists, fmt.Sprintf("chk:list:{%d}", i))
		streams = append(streams, fmt.Sprintf("chk:stream:{%d}", i))
	}
	spreadOver(t, 16, func(i int) string { return lists[i] })
	ch := NewCheckerKeys(lists, streams)
	writer := c.ClusterClient()
	reader := c.ClusterClient()
	for cycle := range 3 {
		start := time.Now()
		leaders := c.WaitGroupsSettled()
		stop := ch.Produce(writer, producers)
		ch.WaitAcked(t, 20) // writes are in flight when the fault strikes
		victim := leaders[cycle%partitionedGroups]
		fault := "SIGKILL"
		if cycle%2 == 1 {
			fault = "SIGSTOP"
			c.Pause(victim)
		} else {
			c.Kill(victim)
		}
		during := c.WaitGroupsSettled() // the others lead every group: past the election timeout
		if slices.Contains(during, victim) {
			t.Fatalf("cycle %d: %s, stopped, leads a group: %s", cycle, victim.Name, leaderNames(during))
		}
		ch.WaitAcked(t, 20) // two of three still commit
		if fault == "SIGSTOP" {
			c.Resume(victim)
		} else {
			c.Start(victim)
		}
		after := c.WaitGroupsSettled()
		ch.WaitAcked(t, 20) // every node back, the groups take writes
		stop()
		report := ch.Check(ch.Contents(t, reader))
		t.Logf("cycle %d (%s to %s, leading group %d; %v): during %s; after %s; %s", cycle, fault, victim.Name,
			cycle%partitionedGroups+1, time.Since(start).Round(time.Millisecond), leaderNames(during), leaderNames(after), report)
		if !report.Clean() {
			t.Fatalf("cycle %d: %s\n%s", cycle, report, c.describe())
		}
	}
	// Every node is back: the balancer hands each its group again.
	t.Logf("balanced again: %s", leaderNames(c.WaitGroupsBalanced()))
	// The control, on a list of group 2.
	for _, key := range lists {
		if GroupOfSlot(KeySlot(key), partitionedGroups) == 2 {
			ch.catchesTampering(t, reader, key)
			return
		}
	}
}

// catchesTampering is the checker's positive control (as in
// TestClusterCheckerCatchesLoss), on key of a checked run whose
// producers have stopped: an acknowledged payload removed, another
// written twice, one nobody sent, one the server had refused; the
// checker must report exactly those.
func (ch *Checker) catchesTampering(t *testing.T, cc *redis.ClusterClient, key string) {
	t.Helper()
	ch.mu.Lock()
	producers := ch.next
	ch.mu.Unlock()
	var acked []string
	for p := range producers {
		if a := ch.AcknowledgedIn(key, p); len(a) >= 3 {
			acked = a
			break
		}
	}
	if acked == nil {
		t.Fatalf("no producer has 3 acknowledged writes to %s", key)
	}
	lost, twice := acked[0], acked[1]
	refused := ch.Sent(key, ch.newProducer(), 0)
	ch.Record(refused, errors.New("CLUSTERDOWN The cluster is down"))
	if n, err := cc.LRem(ctx(t), key, 0, lost).Result(); err != nil || n != 1 {
		t.Fatalf("LREM %s %s: %d, %v", key, lost, n, err)
	}
	if err := cc.RPush(ctx(t), key, twice, "never-sent", refused).Err(); err != nil {
		t.Fatal(err)
	}
	report := ch.Check(ch.Contents(t, cc))
	t.Logf("after tampering with %s: %s", key, report)
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"lost", report.Lost, []string{lost}},
		{"duplicated", report.Duplicated, []string{twice}},
		{"unsent", report.Unsent, []string{key + "/never-sent"}},
		{"failed but applied", report.FailedFound, []string{refused}},
		{"reordered", report.Reordered, []string{key + "/" + twice}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("control: %s: %v, want %v", c.what, c.got, c.want)
		}
	}
}

// TestClusterMoveSlotsCommand: `redstream cluster move-slots` moves a slot
// holding a stream with a consumer group to another group: the stream,
// its pending entry and the slot's new master are what clients see next,
// and writes to it go on through the new group.
func TestClusterMoveSlotsCommand(t *testing.T) {
	c := StartPartitionedCluster(t, 3)
	cc := c.ClusterClient(func(o *redis.ClusterOptions) { o.MaxRedirects = 50 })
	key := KeyInGroup("moving", 1, 3)
	slot := KeySlot(key)
	if err := cc.XAdd(ctx(t), &redis.XAddArgs{Stream: key, ID: "1-1", Values: []string{"n", "1"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cc.XGroupCreate(ctx(t), key, "g", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := cc.XReadGroup(ctx(t), &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{key, ">"}}).Err(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "cluster", "move-slots", c.Nodes[2].Addr(), strconv.Itoa(slot), strconv.Itoa(slot), "3").CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("moved slots %d-%d to group 3", slot, slot)) {
		t.Fatalf("cluster move-slots: %v\n%s", err, out)
	}
	first, _ := GroupSlots(3, 3)
	for _, n := range c.Nodes {
		rc := redis.NewClient(&redis.Options{Addr: n.Addr()})
		defer rc.Close()
		deadline := time.Now().Add(clusterBound)
		for {
			rows, err := rc.ClusterSlots(ctx(t)).Result()
			var moved, third string
			for _, r := range rows {
				if int(r.Start) <= slot && slot <= int(r.End) {
					moved = r.Nodes[0].Addr
				}
				if int(r.Start) <= first && first <= int(r.End) {
					third = r.Nodes[0].Addr
				}
			}
			if err == nil && moved != "" && moved == third {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: CLUSTER SLOTS gives slot %d to %q, group 3's leader is %q (%v)", n.Name, slot, moved, third, err)
			}
			time.Sleep(50 * time.Millisecond) // the map reaches each node on its own
		}
	}
	if p, err := cc.XPending(ctx(t), key, "g").Result(); err != nil || p.Count != 1 {
		t.Fatalf("XPENDING after the move: %+v, %v", p, err)
	}
	if err := cc.XAdd(ctx(t), &redis.XAddArgs{Stream: key, ID: "2-1", Values: []string{"n", "2"}}).Err(); err != nil {
		t.Fatalf("XADD after the move: %v", err)
	}
	if n, err := cc.XLen(ctx(t), key).Result(); err != nil || n != 2 {
		t.Fatalf("XLEN after the move = %d, %v", n, err)
	}
}
