package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/redstream/redstream/stream"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redstream/redstream/listpack"
)

func lpOf(vs ...string) listpack.Listpack {
	lp := listpack.New()
	for _, v := range vs {
		lp = lp.Append([]byte(v))
	}
	return lp
}

// sampleStream is a two-node stream with a tombstone, two groups (one
// with an unknown entries-read), pending entries, consumers (one whose
// active time differs from its seen time) and no IDMP state.
func sampleStream() Stream { return mustStream(sampleState()) }

// sampleState is sampleStream's state, to change before building.
func sampleState() *stream.State {
	var es []sEntry
	for i := uint64(1); i <= 7; i++ {
		es = append(es, sEntry{id: sid(1000+i, i%3), fields: []string{"f", fmt.Sprint(i), "n", "x"}})
	}
	es[2].deleted = true
	es[5].fields = []string{"other", "field"}
	s := buildStream(es, 4)
	s.Groups = []stream.GroupState{
		{Name: []byte("g1"), LastID: es[4].id, EntriesRead: 5,
			PEL: []stream.PendingState{{ID: es[0].id, DeliveryTime: 1700000000000, DeliveryCount: 1},
				{ID: es[1].id, DeliveryTime: 1700000000001, DeliveryCount: 3}, {ID: es[4].id, DeliveryTime: 1700000000002, DeliveryCount: 1}},
			Consumers: []stream.ConsumerState{
				{Name: []byte("alice"), SeenTime: 1700000000100, ActiveTime: 1700000000050, PEL: []stream.ID{es[0].id, es[4].id}},
				{Name: []byte("bob"), SeenTime: 1700000000200, ActiveTime: 1700000000200, PEL: []stream.ID{es[1].id}},
				{Name: []byte("idle"), SeenTime: 1, ActiveTime: 1},
			}},
		{Name: []byte("g2"), EntriesRead: -1},
	}
	return s
}

func roundTripEntries() []*Entry {
	big := strings.Repeat("0123456789", 2000) // 20 KB: a plain node under the default fill
	var strs []*Entry
	for i, v := range []string{"", "0", "-1", "127", "128", "-128", "-129", "32767", "32768", "-32769",
		"2147483647", "2147483648", "-2147483648", "-2147483649", "9223372036854775807", "007", "-0", "+1", " 1",
		"a 20-byte string!!!", strings.Repeat("ab", 11), "\x00\x01\xff binary \r\n", strings.Repeat("z", 1<<20), big} {
		strs = append(strs, &Entry{DB: 0, Key: []byte(fmt.Sprintf("s%02d", i)), Value: String(v)})
	}
	multi := List{lpOf("a", "b", "1", "-70000"), lpOf(big), lpOf("tail", strings.Repeat("q", 300))}
	withIDMP := sampleState()
	withIDMP.IDMP = &stream.IDMPState{Duration: 100, MaxSize: 10, Added: 3, Duplicates: 1, Producers: []stream.IDMPProducer{
		{PID: []byte("p1"), IIDs: []stream.IDMPRecord{{IID: []byte("i1"), ID: sid(1001, 1), Time: 1700000000000}, {IID: []byte("i2"), ID: sid(1002, 2), Time: 1700000000005}}},
		{PID: []byte("p2"), IIDs: []stream.IDMPRecord{{IID: []byte("i1"), ID: sid(1004, 1), Time: 1700000000009}}},
	}}
	withAge := sampleState()
	withAge.Retention = stream.Retention{MaxAge: 3_600_000, Refs: stream.Acked}
	withDelayed := sampleState()
	withDelayed.Delayed = []stream.DelayedEntry{
		{ID: sid(4102444800000, 0), Fields: [][]byte{[]byte("job"), []byte("a")}},
		{ID: sid(4102444800000, 1), Fields: [][]byte{[]byte("job"), []byte("12"), []byte("n"), []byte("")}},
	}
	withPolicy := sampleState() // XGROUP SETPOLICY's state: extension tag 3
	withPolicy.Groups[0].Policy = stream.Policy{MaxDeliver: 5, DeadLetter: []byte("dlq"), AckWait: 1000, Backoff: []int64{100, 20000}}
	withPolicy.Groups[0].DeadLettered = 70000
	withPolicy.Groups[1].DeadLettered = 1 // a count left from a cleared policy
	empty := &stream.State{LastID: sid(5, 5), EntriesAdded: 2, MaxDeletedID: sid(5, 5),
		Groups: []stream.GroupState{{Name: []byte("g"), LastID: sid(5, 5), EntriesRead: 2}}}
	rest := []*Entry{
		{DB: 0, Key: []byte("list"), Value: List{lpOf("x", "y", "z")}, HasExpire: true, ExpireAt: 4102444800000},
		{DB: 0, Key: []byte("multi"), Value: multi},
		{DB: 0, Key: []byte("stream"), Value: sampleStream()},
		{DB: 3, Key: []byte("idmp"), Value: mustStream(withIDMP), HasExpire: true, ExpireAt: 1},
		{DB: 3, Key: []byte("empty-stream"), Value: mustStream(empty)},
		{DB: 3, Key: []byte("max-age"), Value: mustStream(withAge)},
		{DB: 3, Key: []byte("delayed"), Value: mustStream(withDelayed)},
		{DB: 3, Key: []byte("policy"), Value: mustStream(withPolicy)},
		{DB: 15, Key: []byte("k"), Value: String("v")},
	}
	return append(strs, rest...)
}

