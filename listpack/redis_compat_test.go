package listpack

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAgainstRedis replays random list commands on a real Redis and on a
// Quicklist, and after every command compares Redis's DUMP of the key
// (node by node, byte for byte) and OBJECT ENCODING with ours. It runs
// against the disposable Redis named by REDSTREAM_TEST_REDIS (host:port;
// it changes list-max-listpack-size and rdbcompression there) or else a
// redis-server it starts from PATH, and is skipped only when there is
// neither. Node layout and encodings are Redis 7.2's (and 8's); an older
// Redis (Debian's 7.0) lays out nodes differently, so against it only the
// elements are compared, after every command, and the node-boundary cases
// are left out.
func TestAgainstRedis(t *testing.T) {
	addr := os.Getenv("REDSTREAM_TEST_REDIS")
	if addr == "" {
		addr = startRedis(t)
	}
	c, err := dialRESP(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.conn.Close()
	c.layout = redisVersionAtLeast(t, c, 7, 2)
	if !c.layout {
		t.Log("Redis older than 7.2: comparing elements, not node layout")
	}
	c.must(t, "CONFIG", "SET", "rdbcompression", "no")
	for _, fill := range []int{-2, -1, 1, 3, 7} {
		t.Run(fmt.Sprintf("fill=%d", fill), func(t *testing.T) {
			c.must(t, "CONFIG", "SET", "list-max-listpack-size", strconv.Itoa(fill))
			compareRun(t, c, fill, rand.New(rand.NewSource(int64(fill))))
		})
	}
	if !c.layout {
		return
	}
	// Fixed-size values that land exactly on node boundaries, where the
	// listpack rule (bytes + n <= limit) and the quicklist rule (bytes + n
	// + 8 <= limit) disagree.
	for _, tc := range []struct {
		fill, n int
		v       string
	}{
		{-1, 1500, "zzzzz"}, {-2, 1000, "0123456789abcdef"}, {5, 20, "x"},
		{-1, 2500, "ab"}, {-2, 3600, "abc"}, // a full node ends 1 byte short of taking one more
	} {
		t.Run(fmt.Sprintf("boundary/fill=%d/%q", tc.fill, tc.v), func(t *testing.T) {
			c.must(t, "CONFIG", "SET", "list-max-listpack-size", strconv.Itoa(tc.fill))
			key := "redstream:listpack:boundary"
			for _, push := range []string{"RPUSH", "LPUSH"} {
				c.must(t, "DEL", key)
				q := NewQuicklist(tc.fill)
				for range tc.n {
					c.must(t, push, key, tc.v)
					if push == "RPUSH" {
						q.PushTail([]byte(tc.v))
					} else {
						q.PushHead([]byte(tc.v))
					}
					compareDump(t, c, key, q, []string{push})
				}
			}
		})
	}
	c.must(t, "CONFIG", "SET", "list-max-listpack-size", "-2")
}

// compareRun drives one key through random commands.
func compareRun(t *testing.T, c *respConn, fill int, r *rand.Rand) {
	key := "redstream:listpack:compat"
	c.must(t, "DEL", key)
	q := NewQuicklist(fill)
	val := func() []byte {
		switch r.Intn(10) {
		case 0:
			return []byte(strconv.Itoa(r.Intn(100000) - 50000))
		case 1:
			return bytes.Repeat([]byte{'m'}, 100+r.Intn(400))
		case 2:
			if r.Intn(6) == 0 {
				return bytes.Repeat([]byte{'L'}, 9000+r.Intn(100))
			}
			return []byte("010")
		}
		return []byte("v" + strconv.Itoa(r.Intn(15)))
	}
	maxLen, maxNodes := 0, 0
	defer func() { t.Logf("longest list %d elements, most nodes %d", maxLen, maxNodes) }()
	for i := range 3000 {
		n := q.Len()
		maxLen, maxNodes = max(maxLen, n), max(maxNodes, q.NodeCount())
		grow := (i/500)%3 != 2
		op := r.Intn(10)
		if n == 0 || (grow && r.Intn(10) != 0) {
			op = r.Intn(2)
		}
		var cmd []string
		switch op {
		case 0, 1:
			vs := [][]byte{val()}
			for r.Intn(3) == 0 {
				vs = append(vs, val())
			}
			cmd = []string{[]string{"RPUSH", "LPUSH"}[op], key}
			for _, v := range vs {
				cmd = append(cmd, string(v))
			}
			if op == 0 {
				q.PushTail(vs...)
			} else {
				q.PushHead(vs...)
			}
		case 2:
			cmd = []string{"LPOP", key}
			q.PopHead()
		case 3:
			k := 1 + r.Intn(5)
			cmd = []string{"RPOP", key, strconv.Itoa(k)}
			for range k {
				q.PopTail()
			}
		case 4:
			pivot, v, after := val(), val(), r.Intn(2) == 0
			cmd = []string{"LINSERT", key, map[bool]string{true: "AFTER", false: "BEFORE"}[after], string(pivot), string(v)}
			at := -1
			q.Iter(false, func(i int, e []byte) bool {
				if bytes.Equal(e, pivot) {
					at = i
					return false
				}
				return true
			})
			switch {
			case at < 0:
				q.BeforeAdd(len(v), 1)
			case after:
				q.InsertAfter(at, v)
			default:
				q.Insert(at, v)
			}
		case 5:
			i, v := r.Intn(2*n+2)-n-1, val()
			cmd = []string{"LSET", key, strconv.Itoa(i), string(v)}
			q.Set(i, v)
		case 6:
			v, k := val(), r.Intn(5)-2
			cmd = []string{"LREM", key, strconv.Itoa(k), string(v)}
			q.RemoveValue(v, k)
		default:
			start, stop := r.Intn(4)-1, n-1-r.Intn(3)
			if r.Intn(8) == 0 {
				start = r.Intn(n+2) - 1
			}
			if r.Intn(3) == 0 {
				stop = -1 - r.Intn(3)
			}
			cmd = []string{"LTRIM", key, strconv.Itoa(start), strconv.Itoa(stop)}
			ltrimQuicklist(q, start, stop)
		}
		c.do(cmd...) // errors (LSET out of range) are part of the script
		if q.Len() == 0 {
			q = NewQuicklist(fill) // Redis deleted the key
		}
		if c.layout || i%elementsEvery == 0 || i == 2999 {
			compareDump(t, c, key, q, cmd)
		} else {
			compareLen(t, c, key, q, cmd)
		}
	}
}

// elementsEvery is how often, in commands, compareRun compares all the
// elements with a Redis of another node layout: reading the whole list
// (up to hundreds of KB) after each of 3,000 commands took 10 s under
// -race. The length is compared after every command.
const elementsEvery = 25

// compareLen checks Redis's LLEN of key against q's length.
func compareLen(t *testing.T, c *respConn, key string, q *Quicklist, cmd []string) {
	t.Helper()
	if n, err := c.do("LLEN", key); err != nil || n != int64(q.Len()) {
		t.Fatalf("after %.80q: %d elements, Redis has %v (%v)", cmd, q.Len(), n, err)
	}
}

// ltrimQuicklist does what LTRIM does with the two range deletions.
func ltrimQuicklist(q *Quicklist, start, stop int) {
	n := q.Len()
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start = max(start, 0)
	ltrim, rtrim := n, 0
	if start <= stop && start < n {
		stop = min(stop, n-1)
		ltrim, rtrim = start, n-stop-1
	}
	q.DeleteRange(0, ltrim)
	q.DeleteRange(-rtrim, rtrim)
}

// compareDump checks Redis's DUMP of key against q's nodes (or, when c's
// Redis has another node layout, its elements against q's).
func compareDump(t *testing.T, c *respConn, key string, q *Quicklist, cmd []string) {
	t.Helper()
	if !c.layout {
		compareElements(t, c, key, q, cmd)
		return
	}
	dump, _ := c.do("DUMP", key)
	if dump == nil {
		if q.Len() != 0 {
			t.Fatalf("after %.60q: Redis has no key, we have %d elements", cmd, q.Len())
		}
		return
	}
	theirs, err := parseListDump(dump.([]byte))
	if err != nil {
		t.Fatal(err)
	}
	var ours []dumpNode
	q.Nodes(func(lp Listpack) bool {
		if v, ok := q.PlainValue(lp); ok {
			ours = append(ours, dumpNode{1, v})
		} else {
			ours = append(ours, dumpNode{2, lp})
		}
		return true
	})
	if len(ours) != len(theirs) {
		t.Fatalf("after %.80q: %d nodes, Redis has %d", cmd, len(ours), len(theirs))
	}
	for k := range ours {
		if ours[k].container != theirs[k].container || !bytes.Equal(ours[k].data, theirs[k].data) {
			t.Fatalf("after %.80q: node %d differs\nours   %d % x\nredis  %d % x", cmd, k,
				ours[k].container, head(ours[k].data), theirs[k].container, head(theirs[k].data))
		}
	}
	enc, _ := c.do("OBJECT", "ENCODING", key)
	if got := string(enc.([]byte)); got != q.Encoding() {
		t.Fatalf("after %.80q: encoding %s, Redis says %s", cmd, q.Encoding(), got)
	}
}

// compareElements checks Redis's LRANGE of key against q's elements.
func compareElements(t *testing.T, c *respConn, key string, q *Quicklist, cmd []string) {
	t.Helper()
	reply, err := c.do("LRANGE", key, "0", "-1")
	if err != nil {
		t.Fatal(err)
	}
	theirs := reply.([]any)
	if len(theirs) != q.Len() {
		t.Fatalf("after %.80q: %d elements, Redis has %d", cmd, q.Len(), len(theirs))
	}
	q.Iter(false, func(i int, v []byte) bool {
		if !bytes.Equal(v, theirs[i].([]byte)) {
			t.Fatalf("after %.80q: element %d is %.40q, Redis has %.40q", cmd, i, v, theirs[i])
		}
		return true
	})
}

// redisVersionAtLeast reports whether c's Redis is major.minor or later.
func redisVersionAtLeast(t *testing.T, c *respConn, major, minor int) bool {
	t.Helper()
	info, err := c.do("INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(info.([]byte)), "\r\n") {
		if v, ok := strings.CutPrefix(line, "redis_version:"); ok {
			var ma, mi int
			fmt.Sscanf(v, "%d.%d", &ma, &mi)
			return ma > major || ma == major && mi >= minor
		}
	}
	t.Fatalf("INFO server has no redis_version:\n%s", info)
	return false
}

// startRedis starts a disposable redis-server from PATH on a free port,
// stopped when the test ends, and returns its address; without one the
// test is skipped.
func startRedis(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed and REDSTREAM_TEST_REDIS is not set; skipping the comparison with Redis")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(20 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling a port that is not open yet: nothing to wait on
	}
}

