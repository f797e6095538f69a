package server

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// callsPersister records the Persister calls the server makes, in order,
// and says a rewrite is due (the AOF has grown far past its base).
type callsPersister struct {
	calls             []string
	saveErr           error
	saving, rewriting bool // what Status reports
}

func (p *callsPersister) Save(*Snapshot) error {
	p.calls = append(p.calls, "Save")
	return p.saveErr
}

// The background jobs end at once: the snapshot is closed (with the
// lock held, as the persister is called).
func (p *callsPersister) BackgroundSave(snap *Snapshot) error {
	p.calls = append(p.calls, "BackgroundSave")
	snap.closeLocked()
	return nil
}

func (p *callsPersister) BackgroundRewriteAOF(freeze func(func()) *Snapshot) error {
	p.calls = append(p.calls, "BackgroundRewriteAOF")
	freeze(nil).closeLocked()
	return nil
}

func (p *callsPersister) Status() PersistStatus {
	return PersistStatus{LastSaveOK: true, LastSave: time.Now(), AOFEnabled: true, AOFBase: 1, AOFSize: 1 << 40,
		Saving: p.saving, Rewriting: p.rewriting}
}

func (p *callsPersister) StartAOF(string, func(func()) *Snapshot) error { return nil }
func (p *callsPersister) StopAOF() error                                { return nil }
func (p *callsPersister) SetAppendFsync(string) error                   { return nil }
func (p *callsPersister) BeginShutdown()                                { p.calls = append(p.calls, "BeginShutdown") }
func (p *callsPersister) AbortShutdown()                                { p.calls = append(p.calls, "AbortShutdown") }

// TestShutdownStopsBackgroundPersistence is issue 11 §4: the shutdown
// stops background jobs before its save, and nothing starts one after it
// (an automatic AOF rewrite was seen starting after SIGTERM). The cron's
// rewrite before the shutdown is the control: the same call is made when
// nothing stops it.
func TestShutdownStopsBackgroundPersistence(t *testing.T) {
	s := newTestServer(t, nil)
	p := &callsPersister{}
	s.persist = p
	s.shard.mu.Lock()
	s.persistCron(time.Now())
	s.shard.mu.Unlock()
	if strings.Join(p.calls, ",") != "BackgroundRewriteAOF" {
		t.Fatalf("before the shutdown the cron made %v, want the due rewrite", p.calls)
	}
	p.calls = nil
	if err := s.Shutdown(true); err != nil {
		t.Fatal(err)
	}
	s.shard.mu.Lock()
	s.persistCron(time.Now())
	s.shard.mu.Unlock()
	if got := strings.Join(p.calls, ","); got != "BeginShutdown,Save" {
		t.Fatalf("shutdown and a later cron tick made %s, want BeginShutdown,Save and nothing after", got)
	}
}

// TestShutdownCommandSaveFails: SHUTDOWN whose save fails answers Redis's
// error, lets background jobs start again and keeps serving; SHUTDOWN
// NOSAVE then stops (no command runs after it); on a signal, Shutdown
// stops even when its save fails, and returns the error.
func TestShutdownCommandSaveFails(t *testing.T) {
	s := newTestServer(t, nil)
	p := &callsPersister{saveErr: errors.New("disk on fire")}
	s.persist = p
	c := connect(t, s)
	if got := c.do("SHUTDOWN", "SAVE"); !strings.HasPrefix(got, "-ERR Errors trying to SHUTDOWN") {
		t.Fatalf("SHUTDOWN SAVE with a failing save = %q", got)
	}
	if got := strings.Join(p.calls, ","); got != "BeginShutdown,Save,AbortShutdown" {
		t.Fatalf("calls %s, want BeginShutdown,Save,AbortShutdown", got)
	}
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("after the failed SHUTDOWN, PING = %q", got)
	}
	c.conn.Write([]byte("*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n"))
	if _, err := c.r.ReadString('\n'); err == nil {
		t.Fatal("SHUTDOWN NOSAVE answered; want the connection closed")
	}
	if why := <-s.ShutdownRequested(); !strings.Contains(why, "SHUTDOWN") {
		t.Fatalf("shutdown reason %q", why)
	}

	s2 := newTestServer(t, nil)
	s2.persist = &callsPersister{saveErr: errors.New("disk on fire")}
	if err := s2.Shutdown(true); err == nil || !s2.stopping {
		t.Fatalf("Shutdown on a signal with a failing save: err=%v stopping=%v; want the error, and stopped", err, s2.stopping)
	}
}

