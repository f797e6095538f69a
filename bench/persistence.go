package bench

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Persistence settings, given to both servers in Redis's directive names.
var (
	fsyncAlways = []string{"--appendonly", "yes", "--appendfsync", "always", "--save", ""}
	fsyncEvery  = []string{"--appendonly", "yes", "--appendfsync", "everysec", "--save", ""}
	noPersist   = []string{"--appendonly", "no", "--save", ""}
)

// PersistenceRows are issue 5's measurements: throughput with appendfsync
// always (group commit), the cost of everysec against no persistence,
// restart time of a large dataset from RDB and from AOF, and the longest
// write stall while BGSAVE and BGREWRITEAOF run under write load. The
// dataset is 2 GB of list elements at scale 1.
func PersistenceRows(scale float64) []Row {
	n := func(base int) int { return max(int(float64(base)*scale), 1000) }
	dataset := max(int64(2<<30*scale), 16<<20)
	return []Row{
		alwaysRow("LPUSH", n(200_000), false),
		alwaysRow("XADD", n(200_000), false),
		alwaysRow("LPUSH", n(200_000), true),
		everysecCostRow(n(400_000)),
		restartRow("RDB", dataset),
		restartRow("AOF", dataset),
		stallRow("BGSAVE", bigLists(dataset)),
		stallRow("BGREWRITEAOF", bigLists(dataset)),
		stallRow("BGSAVE", smallKeys(n(1_000_000))),
		stallRow("BGSAVE", smallKeys(n(10_000_000))),
	}
}

// dataset is what a stall row fills the server with before its job.
type dataset struct {
	name string
	fill func(addr string) error
}

// bigLists is size bytes of list elements in 1,000 lists (fillDataset).
func bigLists(size int64) dataset {
	return dataset{sizeText(size), func(addr string) error { return fillDataset(addr, size) }}
}

// smallKeys is n keys, each a one-element list: the shape where a pause
// that grows with the key count shows (issue 12 §2), as the issue's
// redis-benchmark lpush key:__rand_int__ made it.
func smallKeys(n int) dataset {
	return dataset{fmt.Sprintf("%dM keys", n/1_000_000), func(addr string) error {
		if n < 1_000_000 {
			return fmt.Errorf("smallKeys: %d keys, at least 1M", n)
		}
		return fill(addr, n, func(i int) []byte { return Encode("LPUSH", "key:"+strconv.Itoa(i), "v") })
	}}
}

// alwaysRow is 50 clients writing with appendfsync always on both sides;
// with oneP, redstream runs Go code on one thread (oneCPU).
func alwaysRow(verb string, total int, oneP bool) Row {
	req := Encode("LPUSH", "bench:list", "v:00000000000000")
	if verb == "XADD" {
		req = Encode("XADD", "bench:stream", "*", "event", "click", "user", "12345")
	}
	name, config, target := verb+", 50 clients, appendfsync always", fsyncAlways, 1.0
	if oneP { // not the target: shown for one-CPU deployments
		name, target = name+", GOMAXPROCS=1", 0
		config = append(slices.Clip(config), oneCPU)
	}
	return Row{
		Group:   "persistence",
		Config:  config,
		Metrics: []Metric{{Name: name, Unit: "ops/s", Higher: true, Target: target}},
		Run: func(t *Target) ([]float64, error) {
			ops, err := throughput(t.Addr, 50, total, 1, req)
			return []float64{ops}, err
		},
	}
}

