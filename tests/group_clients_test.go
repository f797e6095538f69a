package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// The group commands through real client libraries: go-redis v9 over
// RESP2 and RESP3 (its parsers for XREADGROUP, XPENDING, XCLAIM,
// XAUTOCLAIM, XINFO and the Redis 8 commands must accept our replies),
// and rueidis.

func TestGroupGoRedis(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	for proto, cl := range map[int]*redis.Client{2: s.Client2(t), 3: s.Client(t)} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			c := ctx(t)
			key := fmt.Sprintf("gr%d", proto)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(cl.XGroupCreateMkStream(c, key, "g", "$").Err())
			for i := 1; i <= 5; i++ {
				must(cl.XAdd(c, &redis.XAddArgs{Stream: key, ID: fmt.Sprintf("%d-0", i), Values: []any{"n", i}}).Err())
			}
			res, err := cl.XReadGroup(c, &redis.XReadGroupArgs{Group: "g", Consumer: "alice", Streams: []string{key, ">"}, Count: 3, Block: -1}).Result()
			if err != nil || len(res) != 1 || len(res[0].Messages) != 3 || res[0].Messages[2].Values["n"] != "3" {
				t.Fatalf("XREADGROUP: %+v %v", res, err)
			}
			if _, err := cl.XReadGroup(c, &redis.XReadGroupArgs{Group: "g", Consumer: "bob", Streams: []string{key, ">"}, Block: -1}).Result(); err != nil {
				t.Fatal(err)
			}
			if _, err := cl.XReadGroup(c, &redis.XReadGroupArgs{Group: "g", Consumer: "bob", Streams: []string{key, ">"}, Block: -1}).Result(); err != redis.Nil {
				t.Fatalf("nothing new: %v", err)
			}
			sum, err := cl.XPending(c, key, "g").Result()
			if err != nil || sum.Count != 5 || sum.Lower != "1-0" || sum.Higher != "5-0" || sum.Consumers["alice"] != 3 || sum.Consumers["bob"] != 2 {
				t.Fatalf("XPENDING: %+v %v", sum, err)
			}
			ext, err := cl.XPendingExt(c, &redis.XPendingExtArgs{Stream: key, Group: "g", Start: "-", End: "+", Count: 10, Consumer: "bob"}).Result()
			if err != nil || len(ext) != 2 || ext[0].ID != "4-0" || ext[0].RetryCount != 1 {
				t.Fatalf("XPENDING range: %+v %v", ext, err)
			}
			claimed, err := cl.XClaim(c, &redis.XClaimArgs{Stream: key, Group: "g", Consumer: "carol", Messages: []string{"1-0", "2-0"}}).Result()
			if err != nil || len(claimed) != 2 || claimed[1].Values["n"] != "2" {
				t.Fatalf("XCLAIM: %+v %v", claimed, err)
			}
			ids, err := cl.XClaimJustID(c, &redis.XClaimArgs{Stream: key, Group: "g", Consumer: "carol", Messages: []string{"3-0"}}).Result()
			if err != nil || len(ids) != 1 || ids[0] != "3-0" {
				t.Fatalf("XCLAIM JUSTID: %v %v", ids, err)
			}
			msgs, next, err := cl.XAutoClaim(c, &redis.XAutoClaimArgs{Stream: key, Group: "g", Consumer: "dave", Start: "0", Count: 2}).Result()
			if err != nil || len(msgs) != 2 || next != "3-0" {
				t.Fatalf("XAUTOCLAIM: %+v %s %v", msgs, next, err)
			}
			if n, err := cl.XAck(c, key, "g", "1-0", "2-0", "9-0").Result(); err != nil || n != 2 {
				t.Fatalf("XACK: %d %v", n, err)
			}
			groups, err := cl.XInfoGroups(c, key).Result()
			if err != nil || len(groups) != 1 || groups[0].Pending != 3 || groups[0].Consumers != 4 || groups[0].EntriesRead != 5 || groups[0].Lag != 0 {
				t.Fatalf("XINFO GROUPS: %+v %v", groups, err)
			}
			cons, err := cl.XInfoConsumers(c, key, "g").Result()
			if err != nil || len(cons) != 4 || cons[2].Name != "carol" || cons[2].Pending != 1 {
				t.Fatalf("XINFO CONSUMERS: %+v %v", cons, err)
			}
			full, err := cl.XInfoStreamFull(c, key, 0).Result()
			if err != nil || len(full.Groups) != 1 || full.Groups[0].PelCount != 3 || len(full.Groups[0].Consumers) != 4 || len(full.Groups[0].Pending) != 3 {
				t.Fatalf("XINFO STREAM FULL: %+v %v", full, err)
			}
			// Redis 8: XNACK, XREADGROUP CLAIM, XACKDEL, XDELEX.
			if n, err := cl.XNack(c, &redis.XNackArgs{Stream: key, Group: "g", Mode: redis.XNackModeFail, IDs: []string{"3-0"}}).Result(); err != nil || n != 1 {
				t.Fatalf("XNACK: %d %v", n, err)
			}
			res, err = cl.XReadGroup(c, &redis.XReadGroupArgs{Group: "g", Consumer: "erin", Streams: []string{key, ">"}, Claim: time.Hour, Block: -1}).Result()
			if err != nil || len(res) != 1 || len(res[0].Messages) != 1 || res[0].Messages[0].ID != "3-0" || res[0].Messages[0].DeliveredCount != 1 {
				t.Fatalf("XREADGROUP CLAIM: %+v %v", res, err)
			}
			acked, err := cl.XAckDel(c, key, "g", "KEEPREF", "3-0", "9-0").Result()
			if err != nil || len(acked) != 2 || acked[0] != int64(1) || acked[1] != int64(-1) {
				t.Fatalf("XACKDEL: %v %v", acked, err)
			}
			del, err := cl.XDelEx(c, key, "ACKED", "4-0").Result()
			if err != nil || len(del) != 1 || del[0] != int64(2) {
				t.Fatalf("XDELEX: %v %v", del, err)
			}
			must(cl.XGroupDelConsumer(c, key, "g", "dave").Err())
			if n, err := cl.XGroupDestroy(c, key, "g").Result(); err != nil || n != 1 {
				t.Fatalf("XGROUP DESTROY: %d %v", n, err)
			}
		})
	}
}

