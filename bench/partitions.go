package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/redstream/redstream/server"
)

// The partitions group measures issue 14 §4: what spreading the slots of
// a three-node cluster over several Raft groups costs per write, and
// whether it lets the nodes take more writes. For each group count it
// starts three fresh processes, partitions them with `redstream cluster
// create --groups G`, waits until the balancer has spread the groups'
// leaders over the nodes, and has 50 unpipelined clients XADD to 16
// partition keys, each write sent straight to the leader of its key's
// slot as CLUSTER SLOTS names it (a smart cluster client's routing). Its
// baseline is the same load on one group, so it has its own runner and
// table rather than the side-by-side one.

// PartitionsOptions control the partitions group's run.
type PartitionsOptions struct {
	Exe    string  // the redstream binary to measure
	Scale  float64 // multiplies the writes per measurement
	Rounds int     // passes over every group count, alternating (1, 3, 6, 1, 3, 6)
	Only   string  // run only when the row's name contains this
	Out    io.Writer
}

// partitionCase is one row of a round: a group count and its clients.
type partitionCase struct{ groups, clients int }

// partitionCases are the rows measured; the first is the baseline the
// others are compared with. The last gives 3 groups 50 clients each, the
// load one group has in the baseline: CPU per write then shows what a
// group costs at equal batch sizes (informational, no target), where the
// 50-client rows show it with batches a third or a sixth as large.
var partitionCases = []partitionCase{{1, partitionClients}, {3, partitionClients}, {6, partitionClients}, {3, 3 * partitionClients}}

const (
	partitionClients = 50
	partitionKeys    = 16
	// Issue 14 §4's targets, as ratios to one group.
	partitionCPUTarget  = 1.15 // CPU per write at 3 and 6 groups <= 1.15x
	partitionRateTarget = 1.0  // throughput at 3 groups >= 1.0x
)

// partitionsRowName names the measurement (for --only).
var partitionsRowName = fmt.Sprintf("XADD, %d clients, %d partition keys, routed to each slot's leader", partitionClients, partitionKeys)

// partitionRun is one measurement of one group count.
type partitionRun struct {
	groups  int
	clients int
	rate    float64    // acknowledged writes per second
	cpu     [3]float64 // each node's CPU (user+sys) per acknowledged write, µs
	leads   [3]int     // slot ranges each node was master of when the load began
	keys    [3]int     // partition keys whose slot each node was master of
	fsyncs  float64    // fsync and fdatasync calls of all three per write; NaN: perf could not count
	moved   int64      // -MOVED replies followed
	refused int64      // other error replies (retried; not counted as writes)
}

// total is the three processes' CPU per acknowledged write, µs.
func (r partitionRun) total() float64 { return r.cpu[0] + r.cpu[1] + r.cpu[2] }

// partitionWrites is the writes of one measurement at scale: 50,000 at
// scale 1, as the cluster group's unpipelined XADD row, a multiple of the
// clients so each makes the same number.
func partitionWrites(scale float64, clients int) int {
	return max(int(50_000*scale)/clients, 10) * clients
}

// RunPartitions measures every group count Rounds times, alternating,
// and prints each round's table and the verdict.
func RunPartitions(opt PartitionsOptions) error {
	if !strings.Contains(partitionsRowName, opt.Only) {
		return nil
	}
	rounds := make([][]partitionRun, max(opt.Rounds, 1))
	for round := range rounds {
		for _, c := range partitionCases {
			writes := partitionWrites(opt.Scale, c.clients)
			fmt.Fprintf(opt.Out, "# partitions: round %d, %d group(s), %d clients, %d writes ...\n", round+1, c.groups, c.clients, writes)
			run, err := measurePartitions(opt.Exe, c, writes)
			if err != nil {
				return fmt.Errorf("partitions, %d group(s), %d clients: %w", c.groups, c.clients, err)
			}
			rounds[round] = append(rounds[round], run)
		}
	}
	printPartitionsTable(opt.Out, rounds)
	fsync, err := measureFsyncCost(os.TempDir(), 2000)
	for _, line := range costModelLines(rounds, fsync, err) {
		fmt.Fprintln(opt.Out, line)
	}
	return nil
}

