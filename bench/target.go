// Package bench measures redstream against redis-server side by side: it
// starts both as separate processes on loopback, drives them with the same
// raw-RESP load generator, alternates between them for every row, and
// prints both figures and their ratio. Machines are noisy, so absolute
// numbers mean little; ratios measured together, in one run, mean a lot.
//
// Rows are independent: each gets fresh data (FLUSHALL) and runs for a
// fixed amount of work, not a fixed time, so both servers do the same job.
package bench

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Target is one server under test.
type Target struct {
	Name string
	Addr string
	cmd  *exec.Cmd
	dir  string
	exe  string
	args []string
	env  []string
}

// StartRedstream starts the redstream binary at exe with extra directives.
// Without them it runs in memory only (appendonly no), to compare like
// with like against redis-server's defaults; persistence rows pass their
// own appendonly settings to both servers. A oneCPU entry among them runs
// it with GOMAXPROCS=1.
func StartRedstream(exe string, extra ...string) (*Target, error) {
	extra, env := splitOneCPU(extra)
	dir, err := os.MkdirTemp("", "redstream-bench")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{"server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--loglevel", "warning", "--appendonly", "no"}, extra...)
	return start("redstream", exe, args, env, dir, port)
}

// oneCPU, in a row's Config, runs redstream with GOMAXPROCS=1: one
// thread runs Go code, as in a one-CPU container (Go sizes GOMAXPROCS by
// the cgroup's CPU limit). redis-server runs its one thread either way.
const oneCPU = "GOMAXPROCS=1"

// splitOneCPU takes oneCPU out of config and returns it as environment.
func splitOneCPU(config []string) (flags, env []string) {
	for _, c := range config {
		if c == oneCPU {
			env = append(env, c)
		} else {
			flags = append(flags, c)
		}
	}
	return flags, env
}

// StartRedis starts redis-server (found on PATH) without persistence
// unless extra says otherwise; it returns nil, nil when none is installed.
func StartRedis(extra ...string) (*Target, error) {
	extra, _ = splitOneCPU(extra)
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, nil
	}
	dir, err := os.MkdirTemp("", "redis-bench")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"}, extra...)
	t, err := start("redis", path, args, nil, dir, port)
	if err == nil {
		if v, verr := t.serverVersion(); verr == nil {
			t.Name = "redis " + v
		}
	}
	return t, err
}

func start(name, exe string, args, env []string, dir string, port int) (*Target, error) {
	t := &Target{Name: name, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, exe: exe, args: args,
		env: append(os.Environ(), env...)}
	if err := t.launch(filepath.Join(dir, name+".log")); err != nil {
		return nil, err
	}
	if _, err := t.awaitReady(30 * time.Second); err != nil {
		t.Stop()
		return nil, err
	}
	return t, nil
}

// launch starts t's process, its output appended to the file at logPath.
func (t *Target) launch(logPath string) error {
	cmd := exec.Command(t.exe, t.args...)
	cmd.Env = t.env
	cmd.SysProcAttr = dieWithBench()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child keeps its own descriptor
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", t.Name, err)
	}
	t.cmd = cmd
	return nil
}

// awaitReady waits until the server answers PING with PONG (not just
// accepts connections: Redis accepts them while loading and answers
// -LOADING) and returns how long that took.
func (t *Target) awaitReady(limit time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		if c, err := Dial(t.Addr); err == nil {
			r, err := c.Do("PING")
			c.Close()
			if err == nil && r.Str == "PONG" {
				return time.Since(start), nil
			}
		}
		if time.Since(start) > limit {
			return 0, fmt.Errorf("%s did not answer PING on %s within %v", t.Name, t.Addr, limit)
		}
		time.Sleep(5 * time.Millisecond) // waiting for a port to open or a load to end: nothing to block on
	}
}

