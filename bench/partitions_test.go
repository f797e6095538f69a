package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstream/redstream/server"
)

// slotsEntry is one CLUSTER SLOTS entry as Conn.Read decodes it: first,
// last, then each node as host, port, id and an empty map.
func slotsEntry(first, last int, nodes ...string) Reply {
	e := Reply{Type: '*', Elems: []Reply{{Type: ':', Int: int64(first)}, {Type: ':', Int: int64(last)}}}
	for _, n := range nodes {
		host, port, _ := net.SplitHostPort(n)
		var p int64
		fmt.Sscan(port, &p)
		e.Elems = append(e.Elems, Reply{Type: '*', Elems: []Reply{{Type: '$', Str: host}, {Type: ':', Int: p}, {Type: '$', Str: "id-" + port}, {Type: '*'}}})
	}
	return e
}

func TestParseSlotMap(t *testing.T) {
	a, b, c := "127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"
	r := Reply{Type: '*', Elems: []Reply{
		slotsEntry(0, 5460, a, b, c),
		slotsEntry(5461, 10922, b, c, a),
		slotsEntry(10923, 16383, a, b, c),
	}}
	m, leads, err := parseSlotMap(r)
	if err != nil {
		t.Fatal(err)
	}
	for slot, want := range map[int]string{0: a, 5460: a, 5461: b, 10922: b, 10923: a, 16383: a} {
		if m[slot] != want {
			t.Errorf("slot %d: got %q, want %q", slot, m[slot], want)
		}
	}
	if leads[a] != 2 || leads[b] != 1 || len(leads) != 2 {
		t.Errorf("leads = %v, want %s: 2, %s: 1", leads, a, b)
	}
	if err := m.complete(); err != nil {
		t.Errorf("complete map: %v", err)
	}

	// A group without a master is left out of CLUSTER SLOTS: its slots
	// have none, and the map is not complete.
	m, _, err = parseSlotMap(Reply{Type: '*', Elems: []Reply{slotsEntry(0, 5460, a), slotsEntry(10923, 16383, c)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.complete(); err == nil || !strings.Contains(err.Error(), "slot 5461") {
		t.Errorf("map missing 5461-10922: complete() = %v", err)
	}

	for name, bad := range map[string]Reply{
		"error reply":       {Type: '-', Str: "ERR This instance has cluster support disabled"},
		"no master":         {Type: '*', Elems: []Reply{slotsEntry(0, 16383)}},
		"slot past 16383":   {Type: '*', Elems: []Reply{slotsEntry(0, 16384, a)}},
		"last before first": {Type: '*', Elems: []Reply{slotsEntry(9, 8, a)}},
	} {
		if _, _, err := parseSlotMap(bad); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func TestParseMoved(t *testing.T) {
	slot, addr, ok := parseMoved("MOVED 3999 127.0.0.1:6381")
	if !ok || slot != 3999 || addr != "127.0.0.1:6381" {
		t.Errorf("got %d %q %v", slot, addr, ok)
	}
	for _, bad := range []string{
		"ASK 3999 127.0.0.1:6381",
		"CLUSTERDOWN The cluster is down",
		"MOVED 16384 127.0.0.1:6381",
		"MOVED x 127.0.0.1:6381",
		"MOVED 3999 nowhere",
		"MOVED 3999",
	} {
		if _, _, ok := parseMoved(bad); ok {
			t.Errorf("%q parsed as MOVED", bad)
		}
	}
}

func TestBalancedLeads(t *testing.T) {
	for _, tc := range []struct {
		leads  map[string]int
		groups int
		want   bool
	}{
		{map[string]int{"a": 1}, 1, true},
		{map[string]int{"a": 1, "b": 1, "c": 1}, 3, true},
		{map[string]int{"a": 2, "b": 1}, 3, false}, // not yet moved to its preferred leader
		{map[string]int{"a": 2, "b": 2, "c": 2}, 6, true},
		{map[string]int{"a": 3, "b": 2, "c": 1}, 6, false},
		{map[string]int{"a": 2, "b": 2, "c": 1}, 6, false}, // a group without a master
		{map[string]int{}, 1, false},
	} {
		if got := balancedLeads(tc.leads, tc.groups, 3); got != tc.want {
			t.Errorf("%v over %d groups: got %v, want %v", tc.leads, tc.groups, got, tc.want)
		}
	}
}

// fakeNode answers CLUSTER SLOTS with every slot served by the current
// owner, XADD with an ID when it is the owner and -MOVED to the owner
// otherwise: a leadership that moved after the client read the map.
type fakeNode struct {
	ln    net.Listener
	owner *atomic.Pointer[string]
	acks  atomic.Int64
	wg    sync.WaitGroup
}

func startFakeNode(t *testing.T, owner *atomic.Pointer[string]) *fakeNode {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeNode{ln: ln, owner: owner}
	t.Cleanup(func() { ln.Close(); f.wg.Wait() })
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				f.serve(c)
			}()
		}
	}()
	return f
}

func (f *fakeNode) addr() string { return f.ln.Addr().String() }

func (f *fakeNode) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		owner := *f.owner.Load()
		var reply string
		switch strings.ToUpper(args[0]) {
		case "CLUSTER":
			host, port, _ := net.SplitHostPort(owner)
			reply = fmt.Sprintf("*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$%d\r\n%s\r\n:%s\r\n$2\r\nid\r\n*0\r\n", len(host), host, port)
		case "XADD":
			if owner == f.addr() {
				f.acks.Add(1)
				reply = "$3\r\n1-1\r\n"
			} else {
				reply = fmt.Sprintf("-MOVED %d %s\r\n", server.KeySlot([]byte(args[1])), owner)
			}
		default:
			reply = "-ERR unknown command\r\n"
		}
		if _, err := c.Write([]byte(reply)); err != nil {
			return
		}
	}
}

