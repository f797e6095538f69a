package stream

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/redstream/redstream/listpack"
)

// Golden nodes: the listpack bytes redis-server 7.0 stores for these
// commands, taken from its DUMP output (with rdbcompression off, a stream
// DUMP carries each node's master ID and listpack verbatim).
var goldenNodes = []struct {
	name string
	cmds [][]string // XADD key id field value... / XDEL key id
	hex  string
}{
	{
		name: "one entry",
		cmds: [][]string{{"XADD", "s", "5-0", "event", "click", "user", "12345"}},
		// 1 0 2 "event" "user" 0 | 2 0 0 "click" 12345 5
		hex: "2f0000000c00" + "0101" + "0001" + "0201" + "856576656e7406" + "847573657205" + "0001" +
			"0201" + "0001" + "0001" + "85636c69636b06" + "f1393003" + "0501" + "ff",
	},
	{
		name: "same fields, deleted, other fields",
		cmds: [][]string{
			{"XADD", "s", "5-0", "event", "click", "user", "12345"},
			{"XADD", "s", "6-3", "event", "view", "user", "7"},
			{"XADD", "s", "7-0", "other", "x"},
			{"XDEL", "s", "6-3"},
		},
		// 2 1 2 "event" "user" 0 | 2 0 0 "click" 12345 5 | 3 1 3 "view" 7 5 | 0 2 0 1 "other" "x" 6
		hex: "530000001900" + "0201" + "0101" + "0201" + "856576656e7406" + "847573657205" + "0001" +
			"0201" + "0001" + "0001" + "85636c69636b06" + "f1393003" + "0501" +
			"0301" + "0101" + "0301" + "847669657705" + "0701" + "0501" +
			"0001" + "0201" + "0001" + "0101" + "856f7468657206" + "817802" + "0601" + "ff",
	},
}

func applyCmds(t *testing.T, s *Stream, cmds [][]string) {
	t.Helper()
	for _, c := range cmds {
		id, seqGiven, err := ParseAddID([]byte(c[2]))
		if err != nil || !seqGiven {
			t.Fatalf("%v: bad ID", c)
		}
		switch c[0] {
		case "XADD":
			var fv [][]byte
			for _, a := range c[3:] {
				fv = append(fv, []byte(a))
			}
			if err := s.Add(id, fv, DefaultLimits); err != nil {
				t.Fatalf("%v: %v", c, err)
			}
		case "XDEL":
			if !s.Delete(id) {
				t.Fatalf("%v: not deleted", c)
			}
		}
	}
}

func TestGoldenNodes(t *testing.T) {
	for _, g := range goldenNodes {
		t.Run(g.name, func(t *testing.T) {
			s := New()
			applyCmds(t, s, g.cmds)
			want, err := hex.DecodeString(g.hex)
			if err != nil {
				t.Fatal(err)
			}
			if s.Nodes() != 1 {
				t.Fatalf("%d nodes", s.Nodes())
			}
			for k, n := range s.rax.All() {
				if !bytes.Equal(n.lp, want) {
					t.Errorf("node %s bytes\n got %x\nwant %x", IDFromKey(k), []byte(n.lp), want)
				}
				if err := ValidateNode(want, IDFromKey(k)); err != nil {
					t.Errorf("ValidateNode(golden) = %v", err)
				}
			}
		})
	}
}

