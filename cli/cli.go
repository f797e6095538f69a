// Package cli is the redstream command: it reads configuration, wires the
// server to its log and replication, and hosts the administrative
// subcommands. It is the only package that knows all the others.
package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/redstream/redstream/server"
	ucli "github.com/urfave/cli/v2"
)

// Run runs the redstream command with args (os.Args) and returns the exit
// status.
func Run(args []string) int {
	app := newApp(os.Stdout, os.Stderr)
	if err := app.Run(args); err != nil {
		fmt.Fprintln(os.Stderr, "redstream:", err)
		return 1
	}
	return 0
}

func newApp(stdout, stderr io.Writer) *ucli.App {
	return &ucli.App{
		Name:      "redstream",
		Usage:     "a Redis-protocol server for queues and streams whose acknowledged writes are durable",
		Version:   server.Version,
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: []*ucli.Command{
			serverCommand(),
			commandsCommand(),
			benchCommand(),
		},
		HideHelpCommand: true,
	}
}
