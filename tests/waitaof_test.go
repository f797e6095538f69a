package tests

import (
	"bytes"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redstream/redstream/persistence"
	"github.com/redstream/redstream/server"
)

// WAITAOF on one node: [local, replicas], local being whether the AOF has
// fsynced the connection's last write. Under appendfsync no nothing is
// fsynced until the policy changes or the AOF closes, which makes the
// waiting observable without timing: a WAITAOF that answered before the
// fsync could only say 0.
func TestWaitAOFLocal(t *testing.T) {
	t.Parallel()
	s := StartServer(t, "--save", "", "--appendonly", "yes", "--appendfsync", "no")
	rc, other := s.Raw(t), s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"WAITAOF", bbArity("waitaof")},
		{"WAITAOF 0 0", bbArity("waitaof")},
		{"WAITAOF a 0 0", bbNotInt},
		{"WAITAOF 2 0 0", bbErr("ERR value is out of range, value must between 0 and 1")},
		{"WAITAOF -1 0 0", bbErr("ERR value is out of range, value must between 0 and 1")},
		{"WAITAOF 0 a 0", bbNotInt},
		{"WAITAOF 0 -1 0", bbErr("ERR value is out of range, must be positive")},
		{"WAITAOF 0 0 a", bbErr("ERR timeout is not an integer or out of range")},
		{"WAITAOF 0 0 -1", bbErr("ERR timeout is negative")},
		{"WAITAOF 0 0 9223372036854775807", bbErr("ERR timeout is out of range")},
		{"WAIT 0 a", bbErr("ERR timeout is not an integer or out of range")},
		{"WAIT 0 -1", bbErr("ERR timeout is negative")},
		// Nothing written yet: nothing to wait for.
		{"WAITAOF 1 0 0", "*2[:1 :0]"},
		// Written, not fsynced: the timeout ends the wait.
		{"INCR n", ":1"},
		{"WAITAOF 1 0 100", "*2[:0 :0]"},
		{"WAITAOF 0 0 0", "*2[:0 :0]"},
		// Inside MULTI it answers at once.
		{"MULTI", bbStatus("OK")},
		{"INCR n", bbStatus("QUEUED")},
		{"WAITAOF 1 0 0", bbStatus("QUEUED")},
		{"EXEC", "*2[:2 *2[:0 :0]]"},
	})
	// A WAITAOF blocked until the switch to always fsyncs everything.
	rc.Send(Encode("WAITAOF", "1", "0", "0"))
	bbRun(t, other, []bbStep{{"CONFIG SET appendfsync always", bbStatus("OK")}})
	if r := rc.Read(); r.String() != "*2[:1 :0]" {
		t.Fatalf("WAITAOF 1 0 0 once appendfsync always fsynced the AOF = %s, want *2[:1 :0]", r)
	}
	bbRun(t, rc, []bbStep{
		{"INCR n", ":3"}, // answered once fsynced
		{"WAITAOF 1 0 0", "*2[:1 :0]"},
		{"CONFIG SET appendfsync everysec", bbStatus("OK")},
		{"INCR n", ":4"},
	})
	// Under everysec the background fsync comes within about a second.
	start := time.Now()
	if r := rc.Do("WAITAOF", "1", "0", "10000"); r.String() != "*2[:1 :0]" {
		t.Fatalf("WAITAOF 1 0 10000 under everysec = %s after %v, want *2[:1 :0]", r, time.Since(start))
	}

	// The connection's last fsynced write is behind it now. A WAITAOF
	// pipelined behind a new write runs in the same pass, before the
	// write is logged; a snapshot frozen in that pass logs it early.
	// Neither may let WAITAOF answer for the older write.
	bbRun(t, rc, []bbStep{{"CONFIG SET appendfsync no", bbStatus("OK")}})
	rc.Send(Encode("INCR", "n") + Encode("WAITAOF", "1", "0", "100"))
	for _, want := range []string{":5", "*2[:0 :0]"} {
		if r := rc.Read(); r.String() != want {
			t.Fatalf("pipelined INCR, WAITAOF 1 0 100: got %s, want %s", r, want)
		}
	}
	bbRun(t, rc, []bbStep{{"CONFIG SET appendfsync always", bbStatus("OK")}, {"CONFIG SET appendfsync no", bbStatus("OK")}})
	rc.Send(Encode("INCR", "n") + Encode("BGSAVE"))
	for _, want := range []string{":6", bbStatus("Background saving started")} {
		if r := rc.Read(); r.String() != want {
			t.Fatalf("pipelined INCR, BGSAVE: got %s, want %s", r, want)
		}
	}
	bbRun(t, rc, []bbStep{{"WAITAOF 1 0 100", "*2[:0 :0]"}})

	// Turning the AOF off ends a local wait with Redis's error.
	bbRun(t, rc, []bbStep{{"CONFIG SET appendfsync no", bbStatus("OK")}, {"INCR n", ":7"}})
	rc.Send(Encode("WAITAOF", "1", "0", "0"))
	bbRun(t, other, []bbStep{{"CONFIG SET appendonly no", bbStatus("OK")}})
	if r := rc.Read(); r.String() != bbErr("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.") {
		t.Fatalf("WAITAOF 1 0 0 when the AOF was turned off = %s, want the appendonly error", r)
	}
	bbRun(t, rc, []bbStep{
		{"WAITAOF 1 0 0", bbErr("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.")},
		{"WAITAOF 0 0 0", "*2[:0 :0]"},
		{"WAITAOF 0 1 50", "*2[:0 :0]"}, // no replicas: the timeout ends it
	})
}

// A WAITAOF inside MULTI answers at once and leaves the transaction whole
// in the AOF: one frame, which a crash keeps or loses entirely.
func TestWaitAOFInsideMultiKeepsTheTransactionOneFrame(t *testing.T) {
	t.Parallel()
	s := StartServer(t, "--save", "", "--appendonly", "yes", "--appendfsync", "always")
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"MULTI", bbStatus("OK")},
		{"INCR a", bbStatus("QUEUED")},
		{"WAITAOF 1 0 0", bbStatus("QUEUED")},
		{"INCR b", bbStatus("QUEUED")},
		{"EXEC", "*3[:1 *2[:1 :0] :1]"},
	})
	s.Stop()
	aof, err := persistence.OpenAOF(persistence.AOFOptions{Dir: filepath.Join(s.Dir, "appendonlydir"), Name: "appendonly.aof",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]string
	if _, err := aof.Load(nil, func(recs []server.Record) error {
		var f []string
		for _, r := range recs {
			f = append(f, strings.ToLower(string(bytes.Join(r.Argv, []byte(" ")))))
		}
		frames = append(frames, f)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if slices.Contains(f, "incr a") && !slices.Contains(f, "incr b") {
			t.Fatalf("the transaction's records were split over frames: %q", frames)
		}
	}
}
