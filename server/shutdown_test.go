package server

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// callsPersister records the Persister calls the server makes, in order,
// and says a rewrite is due (the AOF has grown far past its base).
type callsPersister struct {
	calls   []string
	saveErr error
}

func (p *callsPersister) Save(*Snapshot) error {
	p.calls = append(p.calls, "Save")
	return p.saveErr
}

func (p *callsPersister) BackgroundSave(*Snapshot) error {
	p.calls = append(p.calls, "BackgroundSave")
	return nil
}

func (p *callsPersister) BackgroundRewriteAOF(func(func()) *Snapshot) error {
	p.calls = append(p.calls, "BackgroundRewriteAOF")
	return nil
}

func (p *callsPersister) Status() PersistStatus {
	return PersistStatus{LastSaveOK: true, LastSave: time.Now(), AOFEnabled: true, AOFBase: 1, AOFSize: 1 << 40}
}

func (p *callsPersister) BeginShutdown() { p.calls = append(p.calls, "BeginShutdown") }
func (p *callsPersister) AbortShutdown() { p.calls = append(p.calls, "AbortShutdown") }

// TestShutdownStopsBackgroundPersistence is issue 11 §4: the shutdown
// stops background jobs before its save, and nothing starts one after it
// (an automatic AOF rewrite was seen starting after SIGTERM). The cron's
// rewrite before the shutdown is the control: the same call is made when
// nothing stops it.
func TestShutdownStopsBackgroundPersistence(t *testing.T) {
	s := newTestServer(t, nil)
	p := &callsPersister{}
	s.persist = p
	s.mu.Lock()
	s.persistCron(time.Now())
	s.mu.Unlock()
	if strings.Join(p.calls, ",") != "BackgroundRewriteAOF" {
		t.Fatalf("before the shutdown the cron made %v, want the due rewrite", p.calls)
	}
	p.calls = nil
	if err := s.Shutdown(true); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.persistCron(time.Now())
	s.mu.Unlock()
	if got := strings.Join(p.calls, ","); got != "BeginShutdown,Save" {
		t.Fatalf("shutdown and a later cron tick made %s, want BeginShutdown,Save and nothing after", got)
	}
}

// TestShutdownCommandSaveFails: SHUTDOWN whose save fails lets background
// jobs start again and keeps the server running; on a signal, Shutdown
// stops anyway and returns the error (the process exits non-zero).
func TestShutdownCommandSaveFails(t *testing.T) {
	s := newTestServer(t, nil)
	p := &callsPersister{saveErr: errors.New("disk on fire")}
	s.persist = p
	s.mu.Lock()
	ok := s.shutdownLocked(true, false)
	stopping := s.stopping
	s.mu.Unlock()
	if ok || stopping || strings.Join(p.calls, ",") != "BeginShutdown,Save,AbortShutdown" {
		t.Fatalf("SHUTDOWN with a failing save: ok=%v stopping=%v calls=%v", ok, stopping, p.calls)
	}
	if err := s.Shutdown(true); err == nil || !s.stopping {
		t.Fatalf("Shutdown on a signal with a failing save: err=%v stopping=%v; want the error, and stopped", err, s.stopping)
	}
}
