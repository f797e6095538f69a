package persistence

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/redstream/redstream/stream"
	"strconv"
	"strings"
	"testing"
)

// fileBuilder writes RDB files byte by byte, for layouts our encoder does
// not produce: older and newer versions, types we skip, odd opcodes.
type fileBuilder struct {
	buf bytes.Buffer
	w   *rdbWriter
}

func newFile(version int) *fileBuilder {
	f := &fileBuilder{}
	f.w = newRDBWriter(&f.buf, true, false)
	f.w.raw([]byte(fmt.Sprintf("REDIS%04d", version)))
	return f
}

func (f *fileBuilder) op(b ...byte) *fileBuilder   { f.w.raw(b); return f }
func (f *fileBuilder) n(v uint64) *fileBuilder     { f.w.length(v); return f }
func (f *fileBuilder) s(v string) *fileBuilder     { f.w.str([]byte(v)); return f }
func (f *fileBuilder) blob(v []byte) *fileBuilder  { f.w.length(uint64(len(v))); f.w.raw(v); return f }
func (f *fileBuilder) ms(v int64) *fileBuilder     { f.w.ms(v); return f }
func (f *fileBuilder) id(v stream.ID) *fileBuilder { f.w.length(v.Ms); f.w.length(v.Seq); return f }
func (f *fileBuilder) raw16(v stream.ID) *fileBuilder {
	f.w.rawID(v)
	return f
}

func idBytes(id stream.ID) []byte { b := id.Key(); return b[:] }

// done appends EOF and the checksum.
func (f *fileBuilder) done() []byte {
	f.w.u8(opEOF)
	sum := f.w.crc
	f.w.checksum = false
	f.w.ms(int64(sum))
	f.w.bw.Flush()
	return f.buf.Bytes()
}

// ziplist builds a ziplist holding vs, integers in their smallest integer
// encoding as Redis would store them.
func ziplist(vs ...string) []byte {
	zl := make([]byte, zlHeader)
	prev, last := 0, zlHeader
	for _, v := range vs {
		last = len(zl)
		start := len(zl)
		if prev < zlBigLen {
			zl = append(zl, byte(prev))
		} else {
			zl = binary.LittleEndian.AppendUint32(append(zl, zlBigLen), uint32(prev))
		}
		zl = appendZlValue(zl, v)
		prev = len(zl) - start
	}
	zl = append(zl, zlEnd)
	binary.LittleEndian.PutUint32(zl, uint32(len(zl)))
	binary.LittleEndian.PutUint32(zl[4:], uint32(last))
	binary.LittleEndian.PutUint16(zl[8:], uint16(len(vs)))
	return zl
}

func appendZlValue(zl []byte, v string) []byte {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && strconv.FormatInt(n, 10) == v {
		switch {
		case n >= 0 && n <= 12:
			return append(zl, 0xf1+byte(n))
		case n >= -128 && n <= 127:
			return append(zl, 0xfe, byte(n))
		case n >= -32768 && n <= 32767:
			return binary.LittleEndian.AppendUint16(append(zl, 0xc0), uint16(n))
		case n >= -1<<23 && n < 1<<23:
			return append(zl, 0xf0, byte(n), byte(n>>8), byte(n>>16))
		case n >= -1<<31 && n < 1<<31:
			return binary.LittleEndian.AppendUint32(append(zl, 0xd0), uint32(n))
		}
		return binary.LittleEndian.AppendUint64(append(zl, 0xe0), uint64(n))
	}
	switch l := len(v); {
	case l < 64:
		zl = append(zl, byte(l))
	case l < 16384:
		zl = append(zl, 0x40|byte(l>>8), byte(l))
	default:
		zl = binary.BigEndian.AppendUint32(append(zl, 0x80), uint32(l))
	}
	return append(zl, v...)
}