// TestValidateNodeRejects corrupts a valid node in the ways the readers
// rely on not happening.
func TestValidateNodeRejects(t *testing.T) {
	good, _ := hex.DecodeString(goldenNodes[1].hex)
	mid := ID{Ms: 5}
	build := func(elems ...any) []byte {
		lp := listpack.New()
		for _, e := range elems {
			switch e := e.(type) {
			case int:
				lp = lp.AppendInt(int64(e))
			case string:
				lp = lp.Append([]byte(e))
			}
		}
		return lp
	}
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"not a listpack", good[:len(good)-1], "listpack"},
		{"empty", build(), "missing live count"},
		{"string count", build("x", 0, 1, "f", 0), "not an integer"},
		{"negative count", build(-1, 0, 1, "f", 0), "out of range"},
		{"missing fields", build(1, 0, 3, "f", 0), "missing"},
		{"bad terminator", build(1, 0, 1, "f", 7), "master terminator"},
		{"bad flags", build(1, 0, 1, "f", 0, 4, 0, 0, "v", 4), "unknown flags"},
		{"bad lp-count", build(1, 0, 1, "f", 0, 2, 0, 0, "v", 5), "lp-count"},
		{"truncated entry", build(1, 0, 1, "f", 0, 0, 0, 0, 2, "a"), "missing"},
		{"count mismatch", build(2, 0, 1, "f", 0, 2, 0, 0, "v", 4), "counts"},
		{"deleted mismatch", build(1, 0, 1, "f", 0, 3, 0, 0, "v", 4), "counts"},
		{"before master", build(1, 0, 1, "f", 0, 2, -1, 0, "v", 4), "out of order"},
		{"out of order", build(2, 0, 1, "f", 0, 2, 0, 1, "v", 4, 2, 0, 1, "v", 4), "out of order"},
		{"negative fields", build(1, 0, 1, "f", 0, 0, 0, 0, -1, 2), "out of range"},
	}
	for _, c := range cases {
		err := ValidateNode(c.b, mid)
		if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: ValidateNode = %v, want ErrCorrupt about %q", c.name, err, c.want)
		}
	}
	if err := ValidateNode(build(1, 0, 1, "f", 0, 2, 0, 0, "v", 4), mid); err != nil {
		t.Errorf("minimal node: %v", err)
	}
}

// FuzzNode builds a node from fuzzer-chosen entries and checks that it
// validates and reads back what went in, both ways; then it feeds the raw
// input to ValidateNode, which must never panic, and walks any node it
// accepts.
func FuzzNode(f *testing.F) {
	for _, g := range goldenNodes {
		b, _ := hex.DecodeString(g.hex)
		f.Add(b)
	}
	f.Add([]byte("\x03\x01a\x01b\x02\x00\x05"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries := fuzzEntries(data)
		if len(entries) > 0 {
			roundTrip(t, entries)
		}
		if ValidateNode(data, ID{}) == nil {
			walkForeign(data)
		}
	})
}

// fuzzEntries decodes data into up to 40 entries with small, mostly
// shared field names and IDs that grow by small steps.
func fuzzEntries(data []byte) []modelEntry {
	r := &opReader{b: data}
	var out []modelEntry
	id := ID{Ms: uint64(r.byte()) << 8, Seq: 1 + uint64(r.byte())}
	for len(r.b) > 0 && len(out) < 40 {
		out = append(out, modelEntry{id, r.fields()})
		id.Ms += uint64(r.n(3))
		id.Seq += 1 + uint64(r.n(200))
	}
	return out
}

func roundTrip(t *testing.T, entries []modelEntry) {
	t.Helper()
	s := New()
	lim := Limits{MaxEntries: 1 + len(entries)%7}
	for _, e := range entries {
		if err := s.Add(e.id, e.fv, lim); err != nil {
			t.Fatalf("Add %s: %v", e.id, err)
		}
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	for _, rev := range []bool{false, true} {
		want := ordered(entries, rev)
		var got []modelEntry
		for it := s.Range(MinID, MaxID, rev); it.Next(); {
			got = append(got, modelEntry{it.ID(), it.Fields()})
		}
		if !equalEntries(got, want) {
			t.Fatalf("rev %v:\n got %s\nwant %s", rev, render(got), render(want))
		}
	}
}

func ordered(es []modelEntry, rev bool) []modelEntry {
	out := append([]modelEntry(nil), es...)
	if rev {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// walkForeign reads a node that passed validation as a one-node stream,
// both ways, including tombstones: it must not panic.
func walkForeign(b []byte) {
	s := New()
	k := ID{}.Key()
	s.rax.Insert(k[:], &node{lp: listpack.Listpack(b)})
	for _, rev := range []bool{false, true} {
		it := s.Range(MinID, MaxID, rev)
		it.IncludeDeleted()
		for it.Next() {
			_ = it.Size()
			for range it.NumFields() {
				it.Pair()
			}
		}
	}
	s.RadixNodes()
}
