package bench

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// redstreamCluster is three redstream processes on loopback, each with
// its own data directory, made one Raft group by `redstream cluster
// create`.
type redstreamCluster struct {
	exe   string
	nodes []*Target
}

// nodeTimeout is the nodes' cluster-node-timeout in ms: how long
// followers wait for a silent leader before electing another.
const nodeTimeout = 1000

func startCluster(exe string) (*redstreamCluster, error) {
	c := &redstreamCluster{exe: exe}
	var addrs []string
	for i := range 3 {
		t, err := startClusterNode(exe, i+1)
		if err != nil {
			c.stop()
			return nil, err
		}
		c.nodes = append(c.nodes, t)
		addrs = append(addrs, t.Addr)
	}
	out, err := exec.Command(exe, append([]string{"cluster", "create"}, addrs...)...).CombinedOutput()
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("redstream cluster create: %w: %s", err, strings.TrimSpace(string(out)))
	}
	if _, err := c.byRole(); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func startClusterNode(exe string, n int) (*Target, error) {
	dir, err := os.MkdirTemp("", "redstream-cluster-bench")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	bus, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--loglevel", "warning",
		"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", strconv.Itoa(nodeTimeout)}
	return start("redstream node "+strconv.Itoa(n), exe, args, nil, dir, port)
}

// byRole waits (bounded) until the group has a leader that acknowledges
// a write and every node has applied that write, and returns the leader,
// then the followers.
func (c *redstreamCluster) byRole() ([]*Target, error) {
	deadline := time.Now().Add(time.Minute)
	var nodes []*Target
	var commit int64
	err := pollUntil(deadline, func() (err error) {
		nodes, commit, err = c.leaderWrite()
		return err
	})
	if err != nil {
		return nil, err
	}
	err = pollUntil(deadline, func() error { return caughtUp(nodes[1:], commit) })
	return nodes, err
}

// pollUntil calls fn until it succeeds or deadline passes, and returns
// its last error. It is for waiting on elections and catch-ups, which
// notify no one.
func pollUntil(deadline time.Time, fn func() error) error {
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leaderWrite finds the leader, has it acknowledge a write, and returns
// the nodes, leader first, and its commit index after the write.
func (c *redstreamCluster) leaderWrite() ([]*Target, int64, error) {
	var leader *Target
	var followers []*Target
	for _, t := range c.nodes {
		role, err := infoText(t, "replication", "raft_state")
		if err != nil {
			return nil, 0, err
		}
		if role == "leader" {
			leader = t
		} else {
			followers = append(followers, t)
		}
	}
	if leader == nil || len(followers) != len(c.nodes)-1 {
		return nil, 0, errors.New("the group has no single leader")
	}
	if _, err := leader.Do("SET", "bench:probe", "1"); err != nil {
		return nil, 0, err
	}
	commit, err := infoInt(leader, "replication", "raft_commit_index")
	return append([]*Target{leader}, followers...), commit, err
}

// caughtUp reports whether every follower has applied the log up to
// commit.
func caughtUp(followers []*Target, commit int64) error {
	for _, f := range followers {
		applied, err := infoInt(f, "replication", "raft_applied_index")
		if err != nil {
			return err
		}
		if applied < commit {
			return fmt.Errorf("%s has applied %d of %d entries", f.Name, applied, commit)
		}
	}
	return nil
}

func (c *redstreamCluster) stop() {
	for _, t := range c.nodes {
		t.Stop()
	}
}

// failover kills the leader with SIGKILL kills times, each time measuring
// how long until a client that tries every surviving node in turn gets a
// write acknowledged, then restarting the killed node and waiting for it
// to catch up. It returns that time's median and maximum in seconds.
func (c *redstreamCluster) failover(kills int) ([]float64, error) {
	var took []time.Duration
	for range kills {
		nodes, err := c.byRole()
		if err != nil {
			return nil, err
		}
		nodes[0].Kill()
		start := time.Now()
		d, err := firstWrite(nodes[1:], start)
		if err != nil {
			return nil, err
		}
		took = append(took, d)
		if _, err := nodes[0].Relaunch(); err != nil {
			return nil, err
		}
	}
	if _, err := c.byRole(); err != nil {
		return nil, err
	}
	p50, _, pmax := percentiles(took)
	return []float64{p50 / 1000, pmax / 1000}, nil
}

// firstWrite tries an XADD on each of nodes in turn until one is
// acknowledged and returns the time from start until then.
func firstWrite(nodes []*Target, start time.Time) (time.Duration, error) {
	err := pollUntil(start.Add(time.Minute), func() (err error) {
		for _, t := range nodes {
			if err = tryWrite(t.Addr); err == nil {
				return nil
			}
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("no write was acknowledged within a minute of killing the leader: %w", err)
	}
	return time.Since(start), nil
}

// tryWrite sends one XADD on a fresh connection with a bounded wait: an
// error reply (MOVED, CLUSTERDOWN, UNKNOWN) or no reply is a failure.
func tryWrite(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	c := newConn(conn)
	defer c.Close()
	if err := conn.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return err
	}
	_, err = c.Do("XADD", "bench:failover", "*", "f", "v")
	return err
}

// fsyncCounter counts a process's fsync and fdatasync calls with perf
// stat (kernel tracepoint counters: the process runs at full speed, as
// it would not under strace).
type fsyncCounter struct {
	cmd   *exec.Cmd
	out   bytes.Buffer
	start time.Time
}

// countFsyncs starts counting t's fsyncs; nil when perf cannot.
func countFsyncs(t *Target) *fsyncCounter {
	perf, err := exec.LookPath("perf")
	if err != nil {
		return nil
	}
	f := &fsyncCounter{start: time.Now()}
	f.cmd = exec.Command(perf, "stat", "-x", ",", "-e", "syscalls:sys_enter_fsync,syscalls:sys_enter_fdatasync",
		"-p", strconv.Itoa(t.Pid()))
	f.cmd.Stderr = &f.out
	f.cmd.SysProcAttr = dieWithBench()
	if f.cmd.Start() != nil {
		return nil
	}
	return f
}

// stop ends the count and returns the calls per second; NaN when perf
// could not count them.
func (f *fsyncCounter) stop() (perSecond, calls float64) {
	if f == nil {
		return math.NaN(), math.NaN()
	}
	elapsed := time.Since(f.start)
	_ = f.cmd.Process.Signal(os.Interrupt)
	_ = f.cmd.Wait()
	calls, ok := parsePerfCounts(f.out.String())
	if !ok {
		return math.NaN(), math.NaN()
	}
	return calls / elapsed.Seconds(), calls
}

// parsePerfCounts sums the syscall counts of perf stat -x , output; ok
// is false when it holds none (perf could not count them).
func parsePerfCounts(out string) (calls float64, ok bool) {
	for line := range strings.SplitSeq(out, "\n") {
		fields := strings.Split(line, ",")
		if len(fields) < 3 || !strings.HasPrefix(fields[2], "syscalls:") {
			continue
		}
		if n, err := strconv.ParseFloat(fields[0], 64); err == nil {
			calls += n
			ok = true
		}
	}
	return calls, ok
}

// infoText reads a field of an INFO section as text.
func infoText(t *Target, section, field string) (string, error) {
	r, err := t.Do("INFO", section)
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(r.Str, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("INFO %s has no %s", section, field)
}
