package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/redstream/redstream/persistence"
	"github.com/redstream/redstream/server"
)

// aofLog is the server's Log: the AOF while appendonly is on, nothing
// while it is off. CONFIG SET appendonly switches between the two while
// the server runs, so the server keeps this one Log and its tickets stay
// comparable across the AOFs that come and go.
//
// Each AOF in turn is a generation: it numbers its own frames from 1, and
// the server's ticket for frame n is base+n, base being the newest ticket
// handed out before the generation began. A ticket at or below the current
// base belongs to an AOF already closed, whose close settled it.
//
// Turning the AOF on takes a while: its base (the keyspace frozen at the
// CONFIG SET) is written first, and until it is, the records of new
// writes wait in memory and their replies wait too (the AOF is on, so a
// reply promises that a restart finds the write). Once the base is on
// disk, the AOF opens, takes the waiting records in order, and replies go.
type aofLog struct {
	gen atomic.Pointer[logGen]

	mu      sync.Mutex    // orders generation changes with Appends that are not the AOF's
	last    uint64        // newest ticket handed out; written with the server's lock held
	failed  []failedRange // tickets of closed generations that did not become durable (mu)
	turnErr error         // why the last turn-on failed (mu); writes are refused meanwhile
}

// logGen is one generation: the AOF in force, or none.
type logGen struct {
	aof     *persistence.AOF // nil: off, or turning on
	base    uint64           // the AOF's frame n is ticket base+n
	turning *turnOn          // set while the AOF is being turned on
}

// turnOn is an AOF being turned on: the records appended meanwhile.
type turnOn struct {
	frames [][]server.Record // copies, in order; frame i is ticket base+1+i
	done   chan struct{}     // closed when the AOF took them, or it failed
	err    error             // why it failed; set before done is closed
}

// failedRange is a run of tickets whose records never became durable.
type failedRange struct {
	from, to uint64
	err      error
}

// newAOFLog returns the log with aof in force (nil: off).
func newAOFLog(aof *persistence.AOF) *aofLog {
	l := &aofLog{}
	l.gen.Store(&logGen{aof: aof})
	return l
}

// current is the AOF in force, nil while off or turning on.
func (l *aofLog) current() *persistence.AOF { return l.gen.Load().aof }

// turningOn reports whether the AOF is being turned on.
func (l *aofLog) turningOn() bool { return l.gen.Load().turning != nil }

