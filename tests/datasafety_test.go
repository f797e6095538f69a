package tests

// Black-box tests for issue 11: the ways an acknowledged write could be
// lost, or data deleted, outside the write path itself.
//
//  1. One process per data directory: a second server, snapshot restore
//     and aof check --fix refuse while a server uses the directory.
//  2. Startup never deletes what it does not understand: a bad manifest,
//     or a changed appendfilename, refuses the start and changes nothing.
//  3. Damage in the middle of an increment is not a torn tail: it refuses
//     the start; aof check --fix cuts it, keeping the cut bytes.
//  4. Two saves never share a file: a shutdown during BGSAVE saves once,
//     whole; a shutdown whose save fails says so.

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// dsBuffer collects a process's output; safe to read while it runs.
type dsBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *dsBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *dsBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// dsAttempt is how a redstream start that is expected to be refused went.
type dsAttempt struct {
	args  []string
	out   string // what it printed
	code  int    // its exit status (-1: killed)
	ready bool   // it became ready to accept connections, and was killed
}

// dsTryStart runs the redstream binary with args and waits until it exits
// or becomes ready to accept connections, in which case it is killed.
// logfile, if not "", is where it logs: it is watched for the ready line
// too.
func dsTryStart(t *testing.T, logfile string, args ...string) dsAttempt {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	var out dsBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	logged := func() string {
		s := out.String()
		if logfile != "" {
			b, _ := os.ReadFile(logfile)
			s += string(b)
		}
		return s
	}
	// No notification comes for a line in logfile: poll, with a deadline.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	a := dsAttempt{args: args}
	for {
		select {
		case <-done:
			a.out, a.code = out.String(), cmd.ProcessState.ExitCode()
			return a
		case <-tick.C:
			if readyLine.MatchString(logged()) {
				_ = cmd.Process.Kill()
				<-done
				a.out, a.code, a.ready = out.String(), cmd.ProcessState.ExitCode(), true
				return a
			}
		case <-deadline.C:
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("redstream %q neither exited nor became ready in 30s:\n%s", args, logged())
		}
	}
}

// dsExpectRefused checks that an attempt exited non-zero without becoming
// ready, saying each of wants.
func dsExpectRefused(t *testing.T, what string, a dsAttempt, wants ...string) {
	t.Helper()
	if a.ready {
		t.Errorf("%s: redstream %q started (it became ready; killed); want it refused:\n%s", what, a.args, a.out)
		return
	}
	if a.code == 0 {
		t.Errorf("%s: redstream %q exited 0; want a non-zero status:\n%s", what, a.args, a.out)
	}
	for _, w := range wants {
		if !strings.Contains(a.out, w) {
			t.Errorf("%s: the refusal does not say %q:\n%s", what, w, a.out)
		}
	}
	if strings.Contains(a.out, "DATA RACE") || strings.Contains(a.out, "panic:") {
		t.Errorf("%s: redstream reported a problem:\n%s", what, a.out)
	}
}

// dsFiles reads every regular file directly in dir: name to content.
func dsFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return files
}

// dsDiffFiles describes how got differs from want ("" when it does not).
func dsDiffFiles(want, got map[string]string) string {
	var diffs []string
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			diffs = append(diffs, name+" is gone")
		case g != w:
			diffs = append(diffs, fmt.Sprintf("%s changed (%d bytes, was %d)", name, len(g), len(w)))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			diffs = append(diffs, name+" appeared")
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}

