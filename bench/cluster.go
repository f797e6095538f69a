package bench

import (
	"fmt"
	"io"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// The cluster group measures issue 13's replication: a three-node group
// (three processes, three data directories, one machine) against one
// redstream node with appendonly yes and appendfsync always, which makes
// the same promise (a reply means the write is on disk) without copies,
// and against NATS JetStream R3 with sync_interval always when it can be
// built. Its sides differ from the other groups' (three of them, and
// three processes on two), so it has its own runner and table.

// ClusterOptions control the cluster group's run.
type ClusterOptions struct {
	Exe    string  // the redstream binary to measure
	Scale  float64 // multiplies every row's amount of work and the kills
	Rounds int     // measurements per row and side; the median is shown
	Only   string  // only rows whose first measurement's name contains this
	Out    io.Writer
}

// clusterSides are the servers of one cluster run.
type clusterSides struct {
	r3     *redstreamCluster
	single *Target
	nats   *natsCluster // nil: not measured
}

// clusterRow is one measurement; a side's func is nil where the row does
// not apply, and a value NaN where a metric does not.
type clusterRow struct {
	metrics []Metric
	rounds  int // overrides ClusterOptions.Rounds
	r3      func(c *redstreamCluster) ([]float64, error)
	single  func(t *Target) ([]float64, error)
	nats    func(n *natsCluster) ([]float64, error)
}

const (
	sideR3 = iota
	sideSingle
	sideNATS
)

func clusterRows(scale float64) []clusterRow {
	// Totals are multiples of 50 clients x 16 pipelined: every client
	// sends the same number of full batches.
	n := func(base int) int { return max(int(float64(base)*scale)/800, 5) * 800 }
	rows := []clusterRow{
		writeRow("XADD", 1, n(50_000), 0.5), // issue 13 §4: R3 XADD unpipelined >= 0.5x
		writeRow("XADD", 16, n(400_000), 0),
		writeRow("LPUSH", 1, n(50_000), 0),
		writeRow("LPUSH", 16, n(400_000), 0),
		clusterDrainRow(n(200_000)),
	}
	if _, err := exec.LookPath("redis-benchmark"); err == nil {
		rows = append(rows, redisBenchmarkRow(1, n(50_000)), redisBenchmarkRow(16, n(400_000)))
	}
	return append(rows, failoverRow(max(int(20*scale), 3)))
}

// writeMetrics are a write row's figures, in the order writeFigures
// returns them.
func writeMetrics(name string, target float64) []Metric {
	return []Metric{
		{Name: name, Unit: "ops/s", Higher: true, Target: target},
		{Name: name + ", p50", Unit: "ms"},
		{Name: name + ", p99", Unit: "ms"},
		{Name: name + ", CPU per write, leader", Unit: "µs"},
		{Name: name + ", CPU per write, follower 1", Unit: "µs"},
		{Name: name + ", CPU per write, follower 2", Unit: "µs"},
		{Name: name + ", fsyncs per second, leader", Unit: "/s"},
		{Name: name + ", writes per fsync, leader", Unit: "writes"},
		{Name: name + ", writes per Raft entry", Unit: "writes"},
	}
}

// writeRow: 50 clients send verb, pipeline at a time (NATS: 50
// synchronous publishers, for the unpipelined row only).
func writeRow(verb string, pipeline, total int, target float64) clusterRow {
	const clients = 50
	name := fmt.Sprintf("%s, %d clients", verb, clients)
	if pipeline > 1 {
		name += fmt.Sprintf(", pipeline %d", pipeline)
	}
	req := Encode(append([]string{"XADD", "bench:key", "*"}, twoFields...)...)
	if verb == "LPUSH" {
		req = Encode("LPUSH", "bench:key", "v:00000000000000")
	}
	row := clusterRow{
		metrics: writeMetrics(name, target),
		r3: func(c *redstreamCluster) ([]float64, error) {
			nodes, err := c.byRole()
			if err != nil {
				return nil, err
			}
			before, err := infoInt(nodes[0], "replication", "raft_commit_index")
			if err != nil {
				return nil, err
			}
			vals, err := writeFigures(nodes, total, func() (float64, []time.Duration, error) {
				return timedLoad(nodes[0].Addr, clients, total, pipeline, req)
			})
			if err != nil {
				return nil, err
			}
			after, err := infoInt(nodes[0], "replication", "raft_commit_index")
			vals[len(vals)-1] = float64(total) / float64(max(after-before, 1))
			return vals, err
		},
		single: func(t *Target) ([]float64, error) {
			return writeFigures([]*Target{t}, total, func() (float64, []time.Duration, error) {
				return timedLoad(t.Addr, clients, total, pipeline, req)
			})
		},
	}
	if verb == "XADD" && pipeline == 1 {
		row.nats = func(n *natsCluster) ([]float64, error) {
			nodes, err := n.byRole()
			if err != nil {
				return nil, err
			}
			value := []byte("f1 v:00000000000000 f2 v:00000000000000") // XADD's two fields' bytes
			return writeFigures(nodes, total, func() (float64, []time.Duration, error) {
				return n.publish(clients, total, value)
			})
		}
	}
	return row
}

// writeFigures runs load, which makes ops writes, against nodes (the
// leader first) and returns writeMetrics' figures: throughput, p50 and
// p99 round trip, each node's CPU per write (NaN for a node not there),
// the leader's fsyncs, and NaN for the writes per Raft entry.
func writeFigures(nodes []*Target, ops int, load func() (float64, []time.Duration, error)) ([]float64, error) {
	fsyncs := countFsyncs(nodes[0])
	var rate float64
	var trips []time.Duration
	cpu, err := cpuPerEach(nodes, ops, func() (err error) {
		rate, trips, err = load()
		return err
	})
	perSecond, calls := fsyncs.stop()
	if err != nil {
		return nil, err
	}
	p50, p99, _ := percentiles(trips)
	vals := []float64{rate, p50, p99}
	for i := range 3 {
		if i < len(cpu) {
			vals = append(vals, cpu[i])
		} else {
			vals = append(vals, math.NaN())
		}
	}
	return append(vals, perSecond, float64(ops)/calls, math.NaN()), nil
}

// clusterDrainRow: issue 11's consumer-group drain, on the leader, where
// every XREADGROUP and XACK is a write that goes through the log.
func clusterDrainRow(entries int) clusterRow {
	drain := drainRow(4, entries)
	return clusterRow{
		metrics: []Metric{
			{Name: drain.Metrics[0].Name + ", on the leader", Unit: "ops/s", Higher: true},
			{Name: "drain, CPU per entry, leader", Unit: "µs"},
		},
		r3: func(c *redstreamCluster) ([]float64, error) {
			nodes, err := c.byRole()
			if err != nil {
				return nil, err
			}
			return drain.Run(nodes[0])
		},
		single: drain.Run,
	}
}

// redisBenchmarkRow checks the write rows with redis-benchmark's own
// load generator: LPUSH, 50 clients, pipelined or not.
func redisBenchmarkRow(pipeline, total int) clusterRow {
	name := fmt.Sprintf("redis-benchmark -t lpush -c 50 -n %d -P %d", total, pipeline)
	return clusterRow{
		metrics: []Metric{
			{Name: name, Unit: "ops/s", Higher: true},
			{Name: name + ", p50", Unit: "ms"},
			{Name: name + ", p99", Unit: "ms"},
		},
		r3: func(c *redstreamCluster) ([]float64, error) {
			nodes, err := c.byRole()
			if err != nil {
				return nil, err
			}
			return redisBenchmark(nodes[0], pipeline, total)
		},
		single: func(t *Target) ([]float64, error) { return redisBenchmark(t, pipeline, total) },
	}
}

// redisBenchmark runs redis-benchmark against t and returns its
// requests per second, p50 and p99 latency in ms.
func redisBenchmark(t *Target, pipeline, total int) ([]float64, error) {
	host, port, _ := strings.Cut(t.Addr, ":")
	out, err := exec.Command("redis-benchmark", "-h", host, "-p", port, "-c", "50", "-n", strconv.Itoa(total),
		"-P", strconv.Itoa(pipeline), "-t", "lpush", "--csv").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("redis-benchmark: %w: %s", err, out)
	}
	vals, ok := parseRedisBenchmarkCSV(string(out))
	if !ok {
		return nil, fmt.Errorf("redis-benchmark printed %q", out)
	}
	return vals, nil
}

