package persistence

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstream/redstream/server"
)

// Fault injection (issue 11 §5). faultFS wraps an FS (a memFS here),
// numbers every operation and fails the ones a rule picks: once, as a
// disk error the process lives on after, or from that operation on, as a
// process that died there (nothing it does afterwards reaches the disk).
// The table tests run a workload once cleanly to count its operations,
// then once per operation with that one failing and once with the process
// dying there; after each they take the crash images (kill -9: the page
// cache survives; power cut: only what was made durable does) and check
// that a restart loads exactly the acknowledged writes.
//
//	TestAOFFaults          the AOF workload, a fault at every operation
//	TestAOFFaultsRotate    the same at each step of the file switch, by name
//	TestAOFFaultsRewrite   the same at each step of FinishRewrite, by name
//	TestAOFFaultsTwice     a failed write whose cut fails too
//	TestRDBSaveFaults      WriteRDBFile, a fault at every operation
//	TestRestoreFaults      Restore, a fault at every operation
//	TestAOFFaultsCheckerFails  the positive control
//
// and single cases the tables found: TestAOFFaultsRotateThenIdle,
// TestAOFFaultsSwitchKeepsFailing, TestAOFFaultsCloseDuringSwitch,
// TestAOFFaultsCloseFsyncFails, TestAOFFaultsNewDirPowerCut.
//
// The AOF's background goroutines (the old increment's fsync after a
// switch) run beside the workload, so an operation's index in
// TestAOFFaults may shift by one or two between runs; the tests that
// name their steps do not depend on it.

// errInjected is the error an injected fault returns (wrapped in an
// *os.PathError naming the operation and the file).
var errInjected = errors.New("injected fault")

// opKind is a kind of file system operation faultFS counts.
type opKind string

const (
	opOpen     opKind = "open"
	opWrite    opKind = "write"
	opWriteAt  opKind = "writeAt"
	opSync     opKind = "sync"
	opTruncate opKind = "truncate"
	opRename   opKind = "rename"
	opSyncDir  opKind = "syncdir"
	opRemove   opKind = "remove"
	opMkdir    opKind = "mkdir"
	opReadDir  opKind = "readdir"
)

// fsOp is one operation in faultFS's log.
type fsOp struct {
	n      int // its index among all operations, from 1
	kind   opKind
	path   string // for a rename, "old -> new"
	failed bool
}

func (o fsOp) String() string {
	s := fmt.Sprintf("#%d %s %s", o.n, o.kind, o.path)
	if o.failed {
		s += " FAILED"
	}
	return s
}

// matcher picks operations for a faultRule.
type matcher func(kind opKind, path string) bool

// opIs matches the operations of kind on a path containing part.
func opIs(kind opKind, part string) matcher {
	return func(k opKind, p string) bool { return k == kind && strings.Contains(p, part) }
}

// after matches what m matches once trigger has matched an operation
// (later than that one). It keeps state: one per rule.
func after(trigger, m matcher) matcher {
	seen := false
	return func(k opKind, p string) bool {
		if seen {
			return m(k, p)
		}
		seen = trigger(k, p)
		return false
	}
}

// faultRule fails the nth operation match accepts (from 1; a nil match
// accepts every one). With die, every operation from that one on fails
// too: the process died there. A failing write writes half its bytes
// first (a full disk, a write a kill cut short).
type faultRule struct {
	match matcher
	nth   int
	die   bool
	seen  int
	fired int // the index of the operation it failed; 0: none yet
}

// thenFail fails the first operation m matches after first has fired: a
// second fault, such as the cut after a failed write failing too.
func thenFail(first *faultRule, m matcher) *faultRule {
	return &faultRule{nth: 1, match: func(k opKind, p string) bool { return first.fired != 0 && m(k, p) }}
}

// faultFS is an FS whose operations fail as its rules say.
type faultFS struct {
	fs    FS
	mu    sync.Mutex
	rules []*faultRule
	n     int  // operations so far
	fails int  // failed operations so far
	dead  bool // a die rule fired: everything fails
	// healed stops all failures (to let goroutines stuck retrying finish
	// once the crash images are taken).
	healed bool
	stuck  []chan error // calls bounded gave up on
	log    []fsOp
}

const maxFaultLog = 1000 // a busy retry loop can do millions of operations

// check counts an operation and says whether it fails, and whether it is
// the one a rule picked (which a write then does half of).
func (f *faultFS) check(kind opKind, path string) (fail, first bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	switch {
	case f.healed:
	case f.dead:
		fail = true
	default:
		for _, r := range f.rules {
			if r.fired == 0 && (r.match == nil || r.match(kind, path)) {
				if r.seen++; r.seen == r.nth {
					r.fired, fail, first = f.n, true, true
					f.dead = r.die
				}
			}
		}
	}
	if fail {
		f.fails++
	}
	if len(f.log) < maxFaultLog {
		f.log = append(f.log, fsOp{n: f.n, kind: kind, path: path, failed: fail})
	}
	return fail, first
}

func (f *faultFS) heal() {
	f.mu.Lock()
	f.healed = true
	f.mu.Unlock()
}

func (f *faultFS) isDead() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dead
}

func (f *faultFS) counts() (ops, fails int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n, f.fails
}

// ops returns a copy of the operation log.
func (f *faultFS) ops() []fsOp {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

// injected lists the operations the rules picked.
func (f *faultFS) injected() []fsOp {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fsOp
	for _, o := range f.log {
		for _, r := range f.rules {
			if r.fired == o.n {
				out = append(out, o)
			}
		}
	}
	return out
}

func injectedErr(kind opKind, path string) error { return memErr(string(kind), path, errInjected) }

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if fail, _ := f.check(opOpen, name); fail {
		return nil, injectedErr(opOpen, name)
	}
	file, err := f.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *faultFS) Rename(oldpath, newpath string) error {
	if fail, _ := f.check(opRename, oldpath+" -> "+newpath); fail {
		return injectedErr(opRename, oldpath)
	}
	return f.fs.Rename(oldpath, newpath)
}

