package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redstream/redstream/persistence"
	ucli "github.com/urfave/cli/v2"
)

// runSnapshot runs `redstream snapshot ARGS...` with captured output.
func runSnapshot(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errw bytes.Buffer
	app := &ucli.App{Name: "redstream", Writer: &out, ErrWriter: &errw,
		Commands: []*ucli.Command{snapshotCommand()}, ExitErrHandler: func(*ucli.Context, error) {}}
	err = app.Run(append([]string{"redstream", "snapshot"}, args...))
	return out.String(), errw.String(), err
}

func fixture(name string) string {
	return filepath.Join("..", "persistence", "testdata", "rdb", name)
}

func TestSnapshotInspectText(t *testing.T) {
	out, _, err := runSnapshot(t, "inspect", fixture("streams.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"version:   10 (Redis 7.0)", "checksum:  ok (stored 0x", "aux:       redis-ver=7.0.15",
		"db 0:      4 keys, 1 with expiry", "db 1:      1 keys", "types:     stream 5",
		`stream  "big"`, "len 246", "3 nodes", `group "g1"`, "pending 13, consumers 4",
		"expires 2100-01-01T00:00:00Z",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestSnapshotInspectJSON(t *testing.T) {
	out, _, err := runSnapshot(t, "inspect", "--json", fixture("unsupported.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	var rep inspectReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if rep.Version != 10 || rep.Checksum.Status != "ok" || rep.Functions != 1 || rep.Types["hash"] != 2 ||
		rep.Types["string"] != 2 || len(rep.Keys) != 9 {
		t.Fatalf("report %+v", rep)
	}
	for _, k := range rep.Keys {
		if k.Key == "bigzset" && (k.Type != "sorted set" || k.Length != 200) {
			t.Errorf("bigzset: %+v", k)
		}
	}
}

func TestSnapshotInspectSummaryAndProgress(t *testing.T) {
	out, errOut, err := runSnapshot(t, "inspect", "--summary", "--progress", "lines", fixture("lists.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "keys:") || !strings.Contains(out, "types:     list 5") {
		t.Errorf("summary output:\n%s", out)
	}
	if !strings.Contains(errOut, "inspect: ") || !strings.Contains(errOut, "inspect: done") {
		t.Errorf("no progress lines:\n%s", errOut)
	}
	if _, _, err := runSnapshot(t, "inspect", "--progress", "sometimes", fixture("lists.rdb")); err == nil {
		t.Error("a bad --progress value was accepted")
	}
}

func TestSnapshotInspectDamaged(t *testing.T) {
	b, err := os.ReadFile(fixture("strings.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bad := append([]byte(nil), b...)
	bad[len(bad)-1] ^= 0xff
	path := filepath.Join(dir, "badsum.rdb")
	os.WriteFile(path, bad, 0o644)
	out, _, err := runSnapshot(t, "inspect", path)
	if !errors.Is(err, persistence.ErrRDBChecksum) || !strings.Contains(out, "checksum:  mismatch") ||
		!strings.Contains(out, `"embstr"`) {
		t.Errorf("bad checksum: err %v, output:\n%s", err, out)
	}
	cut := filepath.Join(dir, "cut.rdb")
	os.WriteFile(cut, b[:200], 0o644)
	out, _, err = runSnapshot(t, "inspect", cut)
	if !errors.Is(err, persistence.ErrRDBTruncated) || errors.Is(err, persistence.ErrRDBChecksum) || !strings.Contains(out, "error:") {
		t.Errorf("truncated: err %v, output:\n%s", err, out)
	}
	if _, _, err := runSnapshot(t, "inspect"); err == nil {
		t.Error("no FILE accepted")
	}
}

func TestSnapshotHelp(t *testing.T) {
	out, _, err := runSnapshot(t, "inspect", "--help")
	if err != nil || !strings.Contains(out, "--json") || !strings.Contains(out, "FILE") {
		t.Fatalf("help: %v\n%s", err, out)
	}
}

// TestSnapshotRestoreSkipUnsupported: a Redis RDB holding hashes, sets,
// sorted sets and a function library is refused with an error naming the
// flag; with --skip-unsupported the strings and lists are installed (as
// dump.rdb and as the AOF base) and what was left out is listed.
func TestSnapshotRestoreSkipUnsupported(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runSnapshot(t, "restore", "--dir", dir, fixture("unsupported.rdb"))
	if err == nil || !strings.Contains(err.Error(), "--skip-unsupported") || !strings.Contains(err.Error(), "redstream serves") {
		t.Fatalf("restore without --skip-unsupported: %v", err)
	}
	out, _, err := runSnapshot(t, "restore", "--dir", dir, "--skip-unsupported", fixture("unsupported.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`skipped 2 hash keys: "bighash", "h"` + "\n",
		`skipped 2 sorted set keys: "z", "bigzset"` + "\n",
		`skipped 2 set keys: "bigset", "intset"` + "\n",
		"skipped 1 function libraries\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	base := filepath.Join(dir, "appendonlydir", "appendonly.aof.1.base.rdb")
	for _, path := range []string{filepath.Join(dir, "dump.rdb"), base} {
		if got := keysIn(t, path); got != "s l after" {
			t.Errorf("%s holds %q, want the served keys s l after", path, got)
		}
	}
}

// TestSnapshotRestoreSkippedNamesLimit: past skippedNamesShown names of
// a type, the rest are counted.
func TestSnapshotRestoreSkippedNamesLimit(t *testing.T) {
	defer func(n int) { skippedNamesShown = n }(skippedNamesShown)
	skippedNamesShown = 1
	out, _, err := runSnapshot(t, "restore", "--dir", t.TempDir(), "--skip-unsupported", fixture("unsupported.rdb"))
	if err != nil || !strings.Contains(out, `skipped 2 hash keys: "bighash", and 1 more`+"\n") {
		t.Fatalf("err %v, output:\n%s", err, out)
	}
}

// keysIn returns the keys of an RDB file, in file order, after checking
// the whole file (checksum included).
func keysIn(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var keys []string
	dec := persistence.NewDecoder(f, nil)
	for {
		e, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return strings.Join(keys, " ")
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		keys = append(keys, string(e.Key))
	}
}

// TestSnapshotInspectFlippedByte: a whole file with one changed byte is
// reported as a checksum mismatch, whatever the decoder met first (a
// length running past the end at offset 9, an unknown encoding at 20),
// with its version; a changed magic is "not an RDB file", not version 0.
func TestSnapshotInspectFlippedByte(t *testing.T) {
	b, err := os.ReadFile(fixture("strings.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	flipped := func(at int) string {
		bad := append([]byte(nil), b...)
		bad[at] ^= 1
		path := filepath.Join(t.TempDir(), "flipped.rdb")
		os.WriteFile(path, bad, 0o644)
		return path
	}
	for _, at := range []int{9, 20} {
		out, _, err := runSnapshot(t, "inspect", flipped(at))
		if !errors.Is(err, persistence.ErrRDBChecksum) || !strings.Contains(out, "checksum:  mismatch\n") ||
			!strings.Contains(out, "version:   10 (Redis 7.0)\n") || !strings.Contains(out, "bytes were changed") {
			t.Errorf("byte %d flipped: err %v, output:\n%s", at, err, out)
		}
	}
	out, _, err := runSnapshot(t, "inspect", flipped(0))
	if !errors.Is(err, persistence.ErrNotRDB) || !strings.Contains(out, "version:   none: not an RDB file") {
		t.Errorf("magic flipped: err %v, output:\n%s", err, out)
	}
}

// fakeClock is a clock whose Sleep only moves its time on.
type fakeClock struct{ now time.Time }

func (f *fakeClock) Now() time.Time        { return f.now }
func (f *fakeClock) Sleep(d time.Duration) { f.now = f.now.Add(d) }

// TestWaitForSaveTime: the time `snapshot save --wait` reports is the
// save's, to within minSavePoll or a tenth, not the poll interval, for a
// quick save and a long one; and the long one says it is still saving.
func TestWaitForSaveTime(t *testing.T) {
	for _, save := range []time.Duration{50 * time.Millisecond, 30 * time.Second} {
		clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
		start := clk.now
		var out bytes.Buffer
		took, err := waitForSave(func() (bool, error) { return clk.now.Sub(start) < save, nil }, &out, clk, start)
		if err != nil {
			t.Fatal(err)
		}
		if slack := max(minSavePoll, save/10); took < save || took > save+slack {
			t.Errorf("a save of %v reported as %v, want %v to %v", save, took, save, save+slack)
		}
		if lines := strings.Count(out.String(), "saving... "); save > time.Second && (lines < 20 || lines > 30) {
			t.Errorf("a save of %v said it was saving %d times, want about once a second:\n%s", save, lines, out.String())
		}
	}
}
