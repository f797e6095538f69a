package bench

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// GroupRows are issue 4's consumer-group measurements: draining a
// 1,000,000-entry stream with 4 consumers doing XREADGROUP COUNT 100 and
// XACK of each batch; end-to-end latency with a producer at a fixed rate
// and consumers blocked in XREADGROUP BLOCK, from XADD to delivery and
// from XADD to the acknowledgement; XAUTOCLAIM over a 100,000-entry PEL,
// per 1,000 entries claimed; and the memory of 1,000,000 pending entries.
func GroupRows(scale float64) []Row {
	n := func(base int) int { return max(int(float64(base)*scale), 1000) }
	return []Row{
		drainRow(4, n(1_000_000)),
		policyDrainRow(4, n(500_000)),
		groupLatencyRow(4, 10_000, n(100_000)),
		autoclaimRow(n(100_000)),
		pelMemoryRow(n(1_000_000)),
	}
}

const benchGroup = "workers"

// createGroup creates the bench group at the start of key.
func createGroup(t *Target, key string) error {
	_, err := t.Do("XGROUP", "CREATE", key, benchGroup, "0", "MKSTREAM")
	return err
}

// entryIDs returns the IDs of the entries of an XREADGROUP reply for one
// stream (nil for a null reply).
func entryIDs(r Reply) []string {
	if r.Null || len(r.Elems) == 0 {
		return nil
	}
	entries := r.Elems[0].Elems[1].Elems
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.Elems[0].Str
	}
	return ids
}

// ack acknowledges ids on c. The request is encoded by hand: Encode's
// fmt calls for a hundred IDs would cost the load generator more than
// the server spends on the command, on both sides.
func ack(c *Conn, key string, ids []string) error {
	buf := make([]byte, 0, 64+len(ids)*24)
	buf = appendArrayLen(buf, 3+len(ids))
	buf = appendBulk(buf, "XACK")
	buf = appendBulk(buf, key)
	buf = appendBulk(buf, benchGroup)
	for _, id := range ids {
		buf = appendBulk(buf, id)
	}
	if err := c.Send(buf); err != nil {
		return err
	}
	r, err := c.Read()
	if err == nil && r.Type == '-' {
		err = fmt.Errorf("XACK: %s", r.Str)
	}
	return err
}

