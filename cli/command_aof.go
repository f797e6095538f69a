package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/redstream/redstream/persistence"
	ucli "github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// aofCommand is `redstream aof`: tools for the append-only file.
func aofCommand() *ucli.Command {
	return &ucli.Command{
		Name:        "aof",
		Usage:       "work with the append-only file",
		Subcommands: []*ucli.Command{aofCheckCommand(), aofExportCommand()},
	}
}

func aofCheckCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "check",
		Usage:     "validate an AOF directory; with --fix, repair it",
		ArgsUsage: "DIR",
		Description: "Checks the AOF in DIR (the appenddirname directory, such as data/appendonlydir; given the data\n" +
			"directory, it checks the AOF directory in it) as a server start would: the manifest\n" +
			"against the files present, then every file it lists, reporting where each stops being valid.\n" +
			"With --fix, after asking (or at once with --yes), it rebuilds a lost or wrong manifest from the\n" +
			"files present, and cuts the first damaged file at its last whole frame. Nothing is deleted: the\n" +
			"old manifest and the cut bytes are kept in the data directory's quarantine folder. --fix takes\n" +
			"the data directory's lock (DIR's parent), so it refuses while a server uses it.",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "name", Value: persistence.DefaultAOFName, Usage: "appendfilename"},
			&ucli.BoolFlag{Name: "fix", Usage: "rebuild the manifest or cut the damaged tail"},
			&ucli.BoolFlag{Name: "yes", Usage: "do not ask before changing anything"},
			&ucli.StringFlag{Name: "progress", Value: "auto", Usage: "auto (a bar on a terminal, lines otherwise), bar, lines or off"},
		},
		Action: runAOFCheck,
	}
}

func runAOFCheck(c *ucli.Context) error {
	if c.NArg() != 1 {
		return fmt.Errorf("usage: redstream aof check DIR [--fix] [--yes]")
	}
	if err := checkProgressMode(c.String("progress")); err != nil {
		return err
	}
	name := c.String("name")
	dir, err := findAOFDir(c.Args().First(), name)
	if err != nil {
		return err
	}
	if dir != c.Args().First() {
		fmt.Fprintf(c.App.Writer, "checking %s, the AOF directory in %s\n", dir, c.Args().First())
	}
	if c.Bool("fix") && !c.Bool("yes") && !canAsk(c.App.Reader) {
		return fmt.Errorf("--fix asks before it changes anything, and there is no terminal to ask on: pass --yes to go ahead without asking")
	}
	if c.Bool("fix") {
		lock, err := persistence.LockDir(filepath.Dir(filepath.Clean(dir)))
		if err != nil {
			return err
		}
		defer lock.Unlock()
	}
	reports, err := checkAOF(c, dir, name)
	if errors.Is(err, persistence.ErrManifest) {
		if !c.Bool("fix") {
			return fmt.Errorf("%w\nrun with --fix to rebuild the manifest from the files present", err)
		}
		fmt.Fprintln(c.App.Writer, userMessage(err))
		if err := rebuildManifest(c, dir, name); err != nil {
			return err
		}
		reports, err = checkAOF(c, dir, name)
	}
	if err != nil {
		return err
	}
	bad := printReports(c.App.Writer, reports)
	if bad == nil {
		fmt.Fprintln(c.App.Writer, "AOF is valid")
		return nil
	}
	if !c.Bool("fix") {
		return fmt.Errorf("AOF is damaged in %s at offset %d; run with --fix to cut it there", bad.Name, bad.Good)
	}
	return cutDamaged(c, filepath.Join(dir, bad.Name), *bad)
}

