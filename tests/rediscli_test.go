package tests

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// bbCLI runs redis-cli with formatted (--no-raw) output, as a person sees
// it in a terminal, and trims the final newline.
func bbCLI(t *testing.T, s *Server, args ...string) string {
	t.Helper()
	return strings.TrimSuffix(s.CLI(t, append([]string{"--no-raw"}, args...)...), "\n")
}

func TestRedisCLIListQueue(t *testing.T) {
	s := StartServer(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"RPUSH", "queue", "job1", "job2", "job3"}, "(integer) 3"},
		{[]string{"LRANGE", "queue", "0", "-1"}, "1) \"job1\"\n2) \"job2\"\n3) \"job3\""},
		{[]string{"BLPOP", "queue", "1"}, "1) \"queue\"\n2) \"job1\""},
		{[]string{"LLEN", "queue"}, "(integer) 2"},
		{[]string{"BLPOP", "empty", "0.1"}, "(nil)"},
		{[]string{"LPOP", "empty"}, "(nil)"},
		{[]string{"LRANGE", "empty", "0", "-1"}, "(empty array)"},
		{[]string{"BRPOP", "queue", "1"}, "1) \"queue\"\n2) \"job3\""},
		{[]string{"LPOS", "queue", "job2"}, "(integer) 0"},
		{[]string{"SET", "greeting", "hello world"}, "OK"},
		{[]string{"GET", "greeting"}, "\"hello world\""},
		{[]string{"TYPE", "queue"}, "list"},
	} {
		if got := bbCLI(t, s, tc.args...); got != tc.want {
			t.Errorf("redis-cli %s:\n%s\nwant:\n%s", strings.Join(tc.args, " "), got, tc.want)
		}
	}
	// Without a terminal redis-cli prints raw replies.
	if got := s.CLI(t, "LRANGE", "queue", "0", "-1"); got != "job2\n" {
		t.Errorf("raw LRANGE = %q", got)
	}
	// Commands piped on stdin run in order on one connection.
	got := runCLI(t, s.Port, "RPUSH q2 a b\nBRPOP q2 1\nLLEN q2\nLPOP nothing\nINCR q2\n")
	want := "2\nq2\nb\n1\n\nWRONGTYPE Operation against a key holding the wrong kind of value\n\n"
	if got != want {
		t.Errorf("redis-cli with commands on stdin printed %q, want %q", got, want)
	}
}

func TestRedisCLIHello3(t *testing.T) {
	s := StartServer(t)
	out := bbCLI(t, s, "-3", "HELLO", "3")
	lines := strings.Split(out, "\n")
	want := []string{
		`1# "server" => "redis"`,
		`2# "version" => "`,
		`3# "proto" => (integer) 3`,
		`4# "id" => (integer) `,
		`5# "mode" => "standalone"`,
		`6# "role" => "master"`,
		`7# "modules" => (empty array)`,
	}
	if len(lines) != len(want) {
		t.Fatalf("redis-cli -3 HELLO 3 printed:\n%s", out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i+1, lines[i], w)
		}
	}
	if got := bbCLI(t, s, "-3", "CONFIG", "GET", "maxclients"); got != `1# "maxclients" => "10000"` {
		t.Errorf("redis-cli -3 CONFIG GET maxclients = %q", got)
	}
	if got := bbCLI(t, s, "-3", "GET", "nokey"); got != "(nil)" {
		t.Errorf("redis-cli -3 GET nokey = %q", got)
	}
	if got := bbCLI(t, s, "-3", "CLIENT", "INFO"); !strings.Contains(got, "resp=3") {
		t.Errorf("redis-cli -3 CLIENT INFO = %q, want resp=3", got)
	}
}

func TestRedisCLIClientListInfo(t *testing.T) {
	s := StartServer(t)
	list := s.CLI(t, "CLIENT", "LIST")
	if strings.Count(list, "\n") != 1 || !strings.HasPrefix(list, "id=") || !strings.Contains(list, " cmd=client|list ") {
		t.Errorf("redis-cli CLIENT LIST = %q", list)
	}
	if got := bbCLI(t, s, "SET", "k", "v"); got != "OK" {
		t.Fatal(got)
	}
	info := s.CLI(t, "INFO")
	for _, want := range []string{"# Server", "redis_version:", "# Clients", "connected_clients:1", "# Keyspace", "db0:keys=1,expires=0"} {
		if !strings.Contains(info, want) {
			t.Errorf("redis-cli INFO lacks %q", want)
		}
	}
	if got := s.CLI(t, "INFO", "keyspace"); !strings.HasPrefix(got, "# Keyspace\r\ndb0:keys=1,expires=0,") && !strings.HasPrefix(got, "# Keyspace\ndb0:keys=1,expires=0,") {
		t.Errorf("redis-cli INFO keyspace = %q", got)
	}
	// --stat and PING use INFO and PING as Redis's tools expect.
	if got := bbCLI(t, s, "PING"); got != "PONG" {
		t.Errorf("redis-cli PING = %q", got)
	}
	if got := bbCLI(t, s, "DBSIZE"); got != "(integer) 1" {
		t.Errorf("redis-cli DBSIZE = %q", got)
	}
}

var bbANSI = regexp.MustCompile("\x1b\\[[0-9;]*[a-zA-Z]")

// bbInteractiveCLI runs redis-cli in interactive mode on a pseudo
// terminal (util-linux script; TERM=dumb so linenoise does not query
// the cursor) and returns what it printed, escape codes removed.
func bbInteractiveCLI(t *testing.T, port int, input string) string {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed; skipping")
	}
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed: cannot give redis-cli a terminal; skipping")
	}
	cx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cx, script, "-qec", cli+" -p "+strconv.Itoa(port), "/dev/null")
	cmd.Env = append(os.Environ(), "TERM=dumb")
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.CombinedOutput()
	if cx.Err() != nil {
		t.Fatalf("interactive redis-cli did not finish:\n%s", out)
	}
	if err != nil {
		t.Fatalf("interactive redis-cli: %v\n%s", err, out)
	}
	return strings.ReplaceAll(bbANSI.ReplaceAllString(string(out), ""), "\r", "")
}

// TestRedisCLIInteractiveHelp: redis-cli builds its help from COMMAND
// DOCS when it starts; it must parse redstream's reply and show the
// summaries.
func TestRedisCLIInteractiveHelp(t *testing.T) {
	s := StartServer(t)
	out := bbInteractiveCLI(t, s.Port, "help get\nhelp client list\nhelp @list\nset k v\nget k\nquit\n")
	for _, want := range []string{
		"summary: Returns the string value of a key.",
		"summary: Lists open connections.",
		"LPUSH",
		"BLPOP",
		"group: string",
		"\"v\"",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("interactive redis-cli output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ERR") {
		t.Errorf("interactive redis-cli printed an error:\n%s", out)
	}
}

// TestRedisCLIHelpShowsArguments: redis-cli shows a command's syntax from
// the "arguments" of COMMAND DOCS ("GET key"); redstream's COMMAND DOCS
// has no arguments, so the help shows the bare name.
func TestRedisCLIHelpShowsArguments(t *testing.T) {
	s := StartServer(t)
	out := bbInteractiveCLI(t, s.Port, "help get\nhelp lpush\nquit\n")
	for _, want := range []string{"GET key", "LPUSH key element [element ...]"} {
		if !strings.Contains(out, want) {
			t.Errorf("redis-cli help lacks %q:\n%s", want, out)
		}
	}
}