// dsTree lists every path under dir (relative), directories included.
func dsTree(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		paths = append(paths, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// dsCopyTree copies the directory tree src into dst (which may exist).
func dsCopyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// dsElems returns the values a test pushes: prefix + 1..n.
func dsElems(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%s%06d", prefix, i))
	}
	return out
}

// dsPush RPUSHes each value as its own acknowledged command.
func dsPush(t *testing.T, raw *RawConn, key string, vals []string) {
	t.Helper()
	for _, v := range vals {
		if r := raw.Do("RPUSH", key, v); r.Type != ':' {
			t.Fatalf("RPUSH %s %s = %s", key, v, r)
		}
	}
}

// dsList returns LRANGE key 0 -1.
func dsList(t *testing.T, raw *RawConn, key string) []string {
	t.Helper()
	r := raw.Do("LRANGE", key, "0", "-1")
	if r.Type != '*' {
		t.Fatalf("LRANGE %s = %s", key, r)
	}
	out := make([]string, len(r.Elems))
	for i, e := range r.Elems {
		out[i] = e.Str
	}
	return out
}

// dsExpectList checks that key holds exactly want, each element once.
func dsExpectList(t *testing.T, raw *RawConn, label, key string, want []string) {
	t.Helper()
	got := dsList(t, raw, key)
	if !slices.Equal(got, want) {
		t.Errorf("%s: %s has %d elements, want exactly the %d acknowledged ones (each once)%s",
			label, key, len(got), len(want), dsFirstDiff(got, want))
	}
}

func dsFirstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("; element %d is %q, want %q", i, got[i], want[i])
		}
	}
	return ""
}

// dsWriter is a client that RPUSHes key, one acknowledged element at a
// time, until it is stopped.
type dsWriter struct {
	acked    atomic.Int64 // elements 1..acked were acknowledged
	progress chan struct{}
	stopc    chan struct{}
	stopOnce sync.Once
	errOnce  sync.Once
	finished chan struct{}
	err      error // set before finished is closed
}

func dsStartWriter(t *testing.T, addr, key, prefix string) *dsWriter {
	w := &dsWriter{progress: make(chan struct{}, 1), stopc: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		defer close(w.finished)
		c, err := dialQuiet(addr)
		if err != nil {
			w.err = err
			return
		}
		defer c.Conn.Close()
		for i := int64(1); i <= 1_000_000; i++ {
			select {
			case <-w.stopc:
				return
			default:
			}
			r, err := c.do("RPUSH", key, fmt.Sprintf("%s%06d", prefix, i))
			if err != nil {
				w.err = fmt.Errorf("RPUSH #%d: %w", i, err)
				return
			}
			if r.Type != ':' || r.Int != i {
				w.err = fmt.Errorf("RPUSH #%d = %s, want :%d", i, r, i)
				return
			}
			w.acked.Store(i)
			select {
			case w.progress <- struct{}{}:
			default:
			}
		}
		w.err = errors.New("a million writes without being stopped")
	}()
	t.Cleanup(func() { w.stop(t) })
	return w
}

// waitAcked waits until at least n writes were acknowledged.
func (w *dsWriter) waitAcked(t *testing.T, n int64) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for w.acked.Load() < n {
		select {
		case <-w.progress:
		case <-w.finished:
			t.Fatalf("the writer ended after %d acknowledged writes: %v", w.acked.Load(), w.err)
		case <-deadline.C:
			t.Fatalf("only %d writes acknowledged in 20s, want %d", w.acked.Load(), n)
		}
	}
}

// stop stops the writer and returns how many writes were acknowledged.
func (w *dsWriter) stop(t *testing.T) int64 {
	t.Helper()
	w.stopOnce.Do(func() { close(w.stopc) })
	select {
	case <-w.finished:
	case <-time.After(20 * time.Second):
		t.Fatal("the writer did not stop in 20s")
	}
	w.errOnce.Do(func() {
		if w.err != nil {
			t.Errorf("writer: %v", w.err)
		}
	})
	return w.acked.Load()
}

