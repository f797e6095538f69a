package tests

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// routingClient is one cluster-aware client as the routing test uses it.
type routingClient struct {
	name string
	set  func(ctx context.Context, key, value string) error
	get  func(ctx context.Context, key string) (string, error)
}

// TestClusterClientRouting: go-redis's ClusterClient, rueidis in cluster
// mode and redis-cli -c, given only followers' addresses, find the leader
// through CLUSTER SLOTS and -MOVED and write and read through it, before
// and after the leader is killed and another elected. The clients made
// before the failover are the ones used after it.
func TestClusterClientRouting(t *testing.T) {
	c := StartCluster(t)
	leader := c.WaitSettled()
	followers := c.Others(leader)
	checkRole(t, c, leader)
	clients := []routingClient{goRedisRouting(t, followers[0]), rueidisRouting(t, followers)}
	if _, err := exec.LookPath("redis-cli"); err == nil {
		clients = append(clients, cliRouting(t, c))
	} else {
		t.Log("redis-cli is not installed: only go-redis and rueidis are checked")
	}
	checkRouting(t, clients, "before")
	c.Kill(leader)
	c.WaitSettled()
	checkRouting(t, clients, "after")
}

// checkRole checks ROLE on every node: the leader is the master and
// lists the two followers, each follower names the leader as its master.
func checkRole(t *testing.T, c *TestCluster, leader *ClusterNode) {
	t.Helper()
	r := c.must(leader, "ROLE")
	if len(r.Elems) != 3 || r.Elems[0].Str != "master" || r.Elems[1].Type != ':' || r.Elems[1].Int < 1 || len(r.Elems[2].Elems) != 2 {
		t.Fatalf("ROLE on the leader: %s, want master, its last index and two replicas", r)
	}
	for _, f := range c.Others(leader) {
		want := fmt.Sprintf(`*5[$"slave" $"127.0.0.1" :%d $"connected"`, leader.Port)
		if r := c.must(f, "ROLE"); !strings.HasPrefix(r.String(), want) || r.Elems[4].Type != ':' {
			t.Fatalf("ROLE on follower %s: %s, want %s and an offset", f.Name, r, want)
		}
	}
	// HELLO's mode and role, as Redis Cluster's nodes answer them.
	for _, n := range c.Nodes {
		role := "replica"
		if n == leader {
			role = "master"
		}
		want := fmt.Sprintf(`$"mode" $"cluster" $"role" $"%s"`, role)
		if r := c.must(n, "HELLO", "3"); !strings.Contains(r.String(), want) {
			t.Fatalf("HELLO 3 on %s: %s, want %s", n.Name, r, want)
		}
	}
}

// checkRouting has each client write a key and read it back. A client
// may fail a few times while it finds the new leader after a failover (a
// refused connection, then a refresh of its slot map); it must succeed
// within the bound, by itself.
func checkRouting(t *testing.T, clients []routingClient, phase string) {
	t.Helper()
	for _, cl := range clients {
		key, value := "route:"+cl.name+":"+phase, phase+"-value"
		deadline := time.Now().Add(clusterBound)
		for attempt := 1; ; attempt++ {
			err := writeAndRead(cl, key, value)
			if err == nil {
				t.Logf("%s, %s the failover: written and read back at attempt %d", cl.name, phase, attempt)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s, %s the failover: %v (%d attempts in %v)", cl.name, phase, err, attempt, clusterBound)
			}
			time.Sleep(100 * time.Millisecond) // as an application would, before trying again
		}
	}
}

func writeAndRead(cl routingClient, key, value string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cl.set(ctx, key, value); err != nil {
		return fmt.Errorf("SET: %w", err)
	}
	got, err := cl.get(ctx, key)
	if err != nil {
		return fmt.Errorf("GET: %w", err)
	}
	if got != value {
		return fmt.Errorf("GET %s = %q, want %q", key, got, value)
	}
	return nil
}