// parseRedisBenchmarkCSV reads the requests per second, p50 and p99 (ms)
// from redis-benchmark --csv's last line: "test","rps","avg_latency_ms",
// "min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms",
// "max_latency_ms".
func parseRedisBenchmarkCSV(out string) ([]float64, bool) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	f := strings.Split(strings.ReplaceAll(lines[len(lines)-1], `"`, ""), ",")
	if len(f) < 7 {
		return nil, false
	}
	var vals []float64
	for _, i := range []int{1, 4, 6} {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return nil, false
		}
		vals = append(vals, v)
	}
	return vals, true
}

// failoverRow: kill -9 the leader, time to the first acknowledged write.
func failoverRow(kills int) clusterRow {
	name := fmt.Sprintf("failover, leader killed (SIGKILL) %d times, to the first acknowledged write", kills)
	return clusterRow{
		metrics: []Metric{{Name: name + ", p50", Unit: "s", Limit: 2}, {Name: name + ", max", Unit: "s"}},
		rounds:  1,
		r3:      func(c *redstreamCluster) ([]float64, error) { return c.failover(kills) },
	}
}

// RunCluster starts the sides, measures the cluster rows, and prints
// their table. NATS is left out, with the reason printed, when it cannot
// be built or started.
func RunCluster(opt ClusterOptions) error {
	var rows []clusterRow
	for _, r := range clusterRows(opt.Scale) {
		if strings.Contains(r.metrics[0].Name, opt.Only) {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	sides, err := startClusterSides(opt)
	if err != nil {
		return err
	}
	defer sides.stop()
	results := make([][3]result, len(rows))
	for i, row := range rows {
		fmt.Fprintf(opt.Out, "# cluster: %s ...\n", row.metrics[0].Name)
		rounds := max(opt.Rounds, 1)
		if row.rounds > 0 {
			rounds = row.rounds
		}
		for round := range rounds {
			for k := range 3 {
				side := (round + k) % 3 // each side goes first in turn
				vals, err := sides.run(row, side)
				if err != nil {
					return fmt.Errorf("cluster %q: %w", row.metrics[0].Name, err)
				}
				if vals != nil {
					results[i][side] = append(results[i][side], vals)
				}
			}
		}
	}
	printClusterTable(opt.Out, rows, results)
	return nil
}

func startClusterSides(opt ClusterOptions) (*clusterSides, error) {
	s := &clusterSides{}
	var err error
	if s.r3, err = startCluster(opt.Exe); err != nil {
		return nil, err
	}
	if s.single, err = StartRedstream(opt.Exe, "--appendonly", "yes", "--appendfsync", "always"); err != nil {
		s.stop()
		return nil, err
	}
	exe, err := natsServer(opt.Out)
	if err == nil {
		s.nats, err = startNATS(exe)
	}
	if err != nil {
		fmt.Fprintf(opt.Out, "NATS JetStream not measured: %v\n", err)
	}
	return s, nil
}

// run measures row once on side; nil, nil when the row has no such side.
func (s *clusterSides) run(row clusterRow, side int) ([]float64, error) {
	var vals []float64
	var err error
	switch {
	case side == sideR3 && row.r3 != nil:
		var nodes []*Target
		if nodes, err = s.r3.byRole(); err != nil {
			return nil, err
		}
		if _, err = nodes[0].Do("FLUSHALL"); err != nil {
			return nil, err
		}
		vals, err = row.r3(s.r3)
	case side == sideSingle && row.single != nil:
		if _, err = s.single.Do("FLUSHALL"); err != nil {
			return nil, err
		}
		vals, err = row.single(s.single)
	case side == sideNATS && row.nats != nil && s.nats != nil:
		if err = s.nats.purge(); err != nil {
			return nil, err
		}
		vals, err = row.nats(s.nats)
	default:
		return nil, nil
	}
	if err == nil && len(vals) != len(row.metrics) {
		err = fmt.Errorf("row returned %d values for %d metrics", len(vals), len(row.metrics))
	}
	return vals, err
}

func (s *clusterSides) stop() {
	if s.r3 != nil {
		s.r3.stop()
	}
	s.single.Stop()
	s.nats.stop()
}

func printClusterTable(out io.Writer, rows []clusterRow, results [][3]result) {
	fmt.Fprintf(out, "\nmeasured %s (median of rounds); R3 = three redstream nodes, single = one with appendfsync always\n\n",
		time.Now().UTC().Format(time.RFC3339))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "measurement\tR3\tsingle\tR3/single\ttarget\tNATS R3\tR3/NATS\t")
	for i, row := range rows {
		for m, metric := range row.metrics {
			r3, single, nats := results[i][sideR3].value(m), results[i][sideSingle].value(m), results[i][sideNATS].value(m)
			line := []string{metric.Name, formatOrDash(r3, metric.Unit), formatOrDash(single, metric.Unit),
				ratioText(r3, single, metric), targetText(metric), formatOrDash(nats, metric.Unit), ratioText(r3, nats, Metric{})}
			if metric.Limit > 0 {
				line[3], line[4] = limitVerdict(r3, metric), fmt.Sprintf("<= %s", format(metric.Limit, metric.Unit))
			}
			fmt.Fprintln(tw, strings.Join(line, "\t")+"\t")
		}
	}
	tw.Flush()
}

// value is the median of metric i over the rounds; NaN when unmeasured.
func (r result) value(i int) float64 {
	if len(r) == 0 {
		return math.NaN()
	}
	return r.median(i)
}

func formatOrDash(v float64, unit string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return format(v, unit)
}

func ratioText(a, b float64, m Metric) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx%s", a/b, verdict(a/b, m))
}

func limitVerdict(v float64, m Metric) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v <= m.Limit:
		return "ok"
	}
	return "MISS"
}
