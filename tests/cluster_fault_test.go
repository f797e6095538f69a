package tests

import (
	"cmp"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue 13's process fault tests: a three-node group, producers writing
// through a cluster client, and a fault per cycle — kill -9 the leader,
// a follower, all three; SIGSTOP the leader past the election timeout;
// a follower brought back after the log it missed was compacted into a
// snapshot. After each cycle the checker (cluster_checker_test.go) reads
// everything back from the leader.

// clusterCycles is a test's share, in tenths, of the fault cycles the
// cluster tests run in all: 10 in `make test`, REDSTREAM_CLUSTER_CYCLES
// otherwise (`make soak-cluster` runs 200).
func clusterCycles(tenths int) int {
	total := 10
	if n, err := strconv.Atoi(os.Getenv("REDSTREAM_CLUSTER_CYCLES")); err == nil && n > 0 {
		total = n
	}
	return max(1, total*tenths/10)
}

// producers is how many producers write during a cycle.
const producers = 4

// faultCycles runs cycles: producers write, fault strikes (and undoes
// itself: every node is up again when it returns), the group settles and
// takes writes again, and the checker reads back from the leader.
func faultCycles(t *testing.T, c *TestCluster, ch *Checker, cycles int, fault func(cycle int, leader *ClusterNode)) {
	t.Helper()
	writer := c.ClusterClient()
	reader := c.ClusterClient()
	for cycle := range cycles {
		start := time.Now()
		leader := c.WaitSettled()
		stop := ch.Produce(writer, producers)
		ch.WaitAcked(t, 20) // writes are in flight when the fault strikes
		fault(cycle, leader)
		c.WaitSettled()
		ch.WaitAcked(t, 20) // the group takes writes again
		stop()
		report := ch.Check(ch.Contents(t, reader))
		t.Logf("cycle %d (%v): %s", cycle, time.Since(start).Round(time.Millisecond), report)
		if !report.Clean() {
			t.Fatalf("cycle %d: %s\n%s\n%s", cycle, report, ch.whereHeld(c, report.Lost), c.describe())
		}
	}
}

func TestClusterKillLeader(t *testing.T) {
	c := StartCluster(t)
	ch := NewChecker()
	faultCycles(t, c, ch, clusterCycles(3), func(_ int, leader *ClusterNode) {
		c.Kill(leader)
		if c.WaitSettled() == leader {
			t.Fatal("a killed node is the leader")
		}
		ch.WaitAcked(t, 20) // the new leader commits with the old one down
		c.Start(leader)
	})
}

func TestClusterKillFollower(t *testing.T) {
	c := StartCluster(t)
	ch := NewChecker()
	faultCycles(t, c, ch, clusterCycles(2), func(cycle int, leader *ClusterNode) {
		follower := c.Others(leader)[cycle%2]
		c.Kill(follower)
		ch.WaitAcked(t, 20) // two of three still commit
		c.Start(follower)
	})
}

func TestClusterKillAll(t *testing.T) {
	c := StartCluster(t)
	ch := NewChecker()
	faultCycles(t, c, ch, clusterCycles(2), func(_ int, _ *ClusterNode) {
		for _, n := range c.Nodes {
			c.Kill(n)
		}
		for _, n := range c.Nodes {
			c.Start(n)
		}
	})
}

// TestClusterPauseLeader stops the leader with SIGSTOP until the others
// have elected a new one, then continues it. Writes and a read were
// waiting in its socket: the writes it took as a deposed leader must not
// be acknowledged unless the group has them (the checker sees to that),
// and the read, sent after the new leader acknowledged a write, must not
// answer from the old state.
func TestClusterPauseLeader(t *testing.T) {
	c := StartCluster(t)
	ch := NewChecker()
	faultCycles(t, c, ch, clusterCycles(2), func(cycle int, leader *ClusterNode) {
		before, after := "before-"+strconv.Itoa(cycle), "after-"+strconv.Itoa(cycle)
		c.SetOnLeader("chk:marker", before)
		q, err := dialQuiet(leader.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer q.Conn.Close()
		c.Pause(leader)
		writes := ch.queueWrites(t, q, 5)
		if c.WaitSettled() == leader {
			t.Fatal("a paused node is the leader")
		}
		c.SetOnLeader("chk:marker", after)
		send(t, q, "GET", "chk:marker")
		c.Resume(leader)
		ch.readQueued(t, q, writes)
		r, err := readReply(q.r)
		switch {
		case err != nil:
			t.Fatalf("GET on the deposed leader: %v", err)
		case r.Type == '-': // -MOVED, or -CLUSTERDOWN while it knows no leader: no answer from its state
		case r.Str != after:
			t.Fatalf("the deposed leader answered GET chk:marker with %s; the new leader had acknowledged %q before the read was sent", r, after)
		}
	})
}

// queueWrites sends n writes on q without reading their replies: to a
// paused node they wait in its socket.
func (ch *Checker) queueWrites(t *testing.T, q *quietConn, n int) []string {
	t.Helper()
	id := ch.newProducer()
	keys := ch.keys()
	var payloads []string
	for seq := range n {
		key := keys[seq%len(keys)]
		p := ch.Sent(key, id, seq)
		args := ch.writeCommand(key, p)
		send(t, q, args...)
		payloads = append(payloads, p)
	}
	return payloads
}

// readQueued reads the replies to queueWrites' writes and records them.
func (ch *Checker) readQueued(t *testing.T, q *quietConn, payloads []string) {
	t.Helper()
	_ = q.Conn.SetReadDeadline(time.Now().Add(clusterBound))
	for _, p := range payloads {
		r, err := readReply(q.r)
		if err == nil && r.Type == '-' {
			err = errors.New(r.Str)
		}
		ch.Record(p, err)
	}
}

func send(t *testing.T, q *quietConn, args ...string) {
	t.Helper()
	if _, err := q.Conn.Write([]byte(Encode(args...))); err != nil {
		t.Fatalf("sending %v: %v", args, err)
	}
}

// TestClusterFollowerCatchesUpFromSnapshot keeps a follower down while
// the others commit past raft-snapshot-threshold and drop the log it
// lacks, so it can only catch up from the leader's snapshot; then it
// must hold exactly what the leader holds.
//
// raft-wal drops log only a whole segment (64 MB) at a time, whatever
// raft-trailing-logs says, so the test writes 256 KB values until the
// segment holding the follower's next entry is gone from the leader.
func TestClusterFollowerCatchesUpFromSnapshot(t *testing.T) {
	c := StartCluster(t, "--raft-snapshot-threshold", "200", "--raft-trailing-logs", "50")
	ch := NewChecker()
	faultCycles(t, c, ch, clusterCycles(1), func(cycle int, leader *ClusterNode) {
		follower := c.Others(leader)[cycle%2]
		c.Kill(follower)
		// The follower holds no entry the leader does not have yet.
		next := uint64(infoInt(t, dialRaw(t, leader.Addr()), "replication", "raft_last_index")) + 1
		dropLogPast(t, leader, next, func() { c.SetOnLeader("chk:filler", strings.Repeat("x", 256<<10)) })
		snap := newestSnapshot(t, leader)
		c.Start(follower)
		installed := waitSnapshot(t, follower, func(s snapshotName) bool { return s.index >= snap.index && s.term >= snap.term })
		if !hasSnapshot(leader, installed) {
			t.Fatalf("%s's snapshot %v is none of the leader's %v: it did not catch up from the leader's snapshot\n%s", follower.Name, installed, snapshots(leader), c.describe())
		}
		t.Logf("cycle %d: %s needed entry %d on; the leader's log starts at %d; it installed the leader's snapshot %v",
			cycle, follower.Name, next, logSegments(leader)[0], installed)
	})
	leader := c.WaitSettled()
	want := ch.Contents(t, c.ClusterClient())
	for _, n := range c.Others(leader) {
		waitSameContents(t, c, ch, n, want)
	}
}

// dropLogPast writes (fill) until n's Raft log no longer holds entry
// index: its first segment is sealed, a snapshot taken after it, and the
// segment deleted. Raft looks every 10-20s whether a snapshot is due.
func dropLogPast(t *testing.T, n *ClusterNode, index uint64, fill func()) {
	t.Helper()
	deadline := time.Now().Add(2 * clusterBound)
	for {
		segs := logSegments(n)
		switch {
		case len(segs) > 0 && segs[0] > index:
			return
		case time.Now().After(deadline):
			t.Fatalf("%s's log still holds entry %d after %v: segments from %v, snapshots %v", n.Name, index, 2*clusterBound, segs, snapshots(n))
		case len(segs) < 2:
			fill()
		default:
			time.Sleep(50 * time.Millisecond) // polling its directory for the snapshot's compaction
		}
	}
}

// logSegments are the base indexes of n's Raft log segments, in order
// (raft-wal names each file <base index>-<id>.wal).
func logSegments(n *ClusterNode) []uint64 {
	entries, _ := os.ReadDir(filepath.Join(n.Dir, "raft", "wal"))
	var out []uint64
	for _, e := range entries {
		base, _, ok := strings.Cut(e.Name(), "-")
		if i, err := strconv.ParseUint(base, 10, 64); ok && err == nil && strings.HasSuffix(e.Name(), ".wal") {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

// snapshotName is a Raft snapshot as hashicorp/raft names its directory.
type snapshotName struct {
	term, index uint64
}

// snapshots lists the Raft snapshots in n's directory.
func snapshots(n *ClusterNode) []snapshotName {
	entries, _ := os.ReadDir(filepath.Join(n.Dir, "raft", "snapshots"))
	var out []snapshotName
	for _, e := range entries {
		parts := strings.Split(e.Name(), "-")
		if !e.IsDir() || len(parts) != 3 || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		term, err1 := strconv.ParseUint(parts[0], 10, 64)
		index, err2 := strconv.ParseUint(parts[1], 10, 64)
		if err1 == nil && err2 == nil {
			out = append(out, snapshotName{term, index})
		}
	}
	return out
}

func hasSnapshot(n *ClusterNode, s snapshotName) bool {
	for _, x := range snapshots(n) {
		if x == s {
			return true
		}
	}
	return false
}

// waitSnapshot waits until n holds a snapshot that fits and returns it.
func waitSnapshot(t *testing.T, n *ClusterNode, fits func(snapshotName) bool) snapshotName {
	t.Helper()
	deadline := time.Now().Add(clusterBound)
	for {
		for _, s := range snapshots(n) {
			if fits(s) {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds no fitting snapshot within %v: %v", n.Name, clusterBound, snapshots(n))
		}
		time.Sleep(50 * time.Millisecond) // polling its directory: nothing to wait on
	}
}

// newestSnapshot is n's newest snapshot.
func newestSnapshot(t *testing.T, n *ClusterNode) snapshotName {
	t.Helper()
	snaps := snapshots(n)
	if len(snaps) == 0 {
		t.Fatalf("%s has no snapshot", n.Name)
	}
	return slices.MaxFunc(snaps, func(a, b snapshotName) int { return cmp.Compare(a.index, b.index) })
}

// waitSameContents waits until n, read as a replica (READONLY), holds
// want.
func waitSameContents(t *testing.T, c *TestCluster, ch *Checker, n *ClusterNode, want map[string][]string) {
	t.Helper()
	r := readOnlyClient(t, n)
	deadline := time.Now().Add(clusterBound)
	for {
		got := ch.Contents(t, r)
		if equalContents(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not hold what the leader holds within %v\n%s", n.Name, clusterBound, diffContents(got, want))
		}
		time.Sleep(50 * time.Millisecond) // polling a replica: nothing to wait on
	}
}

func equalContents(a, b map[string][]string) bool {
	return diffContents(a, b) == ""
}

// diffContents says, per key, how got differs from want ("" when not).
func diffContents(got, want map[string][]string) string {
	var b strings.Builder
	for key, w := range want {
		g := got[key]
		if strings.Join(g, ",") != strings.Join(w, ",") {
			b.WriteString(key + ": " + strconv.Itoa(len(g)) + " payloads, the leader " + strconv.Itoa(len(w)) + "\n")
		}
	}
	return b.String()
}
