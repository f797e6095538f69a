package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redstream/redstream/persistence"
	"github.com/redstream/redstream/server"
	ucli "github.com/urfave/cli/v2"
)

// runAOF runs `redstream aof ARGS...` with captured output and stdin in.
func runAOF(t *testing.T, in *os.File, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	app := &ucli.App{Name: "redstream", Writer: &out, ErrWriter: &out, Reader: in,
		Commands: []*ucli.Command{aofCommand()}, ExitErrHandler: func(*ucli.Context, error) {}}
	err := app.Run(flagsFirst(app, append([]string{"redstream", "aof"}, args...)))
	return out.String(), err
}

// makeDataDir returns a data directory whose AOF (in appendonlydir) holds
// n RPUSHes to "q", written under appendfsync always (so it ends in fill,
// as a crash leaves it).
func makeDataDir(t *testing.T, n int) string {
	t.Helper()
	data := t.TempDir()
	a, err := persistence.OpenAOF(persistence.AOFOptions{Dir: filepath.Join(data, "appendonlydir"),
		Name: persistence.DefaultAOFName, Fsync: persistence.FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		rec := server.Record{Time: int64(1_700_000_000_000 + i), Argv: [][]byte{[]byte("RPUSH"), []byte("q"), []byte{'a' + byte(i%26)}}}
		if err := a.Wait(a.Append([]server.Record{rec})); err != nil {
			t.Fatal(err)
		}
	}
	// No Close: Close cuts the fill, and a crash does not.
	return data
}

// TestAOFCheckDataDir: given the data directory, aof check checks the AOF
// directory in it and says so; given a directory with no AOF, it says
// precisely what to pass.
func TestAOFCheckDataDir(t *testing.T) {
	data := makeDataDir(t, 3)
	out, err := runAOF(t, nil, "check", data)
	if err != nil || !strings.Contains(out, "checking "+filepath.Join(data, "appendonlydir")) || !strings.Contains(out, "AOF is valid") {
		t.Fatalf("aof check DATA: %v\n%s", err, out)
	}
	_, err = runAOF(t, nil, "check", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "appendonlydir") || !strings.Contains(err.Error(), "appenddirname") {
		t.Fatalf("aof check on an empty dir: %v", err)
	}
}

// TestAOFCheckFixNoTerminal: --fix without --yes and without a terminal
// to ask on refuses, naming --yes, and changes nothing.
func TestAOFCheckFixNoTerminal(t *testing.T) {
	data := makeDataDir(t, 3)
	incr := filepath.Join(data, "appendonlydir", "appendonly.aof.1.incr.aof")
	b, _ := os.ReadFile(incr)
	b[10] ^= 0x20 // damage in the middle: --fix would cut here
	os.WriteFile(incr, b, 0o644)
	stdin, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, _ := runAOF(t, nil, "check", data)
	if !strings.Contains(out, "DAMAGED at offset 0") || strings.Contains(out, "persistence:") {
		t.Errorf("aof check on damage printed:\n%s", out)
	}
	_, err = runAOF(t, stdin, "check", "--fix", data)
	if err == nil || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("--fix without a terminal: %v", err)
	}
	if after, _ := os.ReadFile(incr); !bytes.Equal(after, b) {
		t.Fatal("the refused --fix changed the file")
	}
}

// TestAOFCheckProgressValue: a bad --progress is refused before any work,
// with the valid values.
func TestAOFCheckProgressValue(t *testing.T) {
	data := makeDataDir(t, 1)
	_, err := runAOF(t, nil, "check", "--progress", "bogus", data)
	if err == nil || !strings.Contains(err.Error(), "auto, bar, lines or off") {
		t.Fatalf("--progress bogus: %v", err)
	}
}

// TestAOFExportTornTail: a torn last write is left out of the export, and
// said so; damage in the middle stops it with the file and the offset.
func TestAOFExportTornTail(t *testing.T) {
	data := makeDataDir(t, 3)
	incr := filepath.Join(data, "appendonlydir", "appendonly.aof.1.incr.aof")
	b, _ := os.ReadFile(incr)
	fill := bytes.Index(b, []byte("~rsfill\n")) // the frames end within 8 bytes before
	os.WriteFile(incr, b[:fill-9], 0o644)
	dst := t.TempDir()
	out, err := runAOF(t, nil, "export", data, dst)
	if err != nil || !strings.Contains(out, "(2 records)") || !strings.Contains(out, "left out a torn last write") {
		t.Fatalf("export of a torn AOF: %v\n%s", err, out)
	}
	if got := keysIn(t, filepath.Join(dst, "dump.rdb")); got != "q" {
		t.Fatalf("the export holds %q", got)
	}
	b[10] ^= 0x20
	os.WriteFile(incr, b, 0o644)
	_, err = runAOF(t, nil, "export", data, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), incr) || !strings.Contains(err.Error(), "offset: 0") {
		t.Fatalf("export of a damaged AOF: %v", err)
	}
}
