package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/redstream/redstream/bench"
	"github.com/redstream/redstream/persistence"
	ucli "github.com/urfave/cli/v2"
)

func snapshotSaveCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "save",
		Usage: "ask a running server for a snapshot (BGSAVE), and with --wait, wait until it is on disk",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "addr", Value: "127.0.0.1:6379", Usage: "the server's host:port"},
			&ucli.StringFlag{Name: "password", Usage: "the requirepass password"},
			&ucli.BoolFlag{Name: "wait", Usage: "wait for the save to finish and report its outcome"},
		},
		Action: runSnapshotSave,
	}
}

func runSnapshotSave(c *ucli.Context) error {
	conn, err := bench.Dial(c.String("addr"))
	if err != nil {
		return err
	}
	defer conn.Close()
	if pw := c.String("password"); pw != "" {
		if _, err := conn.Do("AUTH", pw); err != nil {
			return err
		}
	}
	before, err := infoValue(conn, "rdb_saves")
	if err != nil {
		return err
	}
	start := time.Now()
	r, err := conn.Do("BGSAVE")
	if err != nil {
		return err
	}
	fmt.Fprintln(c.App.Writer, r.Str)
	if !c.Bool("wait") {
		return nil
	}
	took, err := waitForSave(func() (bool, error) {
		busy, err := infoValue(conn, "rdb_bgsave_in_progress")
		return busy != "0", err
	}, c.App.Writer, realClock{}, start)
	if err != nil {
		return err
	}
	status, _ := infoValue(conn, "rdb_last_bgsave_status")
	after, _ := infoValue(conn, "rdb_saves")
	if status != "ok" || after == before {
		return fmt.Errorf("the background save failed (rdb_last_bgsave_status:%s); see the server's log", status)
	}
	fmt.Fprintf(c.App.Writer, "saved in %.3fs\n", took.Seconds())
	return nil
}

// How often `snapshot save --wait` asks whether the save has finished (the
// server has no notification for a save's end): every tenth of the time
// waited so far, within these bounds. The time it reports is then at
// most a tenth (or minSavePoll) over the save's.
const (
	minSavePoll = 10 * time.Millisecond
	maxSavePoll = time.Second
)

// clock is the time waitForSave sees; tests give it a fake one.
type clock interface {
	Now() time.Time
	Sleep(time.Duration)
}

type realClock struct{}

func (realClock) Now() time.Time        { return time.Now() }
func (realClock) Sleep(d time.Duration) { time.Sleep(d) }

// waitForSave polls busy until the save that started at start is over,
// saying so on out once a second, and returns how long it took.
func waitForSave(busy func() (bool, error), out io.Writer, clk clock, start time.Time) (time.Duration, error) {
	said := start
	for {
		saving, err := busy()
		if err != nil {
			return 0, err
		}
		now := clk.Now()
		waited := now.Sub(start)
		if !saving {
			return waited, nil
		}
		if now.Sub(said) >= time.Second {
			fmt.Fprintf(out, "saving... %ds\n", int(waited.Seconds()))
			said = now
		}
		clk.Sleep(min(max(waited/10, minSavePoll), maxSavePoll))
	}
}

func infoValue(conn *bench.Conn, field string) (string, error) {
	r, err := conn.Do("INFO", "persistence")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(r.Str, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("INFO persistence has no %s", field)
}

func snapshotRestoreCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "restore",
		Usage:     "install an RDB file into a server's data directory (with the server stopped)",
		ArgsUsage: "FILE",
		Description: "Checks FILE completely (every key, the checksum), then installs it in DIR as dump.rdb and as the\n" +
			"base of a fresh append-only file, so the server starts from exactly that snapshot whether\n" +
			"appendonly is on or off. Refuses to replace existing data unless --force; with it, the files it\n" +
			"replaces are kept in DIR/quarantine. Takes the data directory's lock, so it refuses while a server runs there.\n" +
			"A file holding hashes, sets, sorted sets, module values or functions (which redstream does not\n" +
			"serve) is refused; with --skip-unsupported the rest is installed and what was left out is listed.",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "dir", Required: true, Usage: "the server's data directory (its dir directive)"},
			&ucli.StringFlag{Name: "dbfilename", Value: "dump.rdb", Usage: "the server's dbfilename"},
			&ucli.StringFlag{Name: "appenddirname", Value: "appendonlydir", Usage: "the server's appenddirname"},
			&ucli.StringFlag{Name: "appendfilename", Value: persistence.DefaultAOFName, Usage: "the server's appendfilename"},
			&ucli.BoolFlag{Name: "force", Usage: "replace the data already in the directory"},
			&ucli.BoolFlag{Name: "skip-unsupported", Usage: "leave out the keys of types redstream does not serve, and list them"},
		},
		Action: runSnapshotRestore,
	}
}

