package persistence

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/redstream/redstream/server"
)

func testServer(t *testing.T) *server.Server {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Dir = t.TempDir()
	s, err := server.New(cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func apply(t *testing.T, s *server.Server, db int, args ...string) {
	t.Helper()
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	if err := s.Apply(server.Record{Time: 1000, DB: db, Argv: argv}); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
}

// keysOf renders what an RDB file holds, key by key, in a stable order.
func keysOf(t *testing.T, rdb []byte) []string {
	t.Helper()
	var out []string
	dec := NewDecoder(bytes.NewReader(rdb), nil)
	for {
		e, err := dec.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		desc := fmt.Sprintf("db%d %s %s", e.DB, e.Key, e.Value.Type())
		switch v := e.Value.(type) {
		case String:
			desc += " " + string(v)
		case List:
			desc += fmt.Sprintf(" len=%d", v.Len())
		case Stream:
			desc += fmt.Sprintf(" len=%d groups=%d", v.Len(), v.NumGroups())
		}
		out = append(out, desc)
	}
	slices.Sort(out)
	return out
}

// TestSnapshotRoundTrip: a server's snapshot written with WriteSnapshot,
// read back with ReadSnapshot into another server through Restore (the
// path a Raft follower will take), and written again holds the same keys.
func TestSnapshotRoundTrip(t *testing.T) {
	a := testServer(t)
	apply(t, a, 0, "SET", "s", "v")
	apply(t, a, 0, "RPUSH", "l", "1", "2", "3")
	apply(t, a, 3, "XADD", "x", "1-1", "f", "v")
	apply(t, a, 3, "XGROUP", "CREATE", "x", "g", "0")
	apply(t, a, 3, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">")
	var first bytes.Buffer
	if err := WriteSnapshot(&first, a.Freeze(nil), EncodeOptions{}); err != nil {
		t.Fatal(err)
	}
	b := testServer(t)
	err := b.Restore(func(put server.Put) error {
		_, err := ReadSnapshot(bytes.NewReader(first.Bytes()), DecodeOptions{}, put, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var second bytes.Buffer
	if err := WriteSnapshot(&second, b.Freeze(nil), EncodeOptions{}); err != nil {
		t.Fatal(err)
	}
	want, got := keysOf(t, first.Bytes()), keysOf(t, second.Bytes())
	if !slices.Equal(got, want) || len(want) != 3 {
		t.Fatalf("after the round trip: %v, want %v", got, want)
	}
}
