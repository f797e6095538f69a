package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/redstream/redstream/server"
)

// The rules of issue 11 §2 and §3 for opening and loading an AOF, at the
// package level: what is refused, what is moved into quarantine, what is
// cut, and that nothing is deleted.

// aofDirWith writes an AOF directory holding files (name → content) and
// returns its path; the quarantine folder is Dir/quarantine.
func aofDirWith(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// dirFiles lists dir's files (not folders) with their contents.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func quietOpen(dir string) (*AOF, error) {
	return OpenAOF(AOFOptions{Dir: dir, Name: "appendonly.aof", Truncate: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// frames encodes one "RPUSH q <v>" frame per value.
func frames(vals ...string) string {
	var buf, scratch []byte
	for i, v := range vals {
		buf, scratch = appendFrame(buf, scratch, []server.Record{rec(int64(i), 0, "RPUSH", "q", v)})
	}
	return string(buf)
}

const (
	base2 = "appendonly.aof.2.base.rdb"
	incr1 = "appendonly.aof.1.incr.aof"
	incr2 = "appendonly.aof.2.incr.aof"
	incr3 = "appendonly.aof.3.incr.aof"
	mfst  = "appendonly.aof.manifest"
)

// TestOpenAOFRefusesAndKeepsEverything: a manifest that is missing,
// empty, wrong or incomplete stops the open with ErrManifest naming the
// repair command, and not one file is changed.
func TestOpenAOFRefusesAndKeepsEverything(t *testing.T) {
	data := map[string]string{base2: "BASE", incr2: frames("a"), incr3: frames("b")}
	with := func(manifest string) map[string]string {
		m := map[string]string{mfst: manifest}
		for k, v := range data {
			m[k] = v
		}
		return m
	}
	good := "file " + base2 + " seq 2 type b\nfile " + incr2 + " seq 2 type i\nfile " + incr3 + " seq 3 type i\n"
	cases := map[string]map[string]string{
		"no manifest":         data,
		"empty manifest":      with(""),
		"wrong base seq":      with(strings.Replace(good, "seq 2 type b", "seq 3 type b", 1)),
		"missing last incr":   with(good + "file appendonly.aof.4.incr.aof seq 4 type i\n"),
		"incr listed twice":   with(good + "file " + incr3 + " seq 3 type i\n"),
		"incrs out of order":  with("file " + base2 + " seq 2 type b\nfile " + incr3 + " seq 3 type i\nfile " + incr2 + " seq 2 type i\n"),
		"unexplained file":    with("file " + base2 + " seq 2 type b\nfile " + incr2 + " seq 2 type i\n"), // incr 3 holds data
		"another name's AOF":  {"other.aof.manifest": good},
		"not a manifest line": with("file " + base2 + " seq x type b\n"),
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			dir := aofDirWith(t, files)
			_, err := quietOpen(dir)
			if !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), "redstream aof check "+dir+" --fix") {
				t.Fatalf("open = %v, want ErrManifest naming the repair command", err)
			}
			if got := dirFiles(t, dir); !mapsEqual(got, files) {
				t.Fatalf("the refused open changed the directory:\n got %v\nwant %v", keys(got), keys(files))
			}
			if _, err := os.Stat(filepath.Join(dir, "quarantine")); err == nil {
				t.Fatal("the refused open made a quarantine folder")
			}
		})
	}
}