type dumpNode struct {
	container int
	data      []byte
}

// parseListDump decodes a DUMP payload of a list: type 18 (quicklist 2),
// then the node count, then per node a container kind and a string.
func parseListDump(b []byte) ([]dumpNode, error) {
	if len(b) < 11 || b[0] != 18 {
		return nil, fmt.Errorf("not a quicklist-2 dump: % x", head(b))
	}
	b = b[1 : len(b)-10] // drop the type byte, RDB version and CRC
	n, b, err := rdbLen(b)
	if err != nil {
		return nil, err
	}
	nodes := make([]dumpNode, 0, n)
	for range n {
		var kind, l int
		if kind, b, err = rdbLen(b); err != nil {
			return nil, err
		}
		if l, b, err = rdbLen(b); err != nil || l > len(b) {
			return nil, fmt.Errorf("bad string length (compressed?): %v", err)
		}
		nodes = append(nodes, dumpNode{kind, b[:l]})
		b = b[l:]
	}
	return nodes, nil
}

// rdbLen decodes one RDB length.
func rdbLen(b []byte) (int, []byte, error) {
	if len(b) == 0 {
		return 0, nil, errors.New("short")
	}
	switch b[0] >> 6 {
	case 0:
		return int(b[0] & 0x3F), b[1:], nil
	case 1:
		return int(b[0]&0x3F)<<8 | int(b[1]), b[2:], nil
	}
	switch b[0] {
	case 0x80:
		return int(binary.BigEndian.Uint32(b[1:])), b[5:], nil
	case 0x81:
		return int(binary.BigEndian.Uint64(b[1:])), b[9:], nil
	}
	return 0, nil, fmt.Errorf("special encoding %#x", b[0])
}