func runSnapshotRestore(c *ucli.Context) error {
	if c.NArg() != 1 {
		return fmt.Errorf("usage: redstream snapshot restore FILE --dir DIR [--force] [--skip-unsupported]")
	}
	src, dir, skip := c.Args().First(), c.String("dir"), c.Bool("skip-unsupported")
	left, err := verifyRDB(src, skip)
	var unsupported *persistence.UnsupportedError
	if errors.As(err, &unsupported) {
		return fmt.Errorf("%s: %w\n(pass --skip-unsupported to restore everything else and list what is left out)", src, err)
	}
	if err != nil {
		return fmt.Errorf("%s is not a sound RDB file: %w", src, err)
	}
	lock, err := persistence.LockDir(dir)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	dump := filepath.Join(dir, c.String("dbfilename"))
	aofDir := filepath.Join(dir, c.String("appenddirname"))
	if !c.Bool("force") {
		if err := refuseExisting(dump, aofDir); err != nil {
			return fmt.Errorf("%w; use --force to replace the data in %s (the old files are kept in %s)", err, dir, quarantineDir(dir))
		}
	}
	err = persistence.Restore(src, persistence.RestoreOptions{Dir: dir, DBFilename: c.String("dbfilename"),
		AOFDir: aofDir, AOFName: c.String("appendfilename"), Quarantine: quarantineDir(dir), SkipUnsupported: skip})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "restored %s into %s (as %s and as the AOF base in %s)\n", src, dir, dump, aofDir)
	left.print(c.App.Writer)
	return nil
}

// skippedNamesShown is how many key names of each type a restore with
// --skip-unsupported lists; the rest are counted.
var skippedNamesShown = 10

// leftOut is what a restore with --skip-unsupported does not install.
type leftOut struct {
	keys      map[string][]string // key names by type, up to skippedNamesShown each
	counts    map[string]int      // keys by type
	functions int                 // function libraries
	moduleAux int                 // module aux sections
}

func (l *leftOut) add(s persistence.Skipped, key []byte) {
	l.counts[s.Kind]++
	if len(l.keys[s.Kind]) < skippedNamesShown {
		l.keys[s.Kind] = append(l.keys[s.Kind], fmt.Sprintf("%q", key))
	}
}

// print lists what was left out, a line per type, or nothing.
func (l *leftOut) print(w io.Writer) {
	types := make([]string, 0, len(l.counts))
	for t := range l.counts {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		n, names := l.counts[t], l.keys[t]
		more := ""
		if n > len(names) {
			more = fmt.Sprintf(", and %d more", n-len(names))
		}
		fmt.Fprintf(w, "skipped %d %s keys: %s%s\n", n, t, strings.Join(names, ", "), more)
	}
	if l.functions > 0 {
		fmt.Fprintf(w, "skipped %d function libraries\n", l.functions)
	}
	if l.moduleAux > 0 {
		fmt.Fprintf(w, "skipped %d module aux sections\n", l.moduleAux)
	}
}

// diagnose says whether the damage that stopped decoding f is a changed
// byte rather than a cut (persistence.DiagnoseDamage).
func diagnose(f *os.File, err error) error {
	info, serr := f.Stat()
	if serr != nil {
		return err
	}
	return persistence.DiagnoseDamage(f, info.Size(), err)
}

// verifyRDB decodes the whole file, checksum included. With skip, the
// values redstream does not serve are stepped over and listed in the
// result; without, the first is an *persistence.UnsupportedError.
func verifyRDB(path string, skip bool) (*leftOut, error) {
	left := &leftOut{keys: map[string][]string{}, counts: map[string]int{}}
	f, err := os.Open(path)
	if err != nil {
		return left, err
	}
	defer f.Close()
	dec := persistence.NewDecoder(f, &persistence.DecodeOptions{SkipUnsupported: skip})
	for {
		e, err := dec.Next()
		if errors.Is(err, io.EOF) {
			st := dec.Stats()
			left.functions, left.moduleAux = st.SkippedFuncs, st.SkippedModAux
			return left, nil
		}
		if err != nil {
			return left, diagnose(f, err)
		}
		if s, ok := e.Value.(persistence.Skipped); ok {
			left.add(s, e.Key)
		}
	}
}
