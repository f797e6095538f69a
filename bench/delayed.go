package bench

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DelayedRows measure delayed stream entries (XADD … DELAY, issue 15):
// the add rate of n delayed entries of the bench shape (job, a 16-byte
// value), the memory each takes while pending beside a visible one, and
// the release lag — from an entry's due time to its delivery to a reader
// blocked in XREAD — with the n entries still pending. Redis has no
// delayed entries: its side measures the plain XADD and the visible
// entry, so the ratios say what delaying costs over appending in Redis;
// its lag figures are left out.
func DelayedRows(scale float64) []Row {
	n := max(int(1_000_000*scale), 1000)
	lagEntries := max(int(2000*scale), 200)
	name := fmt.Sprintf("%d XADD DELAY (redis: XADD)", n)
	return []Row{{
		Group: "delayed",
		Fresh: true,
		Metrics: []Metric{
			{Name: name + ", 50 clients, pipeline 16", Unit: "ops/s", Higher: true},
			{Name: "memory per pending delayed entry (redis: visible), MEMORY USAGE", Unit: "B/entry", Target: 2},
			{Name: "memory per visible entry, MEMORY USAGE", Unit: "B/entry"},
			{Name: fmt.Sprintf("release lag to a blocked XREAD, %d entries due over 2 s, p50", lagEntries), Unit: "ms"},
			{Name: "release lag, p99", Unit: "ms"},
		},
		Run: func(t *Target) ([]float64, error) {
			redis := strings.HasPrefix(t.Name, "redis")
			add := []string{"XADD", "bench:delayed", "DELAY", "3600000", "*", "job", value16(0)}
			if redis {
				add = []string{"XADD", "bench:delayed", "*", "job", value16(0)}
			}
			ops, err := throughput(t.Addr, 50, n, 16, Encode(add...))
			if err != nil {
				return nil, err
			}
			delayed, err := memoryPerEntry(t, "bench:delayed", n)
			if err != nil {
				return nil, err
			}
			if err := fill(t.Addr, n, func(i int) []byte { return Encode("XADD", "bench:visible", "*", "job", value16(i)) }); err != nil {
				return nil, err
			}
			visible, err := memoryPerEntry(t, "bench:visible", n)
			if err != nil || redis {
				return []float64{ops, delayed, visible, 0, 0}, err
			}
			lag, err := releaseLag(t.Addr, lagEntries)
			p50, p99, _ := percentiles(lag)
			return []float64{ops, delayed, visible, p50, p99}, err
		},
	}}
}

// memoryPerEntry is MEMORY USAGE key (every node counted) over n.
func memoryPerEntry(t *Target, key string, n int) (float64, error) {
	r, err := t.Do("MEMORY", "USAGE", key, "SAMPLES", "0")
	if err != nil {
		return 0, err
	}
	return float64(r.Int) / float64(n), nil
}

// releaseLag adds n entries to a fresh stream, due at spread-out times
// over two seconds, and has a reader follow it with XREAD BLOCK; each
// entry's lag is its delivery time minus its due time (its ID's ms).
func releaseLag(addr string, n int) ([]time.Duration, error) {
	reader, err := Dial(addr)
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	prod, err := Dial(addr)
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	first, err := prod.Do("XADD", "bench:lag", "*", "job", "start")
	if err != nil {
		return nil, err
	}
	for i := range n {
		delay := strconv.Itoa(300 + i*2000/n)
		if err := prod.Send(Encode("XADD", "bench:lag", "DELAY", delay, "*", "job", value16(i))); err != nil {
			return nil, err
		}
	}
	if err := prod.Skip(n); err != nil {
		return nil, err
	}
	lag := make([]time.Duration, 0, n)
	last := first.Str
	for len(lag) < n {
		r, err := reader.Do("XREAD", "COUNT", "1000", "BLOCK", "10000", "STREAMS", "bench:lag", last)
		if err != nil {
			return nil, err
		}
		if r.Null {
			return nil, fmt.Errorf("XREAD BLOCK timed out after %d of %d delayed entries", len(lag), n)
		}
		now := time.Now()
		for _, e := range r.Elems[0].Elems[1].Elems {
			last = e.Elems[0].Str
			ms, _, _ := strings.Cut(last, "-")
			due, err := strconv.ParseInt(ms, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad ID %q", last)
			}
			lag = append(lag, now.Sub(time.UnixMilli(due)))
		}
	}
	return lag, nil
}
