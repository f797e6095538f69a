package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/redstream/redstream/persistence"
	ucli "github.com/urfave/cli/v2"
)

// aofCommand is `redstream aof`: tools for the append-only file.
func aofCommand() *ucli.Command {
	return &ucli.Command{
		Name:        "aof",
		Usage:       "work with the append-only file",
		Subcommands: []*ucli.Command{aofCheckCommand()},
	}
}

func aofCheckCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "check",
		Usage:     "validate an AOF directory; with --fix, cut a damaged tail",
		ArgsUsage: "DIR",
		Description: "Reads every file the manifest in DIR (the appenddirname directory) lists, as a load would, and\n" +
			"reports where each stops being valid. With --fix it cuts the first damaged file at the last whole\n" +
			"frame, after asking (or at once with --yes); everything after that point is lost.",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "name", Value: "appendonly.aof", Usage: "appendfilename"},
			&ucli.BoolFlag{Name: "fix", Usage: "cut the damaged tail"},
			&ucli.BoolFlag{Name: "yes", Usage: "do not ask before cutting"},
			&ucli.StringFlag{Name: "progress", Value: "auto", Usage: "auto, bar, lines or off"},
		},
		Action: runAOFCheck,
	}
}

func runAOFCheck(c *ucli.Context) error {
	if c.NArg() != 1 {
		return fmt.Errorf("usage: redstream aof check DIR [--fix] [--yes]")
	}
	dir, out := c.Args().First(), c.App.Writer
	var prog progress = noProgress{}
	reports, err := persistence.CheckAOF(dir, c.String("name"), func(done, total int64) {
		if _, ok := prog.(noProgress); ok && done == 0 {
			prog, _ = newProgress(c.String("progress"), out, total)
		}
		prog.set(done)
	})
	prog.done()
	if err != nil {
		return err
	}
	var bad *persistence.AOFFileReport
	for i, r := range reports {
		status := "ok"
		if r.Err != nil {
			status = fmt.Sprintf("DAMAGED at offset %d of %d: %v", r.Good, r.Size, r.Err)
			if bad == nil {
				bad = &reports[i]
			}
		}
		fmt.Fprintf(out, "%s\t%s\t%d bytes\t%d records\t%s\n", r.Kind, r.Name, r.Size, r.Records, status)
	}
	if bad == nil {
		fmt.Fprintln(out, "AOF is valid")
		return nil
	}
	if !c.Bool("fix") {
		return fmt.Errorf("AOF is damaged in %s at offset %d; run with --fix to cut it there", bad.Name, bad.Good)
	}
	return cutDamaged(c, filepath.Join(dir, bad.Name), *bad)
}

// cutDamaged truncates the damaged file after confirmation.
func cutDamaged(c *ucli.Context, path string, r persistence.AOFFileReport) error {
	if r.Kind == "base" {
		return fmt.Errorf("the base snapshot %s is damaged; restore it from a backup (redstream snapshot restore)", r.Name)
	}
	lost := r.Size - r.Good
	if !c.Bool("yes") && !confirm(c.App.Reader, c.App.Writer, fmt.Sprintf("Cut %s at offset %d, losing %d bytes? [y/N] ", path, r.Good, lost)) {
		return fmt.Errorf("not cut")
	}
	if err := persistence.CutAOFFile(path, r.Good); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "cut %s at offset %d (%d bytes dropped)\n", path, r.Good, lost)
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
