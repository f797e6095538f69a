package tests

import (
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// A port in use stops the server with a message that says how to pick
// another one.
func TestStartOnTakenPortSaysHowToMove(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	code, out := bbRunBinary(t, "server", "--port", port, "--bind", "127.0.0.1", "--dir", t.TempDir())
	if code == 0 || !strings.Contains(out, "address already in use") || !strings.Contains(out, "--port") ||
		!strings.Contains(out, "make run ARGS=") {
		t.Fatalf("exit %d, output does not say how to choose another port:\n%s", code, out)
	}
}

// port 0 turns TCP off as in Redis; with no unix socket there is
// nothing to listen on, and the server says so.
func TestPortZeroWithoutSocketRefuses(t *testing.T) {
	code, out := bbRunBinary(t, "server", "--port", "0", "--dir", t.TempDir())
	if code == 0 || !strings.Contains(out, "not listen anywhere") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// make run takes a port and any server arguments, and without them runs
// exactly what it always ran.
func TestMakeRunTakesArguments(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "./bin/redstream server"},
		{[]string{"PORT=6380"}, "./bin/redstream server --port 6380"},
		{[]string{"ARGS=--port 6381 --appendonly no"}, "./bin/redstream server --port 6381 --appendonly no"},
		{[]string{"ARGS=redstream.conf"}, "./bin/redstream server redstream.conf"},
	} {
		cmd := exec.Command("make", append([]string{"-s", "-n", "-C", "..", "run"}, tc.args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n run %v: %v\n%s", tc.args, err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if got := strings.TrimSpace(lines[len(lines)-1]); got != tc.want {
			t.Errorf("make run %v runs %q, want %q", tc.args, got, tc.want)
		}
	}
}
