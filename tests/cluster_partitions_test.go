package tests

import (
	"context"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The README's partitioned-stream recipe, as a user would run it with
// go-redis's ClusterClient: a stream split into 16 partition keys whose
// hash tags put them in different slots, producers choosing a partition
// by customer, one consumer group per partition, and workers each owning
// a share of the partitions. Every order is consumed exactly once, one
// customer's orders in the order they were produced, and nothing stays
// pending.
func TestClusterPartitionedStream(t *testing.T) {
	c := StartCluster(t)
	leader := c.WaitSettled()
	partitionedStreamRecipe(t, leader)
}

// partitionedStreamRecipe runs the recipe through a ClusterClient seeded
// with seed, a node of the cluster under test.
func partitionedStreamRecipe(t *testing.T, seed *ClusterNode) {
	const partitions, producers, perProducer, workers = 16, 4, 100, 4
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{seed.Addr()}})
	t.Cleanup(func() { cc.Close() })
	partition := func(i int) string { return fmt.Sprintf("orders:{%d}", i) }
	for i := range partitions {
		if err := cc.XGroupCreateMkStream(ctx(t), partition(i), "billing", "$").Err(); err != nil {
			t.Fatalf("XGROUP CREATE %s: %v", partition(i), err)
		}
	}
	// One XREADGROUP reads one partition: keys of one command share a slot.
	err := cc.XReadGroup(ctx(t), &redis.XReadGroupArgs{Group: "billing", Consumer: "w", Streams: []string{partition(0), partition(1), ">", ">"}, Block: -1}).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT ") {
		t.Fatalf("XREADGROUP over two partitions: %v, want CROSSSLOT", err)
	}

	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range perProducer {
				customer := fmt.Sprintf("c%d", (p*perProducer+n)%10)
				key := partition(int(crc32.ChecksumIEEE([]byte(customer))) % partitions)
				order := fmt.Sprintf("p%d-%d", p, n)
				if err := cc.XAdd(context.Background(), &redis.XAddArgs{Stream: key, Values: []string{"customer", customer, "order", order}}).Err(); err != nil {
					t.Errorf("XADD %s %s: %v", key, order, err)
					return
				}
			}
		}()
	}

	total := producers * perProducer
	var mu sync.Mutex
	seen := map[string]int{}         // order -> times consumed
	byCustomer := map[string][]int{} // customer -> order numbers of producer 0, in consumption order
	deadline := time.Now().Add(clusterBound)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				mu.Lock()
				done := len(seen) == total
				mu.Unlock()
				if done {
					return
				}
				for i := w; i < partitions; i += workers { // this worker's share
					res, err := cc.XReadGroup(context.Background(), &redis.XReadGroupArgs{Group: "billing",
						Consumer: fmt.Sprintf("w%d", w), Streams: []string{partition(i), ">"}, Count: 50, Block: 20 * time.Millisecond}).Result()
					if err == redis.Nil {
						continue
					}
					if err != nil {
						t.Errorf("XREADGROUP %s: %v", partition(i), err)
						return
					}
					for _, m := range res[0].Messages {
						if err := cc.XAck(context.Background(), partition(i), "billing", m.ID).Err(); err != nil {
							t.Errorf("XACK %s %s: %v", partition(i), m.ID, err)
							return
						}
						order, customer := m.Values["order"].(string), m.Values["customer"].(string)
						mu.Lock()
						seen[order]++
						var producer, n int
						if _, err := fmt.Sscanf(order, "p%d-%d", &producer, &n); err == nil && producer == 0 {
							byCustomer[customer] = append(byCustomer[customer], n)
						}
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != total {
		t.Fatalf("consumed %d distinct orders of %d within %v", len(seen), total, clusterBound)
	}
	for order, n := range seen {
		if n != 1 {
			t.Errorf("order %s consumed %d times", order, n)
		}
	}
	for customer, ns := range byCustomer {
		for i := 1; i < len(ns); i++ {
			if ns[i] < ns[i-1] {
				t.Errorf("customer %s's orders from producer 0 came out of order: %v", customer, ns)
				break
			}
		}
	}
	for i := range partitions {
		if p, err := cc.XPending(ctx(t), partition(i), "billing").Result(); err != nil || p.Count != 0 {
			t.Errorf("XPENDING %s: %+v %v", partition(i), p, err)
		}
	}
}
