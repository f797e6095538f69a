package replication

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"
)

// shortLog keeps few entries behind a snapshot, and takes snapshots only
// when a test asks (node.raft.Snapshot).
func shortLog(c *Config) { c.SnapshotAfter, c.TrailingLogs = 1<<30, 16 }

// history is the writes a disk-fault test made, all acknowledged: RPUSH q
// of p-00000, p-00001, ..., and XADD s of every fourth.
type history struct{ n int }

// write makes count more writes through whichever of nodes leads.
func (h *history) write(t *testing.T, nodes []*testNode, count int) {
	t.Helper()
	ctx := context.Background()
	for range count {
		p := fmt.Sprintf("p-%05d", h.n)
		h.do(t, nodes, func(c *redis.Client) error { return c.RPush(ctx, "q", p).Err() })
		if h.n%4 == 0 {
			h.do(t, nodes, func(c *redis.Client) error {
				return c.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"p", p}}).Err()
			})
		}
		h.n++
	}
}

// do runs a write on the leader, again on the new one if it was refused
// (a slow machine can lose a leader): it was not applied.
func (h *history) do(t *testing.T, nodes []*testNode, write func(*redis.Client) error) {
	t.Helper()
	for range 100 {
		c := redis.NewClient(&redis.Options{Addr: leaderOf(t, nodes).addr, MaxRetries: -1})
		err := write(c)
		c.Close()
		if err == nil {
			return
		}
		if _, refused := refusal(err); !refused {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // for the old leader to see it no longer leads
	}
	t.Fatal("no leader took the write in 100 tries")
}

// check verifies that the node at addr holds every write, once, in order.
func (h *history) check(t *testing.T, addr string) {
	t.Helper()
	held := heldPayloads(t, addr)
	if len(held) != h.n {
		t.Errorf("the node holds %d payloads, want %d", len(held), h.n)
	}
	for i := range h.n {
		p := fmt.Sprintf("p-%05d", i)
		want := []string{"q"}
		if i%4 == 0 {
			want = append(want, "s")
		}
		if !slices.Equal(held[p], want) {
			t.Errorf("%s is held in %v, want %v", p, held[p], want)
		}
	}
}

// diskFault is one group whose second node has its files damaged while
// it is stopped.
type diskFault struct {
	nodes  []*testNode
	victim *testNode
	hist   history
}

// startDiskFault starts a group, writes, has the victim (a follower)
// take snapshots if asked, stops it and writes more: the victim comes
// back behind.
func startDiskFault(t *testing.T, snapshots int, opts ...func(*Config)) *diskFault {
	t.Helper()
	f := &diskFault{nodes: startGroup(t, opts...)}
	f.victim = f.nodes[1]
	f.hist.write(t, f.nodes, 40)
	for range snapshots {
		waitSameDigest(t, f.nodes)
		if err := f.victim.node.main.raft.Snapshot().Error(); err != nil {
			t.Fatal(err)
		}
		f.hist.write(t, f.nodes, 40)
	}
	waitSameDigest(t, f.nodes)
	f.victim.stop()
	f.hist.write(t, f.nodes, 20)
	return f
}

// restart starts the victim again on its damaged files.
func (f *diskFault) restart(t *testing.T, opts ...func(*Config)) error {
	t.Helper()
	v := f.victim
	back, err := openNodeOn(t, v.dir, v.port, v.busPort, opts...)
	if err == nil {
		f.nodes[1] = back
	}
	return err
}

// resynced verifies that the restarted victim caught up and, made the
// leader, holds every write: it never serves a keyspace with a hole.
func (f *diskFault) resynced(t *testing.T) {
	t.Helper()
	waitSameDigest(t, f.nodes)
	back := f.nodes[1]
	self := back.node.Self()
	onLeader(t, f.nodes, func(leader *Node) error {
		if leader == back.node {
			return nil
		}
		return leader.main.TransferLeadership(self.ID)
	})
	waitFor(t, "the restarted node to lead", back.node.Leading)
	f.hist.write(t, f.nodes, 10)
	f.hist.check(t, back.addr)
}

// refused verifies that the victim refused to start with an error that
// names the damaged file, then brings it back the way the error says:
// removed from the group, its Raft state emptied, added as a new node.
func (f *diskFault) refused(t *testing.T, err error, file string) {
	t.Helper()
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), file) {
		t.Fatalf("restarting on a damaged %s: %v; want ErrDamaged naming the file", file, err)
	}
	t.Logf("refused to start: %v", err)
	victim := f.victim.node.Self().ID
	onLeader(t, f.nodes, func(leader *Node) error { return leader.RemoveNode(victim) })
	if err := os.RemoveAll(filepath.Join(f.victim.dir, "raft")); err != nil {
		t.Fatal(err)
	}
	fresh := startNodeOn(t, f.victim.dir, f.victim.port, f.victim.busPort, shortLog)
	onLeader(t, f.nodes, func(leader *Node) error { return leader.AddNode(fresh.node.Self()) })
	f.nodes[1] = fresh
	f.resynced(t)
}

