package persistence

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/server"
	"github.com/redstream/redstream/stream"
)

// dumpValues is one value of every kind the codec writes: strings in
// each string encoding, lists with packed and plain nodes, streams with
// groups, PELs, consumers, active times, IDMP state, and an empty one.
func dumpValues() map[string]Value {
	out := map[string]Value{}
	for _, e := range roundTripEntries() {
		out[string(e.Key)] = e.Value
	}
	out["stream-active"] = sampleStream() // alice's active time differs from her seen time
	same := sampleState()
	for gi := range same.Groups {
		for ci := range same.Groups[gi].Consumers {
			c := &same.Groups[gi].Consumers[ci]
			c.ActiveTime = c.SeenTime
		}
	}
	out["stream-plain"] = mustStream(same) // nothing version 10 cannot hold: no extension
	return out
}

// withFooter appends a version and the right checksum to body.
func withFooter(body []byte, version uint16) []byte {
	p := binary.LittleEndian.AppendUint16(bytes.Clone(body), version)
	return binary.LittleEndian.AppendUint64(p, CRC64(p))
}

func mustDump(t testing.TB, v Value, opt *DumpOptions) []byte {
	t.Helper()
	p, err := EncodeDump(v, opt)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func sameValue(t *testing.T, name string, got, want Value) {
	t.Helper()
	if !reflect.DeepEqual(normalize(got), normalize(want)) {
		var g, w strings.Builder
		dumpEntry(&g, &Entry{Key: []byte(name), Value: got})
		dumpEntry(&w, &Entry{Key: []byte(name), Value: want})
		t.Fatalf("%s differs after DUMP and RESTORE:\n got %s\nwant %s", name, g.String(), w.String())
	}
}

func TestDumpRoundTrip(t *testing.T) {
	for _, opt := range []*DumpOptions{nil, {NoCompression: true}, {ListFill: 3}} {
		for name, v := range dumpValues() {
			p := mustDump(t, v, opt)
			if ver, _ := DumpVersionOf(p); ver != 10 {
				t.Fatalf("%s: payload version %d, want 10", name, ver)
			}
			if binary.LittleEndian.Uint64(p[len(p)-8:]) != CRC64(p[:len(p)-8]) {
				t.Fatalf("%s: wrong checksum", name)
			}
			got, err := DecodeDump(p, opt)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			sameValue(t, name, got, v)
			if again := mustDump(t, got, opt); !bytes.Equal(again, p) {
				t.Fatalf("%s: re-encoding the decoded value changed the payload", name)
			}
		}
	}
}

// TestDumpBytesAsRedis pins payloads to the bytes redis-server 7.0's DUMP
// gives for the same values.
func TestDumpBytesAsRedis(t *testing.T) {
	cases := []struct {
		v    Value
		want string
	}{
		{String("hello"), "000568656c6c6f0a006372df766534200a"},
		{List{lpOf("a", "b", "c")}, "12010210100000000300816102816202816302ff0a00c818b90c9533529e"},
	}
	for _, c := range cases {
		if got := fmt.Sprintf("%x", mustDump(t, c.v, nil)); got != c.want {
			t.Errorf("DUMP of %v:\n got %s\nwant %s", c.v, got, c.want)
		}
	}
}

func TestDumpNeedsExtOnlyForNewerState(t *testing.T) {
	plain := mustDump(t, dumpValues()["stream-plain"], nil)
	if bytes.Contains(plain, []byte(extAuxName)) {
		t.Fatal("a stream version 10 holds whole carries the extension")
	}
	for _, name := range []string{"stream-active", "idmp", "max-age", "policy"} {
		if p := mustDump(t, dumpValues()[name], nil); !bytes.Contains(p, []byte(extAuxName)) {
			t.Fatalf("%s: no extension after the value", name)
		}
	}
}

// payloadsForCorruption are payloads of every kind, small enough to flip
// every bit of.
func payloadsForCorruption(t testing.TB) map[string][]byte {
	vs := map[string]Value{
		"int":     String("12345"),
		"string":  String("hello world"),
		"lzf":     String(strings.Repeat("abcd", 30)),
		"list":    List{lpOf("a", "1", "-70000"), lpOf(strings.Repeat("x", 40))},
		"stream":  sampleStream(),
		"idmp":    dumpValues()["idmp"],
		"empty-s": dumpValues()["empty-stream"],
	}
	out := map[string][]byte{}
	for name, v := range vs {
		out[name] = mustDump(t, v, nil)
	}
	return out
}

// TestDumpEveryBitFlipRefused flips each bit of each payload, and cuts
// each payload at every length: the footer catches them all, with
// Redis's error.
func TestDumpEveryBitFlipRefused(t *testing.T) {
	for name, p := range payloadsForCorruption(t) {
		for i := range len(p) * 8 {
			q := bytes.Clone(p)
			q[i/8] ^= 1 << (i % 8)
			if _, err := DecodeDump(q, nil); !errors.Is(err, ErrDumpPayload) {
				t.Fatalf("%s with bit %d flipped: %v", name, i, err)
			}
		}
		for n := range len(p) {
			if _, err := DecodeDump(p[:n], nil); !errors.Is(err, ErrDumpPayload) {
				t.Fatalf("%s cut to %d bytes: %v", name, n, err)
			}
		}
	}
}

// TestDumpCorruptValueWithGoodFooter flips each bit of each value and
// gives it a right footer, so that the value decoder is what must cope:
// every result is a Bad data format error or a value that round-trips
// and converts to a server value; never a panic.
func TestDumpCorruptValueWithGoodFooter(t *testing.T) {
	refused := 0
	for name, p := range payloadsForCorruption(t) {
		body := p[:len(p)-dumpFooter]
		for i := range len(body) * 8 {
			q := bytes.Clone(body)
			q[i/8] ^= 1 << (i % 8)
			if !checkPayload(t, withFooter(q, DumpVersion)) {
				refused++
			}
		}
		// Cut just before the extension, the value is whole (and loses
		// only what version 10 cannot say); cut anywhere else, it is not.
		extAt := bytes.Index(body, append([]byte{opAux, byte(len(extAuxName))}, extAuxName...))
		for n := range len(body) {
			_, err := DecodeDump(withFooter(body[:n], DumpVersion), nil)
			if n == extAt && err == nil {
				continue
			}
			if !errors.Is(err, ErrDumpData) {
				t.Fatalf("%s's value cut to %d bytes: %v", name, n, err)
			}
		}
	}
	if refused == 0 {
		t.Fatal("no corrupt value was refused")
	}
}

// checkPayload decodes p and checks what the codec promises of whatever
// it accepts; it reports whether p was accepted.
func checkPayload(t *testing.T, p []byte) bool {
	t.Helper()
	v, err := DecodeDump(p, nil)
	if err != nil {
		if !errors.Is(err, ErrDumpData) && !errors.Is(err, ErrDumpPayload) {
			t.Fatalf("error wraps neither DUMP error: %v", err)
		}
		return false
	}
	if _, err := FromValue(v, listpack.DefaultFill); err != nil {
		// The codec's checks passed but the stream package found a
		// fault: DumpCodec answers Bad data format for it.
		return true
	}
	again, err := EncodeDump(v, nil)
	if err != nil {
		t.Fatalf("accepted value does not encode: %v", err)
	}
	w, err := DecodeDump(again, nil)
	if err != nil {
		t.Fatalf("re-encoded payload does not decode: %v", err)
	}
	sameValue(t, "accepted", w, v)
	return true
}

// payload builds a DUMP payload byte by byte, for layouts our encoder
// does not produce: older and newer types and versions.
type payload struct{ f *fileBuilder }

func newPayload(typ byte) *payload {
	f := &fileBuilder{}
	f.w = newRDBWriter(&f.buf, false, false)
	f.w.u8(typ)
	return &payload{f}
}

func (p *payload) done(version uint16) []byte {
	p.f.w.bw.Flush()
	return withFooter(p.f.buf.Bytes(), version)
}

// TestDumpOlderAndNewerVersions reads payloads as Redis 6.0/6.2 (version
// 9: quicklists of ziplists, version-1 streams), 7.2 (11) and 7.4 (12:
// streams with consumer active times) write them, and older encodings a
// Redis 2.x payload may hold; refuses a version newer than 12.
func TestDumpOlderAndNewerVersions(t *testing.T) {
	v9list := newPayload(typeListQuicklist)
	v9list.f.n(2).blob(ziplist(legacyValues[:10]...)).blob(ziplist(legacyValues[10:]...))
	zl := newPayload(typeListZiplist)
	zl.f.blob(ziplist(legacyValues...))
	linked := newPayload(typeList)
	linked.f.n(uint64(len(legacyValues)))
	for _, v := range legacyValues {
		linked.f.s(v)
	}
	for name, p := range map[string][]byte{"v9 quicklist": v9list.done(9), "v6 ziplist": zl.done(6), "v0 linked": linked.done(0)} {
		v, err := DecodeDump(p, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := listValues(t, &Entry{Key: []byte(name), Value: v})
		if strings.Join(got, ",") != strings.Join(legacyValues, ",") {
			t.Fatalf("%s: %q", name, got)
		}
	}

	es := []sEntry{{id: sid(1, 0), fields: []string{"a", "1"}}, {id: sid(2, 0), fields: []string{"a", "2"}}}
	node := buildNode(es[0].id, es)
	v1 := newPayload(typeStreamListpacks)
	v1.f.n(1).blob(idBytes(es[0].id)).blob(node).n(2).id(sid(2, 0)).n(1)
	v1.f.s("g").id(sid(1, 0)).n(1).raw16(sid(1, 0)).ms(77).n(2).n(1).s("c").ms(100).n(1).raw16(sid(1, 0))
	v, err := DecodeDump(v1.done(9), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := v.(Stream).State()
	if s.EntriesAdded != 2 || s.FirstID != (sid(1, 0)) || s.Groups[0].EntriesRead != 1 || s.Groups[0].Consumers[0].ActiveTime != 100 {
		t.Fatalf("version 9 stream: %+v", s)
	}

	for _, ver := range []uint16{11, 12} {
		v3 := newPayload(typeStreamListpacks3)
		v3.f.n(1).blob(idBytes(es[0].id)).blob(node).n(2).id(sid(2, 0)).id(sid(1, 0)).id(stream.ID{}).n(2).n(1)
		v3.f.s("g").id(sid(1, 0)).n(1).n(1).raw16(sid(1, 0)).ms(77).n(2).n(1).s("c").ms(100).ms(90).n(1).raw16(sid(1, 0))
		v, err := DecodeDump(v3.done(ver), nil)
		if err != nil {
			t.Fatalf("version %d: %v", ver, err)
		}
		if c := v.(Stream).State().Groups[0].Consumers[0]; c.SeenTime != 100 || c.ActiveTime != 90 {
			t.Fatalf("version %d consumer: %+v", ver, c)
		}
		l := newPayload(typeListQuicklist2)
		l.f.n(2).n(containerPacked).blob(lpOf("a", "b")).n(containerPlain).s(strings.Repeat("p", 9000))
		v, err = DecodeDump(l.done(ver), nil)
		if err != nil {
			t.Fatalf("version %d list: %v", ver, err)
		}
		if got := listValues(t, &Entry{Value: v}); len(got) != 3 || got[2] != strings.Repeat("p", 9000) {
			t.Fatalf("version %d list: %.40q", ver, got)
		}
	}

	for i, p := range olderPayloads() {
		if !checkPayload(t, p) {
			t.Fatalf("older payload %d refused", i)
		}
	}

	s13 := newPayload(typeString)
	s13.f.s("x")
	if _, err := DecodeDump(s13.done(13), nil); !errors.Is(err, ErrDumpPayload) {
		t.Fatalf("version 13: %v", err)
	}
	if v, err := DecodeDump(s13.done(12), nil); err != nil || string(v.(String)) != "x" {
		t.Fatalf("version 12 string: %v %v", v, err)
	}
}

// TestDumpRefusals covers payloads whose footer is right and whose value
// is not, each refused with Bad data format.
func TestDumpRefusals(t *testing.T) {
	ext := func(v any) []byte {
		var b []byte
		b = append(b, opAux)
		b = appendStr(b, []byte(extAuxName))
		s := sampleState()
		if v != nil {
			s = v.(*stream.State)
		}
		return appendStr(b, appendExt(nil, 0, nil, s))
	}
	str := mustDump(t, String("abc"), nil)
	strBody := str[:len(str)-dumpFooter]
	st := mustDump(t, dumpValues()["stream-plain"], nil)
	stBody := st[:len(st)-dumpFooter]
	other := sampleState()
	other.Groups[0].Consumers[0].Name = []byte("zed") // the extension names a consumer st lacks
	other.Groups[0].Consumers[0].ActiveTime = 1
	emptyList := newPayload(typeListQuicklist2)
	emptyList.f.n(0)
	emptyZl := newPayload(typeListQuicklist)
	emptyZl.f.n(1).blob(ziplist())
	hash := newPayload(typeHashListpack)
	hash.f.blob(lpOf("f", "v"))
	set := newPayload(typeSetIntset)
	set.f.blob([]byte{2, 0, 0, 0, 1, 0, 0, 0, 7, 0})
	cases := map[string][]byte{
		"empty value":          withFooter(nil, DumpVersion),
		"unknown type":         withFooter([]byte{30, 1, 'x'}, DumpVersion),
		"type 8":               withFooter([]byte{8, 1, 'x'}, DumpVersion),
		"empty list":           emptyList.done(DumpVersion),
		"empty ziplist list":   emptyZl.done(9),
		"trailing byte":        withFooter(append(bytes.Clone(strBody), 0), DumpVersion),
		"trailing junk":        withFooter(append(bytes.Clone(strBody), "JUNKJUNK"...), DumpVersion),
		"ext after a string":   withFooter(append(bytes.Clone(strBody), ext(nil)...), DumpVersion),
		"ext of another":       withFooter(append(bytes.Clone(stBody), ext(other)...), DumpVersion),
		"two exts":             withFooter(append(append(bytes.Clone(stBody), ext(nil)...), ext(nil)...), DumpVersion),
		"hash":                 hash.done(DumpVersion),
		"intset":               set.done(DumpVersion),
		"string past the body": withFooter([]byte{typeString, 0x40, 0xff, 'x'}, DumpVersion),
	}
	for name, p := range cases {
		v, err := DecodeDump(p, nil)
		if !errors.Is(err, ErrDumpData) {
			t.Errorf("%s: %v, %v; want Bad data format", name, v, err)
		}
	}
	for _, name := range []string{"hash", "intset"} {
		if _, err := DecodeDump(cases[name], nil); !errors.Is(err, ErrRDBUnsupported) {
			t.Errorf("%s: %v does not say the type is unsupported", name, err)
		}
	}
	// A stream's own extension is accepted after it: the round trip of
	// "stream-active" covers that.
	if _, err := DecodeDump(withFooter(append(bytes.Clone(stBody), ext(nil)...), DumpVersion), nil); err != nil {
		t.Fatalf("a stream with its extension: %v", err)
	}
}

func TestDumpEncodeRefusals(t *testing.T) {
	for _, v := range []Value{List{}, List{listpack.New()}, Skipped{Kind: "hash"}, Stream{}} {
		if p, err := EncodeDump(v, nil); err == nil {
			t.Errorf("EncodeDump(%#v) = %x, want an error", v, p)
		}
	}
}

// TestDumpCodecServerValues goes through DumpCodec as the server does:
// a string, a list and a stream with every piece of group state,
// released entries and IDMP included, come back equal; errors wrap the
// server's; the value restored shares nothing with the payload.
func TestDumpCodecServerValues(t *testing.T) {
	st := sampleState()
	gs := st.Groups
	gs[0].Released = []stream.ID{gs[0].PEL[2].ID, gs[0].PEL[0].ID}
	for _, id := range gs[0].Released {
		for ci := range gs[0].Consumers {
			c := &gs[0].Consumers[ci]
			for k := 0; k < len(c.PEL); k++ {
				if c.PEL[k] == id {
					c.PEL = append(c.PEL[:k], c.PEL[k+1:]...)
					k--
				}
			}
		}
	}
	st.IDMP = &stream.IDMPState{Duration: 60, MaxSize: 5, Added: 2, Duplicates: 1, Producers: []stream.IDMPProducer{
		{PID: []byte("p"), IIDs: []stream.IDMPRecord{{IID: []byte("i"), ID: stream.ID{Ms: 1001, Seq: 1}, Time: 1700000000000}}}}}
	s, err := stream.FromState(st)
	if err != nil {
		t.Fatal(err)
	}
	q := listpack.NewQuicklist(-2)
	for i := range 3000 {
		q.PushTail([]byte(fmt.Sprintf("element-%d", i)))
	}
	q.PushTail([]byte(strings.Repeat("big", 5000)))
	codec := DumpCodec{}
	opt := server.DumpOptions{Compress: true, ListFill: -2}
	for name, v := range map[string]any{"string": []byte("a string value"), "list": q, "stream": s} {
		p, err := codec.Dump(v, opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := codec.Restore(p, opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _ := ToValue(v)
		back, _ := ToValue(got)
		sameValue(t, name, back, want)
		clear(p) // the restored value must not have kept the payload's bytes
		back, _ = ToValue(got)
		sameValue(t, name+" after the payload was overwritten", back, want)
		if name == "stream" {
			rg := got.(*stream.Stream).State().Groups
			if !reflect.DeepEqual(rg[0].Released, gs[0].Released) {
				t.Fatalf("released entries %v, want %v", rg[0].Released, gs[0].Released)
			}
			if st := got.(*stream.Stream).State().IDMP; st == nil || st.Added != 2 || len(st.Producers) != 1 {
				t.Fatalf("IDMP state %+v", st)
			}
		}
	}

	good, _ := codec.Dump([]byte("x"), opt)
	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 1
	if _, err := codec.Restore(bad, opt); !errors.Is(err, server.ErrDumpPayload) {
		t.Fatalf("bad checksum: %v", err)
	}
	hash := newPayload(typeHashListpack)
	hash.f.blob(lpOf("f", "v"))
	var te *server.DumpTypeError
	if _, err := codec.Restore(hash.done(DumpVersion), opt); !errors.As(err, &te) || te.Type != "hash" || !errors.Is(err, server.ErrDumpData) {
		t.Fatalf("hash: %v", err)
	}
	if _, err := codec.Restore(withFooter([]byte{typeString, 5, 'x'}, DumpVersion), opt); !errors.Is(err, server.ErrDumpData) || errors.As(err, &te) {
		t.Fatalf("truncated string: %v", err)
	}
}

// FuzzRestorePayload feeds RESTORE's decoder arbitrary payloads, both as
// given (the footer almost always refuses them) and with a right footer
// added (so the value decoder sees them). It must never panic nor
// allocate far beyond the input, and whatever it accepts must encode
// again to a payload that decodes to the same value.
func FuzzRestorePayload(f *testing.F) {
	for _, p := range payloadsForCorruption(f) {
		f.Add(p)
	}
	for _, v := range dumpValues() {
		if p := mustDump(f, v, nil); len(p) < 4096 {
			f.Add(p)
		}
	}
	for _, p := range olderPayloads() {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range [][]byte{b, withFooter(b, DumpVersion)} {
			allocated := allocatedBy(func() { checkPayload(t, p) })
			if limit := uint64(8<<20 + 400*len(p)); allocated > limit {
				t.Fatalf("allocated %d bytes decoding %d", allocated, len(p))
			}
		}
	})
}

// olderPayloads are payloads in the layouts of other Redis versions, for
// the fuzzer to start from: Redis 6's (version 9: a quicklist of
// ziplists, a version-1 stream with a group) and Redis 7.2's (version 11:
// a version-3 stream, a list with a plain node).
func olderPayloads() [][]byte {
	ql := newPayload(typeListQuicklist)
	ql.f.n(2).blob(ziplist("a", "12", "-300")).blob(ziplist("70000", strings.Repeat("z", 70)))
	es := []sEntry{{id: sid(1, 0), fields: []string{"a", "1"}}, {id: sid(2, 0), fields: []string{"a", "2"}, deleted: true},
		{id: sid(3, 0), fields: []string{"b", "3"}}}
	node := buildNode(es[0].id, es)
	v1 := newPayload(typeStreamListpacks)
	v1.f.n(1).blob(idBytes(es[0].id)).blob(node).n(2).id(sid(3, 0)).n(1)
	v1.f.s("g").id(sid(1, 0)).n(1).raw16(sid(1, 0)).ms(77).n(2).n(1).s("c").ms(100).n(1).raw16(sid(1, 0))
	v3 := newPayload(typeStreamListpacks3)
	v3.f.n(1).blob(idBytes(es[0].id)).blob(node).n(2).id(sid(3, 0)).id(sid(1, 0)).id(sid(2, 0)).n(3).n(1)
	v3.f.s("g").id(sid(1, 0)).n(1).n(1).raw16(sid(1, 0)).ms(77).n(2).n(1).s("c").ms(100).ms(90).n(1).raw16(sid(1, 0))
	l := newPayload(typeListQuicklist2)
	l.f.n(2).n(containerPacked).blob(lpOf("a", "b")).n(containerPlain).s(strings.Repeat("p", 100))
	return [][]byte{ql.done(9), v1.done(9), v3.done(11), l.done(11)}
}
