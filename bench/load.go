package bench

import (
	"bytes"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// throughput sends total copies of req over clients connections, pipeline
// requests at a time per connection, and returns requests per second.
func throughput(addr string, clients, total, pipeline int, req []byte) (float64, error) {
	ops, _, err := timedLoad(addr, clients, total, pipeline, req)
	return ops, err
}

// timedLoad is throughput that also returns every batch's round trip:
// the time from sending its pipeline requests to reading the last reply.
func timedLoad(addr string, clients, total, pipeline int, req []byte) (float64, []time.Duration, error) {
	conns, err := dialN(addr, clients)
	if err != nil {
		return 0, nil, err
	}
	defer closeAll(conns)
	batch := bytes.Repeat(req, pipeline)
	per := total / clients / pipeline
	trips := make([][]time.Duration, clients) // one slice per connection: no lock
	for i := range trips {
		trips[i] = make([]time.Duration, 0, per)
	}
	var next atomic.Int64
	start := time.Now()
	err = parallel(conns, func(c *Conn) error {
		mine := &trips[next.Add(1)-1]
		for range per {
			sent := time.Now()
			if err := c.Send(batch); err != nil {
				return err
			}
			if err := c.Skip(pipeline); err != nil {
				return err
			}
			*mine = append(*mine, time.Since(sent))
		}
		return nil
	})
	elapsed := time.Since(start)
	var all []time.Duration
	for _, t := range trips {
		all = append(all, t...)
	}
	return float64(per*pipeline*clients) / elapsed.Seconds(), all, err
}

// paced sends n requests over c at rate per second, each built by req
// from its send time (Unix ns), and takes the replies in a goroutine of
// its own. Not waiting for each reply keeps the offered load the same
// whatever the server's latency: a producer that waits slows down for the
// slower server and so spares it load, and the two servers would be
// measured at different rates.
func paced(c *Conn, n, rate int, req func(sent int64) []byte) error {
	replies := make(chan error, 1)
	go func() { replies <- c.Skip(n) }()
	start := time.Now()
	for i := range n {
		if wait := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); wait > 0 {
			time.Sleep(wait) // pacing the producer to its fixed rate
		}
		if err := c.Send(req(time.Now().UnixNano())); err != nil {
			return err // the caller closes c, which ends the reader
		}
	}
	return <-replies
}

func dialN(addr string, n int) ([]*Conn, error) {
	conns := make([]*Conn, 0, n)
	for range n {
		c, err := Dial(addr)
		if err != nil {
			closeAll(conns)
			return nil, err
		}
		conns = append(conns, c)
	}
	return conns, nil
}

func closeAll(conns []*Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// parallel runs fn on every connection at once and returns the first error.
func parallel(conns []*Conn, fn func(c *Conn) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(conns))
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(c); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// fill runs the requests made by gen(i) for i < n over one pipelined
// connection, in batches; it is for preparing data, not measuring.
func fill(addr string, n int, gen func(i int) []byte) error {
	c, err := Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	const batch = 256
	var buf []byte
	pending := 0
	for i := range n {
		buf = append(buf, gen(i)...)
		pending++
		if pending == batch || i == n-1 {
			if err := c.Send(buf); err != nil {
				return err
			}
			if err := c.Skip(pending); err != nil {
				return err
			}
			buf, pending = buf[:0], 0
		}
	}
	return nil
}

// percentiles returns p50, p99 and max of durations in milliseconds.
func percentiles(d []time.Duration) (p50, p99, pmax float64) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
	return ms(d[len(d)/2]), ms(d[len(d)*99/100]), ms(d[len(d)-1])
}

// rssPerElement measures how much the server's RSS grows while fill adds
// n elements, in bytes per element. It waits for the RSS to settle first
// and after, so lazily returned memory counts the same for both servers.
func rssPerElement(t *Target, n int, fillFn func() error) (float64, error) {
	before, err := settledRSS(t)
	if err != nil {
		return 0, err
	}
	if err := fillFn(); err != nil {
		return 0, err
	}
	after, err := settledRSS(t)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(n), nil
}

// settledRSS polls RSS until two readings a second apart agree within 1%.
func settledRSS(t *Target) (int64, error) {
	prev, err := t.RSS()
	if err != nil {
		return 0, err
	}
	for range 10 {
		time.Sleep(time.Second) // RSS has no change notification: sample it
		cur, err := t.RSS()
		if err != nil {
			return 0, err
		}
		if diff := cur - prev; diff*100 <= prev && -diff*100 <= prev {
			return cur, nil
		}
		prev = cur
	}
	return prev, nil
}

func value16(i int) string { return fmt.Sprintf("v:%014d", i) }