// TestBackgroundJobsOneAtATime: as Redis runs one child at a time, a
// BGSAVE during a rewrite is refused (or scheduled with SCHEDULE), a
// BGREWRITEAOF during a save is scheduled, and the cron starts what was
// scheduled once nothing runs; one snapshot is walked at a time.
func TestBackgroundJobsOneAtATime(t *testing.T) {
	s := newTestServer(t, nil)
	s.cfg.AutoAOFRewritePercentage = 0 // only what is asked for
	p := &callsPersister{}
	s.persist = p
	c := connect(t, s)
	tick := func() {
		s.shard.mu.Lock()
		s.persistCron(time.Now())
		s.shard.mu.Unlock()
	}

	s.shard.mu.Lock() // the loop reads it under the lock
	p.rewriting = true
	s.shard.mu.Unlock()
	if got := c.do("BGSAVE"); !strings.HasPrefix(got, "-ERR Another child process is active (AOF?): can't BGSAVE right now.") {
		t.Fatalf("BGSAVE during a rewrite = %q", got)
	}
	if got := c.do("BGSAVE", "SCHEDULE"); got != "+Background saving scheduled\r\n" {
		t.Fatalf("BGSAVE SCHEDULE during a rewrite = %q", got)
	}
	if got := c.do("BGREWRITEAOF"); got != "-ERR Background append only file rewriting already in progress\r\n" {
		t.Fatalf("BGREWRITEAOF during a rewrite = %q", got)
	}
	tick()
	if len(p.calls) != 0 {
		t.Fatalf("the cron started %v while the rewrite runs", p.calls)
	}
	s.shard.mu.Lock() // the loop reads it under the lock
	p.rewriting = false
	s.shard.mu.Unlock()
	tick()
	if strings.Join(p.calls, ",") != "BackgroundSave" {
		t.Fatalf("after the rewrite the cron made %v, want the scheduled BackgroundSave", p.calls)
	}

	s.shard.mu.Lock() // the loop reads it under the lock
	p.calls, p.saving = nil, true
	s.shard.mu.Unlock()
	if got := c.do("BGSAVE"); got != "-ERR Background save already in progress\r\n" {
		t.Fatalf("BGSAVE during a save = %q", got)
	}
	if got := c.do("BGREWRITEAOF"); got != "+Background append only file rewriting scheduled\r\n" {
		t.Fatalf("BGREWRITEAOF during a save = %q", got)
	}
	s.shard.mu.Lock() // the loop reads it under the lock
	p.saving = false
	s.shard.mu.Unlock()
	tick()
	tick()
	if strings.Join(p.calls, ",") != "BackgroundRewriteAOF" {
		t.Fatalf("after the save the cron made %v, want the scheduled rewrite, once", p.calls)
	}
	if got := c.do("BGSAVE"); got != "+Background saving started\r\n" {
		t.Fatalf("BGSAVE with nothing running = %q", got)
	}
}

// logAtSave is a persister that keeps what the log said when Save began.
type logAtSave struct {
	callsPersister
	logs   *bytes.Buffer
	atSave string
}

func (p *logAtSave) Save(snap *Snapshot) error {
	p.atSave = p.logs.String()
	return p.callsPersister.Save(snap)
}

// TestShutdownLogOrder: SHUTDOWN logs "user requested shutdown" before
// the save it causes (and whose "DB saved on disk" follows), as Redis
// does; the log did it the other way round.
func TestShutdownLogOrder(t *testing.T) {
	s := newTestServer(t, nil)
	var logs bytes.Buffer
	s.logger = slog.New(slog.NewTextHandler(&logs, nil))
	p := &logAtSave{logs: &logs}
	s.persist = p
	c := connect(t, s)
	c.conn.Write([]byte("*2\r\n$8\r\nSHUTDOWN\r\n$4\r\nSAVE\r\n"))
	<-s.ShutdownRequested()
	if !strings.Contains(p.atSave, "user requested shutdown") || !strings.Contains(p.atSave, "saving the final RDB snapshot") {
		t.Fatalf("when the save began the log said:\n%s", p.atSave)
	}
}
