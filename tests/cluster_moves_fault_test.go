package tests

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Issue 14 §3/§4: slots move between groups while the checker's
// producers write and faults strike; every acknowledged write must be
// there exactly once afterwards, in the group the slot moved to.

// TestPartitionedClusterMovesUnderFaults: producers write to 16 lists and
// 16 streams spread over three groups (as TestPartitionedClusterFaults)
// while, each cycle, slots holding some of them move to another group:
//
//  1. two slots of group 1 move to group 2, one CLUSTER MOVESLOTS each;
//  2. a slot of group 2 moves to group 3, and the node leading group 2
//     (the source) is killed with SIGKILL once the move has begun, then
//     restarted: the source's next leader must finish the move;
//  3. a slot of group 3 moves to group 1, and the node leading group 1
//     (the target) is stopped with SIGSTOP once the move has begun, until
//     another node leads group 1: the move must finish.
//
// The moved slots also hold padding keys, so a move copies enough keys to
// still be under way when the fault strikes. After each cycle: the
// checker (a -TRYAGAIN counts as not applied), CLUSTER COUNTKEYSINSLOT of
// every moved slot on its new group's leader, and DBSIZE on every node
// with READONLY (all three groups' databases): a key left in its old
// group as well would count twice. Then the checker's positive control.
func TestPartitionedClusterMovesUnderFaults(t *testing.T) {
	c := StartPartitionedCluster(t, partitionedGroups)
	var lists, streams []string
	byGroup := map[int][]int{} // group → hash tags {i} of its keys
	for i := range 16 {
		lists = append(lists, fmt.Sprintf("chk:list:{%d}", i))
		streams = append(streams, fmt.Sprintf("chk:stream:{%d}", i))
		g := GroupOfSlot(KeySlot(lists[i]), partitionedGroups)
		byGroup[g] = append(byGroup[g], i)
	}
	if len(byGroup[1]) < 3 || len(byGroup[2]) < 2 || len(byGroup[3]) < 2 {
		t.Fatalf("the checker's keys fall in groups %v: too few in one to move some and keep some", byGroup)
	}
	ch := NewCheckerKeys(lists, streams)
	mv := &moveState{c: c, ch: ch, owner: map[int]int{}, pads: map[int]int{}}
	writer := c.ClusterClient()
	mv.reader = c.ClusterClient(func(o *redis.ClusterOptions) { o.MaxRedirects = 10 })

	// The moves, by cycle: hash tag → target group.
	cycle1 := []int{byGroup[1][0], byGroup[1][1]}
	tag2, tag3 := byGroup[2][0], byGroup[3][0]
	mv.pad(t, cycle1[0], 200)
	mv.pad(t, cycle1[1], 200)
	mv.pad(t, tag2, 3000)
	mv.pad(t, tag3, 3000)

	// Cycle 1: moves while the producers write, no other fault.
	start := time.Now()
	leaders := mv.waitGroups(t, false)
	stop := mv.ch.Produce(writer, producers)
	ch.WaitAcked(t, 20)
	for k, tag := range cycle1 {
		slot := KeySlot(lists[tag])
		via := c.Nodes[k%len(c.Nodes)]
		if err := <-moveSlotAsync(via, slot, 2); err != nil {
			t.Fatalf("cycle 1: CLUSTER MOVESLOTS %d %d 2 on %s: %v\n%s", slot, slot, via.Name, err, c.describe())
		}
		mv.owner[slot] = 2
	}
	ch.WaitAcked(t, 20)
	stop()
	mv.verify(t, "cycle 1 (slots of "+lists[cycle1[0]]+", "+lists[cycle1[1]]+": group 1 → 2)", start, leaders)

	// Cycle 2: the source's leader is killed during the move.
	start = time.Now()
	leaders = mv.waitGroups(t, true)
	src := leaders[1]
	via := mv.notOf(src)
	slot := KeySlot(lists[tag2])
	stop = mv.ch.Produce(writer, producers)
	ch.WaitAcked(t, 20)
	sent := time.Now()
	done := moveSlotAsync(via, slot, 3)
	mid := mv.waitMoving(t, src, lists[tag2])
	proc := src.proc
	c.Kill(src)
	t.Logf("cycle 2: SIGKILL to %s (leading group 2) %s the move of slot %d had begun", src.Name, map[bool]string{true: "once", false: "before"}[mid], slot)
	during := mv.waitGroups(t, false)
	if slices.Contains(during, src) {
		t.Fatalf("cycle 2: the killed %s leads a group: %s", src.Name, leaderNames(during))
	}
	ch.WaitAcked(t, 20) // two of three still commit
	c.Start(src)
	if err := <-done; err != nil {
		t.Errorf("cycle 2: CLUSTER MOVESLOTS %d %d 3 on %s: %v", slot, slot, via.Name, err)
	}
	mv.owner[slot] = 3
	mv.waitGroups(t, false)
	t.Logf("cycle 2: slot %d given to group 3 %v after MOVESLOTS was sent", slot, time.Since(sent).Round(time.Millisecond))
	ch.WaitAcked(t, 20)
	stop()
	if t.Failed() {
		t.Logf("the killed %s's log:\n%s", src.Name, tail(proc.Output(), 40))
	}
	mv.verify(t, fmt.Sprintf("cycle 2 (slot of %s: group 2 → 3, SIGKILL to the source's leader %s)", lists[tag2], src.Name), start, leaders)

	// Cycle 3: the target's leader is stopped during the move.
	start = time.Now()
	leaders = mv.waitGroups(t, true)
	tgt, src := leaders[0], leaders[2]
	via = mv.notOf(tgt, src)
	slot = KeySlot(lists[tag3])
	stop = mv.ch.Produce(writer, producers)
	ch.WaitAcked(t, 20)
	sent = time.Now()
	done = moveSlotAsync(via, slot, 1)
	mid = mv.waitMoving(t, src, lists[tag3])
	c.Pause(tgt)
	t.Logf("cycle 3: SIGSTOP to %s (leading group 1) %s the move of slot %d had begun", tgt.Name, map[bool]string{true: "once", false: "before"}[mid], slot)
	during = mv.waitGroups(t, false) // another node leads group 1: past the election timeout
	if slices.Contains(during, tgt) {
		t.Fatalf("cycle 3: the stopped %s leads a group: %s", tgt.Name, leaderNames(during))
	}
	ch.WaitAcked(t, 20)
	c.Resume(tgt)
	if err := <-done; err != nil {
		t.Errorf("cycle 3: CLUSTER MOVESLOTS %d %d 1 on %s: %v", slot, slot, via.Name, err)
	}
	mv.owner[slot] = 1
	mv.waitGroups(t, false)
	t.Logf("cycle 3: slot %d given to group 1 %v after MOVESLOTS was sent", slot, time.Since(sent).Round(time.Millisecond))
	ch.WaitAcked(t, 20)
	stop()
	mv.verify(t, fmt.Sprintf("cycle 3 (slot of %s: group 3 → 1, SIGSTOP to the target's leader %s)", lists[tag3], tgt.Name), start, leaders)

	// The control, on a list of group 2 that never moved.
	t.Logf("balanced again: %s", leaderNames(mv.waitGroups(t, true)))
	ch.catchesTampering(t, mv.reader, lists[byGroup[2][1]])
}