// readCommand reads one multibulk request.
func readCommand(r *bufio.Reader) ([]string, error) {
	header := func(prefix byte) (int, error) {
		line, err := r.ReadString('\n')
		if err != nil {
			return 0, err
		}
		if len(line) < 3 || line[0] != prefix {
			return 0, fmt.Errorf("bad request line %q", line)
		}
		return strconv.Atoi(strings.TrimSuffix(line[1:], "\r\n"))
	}
	n, err := header('*')
	if err != nil {
		return nil, err
	}
	args := make([]string, n)
	for i := range args {
		size, err := header('$')
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}

// The router follows -MOVED to the new leader, reads the map again, and
// counts only acknowledged writes: every write lands on the new owner.
func TestRouterFollowsMoved(t *testing.T) {
	var owner atomic.Pointer[string]
	a := startFakeNode(t, &owner)
	b := startFakeNode(t, &owner)
	addrA, addrB := a.addr(), b.addr()
	owner.Store(&addrA)
	rt := &router{seeds: []string{addrA, addrB}}
	if err := rt.refresh(addrA); err != nil {
		t.Fatal(err)
	}
	owner.Store(&addrB) // leadership moves after the map was read
	if _, err := rt.load(4, 40); err != nil {
		t.Fatal(err)
	}
	if a.acks.Load() != 0 || b.acks.Load() != 40 {
		t.Errorf("acks: %d on the old leader, %d on the new; want 0 and 40", a.acks.Load(), b.acks.Load())
	}
	if n := rt.moved.Load(); n < 1 || n > 4 {
		t.Errorf("%d MOVED followed; want one per client at most (the map is read again)", n)
	}
	if got := rt.m.Load()[0]; got != addrB {
		t.Errorf("map names %s after MOVED, want %s", got, addrB)
	}
}

func TestPartitionsTable(t *testing.T) {
	run := func(g int, rate, cpu float64) partitionRun {
		return partitionRun{groups: g, clients: 50, rate: rate, cpu: [3]float64{cpu / 2, cpu / 4, cpu / 4}, fsyncs: math.NaN()}
	}
	equal := run(3, 20000, 84) // 150 clients: CPU 1.05x, rate 2.00x, both without a target
	equal.clients = 150
	rounds := [][]partitionRun{
		{run(1, 10000, 80), run(3, 11000, 88), run(6, 9000, 96), equal}, // CPU 1.10x, 1.20x; rate 1.10x
		{run(1, 10000, 80), run(3, 9000, 120), run(6, 9000, 90)},        // CPU 1.50x, 1.12x; rate 0.90x
	}
	var out bytes.Buffer
	printPartitionsTable(&out, rounds)
	text := out.String()
	for _, want := range []string{
		"1.10x ok", "1.20x MISS", "0.90x MISS", "11,000 ops/s", "88.0 µs",
		"<= 1.15x G=1", ">= 1.00x G=1",
		"CPU per write, G=3 <= 1.15x: MISS, met in 1 of 2 rounds (1.10x, 1.50x)",
		"CPU per write, G=6 <= 1.15x: MISS, met in 1 of 2 rounds (1.20x, 1.12x)",
		"writes/s, G=3 >= 1.00x: MISS, met in 1 of 2 rounds (1.10x, 0.90x)",
		"equal load per group: CPU per write at G=3 with 150 clients vs G=1 (no target): 1.05x",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "NaN") {
		t.Errorf("table prints NaN:\n%s", text)
	}
	// G=6's throughput (0.90x in both rounds) has no target: a ratio, no
	// verdict; only round 2's G=3 misses.
	if n := strings.Count(text, "0.90x MISS"); n != 1 {
		t.Errorf("0.90x MISS %d times, want once (G=3 of round 2):\n%s", n, text)
	}
	// The equal-load row is informational: its ratios carry no verdict.
	if strings.Contains(text, "2.00x ok") || strings.Contains(text, "1.05x ok") || strings.Contains(text, "1.05x MISS") {
		t.Errorf("the 150-client row is judged against a target:\n%s", text)
	}

	lines := partitionVerdicts(rounds[:1])
	if len(lines) != 3 || !strings.HasSuffix(lines[0], ": ok (1.10x)") || !strings.Contains(lines[1], "MISS") || !strings.HasSuffix(lines[2], ": ok (1.10x)") {
		t.Errorf("one round's verdicts: %q", lines)
	}
}

// threeGroups is a CLUSTER SLOTS map of three equal groups led by the
// given masters.
func threeGroups(masters ...string) (*slotMap, map[string]int, error) {
	r := Reply{Type: '*', Elems: []Reply{
		slotsEntry(0, 5460, masters[0]), slotsEntry(5461, 10922, masters[1]), slotsEntry(10923, 16383, masters[2]),
	}}
	return parseSlotMap(r)
}

// A balanced map must hold for the settle time: a rotation (every node
// leading one group, none its preferred one) is balanced by count but
// about to move.
func TestAwaitBalancedSettles(t *testing.T) {
	x, y, z := "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"
	start := time.Now()
	const moveAt, settle = 80 * time.Millisecond, 150 * time.Millisecond // the balancer moves before the settle time ends
	fetch := func(string) (*slotMap, map[string]int, error) {
		if time.Since(start) < moveAt {
			return threeGroups(y, z, x)
		}
		return threeGroups(x, y, z)
	}
	leads, err := awaitBalanced(fetch, []string{x, y, z}, 3, 5*time.Second, settle)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < moveAt+settle {
		t.Errorf("returned after %v, before the map after the move had held %v", took, settle)
	}
	if leads[x] != 1 || leads[y] != 1 || leads[z] != 1 {
		t.Errorf("leads = %v", leads)
	}

	// Nodes that disagree, or a group without a master, never settle.
	for name, fetch := range map[string]func(string) (*slotMap, map[string]int, error){
		"other masters": func(a string) (*slotMap, map[string]int, error) {
			if a == z {
				return threeGroups(y, z, x)
			}
			return threeGroups(x, y, z)
		},
		"no master": func(string) (*slotMap, map[string]int, error) {
			return parseSlotMap(Reply{Type: '*', Elems: []Reply{slotsEntry(0, 5460, x), slotsEntry(10923, 16383, z)}})
		},
	} {
		if _, err := awaitBalanced(fetch, []string{x, y, z}, 3, 300*time.Millisecond, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

// batchCostModel recovers a line it was given, ignores runs perf could
// not count, and declines with fewer than two batch sizes.
func TestBatchCostModelFitsALine(t *testing.T) {
	run := func(fsyncs, cpu float64) partitionRun {
		return partitionRun{fsyncs: fsyncs, cpu: [3]float64{cpu, 0, 0}}
	}
	runs := []partitionRun{run(0.1, 12+0.1*250), run(0.3, 12+0.3*250), run(0.4, 12+0.4*250), run(math.NaN(), 999)}
	a, b, ok := batchCostModel(runs)
	if !ok || math.Abs(a-12) > 1e-9 || math.Abs(b-250) > 1e-9 {
		t.Fatalf("fit = %v + %v x, ok %v; want 12 + 250 x", a, b, ok)
	}
	if _, _, ok := batchCostModel(runs[:1]); ok {
		t.Fatal("one run fitted a line")
	}
	if _, _, ok := batchCostModel([]partitionRun{run(0.2, 10), run(0.2, 20)}); ok {
		t.Fatal("runs of one batch size fitted a line")
	}
}