// TestOpenAOFQuarantinesProvenLeftovers: each kind of leftover in the
// table of aof_dir.go is moved, whole, into quarantine, and the AOF loads
// what its manifest lists.
func TestOpenAOFQuarantinesProvenLeftovers(t *testing.T) {
	manifest := "file " + base2 + " seq 2 type b\nfile " + incr2 + " seq 2 type i\n" +
		"file appendonly.aof.1.base.rdb seq 1 type h\n"
	dir := aofDirWith(t, map[string]string{
		mfst: manifest, base2: "BASE", incr2: frames("a", "b"),
		incr1:                           frames("old"),   // replaced by base 2
		"appendonly.aof.1.base.rdb":     "OLD BASE",      // history
		"appendonly.aof.3.base.rdb":     "UNLISTED BASE", // a rewrite that never listed it
		incr3:                           "",              // an empty switch never listed
		"appendonly.aof.4.base.rdb.tmp": "half",          // an interrupted write
		mfst + ".tmp":                   "half a manifest",
		"unrelated.txt":                 "not ours",
	})
	a, err := quietOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	var base string
	var got []string
	_, err = a.Load(func(r io.Reader) error { b, _ := io.ReadAll(r); base = string(b); return nil },
		PerRecord(func(r server.Record) error { got = append(got, string(r.Argv[2])); return nil }))
	if err != nil || base != "BASE" || strings.Join(got, ",") != "a,b" {
		t.Fatalf("load: base %q, records %v, %v; want BASE and a,b", base, got, err)
	}
	q := dirFiles(t, filepath.Join(dir, "quarantine"))
	want := map[string]string{incr1: frames("old"), "appendonly.aof.1.base.rdb": "OLD BASE",
		"appendonly.aof.3.base.rdb": "UNLISTED BASE", incr3: "", "appendonly.aof.4.base.rdb.tmp": "half",
		mfst + ".tmp": "half a manifest"}
	if !mapsEqual(q, want) {
		t.Fatalf("quarantine holds %v, want %v", keys(q), keys(want))
	}
	left := dirFiles(t, dir)
	if _, ok := left["unrelated.txt"]; !ok || len(left) != 4 { // manifest, base, incr, unrelated
		t.Fatalf("the AOF dir holds %v after the open", keys(left))
	}
	// The next rotation must not reuse a seq a quarantined file had.
	if a.nextSeq <= 4 {
		t.Fatalf("nextSeq = %d, want past every seq seen (4)", a.nextSeq)
	}
}

// TestOpenAOFFirstStartLeftovers: a first start that crashed after
// creating its increment but before its manifest left an empty file; the
// next start quarantines it and begins, while a directory with data and
// no manifest is refused (TestOpenAOFRefusesAndKeepsEverything).
func TestOpenAOFFirstStartLeftovers(t *testing.T) {
	dir := aofDirWith(t, map[string]string{incr1: ""})
	a, err := quietOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.manifest.lastIncr().name; got != incr2 {
		t.Fatalf("the new AOF appends to %s, want %s (after the quarantined one)", got, incr2)
	}
	if _, err := os.Stat(filepath.Join(dir, "quarantine", incr1)); err != nil {
		t.Fatalf("the empty leftover is not in quarantine: %v", err)
	}
}

// TestManifestHistoryLines: Redis's "type h" lines are read, never
// loaded, and the files they name go to quarantine.
func TestManifestHistoryLines(t *testing.T) {
	m, err := parseManifest(strings.NewReader("file appendonly.aof.2.base.rdb seq 2 type b\n" +
		"file appendonly.aof.1.base.rdb seq 1 type h\nfile appendonly.aof.1.incr.aof seq 1 type h\n" +
		"file appendonly.aof.2.incr.aof seq 2 type i\n"))
	if err != nil || len(m.history) != 2 || m.base == nil || len(m.incrs) != 1 {
		t.Fatalf("parsed %+v, %v", m, err)
	}
	if strings.Contains(string(m.encode()), "type h") {
		t.Fatalf("history lines are written back:\n%s", m.encode())
	}
}