// TestDataSafetySecondServerRefused (issue 11 §1a, §1d): while a server
// takes acknowledged writes on a directory, a second server on it exits
// non-zero before it is ready, naming the first's pid — also in its
// logfile — and every acknowledged write survives a restart.
func TestDataSafetySecondServerRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := StartServerIn(t, dir, "--appendfsync", "always", "--save", "")
	pid := a.cmd.Process.Pid
	holder := fmt.Sprintf("process %d", pid)
	w := dsStartWriter(t, a.Addr, "q", "w")
	w.waitAcked(t, 20)

	second := dsTryStart(t, "", "server", "--port", "random", "--dir", dir)
	dsExpectRefused(t, "a second server on the same dir", second, "in use", holder)

	logfile := filepath.Join(t.TempDir(), "second.log")
	withLog := dsTryStart(t, logfile, "server", "--port", "random", "--dir", dir, "--logfile", logfile)
	dsExpectRefused(t, "a second server with --logfile", withLog)
	logged, err := os.ReadFile(logfile)
	if err != nil {
		t.Errorf("the refused server wrote no logfile: %v", err)
	}
	for _, want := range []string{"in use", holder} {
		if !strings.Contains(string(logged), want) {
			t.Errorf("the logfile of the refused server does not say %q:\n%s", want, logged)
		}
	}

	// The first server still acknowledges writes.
	w.waitAcked(t, w.acked.Load()+20)
	acked := int(w.stop(t))
	a.Stop()
	got := dsList(t, StartServerIn(t, dir).Raw(t), "q")
	want := dsElems("w", 1, acked)
	if len(got) < acked || len(got) > acked+1 || !slices.Equal(got[:acked], want) {
		t.Errorf("after restart q has %d elements, want the %d acknowledged ones first%s", len(got), acked, dsFirstDiff(got, want))
	}
}

// TestDataSafetyRestoreRefusedWhileServing (issue 11 §1b): snapshot
// restore --force into the directory of a running server is refused,
// naming the lock, and changes nothing: a write acknowledged after it
// survives a restart, and the restored data does not appear.
func TestDataSafetyRestoreRefusedWhileServing(t *testing.T) {
	t.Parallel()
	src := StartServer(t, "--appendonly", "no", "--save", "")
	if r := src.Raw(t).Do("RPUSH", "restored", "x"); r.Type != ':' {
		t.Fatalf("RPUSH = %s", r)
	}
	if r := src.Raw(t).Do("SAVE"); r.String() != `+"OK"` {
		t.Fatalf("SAVE = %s", r)
	}
	src.Stop()
	rdb := filepath.Join(t.TempDir(), "other.rdb")
	dsCopyFile(t, filepath.Join(src.Dir, "dump.rdb"), rdb)

	dir := t.TempDir()
	s := StartServerIn(t, dir, "--appendfsync", "always", "--save", "")
	raw := s.Raw(t)
	dsPush(t, raw, "q", []string{"before"})
	manifest := filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest")
	treeBefore, manifestBefore := dsTree(t, dir), dsReadFile(t, manifest)

	out, ok := runCmd(t, "snapshot", "restore", rdb, "--dir", dir, "--force")
	if ok {
		t.Errorf("snapshot restore --force succeeded while a server runs on %s:\n%s", dir, out)
	}
	for _, want := range []string{"redstream.lock", fmt.Sprintf("process %d", s.cmd.Process.Pid)} {
		if !strings.Contains(out, want) {
			t.Errorf("the refused restore does not say %q:\n%s", want, out)
		}
	}
	if tree := dsTree(t, dir); !slices.Equal(tree, treeBefore) {
		t.Errorf("the refused restore changed the data directory: %q, was %q", tree, treeBefore)
	}
	if m := dsReadFile(t, manifest); m != manifestBefore {
		t.Errorf("the refused restore changed the manifest:\n%s\nwas:\n%s", m, manifestBefore)
	}

	dsPush(t, raw, "q", []string{"after"})
	s.Stop()
	r := StartServerIn(t, dir).Raw(t)
	dsExpectList(t, r, "after restart", "q", []string{"before", "after"})
	if n := r.Do("EXISTS", "restored"); n.Int != 0 {
		t.Errorf("after restart EXISTS restored = %s: the refused restore's data was installed", n)
	}
}

func dsReadFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func dsCopyFile(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.WriteFile(dst, []byte(dsReadFile(t, src)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDataSafetyAOFFixRefusedWhileServing (issue 11 §1c): aof check --fix
// --yes on the AOF of a running server is refused and changes nothing.
func TestDataSafetyAOFFixRefusedWhileServing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--appendfsync", "always", "--save", "")
	raw := s.Raw(t)
	dsPush(t, raw, "q", dsElems("f", 1, 20))
	aofDir := filepath.Join(dir, "appendonlydir")
	manifestBefore := dsReadFile(t, filepath.Join(aofDir, "appendonly.aof.manifest"))

	out, ok := runCmd(t, "aof", "check", aofDir, "--fix", "--yes")
	if ok {
		t.Errorf("aof check --fix --yes succeeded on the AOF of a running server:\n%s", out)
	}
	for _, want := range []string{"in use", fmt.Sprintf("process %d", s.cmd.Process.Pid)} {
		if !strings.Contains(out, want) {
			t.Errorf("the refused aof check --fix does not say %q:\n%s", want, out)
		}
	}
	if m := dsReadFile(t, filepath.Join(aofDir, "appendonly.aof.manifest")); m != manifestBefore {
		t.Errorf("the refused aof check --fix changed the manifest:\n%s\nwas:\n%s", m, manifestBefore)
	}
	if _, err := os.Stat(filepath.Join(dir, "quarantine")); !os.IsNotExist(err) {
		t.Errorf("the refused aof check --fix moved something into quarantine (%v): %q", err, dsTree(t, dir))
	}

	dsPush(t, raw, "q", dsElems("f", 21, 30))
	s.Stop()
	dsExpectList(t, StartServerIn(t, dir).Raw(t), "after restart", "q", dsElems("f", 1, 30))
}

// dsWaitRewrite waits until a BGREWRITEAOF has finished.
func dsWaitRewrite(t *testing.T, raw *RawConn) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, _ := strconv.Atoi(infoField(t, raw, "persistence", "aof_rewrites"))
		if n >= 1 && infoField(t, raw, "persistence", "aof_rewrite_in_progress") == "0" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("BGREWRITEAOF did not finish in 20s")
		}
		time.Sleep(5 * time.Millisecond) // no notification for a rewrite ending: poll
	}
}

