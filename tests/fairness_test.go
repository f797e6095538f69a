package tests

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// TestFairnessBigRepliesDoNotStallOthers: a client pipelines 50
// LRANGEs of an 8 MB list and does not read; another client's PING must
// be answered in about the time one such LRANGE takes to build, not after
// the whole pipeline (Redis answers it after about a second: it builds
// every reply of the pipeline in one turn of its event loop).
func TestFairnessBigRepliesDoNotStallOthers(t *testing.T) {
	s := StartServer(t, "--appendonly", "no", "--save", "")
	ours := pingDuringBigPipeline(t, s.Addr)
	t.Logf("redstream: one LRANGE %v, slowest PING during the pipeline %v (%d PINGs)", ours.lrange, ours.worst, ours.pings)
	// An absolute bound from the reply's own cost: the PING may wait for
	// the LRANGE under way and a little more (a GC, the scheduler), not
	// for the pipeline (50 of them).
	bound := 4*ours.lrange + 250*time.Millisecond
	if ours.worst > bound {
		t.Errorf("a PING waited %v behind another client's pipeline of big replies; want at most %v (4 x one LRANGE of %v, + 250ms)", ours.worst, bound, ours.lrange)
	}
	if ours.timedOut {
		return
	}

	r := StartRedis(t) // skips the rest when redis-server is not installed
	theirs := pingDuringBigPipeline(t, r.Addr)
	t.Logf("redis-server: one LRANGE %v, slowest PING during the pipeline %v (%d PINGs)", theirs.lrange, theirs.worst, theirs.pings)
	if limit := 3*theirs.worst + 250*time.Millisecond; ours.worst > limit {
		t.Errorf("slowest PING %v, redis-server's %v: want at most 3x redis-server's + 250ms", ours.worst, theirs.worst)
	}
}

type fairnessResult struct {
	lrange   time.Duration // one LRANGE's round trip, the fastest of three
	worst    time.Duration // the slowest PING while the pipeline ran
	pings    int
	timedOut bool
}

// pingDuringBigPipeline fills biglist with 8 x 1 MB values, times one
// LRANGE of it, then has one connection send 50 LRANGEs without reading
// while another sends PINGs one after the other for a while, and returns
// the slowest PING.
func pingDuringBigPipeline(t *testing.T, addr string) fairnessResult {
	t.Helper()
	const values, valueSize, pipelined = 8, 1 << 20, 50
	rc := dialRaw(t, addr)
	rc.Do("DEL", "biglist")
	big := strings.Repeat("x", valueSize)
	for range values {
		if r := rc.Do("RPUSH", "biglist", big); r.Type != ':' {
			t.Fatalf("RPUSH = %s", r)
		}
	}
	var res fairnessResult
	lrange := Encode("LRANGE", "biglist", "0", "-1")
	for range 3 {
		start := time.Now()
		rc.Send(lrange)
		if err := skipReply(rc.r); err != nil {
			t.Fatalf("LRANGE: %v", err)
		}
		if d := time.Since(start); res.lrange == 0 || d < res.lrange {
			res.lrange = d
		}
	}

	pinger := dialRaw(t, addr)
	if r := pinger.Do("PING"); r.Str != "PONG" {
		t.Fatalf("PING = %s", r)
	}
	// The pipeline's connection is closed at the end (dialRaw), which
	// frees what the server holds for it.
	piper := dialRaw(t, addr)
	piper.Send(strings.Repeat(lrange, pipelined))

	// PING for a while: long enough to cover the pipeline if it stalls
	// everyone (on a server that builds one reply at a time, PINGs get
	// in between), and bounded in count and time. A PING that takes
	// longer than the patience allows ends the measurement.
	window := max(time.Second, 10*res.lrange)
	patience := 4*res.lrange + 5*time.Second
	end := time.Now().Add(window)
	for res.pings < 50000 && time.Now().Before(end) {
		start := time.Now()
		pinger.Send("PING\r\n")
		r, err := pinger.TryRead(patience)
		d := time.Since(start)
		res.pings++
		res.worst = max(res.worst, d)
		if err != nil {
			res.timedOut = true
			t.Logf("PING unanswered after %v: %v", d, err)
			break
		}
		if r.Str != "PONG" {
			t.Fatalf("PING = %s", r)
		}
	}
	return res
}

// skipReply reads one reply without keeping it (an LRANGE of 8 MB).
func skipReply(r *bufio.Reader) error {
	line, err := readLine(r)
	if err != nil {
		return err
	}
	if line == "" {
		return fmt.Errorf("empty reply line")
	}
	var n int
	switch line[0] {
	case '*':
		if _, err := fmt.Sscanf(line[1:], "%d", &n); err != nil {
			return err
		}
		for range n {
			if err := skipReply(r); err != nil {
				return err
			}
		}
	case '$':
		if _, err := fmt.Sscanf(line[1:], "%d", &n); err != nil {
			return err
		}
		if n >= 0 {
			if _, err := io.CopyN(io.Discard, r, int64(n)+2); err != nil {
				return err
			}
		}
	case '-':
		return fmt.Errorf("error reply: %s", line)
	}
	return nil
}

// TestFairnessStuckReaderIsHeld: a client that pipelines big reads and
// stops reading is held once the socket takes no more of its output: the
// server runs none of its further commands until it reads, so what it
// holds is one turn's output, not its whole pipeline's (200 x 256 KB
// here). Once it reads again (the control), the rest of its pipeline
// runs.
func TestFairnessStuckReaderIsHeld(t *testing.T) {
	s := StartServer(t, "--appendonly", "no", "--save", "")
	admin := s.Raw(t)
	admin.Do("RPUSH", "big", strings.Repeat("x", 256<<10))
	conn := dialRaw(t, s.Addr)
	const pipelined = 200
	var req strings.Builder
	for range pipelined {
		req.WriteString(Encode("LRANGE", "big", "0", "-1"))
	}
	conn.Send(req.String())
	calls := func() int {
		info := admin.Do("INFO", "commandstats").Str
		var n int
		if i := strings.Index(info, "cmdstat_lrange:calls="); i >= 0 {
			fmt.Sscanf(info[i+len("cmdstat_lrange:calls="):], "%d", &n)
		}
		return n
	}
	// A server that ignored the stuck socket would run all 200 within
	// moments; a held client stops once the socket's buffers are full.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && calls() < pipelined {
		time.Sleep(20 * time.Millisecond)
	}
	if n := calls(); n >= pipelined {
		t.Fatalf("all %d LRANGEs ran for a client that read none of their replies", n)
	}
	// The control: reading lets the rest run.
	got := 0
	for range pipelined {
		if r := conn.Read(); r.Type != '*' {
			t.Fatalf("LRANGE reply %d = %s", got, r)
		}
		got++
	}
	if n := calls(); n != pipelined {
		t.Fatalf("after reading every reply, %d LRANGEs ran, want %d", n, pipelined)
	}
}
