package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	if !errors.Is(err, persistence.ErrRDBTruncated) || !strings.Contains(out, "error:") {
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
