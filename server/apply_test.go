package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/resp"
)

// recordingLog keeps every record the server logs, as the AOF will.
type recordingLog struct {
	mu      sync.Mutex
	records []Record
	appends int
}

func (l *recordingLog) Err() error { return nil }

func (l *recordingLog) Wait(uint64) error { return nil }

func (l *recordingLog) Append(recs []Record) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.appends++
	for _, r := range recs {
		l.records = append(l.records, Record{Time: r.Time, DB: r.DB, Argv: cloneArgv(r.Argv)})
	}
	return 0
}

// newTestServer returns a server that is not listening; connect serves
// one in-process connection to it.
func newTestServer(t testing.TB, log Log) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.ProtectedMode = false // net.Pipe peers have no loopback address
	s, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pipeConn is an in-process client connection.
type pipeConn struct {
	t    testing.TB
	s    *Server
	conn net.Conn
	r    *bufio.Reader
	done chan struct{}
}

func connect(t testing.TB, s *Server) *pipeConn {
	t.Helper()
	client, srv := net.Pipe()
	p := &pipeConn{t: t, s: s, conn: client, r: bufio.NewReader(client), done: make(chan struct{})}
	go func() { s.handleConn(srv); close(p.done) }()
	t.Cleanup(func() { client.Close(); <-p.done })
	return p
}

// do sends a command and returns the raw reply line(s) of a simple reply
// or the first line of an aggregate; tests here only need success/failure.
func (p *pipeConn) do(args ...string) string {
	p.t.Helper()
	return p.roundTrip(args, p.readReply)
}

// roundTrip sends a command and returns its reply as read reads it.
func (p *pipeConn) roundTrip(args []string, read func() string) string {
	p.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	p.s.sync() // what the test did before comes before the command
	if _, err := p.conn.Write([]byte(b.String())); err != nil {
		p.t.Fatal(err)
	}
	reply := read()
	p.s.sync()
	return reply
}

func (p *pipeConn) readReply() string {
	line, err := p.r.ReadString('\n')
	if err != nil {
		p.t.Fatal(err)
	}
	switch line[0] {
	case '$':
		var n int
		fmt.Sscanf(line[1:], "%d", &n)
		if n >= 0 {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(p.r, buf); err != nil {
				p.t.Fatal(err)
			}
			return line + string(buf)
		}
	case '*':
		var n int
		fmt.Sscanf(line[1:], "%d", &n)
		out := line
		for range max(n, 0) {
			out += p.readReply()
		}
		return out
	}
	return line
}

// dump renders the whole keyspace deterministically.
func dump(s *Server) string {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	var b strings.Builder
	for _, db := range s.shard.dbs {
		keys := make([]string, 0, len(db.keys))
		for k := range db.keys {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			o := db.keys[k]
			fmt.Fprintf(&b, "db%d %q exp=%d ", db.index, k, o.expireAt)
			switch v := o.value.(type) {
			case []byte:
				fmt.Fprintf(&b, "string %q\n", v)
			case *listpack.Quicklist:
				b.WriteString("list [")
				v.Iter(false, func(_ int, e []byte) bool { fmt.Fprintf(&b, "%q ", e); return true })
				b.WriteString("]\n")
			}
		}
	}
	return b.String()
}

