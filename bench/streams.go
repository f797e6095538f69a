package bench

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"time"
)

// StreamRows are the stream measurements: XADD throughput with 50
// clients, unpipelined and pipelined 16; XRANGE and XREVRANGE COUNT 100
// from random IDs of a 1,000,000-entry stream; XREAD BLOCK delivery
// latency with a producer at a fixed rate; memory per entry after
// 1,000,000 XADDs of a 2-field and of a 5-field entry.
func StreamRows(scale float64) []Row {
	n := func(base int) int { return max(int(float64(base)*scale), 1000) }
	return []Row{
		xaddRow(50, 1, n(500_000)),
		xaddRow(50, 16, n(2_000_000)),
		xaddMaxAgeRow(50, n(500_000)),
		xrangeRow(false, 50, n(1_000_000), n(200_000)),
		xrangeRow(true, 50, n(1_000_000), n(200_000)),
		xreadLatencyRow(10, 10_000, n(100_000)),
		streamMemoryRow("2-field", twoFields, n(1_000_000)),
		streamMemoryRow("5-field", fiveFields, n(1_000_000)),
	}
}

// The entries the rows add: a realistic small event, and a larger one.
var (
	twoFields  = []string{"event", "click", "user", "12345"}
	fiveFields = []string{"event", "click", "user", "12345", "page", "/products/shoes", "ts", "1700000000123", "ref", "campaign-42"}
)

func xaddRow(clients, pipeline, total int) Row {
	name := fmt.Sprintf("XADD, %d clients", clients)
	if pipeline > 1 {
		name += fmt.Sprintf(", pipeline %d", pipeline)
	}
	return Row{
		Group:   "streams",
		Metrics: []Metric{{Name: name, Unit: "ops/s", Higher: true, Target: 0.9}},
		Run: func(t *Target) ([]float64, error) {
			req := Encode(append([]string{"XADD", "bench:stream", "*"}, twoFields...)...)
			ops, err := throughput(t.Addr, clients, total, pipeline, req)
			return []float64{ops}, err
		},
	}
}

// xaddMaxAgeRow is xaddRow's unpipelined load on a stream with an age
// limit of a second (XCFGSET MAXAGE, ours alone), so once the first
// second has passed every XADD also trims the entry that aged out. Redis
// has no age limit: its side adds to a plain stream, so beside the plain
// row the ratio shows what the limit costs.
func xaddMaxAgeRow(clients, total int) Row {
	return Row{
		Group:   "streams",
		Metrics: []Metric{{Name: fmt.Sprintf("XADD, %d clients, MAXAGE 1000 ms stream (redis: plain)", clients), Unit: "ops/s", Higher: true, Target: 0.9}},
		Run: func(t *Target) ([]float64, error) {
			const key = "bench:aged"
			if strings.HasPrefix(t.Name, "redstream") {
				if _, err := t.Do(append([]string{"XADD", key, "*"}, twoFields...)...); err != nil {
					return nil, err
				}
				if r, err := t.Do("XCFGSET", key, "MAXAGE", "1000"); err != nil || r.Str != "OK" {
					return nil, fmt.Errorf("XCFGSET MAXAGE: %v %v", r, err)
				}
			}
			ops, err := throughput(t.Addr, clients, total, 1, Encode(append([]string{"XADD", key, "*"}, twoFields...)...))
			return []float64{ops}, err
		},
	}
}

// fillStream adds n 2-field entries with IDs 1-0 .. n-0 to key.
func fillStream(addr, key string, n int) error {
	return fill(addr, n, func(i int) []byte {
		return Encode(append([]string{"XADD", key, strconv.Itoa(i+1) + "-0"}, twoFields...)...)
	})
}

// xrangeRow reads COUNT 100 from random IDs of an entries-long stream:
// XRANGE key <id> + or XREVRANGE key <id> -.
func xrangeRow(rev bool, clients, entries, total int) Row {
	verb := "XRANGE"
	if rev {
		verb = "XREVRANGE"
	}
	return Row{
		Group:   "streams",
		Metrics: []Metric{{Name: fmt.Sprintf("%s COUNT 100, %d-entry stream, %d clients", verb, entries, clients), Unit: "ops/s", Higher: true, Target: 0.9}},
		Run: func(t *Target) ([]float64, error) {
			if err := fillStream(t.Addr, "bench:range", entries); err != nil {
				return nil, err
			}
			reqs := make([][]byte, 1024)
			rng := rand.New(rand.NewSource(1))
			for i := range reqs {
				id := strconv.Itoa(1 + rng.Intn(entries))
				if rev {
					reqs[i] = Encode("XREVRANGE", "bench:range", id, "-", "COUNT", "100")
				} else {
					reqs[i] = Encode("XRANGE", "bench:range", id, "+", "COUNT", "100")
				}
			}
			ops, err := throughputVaried(t.Addr, clients, total, reqs)
			return []float64{ops}, err
		},
	}
}