// everysecCostRow measures LPUSH throughput without persistence and with
// appendfsync everysec on the same side, and reports the cost in percent.
func everysecCostRow(total int) Row {
	req := Encode("LPUSH", "bench:list", "v:00000000000000")
	return Row{
		Group: "persistence",
		Metrics: []Metric{
			{Name: "LPUSH, 50 clients, no persistence", Unit: "ops/s", Higher: true},
			{Name: "LPUSH, 50 clients, appendfsync everysec", Unit: "ops/s", Higher: true},
			{Name: "cost of everysec vs none", Unit: "%", Points: true, Target: 5},
		},
		RunSide: func(s *Side) ([]float64, error) {
			var ops [2]float64
			for i, cfg := range [][]string{noPersist, fsyncEvery} {
				t, err := s.Restart(cfg...)
				if err != nil {
					return nil, err
				}
				if ops[i], err = throughput(t.Addr, 50, total, 1, req); err != nil {
					return nil, err
				}
			}
			return []float64{ops[0], ops[1], 100 * (1 - ops[1]/ops[0])}, nil
		},
	}
}

// fillDataset adds about size bytes of list elements (100-byte values in
// 1,000 lists) over one pipelined connection.
func fillDataset(addr string, size int64) error {
	value := strings.Repeat("x", 90)
	const perCmd = 100
	cmds := int(size / (perCmd * 100))
	return fill(addr, cmds, func(i int) []byte {
		args := []string{"RPUSH", "bench:list:" + strconv.Itoa(i%1000)}
		for j := range perCmd {
			args = append(args, fmt.Sprintf("%09d:%s", i*perCmd+j, value))
		}
		return Encode(args...)
	})
}

// restartRow fills the dataset, makes it durable the way kind says, kills
// the server and times the restart until it answers PING.
func restartRow(kind string, size int64) Row {
	cfg := noPersist
	if kind == "AOF" {
		cfg = fsyncAlways
	}
	return Row{
		Group:   "persistence",
		Rounds:  1,
		Metrics: []Metric{{Name: fmt.Sprintf("restart from %s, %s of lists", kind, sizeText(size)), Unit: "s", Target: 1.0}},
		RunSide: func(s *Side) ([]float64, error) {
			t, err := s.Restart(cfg...)
			if err != nil {
				return nil, err
			}
			if err := fillDataset(t.Addr, size); err != nil {
				return nil, err
			}
			if kind == "RDB" {
				if _, err := t.Do("SAVE"); err != nil {
					return nil, err
				}
			}
			d, err := t.Restart()
			return []float64{d.Seconds()}, err
		},
	}
}

// stallRuns is how many times a stall row runs its command on the same
// dataset: the longest stall of one run is a single sample, and moved
// between 5 and 26 ms from run to run on Redis.
const stallRuns = 3

// stallRow measures one client's write latency before and while the
// server runs cmd (BGSAVE or BGREWRITEAOF) on the dataset: what a fork
// costs Redis, and what freezing a snapshot costs redstream. It reports
// the median of stallRuns runs' longest stalls, and of the pause each
// server reports itself (INFO latest_fork_usec: Redis's fork, our
// freeze). The longest stall has no target: on this VM an idle server's
// one-client LPUSH loop already sees 4-5 ms hiccups a few times a second,
// Redis's as well as ours, so a job's own pause shows in it only when it
// is longer than that; the reported pause is the job's alone.
func stallRow(cmd string, data dataset) Row {
	cfg := noPersist
	if cmd == "BGREWRITEAOF" {
		// No automatic rewrite while the dataset is filled: it would
		// still run when the measured one is asked for.
		cfg = append(slices.Clone(fsyncEvery), "--auto-aof-rewrite-percentage", "0")
	}
	return Row{
		Group:  "persistence",
		Rounds: 1,
		Metrics: []Metric{
			{Name: fmt.Sprintf("LPUSH latency before %s of %s, p99.9", cmd, data.name), Unit: "ms"},
			{Name: fmt.Sprintf("LPUSH latency during %s of %s, p99.9", cmd, data.name), Unit: "ms"},
			{Name: fmt.Sprintf("longest write stall during %s of %s (median of %d)", cmd, data.name, stallRuns), Unit: "ms"},
			{Name: fmt.Sprintf("write pause %s of %s reports (latest_fork_usec)", cmd, data.name), Unit: "ms", Target: 1.0},
		},
		RunSide: func(s *Side) ([]float64, error) {
			t, err := s.Restart(cfg...)
			if err != nil {
				return nil, err
			}
			if err := data.fill(t.Addr); err != nil {
				return nil, err
			}
			c, err := Dial(t.Addr)
			if err != nil {
				return nil, err
			}
			defer c.Close()
			before, err := probeLatency(c, deadline(time.Now().Add(2*time.Second)))
			if err != nil {
				return nil, err
			}
			var during []time.Duration
			var stalls, pauses []float64
			for range stallRuns {
				lat, err := latencyDuring(t, c, cmd)
				if err != nil {
					return nil, err
				}
				pause, err := infoInt(t, "stats", "latest_fork_usec")
				if err != nil {
					return nil, err
				}
				during = append(during, lat...)
				stalls = append(stalls, maxOf(lat))
				pauses = append(pauses, float64(pause)/1000)
			}
			return []float64{p999(before), p999(during), median(stalls), median(pauses)}, nil
		},
	}
}

