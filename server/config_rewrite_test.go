package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redstream/redstream/resp"
)

// CONFIG REWRITE's rules (config_rewrite.go), case by case.
func TestRewriteConfig(t *testing.T) {
	old := strings.Join([]string{
		"# redstream for the queue service",
		"port 7000",
		"",
		"",
		"maxmemory 100mb   ",
		"  timeout 10",
		"nosuchdirective yes",
		"list-max-ziplist-size -2",
		"timeout 20",
		"requirepass \"two words\"",
	}, "\n") + "\n"
	cfg := DefaultConfig()
	cfg.Port = 7000
	cfg.MaxMemory = 100 << 20
	cfg.Timeout = 60                // set twice in the file: the first line takes it, the second goes
	cfg.RequirePass = "two words"   // quoted in the file: left as written
	cfg.MaxClients = 88             // not in the file, not the default: added
	cfg.Dir = "/var/lib/red stream" // added, quoted
	cfg.ListMaxListpackSize = -2    // set through its alias, unchanged
	cfg.Save = ""                   // added as save ""
	cfg.Bind = []string{"10.0.0.1", "-::1"}
	got := string(rewriteConfig([]byte(old), &cfg))
	want := strings.Join([]string{
		"# redstream for the queue service",
		"port 7000",
		"",
		"maxmemory 100mb",
		"timeout 60",
		"# ??? nosuchdirective yes",
		"list-max-ziplist-size -2",
		"",
		"requirepass \"two words\"",
		rewriteSignature,
		"bind 10.0.0.1 -::1",
		"maxclients 88",
		"dir \"/var/lib/red stream\"",
		"save \"\"",
	}, "\n") + "\n"
	if got != want {
		t.Fatalf("rewrote\n%s\nwant\n%s", got, want)
	}
	// Rewriting what it wrote changes nothing; reading it gives cfg.
	if again := string(rewriteConfig([]byte(got), &cfg)); again != got {
		t.Fatalf("a second rewrite changed the file:\n%s", again)
	}
	read := readConfigText(t, got)
	for _, p := range params {
		if a, b := p.get(&read), p.get(&cfg); a != b {
			t.Errorf("%s: the rewritten file gives %q, the server runs %q", p.name, a, b)
		}
	}
}

// A value with any byte in it is written so that it reads back the same.
func TestRewriteConfigQuotes(t *testing.T) {
	for _, v := range []string{"plain", "", "a b", `q"uote`, `back\slash`, "it's", "tab\there", "nl\nx", "\x01\xff", "#hash"} {
		cfg := DefaultConfig()
		cfg.RequirePass = v
		read := readConfigText(t, string(rewriteConfig(nil, &cfg)))
		if read.RequirePass != v {
			t.Errorf("requirepass %q reads back as %q", v, read.RequirePass)
		}
	}
}

// The file is replaced whole, keeping its permissions; with no file the
// command says so, as Redis does.
func TestConfigRewriteCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "redstream.conf")
	if err := os.WriteFile(path, []byte("# mine\nmaxclients 10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, nil)
	c := connect(t, s)
	if got := c.do("CONFIG", "REWRITE"); got != "-ERR The server is running without a config file\r\n" {
		t.Fatalf("CONFIG REWRITE without a file = %q", got)
	}
	s.configFile = path
	c.do("CONFIG", "SET", "maxclients", "20")
	if got := c.do("CONFIG", "REWRITE"); got != "+OK\r\n" {
		t.Fatalf("CONFIG REWRITE = %q", got)
	}
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), "# mine\nmaxclients 20\n"+rewriteSignature+"\n") {
		t.Fatalf("file after CONFIG REWRITE:\n%s", data)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("the rewritten file's mode is %v, want 0600 as before", st.Mode().Perm())
	}
	leftovers, _ := filepath.Glob(path + ".tmp-*")
	if len(leftovers) != 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
}

// readConfigText reads a config file's text the way a start does.
func readConfigText(t *testing.T, text string) Config {
	t.Helper()
	cfg := DefaultConfig()
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		words, ok := resp.SplitArgs(nil, []byte(line))
		if !ok {
			t.Fatalf("unreadable line %q", line)
		}
		args := make([]string, len(words)-1)
		for i, w := range words[1:] {
			args[i] = string(w)
		}
		if err := cfg.Set(string(words[0]), args); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
	}
	return cfg
}
