package persistence

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// redisServer is a redis-server child process on a unix socket in its own
// directory, for side-by-side tests. Tests using it are skipped when
// redis-server is not installed.
type redisServer struct {
	dir  string
	cmd  *exec.Cmd
	log  *bytes.Buffer
	conn *respConn
}

func needRedis(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	return path
}

// startRedis starts redis-server in dir, loading dir/dump.rdb if present.
// Extra arguments are config directives ("--name", "value").
func startRedis(t testing.TB, dir string, extra ...string) *redisServer {
	t.Helper()
	bin := needRedis(t)
	sock := filepath.Join(dir, "redis.sock")
	args := append([]string{"--port", "0", "--unixsocket", sock, "--dir", dir, "--dbfilename", "dump.rdb",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", ""}, extra...)
	rs := &redisServer{dir: dir, log: &bytes.Buffer{}}
	rs.cmd = exec.Command(bin, args...)
	rs.cmd.Stdout, rs.cmd.Stderr = rs.log, rs.log
	if err := rs.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.stop)
	exited := make(chan struct{})
	go func() { rs.cmd.Wait(); close(exited) }()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("redis-server exited while starting:\n%s", rs.log)
		default:
		}
		c, err := net.Dial("unix", sock)
		if err != nil {
			continue
		}
		rs.conn = &respConn{c: c, r: bufio.NewReader(c)}
		if v, err := rs.conn.do("PING"); err == nil && v == "PONG" {
			return rs
		}
		c.Close()
	}
	t.Fatalf("redis-server did not answer:\n%s", rs.log)
	return nil
}

func (rs *redisServer) stop() {
	if rs.conn != nil {
		rs.conn.c.Close()
	}
	if rs.cmd.Process != nil {
		rs.cmd.Process.Kill()
	}
}

// must runs a command and fails the test on an error reply.
func (rs *redisServer) must(t testing.TB, args ...string) any {
	t.Helper()
	v, err := rs.conn.do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if e, ok := v.(respError); ok {
		t.Fatalf("%v: %s", args, e)
	}
	return v
}

// save runs SAVE and returns the file's bytes.
func (rs *redisServer) save(t testing.TB) []byte {
	t.Helper()
	rs.must(t, "SAVE")
	b, err := os.ReadFile(filepath.Join(rs.dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// respConn speaks raw RESP2: commands as arrays of bulk strings, replies
// parsed into string, int64, []any, nil or respError.
type respConn struct {
	c net.Conn
	r *bufio.Reader
}

type respError string

func (c *respConn) do(args ...string) (any, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.c.Write(b.Bytes()); err != nil {
		return nil, err
	}
	return c.reply()
}

func (c *respConn) reply() (any, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, errors.New("short RESP line")
	}
	body := strings.TrimSuffix(line[1:], "\r\n")
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return respError(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		return c.bulk(body)
	case '*':
		return c.array(body)
	}
	return nil, fmt.Errorf("unexpected RESP type %q", line[0])
}

func (c *respConn) bulk(body string) (any, error) {
	n, err := strconv.Atoi(body)
	if err != nil || n < 0 {
		return nil, err
	}
	p := make([]byte, n+2)
	if _, err := io.ReadFull(c.r, p); err != nil {
		return nil, err
	}
	return string(p[:n]), nil
}

func (c *respConn) array(body string) (any, error) {
	n, err := strconv.Atoi(body)
	if err != nil || n < 0 {
		return nil, err
	}
	out := make([]any, n)
	for i := range out {
		if out[i], err = c.reply(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
