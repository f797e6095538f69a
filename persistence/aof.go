package persistence

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redstream/redstream/server"
)

// FsyncPolicy is appendfsync: when written records reach the disk.
type FsyncPolicy int

// The appendfsync policies. A reply always waits until its record is
// written to the file; with Always it also waits for the fsync.
const (
	FsyncEverysec FsyncPolicy = iota // fsync once a second in the background
	FsyncAlways                      // fsync before replying (group commit)
	FsyncNo                          // leave flushing to the OS
)

// ParseFsyncPolicy parses appendfsync's values.
func ParseFsyncPolicy(s string) (FsyncPolicy, error) {
	switch s {
	case "always":
		return FsyncAlways, nil
	case "everysec":
		return FsyncEverysec, nil
	case "no":
		return FsyncNo, nil
	}
	return 0, fmt.Errorf("persistence: appendfsync must be always, everysec or no, not %q", s)
}

// AOFOptions configure an append-only file.
type AOFOptions struct {
	Dir      string // appenddirname, under the data dir
	Name     string // appendfilename: the prefix of every file
	Fsync    FsyncPolicy
	FS       FS // nil: the real file system
	Logger   *slog.Logger
	Truncate bool // aof-load-truncated: cut a torn tail instead of refusing
	// Quarantine is where leftover files and cut-off bytes are moved
	// instead of being deleted; "" means a "quarantine" folder in Dir.
	Quarantine string
}

// ErrClosed is returned for records appended after Close.
var ErrClosed = errors.New("persistence: AOF is closed")

// AOF is the append-only file. It implements server.Log: Append queues
// the records of one command as a frame and returns a ticket. Group
// commit is leader-based: the first client goroutine to Wait while nobody
// is writing becomes the leader and writes everything queued — every
// client's frames — in one write(2) and, under appendfsync always, one
// fsync; the others wait for it and the next leader takes what queued
// meanwhile. Before its round a leader lets more frames queue: under
// always it first lingers for the clients the last fsync released
// (linger); under every policy it then lets the goroutines that are
// ready to run go first (gather). So many clients cost one fsync a batch,
// and no reply waits for a hand-off to another goroutine. A background
// goroutine writes frames nobody waits for (active expiry), fsyncs every
// second under everysec — beside the writes, as Redis's background thread
// does — and retries after errors.
type AOF struct {
	opt   AOFOptions
	fs    FS
	fsync atomic.Int32 // the FsyncPolicy in force (SetFsync changes it)

	mu       sync.Mutex
	cond     *sync.Cond
	pending  []byte // frames queued, not yet written
	spare    []byte
	scratch  []byte
	appended uint64 // frames queued so far
	written  uint64 // frames written to the file
	synced   uint64 // frames fsynced
	// durableTo is how many frames are durable under the policy (done),
	// published for Wait's lock-free fast path: every reply that may
	// show a write waits for it, reads included.
	durableTo atomic.Uint64
	err       error  // the last write error; cleared by a successful write
	syncErr   error  // the last background fsync error; cleared by a successful one
	failedTo  uint64 // frames up to this one were in the write that failed
	failures  int    // write or switch failures so far
	closed    bool
	stats     AOFStats

	rotations []rotation // increment switches queued by Rotate, oldest first
	nextSeq   int64      // sequence number for the next file
	incrBytes int64      // bytes in every increment the manifest lists
	curBytes  int64      // bytes in the increment being written (the writer's size, published)
	baseBytes int64      // bytes in the base file
	// growthBase is the AOF's size at the last start or rewrite (Redis's
	// aof_rewrite_base_size): auto-aof-rewrite measures growth from it.
	growthBase int64
	rewriting  bool
	leader     bool // a goroutine is writing (or switching files); others wait
	open       bool // the file accepts writes (Start to Close)

	// Owned by the leader of the moment (handed over under mu).
	size       int64 // bytes of whole frames in the current increment
	filledTo   int64 // under always, the file is filled up to here (preallocate)
	cannotFill bool  // preallocating failed (a full disk): not again for this file
	// file is replaced only by a file switch, under fileMu's write lock;
	// writes and fsyncs hold its read lock, so they may overlap.
	fileMu sync.RWMutex
	file   File

	waiting []waiter // clients parked in Wait

	// Lingering (appendfsync always): the next round waits, briefly, for
	// the clients the last round released to queue their next frames.
	lastSync time.Duration // how long the last round's write and fsync took

	background sync.WaitGroup // fsyncs of replaced increments (rotateFile)

	manifestMu sync.Mutex // orders manifest rewrites (writer and rewrite)
	manifest   manifest
	kick       chan struct{}
	stop       chan struct{}
	stopped    chan struct{}
}