// TestReplayReproducesState runs a random mix of writes live, then applies
// the logged records to an empty server: both keyspaces must be equal.
// This is DESIGN principle 2, on which the AOF and Raft rely.
func TestReplayReproducesState(t *testing.T) {
	log := &recordingLog{}
	live := newTestServer(t, log)
	c := connect(t, live)
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"a", "b", "c", "s", "n"}
	for i := range 3000 {
		k, k2 := keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))]
		v := fmt.Sprint(rng.IntN(20))
		cmds := [][]string{
			{"RPUSH", k, v, v + "x"}, {"LPUSH", k, v}, {"LPOP", k}, {"RPOP", k, "2"},
			{"LMOVE", k, k2, "LEFT", "RIGHT"}, {"LMOVEM", k, k2, "RIGHT", "LEFT", "COUNT", "3", "BULK"},
			{"LREM", k, "0", v}, {"LTRIM", k, "1", "-2"}, {"LSET", k, "0", v}, {"LINSERT", k, "BEFORE", v, "ins"},
			{"BLPOP", k, k2, "0.01"}, {"BLMOVE", k, k2, "RIGHT", "LEFT", "0.01"}, {"LMPOP", "2", k, k2, "LEFT", "COUNT", "2"},
			{"SET", k, v, "PX", "5"}, {"SET", k, v}, {"INCR", "n"}, {"APPEND", "s", v}, {"DEL", k},
			{"EXPIRE", k, "1"}, {"PEXPIRE", k, "3"}, {"PERSIST", k}, {"RENAME", k, k2}, {"COPY", k, k2, "REPLACE"},
			{"SELECT", fmt.Sprint(rng.IntN(2))}, {"GETDEL", k}, {"GETEX", k, "PX", "4"}, {"FLUSHDB"},
		}
		cmd := cmds[rng.IntN(len(cmds))]
		if cmd[0] == "FLUSHDB" && rng.IntN(20) != 0 {
			continue
		}
		c.do(cmd...)
		if i%500 == 0 {
			time.Sleep(6 * time.Millisecond) // let some PX 5 keys expire by the clock, lazily and actively
		}
	}
	replica := newTestServer(t, nil)
	for _, rec := range log.records {
		if err := replica.Apply(rec); err != nil {
			t.Fatalf("apply %q: %v", rec.Argv, err)
		}
	}
	// Compare at the time of the last record, so expiry judges both alike.
	if got, want := dump(replica), dump(live); got != want {
		t.Fatalf("replayed state differs from live state\nlive:\n%s\nreplayed:\n%s", want, got)
	}
	if len(log.records) == 0 {
		t.Fatal("no records were logged")
	}
}

// TestBlockedPopLogsNonBlockingForm checks that a served BLPOP is logged
// as LPOP of the key it popped, so replay never blocks.
func TestBlockedPopLogsNonBlockingForm(t *testing.T) {
	log := &recordingLog{}
	s := newTestServer(t, log)
	waiter, pusher := connect(t, s), connect(t, s)
	reply := make(chan string, 1)
	go func() { reply <- waiter.do("BLPOP", "q1", "q2", "0") }()
	waitFor(t, func() bool { s.shard.mu.Lock(); defer s.shard.mu.Unlock(); return s.stats.blockedClients == 1 })
	pusher.do("RPUSH", "q2", "job")
	if got := <-reply; got != "*2\r\n$2\r\nq2\r\n$3\r\njob\r\n" {
		t.Fatalf("BLPOP reply %q", got)
	}
	var got []string
	for _, r := range log.records {
		got = append(got, string(resp.Encode(r.Argv)))
	}
	want := []string{string(resp.Encode([][]byte{[]byte("RPUSH"), []byte("q2"), []byte("job")})),
		string(resp.Encode([][]byte{[]byte("LPOP"), []byte("q2")}))}
	if !slices.Equal(got, want) {
		t.Fatalf("logged %q, want %q", got, want)
	}
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(time.Millisecond) // polling server state that has no notification
	}
}

// gateLog is a Log whose durability the test releases by hand.
type gateLog struct {
	mu       sync.Mutex
	cond     *sync.Cond
	appended uint64
	released uint64
}

func newGateLog() *gateLog { g := &gateLog{}; g.cond = sync.NewCond(&g.mu); return g }

func (g *gateLog) Err() error { return nil }

func (g *gateLog) Append([]Record) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.appended++
	return g.appended
}

func (g *gateLog) Wait(t uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.released < t {
		g.cond.Wait()
	}
	return nil
}

func (g *gateLog) release() {
	g.mu.Lock()
	g.released = g.appended
	g.cond.Broadcast()
	g.mu.Unlock()
}

// TestServedBlockedClientWaitsForDurability: a client blocked in BLPOP
// and served by another client's RPUSH must not get its reply before the
// commit holding its pop is durable (DESIGN principle 3) — otherwise a
// crash could hand the same element out twice.
func TestServedBlockedClientWaitsForDurability(t *testing.T) {
	log := newGateLog()
	s := newTestServer(t, log)
	waiter, pusher := connect(t, s), connect(t, s)
	t.Cleanup(log.release) // runs before the connections' cleanups, so none stays stuck in Wait
	got := make(chan string, 2)
	go func() { got <- waiter.do("BLPOP", "q", "0") }()
	waitFor(t, func() bool { s.shard.mu.Lock(); defer s.shard.mu.Unlock(); return s.stats.blockedClients == 1 })
	go func() { got <- pusher.do("RPUSH", "q", "job") }()
	select {
	case r := <-got:
		t.Fatalf("a reply (%q) left before its write was durable", r)
	case <-time.After(200 * time.Millisecond): // asserting that nothing arrives within a window
	}
	log.release()
	for range 2 {
		select {
		case <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("replies did not arrive after the log was durable")
		}
	}
}