// moveState is what TestPartitionedClusterMovesUnderFaults knows of the
// cluster: which slots moved where, and the padding keys it wrote.
type moveState struct {
	c      *TestCluster
	ch     *Checker
	reader *redis.ClusterClient
	owner  map[int]int // moved slot → the group owning it now
	pads   map[int]int // hash tag → padding keys written with it
}

// pad writes n padding keys with hash tag {tag}, in its slot.
func (mv *moveState) pad(t *testing.T, tag, n int) {
	t.Helper()
	args := []any{"MSET"}
	for k := range n {
		args = append(args, fmt.Sprintf("pad:{%d}:%d", tag, k), "x")
	}
	if err := mv.reader.Do(ctx(t), args...).Err(); err != nil {
		t.Fatalf("MSET %d padding keys {%d}: %v", n, tag, err)
	}
	mv.pads[tag] += n
}

// notOf is a running node other than those given.
func (mv *moveState) notOf(nodes ...*ClusterNode) *ClusterNode {
	for _, n := range mv.c.Nodes {
		if n.running() && !slices.Contains(nodes, n) {
			return n
		}
	}
	mv.c.t.Fatalf("no running node besides %v", nodes)
	return nil
}

// moveSlotAsync sends CLUSTER MOVESLOTS slot slot group to n and returns
// where its outcome will be: nil for +OK. The node answers once the map
// gives the slot to the group, within a minute.
func moveSlotAsync(n *ClusterNode, slot, group int) <-chan error {
	out := make(chan error, 1)
	go func() {
		rc := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, ReadTimeout: 90 * time.Second})
		defer rc.Close()
		c, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		r, err := rc.Do(c, "CLUSTER", "MOVESLOTS", slot, slot, group).Result()
		if err == nil && r != "OK" {
			err = fmt.Errorf("answered %v", r)
		}
		out <- err
	}()
	return out
}

