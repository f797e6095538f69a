package server

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/redstream/redstream/listpack"
)

// textCodec is a Codec for the server's own tests (the real one lives in
// persistence, which this package cannot import): "S:" and a string's
// bytes, or "L:" and a list's elements joined by commas. "X" fails the
// footer check, "H" holds a hash, anything else is bad data.
type textCodec struct{}

func (textCodec) Dump(v any, _ DumpOptions) ([]byte, error) {
	switch v := v.(type) {
	case []byte:
		return append([]byte("S:"), v...), nil
	case *listpack.Quicklist:
		var els []string
		v.Iter(false, func(_ int, e []byte) bool { els = append(els, string(e)); return true })
		return []byte("L:" + strings.Join(els, ",")), nil
	}
	return nil, fmt.Errorf("cannot dump a %T", v)
}

func (textCodec) Restore(p []byte, opt DumpOptions) (any, error) {
	switch {
	case bytes.HasPrefix(p, []byte("S:")):
		return bytes.Clone(p[2:]), nil
	case bytes.HasPrefix(p, []byte("L:")) && len(p) > 2:
		q := listpack.NewQuicklist(opt.ListFill)
		for _, e := range strings.Split(string(p[2:]), ",") {
			q.PushTail([]byte(e))
		}
		return q, nil
	case string(p) == "X":
		return nil, fmt.Errorf("%w (test)", ErrDumpPayload)
	case string(p) == "H":
		return nil, &DumpTypeError{Type: "hash"}
	}
	return nil, fmt.Errorf("%w (test)", ErrDumpData)
}

func newDumpServer(t testing.TB, log Log) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.ProtectedMode = false
	s, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Log: log, Codec: textCodec{}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRestoreReplies checks RESTORE's and DUMP's replies, in Redis's
// words and Redis's order of checks, and that a refused RESTORE leaves
// the keyspace as it was.
func TestRestoreReplies(t *testing.T) {
	s := newDumpServer(t, nil)
	c := connect(t, s)
	c.do("SET", "k", "v")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"DUMP", "nokey"}, "$-1\r\n"},
		{[]string{"DUMP", "k"}, "$3\r\nS:v\r\n"},
		{[]string{"RESTORE", "k", "0", "S:x"}, "-BUSYKEY Target key name already exists.\r\n"},
		{[]string{"RESTORE", "k", "-1", "S:x"}, "-BUSYKEY Target key name already exists.\r\n"},
		{[]string{"RESTORE", "n", "0", "S:x", "FOO"}, "-ERR syntax error\r\n"},
		{[]string{"RESTORE", "k", "0", "S:x", "FOO"}, "-ERR syntax error\r\n"}, // options before BUSYKEY
		{[]string{"RESTORE", "n", "0", "S:x", "IDLETIME"}, "-ERR syntax error\r\n"},
		{[]string{"RESTORE", "n", "0", "S:x", "IDLETIME", "1", "FREQ", "2"}, "-ERR syntax error\r\n"},
		{[]string{"RESTORE", "n", "0", "S:x", "FREQ", "2", "IDLETIME", "1"}, "-ERR syntax error\r\n"},
		{[]string{"RESTORE", "n", "0", "S:x", "IDLETIME", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"RESTORE", "n", "0", "S:x", "IDLETIME", "-1"}, "-ERR Invalid IDLETIME value, must be >= 0\r\n"},
		{[]string{"RESTORE", "n", "0", "S:x", "FREQ", "256"}, "-ERR Invalid FREQ value, must be >= 0 and <= 255\r\n"},
		{[]string{"RESTORE", "n", "0", "S:x", "FREQ", "-1"}, "-ERR Invalid FREQ value, must be >= 0 and <= 255\r\n"},
		{[]string{"RESTORE", "n", "x", "S:x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"RESTORE", "n", "-1", "S:x"}, "-ERR Invalid TTL value, must be >= 0\r\n"},
		{[]string{"RESTORE", "n", "-1", "X"}, "-ERR Invalid TTL value, must be >= 0\r\n"}, // the TTL before the payload
		{[]string{"RESTORE", "n", "0", "X"}, "-ERR DUMP payload version or checksum are wrong\r\n"},
		{[]string{"RESTORE", "n", "0", "junk"}, "-ERR Bad data format\r\n"},
		{[]string{"RESTORE", "n", "0", "H"}, "-ERR Bad data format: the payload holds a hash, and redstream serves strings, lists and streams\r\n"},
		{[]string{"RESTORE", "k", "0", "junk", "REPLACE"}, "-ERR Bad data format\r\n"},
		{[]string{"RESTORE", "n"}, "-ERR wrong number of arguments for 'restore' command\r\n"},
		{[]string{"DUMP"}, "-ERR wrong number of arguments for 'dump' command\r\n"},
	} {
		if got := c.do(tc.args...); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}
	if got := dump(s); got != "db0 \"k\" exp=0 string \"v\"\n" {
		t.Fatalf("refused RESTOREs changed the keyspace:\n%s", got)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"RESTORE", "k", "0", "L:a,b", "REPLACE"}, "+OK\r\n"},
		{[]string{"LRANGE", "k", "0", "-1"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{[]string{"RESTORE", "n", "0", "S:x", "FREQ", "0", "ABSTTL", "REPLACE", "absttl"}, "+OK\r\n"},
		{[]string{"TTL", "n"}, ":-1\r\n"},
		{[]string{"RESTORE", "t", "100000", "S:x"}, "+OK\r\n"},
		{[]string{"TTL", "t"}, ":100\r\n"},
		{[]string{"RESTORE", "i", "0", "S:x", "IDLETIME", "1000"}, "+OK\r\n"},
		{[]string{"OBJECT", "IDLETIME", "i"}, ":1000\r\n"},
		{[]string{"RESTORE", "gone", "1", "S:x", "ABSTTL"}, "+OK\r\n"}, // 1970: created expired, so not at all
		{[]string{"EXISTS", "gone"}, ":0\r\n"},
		{[]string{"RESTORE", "k", "1", "S:x", "ABSTTL", "REPLACE"}, "+OK\r\n"}, // and REPLACE deletes what was there
		{[]string{"EXISTS", "k"}, ":0\r\n"},
		{[]string{"RESTORE", "w", "9223372036854775807", "S:x"}, "+OK\r\n"}, // wraps into the past, as in Redis
		{[]string{"EXISTS", "w"}, ":0\r\n"},
	} {
		if got := c.do(tc.args...); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}

	bare := newTestServer(t, nil) // no codec plugged in
	bc := connect(t, bare)
	for _, cmd := range [][]string{{"DUMP", "k"}, {"RESTORE", "k", "0", "S:x"}} {
		if got := bc.do(cmd...); !strings.HasPrefix(got, "-ERR DUMP and RESTORE are not available") {
			t.Errorf("%q without a codec = %q", cmd, got)
		}
	}
}

