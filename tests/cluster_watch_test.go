package tests

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// WATCH/MULTI/EXEC in a group: the leader keeps the watches, and a
// watched EXEC with writes is checked once every entry proposed before it
// is applied (server/propose_watch.go). One group serves every case.
func TestClusterWatch(t *testing.T) {
	c := StartCluster(t)
	leader := c.WaitSettled()
	t.Run("touched key aborts", func(t *testing.T) { watchTouchedAborts(t, leader) })
	t.Run("go-redis Watch", func(t *testing.T) { watchGoRedis(t, c) })
	t.Run("untouched commits on every node", func(t *testing.T) { watchUntouchedCommits(t, c, leader) })
	t.Run("optimistic increments", func(t *testing.T) { watchIncrements(t, c) })
	t.Run("EXEC counted", func(t *testing.T) { execCounted(t, leader) })
}

// Every EXEC counts in INFO commandstats, as on one node: one with
// writes (through the log), one with reads only, and a watched one.
func execCounted(t *testing.T, leader *ClusterNode) {
	calls := func() int {
		r, err := ask(leader, "INFO", "commandstats")
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(r.Str, "cmdstat_exec:calls=")
		n, err := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
		if !ok || err != nil {
			return 0
		}
		return n
	}
	before := calls()
	rc := helloRaw(t, leader, 2)
	for _, tx := range [][][]string{
		{{"MULTI"}, {"SET", "{x}a", "1"}, {"EXEC"}},
		{{"MULTI"}, {"GET", "{x}a"}, {"EXEC"}},
		{{"WATCH", "{x}a"}, {"MULTI"}, {"SET", "{x}a", "2"}, {"EXEC"}},
	} {
		for _, cmd := range tx {
			if r := rc.Do(cmd...); r.Type == '-' {
				t.Fatalf("%v: %s", cmd, r)
			}
		}
	}
	if got := calls() - before; got != 3 {
		t.Errorf("cmdstat_exec calls went up by %d for 3 EXECs", got)
	}
}

// helloRaw is a raw connection to n speaking RESP version proto.
func helloRaw(t *testing.T, n *ClusterNode, proto int) *RawConn {
	rc := dialRaw(t, n.Addr())
	if r := rc.Do("HELLO", strconv.Itoa(proto)); r.Type == '-' {
		t.Fatalf("HELLO %d: %s", proto, r)
	}
	return rc
}

// A write by another client to a watched key, SET or LPUSH, makes EXEC
// answer a null array: *-1 in RESP2, _ in RESP3.
func watchTouchedAborts(t *testing.T, leader *ClusterNode) {
	for _, proto := range []int{2, 3} {
		for _, write := range [][]string{{"SET", "w:str", "theirs"}, {"LPUSH", "w:list", "theirs"}} {
			key := write[1]
			rc := helloRaw(t, leader, proto)
			if r := rc.Do("WATCH", key); r.Str != "OK" {
				t.Fatalf("WATCH = %s", r)
			}
			if r, err := ask(leader, write...); err != nil || r.Type == '-' {
				t.Fatalf("%v by another client: %s %v", write, r, err)
			}
			rc.Do("MULTI")
			if r := rc.Do("SET", key+":mine", "mine"); r.Str != "QUEUED" {
				t.Fatalf("queued SET = %s", r)
			}
			r := rc.Do("EXEC")
			wantType := byte('*')
			if proto == 3 {
				wantType = '_'
			}
			if !r.Null || r.Type != wantType {
				t.Fatalf("RESP%d, %v after WATCH: EXEC = %s, want a null array (%c)", proto, write, r, wantType)
			}
			if r := rc.Do("EXISTS", key+":mine"); r.Int != 0 {
				t.Fatalf("the aborted transaction wrote its key: EXISTS = %s", r)
			}
		}
	}
}

// go-redis's ClusterClient.Watch finds the leader and reports the abort as
// TxFailedErr, in both protocols.
func watchGoRedis(t *testing.T, c *TestCluster) {
	for _, proto := range []int{2, 3} {
		cc := c.ClusterClient(func(o *redis.ClusterOptions) { o.Protocol = proto })
		key := "w:goredis:" + strconv.Itoa(proto)
		err := cc.Watch(ctx(t), func(tx *redis.Tx) error {
			if err := cc.Set(ctx(t), key, "theirs", 0).Err(); err != nil {
				return err
			}
			_, err := tx.TxPipelined(ctx(t), func(p redis.Pipeliner) error {
				p.Set(ctx(t), key, "mine", 0)
				return nil
			})
			return err
		}, key)
		if !errors.Is(err, redis.TxFailedErr) {
			t.Fatalf("RESP%d: Watch with the key written meanwhile = %v, want %v", proto, err, redis.TxFailedErr)
		}
		if got, err := cc.Get(ctx(t), key).Result(); got != "theirs" {
			t.Fatalf("RESP%d: GET after the aborted transaction = %q %v", proto, got, err)
		}
	}
}

