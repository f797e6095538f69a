package cli

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redstream/redstream/persistence"
	"github.com/redstream/redstream/server"
)

func testAOF(t *testing.T) (*persistence.AOF, string) {
	t.Helper()
	dir := t.TempDir()
	a, err := persistence.OpenAOF(persistence.AOFOptions{Dir: dir, Name: "appendonly.aof", Fsync: persistence.FsyncAlways,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Load(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	return a, dir
}

func push(v string) []server.Record {
	return []server.Record{{Time: 1, Argv: [][]byte{[]byte("RPUSH"), []byte("q"), []byte(v)}}}
}

// waitsFor runs l.Wait(ticket) and reports its result on a channel.
func waitsFor(l *aofLog, ticket uint64) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- l.Wait(ticket) }()
	return ch
}

// While the AOF is being turned on, a write's wait lasts until the AOF
// holds it; the held records go to the AOF in order, after the tickets of
// an earlier AOF, which stay settled.
func TestAOFLogTurnOnHoldsReplies(t *testing.T) {
	first, _ := testAOF(t)
	l := newAOFLog(first)
	old := l.Append(push("0"))
	if err := l.turnOff(); err != nil {
		t.Fatal(err)
	}
	if ticket := l.Append(push("off")); ticket != 0 {
		t.Fatalf("a write with the AOF off got ticket %d, want 0", ticket)
	}
	turn := l.beginTurnOn()
	t1, t2 := l.Append(push("1")), l.Append(push("2"))
	if t1 <= old || t2 <= t1 {
		t.Fatalf("tickets %d, %d after the earlier AOF's %d: they must grow", t1, t2, old)
	}
	waiting := waitsFor(l, t2)
	select {
	case err := <-waiting:
		t.Fatalf("a write's wait ended (%v) before the AOF was on", err)
	case <-time.After(50 * time.Millisecond): // a wait that should not end: give it a chance to
	}
	if l.Fsynced(t1) || l.Fsynced(old) {
		t.Fatalf("tickets %d, %d count as fsynced before the AOF is on", old, t1)
	}
	aof, dir := testAOF(t)
	l.finishTurnOn(turn, aof, nil)
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	if err := l.Wait(old); err != nil {
		t.Fatalf("the earlier AOF's ticket: %v", err)
	}
	if !l.Fsynced(old) || !l.Fsynced(t2) { // closed (and so fsynced); waited for under always
		t.Fatalf("Fsynced(%d) = %v, Fsynced(%d) = %v; want both true", old, l.Fsynced(old), t2, l.Fsynced(t2))
	}
	t3 := l.Append(push("3"))
	if err := l.Wait(t3); err != nil || t3 != t2+1 {
		t.Fatalf("ticket %d after %d: %v", t3, t2, err)
	}
	aof.Close()
	var got []string
	again, _ := persistence.OpenAOF(persistence.AOFOptions{Dir: dir, Name: "appendonly.aof", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if _, err := again.Load(nil, persistence.PerRecord(func(r server.Record) error {
		got = append(got, string(r.Argv[2]))
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != "1" || got[1] != "2" || got[2] != "3" {
		t.Fatalf("the new AOF holds %v, want [1 2 3]", got)
	}
}

// A turn-on that fails fails the waits it held and refuses writes (Err)
// until the AOF is turned off.
func TestAOFLogTurnOnFails(t *testing.T) {
	l := newAOFLog(nil)
	turn := l.beginTurnOn()
	ticket := l.Append(push("1"))
	disk := errors.New("disk on fire")
	l.finishTurnOn(turn, nil, disk)
	if err := l.Wait(ticket); !errors.Is(err, disk) {
		t.Fatalf("Wait after a failed turn-on = %v, want %v", err, disk)
	}
	if l.Fsynced(ticket) {
		t.Fatalf("a ticket of a failed turn-on counts as fsynced")
	}
	if err := l.Err(); !errors.Is(err, disk) {
		t.Fatalf("Err after a failed turn-on = %v", err)
	}
	if err := l.turnOff(); err != nil || l.Err() != nil {
		t.Fatalf("after turning off: %v, Err %v", err, l.Err())
	}
}