// AOFStats are the INFO persistence fields the AOF reports.
type AOFStats struct {
	LastWriteOK   bool
	LastWriteErr  string
	CurrentSize   int64
	BaseSize      int64
	DelayedFsyncs int64
}

func (a *AOF) manifestPath() string { return filepath.Join(a.opt.Dir, a.opt.Name+".manifest") }

// OpenAOF opens (or creates) the AOF in opt.Dir. Call Load before
// Start to replay what it holds.
//
// It changes nothing it cannot prove safe to change: the manifest must
// agree with the directory (validate), files it does not list are moved
// into the quarantine folder only when it proves them leftovers
// (aof_dir.go), and anything else is refused with an ErrManifest that
// names the file and the repair command. A directory without a manifest
// gets a new one only when it holds no data of ours.
func OpenAOF(opt AOFOptions) (*AOF, error) {
	if opt.FS == nil {
		opt.FS = OSFS{}
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Quarantine == "" {
		opt.Quarantine = filepath.Join(opt.Dir, "quarantine")
	}
	a := &AOF{opt: opt, fs: opt.FS, kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	a.cond = sync.NewCond(&a.mu)
	a.fsync.Store(int32(opt.Fsync))
	a.stats.LastWriteOK = true
	if err := mkdirDurable(a.fs, opt.Dir); err != nil {
		return nil, fmt.Errorf("persistence: creating %s: %w", opt.Dir, err)
	}
	d, err := scanAOFDir(a.fs, opt.Dir, opt.Name)
	if err != nil {
		return nil, err
	}
	m, found, err := readManifest(a.fs, a.manifestPath())
	switch {
	case err != nil:
		return nil, a.refuse(err)
	case !found:
		m, err = a.createManifest(d)
	default:
		err = a.adoptManifest(m, d)
	}
	if err != nil {
		return nil, err
	}
	if len(m.incrs) == 0 { // a base alone: appends need an increment after it
		seq := max(m.nextSeq(), d.maxSeq+1)
		m.incrs = []aofFile{{name: incrName(opt.Name, seq), seq: seq}}
		if err := a.createIncr(m.incrs[0].name); err != nil {
			return nil, err
		}
		if err := writeFileAtomic(a.fs, a.manifestPath(), m.encode()); err != nil {
			return nil, fmt.Errorf("persistence: writing %s: %w", a.manifestPath(), err)
		}
	}
	a.manifest = m
	a.nextSeq = max(m.nextSeq(), d.maxSeq+1)
	return a, nil
}

// RepairCommand is the command that repairs the AOF in dir, for error
// messages.
func RepairCommand(dir, name string) string {
	cmd := "redstream aof check " + dir + " --fix"
	if name != DefaultAOFName {
		cmd += " --name " + name
	}
	return cmd
}

// DefaultAOFName is appendfilename's default.
const DefaultAOFName = "appendonly.aof"

// refuse wraps a manifest problem with the manifest's path and the way to
// repair it.
func (a *AOF) refuse(problem error) error {
	if !errors.Is(problem, ErrManifest) {
		problem = fmt.Errorf("%w: %w", ErrManifest, problem)
	}
	return fmt.Errorf("%w\n  manifest: %s\n  nothing was changed; to rebuild the manifest from the files present: %s",
		problem, a.manifestPath(), RepairCommand(a.opt.Dir, a.opt.Name))
}

// createManifest starts an AOF in a directory without a manifest. If the
// directory holds data of ours (or another appendfilename's manifest),
// the manifest was lost, not never written: refuse rather than start
// empty beside it. Empty increments and temporary files are what a crash
// during an earlier first start leaves; they go to quarantine.
func (a *AOF) createManifest(d aofDir) (manifest, error) {
	if len(d.manifests) > 0 {
		return manifest{}, a.refuse(fmt.Errorf("there is no %s.manifest, but the directory holds %s: did appendfilename change? "+
			"Set it back, or move that AOF away", a.opt.Name, strings.Join(d.manifests, ", ")))
	}
	var empty []leftover
	for _, f := range d.data {
		if f.kind != 'i' || f.size != 0 {
			return manifest{}, a.refuse(fmt.Errorf("there is no manifest, but the directory holds %s (and %d more AOF files)",
				f.name, len(d.data)-1))
		}
		empty = append(empty, leftover{f.name, "an empty increment from a start that never wrote its manifest"})
	}
	for _, t := range d.temps {
		empty = append(empty, leftover{t, "a temporary file whose write never finished"})
	}
	if err := a.quarantineAll(empty); err != nil {
		return manifest{}, err
	}
	seq := d.maxSeq + 1
	m := manifest{incrs: []aofFile{{name: incrName(a.opt.Name, seq), seq: seq}}}
	if err := a.createIncr(m.incrs[0].name); err != nil {
		return manifest{}, err
	}
	if err := writeFileAtomic(a.fs, a.manifestPath(), m.encode()); err != nil {
		return manifest{}, fmt.Errorf("persistence: writing %s: %w", a.manifestPath(), err)
	}
	return m, nil
}

// adoptManifest checks m against the directory and moves the leftovers
// it proves into quarantine.
func (a *AOF) adoptManifest(m manifest, d aofDir) error {
	if err := m.validate(a.opt.Name, d.has); err != nil {
		return a.refuse(err)
	}
	lefts, err := d.leftovers(m)
	if err != nil {
		return a.refuse(err)
	}
	return a.quarantineAll(lefts)
}

func (a *AOF) quarantineAll(lefts []leftover) error {
	for _, l := range lefts {
		to, err := quarantine(a.fs, a.opt.Dir, a.opt.Quarantine, l.file)
		if err != nil {
			return fmt.Errorf("persistence: moving %s into quarantine: %w", l.file, err)
		}
		a.opt.Logger.Warn("AOF: moved a leftover file into quarantine", "file", l.file, "why", l.why, "to", to)
	}
	return nil
}

// createIncr creates an empty increment and makes its name durable, so
// that a manifest listing it never names a missing file.
func (a *AOF) createIncr(name string) error {
	path := filepath.Join(a.opt.Dir, name)
	f, err := a.fs.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("persistence: creating %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return a.fs.SyncDir(a.opt.Dir)
}

// Start opens the newest increment for appending and starts the writer.
// Everything Load replayed must be loaded first.
func (a *AOF) Start() error {
	path := filepath.Join(a.opt.Dir, a.manifest.lastIncr().name)
	f, err := a.fs.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("persistence: opening %s: %w", path, err)
	}
	st, err := f.Stat()
	if err == nil {
		_, err = f.Seek(st.Size(), io.SeekStart) // writes go on at the end (Load cut any fill)
	}
	if err != nil {
		f.Close()
		return err
	}
	a.file, a.size, a.filledTo = f, st.Size(), st.Size()
	a.curBytes = a.size
	a.stats.CurrentSize = a.size
	a.open = true
	go a.writer()
	return nil
}

// Append queues recs as one frame and returns its ticket for Wait. It is
// called with the server's lock held, so it only copies bytes and never
// does I/O (and allocates nothing once its buffers have grown).
func (a *AOF) Append(recs []server.Record) uint64 {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return math.MaxUint64 // Wait reports ErrClosed
	}
	a.pending, a.scratch = appendFrame(a.pending, a.scratch, recs)
	a.appended++
	seq := a.appended
	a.mu.Unlock()
	return seq
}

// Wait blocks until frame seq is written (and fsynced under always), or
// returns the write error that keeps it from being so.
func (a *AOF) Wait(seq uint64) error {
	if seq <= a.durableTo.Load() {
		return nil // most readers' case: what they saw is durable already
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		switch {
		case a.done(seq):
			return nil
		case a.err != nil && seq <= a.failedTo: // our frame was in the failed write
			return a.err
		case !a.leader && a.open:
			a.lead() // nobody is writing: write everyone's frames ourselves
			continue
		case !a.open:
			return ErrClosed
		}
		// Park until notify says our frame is durable, or that we are to
		// lead the next round: only those goroutines wake, not every
		// waiting client at every round.
		ch := signalPool.Get().(chan struct{})
		a.waiting = append(a.waiting, waiter{seq: seq, ch: ch})
		a.mu.Unlock()
		<-ch
		signalPool.Put(ch)
		a.mu.Lock()
	}
}

// waiter is a client parked in Wait.
type waiter struct {
	seq uint64
	ch  chan struct{} // buffered: notify never blocks
}

var signalPool = sync.Pool{New: func() any { return make(chan struct{}, 1) }}

// Fsynced reports whether frame seq, and every frame before it, is
// fsynced, whatever the policy (WAITAOF): under everysec a frame is
// durable once written but on disk only after the next second's fsync,
// and under no only when a file switch or Close fsyncs it.
func (a *AOF) Fsynced(seq uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.synced >= seq
}

// policy is the appendfsync policy in force.
func (a *AOF) policy() FsyncPolicy { return FsyncPolicy(a.fsync.Load()) }

// SetFsync changes appendfsync while the AOF runs (CONFIG SET
// appendfsync). It takes the lead, so that no round straddles the change.
// Switching to always first fsyncs everything written: under always a
// frame counts as durable only once fsync'd, and a round fsyncs only the
// file it writes, so frames written under everysec or no would otherwise
// never count. If that fsync fails, the policy stays as it was.
func (a *AOF) SetFsync(p FsyncPolicy) error {
	a.mu.Lock()
	for a.leader {
		a.cond.Wait()
	}
	if !a.open {
		a.fsync.Store(int32(p))
		a.mu.Unlock()
		return nil
	}
	a.leader = true
	written := a.written
	a.mu.Unlock()
	var err error
	if p == FsyncAlways && a.policy() != FsyncAlways {
		a.background.Wait() // the fsyncs of increments a rotation left behind
		a.fileMu.RLock()
		err = syncData(a.file)
		a.fileMu.RUnlock()
	}
	a.mu.Lock()
	if err == nil {
		if p == FsyncAlways {
			a.synced = max(a.synced, written)
		}
		a.fsync.Store(int32(p))
	}
	a.leader = false
	a.publishDurable()
	a.notify()
	a.mu.Unlock()
	if err != nil {
		return fmt.Errorf("persistence: fsyncing the AOF before appendfsync always: %w", err)
	}
	return nil
}

// publishDurable publishes how far frames are durable. a.mu must be held.
func (a *AOF) publishDurable() {
	if a.policy() == FsyncAlways {
		a.durableTo.Store(a.synced)
	} else {
		a.durableTo.Store(a.written)
	}
}

// done reports whether frame seq is durable under the policy. a.mu must
// be held.
func (a *AOF) done(seq uint64) bool {
	if a.policy() == FsyncAlways {
		return a.synced >= seq
	}
	return a.written >= seq
}

// notify wakes the parked clients that can go on — their frame durable
// or failed, or the file closed — and, when nobody is writing, one more to
// lead the next round; and it wakes the internal waiters on cond. a.mu
// must be held.
func (a *AOF) notify() {
	a.cond.Broadcast()
	kept := a.waiting[:0]
	leading := a.leader
	for _, w := range a.waiting {
		switch {
		case a.done(w.seq), a.err != nil && w.seq <= a.failedTo, !a.open:
			w.ch <- struct{}{}
		case !leading && len(a.pending) > 0:
			w.ch <- struct{}{} // it finds no leader and writes the next round
			leading = true
		default:
			kept = append(kept, w)
		}
	}
	clear(a.waiting[len(kept):])
	a.waiting = kept
}

// lead makes the caller the writer for one round: what is queued now is
// written (and fsynced under always), or the due file switch made. Frames
// that queue meanwhile go to the next leader, so no client's reply waits
// for more than its own round. a.mu must be held; it is released for the
// I/O and held again on return.
func (a *AOF) lead() {
	a.leader = true
	a.mu.Unlock()
	a.flushOnce()
	a.preallocate() // still leading: no round writes meanwhile
	a.mu.Lock()
	a.leader = false
	a.notify()
}

// holdPBelow: a round's fdatasync keeps its P (syncDataHoldingP) while
// the last round took less than this. A slower disk gets the usual
// system call, which lets the P run other goroutines during the wait.
const holdPBelow = time.Millisecond

// preallocChunk is how far an fsync-always increment is filled ahead of
// its data.
const preallocChunk = 1 << 20

// preallocate keeps an fsync-always increment written with fill (see
// fillPattern in aof_frame.go), and fsync'd, a chunk ahead of its data. A
// round's write then lands inside the file: its fdatasync writes the data
// pages and no metadata (neither size nor block allocation changed),
// which on ext4 skips the journal commit and took about a third off every
// fsync (0.26 to 0.17 ms, alone on this machine). Fill running to the end
// of the file is a loader's clean end (frameReader); Load and Close cut it
// off. The fill is a pattern, not zeros, so that zeros where frames were
// (a disk that lost fsync'd data) are never mistaken for it. Called by the
// leader after its round's clients are released, so the extension (once
// a chunk) delays only the leader's own reply. A failure (a full disk)
// just stops it for this file.
func (a *AOF) preallocate() {
	if a.policy() != FsyncAlways || a.cannotFill || a.filledTo-a.size >= preallocChunk/2 {
		return
	}
	from := max(a.filledTo, a.size)
	a.fileMu.RLock()
	_, err := a.file.WriteAt(fillAt(from, preallocChunk), from)
	if err == nil {
		err = syncData(a.file)
	}
	a.fileMu.RUnlock()
	if err != nil {
		a.cannotFill = true
		a.opt.Logger.Info("AOF: cannot preallocate the increment; writing without", "err", err)
		return
	}
	a.filledTo = from + preallocChunk
}

// flushAll leads rounds until nothing is queued, or until a round fails
// (the next tick retries).
func (a *AOF) flushAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.open && (len(a.pending) > 0 || len(a.rotations) > 0) {
		if a.leader {
			a.cond.Wait()
			continue
		}
		failures := a.failures
		a.lead()
		if a.failures != failures {
			return
		}
	}
}