var legacyValues = []string{"a", "0", "12", "13", "-1", "127", "-128", "300", "-32768", "40000",
	"-8388608", "8388607", "2147483647", "-2147483648", "9223372036854775807", "-9223372036854775808",
	"007", strings.Repeat("m", 100), strings.Repeat("L", 20000)}

func listValues(t *testing.T, e *Entry) []string {
	t.Helper()
	l, ok := e.Value.(List)
	if !ok {
		t.Fatalf("%q is a %s", e.Key, e.Value.Type())
	}
	var out []string
	for _, lp := range l {
		for off := lp.First(); off >= 0; off = lp.Next(off) {
			out = append(out, string(lp.Get(off, nil)))
		}
	}
	return out
}

func TestDecodeLegacyLists(t *testing.T) {
	f := newFile(9).op(opSelectDB).n(0)
	f.op(typeListQuicklist).s("ql").n(3).blob(ziplist(legacyValues[:10]...)).blob(ziplist()).blob(ziplist(legacyValues[10:]...))
	f.op(typeListZiplist).s("zl").blob(ziplist(legacyValues...))
	f.op(typeList).s("linked").n(uint64(len(legacyValues)))
	for _, v := range legacyValues {
		f.s(v)
	}
	f.op(typeListQuicklist).s("empty").n(1).blob(ziplist())
	es, d, err := decodeAll(f.done(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 || d.Stats().EmptyKeys != 1 {
		t.Fatalf("%d entries, %d empty keys; want 3 and 1", len(es), d.Stats().EmptyKeys)
	}
	for _, e := range es {
		if got := listValues(t, e); strings.Join(got, ",") != strings.Join(legacyValues, ",") {
			t.Errorf("%q: %q", e.Key, got)
		}
	}
	if n := len(es[0].Value.(List)); n != 2 {
		t.Errorf("quicklist of ziplists gave %d nodes, want 2 (the empty one dropped)", n)
	}
}

// TestDecodeStreamV1 reads the Redis 5/6 stream layout and checks the
// counters derived as Redis derives them.
func TestDecodeStreamV1(t *testing.T) {
	es := []sEntry{{id: sid(1, 0), fields: []string{"a", "1"}, deleted: true},
		{id: sid(2, 0), fields: []string{"a", "2"}}, {id: sid(3, 0), fields: []string{"a", "3"}}}
	node := buildNode(es[0].id, es)
	f := newFile(9).op(opSelectDB).n(0).op(typeStreamListpacks).s("s").n(1).blob(idBytes(es[0].id)).blob(node)
	f.n(2).id(sid(3, 0)).n(4) // length, last ID, 4 groups
	for _, g := range []struct {
		name string
		last stream.ID
	}{{"at-first", sid(2, 0)}, {"at-last", sid(3, 0)}, {"before", sid(1, 5)}, {"beyond", sid(9, 0)}} {
		f.s(g.name).id(g.last).n(0).n(0) // empty PEL, no consumers
	}
	got, _, err := decodeAll(f.done(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := got[0].Value.(Stream).State()
	if s.FirstID != (sid(2, 0)) || s.EntriesAdded != 2 || s.MaxDeletedID != (stream.ID{}) {
		t.Fatalf("derived first=%s added=%d maxdel=%s", s.FirstID, s.EntriesAdded, s.MaxDeletedID)
	}
	want := []int64{1, 2, 0, -1}
	for i, g := range s.Groups {
		if g.EntriesRead != want[i] {
			t.Errorf("group %s: entries-read %d, want %d", g.Name, g.EntriesRead, want[i])
		}
	}
}

// TestDecodeStreamV3 reads Redis 7.2's layout, with consumer active times.
func TestDecodeStreamV3(t *testing.T) {
	s := sampleState()
	node := s.Nodes[0]
	f := newFile(11).op(opSelectDB).n(0).op(typeStreamListpacks3).s("s").n(1).blob(idBytes(node.Master)).blob(node.Listpack)
	live := uint64(0)
	for _, e := range nodeEntries(node) {
		if !strings.HasPrefix(e, "(deleted)") {
			live++
		}
	}
	f.n(live).id(sid(1004, 1)).id(sid(1001, 1)).id(sid(1003, 0)).n(4).n(1)
	f.s("g").id(sid(1002, 2)).n(2).n(1).raw16(sid(1002, 2)).ms(77).n(2)
	f.n(1).s("c").ms(100).ms(90).n(1).raw16(sid(1002, 2))
	got, _, err := decodeAll(f.done(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := got[0].Value.(Stream).State().Groups[0].Consumers[0]
	if c.SeenTime != 100 || c.ActiveTime != 90 {
		t.Fatalf("consumer seen %d active %d, want 100 and 90", c.SeenTime, c.ActiveTime)
	}
}

func TestDecodeOpcodes(t *testing.T) {
	f := newFile(12).op(opAux).s("redis-ver").s("7.4.0")
	f.op(opModuleAux).n(0x1234 << 10).n(moduleOpUint).n(2).n(moduleOpString).s("x").n(moduleOpDouble).op(make([]byte, 8)...).n(moduleOpEOF)
	f.op(opFunction2).s("#!lua name=x\n...")
	f.op(opSelectDB).n(5).op(opResizeDB).n(9).n(1).op(opSlotInfo).n(7).n(9).n(1)
	f.op(opExpireSec, 0x10, 0, 0, 0).op(opIdle).n(30).op(typeString).s("sec").s("v")
	f.op(opFreq, 9).op(typeHashLpEx).s("hx").ms(5).blob(lpOf("f", "v", "0"))
	f.op(typeHashMeta).s("hm").ms(5).n(1).n(0).s("f").s("v")
	f.op(typeModule2).s("mod").n(0x99<<10).n(moduleOpSint).n(3).n(moduleOpFloat).op(1, 2, 3, 4).n(moduleOpEOF)
	f.op(typeZset).s("oldz").n(2).s("a").op(3).op('1', '.', '5').s("b").op(254)
	f.op(typeSetListpack).s("sl").blob(lpOf("a", "b", "c"))
	f.op(typeString).s("last").s("x")
	file := f.done()
	es, d, err := decodeAll(file, &DecodeOptions{SkipUnsupported: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, fmt.Sprintf("%s:%s:%d", e.Key, e.Value.Type(), e.DB))
	}
	want := "sec:string:5 hx:hash:5 hm:hash:5 mod:module value:5 oldz:sorted set:5 sl:set:5 last:string:5"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %s", strings.Join(got, " "))
	}
	if e := es[0]; !e.HasExpire || e.ExpireAt != 16000 || e.Idle != 30 || es[1].Freq != 9 {
		t.Fatalf("expire %v/%d idle %d freq %d", e.HasExpire, e.ExpireAt, e.Idle, es[1].Freq)
	}
	st := d.Stats()
	if st.SkippedFuncs != 1 || st.SkippedModAux != 1 || st.SlotInfoRecords != 1 || st.ResizeDBs[5] != [2]uint64{9, 1} {
		t.Fatalf("stats %+v", st)
	}
	if sk := es[5].Value.(Skipped); sk.Len != 3 {
		t.Fatalf("listpack set length %d", sk.Len)
	}
	// Without SkipUnsupported the first unsupported thing is an error
	// naming it.
	_, _, err = decodeAll(file, nil)
	var ue *UnsupportedError
	if !errors.As(err, &ue) || !errors.Is(err, ErrRDBUnsupported) || !strings.Contains(err.Error(), "module") {
		t.Fatalf("err = %v", err)
	}
}

func TestUnsupportedKeyError(t *testing.T) {
	file := newFile(10).op(opSelectDB).n(2).op(typeHashListpack).s("x").blob(lpOf("f", "v")).done()
	_, _, err := decodeAll(file, nil)
	want := `persistence: RDB key "x" in db 2 is a hash; redstream serves strings, lists and streams (at offset 11)`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
}
