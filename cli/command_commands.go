package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/redstream/redstream/server"
	ucli "github.com/urfave/cli/v2"
)

// commandsCommand prints the command table; `--markdown` prints the
// README's command list, which a test keeps in step with the table.
func commandsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "commands",
		Usage: "list the commands this build serves",
		Flags: []ucli.Flag{&ucli.BoolFlag{Name: "markdown", Usage: "print the README's markdown table"}},
		Action: func(c *ucli.Context) error {
			if c.Bool("markdown") {
				return writeCommandsMarkdown(c.App.Writer)
			}
			for _, d := range server.CommandDocs() {
				fmt.Fprintf(c.App.Writer, "%s %s\n", d.Name, d.Syntax)
			}
			return nil
		},
	}
}

// writeCommandsMarkdown writes one table per command group.
func writeCommandsMarkdown(w io.Writer) error {
	group := ""
	for _, d := range server.CommandDocs() {
		if d.Group != group {
			if group != "" {
				fmt.Fprintln(w)
			}
			group = d.Group
			fmt.Fprintf(w, "#### %s\n\n| command | arguments | since |\n| --- | --- | --- |\n", group)
		}
		syntax := d.Syntax
		if syntax != "" {
			syntax = "`" + strings.ReplaceAll(syntax, "|", "\\|") + "`"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", d.Name, syntax, d.Since)
	}
	return nil
}