// walSegment is the victim's newest Raft log segment file.
func (f *diskFault) walSegment(t *testing.T) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(f.victim.dir, "raft", "wal", "*.wal"))
	if len(files) == 0 {
		t.Fatal("no Raft log segment")
	}
	slices.Sort(files)
	return files[len(files)-1]
}

// flipByte inverts the bits of the byte at offset in path.
func flipByte(t *testing.T, path string, offset int64) {
	t.Helper()
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	b := make([]byte, 1)
	if _, err := file.ReadAt(b, offset); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := file.WriteAt(b, offset); err != nil {
		t.Fatal(err)
	}
}

// A log cut inside its last batch is what a crash during a write leaves:
// the node drops that batch and fetches it again from the leader.
func TestTruncatedLogTailResyncs(t *testing.T) {
	t.Parallel() // each its own group; mostly waiting on elections and fsyncs
	f := startDiskFault(t, 0, shortLog)
	path := f.walSegment(t)
	seg, err := readWALSegment(path)
	batches := seg.batches
	if err != nil || len(batches) < 2 {
		t.Fatalf("%s: %d batches, %v", path, len(batches), err)
	}
	if err := os.Truncate(path, batches[len(batches)-1].commit-3); err != nil {
		t.Fatal(err)
	}
	if err := f.restart(t, shortLog); err != nil {
		t.Fatalf("restarting after a torn log tail: %v", err)
	}
	f.resynced(t)
}

// A flipped byte inside a record in the middle of the log — here inside
// a write's payload, where it would change the value applied — makes the
// node refuse to start.
func TestFlippedLogRecordRefusesToStart(t *testing.T) {
	t.Parallel()
	f := startDiskFault(t, 0, shortLog)
	path := f.walSegment(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, []byte("p-00020"))
	if at < 0 {
		t.Fatalf("%s does not hold p-00020", path)
	}
	flipByte(t, path, int64(at+len("p-0002")))
	f.refused(t, f.restart(t, shortLog), path)
}

// A flipped byte in a frame header in the middle of the log reads, to
// raft-wal, like the end of what was written: it would drop the rest of
// the log, records this node acknowledged. The node refuses to start.
// (Without the check, Open failed with raft's "failed to get last log at
// index N: log not found" when the cut was below the node's snapshot, as
// here, and the node resynced when it was above.)
func TestFlippedLogFrameHeaderRefusesToStart(t *testing.T) {
	t.Parallel()
	f := startDiskFault(t, 1, shortLog)
	path := f.walSegment(t)
	seg, err := readWALSegment(path)
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, path, seg.batches[len(seg.batches)/4].entries[0]) // its type
	f.refused(t, f.restart(t, shortLog), path)
}

// newestSnapshot is the state file of the victim's newest snapshot.
func (f *diskFault) newestSnapshot(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(f.victim.dir, "raft")
	store, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	metas, err := store.List()
	if err != nil || len(metas) == 0 {
		t.Fatalf("no snapshot in %s: %v", dir, err)
	}
	return filepath.Join(dir, "snapshots", metas[0].ID, "state.bin")
}

func flipMiddleByte(t *testing.T, path string) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, path, info.Size()/2)
}

// A damaged newest snapshot, when the log no longer reaches back to the
// older one, makes the node refuse to start.
func TestFlippedSnapshotRefusesToStart(t *testing.T) {
	t.Parallel()
	f := startDiskFault(t, 2, shortLog)
	path := f.newestSnapshot(t)
	flipMiddleByte(t, path)
	f.refused(t, f.restart(t, shortLog), path)
}

// A damaged newest snapshot, when the log still holds everything after
// the older one, is replaced by the older one and the log.
func TestFlippedSnapshotFallsBackToTheOlder(t *testing.T) {
	t.Parallel()
	longLog := func(c *Config) { shortLog(c); c.TrailingLogs = 10240 }
	f := startDiskFault(t, 2, longLog)
	flipMiddleByte(t, f.newestSnapshot(t))
	if err := f.restart(t, longLog); err != nil {
		t.Fatalf("restarting with an older snapshot and the log after it: %v", err)
	}
	f.resynced(t)
}

// onLeader runs op on whichever running node leads, again while it fails
// (within 30 s): with one node of three down and the machine busy, a
// missed heartbeat may move leadership between the lookup and op, which
// then answers "not the leader". Membership changes are idempotent, so a
// retry after a change that did commit does no harm.
func onLeader(t *testing.T, nodes []*testNode, op func(*Node) error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := op(leaderOf(t, nodes).node)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // leadership is moving: there is nothing to wait on
	}
}
