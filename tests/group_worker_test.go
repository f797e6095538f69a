package tests

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestGroupWorkerPool is the scenario: a producer adds 100,000
// entries; eight consumers read them with XREADGROUP BLOCK COUNT 50 and
// acknowledge each batch; two of them "crash" mid-stream (they stop
// acknowledging and disconnect, leaving entries pending); a recovery
// worker takes those over with XAUTOCLAIM once they are idle. At the end
// every entry was processed at least once, the PEL is empty, the entries
// taken over were delivered more than once, and the group's lag is 0.
func TestGroupWorkerPool(t *testing.T) {
	t.Parallel()
	const (
		total     = 100_000
		consumers = 8
		crashAt   = 20 // batches a crashing consumer reads before it dies
		minIdle   = 200 * time.Millisecond
	)
	s := StartServer(t)
	c := ctx(t)
	admin := s.Client(t)
	if err := admin.XGroupCreateMkStream(c, "jobs", "workers", "$").Err(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	processed := make(map[string]int, total)
	done := func(ids []string) {
		mu.Lock()
		for _, id := range ids {
			processed[id]++
		}
		mu.Unlock()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(processed) }

	produced := make(chan error, 1)
	producer := s.Client2(t)
	go func() { produced <- wpProduce(c, producer, total) }()

	var wg sync.WaitGroup
	errs := make(chan error, consumers+1)
	crashed := make(chan struct{}, 2)
	for i := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			crash := i < 2
			if err := wpConsume(c, s, fmt.Sprintf("worker-%d", i), crash, crashAt, done, count, total); err != nil {
				errs <- err
			}
			if crash {
				crashed <- struct{}{}
			}
		}()
	}
	// The recovery worker starts once both crashed, and claims what they
	// left once it has been idle for minIdle.
	<-crashed
	<-crashed
	reclaimed := 0
	recovery := s.Client2(t)
	wg.Add(1)
	go func() {
		defer wg.Done()
		n, err := wpRecover(c, recovery, minIdle, done, count, total)
		reclaimed = n
		if err != nil {
			errs <- err
		}
	}()
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	if got := count(); got != total {
		t.Fatalf("%d of %d entries processed", got, total)
	}
	if reclaimed == 0 {
		t.Fatal("the recovery worker reclaimed nothing: the crashes left nothing pending")
	}
	pending, err := admin.XPending(c, "jobs", "workers").Result()
	if err != nil || pending.Count != 0 {
		t.Fatalf("final PEL: %+v %v", pending, err)
	}
	groups, err := admin.XInfoGroups(c, "jobs").Result()
	if err != nil || len(groups) != 1 || groups[0].Lag != 0 || groups[0].EntriesRead != total {
		t.Fatalf("XINFO GROUPS: %+v %v", groups, err)
	}
}

// wpProduce adds n entries, pipelined in batches.
func wpProduce(c context.Context, cl *redis.Client, n int) error {
	p := cl.Pipeline()
	for i := range n {
		p.XAdd(c, &redis.XAddArgs{Stream: "jobs", Values: []any{"job", i}})
		if i%500 == 499 || i == n-1 {
			if _, err := p.Exec(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// wpConsume reads batches of 50 and acknowledges them, until every entry
// was processed. A crashing consumer reads crashAt batches, acknowledges
// all but the last, and disconnects.
func wpConsume(c context.Context, s *Server, name string, crash bool, crashAt int, done func([]string), count func() int, total int) error {
	cl := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 3, ReadTimeout: -1})
	defer cl.Close()
	for batch := 0; count() < total; batch++ {
		res, err := cl.XReadGroup(c, &redis.XReadGroupArgs{Group: "workers", Consumer: name, Streams: []string{"jobs", ">"},
			Count: 50, Block: 100 * time.Millisecond}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		ids := make([]string, 0, 50)
		for _, m := range res[0].Messages {
			ids = append(ids, m.ID)
		}
		if crash && batch == crashAt {
			return nil // dies holding this batch: read, never processed
		}
		done(ids)
		if err := cl.XAck(c, "jobs", "workers", ids...).Err(); err != nil {
			return err
		}
	}
	return nil
}

// wpRecover claims entries idle for minIdle with XAUTOCLAIM, checks that
// each was delivered more than once, processes and acknowledges them. It
// returns how many it reclaimed.
func wpRecover(c context.Context, cl *redis.Client, minIdle time.Duration, done func([]string), count func() int, total int) (int, error) {
	reclaimed := 0
	start := "0-0"
	for count() < total || start != "0-0" {
		msgs, next, err := cl.XAutoClaim(c, &redis.XAutoClaimArgs{Stream: "jobs", Group: "workers", Consumer: "recovery",
			MinIdle: minIdle, Start: start, Count: 100}).Result()
		if err != nil {
			return reclaimed, err
		}
		start = next
		if len(msgs) == 0 {
			if start == "0-0" {
				// Nothing idle enough yet. Idleness comes with time only,
				// so there is nothing to wait on but the clock.
				time.Sleep(20 * time.Millisecond)
			}
			continue
		}
		ids := make([]string, len(msgs))
		for i, m := range msgs {
			ids[i] = m.ID
		}
		pend, err := cl.XPendingExt(c, &redis.XPendingExtArgs{Stream: "jobs", Group: "workers", Start: ids[0],
			End: ids[len(ids)-1], Count: int64(len(ids)), Consumer: "recovery"}).Result()
		if err != nil {
			return reclaimed, err
		}
		for _, p := range pend {
			if p.RetryCount < 2 {
				return reclaimed, fmt.Errorf("reclaimed %s was delivered %d time(s)", p.ID, p.RetryCount)
			}
		}
		done(ids)
		reclaimed += len(ids)
		if err := cl.XAck(c, "jobs", "workers", ids...).Err(); err != nil {
			return reclaimed, err
		}
	}
	return reclaimed, nil
}