// measurePartitions starts three fresh nodes, makes them a cluster of
// groups Raft groups with balanced leaders, measures the load, and stops
// them.
func measurePartitions(exe string, c partitionCase, writes int) (partitionRun, error) {
	groups := c.groups
	run := partitionRun{groups: groups, clients: c.clients}
	var nodes []*Target
	defer func() {
		for _, t := range nodes {
			t.Stop()
		}
	}()
	var addrs []string
	for i := range 3 {
		t, err := startClusterNode(exe, i+1)
		if err != nil {
			return run, err
		}
		nodes = append(nodes, t)
		addrs = append(addrs, t.Addr)
	}
	args := []string{"cluster", "create"}
	if groups > 1 {
		args = append(args, "--groups", strconv.Itoa(groups))
	}
	out, err := exec.Command(exe, append(args, addrs...)...).CombinedOutput()
	if err != nil {
		return run, fmt.Errorf("redstream %s: %w: %s%s", strings.Join(args, " "), err, strings.TrimSpace(string(out)), nodeLogs(nodes))
	}
	leads, err := awaitBalanced(fetchSlotMap, addrs, groups, time.Minute, balanceSettle)
	if err != nil {
		return run, fmt.Errorf("%w%s", err, nodeLogs(nodes))
	}
	rt := &router{seeds: addrs}
	if err := rt.refresh(addrs[0]); err != nil {
		return run, err
	}
	for i, a := range addrs {
		run.leads[i] = leads[a]
		for p := range partitionKeys {
			if rt.m.Load()[server.KeySlot([]byte(partitionKey(p)))] == a {
				run.keys[i]++
			}
		}
	}
	// One write per key first: every group's leader has taken a write
	// before the clock starts, and the map is known to route.
	if _, err := rt.load(partitionKeys, partitionKeys); err != nil {
		return run, fmt.Errorf("warm-up: %w%s", err, nodeLogs(nodes))
	}
	rt.moved.Store(0)
	rt.refused.Store(0)
	var counters []*fsyncCounter
	for _, t := range nodes {
		counters = append(counters, countFsyncs(t))
	}
	cpu, err := cpuPerEach(nodes, writes, func() (err error) {
		run.rate, err = rt.load(c.clients, writes)
		return err
	})
	for _, f := range counters {
		_, calls := f.stop()
		run.fsyncs += calls / float64(writes)
	}
	if err != nil {
		return run, fmt.Errorf("%w%s", err, nodeLogs(nodes))
	}
	copy(run.cpu[:], cpu)
	run.moved, run.refused = rt.moved.Load(), rt.refused.Load()
	return run, nil
}

// nodeLogs is the end of each node's log, for an error report: the
// nodes' data directories are removed when they stop.
func nodeLogs(nodes []*Target) string {
	var b strings.Builder
	for i, t := range nodes {
		data, err := os.ReadFile(filepath.Join(t.dir, "redstream node "+strconv.Itoa(i+1)+".log"))
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "\n--- %s (%s), last lines of its log:\n%s", t.Name, t.Addr, strings.Join(lines[max(len(lines)-15, 0):], "\n"))
	}
	return b.String()
}

// balanceSettle is how long the balanced map must hold before the load
// starts. Three groups each led by a different node may still each be led
// by the wrong one (a rotation): the balancer, which looks every second,
// then moves them all, and a group is without a master while its
// leadership moves.
const balanceSettle = 3 * time.Second

// awaitBalanced waits until every node's CLUSTER SLOTS (read by fetch)
// covers every slot with a master, shows the masters spread as the
// balancer spreads them (balancedLeads), and all agree, and that has held
// unchanged for settle. It returns how many slot ranges each address is
// master of.
func awaitBalanced(fetch func(addr string) (*slotMap, map[string]int, error), addrs []string, groups int,
	limit, settle time.Duration) (map[string]int, error) {
	deadline := time.Now().Add(limit)
	var held *slotMap // the balanced map seen since since
	var since time.Time
	var lastErr error
	for {
		var seen *slotMap
		var leads map[string]int
		err := func() error {
			for _, a := range addrs {
				m, l, err := fetch(a)
				if err == nil {
					err = m.complete()
				}
				switch {
				case err != nil:
					return fmt.Errorf("%s: %w", a, err)
				case !balancedLeads(l, groups, len(addrs)):
					return fmt.Errorf("%s shows masters %v", a, l)
				case seen != nil && *m != *seen:
					return fmt.Errorf("%s shows other masters than %s", a, addrs[0])
				}
				seen, leads = m, l
			}
			return nil
		}()
		switch {
		case err != nil:
			held, lastErr = nil, err
		case held == nil || *held != *seen:
			held, since, lastErr = seen, time.Now(), fmt.Errorf("masters %v changed within %v", leads, settle)
		case time.Since(since) >= settle:
			return leads, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("leaders of %d group(s) not balanced over %d nodes within %v: %v", groups, len(addrs), limit, lastErr)
		}
		time.Sleep(min(100*time.Millisecond, settle/4+time.Millisecond)) // nothing notifies a leadership transfer
	}
}