// goRedisRouting is go-redis's ClusterClient seeded with one follower.
// go-redis re-reads the slot map on -MOVED, or when it is older than
// ClusterStateReloadInterval (60s by default); a dead leader answers no
// -MOVED, so with the default a client keeps dialing it for up to a
// minute after a failover (as it would with Redis Cluster). Here it
// re-reads every second, as an application that wants quick failovers
// would set it.
func goRedisRouting(t *testing.T, seed *ClusterNode) routingClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{seed.Addr()}, ClusterStateReloadInterval: time.Second})
	t.Cleanup(func() { cc.Close() })
	return routingClient{
		name: "go-redis",
		set:  func(ctx context.Context, k, v string) error { return cc.Set(ctx, k, v, 0).Err() },
		get:  func(ctx context.Context, k string) (string, error) { return cc.Get(ctx, k).Result() },
	}
}

// rueidisRouting is rueidis seeded with the followers: it finds the
// group is a cluster from CLUSTER SLOTS and routes by slot.
func rueidisRouting(t *testing.T, seeds []*ClusterNode) routingClient {
	var addrs []string
	for _, n := range seeds {
		addrs = append(addrs, n.Addr())
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, DisableCache: true})
	if err != nil {
		t.Fatalf("rueidis: %v", err)
	}
	t.Cleanup(rc.Close)
	if _, ok := rc.Nodes()[addrs[0]]; !ok || len(rc.Nodes()) != 3 {
		t.Fatalf("rueidis does not see the three nodes of a cluster: %v", keysOf(rc.Nodes()))
	}
	return routingClient{
		name: "rueidis",
		set: func(ctx context.Context, k, v string) error {
			return rc.Do(ctx, rc.B().Set().Key(k).Value(v).Build()).Error()
		},
		get: func(ctx context.Context, k string) (string, error) {
			return rc.Do(ctx, rc.B().Get().Key(k).Build()).ToString()
		},
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// cliRouting is redis-cli -c pointed at a follower of the moment: it
// follows -MOVED by itself.
func cliRouting(t *testing.T, c *TestCluster) routingClient {
	follower := func() *ClusterNode {
		leader := c.WaitSettled()
		for _, n := range c.Others(leader) {
			if n.running() {
				return n
			}
		}
		t.Fatal("no follower is running")
		return nil
	}
	cli := func(ctx context.Context, args ...string) (string, error) {
		n := follower()
		full := append([]string{"-c", "-p", fmt.Sprint(n.Port)}, args...)
		out, err := exec.CommandContext(ctx, "redis-cli", full...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("redis-cli via %s: %v: %s", n.Name, err, out)
		}
		return strings.TrimSuffix(string(out), "\n"), nil
	}
	return routingClient{
		name: "redis-cli -c",
		set: func(ctx context.Context, k, v string) error {
			out, err := cli(ctx, "SET", k, v)
			if err == nil && out != "OK" {
				err = fmt.Errorf("SET answered %q", out)
			}
			return err
		},
		get: func(ctx context.Context, k string) (string, error) { return cli(ctx, "GET", k) },
	}
}

// A group answers Redis Cluster's refusals: keys of one command in one
// slot (a cluster client gets the error, not a split), database 0 only.
func TestClusterRedisClusterRules(t *testing.T) {
	c := StartCluster(t)
	leader := c.WaitSettled()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{leader.Addr()}})
	t.Cleanup(func() { cc.Close() })
	if err := cc.MSet(ctx(t), "a", "1", "b", "2").Err(); err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT ") {
		t.Errorf("go-redis MSET a b: %v, want CROSSSLOT", err)
	}
	if err := cc.MSet(ctx(t), "{u}a", "1", "{u}b", "2").Err(); err != nil {
		t.Errorf("go-redis MSET {u}a {u}b: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"SELECT", "1"}, "ERR SELECT is not allowed in cluster mode"},
		{[]string{"COPY", "{u}a", "{u}c", "DB", "1"}, "ERR Copying to another database is not allowed in cluster mode"},
		{[]string{"MOVE", "{u}a", "1"}, "ERR MOVE is not allowed in cluster mode"},
		{[]string{"RENAME", "{u}a", "b"}, "CROSSSLOT Keys in request don't hash to the same slot"},
	} {
		if r := c.must(leader, tc.args...); r.Type != '-' || r.Str != tc.want {
			t.Errorf("%v = %s, want -%s", tc.args, r, tc.want)
		}
	}
	if r := c.must(leader, "COPY", "{u}a", "{u}c"); r.Type != ':' || r.Int != 1 {
		t.Errorf("COPY in one slot and database = %s", r)
	}
}
