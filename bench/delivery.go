package bench

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// DeliveryRows are issue 17's measurements of the queue's hot path: a
// producer's write waking a blocked consumer and delivering to it, with
// the server's CPU per delivered message beside throughput and latency.
// Consumers block with no timeout (BRPOP key 0, XREADGROUP ... BLOCK 0),
// as queue workers do; latency rows pace their producer (open loop: it
// does not wait for replies, so both servers get the same load).
func DeliveryRows(scale float64) []Row {
	n := func(base int) int { return max(int(float64(base)*scale), 2000) }
	return []Row{
		listQueueRow(4, 8, n(200_000)),
		listDeliveryRow(5_000, n(50_000)),
		streamDeliveryRow(5_000, n(50_000)),
		idleConnectionsRow(max(int(5_000*scale), 100)),
	}
}

// idleConnectionsRow opens n connections to a fresh server, each of which
// sends one PING and then waits, as a fleet of idle queue workers does,
// and reports the server's RSS growth per connection: what a connected
// client costs the server while it sends nothing.
func idleConnectionsRow(n int) Row {
	return Row{
		Group:   "delivery",
		Fresh:   true,
		Rounds:  1,
		Metrics: []Metric{{Name: fmt.Sprintf("memory per idle connection, %d connections, RSS", n), Unit: "B/conn"}},
		Run: func(t *Target) ([]float64, error) {
			var conns []*Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			per, err := rssPerElement(t, n, func() error {
				for range n {
					c, err := Dial(t.Addr)
					if err != nil {
						return err
					}
					conns = append(conns, c)
					if _, err := c.Do("PING"); err != nil {
						return err
					}
				}
				return nil
			})
			return []float64{per}, err
		},
	}
}

// deliveryRounds is how many rounds these rows take at least: their
// tails are what they measure, and tails are noisy.
const deliveryRounds = 5

func latencyMetrics(name string, p99Target float64) []Metric {
	return []Metric{
		{Name: name + ", p50", Unit: "ms", Target: 1.2},
		{Name: name + ", p99", Unit: "ms", Target: p99Target},
		{Name: name + ", p99.9", Unit: "ms"},
		{Name: name + ", server CPU per message", Unit: "µs", Target: 1.2},
	}
}

// listQueueRow: producers LPUSH one element per round trip, consumers
// wait in BRPOP key 0; throughput, push-to-pop latency, CPU per message.
func listQueueRow(producers, consumers, total int) Row {
	name := fmt.Sprintf("list queue, %d producers LPUSH / %d consumers BRPOP 0", producers, consumers)
	return Row{
		Group:  "delivery",
		Rounds: deliveryRounds,
		Metrics: append([]Metric{{Name: name, Unit: "msg/s", Higher: true, Target: 1.0}},
			latencyMetrics(name+", push to pop", 0)...),
		Run: func(t *Target) ([]float64, error) {
			var lat []time.Duration
			var elapsed time.Duration
			cpu, err := cpuPer(t, total, func() (err error) {
				start := time.Now()
				lat, err = listDeliver(t.Addr, producers, consumers, total, 0)
				elapsed = time.Since(start)
				return err
			})
			p50, p99, p999 := tail(lat)
			return []float64{float64(total) / elapsed.Seconds(), p50, p99, p999, cpu}, err
		},
	}
}

// listDeliveryRow: one producer paced at rate LPUSH/s, one consumer in
// BRPOP key 0.
func listDeliveryRow(rate, total int) Row {
	name := fmt.Sprintf("list delivery at %d LPUSH/s, 1 consumer BRPOP 0", rate)
	return Row{
		Group:   "delivery",
		Rounds:  deliveryRounds,
		Metrics: latencyMetrics(name, 1.5),
		Run: func(t *Target) ([]float64, error) {
			return latencyFigures(t, total, func() ([]time.Duration, error) { return listDeliver(t.Addr, 1, 1, total, rate) })
		},
	}
}

// latencyFigures runs deliver, which delivers total messages, and returns
// the latency rows' figures: p50, p99 and p99.9 of the messages' delivery
// latencies, and the server's CPU per message.
func latencyFigures(t *Target, total int, deliver func() ([]time.Duration, error)) ([]float64, error) {
	var lat []time.Duration
	cpu, err := cpuPer(t, total, func() (err error) {
		lat, err = deliver()
		return err
	})
	p50, p99, p999 := tail(lat)
	return []float64{p50, p99, p999, cpu}, err
}