// throughputVaried is throughput, unpipelined, cycling through reqs.
func throughputVaried(addr string, clients, total int, reqs [][]byte) (float64, error) {
	conns, err := dialN(addr, clients)
	if err != nil {
		return 0, err
	}
	defer closeAll(conns)
	per := total / clients
	start := time.Now()
	var next sync.Mutex
	k := 0
	err = parallel(conns, func(c *Conn) error {
		next.Lock()
		off := k * 37
		k++
		next.Unlock()
		for i := range per {
			if err := c.Send(reqs[(off+i)%len(reqs)]); err != nil {
				return err
			}
			if err := c.Skip(1); err != nil {
				return err
			}
		}
		return nil
	})
	return float64(per*clients) / time.Since(start).Seconds(), err
}

// xreadLatencyRow has consumers follow a stream with XREAD BLOCK while a
// producer adds timestamped entries at a fixed rate; every consumer
// reads every entry, and each delivery's latency is measured.
func xreadLatencyRow(consumers, rate, total int) Row {
	name := fmt.Sprintf("XREAD BLOCK latency, %d readers, %d entries/s", consumers, rate)
	return Row{
		Group: "streams",
		Metrics: []Metric{
			{Name: name + ", p50", Unit: "ms"},
			{Name: name + ", p99", Unit: "ms", Target: 1.2},
			{Name: name + ", max", Unit: "ms"},
		},
		Run: func(t *Target) ([]float64, error) {
			lat, err := runStreamFollowers(t.Addr, consumers, rate, total)
			p50, p99, pmax := percentiles(lat)
			return []float64{p50, p99, pmax}, err
		},
	}
}

func runStreamFollowers(addr string, consumers, rate, total int) ([]time.Duration, error) {
	cconns, err := dialN(addr, consumers)
	if err != nil {
		return nil, err
	}
	defer closeAll(cconns)
	prod, err := Dial(addr)
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	// Start from an existing entry so every reader has a concrete ID.
	first, err := prod.Do("XADD", "bench:follow", "*", "sent", "0")
	if err != nil {
		return nil, err
	}
	lat := make([]time.Duration, 0, total*consumers)
	var mu sync.Mutex
	cerr := make(chan error, 1)
	go func() {
		cerr <- parallel(cconns, func(c *Conn) error {
			return follow(c, first.Str, total, func(d time.Duration) { mu.Lock(); lat = append(lat, d); mu.Unlock() })
		})
	}()
	if err := produceEntries(prod, "bench:follow", total, rate); err != nil {
		return nil, err
	}
	return lat, <-cerr
}

// produceEntries adds n entries carrying their send time, paced to rate.
func produceEntries(c *Conn, key string, n, rate int) error {
	return paced(c, n, rate, func(sent int64) []byte {
		return Encode("XADD", key, "*", "sent", strconv.FormatInt(sent, 10))
	})
}

// follow reads the stream after from with XREAD BLOCK until it has seen
// n entries, recording each one's delivery latency.
func follow(c *Conn, from string, n int, record func(time.Duration)) error {
	last, seen := from, 0
	for seen < n {
		r, err := c.Do("XREAD", "COUNT", "1000", "BLOCK", "10000", "STREAMS", "bench:follow", last)
		if err != nil {
			return err
		}
		if r.Null {
			return fmt.Errorf("XREAD BLOCK timed out after %d of %d entries", seen, n)
		}
		now := time.Now()
		for _, e := range r.Elems[0].Elems[1].Elems {
			last = e.Elems[0].Str
			sent, err := strconv.ParseInt(e.Elems[1].Elems[1].Str, 10, 64)
			if err != nil {
				return fmt.Errorf("bad entry %v", e)
			}
			record(now.Sub(time.Unix(0, sent)))
			seen++
		}
	}
	return nil
}

// streamMemoryRow fills a fresh server with n XADDs of one entry shape
// and reports the RSS growth per entry.
func streamMemoryRow(what string, fv []string, n int) Row {
	return Row{
		Group:   "streams",
		Fresh:   true,
		Metrics: []Metric{{Name: fmt.Sprintf("memory per entry, %d XADDs of a %s entry", n, what), Unit: "B/entry", Target: 1.2}},
		Run: func(t *Target) ([]float64, error) {
			req := Encode(append([]string{"XADD", "bench:mem", "*"}, fv...)...)
			per, err := rssPerElement(t, n, func() error {
				return fill(t.Addr, n, func(int) []byte { return req })
			})
			return []float64{per}, err
		},
	}
}
