package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// fsyncCost is what one small append and fdatasync costs on this
// machine's disk, alone: the CPU of the calling thread (the kernel's work
// for the write and the sync) and the wall time, in directory dir.
type fsyncCost struct {
	dir       string
	cpu, wall time.Duration
}

// measureFsyncCost appends 2 KiB and fdatasyncs, n times, in a file
// written ahead as the Raft log's segments are (so no sync changes the
// file's size), in dir.
func measureFsyncCost(dir string, n int) (fsyncCost, error) {
	f, err := os.CreateTemp(dir, "fsync-cost-")
	if err != nil {
		return fsyncCost{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	const recSize, span = 2048, 512
	if _, err := f.Write(make([]byte, recSize*span)); err != nil {
		return fsyncCost{}, err
	}
	if err := f.Sync(); err != nil {
		return fsyncCost{}, err
	}
	runtime.LockOSThread() // the thread's CPU is the calls'
	defer runtime.UnlockOSThread()
	rec := make([]byte, recSize)
	cpu0, began := threadCPU(), time.Now()
	for i := range n {
		if _, err := f.WriteAt(rec, int64(i%span)*recSize); err != nil {
			return fsyncCost{}, err
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return fsyncCost{}, err
		}
	}
	per := time.Duration(n)
	return fsyncCost{dir: dir, cpu: (threadCPU() - cpu0) / per, wall: time.Since(began) / per}, nil
}

// threadCPU is the calling thread's user+system time.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// batchCostModel fits each run's CPU per write to a + b × fsyncs per
// write by least squares. Every batch a group commits costs each node
// an fsync, and around it the messages, wake-ups and bookkeeping of a
// batch; so a is what a write costs whatever its batch and b what a batch
// costs per fsync. ok is false without two runs of different batch
// sizes.
func batchCostModel(runs []partitionRun) (a, b float64, ok bool) {
	var n, sx, sy, sxx, sxy float64
	for _, r := range runs {
		if math.IsNaN(r.fsyncs) || r.total() == 0 {
			continue
		}
		x, y := r.fsyncs, r.total()
		n, sx, sy, sxx, sxy = n+1, sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	d := n*sxx - sx*sx
	if n < 2 || d <= 1e-12 {
		return 0, 0, false
	}
	b = (n*sxy - sx*sy) / d
	return (sy - b*sx) / n, b, true
}

// costModelLines explains the CPU per write of the runs by batch size.
func costModelLines(rounds [][]partitionRun, fsync fsyncCost, fsyncErr error) []string {
	var runs []partitionRun
	for _, r := range rounds {
		runs = append(runs, r...)
	}
	var lines []string
	if a, b, ok := batchCostModel(runs); ok {
		lines = append(lines, fmt.Sprintf("batch cost model, all rows: CPU per write = %.1f µs + %.0f µs x fsyncs per write "+
			"(a write's own work, and each batch's fsync with its messages and wake-ups)", a, b))
	}
	if fsyncErr != nil {
		lines = append(lines, "fdatasync alone: not measured: "+fsyncErr.Error())
	} else {
		lines = append(lines, fmt.Sprintf("fdatasync alone on this disk (2 KiB append, %s): %s CPU, %s wall per call",
			filepath.Clean(fsync.dir), format(float64(fsync.cpu)/1e3, "µs"), format(float64(fsync.wall)/1e3, "µs")))
	}
	return lines
}