// TestRestoreReplay: RESTORE is logged with an absolute TTL (ABSTTL),
// the already-expired REPLACE as a DEL, the already-expired create not at
// all, and applying the log to an empty server gives the same keyspace
// (expiries and idle times included).
func TestRestoreReplay(t *testing.T) {
	log := &recordingLog{}
	live := newDumpServer(t, log)
	c := connect(t, live)
	c.do("SET", "old", "v")
	for _, cmd := range [][]string{
		{"RESTORE", "a", "5000", "S:x"},
		{"RESTORE", "b", "0", "L:p,q,r", "IDLETIME", "30"},
		{"RESTORE", "c", "99999999999999", "S:y", "ABSTTL"},
		{"RESTORE", "old", "1", "S:z", "ABSTTL", "REPLACE"},
		{"RESTORE", "none", "1", "S:z", "ABSTTL"},
		{"RESTORE", "a", "7000", "L:s", "REPLACE", "FREQ", "3"},
	} {
		if got := c.do(cmd...); got != "+OK\r\n" {
			t.Fatalf("%q = %q", cmd, got)
		}
	}
	log.mu.Lock()
	recs := append([]Record(nil), log.records...)
	log.mu.Unlock()
	var got []string
	for _, r := range recs {
		got = append(got, string(bytes.Join(r.Argv, []byte(" "))))
	}
	want := []string{"SET old v",
		fmt.Sprintf("RESTORE a %d S:x ABSTTL", recs[1].Time+5000),
		"RESTORE b 0 L:p,q,r IDLETIME 30",
		"RESTORE c 99999999999999 S:y ABSTTL",
		"DEL old",
		fmt.Sprintf("RESTORE a %d L:s REPLACE FREQ 3 ABSTTL", recs[5].Time+7000)}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	replica := newDumpServer(t, nil)
	for _, rec := range recs {
		if err := replica.Apply(rec); err != nil {
			t.Fatalf("apply %q: %v", rec.Argv, err)
		}
	}
	if g, w := dump(replica), dump(live); g != w {
		t.Fatalf("replayed state differs\nlive:\n%s\nreplayed:\n%s", w, g)
	}
	access := func(s *Server) int64 {
		s.shard.mu.Lock()
		defer s.shard.mu.Unlock()
		return s.shard.dbs[0].keys["b"].access
	}
	if a, b := access(live), access(replica); a != b || a != recs[2].Time-30000 {
		t.Fatalf("b's last access: live %d, replayed %d, want %d", a, b, recs[2].Time-30000)
	}
}

// TestRestoreServesBlockedPop: a list RESTOREd onto a key a BLPOP waits
// on serves it, and the pop is logged after the RESTORE.
func TestRestoreServesBlockedPop(t *testing.T) {
	log := &recordingLog{}
	s := newDumpServer(t, log)
	waiter, restorer := connect(t, s), connect(t, s)
	reply := make(chan string, 1)
	go func() { reply <- waiter.do("BLPOP", "q", "0") }()
	waitFor(t, func() bool { s.shard.mu.Lock(); defer s.shard.mu.Unlock(); return s.stats.blockedClients == 1 })
	if got := restorer.do("RESTORE", "q", "0", "L:job1,job2"); got != "+OK\r\n" {
		t.Fatalf("RESTORE = %q", got)
	}
	if got := <-reply; got != "*2\r\n$1\r\nq\r\n$4\r\njob1\r\n" {
		t.Fatalf("BLPOP = %q", got)
	}
	if got := restorer.do("LRANGE", "q", "0", "-1"); got != "*1\r\n$4\r\njob2\r\n" {
		t.Fatalf("LRANGE after the pop = %q", got)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.records) != 2 || string(log.records[0].Argv[0]) != "RESTORE" || string(log.records[1].Argv[0]) != "LPOP" {
		t.Fatalf("logged %d records, want RESTORE then LPOP", len(log.records))
	}
}