// dsManifestSeq returns the seq of a manifest line.
func dsManifestSeq(t *testing.T, line string) int {
	t.Helper()
	f := strings.Fields(line)
	for i := 0; i+1 < len(f); i += 2 {
		if f[i] == "seq" {
			n, err := strconv.Atoi(f[i+1])
			if err != nil {
				t.Fatalf("manifest line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("manifest line %q has no seq", line)
	return 0
}

// TestDataSafetyBadManifestRefused (issue 11 §2): a start on an AOF whose
// manifest is emptied, deleted, wrong, or under another appendfilename
// refuses, naming the manifest and the repair command, and leaves every
// file byte for byte; after aof check --fix (or with the right name) every
// acknowledged element is there exactly once.
func TestDataSafetyBadManifestRefused(t *testing.T) {
	t.Parallel()
	orig := t.TempDir()
	s := StartServerIn(t, orig, "--save", "")
	raw := s.Raw(t)
	want := dsElems("m", 1, 20)
	dsPush(t, raw, "q", want[:10])
	if r := raw.Do("BGREWRITEAOF"); r.Type == '-' {
		t.Fatalf("BGREWRITEAOF = %s", r)
	}
	dsWaitRewrite(t, raw)
	dsPush(t, raw, "q", want[10:])
	s.Stop()

	manifestName := "appendonly.aof.manifest"
	manifest := dsReadFile(t, filepath.Join(orig, "appendonlydir", manifestName))
	var baseLine, lastIncr string
	for _, l := range strings.Split(strings.TrimSpace(manifest), "\n") {
		switch {
		case strings.HasSuffix(l, " type b"):
			baseLine = l
		case strings.HasSuffix(l, " type i"):
			lastIncr = l
		}
	}
	if baseLine == "" || lastIncr == "" {
		t.Fatalf("after BGREWRITEAOF the manifest has no base or no increment:\n%s", manifest)
	}
	baseSeq, incrSeq := dsManifestSeq(t, baseLine), dsManifestSeq(t, lastIncr)
	writeManifest := func(text string) func(t *testing.T, aofDir string) {
		return func(t *testing.T, aofDir string) {
			if err := os.WriteFile(filepath.Join(aofDir, manifestName), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name   string
		change func(t *testing.T, aofDir string)
		args   []string // the refused start's extra arguments
	}{
		{name: "emptied", change: writeManifest("")},
		{name: "deleted", change: func(t *testing.T, aofDir string) {
			if err := os.Remove(filepath.Join(aofDir, manifestName)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "prefix-appendfilename", args: []string{"--appendfilename", "appendonly"}},
		{name: "wrong-base-seq", change: writeManifest(strings.Replace(manifest, baseLine,
			strings.Replace(baseLine, fmt.Sprintf(" seq %d ", baseSeq), fmt.Sprintf(" seq %d ", baseSeq+1), 1), 1))},
		{name: "missing-increment", change: writeManifest(manifest +
			fmt.Sprintf("file appendonly.aof.%d.incr.aof seq %d type i\n", incrSeq+1, incrSeq+1))},
		{name: "increment-twice", change: writeManifest(manifest + lastIncr + "\n")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			dsCopyTree(t, orig, dir)
			aofDir := filepath.Join(dir, "appendonlydir")
			if c.change != nil {
				c.change(t, aofDir)
			}
			before := dsFiles(t, aofDir)
			att := dsTryStart(t, "", append([]string{"server", "--port", "random", "--dir", dir, "--save", ""}, c.args...)...)
			dsExpectRefused(t, "a start on a bad manifest", att, "manifest", "redstream aof check")
			if diff := dsDiffFiles(before, dsFiles(t, aofDir)); diff != "" {
				t.Errorf("the start changed the AOF directory: %s", diff)
			}
			if c.args == nil {
				out, ok := runCmd(t, "aof", "check", aofDir, "--fix", "--yes")
				if !ok {
					t.Fatalf("aof check --fix --yes failed:\n%s", out)
				}
			}
			dsExpectList(t, StartServerIn(t, dir, "--save", "").Raw(t), "after the repair", "q", want)
		})
	}
}

// dsFrameStarts returns the offset of every frame of an increment that is
// whole frames from start to end ("#RS <len> <crc>\r\n" + payload).
func dsFrameStarts(t *testing.T, data []byte) []int {
	t.Helper()
	var starts []int
	for off := 0; off < len(data); {
		end := bytes.Index(data[off:], []byte("\r\n"))
		f := strings.Fields(string(data[off : off+max(end, 0)]))
		if !bytes.HasPrefix(data[off:], []byte("#RS ")) || end < 0 || len(f) != 3 {
			t.Fatalf("no frame header at offset %d of %d", off, len(data))
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("frame header at offset %d: %q", off, f)
		}
		starts = append(starts, off)
		off += end + 2 + n
		if off > len(data) {
			t.Fatalf("the frame at %d runs past the end", starts[len(starts)-1])
		}
	}
	return starts
}

// dsQuarantined reads every file under dir/quarantine: path to content.
func dsQuarantined(t *testing.T, dir string) map[string]string {
	t.Helper()
	q := filepath.Join(dir, "quarantine")
	if _, err := os.Stat(q); os.IsNotExist(err) {
		return nil
	}
	files := map[string]string{}
	for name, content := range dsFiles(t, q) {
		files[filepath.Join(q, name)] = content
	}
	return files
}

// dsKeptAs returns the quarantined file holding exactly want ("" if none).
func dsKeptAs(files map[string]string, want []byte) string {
	for path, content := range files {
		if content == string(want) {
			return path
		}
	}
	return ""
}

func dsDescribe(files map[string]string) string {
	var out []string
	for path, content := range files {
		out = append(out, fmt.Sprintf("%s (%d bytes)", path, len(content)))
	}
	slices.Sort(out)
	return fmt.Sprintf("%q", out)
}

// TestDataSafetyMidFileDamage (issue 11 §3): damage in the middle of the
// newest increment is not a torn tail. A frame header whose length runs
// past the end, or zeros from the middle of a frame to the end, refuse
// the start and leave the file as it is; aof check --fix cuts at the bad
// frame, keeping exactly the cut bytes in quarantine, and the server then
// starts with the frames before it. A genuinely torn tail still starts,
// with the whole frames, and its bytes are kept in quarantine.
func TestDataSafetyMidFileDamage(t *testing.T) {
	t.Parallel()
	const n = 200
	orig := t.TempDir()
	s := StartServerIn(t, orig, "--appendfsync", "always", "--save", "")
	want := dsElems("d", 1, n)
	dsPush(t, s.Raw(t), "q", want)
	s.Stop()
	incr := "appendonly.aof.1.incr.aof"
	data := []byte(dsReadFile(t, filepath.Join(orig, "appendonlydir", incr)))
	frames := dsFrameStarts(t, data)
	if len(frames) != n {
		t.Fatalf("the increment holds %d frames, want one per RPUSH (%d)", len(frames), n)
	}
	k := n / 2 // the damaged frame

	// damaged checks a copy of orig whose increment is bad, damaged in
	// frame k.
	damaged := func(t *testing.T, bad []byte) {
		dir := t.TempDir()
		dsCopyTree(t, orig, dir)
		aofDir := filepath.Join(dir, "appendonlydir")
		path := filepath.Join(aofDir, incr)
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		att := dsTryStart(t, "", "server", "--port", "random", "--dir", dir, "--save", "")
		dsExpectRefused(t, "a start on damage in the middle", att, "offset", "aof check")
		if got, _ := os.ReadFile(path); !bytes.Equal(got, bad) {
			t.Errorf("the refused start changed %s: %d bytes, was %d", incr, len(got), len(bad))
		}

		out, ok := runCmd(t, "aof", "check", aofDir, "--fix", "--yes")
		if !ok {
			t.Fatalf("aof check --fix --yes failed:\n%s", out)
		}
		cut := bad[frames[k]:]
		q := dsQuarantined(t, dir)
		if kept := dsKeptAs(q, cut); kept == "" {
			t.Errorf("no file in quarantine holds the %d cut bytes; quarantine holds %s", len(cut), dsDescribe(q))
		} else if !strings.Contains(out, kept) {
			t.Errorf("aof check --fix does not say the cut bytes are kept in %s:\n%s", kept, out)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, bad[:frames[k]]) {
			t.Errorf("after aof check --fix %s has %d bytes, want the %d before the damaged frame", incr, len(got), frames[k])
		}
		dsExpectList(t, StartServerIn(t, dir, "--save", "").Raw(t), "after the repair", "q", want[:k])
	}

	t.Run("length-past-end", func(t *testing.T) {
		t.Parallel()
		hdr := data[frames[k]:]
		hdr = hdr[:bytes.Index(hdr, []byte("\r\n"))]
		f := strings.Fields(string(hdr))
		var bad []byte
		bad = append(bad, data[:frames[k]]...)
		bad = append(bad, "#RS 9999999 "+f[2]...)
		bad = append(bad, data[frames[k]+len(hdr):]...)
		damaged(t, bad)
	})
	t.Run("zeros-from-mid-frame", func(t *testing.T) {
		t.Parallel()
		bad := slices.Clone(data)
		clear(bad[frames[k]+(frames[k+1]-frames[k])/2:])
		damaged(t, bad)
	})
	t.Run("torn-tail", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		dsCopyTree(t, orig, dir)
		torn := data[:len(data)-5]
		if err := os.WriteFile(filepath.Join(dir, "appendonlydir", incr), torn, 0o644); err != nil {
			t.Fatal(err)
		}
		s := StartServerIn(t, dir, "--save", "")
		dsExpectList(t, s.Raw(t), "after a torn tail", "q", want[:n-1])
		if !strings.Contains(s.Output(), "dropped_bytes") {
			t.Errorf("no warning about the dropped tail:\n%s", s.Output())
		}
		if q := dsQuarantined(t, dir); dsKeptAs(q, torn[frames[n-1]:]) == "" {
			t.Errorf("no file in quarantine holds the %d torn bytes; quarantine holds %s", len(torn)-frames[n-1], dsDescribe(q))
		}
	})
}

// dsData is what dsFill wrote: random, incompressible list elements.
type dsData struct {
	keys, perKey int
	first, last  []string // each list's first and last element
}

// dsFill RPUSHes keys lists of perKey random elements of size bytes,
// pipelined.
func dsFill(t *testing.T, raw *RawConn, keys, perKey, size int) dsData {
	t.Helper()
	const perCmd, perBatch = 8, 64
	d := dsData{keys: keys, perKey: perKey, first: make([]string, keys), last: make([]string, keys)}
	rng := rand.NewChaCha8([32]byte{11})
	var batch []byte
	pending := 0
	flush := func() {
		raw.Send(string(batch))
		for range pending {
			if r := raw.Read(); r.Type != ':' {
				t.Fatalf("RPUSH: %s", r)
			}
		}
		batch, pending = batch[:0], 0
	}
	for k := range keys {
		for j := 0; j < perKey; j += perCmd {
			args := []string{"RPUSH", fmt.Sprintf("big:%d", k)}
			for i := j; i < min(j+perCmd, perKey); i++ {
				b := make([]byte, size)
				_, _ = rng.Read(b)
				args = append(args, string(b))
				if i == 0 {
					d.first[k] = string(b)
				}
				d.last[k] = string(b)
			}
			batch = append(batch, Encode(args...)...)
			if pending++; pending == perBatch {
				flush()
			}
		}
	}
	flush()
	return d
}

// check verifies that the server holds exactly what dsFill wrote.
func (d dsData) check(t *testing.T, raw *RawConn, label string) {
	t.Helper()
	if r := raw.Do("DBSIZE"); r.Int != int64(d.keys) {
		t.Fatalf("%s: DBSIZE = %s, want %d", label, r, d.keys)
	}
	sum := int64(0)
	for k := range d.keys {
		key := fmt.Sprintf("big:%d", k)
		n := raw.Do("LLEN", key).Int
		sum += n * int64(k+1)
		if n != int64(d.perKey) {
			t.Errorf("%s: LLEN %s = %d, want %d", label, key, n, d.perKey)
		}
		if r := raw.Do("LINDEX", key, "0"); r.Str != d.first[k] {
			t.Errorf("%s: LINDEX %s 0 is not the first element pushed", label, key)
		}
		if r := raw.Do("LINDEX", key, "-1"); r.Str != d.last[k] {
			t.Errorf("%s: LINDEX %s -1 is not the last element pushed", label, key)
		}
	}
	if want := int64(d.perKey * d.keys * (d.keys + 1) / 2); sum != want {
		t.Errorf("%s: the checksum of the lengths is %d, want %d", label, sum, want)
	}
}

// dsNoSaveErrors fails the test for a line of a shutdown's output that
// says a save went wrong.
func dsNoSaveErrors(t *testing.T, label, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		l := strings.ToLower(line)
		if strings.Contains(l, "no such file") || strings.Contains(l, "failed") {
			t.Errorf("%s: the server logged: %s", label, line)
		}
	}
}

// TestDataSafetyShutdownDuringBGSAVE (issue 11 §4): a SIGTERM, or a
// SHUTDOWN, that comes while a BGSAVE writes the RDB file stops cleanly
// (exit 0, no save error in the log), and the next start loads every key
// from dump.rdb. The BGSAVE must still run when the shutdown comes: the
// data is sized so that a save takes seconds under -race (and well over
// the few milliseconds between BGSAVE and the shutdown without).
func TestDataSafetyShutdownDuringBGSAVE(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--appendonly", "no", "--save", "3600 1"}
	s := StartServerIn(t, dir, args...)
	data := dsFill(t, s.Raw(t), 8, 256, 4096) // 8 MiB of random bytes
	for round, how := range []string{"SIGTERM", "SHUTDOWN", "SIGTERM"} {
		label := fmt.Sprintf("round %d (%s during BGSAVE)", round+1, how)
		raw := s.Raw(t)
		if r := raw.Do("BGSAVE"); r.Str != "Background saving started" {
			t.Fatalf("%s: BGSAVE = %s", label, r)
		}
		if v := infoField(t, raw, "persistence", "rdb_bgsave_in_progress"); v != "1" {
			t.Fatalf("%s: rdb_bgsave_in_progress:%s right after BGSAVE; the data is too small for this test", label, v)
		}
		switch how {
		case "SIGTERM":
			s.Stop() // fails the test unless the exit status is 0
		case "SHUTDOWN":
			raw.Send(Encode("SHUTDOWN"))
			if r, err := raw.TryRead(30 * time.Second); err == nil {
				t.Errorf("%s: SHUTDOWN answered %s; want the server to stop", label, r)
			}
			select {
			case <-s.Exited():
			case <-time.After(30 * time.Second):
				t.Errorf("%s: the server did not stop within 30s of SHUTDOWN", label)
			}
			s.Stop() // fails the test unless the exit status is 0
		}
		dsNoSaveErrors(t, label, s.Output())
		s = StartServerIn(t, dir, args...)
		data.check(t, s.Raw(t), "after "+label)
	}
}

// TestDataSafetyFailedFinalSave (issue 11 §4): when the final save cannot
// write its temporary file, SHUTDOWN answers an error and the server goes
// on serving with its data; SIGTERM stops it with a non-zero status; and
// with appendonly yes every acknowledged write survives.
func TestDataSafetyFailedFinalSave(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--appendonly", "yes", "--appendfsync", "always", "--save", "3600 1")
	raw := s.Raw(t)
	want := dsElems("s", 1, 50)
	dsPush(t, raw, "q", want)

	// A non-empty directory where the save's temporary file goes: the
	// save cannot create it, nor remove it.
	block := filepath.Join(dir, fmt.Sprintf("dump.rdb.temp-%d.rdb", s.cmd.Process.Pid))
	if err := os.MkdirAll(filepath.Join(block, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := raw.Do("SHUTDOWN"); r.Type != '-' || !strings.HasPrefix(r.Str, "ERR Errors trying to SHUTDOWN") {
		t.Errorf("SHUTDOWN whose save fails = %s, want -ERR Errors trying to SHUTDOWN...", r)
	}
	if r := raw.Do("PING"); r.String() != `+"PONG"` {
		t.Fatalf("PING after the failed SHUTDOWN = %s", r)
	}
	other := s.Raw(t)
	if r := other.Do("PING"); r.String() != `+"PONG"` {
		t.Fatalf("PING on a new connection after the failed SHUTDOWN = %s", r)
	}
	dsExpectList(t, other, "after the failed SHUTDOWN", "q", want)
	more := dsElems("s", 51, 60)
	dsPush(t, other, "q", more)
	want = append(want, more...)

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Exited():
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not stop within 30s of SIGTERM:\n%s", s.Output())
	}
	s.Kill() // already gone: marks it stopped, so the cleanup does not judge its status
	if code := s.cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("after SIGTERM with a failing final save the exit status is 0; want non-zero:\n%s", s.Output())
	}
	if out := s.Output(); strings.Contains(out, "DATA RACE") || strings.Contains(out, "panic:") {
		t.Errorf("redstream reported a problem:\n%s", out)
	}

	if err := os.RemoveAll(block); err != nil {
		t.Fatal(err)
	}
	dsExpectList(t, StartServerIn(t, dir, "--save", "").Raw(t), "after restart", "q", want)
}