// Restart kills the server (as a crash would: whatever its settings made
// durable is all it has) and starts it again on the same data, returning
// how long it took to answer PING again: its load time.
func (t *Target) Restart() (time.Duration, error) {
	t.Kill()
	return t.Relaunch()
}

// Kill kills the server with SIGKILL, as a crash would, keeping its data.
func (t *Target) Kill() {
	_ = t.cmd.Process.Kill()
	_ = t.cmd.Wait()
}

// Relaunch starts a killed server again on its data and returns how long
// it took to answer PING.
func (t *Target) Relaunch() (time.Duration, error) {
	start := time.Now()
	if err := t.launch(filepath.Join(t.dir, "restart.log")); err != nil {
		return 0, err
	}
	if _, err := t.awaitReady(10 * time.Minute); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// Stop kills the server and removes its data directory.
func (t *Target) Stop() {
	if t == nil || t.cmd == nil {
		return
	}
	_ = t.cmd.Process.Kill()
	_ = t.cmd.Wait()
	os.RemoveAll(t.dir)
}

// Pid is the server's process ID.
func (t *Target) Pid() int { return t.cmd.Process.Pid }

// RSS returns the server's resident set size in bytes.
func (t *Target) RSS() (int64, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(t.Pid()), "statm"))
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(data))
	if len(fields) < 2 {
		return 0, fmt.Errorf("unexpected statm: %q", data)
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	return pages * int64(os.Getpagesize()), err
}

// Do runs one command on a fresh connection and returns its reply.
func (t *Target) Do(args ...string) (Reply, error) {
	c, err := Dial(t.Addr)
	if err != nil {
		return Reply{}, err
	}
	defer c.Close()
	return c.Do(args...)
}

func (t *Target) serverVersion() (string, error) {
	r, err := t.Do("INFO", "server")
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(strings.NewReader(r.Str))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "redis_version:"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("no redis_version")
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// clockTick is the unit of /proc's CPU times (USER_HZ): 100 per second on
// Linux whatever the kernel's own tick.
const clockTick = 10 * time.Millisecond

// CPU returns the CPU time the server process has used, user plus system,
// over all its threads (those that have ended too): what it cost to serve
// the load, beside what the load generator saw.
func (t *Target) CPU() (time.Duration, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(t.Pid()), "stat"))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count from after it.
	rest := string(data)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected stat: %q", data)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14 of stat
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected stat: %q", data)
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// cpuPer runs fn, which does ops operations on t, and returns the server's
// CPU time per operation in µs.
func cpuPer(t *Target, ops int, fn func() error) (float64, error) {
	per, err := cpuPerEach([]*Target{t}, ops, fn)
	if err != nil {
		return 0, err
	}
	return per[0], nil
}

// cpuPerEach runs fn, which does ops operations, and returns the CPU time
// per operation, in µs, that each of targets spent meanwhile.
func cpuPerEach(targets []*Target, ops int, fn func() error) ([]float64, error) {
	before, err := cpuTimes(targets)
	if err != nil {
		return nil, err
	}
	if err := fn(); err != nil {
		return nil, err
	}
	after, err := cpuTimes(targets)
	if err != nil {
		return nil, err
	}
	per := make([]float64, len(targets))
	for i := range targets {
		per[i] = float64(after[i]-before[i]) / float64(time.Microsecond) / float64(max(ops, 1))
	}
	return per, nil
}

func cpuTimes(targets []*Target) ([]time.Duration, error) {
	times := make([]time.Duration, len(targets))
	for i, t := range targets {
		var err error
		if times[i], err = t.CPU(); err != nil {
			return nil, err
		}
	}
	return times, nil
}

// dieWithBench makes a child process get SIGKILL when the bench dies,
// however it dies: a bench stopped with Ctrl-C or killed used to leave
// its servers (three cluster nodes, redis-server, NATS) running. Linux
// sends the signal when the thread that started the child ends; Go ends
// a thread only when a goroutine locked to it returns without
// unlocking, which the bench process never does.
func dieWithBench() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