// probeLatency times c's LPUSHes, one after another, until done says stop.
func probeLatency(c *Conn, done func() bool) ([]time.Duration, error) {
	var lat []time.Duration
	for !done() {
		start := time.Now()
		if _, err := c.Do("LPUSH", "bench:probe", "x"); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(start))
	}
	return lat, nil
}

func deadline(end time.Time) func() bool { return func() bool { return time.Now().After(end) } }

// latencyDuring times c's LPUSHes from before cmd is sent until the
// server says the job is done. The probe must already be running when
// cmd goes out: both servers pause writes before they answer it (Redis
// to fork, redstream to freeze its snapshot), and a probe started after
// the answer would miss that pause.
func latencyDuring(t *Target, c *Conn, cmd string) ([]time.Duration, error) {
	field := map[string]string{"BGSAVE": "rdb_bgsave_in_progress", "BGREWRITEAOF": "aof_rewrite_in_progress"}[cmd]
	var mu sync.Mutex
	busy := true
	probing := make(chan struct{}) // closed once the probe has a few requests behind it
	sent := make(chan error, 1)
	go func() {
		<-probing
		go watchBusy(t, field, &mu, &busy)
		_, err := t.Do(cmd)
		sent <- err
	}()
	n := 0
	lat, err := probeLatency(c, func() bool {
		if n++; n == 100 {
			close(probing)
		}
		mu.Lock()
		defer mu.Unlock()
		return !busy
	})
	if n < 100 {
		close(probing) // the probe failed early; let the job's goroutine end
	}
	if cerr := <-sent; err == nil {
		err = cerr
	}
	return lat, err
}

// watchBusy polls INFO until field goes from 1 back to 0.
func watchBusy(t *Target, field string, mu *sync.Mutex, busy *bool) {
	c, err := Dial(t.Addr)
	if err != nil {
		return
	}
	defer c.Close()
	seen := false
	for start := time.Now(); time.Since(start) < 10*time.Minute; {
		r, err := c.Do("INFO", "persistence")
		if err != nil {
			break
		}
		on := strings.Contains(r.Str, field+":1")
		if seen && !on {
			break
		}
		seen = seen || on || time.Since(start) > 5*time.Second // a job too fast to be seen running
		time.Sleep(10 * time.Millisecond)                      // INFO is polled: no notification for a job's end
	}
	mu.Lock()
	*busy = false
	mu.Unlock()
}

// infoInt reads an integer field of an INFO section.
func infoInt(t *Target, section, field string) (int64, error) {
	v, err := infoText(t, section, field)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}

func p999(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)*999/1000]) / float64(time.Millisecond)
}

func maxOf(d []time.Duration) float64 {
	var m time.Duration
	for _, x := range d {
		m = max(m, x)
	}
	return float64(m) / float64(time.Millisecond)
}

func sizeText(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MB", n>>20)
}