func (f *faultFS) Remove(name string) error {
	if fail, _ := f.check(opRemove, name); fail {
		return injectedErr(opRemove, name)
	}
	return f.fs.Remove(name)
}

func (f *faultFS) MkdirAll(path string, perm os.FileMode) error {
	if fail, _ := f.check(opMkdir, path); fail {
		return injectedErr(opMkdir, path)
	}
	return f.fs.MkdirAll(path, perm)
}

func (f *faultFS) ReadDir(name string) ([]os.DirEntry, error) {
	if fail, _ := f.check(opReadDir, name); fail {
		return nil, injectedErr(opReadDir, name)
	}
	return f.fs.ReadDir(name)
}

func (f *faultFS) SyncDir(dir string) error {
	if fail, _ := f.check(opSyncDir, dir); fail {
		return injectedErr(opSyncDir, dir)
	}
	return f.fs.SyncDir(dir)
}

type faultFile struct {
	File
	fs   *faultFS
	name string
}

func (f *faultFile) Write(p []byte) (int, error) {
	if fail, first := f.fs.check(opWrite, f.name); fail {
		n := 0
		if first {
			n, _ = f.File.Write(p[:len(p)/2])
		}
		return n, injectedErr(opWrite, f.name)
	}
	return f.File.Write(p)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if fail, first := f.fs.check(opWriteAt, f.name); fail {
		n := 0
		if first {
			n, _ = f.File.WriteAt(p[:len(p)/2], off)
		}
		return n, injectedErr(opWriteAt, f.name)
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Sync() error {
	if fail, _ := f.fs.check(opSync, f.name); fail {
		return injectedErr(opSync, f.name)
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if fail, _ := f.fs.check(opTruncate, f.name); fail {
		return injectedErr(opTruncate, f.name)
	}
	return f.File.Truncate(size)
}

// Bounds on waiting for the code under test: a call that neither returns
// within hangTimeout nor stops retrying failed operations (spinLimit of
// them while we wait) is hung.
const (
	hangTimeout = 5 * time.Second
	spinLimit   = 500
)

// bounded runs fn and reports whether it returned; when it did not, it
// is left running (heal lets it finish).
func (f *faultFS) bounded(fn func() error) (error, bool) {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	_, fails := f.counts()
	deadline := time.NewTimer(hangTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err, true
		case <-deadline.C:
			f.giveUp(done)
			return nil, false
		case <-tick.C:
			if _, now := f.counts(); now-fails > spinLimit {
				f.giveUp(done)
				return nil, false
			}
		}
	}
}

func (f *faultFS) giveUp(done chan error) {
	f.mu.Lock()
	f.stuck = append(f.stuck, done)
	f.mu.Unlock()
}

// unstick heals the disk and waits for the calls bounded gave up on to
// return; it reports whether they all did.
func (f *faultFS) unstick() bool {
	f.heal()
	f.mu.Lock()
	stuck := f.stuck
	f.mu.Unlock()
	for _, done := range stuck {
		select {
		case <-done:
		case <-time.After(hangTimeout):
			return false
		}
	}
	return true
}

// syncBuffer collects log output from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The data directory the AOF tests use, laid out as the server does.
const (
	fDataDir    = "/data"
	fAOFDir     = "/data/appendonlydir"
	fQuarantine = "/data/quarantine"
	fName       = "appendonly.aof"
)

// The AOF workload's phases, in records ("RPUSH q <i>", i counting up).
const (
	wlFirstLife = 3 // written (and the AOF closed) before the workload starts
	wlBefore    = 5 // appended before Rotate
	wlDuring    = 3 // between Rotate and FinishRewrite
	wlAfter     = 3 // after FinishRewrite
	wlProbe     = 1_000_000
)

func qrec(i int) []server.Record {
	return []server.Record{rec(int64(i), 0, "RPUSH", "q", strconv.Itoa(i))}
}

// writeTestBase writes records as the test's base format, a line each,
// in several writes (each a counted operation).
func writeTestBase(records []int) func(w io.Writer) error {
	return func(w io.Writer) error {
		if _, err := io.WriteString(w, "test-base\n"); err != nil {
			return err
		}
		for _, i := range records {
			if _, err := fmt.Fprintf(w, "RPUSH q %d\n", i); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, "end\n")
		return err
	}
}

// loadTestBase parses what writeTestBase wrote into *got; a base cut
// short (no "end") is an error.
func loadTestBase(got *[]int) func(r io.Reader) error {
	return func(r io.Reader) error {
		sc := bufio.NewScanner(r)
		if !sc.Scan() || sc.Text() != "test-base" {
			return errors.New("test base: bad header")
		}
		for sc.Scan() {
			if sc.Text() == "end" {
				return nil
			}
			var i int
			if _, err := fmt.Sscanf(sc.Text(), "RPUSH q %d", &i); err != nil {
				return fmt.Errorf("test base: line %q: %v", sc.Text(), err)
			}
			*got = append(*got, i)
		}
		return errors.New("test base: no end line")
	}
}

func applyTestRecord(got *[]int) func([]server.Record) error {
	return PerRecord(func(r server.Record) error {
		if len(r.Argv) != 3 || string(r.Argv[0]) != "RPUSH" || string(r.Argv[1]) != "q" {
			return fmt.Errorf("unexpected record %s", recString(r))
		}
		i, err := strconv.Atoi(string(r.Argv[2]))
		if err != nil {
			return fmt.Errorf("unexpected record %s", recString(r))
		}
		*got = append(*got, i)
		return nil
	})
}

func testAOFOptions(fs FS, policy FsyncPolicy, logTo io.Writer) AOFOptions {
	if logTo == nil {
		logTo = io.Discard
	}
	return AOFOptions{Dir: fAOFDir, Name: fName, Fsync: policy, FS: fs, Truncate: true,
		Quarantine: fQuarantine, Logger: slog.New(slog.NewTextHandler(logTo, nil))}
}

// wlTorn is the record of the torn frame firstLife leaves: never
// acknowledged, so never to be loaded.
const wlTorn = 999

// firstLife returns the disk the AOF workload starts from: a data
// directory holding an AOF with records 0..wlFirstLife-1, left by a server
// killed (kill -9) in the middle of writing record wlTorn, so the
// increment ends in half its frame (under always, followed by some
// preallocated fill), and beside it the temporary file of a
// manifest write the kill interrupted. The workload's start thus cuts a
// torn tail and moves a leftover into quarantine, under faults too.
func firstLife(t *testing.T, policy FsyncPolicy) *memFS {
	t.Helper()
	mem := newMemFS()
	mem.mkdirDurable(fDataDir)
	a := startTestAOF(t, mem, policy)
	for i := range wlFirstLife {
		if err := a.Wait(a.Append(qrec(i))); err != nil {
			t.Fatal(err)
		}
	}
	img := mem.crash(crashKill)
	a.Close()
	var frames, torn []byte
	for i := range wlFirstLife {
		frames, _ = appendFrame(frames, nil, qrec(i))
	}
	torn, _ = appendFrame(nil, nil, qrec(wlTorn))
	f, err := img.OpenFile(filepath.Join(fAOFDir, fName+".1.incr.aof"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(torn[:len(torn)/2], int64(len(frames)))
	if st, _ := f.Stat(); st.Size() > 8<<10 {
		// Fill that the kill cut short too; what matters is that it
		// follows the torn frame, and a megabyte of it costs every run.
		f.Truncate(8 << 10)
	}
	f.Sync()
	f.Close()
	img.writeDurable(filepath.Join(fAOFDir, fName+".manifest.tmp"), []byte("file appendonly.aof.1.incr"))
	return img
}

// aofRun is what one run of the AOF workload did and left behind.
type aofRun struct {
	policy   FsyncPolicy
	fs       *faultFS
	a        *AOF
	log      syncBuffer
	appended int    // records 0..appended-1 were appended
	acked    []bool // acked[i]: record i's Wait returned nil
	stopped  string // why the workload stopped early ("" if it did not)
	hung     bool
	misconf  error // the AOF still refused writes after the writer's retries
	problems []string
	// lastFaults is the failed-operation count when the last Wait
	// returned: a Wait that fails with no fault since did not recover.
	lastFaults int
	closeErr   error
	images     []aofImage
}

// aofImage is a crash image to restart from.
type aofImage struct {
	name string
	fs   *memFS
	// mayLoseAcked: acknowledged records may be missing (everysec after
	// a power cut: up to a second of writes is the policy's price).
	mayLoseAcked bool
}

func (r *aofRun) problem(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// runAOFWorkload runs the AOF workload on a copy of start with rules
// injecting faults, and takes the crash images.
func runAOFWorkload(policy FsyncPolicy, start *memFS, rules ...*faultRule) *aofRun {
	mem := start.crash(crashKill) // our own copy
	r := &aofRun{policy: policy, fs: &faultFS{fs: mem, rules: rules}, appended: wlFirstLife}
	for range wlFirstLife {
		r.acked = append(r.acked, true)
	}
	r.workload()
	dead := r.fs.isDead()
	// The crash images of the running process (for a die rule, of the
	// process that died: nothing has reached the disk since).
	r.images = append(r.images,
		aofImage{name: "kill", fs: mem.crash(crashKill)},
		aofImage{name: "power", fs: mem.crash(crashPower), mayLoseAcked: policy != FsyncAlways})
	if r.misconf != nil && !dead {
		r.problem("writes are refused (MISCONF) for good after a single fault, although the writer retried: %v", r.misconf)
	}
	if dead || r.hung {
		// Let the goroutines stuck retrying finish first: Close does not
		// wait for a client's Wait.
		if !r.fs.unstick() {
			r.problem("still hung once the disk works again")
			return r
		}
	}
	if r.a == nil {
		return r
	}
	err, ok := r.fs.bounded(r.a.Close)
	if !ok {
		r.problem("Close did not return (a hang)")
		return r
	}
	r.closeErr = err
	if !dead {
		// A clean shutdown, then a restart (or a power cut, then a
		// restart): if Close said nothing failed, every acknowledged write
		// must be on disk.
		r.images = append(r.images,
			aofImage{name: "closed", fs: mem.crash(crashKill)},
			aofImage{name: "closed-power", fs: mem.crash(crashPower), mayLoseAcked: policy != FsyncAlways && err != nil})
	}
	return r
}

// workload: open and load the AOF, append, rewrite in the middle (Rotate,
// more appends, FinishRewrite), append more. It stops early where a
// server would: a start that fails, a hang, writes refused for good.
func (r *aofRun) workload() {
	a, err := OpenAOF(testAOFOptions(r.fs, r.policy, &r.log))
	if err != nil {
		r.stopped = fmt.Sprintf("OpenAOF: %v", err)
		return
	}
	r.a = a
	var loaded []int
	if _, err := a.Load(loadTestBase(&loaded), applyTestRecord(&loaded)); err != nil {
		r.stopped = fmt.Sprintf("Load: %v", err)
		return
	}
	if want := seq(0, wlFirstLife); !slices.Equal(loaded, want) {
		r.problem("the workload's own Load read %v, want %v", loaded, want)
	}
	if err := a.Start(); err != nil {
		r.stopped = fmt.Sprintf("Start: %v", err)
		return
	}
	if !r.push(wlBefore, true) {
		return
	}
	rseq, err := a.Rotate()
	if err != nil {
		r.problem("Rotate: %v", err)
		return
	}
	// The keyspace Rotate's critical section froze: every record applied
	// so far, acknowledged or not (a record whose write failed is still
	// in the keyspace, and still queued for the old increment).
	snapshot := seq(0, r.appended)
	// A write right behind Rotate: queued before the writer switches
	// files, so its Wait makes (or waits for) the switch.
	if !r.push(1, false) || !r.push(wlDuring-1, true) {
		return
	}
	err, ok := r.fs.bounded(func() error { return a.FinishRewrite(rseq, writeTestBase(snapshot)) })
	if !ok {
		r.hang("FinishRewrite")
		return
	}
	if err != nil {
		r.log.Write([]byte("test: FinishRewrite failed: " + err.Error() + "\n"))
	}
	r.push(wlAfter, true)
}

// push appends n records, waiting for each. With check it first does
// what the server does before a write: refuse it (MISCONF) while Err() is
// set, the writer retrying meanwhile. It reports whether to go on.
func (r *aofRun) push(n int, check bool) bool {
	for range n {
		if check && !r.serving() {
			return false
		}
		i := r.appended
		ticket := r.a.Append(qrec(i))
		r.appended++
		r.acked = append(r.acked, false)
		err, ok := r.fs.bounded(func() error { return r.a.Wait(ticket) })
		_, faults := r.fs.counts()
		switch {
		case !ok:
			r.hang(fmt.Sprintf("Wait for record %d", i))
			return false
		case err == nil:
			r.acked[i] = true
		case faults == r.lastFaults:
			r.problem("Wait for record %d failed with no fault since the last Wait: %v", i, err)
		}
		r.lastFaults = faults
	}
	return true
}

// serving reports whether the server would accept a write: Err() is nil,
// or becomes nil after the writer's retries (its ticks, run here rather
// than waited for). Otherwise the AOF refuses writes (MISCONF).
//
// A retry that finds the frames in the AOF's own writer goroutine's hands
// does no I/O (flushAll has nothing to write and returns): it is not one
// of the three tries, and the next comes a millisecond later, for up to
// five seconds, since on a busy machine that goroutine may wait its turn.
func (r *aofRun) serving() bool {
	deadline := time.Now().Add(5 * time.Second)
	for tries := 0; r.a.Err() != nil; {
		if tries == 3 || time.Now().After(deadline) {
			r.misconf = r.a.Err()
			r.stopped = fmt.Sprintf("writes refused (MISCONF): %v", r.misconf)
			return false
		}
		before, _ := r.fs.counts()
		if _, ok := r.fs.bounded(func() error { r.a.flushAll(); return nil }); !ok {
			r.hang("the writer's retry (flushAll)")
			return false
		}
		if after, _ := r.fs.counts(); after != before {
			tries++
		} else {
			time.Sleep(time.Millisecond) // the writer goroutine's turn; bounded by the deadline
		}
	}
	return true
}

func (r *aofRun) hang(what string) {
	r.hung = true
	r.stopped = what + " hung"
	ops, fails := r.fs.counts()
	r.problem("%s did not return (%d operations so far, %d failed): a hang; the last operations:\n%s",
		what, ops, fails, lastOps(r.fs.ops(), 6))
}

func lastOps(ops []fsOp, n int) string {
	var b strings.Builder
	for _, o := range ops[max(0, len(ops)-n):] {
		fmt.Fprintf(&b, "\t%v\n", o)
	}
	return b.String()
}

func firstOps(ops []fsOp, n int) string { return lastOps(ops[:min(n, len(ops))], n) }

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// restartAOF does what a restart on img does, with no faults: open,
// load, start; it then proves the AOF takes writes (a probe record) and
// that a second restart loads the same records and the probe. It returns
// the records of the first load.
func restartAOF(img *memFS, policy FsyncPolicy) ([]int, error) {
	type result struct {
		got []int
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := restartAOFOnce(img, policy)
		done <- result{got, err}
	}()
	select {
	case res := <-done:
		return res.got, res.err
	case <-time.After(hangTimeout):
		return nil, errors.New("the restart hung")
	}
}

func restartAOFOnce(img *memFS, policy FsyncPolicy) ([]int, error) {
	var log syncBuffer
	load := func() ([]int, *AOF, error) {
		a, err := OpenAOF(testAOFOptions(img, policy, &log))
		if err != nil {
			return nil, nil, fmt.Errorf("OpenAOF: %w", err)
		}
		var got []int
		if _, err := a.Load(loadTestBase(&got), applyTestRecord(&got)); err != nil {
			return got, nil, fmt.Errorf("Load: %w", err)
		}
		return got, a, nil
	}
	got, a, err := load()
	if err != nil {
		return got, err
	}
	if err := a.Start(); err != nil {
		return got, fmt.Errorf("Start: %w", err)
	}
	werr := a.Wait(a.Append(qrec(wlProbe)))
	if cerr := a.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return got, fmt.Errorf("writing after the restart: %w", werr)
	}
	again, _, err := load()
	if err != nil {
		return got, fmt.Errorf("second restart: %w", err)
	}
	if want := append(slices.Clone(got), wlProbe); !slices.Equal(again, want) {
		return got, fmt.Errorf("a second restart loads %v, want the first one's records and the probe: %v", again, want)
	}
	return got, nil
}

// checkLoaded compares the records a restart loaded with what the
// workload did: records 0..appended-1 were appended, acked[i] says record
// i was acknowledged. Every record at most once, in order, none never
// appended; every acknowledged one present unless mayLoseAcked, and even
// then no hole (an acknowledged record lost while a later one survived).
func checkLoaded(got []int, appended int, acked []bool, mayLoseAcked bool) []string {
	var problems []string
	seen := map[int]bool{}
	last := -1
	for pos, v := range got {
		switch {
		case v < 0 || v >= appended:
			problems = append(problems, fmt.Sprintf("record %d (position %d) was never appended", v, pos))
		case seen[v]:
			problems = append(problems, fmt.Sprintf("record %d is loaded twice", v))
		case v < last:
			problems = append(problems, fmt.Sprintf("record %d is loaded after record %d: out of order", v, last))
		}
		seen[v] = true
		last = max(last, v)
	}
	var missing, holes []int
	for i := range appended {
		switch {
		case !acked[i] || seen[i]:
		case !mayLoseAcked:
			missing = append(missing, i)
		case i < last:
			holes = append(holes, i)
		}
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("acknowledged records %v are missing", missing))
	}
	if len(holes) > 0 {
		problems = append(problems, fmt.Sprintf("acknowledged records %v are missing, yet the later record %d survived", holes, last))
	}
	return problems
}

// checkAOFRun restarts from each of r's images and reports every problem.
func checkAOFRun(t *testing.T, r *aofRun) {
	t.Helper()
	for _, p := range r.problems {
		t.Error(p)
	}
	for i, img := range r.images {
		if i > 0 && img.fs.sameAs(r.images[i-1].fs) && img.mayLoseAcked == r.images[i-1].mayLoseAcked {
			continue // a power cut that loses nothing: the restart was checked already
		}
		files := img.fs.String() // before the restart changes them
		got, err := restartAOF(img.fs, r.policy)
		if err != nil {
			t.Errorf("%s image: the restart fails: %v\nthe files:\n%s", img.name, err, files)
			continue
		}
		for _, p := range checkLoaded(got, r.appended, r.acked, img.mayLoseAcked) {
			t.Errorf("%s image: %s (loaded %v)", img.name, p, got)
		}
	}
	if t.Failed() {
		t.Logf("injected: %v; stopped: %q; close: %v; acked %v", r.fs.injected(), r.stopped, r.closeErr, r.acked)
		t.Logf("the first operations:\n%s", firstOps(r.fs.ops(), 120))
		t.Logf("AOF log:\n%s", r.log.String())
	}
}

var policyNames = map[FsyncPolicy]string{FsyncAlways: "always", FsyncEverysec: "everysec"}

// TestAOFFaults runs the AOF workload with a fault at every operation it
// does — once, and as the point where the process dies — under always
// and everysec, and checks every crash image.
func TestAOFFaults(t *testing.T) {
	for _, policy := range []FsyncPolicy{FsyncAlways, FsyncEverysec} {
		t.Run(policyNames[policy], func(t *testing.T) {
			start := firstLife(t, policy)
			clean := runAOFWorkload(policy, start)
			checkAOFRun(t, clean)
			if clean.stopped != "" || slices.Contains(clean.acked, false) {
				t.Fatalf("the clean run stopped (%q) or lost a write: %v", clean.stopped, clean.acked)
			}
			for _, want := range []string{"AOF ends with a torn write", "moved a leftover file into quarantine"} {
				if !strings.Contains(clean.log.String(), want) {
					t.Errorf("the workload's start did not log %q:\n%s", want, clean.log.String())
				}
			}
			ops := clean.fs.ops()
			t.Logf("the workload does %d operations", len(ops))
			var mu sync.Mutex
			rotateFailures, ran := map[string]bool{}, 0
			t.Run("at", func(t *testing.T) {
				for _, o := range ops {
					for _, die := range []bool{false, true} {
						mode := "once"
						if die {
							mode = "die"
						}
						t.Run(fmt.Sprintf("%s@%d_%s", mode, o.n, o.kind), func(t *testing.T) {
							t.Parallel()
							r := runAOFWorkload(policy, start, &faultRule{nth: o.n, die: die})
							checkAOFRun(t, r)
							mu.Lock()
							defer mu.Unlock()
							ran++
							if strings.Contains(r.log.String(), "cannot start a new increment") {
								for _, f := range r.fs.injected() {
									rotateFailures[string(f.kind)+" "+filepath.Base(f.path)] = true
								}
							}
						})
					}
				}
			})
			if ran < 2*len(ops) {
				return // -run picked some cases
			}
			// The rotation's failure path ran for each of its steps.
			for _, want := range []string{"open " + fName + ".2.incr.aof", "syncdir appendonlydir",
				"open " + fName + ".manifest.tmp", "write " + fName + ".manifest.tmp",
				"sync " + fName + ".manifest.tmp", "rename " + fName + ".manifest"} {
				found := false
				for got := range rotateFailures {
					found = found || strings.HasPrefix(got, want)
				}
				if !found {
					t.Errorf("no fault at %q made the file switch fail (it failed at: %v)", want, rotateFailures)
				}
			}
		})
	}
}

// faultStep names a step of the workload by a matcher for its first
// operation. The matchers keep state (after): each run makes its own.
type faultStep struct {
	name  string
	match func() matcher
}

// runFaultSteps runs the AOF workload with each step failing once, and
// with the process dying there, under both policies; check (if not nil)
// looks at each run before the common checks.
func runFaultSteps(t *testing.T, steps []faultStep, check func(t *testing.T, r *aofRun)) {
	for _, policy := range []FsyncPolicy{FsyncAlways, FsyncEverysec} {
		start := firstLife(t, policy)
		for _, s := range steps {
			for _, mode := range []string{"once", "die"} {
				t.Run(policyNames[policy]+"/"+s.name+"/"+mode, func(t *testing.T) {
					t.Parallel()
					r := runAOFWorkload(policy, start, &faultRule{match: s.match(), nth: 1, die: mode == "die"})
					if len(r.fs.injected()) == 0 {
						t.Fatalf("the fault never fired")
					}
					if check != nil {
						check(t, r)
					}
					checkAOFRun(t, r)
				})
			}
		}
	}
}

func manifestRename() matcher {
	return opIs(opRename, "-> "+filepath.Join(fAOFDir, fName+".manifest"))
}

// TestAOFFaultsRotate fails each step of the file switch Rotate asks for,
// by name, and checks that the switch's failure path ran: the new
// increment's creation, the directory fsync, the manifest's write.
func TestAOFFaultsRotate(t *testing.T) {
	incr2 := func() matcher { return opIs(opOpen, fName+".2.incr.aof") }
	then := func(m matcher) func() matcher { return func() matcher { return after(incr2(), m) } }
	runFaultSteps(t, []faultStep{
		{"open-new-incr", incr2},
		{"syncdir", then(opIs(opSyncDir, fAOFDir))},
		{"manifest-open", then(opIs(opOpen, ".manifest.tmp"))},
		{"manifest-write", then(opIs(opWrite, ".manifest.tmp"))},
		{"manifest-sync", then(opIs(opSync, ".manifest.tmp"))},
		{"manifest-rename", then(manifestRename())},
		{"manifest-syncdir", func() matcher { return after(incr2(), after(manifestRename(), opIs(opSyncDir, fAOFDir))) }},
	}, func(t *testing.T, r *aofRun) {
		if !strings.Contains(r.log.String(), "cannot start a new increment") {
			t.Errorf("the fault at %v did not make the file switch fail", r.fs.injected())
		}
	})
}

// TestAOFFaultsRewrite fails each step of FinishRewrite by name: the new
// base's write through its temporary file, the manifest's, and the
// removal of the replaced increment.
func TestAOFFaultsRewrite(t *testing.T) {
	tmp := fName + ".2.base.rdb.tmp"
	baseRename := func() matcher { return opIs(opRename, tmp+" ->") }
	then := func(m func() matcher) func() matcher { return func() matcher { return after(baseRename(), m()) } }
	runFaultSteps(t, []faultStep{
		{"base-open", func() matcher { return opIs(opOpen, tmp) }},
		{"base-write", func() matcher { return opIs(opWrite, tmp) }},
		{"base-sync", func() matcher { return opIs(opSync, tmp) }},
		{"base-rename", baseRename},
		{"base-syncdir", then(func() matcher { return opIs(opSyncDir, fAOFDir) })},
		{"manifest-open", then(func() matcher { return opIs(opOpen, ".manifest.tmp") })},
		{"manifest-write", then(func() matcher { return opIs(opWrite, ".manifest.tmp") })},
		{"manifest-sync", then(func() matcher { return opIs(opSync, ".manifest.tmp") })},
		{"manifest-rename", then(manifestRename)},
		{"manifest-syncdir", then(func() matcher { return after(manifestRename(), opIs(opSyncDir, fAOFDir)) })},
		{"remove-old-incr", func() matcher { return opIs(opRemove, fName+".1.incr.aof") }},
	}, nil)
}

// TestAOFFaultsTwice: a write (or under always its fsync) fails, and so
// does the cut of the partial write after it. The faults hit the newest
// increment after the rewrite, which no later rewrite replaces.
func TestAOFFaultsTwice(t *testing.T) {
	rewritten := opIs(opRename, fName+".2.base.rdb")
	for _, policy := range []FsyncPolicy{FsyncAlways, FsyncEverysec} {
		start := firstLife(t, policy)
		kinds := []opKind{opWriteAt} // frames are written with WriteAt at the end of the whole frames
		if policy == FsyncAlways {
			kinds = append(kinds, opSync)
		}
		for _, kind := range kinds {
			t.Run(policyNames[policy]+"/"+string(kind)+"-then-cut", func(t *testing.T) {
				first := &faultRule{match: after(rewritten, opIs(kind, ".2.incr.aof")), nth: 1}
				second := thenFail(first, opIs(opTruncate, ".incr.aof"))
				r := runAOFWorkload(policy, start, first, second)
				if len(r.fs.injected()) < 2 {
					t.Fatalf("the faults did not fire: %v", r.fs.injected())
				}
				checkAOFRun(t, r)
			})
		}
	}
}

// TestAOFFaultsCheckerFails is the positive control: the checks do fail
// when writes are lost, duplicated or reordered.
func TestAOFFaultsCheckerFails(t *testing.T) {
	t.Run("disk-drops-fsyncs", func(t *testing.T) {
		start := firstLife(t, FsyncAlways)
		// From now on an increment's fsync is a lie.
		start.dropSyncs = func(path string) bool { return strings.HasSuffix(path, ".incr.aof") }
		r := runAOFWorkload(FsyncAlways, start)
		var power *aofImage
		for i := range r.images {
			if r.images[i].name == "power" {
				power = &r.images[i]
			}
		}
		got, err := restartAOF(power.fs, FsyncAlways)
		problems := checkLoaded(got, r.appended, r.acked, false)
		if err == nil && len(problems) == 0 {
			t.Fatalf("a disk that drops fsync'd writes went unnoticed: loaded %v", got)
		}
		t.Logf("reported: %v %v", err, problems)
	})
	t.Run("checkLoaded", func(t *testing.T) {
		acked := []bool{true, true, true, false}
		if p := checkLoaded([]int{0, 1, 2}, 4, acked, false); len(p) != 0 {
			t.Fatalf("a correct load reported %v", p)
		}
		for name, c := range map[string]struct {
			got   []int
			acked []bool
			lose  bool
		}{
			"acknowledged, never waited for": {[]int{0, 1, 2}, []bool{true, true, true, true}, false},
			"twice":                          {[]int{0, 1, 1, 2}, acked, false},
			"out of order":                   {[]int{0, 2, 1}, acked, false},
			"never appended":                 {[]int{0, 1, 2, 7}, acked, false},
			"a hole":                         {[]int{0, 2}, acked, true},
		} {
			if p := checkLoaded(c.got, 4, c.acked, c.lose); len(p) == 0 {
				t.Errorf("%s: not reported", name)
			}
		}
	})
}

// TestRDBSaveFaults fails (or dies at) every step of WriteRDBFile, with
// and without an old file: afterwards the file is the old one (or absent)
// or the whole new one, never partial, and a failed save leaves no
// temporary file.
func TestRDBSaveFaults(t *testing.T) {
	const path, tmp = fDataDir + "/dump.rdb", fDataDir + "/dump.rdb.temp-1.rdb"
	old, chunks := []byte("REDIS-old-dump"), []string{"REDIS0010", "-new-", "dump-body", "-eof"}
	newData := []byte(strings.Join(chunks, ""))
	write := func(w io.Writer) error {
		for _, c := range chunks {
			if _, err := io.WriteString(w, c); err != nil {
				return err
			}
		}
		return nil
	}
	for _, withOld := range []bool{false, true} {
		start := newMemFS()
		start.mkdirDurable(fDataDir)
		name := "new"
		if withOld {
			start.writeDurable(path, old)
			name = "replace"
		}
		clean := &faultFS{fs: start.crash(crashKill)}
		if err := WriteRDBFile(clean, path, tmp, write); err != nil {
			t.Fatal(err)
		}
		for _, o := range clean.ops() {
			for _, die := range []bool{false, true} {
				mode := "once"
				if die {
					mode = "die"
				}
				t.Run(fmt.Sprintf("%s/%s@%d_%s", name, mode, o.n, o.kind), func(t *testing.T) {
					mem := start.crash(crashKill)
					ffs := &faultFS{fs: mem, rules: []*faultRule{{nth: o.n, die: die}}}
					err := WriteRDBFile(ffs, path, tmp, write)
					if err == nil && len(ffs.injected()) > 0 {
						t.Errorf("the save reported success despite the fault at %v", ffs.injected())
					}
					if !die && err != nil {
						if _, ok := mem.readFile(tmp); ok {
							t.Errorf("a failed save left %s behind", tmp)
						}
					}
					for _, k := range []crashKind{crashKill, crashPower} {
						data, ok := mem.crash(k).readFile(path)
						switch {
						case err == nil && !bytes.Equal(data, newData):
							t.Errorf("%v image after a successful save: %s holds %q, want %q", k, path, data, newData)
						case bytes.Equal(data, newData), withOld && bytes.Equal(data, old), !withOld && !ok:
						default:
							t.Errorf("%v image: %s holds %q (present %v): neither the old file nor the new one", k, path, data, ok)
						}
					}
					if t.Failed() {
						t.Logf("err %v; operations:\n%sfiles:\n%s", err, lastOps(ffs.ops(), 100), mem)
					}
				})
			}
		}
	}
}

// TestRestoreFaults fails (or dies at) every step of Restore onto a data
// directory holding an AOF and a dump: afterwards a start loads the old
// AOF or the new base, whole, and never refuses; the dump is the old or
// the new file; a successful Restore loads the new base; and running the
// restore again, without faults, succeeds.
func TestRestoreFaults(t *testing.T) {
	const dump = fDataDir + "/dump.rdb"
	oldDump := []byte("REDIS-old-dump")
	oldRecords, newRecords := seq(0, 5), []int{100, 101, 102}
	var src bytes.Buffer
	writeTestBase(newRecords)(&src)
	srcPath := filepath.Join(t.TempDir(), "new.rdb")
	if err := os.WriteFile(srcPath, src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	start := newMemFS()
	start.mkdirDurable(fDataDir)
	start.writeDurable(dump, oldDump)
	a, err := OpenAOF(testAOFOptions(start, FsyncAlways, nil))
	if err != nil {
		t.Fatal(err)
	}
	a.Load(nil, nil)
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	for _, i := range oldRecords {
		if err := a.Wait(a.Append(qrec(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	opt := func(fs FS) RestoreOptions {
		return RestoreOptions{Dir: fDataDir, DBFilename: "dump.rdb", AOFDir: fAOFDir, AOFName: fName,
			Quarantine: fQuarantine, FS: fs}
	}
	// check loads the AOF of img: the old records, or the new base (with
	// wantNew, only that); and the dump likewise.
	check := func(t *testing.T, what string, img *memFS, wantNew bool) {
		t.Helper()
		b, err := OpenAOF(testAOFOptions(img, FsyncAlways, nil))
		if err != nil {
			t.Errorf("%s: the start refuses: %v\nfiles:\n%s", what, err, img)
			return
		}
		var got []int
		if _, err := b.Load(loadTestBase(&got), applyTestRecord(&got)); err != nil {
			t.Errorf("%s: the load fails: %v\nfiles:\n%s", what, err, img)
			return
		}
		isNew := slices.Equal(got, newRecords)
		if !isNew && (wantNew || !slices.Equal(got, oldRecords)) {
			t.Errorf("%s: loaded %v, want the new base %v (or, before the restore's commit, the old data %v)\nfiles:\n%s",
				what, got, newRecords, oldRecords, img)
		}
		data, _ := img.readFile(dump)
		if !bytes.Equal(data, src.Bytes()) && (wantNew || !bytes.Equal(data, oldDump)) {
			t.Errorf("%s: %s holds %q: neither the old dump nor the new one", what, dump, data)
		}
	}

	clean := &faultFS{fs: start.crash(crashKill)}
	if err := Restore(srcPath, opt(clean)); err != nil {
		t.Fatal(err)
	}
	check(t, "clean restore", clean.fs.(*memFS), true)
	for _, o := range clean.ops() {
		for _, die := range []bool{false, true} {
			mode := "once"
			if die {
				mode = "die"
			}
			t.Run(fmt.Sprintf("%s@%d_%s", mode, o.n, o.kind), func(t *testing.T) {
				mem := start.crash(crashKill)
				ffs := &faultFS{fs: mem, rules: []*faultRule{{nth: o.n, die: die}}}
				// Restore may succeed despite a fault (it reads the old
				// manifest only for its numbering, and ignores a failure
				// to); check makes sure a success is one.
				err := Restore(srcPath, opt(ffs))
				for _, k := range []crashKind{crashKill, crashPower} {
					check(t, fmt.Sprintf("%v image", k), mem.crash(k), err == nil)
					// The operator runs the restore again.
					again := mem.crash(k)
					if err := Restore(srcPath, opt(again)); err != nil {
						t.Errorf("%v image: restoring again fails: %v", k, err)
						continue
					}
					check(t, fmt.Sprintf("%v image, restored again", k), again, true)
				}
				if t.Failed() {
					t.Logf("injected %v; err %v; operations:\n%s", ffs.injected(), err, firstOps(ffs.ops(), 120))
				}
			})
		}
	}
}

// TestAOFFaultsRotateThenIdle: the file switch fails once, with no write
// queued behind it, and succeeds when the writer retries. The AOF must
// accept writes again: while Err() is set the server refuses every write
// (MISCONF), so no new frame comes to clear it.
func TestAOFFaultsRotateThenIdle(t *testing.T) {
	start := firstLife(t, FsyncAlways)
	ffs := &faultFS{fs: start.crash(crashKill), rules: []*faultRule{{match: opIs(opOpen, fName+".2.incr.aof"), nth: 1}}}
	a := startTestAOF(t, ffs, FsyncAlways)
	defer a.Close()
	if _, err := a.Rotate(); err != nil {
		t.Fatal(err)
	}
	// The writer's kick and its retries on the next ticks, run here
	// rather than waited for.
	for range 3 {
		a.flushAll()
	}
	a.mu.Lock()
	switched := len(a.rotations) == 0
	a.mu.Unlock()
	if !switched || len(ffs.injected()) != 1 {
		t.Fatalf("the switch did not fail once and then succeed: switched %v, faults %v", switched, ffs.injected())
	}
	if err := a.Err(); err != nil {
		t.Errorf("the file switch succeeded on a retry, yet Err() = %v: the server refuses writes (MISCONF) until a frame is written, and none will be", err)
	}
}

// TestAOFFaultsNewDirPowerCut: the first start creates appenddirname. A
// write acknowledged under always must survive a power cut, so the new
// directory's own entry must be durable too (an fsync of its parent).
func TestAOFFaultsNewDirPowerCut(t *testing.T) {
	mem := newMemFS()
	mem.mkdirDurable(fDataDir)
	a := startTestAOF(t, mem, FsyncAlways)
	if err := a.Wait(a.Append(qrec(0))); err != nil {
		t.Fatal(err)
	}
	img := mem.crash(crashPower)
	a.Close()
	files := img.String()
	got, err := restartAOF(img, FsyncAlways)
	if err != nil || !slices.Equal(got, []int{0}) {
		t.Errorf("after a power cut the restart loads %v (%v), want the acknowledged record 0\nthe files the power cut left:\n%s", got, err, files)
	}
}

// gateFS holds the first OpenFile of a path ending in at until release
// is closed, having closed reached.
type gateFS struct {
	FS
	at               string
	reached, release chan struct{}
	once             sync.Once
}

func (g *gateFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if strings.HasSuffix(name, g.at) {
		g.once.Do(func() { close(g.reached); <-g.release })
	}
	return g.FS.OpenFile(name, flag, perm)
}

// TestAOFFaultsCloseDuringSwitch: shutting down while the writer is in
// the middle of the file switch a rewrite asked for. Close must wait for
// it (under -race: without touching the file it replaces), and a restart
// must load everything.
func TestAOFFaultsCloseDuringSwitch(t *testing.T) {
	start := firstLife(t, FsyncAlways)
	mem := start.crash(crashKill)
	g := &gateFS{FS: mem, at: fName + ".2.incr.aof", reached: make(chan struct{}), release: make(chan struct{})}
	a := startTestAOF(t, g, FsyncAlways)
	if _, err := a.Rotate(); err != nil { // the writer starts the switch, and stops at the gate
		t.Fatal(err)
	}
	select {
	case <-g.reached:
	case <-time.After(hangTimeout):
		t.Fatal("the writer never started the file switch")
	}
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	time.Sleep(20 * time.Millisecond) // Close gets as far as waiting for the writer
	close(g.release)
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(hangTimeout):
		t.Fatal("Close hung")
	}
	got, err := restartAOF(mem, FsyncAlways)
	if want := seq(0, wlFirstLife); err != nil || !slices.Equal(got, want) {
		t.Errorf("the restart loads %v (%v), want %v", got, err, want)
	}
}

// TestAOFFaultsCloseFsyncFails: under everysec, Close's last fsync fails.
// A Close that returns nil promises that every acknowledged write is on
// disk, so a power cut after it must lose none.
func TestAOFFaultsCloseFsyncFails(t *testing.T) {
	start := firstLife(t, FsyncEverysec)
	mem := start.crash(crashKill)
	var closing atomic.Bool
	ffs := &faultFS{fs: mem, rules: []*faultRule{{nth: 1, match: func(k opKind, _ string) bool { return k == opSync && closing.Load() }}}}
	a := startTestAOF(t, ffs, FsyncEverysec)
	want := seq(0, wlFirstLife+3)
	for _, i := range want[wlFirstLife:] {
		if err := a.Wait(a.Append(qrec(i))); err != nil {
			t.Fatal(err)
		}
	}
	closing.Store(true)
	cerr := a.Close()
	if len(ffs.injected()) != 1 {
		t.Fatalf("Close did no fsync to fail: %v", ffs.ops())
	}
	img := mem.crash(crashPower)
	files := img.String()
	got, err := restartAOF(img, FsyncEverysec)
	if cerr == nil && (err != nil || !slices.Equal(got, want)) {
		t.Errorf("Close returned nil although its fsync (%v) failed; after a power cut the restart loads %v (%v), want %v\nthe files:\n%s",
			ffs.injected(), got, err, want, files)
	}
}

// TestAOFFaultsSwitchKeepsFailing: after Rotate the disk fails for good
// (full, or gone). A client waiting for a record queued behind the file
// switch must get an error (the server then answers MISCONF) rather than
// wait for ever, and Close must return.
func TestAOFFaultsSwitchKeepsFailing(t *testing.T) {
	start := firstLife(t, FsyncAlways)
	ffs := &faultFS{fs: start.crash(crashKill), rules: []*faultRule{{match: opIs(opOpen, fName+".2.incr.aof"), nth: 1, die: true}}}
	a := startTestAOF(t, ffs, FsyncAlways)
	if _, err := a.Rotate(); err != nil {
		t.Fatal(err)
	}
	ticket := a.Append(qrec(wlFirstLife))
	err, ok := ffs.bounded(func() error { return a.Wait(ticket) })
	switch _, fails := ffs.counts(); {
	case !ok:
		t.Errorf("Wait for a record behind the failing switch never returns: it retried %d failed operations meanwhile", fails)
	case err == nil:
		t.Errorf("Wait returned nil for a record that cannot be written")
	}
	if _, ok := ffs.bounded(a.Close); !ok {
		_, fails := ffs.counts()
		t.Errorf("Close does not return while the switch keeps failing (%d failed operations so far)", fails)
	}
	if !ffs.unstick() {
		t.Fatal("still hung once the disk works again")
	}
}

// startTestAOF opens, loads (checking what it holds parses) and starts
// the AOF on fs, failing the test if any step fails.
func startTestAOF(t *testing.T, fs FS, policy FsyncPolicy) *AOF {
	t.Helper()
	a, err := OpenAOF(testAOFOptions(fs, policy, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Load(nil, applyTestRecord(new([]int))); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	return a
}
