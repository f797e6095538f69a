package bench

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ListRows are the list measurements: LPUSH and RPOP throughput
// with 50 clients, unpipelined and pipelined 16, also with compressed
// nodes (list-compress-depth 1), which must not slow the ends down; a
// BRPOP work queue's throughput and push-to-pop latency; memory per
// element of a 1,000,000 element list of 16-byte values, and of a
// 10,000,000 element list of 100-byte repetitive values at depth 0 and 1.
func ListRows(scale float64) []Row {
	n := func(base int) int { return max(int(float64(base)*scale), 1000) }
	return []Row{
		pushPopRow("LPUSH", 50, 1, n(500_000), 0),
		pushPopRow("RPOP", 50, 1, n(500_000), 0),
		pushPopRow("LPUSH", 50, 16, n(4_000_000), 0),
		pushPopRow("RPOP", 50, 16, n(4_000_000), 0),
		pushPopRow("LPUSH", 50, 1, n(500_000), 1),
		pushPopRow("RPOP", 50, 1, n(500_000), 1),
		pushPopRow("LPUSH", 50, 16, n(4_000_000), 1),
		pushPopRow("RPOP", 50, 16, n(4_000_000), 1),
		queueThroughputRow(10, 40, n(400_000)),
		queueLatencyRow(20, 20_000, n(200_000)),
		listMemoryRow(n(1_000_000)),
		compressedMemoryRow(n(10_000_000), 0),
		compressedMemoryRow(n(10_000_000), 1),
	}
}

// depthConfig is the row config for a list-compress-depth (none for 0,
// the default, so that such rows share the running servers).
func depthConfig(depth int) []string {
	if depth == 0 {
		return nil
	}
	return []string{"--list-compress-depth", strconv.Itoa(depth)}
}

func pushPopRow(verb string, clients, pipeline, total, depth int) Row {
	name := fmt.Sprintf("%s, %d clients", verb, clients)
	if pipeline > 1 {
		name += fmt.Sprintf(", pipeline %d", pipeline)
	}
	if depth > 0 {
		name += fmt.Sprintf(", compress depth %d", depth)
	}
	return Row{
		Group:  "lists",
		Config: depthConfig(depth),
		Metrics: []Metric{{Name: name, Unit: "ops/s", Higher: true, Target: 0.9}, // issue 12 §5
			{Name: name + ", server CPU per op", Unit: "µs", Target: 1.1}},
		Run: func(t *Target) ([]float64, error) {
			if verb == "RPOP" { // something to pop for every request
				if err := fillList(t, "LPUSH", "bench:list", total+100, value16); err != nil {
					return nil, err
				}
			}
			req := Encode(verb, "bench:list", "v:00000000000000")
			if verb == "RPOP" {
				req = Encode("RPOP", "bench:list")
			}
			var ops float64
			cpu, err := cpuPer(t, total, func() (err error) {
				ops, err = throughput(t.Addr, clients, total, pipeline, req)
				return err
			})
			return []float64{ops, cpu}, err
		},
	}
}

// queueThroughputRow moves total messages from producers (LPUSH) to
// consumers blocked in BRPOP and reports messages per second end to end.
func queueThroughputRow(producers, consumers, total int) Row {
	return Row{
		Group: "lists",
		Metrics: []Metric{{Name: fmt.Sprintf("BRPOP queue, %d producers / %d consumers", producers, consumers),
			Unit: "ops/s", Higher: true, Target: 0.8}},
		Run: func(t *Target) ([]float64, error) {
			start := time.Now()
			_, err := runQueue(t.Addr, producers, consumers, total, 0)
			return []float64{float64(total) / time.Since(start).Seconds()}, err
		},
	}
}

// queueLatencyRow pushes at a fixed rate and reports push-to-pop latency.
func queueLatencyRow(consumers, rate, total int) Row {
	name := fmt.Sprintf("BRPOP queue latency at %d msg/s", rate)
	return Row{
		Group: "lists",
		Metrics: []Metric{
			{Name: name + ", p50", Unit: "ms"},
			{Name: name + ", p99", Unit: "ms", Target: 1.2},
			{Name: name + ", max", Unit: "ms"},
		},
		Run: func(t *Target) ([]float64, error) {
			lat, err := runQueue(t.Addr, 1, consumers, total, rate)
			p50, p99, pmax := percentiles(lat)
			return []float64{p50, p99, pmax}, err
		},
	}
}

