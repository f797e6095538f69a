package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func rec(t int64, db int, args ...string) Record {
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	return Record{Time: t, DB: db, Argv: argv}
}

func text(r Record) string { return fmt.Sprintf("%d/%d/%q", r.Time, r.DB, r.Argv) }

// TestRoundTrip: a batch parses back to the records it encodes, binary
// arguments, empty ones and every database included, and the encoding is
// the documented one.
func TestRoundTrip(t *testing.T) {
	recs := []Record{
		rec(1, 0, "RPUSH", "q", "a", "b"),
		rec(-5, 3, "SET", "k", "v\r\nwith\x00binary"),
		rec(1<<62, maxDB, "SET", "empty", ""),
	}
	enc := Append(nil, recs...)
	if want := "#T 1 0\r\n*4\r\n$5\r\nRPUSH\r\n$1\r\nq\r\n$1\r\na\r\n$1\r\nb\r\n"; !bytes.HasPrefix(enc, []byte(want)) {
		t.Fatalf("encoding starts %q, want %q", enc[:len(want)], want)
	}
	got, err := Parse(enc)
	if err != nil || len(got) != len(recs) {
		t.Fatalf("Parse = %d records, %v", len(got), err)
	}
	for i := range recs {
		if text(got[i]) != text(recs[i]) {
			t.Errorf("record %d = %s, want %s", i, text(got[i]), text(recs[i]))
		}
	}
}

// TestMalformed: every cut of a batch, and every changed byte that makes
// it unparseable, is ErrMalformed, never a panic.
func TestMalformed(t *testing.T) {
	enc := Append(nil, rec(1, 0, "RPUSH", "q", "a"), rec(2, 1, "DEL", "q"))
	for cut := 1; cut < len(enc); cut++ {
		if _, err := Parse(enc[:cut]); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("cut at %d: %v is not ErrMalformed", cut, err)
		}
	}
	for _, bad := range []string{"#T x 0\r\n*1\r\n$1\r\na\r\n", "#T 1 -1\r\n*1\r\n$1\r\na\r\n", "#T 1 0\r\n*0\r\n",
		"#T 1 0\r\n*2\r\n$1\r\na\r\n", "#T 1 0\r\n*1\r\n$5\r\na\r\n", "#T 1 0", "garbage"} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}

// FuzzParse: arbitrary bytes never panic Parse, and what it accepts
// encodes back to the same bytes (one encoding per batch).
func FuzzParse(f *testing.F) {
	f.Add(Append(nil, rec(1, 0, "RPUSH", "q", "a")))
	f.Add(Append(nil, rec(2, 1, "SET", "k", "v"), rec(2, 1, "DEL", "x")))
	f.Add([]byte("#T 1 0\r\n*1\r\n$99999999\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if again := Append(nil, recs...); !bytes.Equal(again, data) {
			t.Fatalf("accepted batch re-encodes differently:\n%q\n%q", again, data)
		}
	})
}

// BenchmarkParse: a batch of twelve XADDs, as a replicated entry holds
// under fifty clients' load; every node parses every entry it applies.
func BenchmarkParse(b *testing.B) {
	var recs []Record
	for range 12 {
		recs = append(recs, rec(1764712345678, 0, "XADD", "bench:key", "1764712345678-12", "f1", "v:00000000000000", "f2", "v:00000000000000"))
	}
	p := Append(nil, recs...)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(p); err != nil {
			b.Fatal(err)
		}
	}
}