// Append is server.Log's: called with the server's lock held.
func (l *aofLog) Append(recs []server.Record) uint64 {
	if g := l.gen.Load(); g.aof != nil { // the common case: no lock of ours
		return l.appendTo(g, recs)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.gen.Load() // it may have just become an AOF
	switch {
	case g.aof != nil:
		return l.appendTo(g, recs)
	case g.turning != nil:
		g.turning.frames = append(g.turning.frames, cloneRecords(recs))
		l.last++
	default:
		return 0 // off: nothing to wait for
	}
	return l.last
}

// appendTo appends recs to g's AOF. An AOF closed at shutdown answers
// every later Append with the ticket that never becomes durable.
func (l *aofLog) appendTo(g *logGen, recs []server.Record) uint64 {
	seq := g.aof.Append(recs)
	if seq == math.MaxUint64 {
		return seq
	}
	l.last = g.base + seq
	return l.last
}

// Wait is server.Log's.
func (l *aofLog) Wait(ticket uint64) error {
	for {
		g := l.gen.Load()
		switch {
		case ticket <= g.base:
			return l.settled(ticket)
		case g.aof != nil && ticket == math.MaxUint64:
			return g.aof.Wait(ticket)
		case g.aof != nil:
			return g.aof.Wait(ticket - g.base)
		case g.turning != nil:
			<-g.turning.done
			if err := g.turning.err; err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// Fsynced is server.FsyncLog's. A closed generation's Close fsynced what
// it held, so its tickets are on disk unless that failed. While an AOF is
// being turned on nothing counts: the writes made while it was off reach
// the disk only in its base.
func (l *aofLog) Fsynced(ticket uint64) bool {
	g := l.gen.Load()
	switch {
	case g.turning != nil:
		return false
	case ticket <= g.base:
		return l.settled(ticket) == nil
	case g.aof != nil:
		return g.aof.Fsynced(ticket - g.base)
	default:
		return false
	}
}

// settled is the outcome of a ticket of a closed generation.
func (l *aofLog) settled(ticket uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.failed {
		if ticket >= f.from && ticket <= f.to {
			return f.err
		}
	}
	return nil
}

// Err is server.Log's: the AOF's write error, or a failed turn-on.
func (l *aofLog) Err() error {
	if a := l.current(); a != nil {
		return a.Err()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.turnErr
}

// beginTurnOn starts holding new records for an AOF being turned on.
// Called with the server's lock held.
func (l *aofLog) beginTurnOn() *turnOn {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := &turnOn{done: make(chan struct{})}
	l.turnErr = nil
	l.gen.Store(&logGen{base: l.last, turning: t})
	return t
}

// finishTurnOn puts aof in force with the records held for it, or, when
// err is set, gives up: the held records' waits fail, and writes are
// refused until appendonly is set again.
func (l *aofLog) finishTurnOn(t *turnOn, aof *persistence.AOF, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.gen.Load()
	if err != nil {
		t.err = fmt.Errorf("turning the AOF on failed: %w (CONFIG SET appendonly no, then yes, to try again)", err)
		l.turnErr = t.err
		if l.last > g.base {
			l.failed = append(l.failed, failedRange{g.base + 1, l.last, t.err})
		}
		l.gen.Store(&logGen{base: l.last})
	} else {
		for _, recs := range t.frames {
			aof.Append(recs)
		}
		t.frames = nil
		l.gen.Store(&logGen{aof: aof, base: g.base})
	}
	close(t.done)
}

// turnOff closes the AOF in force (flushing and fsyncing what it holds)
// and leaves the log off. Called with the server's lock held, and never
// while the AOF is being turned on.
func (l *aofLog) turnOff() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.gen.Load()
	l.turnErr = nil
	l.gen.Store(&logGen{base: l.last})
	if g.aof == nil {
		return nil
	}
	err := g.aof.Close()
	if err != nil && l.last > g.base {
		l.failed = append(l.failed, failedRange{g.base + 1, l.last, err})
	}
	return err
}

// close closes the AOF in force at shutdown, after the server stopped
// appending.
func (l *aofLog) close() error {
	if a := l.current(); a != nil {
		return a.Close()
	}
	return nil
}

// cloneRecords copies records the server may reuse once Append returns.
func cloneRecords(recs []server.Record) []server.Record {
	out := make([]server.Record, len(recs))
	for i, r := range recs {
		out[i] = r
		out[i].Argv = make([][]byte, len(r.Argv))
		for j, a := range r.Argv {
			out[i].Argv[j] = slices.Clone(a)
		}
	}
	return out
}

// errTurningOn refuses to turn the AOF off, or to change its policy,
// while its base is written.
var errTurningOn = errors.New("the AOF is being turned on; try again once its base is written")

// StartAOF turns the AOF on (CONFIG SET appendonly yes), as Redis does
// with a rewrite: the keyspace frozen now becomes the base of a new AOF,
// written in the background, and the AOF opens on it with appendfsync
// policy. Until then new writes' replies wait (aofLog). The AOF left in
// the directory from an earlier run, if any, goes to quarantine: the new
// base supersedes it, but nothing proves it holds nothing else.
func (d *durability) StartAOF(policy string, freeze func(during func()) *server.Snapshot) error {
	fsync, err := persistence.ParseFsyncPolicy(policy)
	if err != nil {
		return err
	}
	stop, err := d.startJob()
	if err != nil {
		return err
	}
	var t *turnOn
	snap := freeze(func() { t = d.wal.beginTurnOn() })
	d.logger.Info("turning the AOF on: writing its base", "dir", d.aofDir())
	go func() {
		backgroundThread()
		defer d.jobs.Done()
		defer snap.Close() // a base that stops early must release the writers
		aof, err := d.openOnBase(snap, fsync, stop)
		d.wal.finishTurnOn(t, aof, err)
		if err != nil {
			d.logger.Error("turning the AOF on failed; writes are refused until appendonly is set again", "err", err)
			return
		}
		d.logger.Info("the AOF is on", "dir", d.aofDir(), "appendfsync", policy)
	}()
	return nil
}

// openOnBase writes snap as the base of a new AOF and opens it.
func (d *durability) openOnBase(snap *server.Snapshot, fsync persistence.FsyncPolicy, stop <-chan struct{}) (*persistence.AOF, error) {
	err := persistence.InstallAOFBase(persistence.RestoreOptions{
		Dir: d.cfg.Dir, AOFDir: d.aofDir(), AOFName: d.cfg.AppendFileName, Quarantine: quarantineDir(d.cfg.Dir),
	}, func(w io.Writer) error { return d.writeRDB(stoppableWriter{w, stop}, snap, true) })
	if err != nil {
		return nil, err
	}
	aof, err := d.openAOF(fsync)
	if err != nil {
		return nil, err
	}
	skipBase := func(io.Reader) error { return nil } // it is the keyspace we have
	noRecords := func([]server.Record) error { return errors.New("the new AOF's increment is not empty") }
	if _, err = aof.Load(skipBase, noRecords); err == nil {
		err = aof.Start()
	}
	if err != nil {
		aof.Close()
		return nil, err
	}
	return aof, nil
}

// StopAOF turns the AOF off (CONFIG SET appendonly no): what it holds is
// written and fsync'd, and its files stay, as Redis leaves them.
func (d *durability) StopAOF() error {
	if d.wal.turningOn() {
		return errTurningOn
	}
	if a := d.wal.current(); a != nil && a.Rewriting() {
		return server.ErrRewriteInProgress
	}
	if err := d.wal.turnOff(); err != nil {
		return err
	}
	d.logger.Info("the AOF is off")
	return nil
}

// SetAppendFsync changes the running AOF's appendfsync policy.
func (d *durability) SetAppendFsync(policy string) error {
	fsync, err := persistence.ParseFsyncPolicy(policy)
	if err != nil {
		return err
	}
	if d.wal.turningOn() {
		return errTurningOn // it opens with the policy it was given
	}
	if a := d.wal.current(); a != nil {
		return a.SetFsync(fsync)
	}
	return nil
}