func TestGroupRueidis(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	cl := s.Rueidis(t)
	c := ctx(t)
	do := func(cmd rueidis.Completed) rueidis.RedisResult { return cl.Do(c, cmd) }
	if err := do(cl.B().XgroupCreate().Key("rq").Group("g").Id("$").Mkstream().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := do(cl.B().Xadd().Key("rq").Id(fmt.Sprintf("%d-0", i)).FieldValue().FieldValue("n", fmt.Sprint(i)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	streams, err := do(cl.B().Xreadgroup().Group("g", "alice").Count(2).Streams().Key("rq").Id(">").Build()).AsXRead()
	if err != nil || len(streams["rq"]) != 2 || streams["rq"][1].ID != "2-0" {
		t.Fatalf("XREADGROUP: %v %v", streams, err)
	}
	if err := do(cl.B().Xreadgroup().Group("g", "alice").Streams().Key("rq").Id(">").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	// Blocking through rueidis: an XADD from another client serves it.
	got := make(chan map[string][]rueidis.XRangeEntry, 1)
	go func() {
		r, _ := do(cl.B().Xreadgroup().Group("g", "bob").Block(10000).Streams().Key("rq").Id(">").Build()).AsXRead()
		got <- r
	}()
	sbWaitBlocked(t, s.Raw(t), 1)
	if err := do(cl.B().Xadd().Key("rq").Id("4-0").FieldValue().FieldValue("n", "4").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if r := <-got; len(r["rq"]) != 1 || r["rq"][0].ID != "4-0" {
		t.Fatalf("XREADGROUP BLOCK: %v", r)
	}
	pending, err := do(cl.B().Xpending().Key("rq").Group("g").Build()).ToArray()
	if err != nil || len(pending) != 4 {
		t.Fatalf("XPENDING: %v %v", pending, err)
	}
	if n, err := do(cl.B().Xpending().Key("rq").Group("g").Start("-").End("+").Count(10).Build()).ToArray(); err != nil || len(n) != 4 {
		t.Fatalf("XPENDING range: %v %v", n, err)
	}
	auto, err := do(cl.B().Xautoclaim().Key("rq").Group("g").Consumer("carol").MinIdleTime("0").Start("0").Build()).ToArray()
	if err != nil || len(auto) != 3 {
		t.Fatalf("XAUTOCLAIM: %v %v", auto, err)
	}
	groups, err := do(cl.B().XinfoGroups().Key("rq").Build()).ToArray()
	if err != nil || len(groups) != 1 {
		t.Fatalf("XINFO GROUPS: %v %v", groups, err)
	}
	m, err := groups[0].AsMap()
	if err != nil {
		t.Fatal(err)
	}
	lagMsg := m["lag"]
	if lag, _ := lagMsg.AsInt64(); lag != 0 {
		t.Fatalf("lag %d", lag)
	}
	if n, err := do(cl.B().Xack().Key("rq").Group("g").Id("1-0", "2-0", "3-0", "4-0").Build()).AsInt64(); err != nil || n != 4 {
		t.Fatalf("XACK: %d %v", n, err)
	}
}