// runQueue runs producers pushing total timestamped messages (at rate per
// second overall, or as fast as possible when rate is 0) and consumers
// popping them with BRPOP; it returns each message's latency.
func runQueue(addr string, producers, consumers, total, rate int) ([]time.Duration, error) {
	pconns, err := dialN(addr, producers)
	if err != nil {
		return nil, err
	}
	defer closeAll(pconns)
	cconns, err := dialN(addr, consumers)
	if err != nil {
		return nil, err
	}
	defer closeAll(cconns)
	var left atomic.Int64
	left.Store(int64(total))
	lat := make([]time.Duration, 0, total)
	var mu sync.Mutex
	cerr := make(chan error, 1)
	go func() {
		cerr <- parallel(cconns, func(c *Conn) error {
			return consume(c, &left, func(d time.Duration) { mu.Lock(); lat = append(lat, d); mu.Unlock() })
		})
	}()
	perr := parallel(pconns, func(c *Conn) error {
		return produce(c, total/producers, rate/max(producers, 1))
	})
	if perr != nil {
		return nil, perr
	}
	return lat, <-cerr
}

// produce pushes n timestamped messages: paced to rate, or, when rate is
// 0, as fast as the server answers (a throughput row).
func produce(c *Conn, n, rate int) error {
	push := func(sent int64) []byte { return Encode("LPUSH", "bench:queue", strconv.FormatInt(sent, 10)) }
	if rate > 0 {
		return paced(c, n, rate, push)
	}
	for range n {
		if err := c.Send(push(time.Now().UnixNano())); err != nil {
			return err
		}
		if err := c.Skip(1); err != nil {
			return err
		}
	}
	return nil
}

// consume pops until every message is taken. A consumer that finds the
// count exhausted leaves; the last messages are taken by whoever is
// blocked, and BRPOP's 1 s timeout lets idle consumers notice the end.
func consume(c *Conn, left *atomic.Int64, record func(time.Duration)) error {
	for left.Load() > 0 {
		r, err := c.Do("BRPOP", "bench:queue", "1")
		if err != nil {
			return err
		}
		if r.Null || len(r.Elems) != 2 {
			continue
		}
		sent, err := strconv.ParseInt(r.Elems[1].Str, 10, 64)
		if err != nil {
			return fmt.Errorf("bad message %q", r.Elems[1].Str)
		}
		record(time.Since(time.Unix(0, sent)))
		left.Add(-1)
	}
	return nil
}

// compressedMemoryRow fills a fresh server at list-compress-depth depth
// with one list of n 100-byte values, alike as a backlog of jobs is, and
// reports the growth of used_memory per element, and MEMORY USAGE of the
// list per element (exact on both servers, where used_memory also counts
// what the Go heap has not collected yet).
func compressedMemoryRow(n, depth int) Row {
	name := fmt.Sprintf("memory per element, %d x 100-byte repetitive list, compress depth %d", n, depth)
	return Row{
		Group:  "lists",
		Fresh:  true,
		Config: depthConfig(depth),
		Rounds: 1, // a gigabyte a server: once is enough
		Metrics: []Metric{{Name: name + ", used_memory", Unit: "B/elem", Target: 1.5},
			{Name: name + ", MEMORY USAGE", Unit: "B/elem", Target: 1.5}},
		Run: func(t *Target) ([]float64, error) {
			before, err := infoInt(t, "memory", "used_memory")
			if err != nil {
				return nil, err
			}
			if err := fillList(t, "RPUSH", "bench:backlog", n, jobValue); err != nil {
				return nil, err
			}
			after, err := infoInt(t, "memory", "used_memory")
			if err != nil {
				return nil, err
			}
			r, err := t.Do("MEMORY", "USAGE", "bench:backlog", "SAMPLES", "0")
			if err != nil {
				return nil, err
			}
			per := float64(n)
			return []float64{float64(after-before) / per, float64(r.Int) / per}, nil
		},
	}
}

// fillList pushes value(0) to value(n-1) onto key with verb (LPUSH or
// RPUSH), 100 values a command (n is rounded down to a multiple of 100).
func fillList(t *Target, verb, key string, n int, value func(int) string) error {
	return fill(t.Addr, n/100, func(i int) []byte {
		args := []string{verb, key}
		for j := range 100 {
			args = append(args, value(i*100+j))
		}
		return Encode(args...)
	})
}

// jobValue is a 100-byte value that differs from its neighbours only in
// its number, like the jobs of a queue.
func jobValue(i int) string {
	return fmt.Sprintf("job:%010d:%-85.85s", i, `{"queue":"default","class":"ReportJob","args":[42],"retry":3}`)
}

// listMemoryRow fills a fresh server with n 16-byte elements in one list.
func listMemoryRow(n int) Row {
	return Row{
		Group:   "lists",
		Fresh:   true,
		Metrics: []Metric{{Name: fmt.Sprintf("memory per element, %d x 16-byte list", n), Unit: "B/elem", Target: 1.5}},
		Run: func(t *Target) ([]float64, error) {
			per, err := rssPerElement(t, n, func() error {
				return fillList(t, "RPUSH", "bench:mem", n, value16)
			})
			return []float64{per}, err
		},
	}
}
