package bench

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchParentEnv makes the test binary act as a bench that launches a
// long-lived child and waits to be killed.
const benchParentEnv = "REDSTREAM_BENCH_TEST_PARENT"

func TestMain(m *testing.M) {
	if dir := os.Getenv(benchParentEnv); dir != "" {
		t := &Target{Name: "child", exe: "/bin/sleep", args: []string{"600"}, dir: dir}
		if err := t.launch(filepath.Join(dir, "child.log")); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(2)
		}
		os.Stdout.WriteString(strconv.Itoa(t.Pid()) + "\n")
		time.Sleep(10 * time.Minute) // until the test kills it
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A server the bench started must not outlive the bench, even one killed
// with SIGKILL (which no handler sees).
func TestServersDieWithTheBench(t *testing.T) {
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), benchParentEnv+"="+t.TempDir())
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the helper bench printed no child pid: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(child, syscall.SIGKILL) // if the test fails
	if err := syscall.Kill(child, 0); err != nil {
		t.Fatalf("child %d not running before the bench dies: %v", child, err)
	}
	parent.Process.Kill()
	parent.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The child is not ours to reap: once it is gone, or a zombie
		// waiting for init, it has died.
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d still running 10 s after its bench was killed", child)
		}
		time.Sleep(10 * time.Millisecond) // polling another process's exit: nothing to block on
	}
}
