// Package cli is the redstream command: it reads configuration, wires the
// server to its log and replication, and hosts the administrative
// subcommands. It is the only package that knows all the others.
package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/redstream/redstream/server"
	ucli "github.com/urfave/cli/v2"
)

// Run runs the redstream command with args (os.Args) and returns the exit
// status.
func Run(args []string) int {
	app := newApp(os.Stdout, os.Stderr)
	if err := app.Run(flagsFirst(app, args)); err != nil {
		fmt.Fprintln(os.Stderr, "redstream:", userMessage(err))
		return 1
	}
	return 0
}

// internalPrefixes are the package names our errors start with (as
// bufio's "bufio: buffer full" does): useful in a stack of wrapped
// errors, noise to a user.
var internalPrefixes = []string{"persistence: ", "record: ", "listpack: "}

// userMessage is err's text as a user reads it: without our package
// prefixes.
func userMessage(err error) string {
	msg := err.Error()
	for _, p := range internalPrefixes {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return msg
}

// flagsFirst moves plain arguments behind the flags of the command they
// are given to, so `redstream aof check DIR --fix` and `redstream server
// FILE --port 7000` (redis-server's order) work: urfave/cli stops reading
// flags at the first plain argument. It knows which flags take a value
// from the command's own definitions.
func flagsFirst(app *ucli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	cmds, i := app.Commands, 1
	var leaf *ucli.Command
	for i < len(args) {
		next := findCommand(cmds, args[i])
		if next == nil {
			break
		}
		leaf, cmds, i = next, next.Subcommands, i+1
	}
	if leaf == nil {
		return args
	}
	out := append([]string(nil), args[:i]...)
	var plain []string
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			plain = append(plain, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			out = append(out, a)
			if takesValue(leaf, a) && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
		default:
			plain = append(plain, a)
		}
	}
	return append(out, plain...)
}

func findCommand(cmds []*ucli.Command, name string) *ucli.Command {
	for _, c := range cmds {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether flag (as typed, "--name" or "-n") is one of
// cmd's flags that needs a value in the next argument.
func takesValue(cmd *ucli.Command, flag string) bool {
	if strings.Contains(flag, "=") {
		return false
	}
	name := strings.TrimLeft(flag, "-")
	for _, f := range cmd.Flags {
		if slices.Contains(f.Names(), name) {
			_, isBool := f.(*ucli.BoolFlag)
			return !isBool
		}
	}
	return false
}

func newApp(stdout, stderr io.Writer) *ucli.App {
	return &ucli.App{
		Name:      "redstream",
		Usage:     "a Redis-protocol server for queues and streams whose acknowledged writes are durable",
		Version:   server.Version,
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: []*ucli.Command{
			withDirectiveDefaults(serverCommand()),
			commandsCommand(),
			benchCommand(),
			snapshotCommand(),
			aofCommand(),
			clusterCommand(),
		},
		HideHelpCommand: true,
	}
}

// withDirectiveDefaults makes the help of cmd's directive flags show each
// directive's default, as CONFIG GET shows it. (The flags themselves have
// no Value: a flag that is not set must leave the config file's value.)
func withDirectiveDefaults(cmd *ucli.Command) *ucli.Command {
	defaults := server.DefaultConfig()
	for _, f := range cmd.Flags {
		sf, ok := f.(*ucli.StringFlag)
		if !ok || sf.DefaultText != "" {
			continue
		}
		if v, ok := defaults.Get(sf.Name); ok {
			sf.DefaultText = strconv.Quote(v)
		}
	}
	return cmd
}