// A watched transaction nobody disturbed commits, and every node applies
// it.
func watchUntouchedCommits(t *testing.T, c *TestCluster, leader *ClusterNode) {
	rc := helloRaw(t, leader, 3)
	if r := rc.Do("WATCH", "{w}k", "{w}l"); r.Str != "OK" {
		t.Fatalf("WATCH = %s", r)
	}
	rc.Do("MULTI")
	rc.Do("SET", "{w}k", "v")
	rc.Do("LPUSH", "{w}l", "a")
	if r := rc.Do("EXEC"); r.String() != `*2[+"OK" :1]` {
		t.Fatalf("EXEC of an undisturbed watched transaction = %s", r)
	}
	for _, n := range c.Nodes {
		ro := readOnlyClient(t, n)
		deadline := time.Now().Add(clusterBound)
		for {
			k, _ := ro.Get(ctx(t), "{w}k").Result()
			l, _ := ro.LRange(ctx(t), "{w}l", 0, -1).Result()
			if k == "v" && len(l) == 1 && l[0] == "a" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: GET = %q, LRANGE = %q after %v", n.Name, k, l, clusterBound)
			}
			time.Sleep(10 * time.Millisecond) // polling a follower's apply: nothing to wait on
		}
	}
}

// Workers increment one counter by WATCH, GET, MULTI, SET value+1, EXEC,
// while another client INCRs it: if any EXEC were checked before a write
// ahead of it in the log was applied, two workers would write the same
// value and the counter would fall short of the acknowledged increments.
func watchIncrements(t *testing.T, c *TestCluster) {
	const (
		workers = 6
		target  = 40  // successful EXECs, all workers together
		maxIncr = 200 // INCRs: enough to put writes in flight, few enough to let EXECs through
		bound   = 30 * time.Second
	)
	cc := c.ClusterClient()
	key := "w:counter"
	var mu sync.Mutex
	var execs, conflicts, incrs, unknown, retried int
	var failure error
	stop := make(chan struct{})
	var stopOnce sync.Once
	done := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	note := func(err error, ok *int) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			*ok++
			if execs >= target {
				stopOnce.Do(func() { close(stop) })
			}
		case errors.Is(err, redis.TxFailedErr):
			conflicts++
		case strings.HasPrefix(err.Error(), "UNKNOWN"):
			unknown++ // applied or not: the count can only be bounded
		case strings.HasPrefix(err.Error(), "ERR"):
			failure = err // a refusal: nothing to try again
			stopOnce.Do(func() { close(stop) })
		default:
			retried++ // not applied (-CLUSTERDOWN, a connection lost during a failover): tried again
		}
	}
	increment := func(ctx context.Context) error {
		return cc.Watch(ctx, func(tx *redis.Tx) error {
			n, err := tx.Get(ctx, key).Int()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, key, n+1, 0)
				return nil
			})
			return err
		}, key)
	}
	var wg sync.WaitGroup
	deadline := time.Now().Add(bound)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done() && time.Now().Before(deadline) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				note(increment(ctx), &execs)
				cancel()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < maxIncr && !done() && time.Now().Before(deadline); i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			note(cc.Incr(ctx, key).Err(), &incrs)
			cancel()
		}
	}()
	wg.Wait()
	got, err := cc.Get(ctx(t), key).Int()
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	t.Logf("%d EXECs, %d aborted, %d INCRs, %d unknown outcomes, %d tried again", execs, conflicts, incrs, unknown, retried)
	if failure != nil {
		t.Fatalf("an optimistic increment failed: %v", failure)
	}
	if execs == 0 {
		t.Fatalf("no watched transaction committed within %v", bound)
	}
	if want := execs + incrs; got < want || got > want+unknown {
		t.Fatalf("counter = %d after %d committed EXECs and %d INCRs (%d unknown outcomes): a watched EXEC was checked too early", got, execs, incrs, unknown)
	}
}