// waitMoving polls src, leading the source group, with EXISTS key until
// it answers -TRYAGAIN or -ASK (the move has begun: the key is being
// copied, or has been, or is not there: true) or -MOVED (it is over:
// false).
func (mv *moveState) waitMoving(t *testing.T, src *ClusterNode, key string) bool {
	t.Helper()
	q, err := dialQuiet(src.Addr())
	if err != nil {
		t.Fatalf("dialling %s: %v", src.Name, err)
	}
	defer q.Conn.Close()
	deadline := time.Now().Add(clusterBound)
	for {
		r, err := q.do("EXISTS", key)
		switch {
		case err != nil:
			t.Fatalf("EXISTS %s on %s: %v", key, src.Name, err)
		case r.Type == '-' && (strings.HasPrefix(r.Str, "TRYAGAIN") || strings.HasPrefix(r.Str, "ASK ")):
			return true
		case r.Type == '-' && strings.HasPrefix(r.Str, "MOVED"):
			return false
		case r.Type == '-':
			t.Fatalf("EXISTS %s on %s, waiting for the move: %s", key, src.Name, r)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the move of %s's slot did not begin on %s within %v\n%s", key, src.Name, clusterBound, mv.c.describe())
		}
		time.Sleep(time.Millisecond) // polling the source: nothing notifies a move's start
	}
}

// waitGroups waits until every running node agrees on a running leader
// for each group (named by CLUSTER SLOTS for the group's first slot,
// which never moves), gives every moved slot to its new group's leader,
// and each leader serves a read of its group; with balanced, until
// besides each group has a leader of its own. It returns the leaders, by
// group (index 0: group 1).
func (mv *moveState) waitGroups(t *testing.T, balanced bool) []*ClusterNode {
	t.Helper()
	deadline := time.Now().Add(clusterBound)
	for {
		leaders, why := mv.groupLeaders(balanced)
		if leaders != nil {
			return leaders
		}
		if time.Now().After(deadline) {
			t.Fatalf("the groups did not settle (moved %v, balanced %v) within %v: %s\n%s", mv.owner, balanced, clusterBound, why, mv.c.describe())
		}
		time.Sleep(50 * time.Millisecond) // polling the nodes: nothing notifies an election or a move
	}
}

func (mv *moveState) groupLeaders(balanced bool) ([]*ClusterNode, string) {
	c := mv.c
	leaders := make([]*ClusterNode, c.groups)
	for _, n := range c.Nodes {
		if !n.running() {
			continue
		}
		rows, err := slotRows(n)
		if err != nil {
			return nil, err.Error()
		}
		master := func(slot int) *ClusterNode {
			for _, r := range rows {
				if r.first <= slot && slot <= r.last {
					return c.byPort(r.port)
				}
			}
			return nil
		}
		for g := range leaders {
			first, _ := GroupSlots(g+1, c.groups)
			m := master(first)
			switch {
			case m == nil || !m.running():
				return nil, fmt.Sprintf("%s names no running master of group %d: %v", n.Name, g+1, rows)
			case leaders[g] != nil && leaders[g] != m:
				return nil, fmt.Sprintf("the nodes name %s and %s master of group %d", leaders[g].Name, m.Name, g+1)
			}
			leaders[g] = m
		}
		for slot, g := range mv.owner {
			if m := master(slot); m != leaders[g-1] {
				return nil, fmt.Sprintf("%s gives slot %d to %v, not to group %d's leader %s: %v", n.Name, slot, m, g, leaders[g-1].Name, rows)
			}
		}
	}
	for g, m := range leaders {
		if m == nil {
			return nil, "no node is running"
		}
		key := mv.probeKey(g + 1)
		if r, err := ask(m, "EXISTS", key); err != nil || r.Type != ':' {
			return nil, fmt.Sprintf("%s, master of group %d, answers EXISTS %s with %s %v", m.Name, g+1, key, r, err)
		}
	}
	if distinct := len(slices.Compact(slices.SortedFunc(slices.Values(leaders), func(a, b *ClusterNode) int { return a.Port - b.Port }))); balanced && distinct < c.groups {
		return nil, "not balanced: " + leaderNames(leaders)
	}
	return leaders, ""
}