// Err reports a write error that has not been recovered from; while it
// is set the server refuses writes (MISCONF), as Redis does.
func (a *AOF) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	return a.syncErr
}

// Stats returns the AOF's INFO fields.
func (a *AOF) Stats() AOFStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// writer writes queued frames until Close, fsyncing per the policy.
func (a *AOF) writer() {
	defer close(a.stopped)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastSync := time.Now()
	for {
		select {
		case <-a.kick: // a file switch is due
			a.flushAll()
		case <-tick.C:
			a.flushAll() // frames nobody waits for, and retries after errors
			if a.policy() == FsyncEverysec && time.Since(lastSync) >= time.Second {
				a.syncWritten()
				lastSync = time.Now()
			}
		case <-a.stop:
			a.flushAll()
			a.syncWritten()
			return
		}
	}
}

// flushOnce performs a due file switch, or writes the queued frames up to
// the next switch point (or all of them). It reports whether it did
// anything, so flush loops until nothing is left. On failure it cuts the
// file back to its last whole frame, keeps the frames queued, records the
// error and leaves the retry to the next tick: the server refuses writes
// meanwhile, and the records are written once the disk has room again.
func (a *AOF) flushOnce() bool {
	a.mu.Lock()
	if len(a.rotations) > 0 && a.rotations[0].at == 0 {
		r := a.rotations[0]
		a.mu.Unlock()
		return a.rotateFile(r)
	}
	if len(a.pending) == 0 {
		a.mu.Unlock()
		return false
	}
	cut, upto := len(a.pending), a.appended
	if len(a.rotations) > 0 {
		cut, upto = a.rotations[0].at, a.rotations[0].frame
	}
	// Swap buffers: appends continue into the spare while buf is written.
	// The spare is handed out once; buf becomes the spare after the write.
	buf := a.pending[:cut]
	a.pending, a.spare = append(a.spare[:0], a.pending[cut:]...), nil
	for i := range a.rotations {
		a.rotations[i].at -= cut
	}
	holdP := a.lastSync < holdPBelow && runtime.GOMAXPROCS(0) > 1
	a.mu.Unlock()
	a.fileMu.RLock()
	began := time.Now()
	n, err := a.file.WriteAt(buf, a.size) // at the end of the whole frames, whatever a failed write left
	switch {
	case err != nil || a.policy() != FsyncAlways:
	case holdP:
		err = syncDataHoldingP(a.file)
	default:
		err = syncData(a.file)
	}
	took := time.Since(began)
	a.fileMu.RUnlock()
	if err != nil {
		a.failed(buf, n, err)
		return false
	}
	a.size += int64(n)
	a.mu.Lock()
	a.lastSync = took
	a.written = upto
	if a.policy() == FsyncAlways {
		a.synced = upto
	}
	a.publishDurable()
	a.incrBytes += int64(n)
	a.curBytes = a.size
	a.recovered()
	a.spare = buf[:0]
	a.notify()
	a.mu.Unlock()
	return true
}