// findAOFDir returns the AOF directory to check for dir as given: dir
// itself when it holds an AOF named name, or the one directory in it that
// does (a data directory given for its appendonlydir; its quarantine
// folder, which may hold old AOF files, is not one).
func findAOFDir(dir, name string) (string, error) {
	if holdsAOF(dir, name) {
		return dir, nil
	}
	subs, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var found []string
	for _, e := range subs {
		sub := filepath.Join(dir, e.Name())
		if e.IsDir() && sub != quarantineDir(dir) && holdsAOF(sub, name) {
			found = append(found, sub)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("%s holds no AOF named %s, nor does any directory in it: pass the AOF directory, "+
			"the server's dir joined with its appenddirname (by default data/appendonlydir), and --name if appendfilename is not %s",
			dir, name, persistence.DefaultAOFName)
	}
	return "", fmt.Errorf("%s holds several AOF directories (%s): pass the one to check", dir, strings.Join(found, ", "))
}

// holdsAOF reports whether dir holds an AOF named name: its manifest or
// one of its files.
func holdsAOF(dir, name string) bool {
	matches, _ := filepath.Glob(filepath.Join(dir, name+".*"))
	return len(matches) > 0
}

// canAsk reports whether a question can be put to the user on in: a
// terminal, or a reader a caller handed in with the answers.
func canAsk(in io.Reader) bool {
	if in == nil {
		in = os.Stdin
	}
	f, ok := in.(*os.File)
	return !ok || term.IsTerminal(int(f.Fd()))
}

func checkAOF(c *ucli.Context, dir, name string) ([]persistence.AOFFileReport, error) {
	var prog progress = noProgress{}
	reports, err := persistence.CheckAOF(dir, name, func(done, total int64) {
		if _, ok := prog.(noProgress); ok && done == 0 {
			prog, _ = newProgress(c.String("progress"), c.App.Writer, total)
		}
		prog.set(done)
	})
	prog.done()
	return reports, err
}

// printReports prints a line per file and returns the first damaged one.
func printReports(out io.Writer, reports []persistence.AOFFileReport) *persistence.AOFFileReport {
	var bad *persistence.AOFFileReport
	for i, r := range reports {
		status := "ok"
		switch {
		case r.Torn:
			status = fmt.Sprintf("TORN at offset %d of %d (a crash cut the last write short; a start with "+
				"aof-load-truncated yes cuts it): %s", r.Good, r.Size, userMessage(r.Err))
		case r.Err != nil:
			status = fmt.Sprintf("DAMAGED at offset %d of %d: %s", r.Good, r.Size, userMessage(r.Err))
		}
		if r.Err != nil && bad == nil {
			bad = &reports[i]
		}
		fmt.Fprintf(out, "%s\t%s\t%d bytes\t%d records\t%s\n", r.Kind, r.Name, r.Size, r.Records, status)
	}
	return bad
}

// rebuildManifest writes a manifest from the files in dir after
// confirmation.
func rebuildManifest(c *ucli.Context, dir, name string) error {
	if !c.Bool("yes") && !confirm(c.App.Reader, c.App.Writer, "Rebuild the manifest from the files present (the old one is kept)? [y/N] ") {
		return fmt.Errorf("manifest not rebuilt")
	}
	says, err := persistence.RebuildManifest(dir, name, quarantineDir(filepath.Dir(filepath.Clean(dir))))
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "rebuilt the manifest of %s:\n%s\n", dir, says)
	return nil
}

// cutDamaged truncates the damaged file after confirmation, keeping what
// it cuts in quarantine.
func cutDamaged(c *ucli.Context, path string, r persistence.AOFFileReport) error {
	if r.Kind == "base" {
		return fmt.Errorf("the base snapshot %s is damaged; restore it from a backup (redstream snapshot restore)", r.Name)
	}
	lost := r.Size - r.Good
	if !c.Bool("yes") && !confirm(c.App.Reader, c.App.Writer, fmt.Sprintf("Cut %s at offset %d, losing %d bytes? [y/N] ", path, r.Good, lost)) {
		return fmt.Errorf("not cut")
	}
	dataDir := filepath.Dir(filepath.Dir(path))
	kept, err := persistence.CutAOFFile(path, r.Good, quarantineDir(dataDir))
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "cut %s at offset %d (%d bytes dropped", path, r.Good, lost)
	if kept != "" {
		fmt.Fprintf(c.App.Writer, "; the cut bytes are kept in %s", kept)
	}
	fmt.Fprintln(c.App.Writer, ")")
	return nil
}

func confirm(in io.Reader, out io.Writer, question string) bool {
	if in == nil {
		in = os.Stdin
	}
	fmt.Fprint(out, question)
	line, _ := bufio.NewReader(in).ReadString('\n')
	return strings.EqualFold(strings.TrimSpace(line), "y") || strings.EqualFold(strings.TrimSpace(line), "yes")
}