// balancedLeads reports whether leads (slot ranges per master, one range
// per group) spreads groups over min(groups, nodes) masters as evenly as
// possible: 1 group, one master; 3, three; 6, two each.
func balancedLeads(leads map[string]int, groups, nodes int) bool {
	sum, lo, hi := 0, math.MaxInt, 0
	for _, n := range leads {
		sum, lo, hi = sum+n, min(lo, n), max(hi, n)
	}
	return sum == groups && len(leads) == min(groups, nodes) && hi-lo <= 1
}

// slotMap is each slot's master address; "" where CLUSTER SLOTS names
// none.
type slotMap [server.ClusterSlots]string

// complete reports the first slot without a master.
func (m *slotMap) complete() error {
	for slot, a := range m {
		if a == "" {
			return fmt.Errorf("slot %d has no master", slot)
		}
	}
	return nil
}

// fetchSlotMap reads CLUSTER SLOTS at addr.
func fetchSlotMap(addr string) (*slotMap, map[string]int, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, nil, err
	}
	conn := newConn(c)
	defer conn.Close()
	if err := c.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return nil, nil, err
	}
	r, err := conn.Do("CLUSTER", "SLOTS")
	if err != nil {
		return nil, nil, err
	}
	return parseSlotMap(r)
}

// parseSlotMap reads a CLUSTER SLOTS reply: each entry is the first and
// last slot of a range, then its master (host, port, id, ...), then its
// replicas. It returns each slot's master address and how many ranges
// each master serves.
func parseSlotMap(r Reply) (*slotMap, map[string]int, error) {
	if r.Type != '*' {
		return nil, nil, fmt.Errorf("CLUSTER SLOTS answered type %q", r.Type)
	}
	m := &slotMap{}
	leads := map[string]int{}
	for i, e := range r.Elems {
		if e.Type != '*' || len(e.Elems) < 3 || e.Elems[0].Type != ':' || e.Elems[1].Type != ':' {
			return nil, nil, fmt.Errorf("CLUSTER SLOTS entry %d is not first, last, master", i)
		}
		first, last := int(e.Elems[0].Int), int(e.Elems[1].Int)
		if first < 0 || last < first || last >= server.ClusterSlots {
			return nil, nil, fmt.Errorf("CLUSTER SLOTS entry %d has slots %d-%d", i, first, last)
		}
		master := e.Elems[2]
		if master.Type != '*' || len(master.Elems) < 2 || master.Elems[1].Type != ':' || master.Elems[0].Str == "" {
			return nil, nil, fmt.Errorf("CLUSTER SLOTS entry %d has no master host and port", i)
		}
		addr := net.JoinHostPort(master.Elems[0].Str, strconv.FormatInt(master.Elems[1].Int, 10))
		for s := first; s <= last; s++ {
			m[s] = addr
		}
		leads[addr]++
	}
	return m, leads, nil
}

// parseMoved reads a -MOVED error ("MOVED 3999 127.0.0.1:6381"); ok is
// false for any other error.
func parseMoved(msg string) (slot int, addr string, ok bool) {
	f := strings.Fields(msg)
	if len(f) != 3 || f[0] != "MOVED" {
		return 0, "", false
	}
	slot, err := strconv.Atoi(f[1])
	if err != nil || slot < 0 || slot >= server.ClusterSlots {
		return 0, "", false
	}
	if _, _, err := net.SplitHostPort(f[2]); err != nil {
		return 0, "", false
	}
	return slot, f[2], true
}