// failed handles a write or fsync error: nothing from buf counts as
// written, the partial write is cut off, and buf goes back to the front of
// the queue. If the cut fails too, what the write left stays, but harms
// nothing: the retry writes the same bytes, from the same offset, over it.
func (a *AOF) failed(buf []byte, n int, err error) {
	if n > 0 {
		a.fileMu.RLock()
		terr := a.file.Truncate(a.size) // the fill goes too
		a.fileMu.RUnlock()
		if terr != nil {
			a.opt.Logger.Error("AOF: cannot cut a partial write", "err", terr)
		} else {
			a.filledTo = a.size
		}
	}
	a.mu.Lock()
	a.pending = append(buf, a.pending...)
	for i := range a.rotations {
		a.rotations[i].at += len(buf)
	}
	if a.err == nil {
		a.opt.Logger.Error("AOF write failed; refusing writes until it succeeds", "err", err)
	}
	a.err = fmt.Errorf("persistence: writing the AOF: %w", err)
	// Every frame queued now waits behind the failed ones (a file is
	// written in order), so every wait for them fails now; the writer
	// retries on its tick. Waiting on instead would retry in a loop.
	a.failedTo = a.appended
	a.failures++
	a.stats.LastWriteOK, a.stats.LastWriteErr = false, err.Error()
	a.notify()
	a.mu.Unlock()
}

