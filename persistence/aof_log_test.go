package persistence

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redstream/redstream/server"
)

// logCapture is a slog handler that keeps every record with the time it
// was handled.
type logCapture struct {
	mu   sync.Mutex
	recs []capturedLog
}

type capturedLog struct {
	at    time.Time
	msg   string
	attrs map[string]slog.Value
}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *logCapture) WithGroup(string) slog.Handler            { return c }
func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	l := capturedLog{at: time.Now(), msg: r.Message, attrs: map[string]slog.Value{}}
	r.Attrs(func(a slog.Attr) bool { l.attrs[a.Key] = a.Value; return true })
	c.mu.Lock()
	c.recs = append(c.recs, l)
	c.mu.Unlock()
	return nil
}

// TestAOFLoadRateCountsFromIncrements: the records-per-second a load logs
// counts from the start of the increments, not from the start of the
// base before them, which holds no records and takes its own time.
func TestAOFLoadRateCountsFromIncrements(t *testing.T) {
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = 10 * time.Millisecond
	const baseTime = 300 * time.Millisecond
	var vals []string
	for i := range 20 {
		vals = append(vals, fmt.Sprint(i))
	}
	dir := aofDirWith(t, map[string]string{base2: "base", incr2: frames(vals...),
		mfst: "file " + base2 + " seq 2 type b\nfile " + incr2 + " seq 2 type i\n"})
	logs := &logCapture{}
	a, err := OpenAOF(AOFOptions{Dir: dir, Name: "appendonly.aof", Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	var baseDone time.Time
	slowBase := func(io.Reader) error {
		time.Sleep(baseTime) // the slow base the rate must not count
		baseDone = time.Now()
		return nil
	}
	slowApply := func([]server.Record) error {
		time.Sleep(progressEvery) // so that progress is logged within the increment
		return nil
	}
	if _, err := a.Load(slowBase, slowApply); err != nil {
		t.Fatal(err)
	}
	reports := 0
	for _, l := range logs.recs {
		if l.msg != "loading AOF" {
			continue
		}
		reports++
		// The rate is records / (its now - its start); its now is before
		// l.at and, counting from the increments, its start after
		// baseDone: so it is at least records / (l.at - baseDone).
		records, rate := l.attrs["records"].Int64(), l.attrs["records_per_sec"].Int64()
		if least := float64(records) / l.at.Sub(baseDone).Seconds(); float64(rate) < least-1 {
			t.Errorf("logged %d records/s after %d records; counting from the increments it is at least %.0f", rate, records, least)
		}
	}
	if reports == 0 {
		t.Fatal("the load logged no progress")
	}
}

// TestAOFSizesAfterLoad: right after a start, auto-aof-rewrite's base is
// the AOF's size then (Redis's aof_rewrite_base_size), not the base
// file's (none here), from which any AOF looks grown by millions of
// percent.
func TestAOFSizesAfterLoad(t *testing.T) {
	dir := aofDirWith(t, map[string]string{incr1: frames("a", "b", "c"), mfst: "file " + incr1 + " seq 1 type i\n"})
	a, err := quietOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := a.Load(nil, PerRecord(func(server.Record) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	if base, total := a.Sizes(); base != st.Bytes || total != st.Bytes {
		t.Fatalf("after the load Sizes() = %d, %d; want the loaded %d for both", base, total, st.Bytes)
	}
}