// sameEntries compares what the codec promises to keep.
func sameEntries(t *testing.T, got, want []*Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := *got[i], *want[i]
		g.Offset, g.Size, g.Idle, g.Freq = 0, 0, 0, 0
		w.Offset, w.Size, w.Idle, w.Freq = 0, 0, 0, 0
		if !reflect.DeepEqual(normalize(g.Value), normalize(w.Value)) || g.DB != w.DB ||
			!bytes.Equal(g.Key, w.Key) || g.HasExpire != w.HasExpire || g.ExpireAt != w.ExpireAt {
			var gs, ws strings.Builder
			dumpEntry(&gs, &g)
			dumpEntry(&ws, &w)
			t.Fatalf("entry %d differs:\n got %s\nwant %s", i, gs.String(), ws.String())
		}
	}
}

// normalize maps values to forms DeepEqual compares by content (nil and
// empty slices alike).
func normalize(v Value) any {
	switch v := v.(type) {
	case String:
		return string(v)
	case List:
		var out []string
		for _, lp := range v {
			out = append(out, string(lp))
		}
		return out
	case Stream:
		var sb strings.Builder
		st := v.State()
		dumpStream(&sb, &st)
		for _, n := range st.Nodes {
			fmt.Fprintf(&sb, "%s %x\n", n.Master, n.Listpack)
		}
		return sb.String()
	}
	return v
}

func TestRoundTrip(t *testing.T) {
	want := roundTripEntries()
	for _, opt := range []EncodeOptions{{}, {NoCompression: true}, {NoChecksum: true}, {NoCompression: true, NoChecksum: true}} {
		t.Run(fmt.Sprintf("compression=%v,checksum=%v", !opt.NoCompression, !opt.NoChecksum), func(t *testing.T) {
			file := encodeEntries(t, &opt, want)
			got, d, err := decodeAll(file, nil)
			if err != nil {
				t.Fatal(err)
			}
			sameEntries(t, got, want)
			wantSum := ChecksumOK
			if opt.NoChecksum {
				wantSum = ChecksumDisabled
			}
			if d.Checksum().Status != wantSum {
				t.Fatalf("checksum %v, want %v", d.Checksum().Status, wantSum)
			}
			if v, _ := d.Version(); v != RDBVersion {
				t.Fatalf("version %d", v)
			}
			if d.Stats().RedstreamExts != 5 { // stream, idmp, max-age, delayed, policy
				t.Fatalf("%d extension fields applied, want 5", d.Stats().RedstreamExts)
			}
		})
	}
}

// TestEncodeIsStable checks that decoding and re-encoding a file gives the
// same bytes: nothing is lost or reordered on the way through.
func TestEncodeIsStable(t *testing.T) {
	opt := &EncodeOptions{Ctime: time.Unix(1700000000, 0)}
	file := encodeEntries(t, opt, roundTripEntries())
	got, _, err := decodeAll(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again := encodeEntries(t, opt, got); !bytes.Equal(again, file) {
		t.Fatalf("re-encoding changed the file: %d bytes, was %d", len(again), len(file))
	}
}

func TestStringEncodingsChosenAsRedis(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "00"},
		{"12", "c00c"},
		{"-129", "c17fff"},
		{"70000", "c270110100"},
		{"2147483648", "0a32313437343833363438"},
		{"007", "03303037"},
		{strings.Repeat("a", 20), "14" + strings.Repeat("61", 20)},
		{strings.Repeat("a", 40), "c3" + "09" + "28" + "016161e01b00016161"},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		w := newRDBWriter(&buf, false, true)
		w.str([]byte(c.in))
		w.bw.Flush()
		if got := fmt.Sprintf("%x", buf.Bytes()); got != c.want {
			t.Errorf("%.12q: %s, want %s", c.in, got, c.want)
		}
	}
}

func TestEncodeFromIterators(t *testing.T) {
	entries := roundTripEntries()
	byDB := map[int][]*Entry{}
	for _, e := range entries {
		byDB[e.DB] = append(byDB[e.DB], e)
	}
	seq := func(es []*Entry) func(func(*Entry, error) bool) {
		return func(yield func(*Entry, error) bool) {
			for _, e := range es {
				if !yield(e, nil) {
					return
				}
			}
		}
	}
	var buf bytes.Buffer
	dbs := []DB{{ID: 0, Entries: seq(byDB[0])}, {ID: 1, Entries: seq(nil)}, {ID: 3, Entries: seq(byDB[3])}, {ID: 15, Entries: seq(byDB[15])}}
	if err := Encode(&buf, nil, dbs); err != nil {
		t.Fatal(err)
	}
	got, d, err := decodeAll(buf.Bytes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, got, entries)
	if _, ok := d.Stats().ResizeDBs[1]; ok {
		t.Fatal("empty db 1 was written")
	}
	boom := errors.New("boom")
	bad := []DB{{ID: 0, Entries: func(yield func(*Entry, error) bool) { yield(nil, boom) }}}
	if err := Encode(io.Discard, nil, bad); !errors.Is(err, boom) {
		t.Fatalf("Encode with a failing source: %v", err)
	}
}

func TestEncoderMisuse(t *testing.T) {
	e := NewEncoder(io.Discard, nil)
	if err := e.WriteEntry(&Entry{Key: []byte("x"), Value: Skipped{Kind: "hash"}}); err == nil {
		t.Fatal("wrote a Skipped value")
	}
	if err := e.WriteEntry(&Entry{Key: []byte("y"), Value: Stream{}}); err == nil {
		t.Fatal("wrote a nil stream")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); !errors.Is(err, ErrEncoderClosed) {
		t.Fatalf("second Close: %v", err)
	}
}
