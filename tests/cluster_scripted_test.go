package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// ioredisScript is the Node.js client's script; its module comes from
// `npm ci --prefix tests/js` (make test does it).
func ioredisScript(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed; skipping the ioredis check")
	}
	dir, err := filepath.Abs("js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ioredis")); err != nil {
		t.Skip("ioredis is not installed (npm ci --prefix tests/js); skipping")
	}
	return []string{"node", filepath.Join(dir, "cluster_client.js")}
}

// redisPyScript is the Python client's script. redis-py comes from
// Debian's python3-redis (.ci/run installs it), which only the system
// interpreter sees, so the script runs under /usr/bin/python3.
func redisPyScript(t *testing.T) []string {
	t.Helper()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import redis.cluster").Run(); err != nil {
		t.Skipf("redis-py is not installed for %s (apt-get install python3-redis): %v; skipping", python, err)
	}
	script, err := filepath.Abs(filepath.Join("py", "cluster_client.py"))
	if err != nil {
		t.Fatal(err)
	}
	return []string{python, script}
}

// ioredis's Cluster client works unchanged against 3 nodes x 3 groups.
func TestClusterIoredis(t *testing.T) { testScriptedClusterClient(t, "ioredis", ioredisScript(t)) }

// redis-py's RedisCluster works unchanged against 3 nodes x 3 groups.
func TestClusterRedisPy(t *testing.T) { testScriptedClusterClient(t, "redis-py", redisPyScript(t)) }

// testScriptedClusterClient runs another language's cluster client
// (argv: its interpreter and script) against 3 nodes x 3 groups. The
// script routes 16 partition streams and lists by their hash tags, gets
// Redis Cluster's CROSSSLOT, and follows a group to its new leader after
// the old one is killed (-9): the same client object, with the slot map it
// read before, adds, reads with a consumer group, acks and pops on every
// key. go-redis then checks what the script left.
func testScriptedClusterClient(t *testing.T, client string, argv []string) {
	c := StartPartitionedCluster(t, 3)
	leaders := c.WaitGroupsBalanced()

	ctx, cancel := context.WithTimeout(context.Background(), 3*clusterBound)
	defer cancel()
	args := argv[1:] // then every node's address, as the client's seeds
	for _, n := range c.Nodes {
		args = append(args, n.Addr())
	}
	cmd := exec.CommandContext(ctx, argv[0], args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	phase := func(into any) {
		t.Helper()
		if !lines.Scan() {
			_ = cmd.Wait()
			t.Fatalf("%s script ended early: %v\n%s", client, lines.Err(), stderr.String())
		}
		if err := json.Unmarshal(lines.Bytes(), into); err != nil {
			t.Fatalf("%s script printed %q: %v", client, lines.Text(), err)
		}
	}

	var p1 struct {
		Added, Masters int
		Crossslot      string
		DBSize         int
		Scanned        int // redis-py's scan_iter over the masters; -1: not reported
	}
	p1.Scanned = -1
	phase(&p1)
	groups := map[int]bool{}
	for i := range 16 {
		groups[GroupOfSlot(KeySlot(fmt.Sprintf("orders:{%d}", i)), 3)] = true
	}
	// 16 streams and 16 lists: each key counted once, on its group's
	// leader, so long as no master is listed as a replica too.
	if p1.Added != 16 || p1.Masters != 3 || len(groups) != 3 || !strings.HasPrefix(p1.Crossslot, "CROSSSLOT ") ||
		p1.DBSize != 32 || p1.Scanned != -1 && p1.Scanned != 32 {
		t.Fatalf("%s before the failover: %+v (the keys span %d groups); want 16 added, 3 masters, a CROSSSLOT error, 32 keys",
			client, p1, len(groups))
	}

	c.Kill(leaders[0]) // group 1's leader: its slots go to another node
	if _, err := fmt.Fprintln(stdin, "go"); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	var p2 struct{ Added, Read, Acked, Popped int }
	phase(&p2)
	if p2 != (struct{ Added, Read, Acked, Popped int }{16, 32, 32, 16}) {
		t.Fatalf("%s after group 1's leader was killed: %+v; want 16 added, 32 read, 32 acked, 16 popped\n%s", client, p2, stderr.String())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s script: %v\n%s", client, err, stderr.String())
	}

	cc := c.ClusterClient(func(o *redis.ClusterOptions) { o.MaxRedirects = 50 })
	for i := range 16 {
		key := fmt.Sprintf("orders:{%d}", i)
		n, err := cc.XLen(ctx, key).Result()
		if err != nil || n != 2 {
			t.Errorf("XLEN %s = %d, %v; want 2", key, n, err)
		}
		p, err := cc.XPending(ctx, key, "g").Result()
		if err != nil || p.Count != 0 {
			t.Errorf("XPENDING %s g: %+v, %v; want nothing pending", key, p, err)
		}
		if l, err := cc.LLen(ctx, fmt.Sprintf("jobs:{%d}", i)).Result(); err != nil || l != 0 {
			t.Errorf("LLEN jobs:{%d} = %d, %v; want 0", i, l, err)
		}
	}
}