// listDeliver runs producers pushing total timestamped messages (paced to
// rate overall, or one per round trip when rate is 0) to consumers in
// BRPOP key 0, and returns each message's push-to-pop latency. The
// consumers, blocked for good once the messages run out, are released
// by closing their connections.
func listDeliver(addr string, producers, consumers, total, rate int) ([]time.Duration, error) {
	const key = "bench:queue" // where produce pushes
	cconns, err := dialN(addr, consumers)
	if err != nil {
		return nil, err
	}
	pconns, err := dialN(addr, producers)
	if err != nil {
		closeAll(cconns)
		return nil, err
	}
	defer closeAll(pconns)
	var left atomic.Int64
	left.Store(int64(total))
	lat := make([]time.Duration, 0, total)
	var mu sync.Mutex
	allIn := make(chan struct{})
	cerr := make(chan error, 1)
	go func() {
		cerr <- parallel(cconns, func(c *Conn) error {
			for left.Load() > 0 {
				r, err := c.Do("BRPOP", key, "0")
				if err != nil {
					if left.Load() <= 0 {
						return nil // released by the close below
					}
					return err
				}
				if len(r.Elems) != 2 {
					return fmt.Errorf("BRPOP 0 replied %v", r)
				}
				sent, err := strconv.ParseInt(r.Elems[1].Str, 10, 64)
				if err != nil {
					return fmt.Errorf("bad message %q", r.Elems[1].Str)
				}
				d := time.Since(time.Unix(0, sent))
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
				if left.Add(-1) == 0 {
					close(allIn)
				}
			}
			return nil
		})
	}()
	perr := parallel(pconns, func(c *Conn) error { return produce(c, total/producers, rate/producers) })
	if perr == nil {
		select {
		case <-allIn:
		case <-time.After(time.Minute):
			perr = errors.New("not every message was delivered within a minute")
		}
	}
	left.Store(0)
	closeAll(cconns)
	err = <-cerr
	if perr != nil {
		return nil, perr
	}
	return lat, err
}

// streamDeliveryRow: one producer paced at rate XADD/s, one consumer in
// XREADGROUP COUNT 1000 BLOCK 0 acknowledging each batch with XACK.
func streamDeliveryRow(rate, total int) Row {
	name := fmt.Sprintf("stream delivery at %d XADD/s, 1 consumer XREADGROUP BLOCK 0 + XACK", rate)
	return Row{
		Group:   "delivery",
		Rounds:  deliveryRounds,
		Metrics: latencyMetrics(name, 1.5),
		Run: func(t *Target) ([]float64, error) {
			const key = "bench:deliver"
			if err := createGroup(t, key); err != nil {
				return nil, err
			}
			return latencyFigures(t, total, func() ([]time.Duration, error) { return streamDeliver(t, key, total, rate) })
		},
	}
}

func streamDeliver(t *Target, key string, total, rate int) ([]time.Duration, error) {
	cons, err := Dial(t.Addr)
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	prod, err := Dial(t.Addr)
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	lat := make([]time.Duration, 0, total)
	cerr := make(chan error, 1)
	go func() {
		for len(lat) < total {
			r, err := cons.Do("XREADGROUP", "GROUP", benchGroup, "c", "COUNT", "1000", "BLOCK", "0", "STREAMS", key, ">")
			if err != nil {
				cerr <- err
				return
			}
			now := time.Now()
			ids := entryIDs(r)
			for _, e := range r.Elems[0].Elems[1].Elems {
				sent, err := strconv.ParseInt(e.Elems[1].Elems[1].Str, 10, 64)
				if err != nil {
					cerr <- fmt.Errorf("bad entry %v", e)
					return
				}
				lat = append(lat, now.Sub(time.Unix(0, sent)))
			}
			if err := ack(cons, key, ids); err != nil {
				cerr <- err
				return
			}
		}
		cerr <- nil
	}()
	if err := produceEntries(prod, key, total, rate); err != nil {
		return nil, err
	}
	select {
	case err := <-cerr:
		return lat, err
	case <-time.After(time.Minute):
		return nil, errors.New("not every entry was delivered within a minute")
	}
}

// tail returns the p50, p99 and p99.9 of d in ms.
func tail(d []time.Duration) (p50, p99, p999 float64) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
	return ms(d[len(d)/2]), ms(d[len(d)*99/100]), ms(d[len(d)*999/1000])
}