// recovered clears the error after a successful write. a.mu must be held.
func (a *AOF) recovered() {
	if a.err != nil {
		a.opt.Logger.Warn("AOF write succeeded again; accepting writes")
	}
	a.err = nil
	a.stats.LastWriteOK, a.stats.LastWriteErr = true, ""
	a.stats.CurrentSize = a.size
}

// syncWritten fsyncs what has been written (everysec and shutdown). A
// failure is kept in syncErr, which refuses writes (MISCONF, as Redis
// does when its background fsync fails) until an fsync succeeds.
func (a *AOF) syncWritten() {
	a.mu.Lock()
	target, synced := a.written, a.synced
	a.mu.Unlock()
	if target == synced {
		return
	}
	a.fileMu.RLock()
	err := syncData(a.file) // beside the leader's writes: both hold the read lock
	a.fileMu.RUnlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		if a.syncErr == nil {
			a.opt.Logger.Error("AOF fsync failed; refusing writes until one succeeds", "err", err)
		}
		a.syncErr = fmt.Errorf("persistence: fsyncing the AOF: %w", err)
		return
	}
	if a.syncErr != nil {
		a.opt.Logger.Warn("AOF fsync succeeded again; accepting writes")
	}
	a.syncErr = nil
	a.synced = max(a.synced, target) // SetFsync may have gone further meanwhile
	a.publishDurable()
	a.notify()
}

// Close writes and fsyncs everything queued and closes the file. Appends
// after Close fail with ErrClosed.
func (a *AOF) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	started := a.open
	a.mu.Unlock()
	if !started {
		return nil
	}
	close(a.stop)
	<-a.stopped
	a.background.Wait()
	a.mu.Lock()
	for a.leader { // a client may still be writing
		a.cond.Wait()
	}
	a.open = false
	a.notify()
	err := a.err
	if err == nil {
		err = a.syncErr // everysec: the last fsync failed, so the tail may not be on disk
	}
	a.mu.Unlock()
	if a.filledTo > a.size { // leave the file as long as its data
		if terr := a.file.Truncate(a.size); terr == nil {
			syncData(a.file)
		}
	}
	if cerr := a.file.Close(); err == nil {
		err = cerr
	}
	return err
}