// TestRebuildManifest: aof check --fix's rebuild lists the newest base
// and the increments from its seq, keeps the old manifest, and says when
// increments are missing.
func TestRebuildManifest(t *testing.T) {
	dir := t.TempDir()
	aof := filepath.Join(dir, "appendonlydir")
	os.Mkdir(aof, 0o755)
	for name, content := range map[string]string{mfst: "", incr1: frames("x"), base2: "BASE", incr2: frames("a"),
		"appendonly.aof.4.incr.aof": frames("b")} {
		os.WriteFile(filepath.Join(aof, name), []byte(content), 0o644)
	}
	says, err := RebuildManifest(aof, "appendonly.aof", filepath.Join(dir, "quarantine"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(says, "MISSING increments 3 to 3") {
		t.Errorf("the rebuild does not say increment 3 is missing:\n%s", says)
	}
	m, _, err := readManifest(OSFS{}, filepath.Join(aof, mfst))
	if err != nil || m.base == nil || m.base.name != base2 || len(m.incrs) != 2 || m.incrs[1].seq != 4 {
		t.Fatalf("rebuilt manifest:\n%s(%v)", m.encode(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "quarantine", mfst)); err != nil {
		t.Fatalf("the old manifest was not kept: %v", err)
	}
	if _, err := quietOpen(aof); err != nil {
		t.Fatalf("the rebuilt AOF does not open: %v", err)
	}
}

// loadIncr writes content as the only increment of a fresh AOF and loads
// it, returning the values replayed and the load's error.
func loadIncr(t *testing.T, content []byte, truncate bool) (string, []string, error) {
	t.Helper()
	dir := aofDirWith(t, map[string]string{mfst: "file " + incr1 + " seq 1 type i\n", incr1: string(content)})
	a, err := OpenAOF(AOFOptions{Dir: dir, Name: "appendonly.aof", Truncate: truncate,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	_, err = a.Load(nil, PerRecord(func(r server.Record) error { got = append(got, string(r.Argv[2])); return nil }))
	return dir, got, err
}

// TestLoadDamageIsNotATornTail is issue 11 §3: a raised frame length in
// the middle, or zeros over the second half of the frames, used to be
// cut as a torn tail with a warning. Now they refuse and change nothing;
// a real torn tail (inside fill, or at the end of the file) is still cut,
// and its bytes kept in quarantine.
func TestLoadDamageIsNotATornTail(t *testing.T) {
	var vals []string
	for i := range 200 {
		vals = append(vals, fmt.Sprint(i))
	}
	clean := []byte(frames(vals...))
	mid := len(clean)/2 + bytes.Index(clean[len(clean)/2:], []byte("#RS ")) // a frame in the middle

	raised := bytes.Clone(clean)
	sp := bytes.IndexByte(raised[mid+4:], ' ')
	raised = slices.Concat(raised[:mid+4], []byte("9999999"), raised[mid+4+sp:])

	zeroed := bytes.Clone(clean)
	clear(zeroed[mid+7:]) // from inside a frame to the end

	for name, content := range map[string][]byte{"raised length": raised, "zeroed second half": zeroed} {
		t.Run(name, func(t *testing.T) {
			dir, got, err := loadIncr(t, content, true)
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "aof check") {
				t.Fatalf("load = %v (%d records), want a refusal naming the repair command", err, len(got))
			}
			if b, _ := os.ReadFile(filepath.Join(dir, incr1)); !bytes.Equal(b, content) {
				t.Fatal("the refused load changed the file")
			}
		})
	}

	t.Run("torn at the end", func(t *testing.T) {
		dir, got, err := loadIncr(t, clean[:len(clean)-5], true)
		if err != nil || len(got) != 199 {
			t.Fatalf("load = %v with %d records, want the 199 whole frames", err, len(got))
		}
		kept := dirFiles(t, filepath.Join(dir, "quarantine"))
		last := clean[bytes.LastIndex(clean, []byte("#RS ")) : len(clean)-5]
		if len(kept) != 1 || !slices.Contains(values(kept), string(last)) {
			t.Fatalf("quarantine holds %q, want the torn bytes %q", values(kept), last)
		}
	})
	t.Run("torn inside fill", func(t *testing.T) {
		torn := slices.Concat(clean, []byte(frames("x"))[:10])
		torn = append(torn, fillAt(int64(len(torn)), 3000)...)
		dir, got, err := loadIncr(t, torn, true)
		if err != nil || len(got) != 200 {
			t.Fatalf("load = %v with %d records, want all 200", err, len(got))
		}
		kept := dirFiles(t, filepath.Join(dir, "quarantine"))
		if len(kept) != 1 || values(kept)[0] != frames("x")[:10] {
			t.Fatalf("quarantine holds %q, want only the torn frame's bytes (not the fill)", values(kept))
		}
		if b, _ := os.ReadFile(filepath.Join(dir, incr1)); !bytes.Equal(b, clean) {
			t.Fatalf("after the cut the increment is %d bytes, want %d", len(b), len(clean))
		}
	})
	t.Run("old zero fill refuses", func(t *testing.T) {
		_, _, err := loadIncr(t, append(bytes.Clone(clean), make([]byte, 4096)...), true)
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("zeros after the frames: %v, want a refusal", err)
		}
	})
}

// TestCutAOFFileKeepsTheCut: aof check --fix's cut keeps the bytes it
// cuts (not the fill after them).
func TestCutAOFFileKeepsTheCut(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, incr1)
	cut := len(frames("a"))
	content := append([]byte(frames("a", "b", "c")), fillAt(int64(len(frames("a", "b", "c"))), 100)...)
	os.WriteFile(path, content, 0o644)
	kept, err := CutAOFFile(path, int64(cut), filepath.Join(dir, "q"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(kept)
	if string(b) != frames("a", "b", "c")[cut:] {
		t.Fatalf("kept %q, want %q", b, frames("a", "b", "c")[cut:])
	}
	if b, _ := os.ReadFile(path); string(b) != frames("a") {
		t.Fatalf("the file is %q after the cut", b)
	}
}

// failOnceFS fails, once armed, the first failures calls of one kind
// ("create" or "rename") whose path contains match.
type failOnceFS struct {
	OSFS
	kind, match string
	arm         atomic.Bool
	left        atomic.Int32
	failed      atomic.Int32
}

func (f *failOnceFS) hit(kind, path string) bool {
	if f.arm.Load() && kind == f.kind && strings.Contains(path, f.match) && f.left.Add(-1) >= 0 {
		f.failed.Add(1)
		return true
	}
	return false
}

func (f *failOnceFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if flag&os.O_CREATE != 0 && f.hit("create", name) {
		return nil, fmt.Errorf("injected: %w", syscall.EIO)
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

func (f *failOnceFS) Rename(from, to string) error {
	if f.hit("rename", to) {
		return fmt.Errorf("injected: %w", syscall.EIO)
	}
	return f.OSFS.Rename(from, to)
}

// TestRotateRetryListsOnce: a file switch that fails (creating the new
// increment, or writing the manifest) is retried by the writer; the
// manifest then lists the new increment once, and a load replays every
// acknowledged record once. Issue 11 §2: the switch used to write the
// manifest before creating the file, and its retry listed the file again.
func TestRotateRetryListsOnce(t *testing.T) {
	for _, c := range []struct{ kind, match string }{{"create", incr2}, {"rename", mfst}} {
		t.Run(c.kind, func(t *testing.T) {
			fs := &failOnceFS{kind: c.kind, match: c.match}
			fs.left.Store(2)
			a, dir := openTestAOF(t, fs, FsyncAlways)
			a.Load(nil, nil)
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
			var acked []string
			push := func(i int) {
				if a.Wait(a.Append([]server.Record{rec(int64(i), 0, "RPUSH", "q", fmt.Sprint(i))})) == nil {
					acked = append(acked, fmt.Sprint(i))
				}
			}
			for i := range 5 {
				push(i)
			}
			fs.arm.Store(true)
			seq, err := a.Rotate()
			if err != nil {
				t.Fatal(err)
			}
			for i := 5; i < 10; i++ {
				push(i) // refused while the switch fails, written once it succeeds
			}
			if err := a.FinishRewrite(seq, func(w io.Writer) error { _, err := io.WriteString(w, strings.Join(acked[:5], ",")); return err }); err != nil {
				t.Fatal(err)
			}
			push(10)
			if fs.failed.Load() != 2 {
				t.Fatalf("%d injected failures, want 2: the retry path was not run", fs.failed.Load())
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			m, _, err := readManifest(OSFS{}, filepath.Join(dir, mfst))
			if err != nil {
				t.Fatal(err)
			}
			if err := m.validate("appendonly.aof", func(string) bool { return true }); err != nil {
				t.Fatalf("manifest after the retried switch: %v\n%s", err, m.encode())
			}
			b, err := quietOpen(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			_, err = b.Load(func(r io.Reader) error {
				data, _ := io.ReadAll(r)
				got = strings.Split(string(data), ",")
				return nil
			}, PerRecord(func(r server.Record) error { got = append(got, string(r.Argv[2])); return nil }))
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range acked {
				if n := slices.Index(got, v); n < 0 || slices.Index(got[n+1:], v) >= 0 {
					t.Fatalf("acknowledged %s appears %d times in %v", v, count(got, v), got)
				}
			}
		})
	}
}

func count(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func values(m map[string]string) []string {
	var out []string
	for _, k := range keys(m) {
		out = append(out, m[k])
	}
	return out
}
