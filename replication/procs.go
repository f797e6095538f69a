package replication

import (
	"log/slog"
	"runtime"
	"syscall"
	"time"
)

// ProcsGovernor sizes GOMAXPROCS of a cluster node by the CPU the node
// uses, between 1 and the GOMAXPROCS it started with.
//
// Why: a replicated write crosses many goroutines on every node (the
// connection that reads an AppendEntries, Raft's main loop that stores
// it, the FSM goroutine, the leader's replicators and log writer; see
// doc.go). When a process has an idle P, each such hand-off makes the
// runtime wake a second thread to look for the work (wakep, a futex
// call and a context switch), and that thread then parks again; the
// runtime's monitor thread also polls every 20 µs after each idle
// spell. A node that uses less than one core pays for all of that and
// gains nothing from the second P. Measured on a 2-core machine with
// three local nodes and 50 unpipelined XADD clients (redis-benchmark):
// each follower spent 9.5 µs of CPU per write with 2 Ps and 5.6 µs with
// 1; the leader 21.8 µs and 19.6 µs; the group's throughput rose from
// 25k to 28k writes/s. A single node (no Raft) does its work on one
// event loop and is faster with every P, so only cluster nodes run the
// governor.
//
// The rule: every period, the CPU the process used (user+sys, all
// threads) over the period, in cores, is compared with the Ps it runs:
//   - above growAt of the Ps it has: one more P, at once (load arrived);
//   - below shrinkAt of one P fewer, for shrinkAfter periods in a row:
//     one P fewer.
//
// The band between the two is wide because the same load costs more CPU
// with more Ps: a node that grew must not shrink back and regrow.
type ProcsGovernor struct {
	max    int
	logger *slog.Logger
	stop   chan struct{}
	done   chan struct{}
}

const (
	procsPeriod      = 250 * time.Millisecond
	procsGrowAt      = 0.8
	procsShrinkAt    = 0.6
	procsShrinkAfter = 4
)

// StartProcsGovernor starts sizing GOMAXPROCS; with GOMAXPROCS already 1
// there is nothing to size and it returns a governor that does nothing.
func StartProcsGovernor(logger *slog.Logger) *ProcsGovernor {
	g := &ProcsGovernor{max: runtime.GOMAXPROCS(0), logger: logger,
		stop: make(chan struct{}), done: make(chan struct{})}
	if g.max <= 1 {
		close(g.done)
		return g
	}
	runtime.GOMAXPROCS(1)
	logger.Info("cluster node: GOMAXPROCS follows the load", "from", 1, "to", g.max)
	go g.run()
	return g
}

// Stop ends the governor and gives the process back the Ps it started
// with.
func (g *ProcsGovernor) Stop() {
	select {
	case <-g.done:
		return
	default:
	}
	close(g.stop)
	<-g.done
}

func (g *ProcsGovernor) run() {
	defer close(g.done)
	defer runtime.GOMAXPROCS(g.max)
	procs := 1
	t := time.NewTicker(procsPeriod)
	defer t.Stop()
	lastCPU, lastAt := processCPU(), time.Now()
	low := 0
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		cpu, at := processCPU(), time.Now()
		used := float64(cpu-lastCPU) / float64(at.Sub(lastAt))
		lastCPU, lastAt = cpu, at
		next := nextProcs(procs, g.max, used, &low)
		if next != procs {
			g.logger.Debug("GOMAXPROCS", "from", procs, "to", next, "cores_used", used)
			procs = next
			runtime.GOMAXPROCS(procs)
		}
	}
}

// nextProcs is the governor's rule: the Ps to run next, given the Ps
// now, the most allowed, the cores used over the last period, and the
// count of periods in a row that were low enough to shrink (updated).
func nextProcs(procs, most int, used float64, low *int) int {
	if procs < most && used > procsGrowAt*float64(procs) {
		*low = 0
		return procs + 1
	}
	if procs > 1 && used < procsShrinkAt*float64(procs-1) {
		*low++
		if *low >= procsShrinkAfter {
			*low = 0
			return procs - 1
		}
		return procs
	}
	*low = 0
	return procs
}

// processCPU is the CPU time the process has used, user and system, all
// threads.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