// partitionKey is the stream key of partition p; its hash tag is its
// slot's only input.
func partitionKey(p int) string { return "orders:{" + strconv.Itoa(p) + "}" }

// router sends each write to its slot's master as the last CLUSTER SLOTS
// read named it, and reads the map again on -MOVED.
type router struct {
	seeds   []string
	m       atomic.Pointer[slotMap]
	mu      sync.Mutex // one refresh at a time
	moved   atomic.Int64
	refused atomic.Int64
}

// refresh reads the map from addr, or failing that from any seed; it
// keeps the map it had unless one names a master for every slot.
func (rt *router) refresh(addr string) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var errs []error
	for _, a := range append([]string{addr}, rt.seeds...) {
		m, _, err := fetchSlotMap(a)
		if err == nil {
			err = m.complete()
		}
		if err == nil {
			rt.m.Store(m)
			return nil
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// load has clients connections' worth of writers make total acknowledged
// XADDs between them, each round-robin over the partition keys starting
// at its own, one at a time, and returns acknowledged writes per second.
func (rt *router) load(clients, total int) (float64, error) {
	per := total / clients
	keys := make([]string, partitionKeys)
	slots := make([]int, partitionKeys)
	for p := range keys {
		keys[p] = partitionKey(p)
		slots[p] = server.KeySlot([]byte(keys[p]))
	}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	start := time.Now()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &partitionWriter{rt: rt, conns: map[string]*Conn{}}
			defer w.close()
			for k := range per {
				p := (i + k) % partitionKeys
				if err := w.write(keys[p], slots[p]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(per*clients) / elapsed.Seconds(), nil
}

// partitionWriter is one client: a connection to each master it has
// written to.
type partitionWriter struct {
	rt    *router
	conns map[string]*Conn
}

func (w *partitionWriter) close() {
	for _, c := range w.conns {
		c.Close()
	}
}

// write XADDs to key until a master acknowledges it, following -MOVED
// (and reading the map again) and retrying other error replies
// (-CLUSTERDOWN, -TRYAGAIN while a leadership moves) for up to 10 s.
func (w *partitionWriter) write(key string, slot int) error {
	addr := w.rt.m.Load()[slot]
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := w.conn(addr)
		if err != nil {
			return err
		}
		r, err := c.Do(append([]string{"XADD", key, "*"}, twoFields...)...)
		if err == nil {
			return nil
		}
		if r.Type != '-' {
			return fmt.Errorf("%s: %w", addr, err) // the connection failed
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not acknowledged within 10 s: %w", addr, key, err)
		}
		if s, to, ok := parseMoved(r.Str); ok && s == slot {
			w.rt.moved.Add(1)
			if err := w.rt.refresh(to); err != nil {
				w.rt.refused.Add(1) // a group without a master: go where MOVED says meanwhile
			}
			addr = to
			continue
		}
		w.rt.refused.Add(1)
		time.Sleep(10 * time.Millisecond) // a leader is being elected: nothing to wait on
		addr = w.rt.m.Load()[slot]
	}
}

func (w *partitionWriter) conn(addr string) (*Conn, error) {
	if c, ok := w.conns[addr]; ok {
		return c, nil
	}
	c, err := Dial(addr)
	if err != nil {
		return nil, err
	}
	w.conns[addr] = c
	return c, nil
}

// printPartitionsTable prints each round's runs, the ratios to the
// round's first (one group) run, and the verdicts.
func printPartitionsTable(out io.Writer, rounds [][]partitionRun) {
	rateM := Metric{Name: "writes/s", Unit: "ops/s", Higher: true, Target: partitionRateTarget}
	cpuM := Metric{Name: "CPU per write", Unit: "µs", Target: partitionCPUTarget}
	fmt.Fprintf(out, "\nmeasured %s; %s; three local nodes, fresh for every row;\n"+
		"CPU is user+sys of all three processes per acknowledged write; ratios are to G=1 of the same round\n\n",
		time.Now().UTC().Format(time.RFC3339), partitionsRowName)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tG\tclients\twrites/s\tvs G=1\tCPU µs/write\tvs G=1\tnode 1\tnode 2\tnode 3\tranges led\tkeys led\tfsyncs/write\tMOVED\terrors\t")
	for i, runs := range rounds {
		for _, r := range runs {
			base := runs[0]
			rateRatio, cpuRatio := "-", "-"
			if r.groups != base.groups {
				rm, cm := Metric{}, Metric{}
				if r.groups == 3 && r.clients == base.clients {
					rm = rateM
				}
				if r.groups > base.groups && r.clients == base.clients {
					cm = cpuM
				}
				rateRatio, cpuRatio = ratioText(r.rate, base.rate, rm), ratioText(r.total(), base.total(), cm)
			}
			fsyncs := "-"
			if !math.IsNaN(r.fsyncs) {
				fsyncs = fmt.Sprintf("%.3f", r.fsyncs)
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d/%d\t%d/%d/%d\t%s\t%d\t%d\t\n", i+1, r.groups, r.clients,
				format(r.rate, "ops/s"), rateRatio, format(r.total(), "µs"), cpuRatio,
				format(r.cpu[0], "µs"), format(r.cpu[1], "µs"), format(r.cpu[2], "µs"),
				r.leads[0], r.leads[1], r.leads[2], r.keys[0], r.keys[1], r.keys[2], fsyncs, r.moved, r.refused)
		}
	}
	tw.Flush()
	fmt.Fprintf(out, "\ntargets (issue 14 §4): CPU per write at G=3 and G=6 %s G=1; writes/s at G=3 %s G=1\n",
		targetText(cpuM), targetText(rateM))
	for _, v := range partitionVerdicts(rounds) {
		fmt.Fprintln(out, v)
	}
	if line := equalLoadLine(rounds); line != "" {
		fmt.Fprintln(out, line)
	}
}

// equalLoadLine gives CPU per write of each round's rows with more
// clients than the baseline, per group as many as the baseline's one
// group has, as ratios to the baseline: the cost of groups at equal batch
// sizes. "" if none was measured.
func equalLoadLine(rounds [][]partitionRun) string {
	var ratios []string
	groups, clients := 0, 0
	for _, runs := range rounds {
		if len(runs) == 0 || runs[0].total() == 0 {
			continue
		}
		for _, r := range runs[1:] {
			if r.clients == runs[0].clients*r.groups {
				ratios = append(ratios, fmt.Sprintf("%.2fx", r.total()/runs[0].total()))
				groups, clients = r.groups, r.clients
			}
		}
	}
	if len(ratios) == 0 {
		return ""
	}
	return fmt.Sprintf("equal load per group: CPU per write at G=%d with %d clients vs G=1 (no target): %s", groups, clients, strings.Join(ratios, ", "))
}

// partitionVerdicts judges each target in every round that measured it:
// "ok" when every round met it, else how many did.
func partitionVerdicts(rounds [][]partitionRun) []string {
	type check struct {
		name   string
		groups int
		value  func(partitionRun) float64
		m      Metric
	}
	checks := []check{
		{"CPU per write, G=3", 3, partitionRun.total, Metric{Target: partitionCPUTarget}},
		{"CPU per write, G=6", 6, partitionRun.total, Metric{Target: partitionCPUTarget}},
		{"writes/s, G=3", 3, func(r partitionRun) float64 { return r.rate }, Metric{Higher: true, Target: partitionRateTarget}},
	}
	var lines []string
	for _, c := range checks {
		var ratios []string
		met, measured := 0, 0
		for _, runs := range rounds {
			if len(runs) == 0 || runs[0].groups != 1 {
				continue
			}
			for _, r := range runs {
				base := c.value(runs[0])
				if r.groups != c.groups || r.clients != runs[0].clients || base == 0 {
					continue
				}
				ratio := c.value(r) / base
				measured++
				if verdict(ratio, c.m) == " ok" {
					met++
				}
				ratios = append(ratios, fmt.Sprintf("%.2fx", ratio))
			}
		}
		switch {
		case measured == 0:
			lines = append(lines, fmt.Sprintf("verdict: %s %s: not measured", c.name, targetText(c.m)))
		case met == measured:
			lines = append(lines, fmt.Sprintf("verdict: %s %s: ok (%s)", c.name, targetText(c.m), strings.Join(ratios, ", ")))
		default:
			lines = append(lines, fmt.Sprintf("verdict: %s %s: MISS, met in %d of %d rounds (%s)", c.name, targetText(c.m), met, measured, strings.Join(ratios, ", ")))
		}
	}
	return lines
}
