package tests

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestClientsFollowAskDuringAMove: while `cluster move-slots` copies the
// padding of its first slot, go-redis, rueidis and redis-cli -c each
// write a new key of its second slot, and go-redis a transaction of one.
// The source group's leader answers them -ASK (its errorstat_ASK grows),
// each follows it to the target group's leader by itself (ASKING), and
// after the move the keys are there with their values.
func TestClientsFollowAskDuringAMove(t *testing.T) {
	c := StartPartitionedCluster(t, 3)
	leaders := c.WaitGroupsBalanced()
	src := leaders[0]
	first, second := adjacentSlotTags(1, 3)
	slot := KeySlot("{" + first + "}")
	admin := redis.NewClient(&redis.Options{Addr: src.Addr()})
	defer admin.Close()
	const padding = 6000
	for base := 0; base < padding; base += 1000 {
		pipe := admin.Pipeline()
		for i := base; i < base+1000; i++ {
			pipe.Set(ctx(t), fmt.Sprintf("pad{%s}:%d", first, i), i, 0)
		}
		if _, err := pipe.Exec(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	clients := []groupClient{goRedisGroups(t, src), rueidisGroups(t, src)}
	if _, err := exec.LookPath("redis-cli"); err == nil {
		clients = append(clients, cliGroups(c))
	} else {
		t.Log("redis-cli is not installed: only go-redis and rueidis are checked")
	}
	moved := make(chan error, 1)
	go func() {
		out, err := exec.Command(binary, "cluster", "move-slots", src.Addr(), strconv.Itoa(slot), strconv.Itoa(slot+1), "2").CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, out)
		}
		moved <- err
	}()
	probe := "probe{" + second + "}"
	deadline := time.Now().Add(clusterBound)
	for {
		err := admin.Exists(ctx(t), probe).Err()
		if err != nil && strings.HasPrefix(err.Error(), "ASK ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the source never answered -ASK for %s (last: %v)", probe, err)
		}
		time.Sleep(time.Millisecond) // polling: nothing tells a client that a move began
	}
	for _, cl := range clients {
		key := cl.tag() + "{" + second + "}"
		before := errorCount(t, admin, "ASK")
		if err := cl.set(ctx(t), key, cl.tag()); err != nil {
			t.Fatalf("%s: SET %s during the move: %v", cl.name, key, err)
		}
		if errorCount(t, admin, "ASK") == before {
			t.Fatalf("%s: SET %s was not sent -ASK: the move ended too soon (%d keys of padding)", cl.name, key, padding)
		}
	}
	// A transaction of a new key: -ASK at EXEC, replayed by go-redis
	// after ASKING, which holds from MULTI to EXEC.
	cc := c.ClusterClient()
	txKey := "tx{" + second + "}"
	before := errorCount(t, admin, "ASK")
	if _, err := cc.TxPipelined(ctx(t), func(p redis.Pipeliner) error {
		p.Set(ctx(t), txKey, "tx", 0)
		return nil
	}); err != nil {
		t.Fatalf("go-redis transaction of %s during the move: %v", txKey, err)
	}
	if errorCount(t, admin, "ASK") == before {
		t.Fatalf("the transaction of %s was not sent -ASK: the move ended too soon (%d keys of padding)", txKey, padding)
	}
	if err := <-moved; err != nil {
		t.Fatalf("cluster move-slots: %v", err)
	}
	if v, err := cc.Get(ctx(t), txKey).Result(); err != nil || v != "tx" {
		t.Errorf("GET %s after the move = %q, %v; want tx", txKey, v, err)
	}
	for _, cl := range clients {
		key := cl.tag() + "{" + second + "}"
		if v, err := cc.Get(ctx(t), key).Result(); err != nil || v != cl.tag() {
			t.Errorf("GET %s after the move = %q, %v; want %q", key, v, err, cl.tag())
		}
	}
}

// adjacentSlotTags are two hash tags whose slots are consecutive and
// belong to group g of groups.
func adjacentSlotTags(g, groups int) (first, second string) {
	bySlot := map[int]string{}
	for i := 0; ; i++ {
		tag := "t" + strconv.Itoa(i)
		s := KeySlot(tag)
		if GroupOfSlot(s, groups) != g || GroupOfSlot(s+1, groups) != g {
			continue
		}
		bySlot[s] = tag
		if next, ok := bySlot[s+1]; ok {
			return tag, next
		}
		if prev, ok := bySlot[s-1]; ok {
			return prev, tag
		}
	}
}

// errorCount is INFO errorstats' count of the error code on the node rc
// talks to.
func errorCount(t *testing.T, rc *redis.Client, code string) int {
	t.Helper()
	info, err := rc.Info(ctx(t), "errorstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "errorstat_"+code+":count="); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}
