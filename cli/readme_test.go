package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/redstream/redstream/persistence"
	ucli "github.com/urfave/cli/v2"
)

// TestREADMECommands keeps the README's command list equal to the command
// table. `make readme` (UPDATE_README=1) rewrites it.
func TestREADMECommands(t *testing.T) {
	const begin, end = "<!-- commands:begin -->\n", "<!-- commands:end -->"
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := writeCommandsMarkdown(&want); err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the %q ... %q markers", begin, end)
	}
	got := text[i+len(begin) : j]
	if got == want.String() {
		return
	}
	if os.Getenv("UPDATE_README") != "" {
		updated := text[:i+len(begin)] + want.String() + text[j:]
		if err := os.WriteFile("../README.md", []byte(updated), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's command list is out of date with the command table; run `make readme`")
}

func TestFlagsFirst(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	cases := []struct{ in, want string }{
		{"rs server a.conf --port 7000", "rs server --port 7000 a.conf"},
		{"rs server --port 7000 a.conf", "rs server --port 7000 a.conf"},
		{"rs server a.conf --port=7000 --bind x", "rs server --port=7000 --bind x a.conf"},
		{"rs server", "rs server"},
		{"rs aof check DIR --fix --yes", "rs aof check --fix --yes DIR"},
		{"rs snapshot restore F --dir D --force", "rs snapshot restore --dir D --force F"},
		{"rs bench --rounds 1", "rs bench --rounds 1"},
		{"rs nosuch x --y", "rs nosuch x --y"},
	}
	for _, c := range cases {
		if got := strings.Join(flagsFirst(app, strings.Fields(c.in)), " "); got != c.want {
			t.Errorf("flagsFirst(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestUserMessage: errors reach users without our package prefixes.
func TestUserMessage(t *testing.T) {
	err := fmt.Errorf("loading dump.rdb: %w", fmt.Errorf("%w: bad", persistence.ErrRDBCorrupt))
	if got, want := userMessage(err), "loading dump.rdb: RDB file corrupt: bad"; got != want {
		t.Fatalf("userMessage = %q, want %q", got, want)
	}
}

// TestFlagHelp: every flag of every command says what it is, and the
// server's directive flags show their defaults.
func TestFlagHelp(t *testing.T) {
	var walk func(path string, cmds []*ucli.Command)
	walk = func(path string, cmds []*ucli.Command) {
		for _, c := range cmds {
			for _, f := range c.Flags {
				doc, ok := f.(ucli.DocGenerationFlag)
				if !ok || doc.GetUsage() == "" {
					t.Errorf("%s %s --%s has no usage text", path, c.Name, f.Names()[0])
				}
				if c.Name == "server" && !strings.Contains(f.String(), "(default: ") {
					t.Errorf("server --%s shows no default: %s", f.Names()[0], f)
				}
			}
			walk(path+" "+c.Name, c.Subcommands)
		}
	}
	walk("redstream", newApp(io.Discard, io.Discard).Commands)
	help := ""
	for _, f := range findCommand(newApp(io.Discard, io.Discard).Commands, "server").Flags {
		if f.Names()[0] == "appendfsync" {
			help = f.String()
		}
	}
	if !strings.Contains(help, `(default: "always")`) {
		t.Errorf("server --appendfsync help: %q", help)
	}
}