// probeKey is a key of group g's original slots that never moved.
func (mv *moveState) probeKey(g int) string {
	for i := 0; ; i++ {
		key := "moves-probe:" + strconv.Itoa(i)
		if s := KeySlot(key); GroupOfSlot(s, partitionedGroups) == g {
			if _, moved := mv.owner[s]; !moved {
				return key
			}
		}
	}
}

// verify checks the cluster after a cycle whose producers have stopped:
// the checker; every moved slot's keys on its new group's leader; and no
// key in two groups (DBSIZE with READONLY on every node).
func (mv *moveState) verify(t *testing.T, what string, start time.Time, before []*ClusterNode) {
	t.Helper()
	c, ch := mv.c, mv.ch
	leaders := mv.waitGroups(t, false)
	contents := ch.Contents(t, mv.reader)
	report := ch.Check(contents)
	t.Logf("%s, %v: before %s; after %s; %s", what, time.Since(start).Round(time.Millisecond), leaderNames(before), leaderNames(leaders), report)
	if !report.Clean() {
		t.Fatalf("%s: %s\n%s", what, report, c.describe())
	}
	if n := report.Reasons["TRYAGAIN"]; n == 0 {
		t.Logf("%s: no write met a key being copied (no TRYAGAIN)", what)
	}
	// Keys per slot: the checker's non-empty ones, and the padding.
	perSlot := map[int]int{}
	total := 0
	for key, payloads := range contents {
		if len(payloads) > 0 {
			perSlot[KeySlot(key)]++
			total++
		}
	}
	for tag, n := range mv.pads {
		perSlot[KeySlot(fmt.Sprintf("{%d}", tag))] += n
		total += n
	}
	for _, slot := range slices.Sorted(maps.Keys(mv.owner)) {
		g := mv.owner[slot]
		r := c.must(leaders[g-1], "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot))
		if r.Type != ':' || int(r.Int) != perSlot[slot] {
			t.Fatalf("%s: CLUSTER COUNTKEYSINSLOT %d on %s (leading group %d, where it moved): %s, want %d\n%s",
				what, slot, leaders[g-1].Name, g, r, perSlot[slot], c.describe())
		}
	}
	// Every node hosts every group: with READONLY, DBSIZE counts the keys
	// of all three databases, where each key must be once.
	for _, n := range c.Nodes {
		deadline := time.Now().Add(clusterBound)
		for {
			got, err := readOnlyDBSize(n)
			if err == nil && got == total {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: DBSIZE on %s with READONLY: %d (%v), want %d: the checker's non-empty keys and the padding, each once\n%s",
					what, n.Name, got, err, total, c.describe())
			}
			time.Sleep(50 * time.Millisecond) // a follower applies on its own: poll
		}
	}
}

// readOnlyDBSize is DBSIZE on n after READONLY: the keys of every group
// it hosts.
func readOnlyDBSize(n *ClusterNode) (int, error) {
	q, err := dialQuiet(n.Addr())
	if err != nil {
		return 0, err
	}
	defer q.Conn.Close()
	if r, err := q.do("READONLY"); err != nil || r.Type != '+' {
		return 0, fmt.Errorf("READONLY: %s %v", r, err)
	}
	r, err := q.do("DBSIZE")
	if err != nil || r.Type != ':' {
		return 0, fmt.Errorf("DBSIZE: %s %v", r, err)
	}
	return int(r.Int), nil
}