// respConn is the least RESP client that can run these commands.
type respConn struct {
	conn   net.Conn
	rd     *bufio.Reader
	layout bool // the server lays out list nodes as Redis 7.2 and later do
}

func dialRESP(addr string) (*respConn, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	return &respConn{conn: conn, rd: bufio.NewReader(conn)}, nil
}

// do sends a command and returns its reply: []byte for bulk and simple
// strings, int64 for integers, nil for nulls; an error reply is returned
// as the error.
func (c *respConn) do(args ...string) (any, error) {
	var w bytes.Buffer
	fmt.Fprintf(&w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&w, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.conn.Write(w.Bytes()); err != nil {
		return nil, err
	}
	return c.read()
}

func (c *respConn) must(t *testing.T, args ...string) {
	t.Helper()
	if _, err := c.do(args...); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
}

func (c *respConn) read() (any, error) {
	line, err := c.rd.ReadString('\n')
	if err != nil || len(line) < 3 {
		return nil, fmt.Errorf("read: %v %q", err, line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return []byte(body), nil
	case '-':
		return nil, errors.New(body)
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		return n, err
	case '$':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		_, err := io.ReadFull(c.rd, buf)
		return buf[:n], err
	case '*':
		n, _ := strconv.Atoi(body)
		elems := make([]any, 0, max(n, 0))
		for range max(n, 0) {
			e, err := c.read()
			if err != nil {
				return nil, err
			}
			elems = append(elems, e)
		}
		return elems, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}