// TestApplyBatch: a batch is applied under one hold of the lock, each
// record's reply comes back in the protocol asked for, a command that
// fails is reported as an *ApplyError carrying its error reply (from the
// one place error replies are written, not by reading the reply's first
// byte), and a record that cannot be applied at all stops the batch.
func TestApplyBatch(t *testing.T) {
	s := newTestServer(t, nil)
	recs := []Record{
		{Time: 1, Argv: [][]byte{[]byte("SET"), []byte("k"), []byte("v")}},
		{Time: 2, Argv: [][]byte{[]byte("LPUSH"), []byte("k"), []byte("x")}},
		{Time: 3, Argv: [][]byte{[]byte("RPUSH"), []byte("q"), []byte("a"), []byte("b")}},
		{Time: 4, Argv: [][]byte{[]byte("LPOP"), []byte("q"), []byte("5")}},
	}
	applied, err := s.ApplyBatch(recs, 3)
	if err != nil || len(applied) != 4 {
		t.Fatalf("ApplyBatch = %d results, %v", len(applied), err)
	}
	var ae *ApplyError
	if !errors.As(applied[1].Err, &ae) || !strings.HasPrefix(ae.Reply, "WRONGTYPE") {
		t.Fatalf("LPUSH on a string: Err = %v, want an *ApplyError with WRONGTYPE", applied[1].Err)
	}
	for i, want := range []string{"+OK\r\n", "-WRONGTYPE", ":2\r\n", "*2\r\n$1\r\na\r\n$1\r\nb\r\n"} {
		if !strings.HasPrefix(string(applied[i].Reply), want) {
			t.Errorf("record %d replied %q, want %q", i, applied[i].Reply, want)
		}
		if (i == 1) != (applied[i].Err != nil) {
			t.Errorf("record %d: Err = %v", i, applied[i].Err)
		}
	}
	if v := dump(s); !strings.Contains(v, `"k" exp=0 string "v"`) || strings.Contains(v, `"q"`) {
		t.Fatalf("state after the batch:\n%s", v)
	}
	applied, err = s.ApplyBatch([]Record{recs[0], {Time: 5, Argv: [][]byte{[]byte("GET"), []byte("k")}}, recs[2]}, 0)
	if err == nil || len(applied) != 1 || applied[0].Reply != nil {
		t.Fatalf("a read in a batch: %d applied, %v; want the prefix and an error", len(applied), err)
	}
}

// TestReadsArePure is issue 12 §4: a read that finds an expired key only
// misses it: it deletes nothing and logs nothing (a replica's reads must
// not write), while a write that finds it deletes it and logs the DEL
// before itself, so that replay agrees.
func TestReadsArePure(t *testing.T) {
	log := &recordingLog{}
	s := newTestServer(t, log)
	c := connect(t, s)
	c.do("SET", "k", "v", "PX", "1")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if c.do("EXISTS", "k") == ":0\r\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("k never expired")
		}
	}
	for _, read := range [][]string{{"GET", "k"}, {"TTL", "k"}, {"TYPE", "k"}, {"STRLEN", "k"}, {"LRANGE", "k", "0", "-1"}} {
		c.do(read...)
	}
	log.mu.Lock()
	n := len(log.records)
	log.mu.Unlock()
	if n != 1 {
		t.Fatalf("after reads of an expired key the log holds %d records, want only the SET", n)
	}
	if got := c.do("DBSIZE"); got != ":1\r\n" {
		t.Fatalf("DBSIZE = %q: the reads deleted the expired key", got)
	}
	c.do("RPUSH", "k", "x")
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.records) != 3 || string(log.records[1].Argv[0]) != "DEL" || string(log.records[2].Argv[0]) != "RPUSH" {
		t.Fatalf("a write on the expired key logged %d records, want DEL then RPUSH", len(log.records))
	}
}
