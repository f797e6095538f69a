// Package cli is the redstream command: it reads configuration, wires the
// server to its log and replication, and hosts the administrative
// subcommands. It is the only package that knows all the others.
package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/redstream/redstream/server"
	ucli "github.com/urfave/cli/v2"
)

// Run runs the redstream command with args (os.Args) and returns the exit
// status.
func Run(args []string) int {
	app := newApp(os.Stdout, os.Stderr)
	if err := app.Run(configFileLast(args)); err != nil {
		fmt.Fprintln(os.Stderr, "redstream:", err)
		return 1
	}
	return 0
}

// configFileLast lets `redstream server FILE --port 7000` work as
// redis-server's `redis-server FILE --port 7000` does: urfave/cli stops
// reading flags at the first plain argument, so move the config file
// behind the flags. Every server flag takes a value.
func configFileLast(args []string) []string {
	if len(args) < 3 || args[1] != "server" {
		return args
	}
	out := []string{args[0], args[1]}
	var plain []string
	for i := 2; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			plain = append(plain, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && a != "-h" && a != "--help" && i+1 < len(args):
			out = append(out, a, args[i+1])
			i++
		case strings.HasPrefix(a, "-"):
			out = append(out, a)
		default:
			plain = append(plain, a)
		}
	}
	return append(out, plain...)
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
			snapshotCommand(),
		},
		HideHelpCommand: true,
	}
}