func appendArrayLen(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

func appendBulk(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

func drainRow(consumers, entries int) Row {
	return Row{
		Group: "groups",
		Metrics: []Metric{{Name: fmt.Sprintf("drain %d entries, %d consumers, XREADGROUP COUNT 100 + XACK", entries, consumers),
			Unit: "ops/s", Higher: true, Target: 0.9},
			{Name: "drain, server CPU per entry", Unit: "µs", Target: 1.1}},
		Run: func(t *Target) ([]float64, error) { return drain(t, consumers, entries, nil) },
	}
}

// drain fills a stream with entries, creates the bench group (with the
// XGROUP SETPOLICY options given, if any) and drains it with consumers
// doing XREADGROUP COUNT 100 + XACK; it returns entries per second and
// server CPU µs per entry.
func drain(t *Target, consumers, entries int, policy []string) ([]float64, error) {
	if err := fillStream(t.Addr, "bench:drain", entries); err != nil {
		return nil, err
	}
	if err := createGroup(t, "bench:drain"); err != nil {
		return nil, err
	}
	if policy != nil {
		if _, err := t.Do(append([]string{"XGROUP", "SETPOLICY", "bench:drain", benchGroup}, policy...)...); err != nil {
			return nil, err
		}
	}
	conns, err := dialN(t.Addr, consumers)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	var drained atomic.Int64
	var k atomic.Int64
	start, cpu0, err := time.Now(), time.Duration(0), error(nil)
	if cpu0, err = t.CPU(); err != nil {
		return nil, err
	}
	err = parallel(conns, func(c *Conn) error {
		name := "c" + strconv.Itoa(int(k.Add(1)))
		for {
			r, err := c.Do("XREADGROUP", "GROUP", benchGroup, name, "COUNT", "100", "STREAMS", "bench:drain", ">")
			if err != nil {
				return err
			}
			ids := entryIDs(r)
			if ids == nil {
				return nil
			}
			if err := ack(c, "bench:drain", ids); err != nil {
				return err
			}
			drained.Add(int64(len(ids)))
		}
	})
	elapsed := time.Since(start)
	cpu1, cerr := t.CPU()
	if err == nil {
		err = cerr
	}
	if err == nil && drained.Load() != int64(entries) {
		err = fmt.Errorf("drained %d of %d entries", drained.Load(), entries)
	}
	return []float64{float64(entries) / elapsed.Seconds(), float64(cpu1-cpu0) / float64(time.Microsecond) / float64(entries)}, err
}

func groupLatencyRow(consumers, rate, total int) Row {
	name := fmt.Sprintf("XREADGROUP BLOCK, %d consumers, %d entries/s", consumers, rate)
	return Row{
		Group: "groups",
		Metrics: []Metric{
			{Name: name + ", XADD to delivery p50", Unit: "ms"},
			{Name: name + ", XADD to delivery p99", Unit: "ms", Target: 1.2},
			{Name: name + ", XADD to delivery max", Unit: "ms"},
			{Name: name + ", XADD to XACK p50", Unit: "ms"},
			{Name: name + ", XADD to XACK p99", Unit: "ms", Target: 1.2},
			{Name: name + ", XADD to XACK max", Unit: "ms"},
		},
		Run: func(t *Target) ([]float64, error) {
			delivered, acked, err := runGroupFollowers(t, consumers, rate, total)
			d50, d99, dmax := percentiles(delivered)
			a50, a99, amax := percentiles(acked)
			return []float64{d50, d99, dmax, a50, a99, amax}, err
		},
	}
}

// runGroupFollowers has consumers wait in XREADGROUP BLOCK COUNT 100 and
// acknowledge every batch while a producer adds timestamped entries at a
// fixed rate; it returns every entry's XADD-to-delivery and
// XADD-to-acknowledged latencies.
func runGroupFollowers(t *Target, consumers, rate, total int) (delivered, acked []time.Duration, err error) {
	const key = "bench:follow"
	if err := createGroup(t, key); err != nil {
		return nil, nil, err
	}
	conns, err := dialN(t.Addr, consumers)
	if err != nil {
		return nil, nil, err
	}
	defer closeAll(conns)
	prod, err := Dial(t.Addr)
	if err != nil {
		return nil, nil, err
	}
	defer prod.Close()
	var mu sync.Mutex
	var seen atomic.Int64
	var k atomic.Int64
	cerr := make(chan error, 1)
	go func() {
		cerr <- parallel(conns, func(c *Conn) error {
			name := "c" + strconv.Itoa(int(k.Add(1)))
			for seen.Load() < int64(total) {
				r, err := c.Do("XREADGROUP", "GROUP", benchGroup, name, "COUNT", "100", "BLOCK", "200", "STREAMS", key, ">")
				if err != nil {
					return err
				}
				now := time.Now()
				ids := entryIDs(r)
				if ids == nil {
					continue
				}
				sent := make([]int64, len(ids))
				for i, e := range r.Elems[0].Elems[1].Elems {
					sent[i], _ = strconv.ParseInt(e.Elems[1].Elems[1].Str, 10, 64)
				}
				if err := ack(c, key, ids); err != nil {
					return err
				}
				done := time.Now()
				mu.Lock()
				for _, ns := range sent {
					delivered = append(delivered, now.Sub(time.Unix(0, ns)))
					acked = append(acked, done.Sub(time.Unix(0, ns)))
				}
				mu.Unlock()
				seen.Add(int64(len(ids)))
			}
			return nil
		})
	}()
	if err := produceEntries(prod, key, total, rate); err != nil {
		return nil, nil, err
	}
	return delivered, acked, <-cerr
}

// autoclaimRow fills a PEL of entries (one consumer reads them all), then
// a second consumer takes them over with XAUTOCLAIM COUNT 1000 from the
// start to the end, as a recovery worker does; it reports the time per
// call, that is per 1,000 entries claimed.
func autoclaimRow(entries int) Row {
	return Row{
		Group:   "groups",
		Metrics: []Metric{{Name: fmt.Sprintf("XAUTOCLAIM COUNT 1000 over a %d-entry PEL, per 1,000 claimed", entries), Unit: "ms"}},
		Run: func(t *Target) ([]float64, error) {
			const key = "bench:claim"
			if err := fillStream(t.Addr, key, entries); err != nil {
				return nil, err
			}
			if err := createGroup(t, key); err != nil {
				return nil, err
			}
			c, err := Dial(t.Addr)
			if err != nil {
				return nil, err
			}
			defer c.Close()
			if err := readAll(c, key, "owner", 10_000); err != nil {
				return nil, err
			}
			calls, claimed, cursor := 0, 0, "0-0"
			start := time.Now()
			for {
				r, err := c.Do("XAUTOCLAIM", key, benchGroup, "rescuer", "0", cursor, "COUNT", "1000")
				if err != nil {
					return nil, err
				}
				calls++
				claimed += len(r.Elems[1].Elems)
				if cursor = r.Elems[0].Str; cursor == "0-0" {
					break
				}
			}
			if claimed != entries {
				return nil, fmt.Errorf("claimed %d of %d entries", claimed, entries)
			}
			perCall := time.Since(start) / time.Duration(calls)
			return []float64{float64(perCall) / float64(time.Millisecond)}, nil
		},
	}
}

// readAll delivers every entry of key to consumer name, count at a time.
func readAll(c *Conn, key, name string, count int) error {
	for {
		r, err := c.Do("XREADGROUP", "GROUP", benchGroup, name, "COUNT", strconv.Itoa(count), "STREAMS", key, ">")
		if err != nil {
			return err
		}
		if r.Null {
			return nil
		}
	}
}

// pelMemoryRow measures how much the RSS of a fresh server grows when
// entries already in a stream are delivered to a group and left pending,
// 4 consumers owning a quarter each: bytes per pending entry.
func pelMemoryRow(entries int) Row {
	return Row{
		Group:   "groups",
		Fresh:   true,
		Metrics: []Metric{{Name: fmt.Sprintf("memory per pending entry, %d pending (4 consumers)", entries), Unit: "B/entry", Target: 1.3}},
		Run: func(t *Target) ([]float64, error) {
			const key = "bench:pel"
			if err := fillStream(t.Addr, key, entries); err != nil {
				return nil, err
			}
			if err := createGroup(t, key); err != nil {
				return nil, err
			}
			c, err := Dial(t.Addr)
			if err != nil {
				return nil, err
			}
			defer c.Close()
			per, err := rssPerElement(t, entries, func() error {
				for i := 0; ; i++ {
					r, err := c.Do("XREADGROUP", "GROUP", benchGroup, "c"+strconv.Itoa(i%4), "COUNT", "1000", "STREAMS", key, ">")
					if err != nil {
						return err
					}
					if r.Null {
						return nil
					}
				}
			})
			return []float64{per}, err
		},
	}
}
