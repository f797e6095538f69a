package listpack

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// lpBytes builds the expected bytes of a listpack holding the given raw
// entries (each already encoded, back-length included).
func lpBytes(count int, entries ...[]byte) []byte {
	body := bytes.Join(entries, nil)
	b := make([]byte, hdrSize, hdrSize+len(body)+1)
	binary.LittleEndian.PutUint32(b, uint32(hdrSize+len(body)+1))
	binary.LittleEndian.PutUint16(b[4:], uint16(count))
	b = append(b, body...)
	return append(b, eof)
}

// cat joins byte pieces; it keeps the golden tables readable.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func rep(n int) []byte { return bytes.Repeat([]byte{'x'}, n) }

func TestNewIsEmpty(t *testing.T) {
	lp := New()
	want := []byte{0x07, 0, 0, 0, 0, 0, 0xFF}
	if !bytes.Equal(lp, want) {
		t.Fatalf("New() = % x, want % x", []byte(lp), want)
	}
	if lp.Len() != 0 || lp.First() != -1 || lp.Last() != -1 || lp.Seek(0) != -1 || lp.Seek(-1) != -1 {
		t.Fatal("empty listpack reports entries")
	}
	if err := Validate(lp, true); err != nil {
		t.Fatal(err)
	}
}

// goldenEntries lists values with the exact entry bytes Redis's encoder
// writes for them (derived from the encoder's rules: smallest integer
// form for canonical int64 strings, smallest string form otherwise, and
// the back-length thresholds 127 / 16383 / 2097151).
var goldenEntries = []struct {
	v     string
	entry []byte
}{
	// 7-bit unsigned integers.
	{"0", []byte{0x00, 0x01}},
	{"1", []byte{0x01, 0x01}},
	{"127", []byte{0x7F, 0x01}},
	// 13-bit integers.
	{"128", []byte{0xC0, 0x80, 0x02}},
	{"1000", []byte{0xC3, 0xE8, 0x02}},
	{"4095", []byte{0xCF, 0xFF, 0x02}},
	{"-1", []byte{0xDF, 0xFF, 0x02}},
	{"-4096", []byte{0xD0, 0x00, 0x02}},
	// 16-bit integers.
	{"4096", []byte{0xF1, 0x00, 0x10, 0x03}},
	{"-4097", []byte{0xF1, 0xFF, 0xEF, 0x03}},
	{"32767", []byte{0xF1, 0xFF, 0x7F, 0x03}},
	{"-32768", []byte{0xF1, 0x00, 0x80, 0x03}},
	// 24-bit integers.
	{"32768", []byte{0xF2, 0x00, 0x80, 0x00, 0x04}},
	{"-32769", []byte{0xF2, 0xFF, 0x7F, 0xFF, 0x04}},
	{"8388607", []byte{0xF2, 0xFF, 0xFF, 0x7F, 0x04}},
	{"-8388608", []byte{0xF2, 0x00, 0x00, 0x80, 0x04}},
	// 32-bit integers.
	{"8388608", []byte{0xF3, 0x00, 0x00, 0x80, 0x00, 0x05}},
	{"-8388609", []byte{0xF3, 0xFF, 0xFF, 0x7F, 0xFF, 0x05}},
	{"2147483647", []byte{0xF3, 0xFF, 0xFF, 0xFF, 0x7F, 0x05}},
	{"-2147483648", []byte{0xF3, 0x00, 0x00, 0x00, 0x80, 0x05}},
	// 64-bit integers.
	{"2147483648", []byte{0xF4, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x09}},
	{"-2147483649", []byte{0xF4, 0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0x09}},
	{"9223372036854775807", []byte{0xF4, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0x09}},
	{"-9223372036854775808", []byte{0xF4, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x09}},
	// Strings: "hello" is 0x85, not the 0x45 of the spec text.
	{"hello", []byte{0x85, 'h', 'e', 'l', 'l', 'o', 0x06}},
	{"", []byte{0x80, 0x01}},
	// Not canonical integers, so stored as strings.
	{"010", []byte{0x83, '0', '1', '0', 0x04}},
	{"-0", []byte{0x82, '-', '0', 0x03}},
	{"+1", []byte{0x82, '+', '1', 0x03}},
	{" 1", []byte{0x82, ' ', '1', 0x03}},
	{"1 ", []byte{0x82, '1', ' ', 0x03}},
	{"-", []byte{0x81, '-', 0x02}},
	{"00", []byte{0x82, '0', '0', 0x03}},
	{"1.5", []byte{0x83, '1', '.', '5', 0x04}},
	{"9223372036854775808", cat([]byte{0x93}, []byte("9223372036854775808"), []byte{0x14})},
	{"-9223372036854775809", cat([]byte{0x94}, []byte("-9223372036854775809"), []byte{0x15})},
	{"18446744073709551616", cat([]byte{0x94}, []byte("18446744073709551616"), []byte{0x15})},
	// String length boundaries.
	{string(rep(63)), cat([]byte{0xBF}, rep(63), []byte{0x40})},
	{string(rep(64)), cat([]byte{0xE0, 0x40}, rep(64), []byte{0x42})},
	{string(rep(4095)), cat([]byte{0xEF, 0xFF}, rep(4095), []byte{0x20, 0x81})},
	{string(rep(4096)), cat([]byte{0xF0, 0x00, 0x10, 0x00, 0x00}, rep(4096), []byte{0x20, 0x85})},
	// Back-length boundaries: len (encoding+data) 127, 128, 16382,
	// 16383, 16384, 2097150, 2097151.
	{string(rep(125)), cat([]byte{0xE0, 125}, rep(125), []byte{0x7F})},
	{string(rep(126)), cat([]byte{0xE0, 126}, rep(126), []byte{0x01, 0x80})},
	{string(rep(16377)), cat([]byte{0xF0, 0xF9, 0x3F, 0, 0}, rep(16377), []byte{0x7F, 0xFE})},
	{string(rep(16378)), cat([]byte{0xF0, 0xFA, 0x3F, 0, 0}, rep(16378), []byte{0x00, 0xFF, 0xFF})},
	{string(rep(16379)), cat([]byte{0xF0, 0xFB, 0x3F, 0, 0}, rep(16379), []byte{0x01, 0x80, 0x80})},
	{string(rep(2097145)), cat([]byte{0xF0, 0xF9, 0xFF, 0x1F, 0}, rep(2097145), []byte{0x7F, 0xFF, 0xFE})},
	{string(rep(2097146)), cat([]byte{0xF0, 0xFA, 0xFF, 0x1F, 0}, rep(2097146), []byte{0x00, 0xFF, 0xFF, 0xFF})},
}

func TestGoldenSingleEntries(t *testing.T) {
	for _, g := range goldenEntries {
		name := g.v
		if len(name) > 24 {
			name = fmt.Sprintf("len%d", len(name))
		}
		t.Run(name, func(t *testing.T) {
			want := lpBytes(1, g.entry)
			check := func(how string, lp Listpack) {
				t.Helper()
				if !bytes.Equal(lp, want) {
					t.Fatalf("%s: got % x\nwant % x", how, head(lp), head(want))
				}
			}
			check("Append", New().Append([]byte(g.v)))
			check("Prepend", New().Prepend([]byte(g.v)))
			check("Insert", New().Insert(hdrSize, []byte(g.v)))
			check("Replace", New().Append([]byte("placeholder")).Replace(hdrSize, []byte(g.v)))
			if n, err := strconv.ParseInt(g.v, 10, 64); err == nil && strconv.FormatInt(n, 10) == g.v {
				check("AppendInt", New().AppendInt(n))
				check("ReplaceInt", New().Append([]byte("x")).ReplaceInt(hdrSize, n))
			}
			lp := Listpack(want)
			if err := Validate(lp, true); err != nil {
				t.Fatal(err)
			}
			if got := lp.Get(lp.First(), nil); string(got) != g.v {
				t.Fatalf("Get = %q", head(got))
			}
			if lp.Last() != lp.First() || lp.Next(lp.First()) != -1 || lp.Prev(lp.Last()) != -1 {
				t.Fatal("iteration over one entry is wrong")
			}
			if EntrySize([]byte(g.v)) != len(g.entry) {
				t.Fatalf("EntrySize = %d, want %d", EntrySize([]byte(g.v)), len(g.entry))
			}
		})
	}
}

// head shortens long byte slices in failure messages.
func head(b []byte) []byte {
	if len(b) > 48 {
		return b[:48]
	}
	return b
}

func TestGoldenMixed(t *testing.T) {
	lp := New()
	for _, v := range []string{"a", "1", "hello", "-5", "010"} {
		lp = lp.Append([]byte(v))
	}
	want := lpBytes(5,
		[]byte{0x81, 'a', 0x02},
		[]byte{0x01, 0x01},
		[]byte{0x85, 'h', 'e', 'l', 'l', 'o', 0x06},
		[]byte{0xDF, 0xFB, 0x02},
		[]byte{0x83, '0', '1', '0', 0x04},
	)
	if !bytes.Equal(lp, want) {
		t.Fatalf("got % x\nwant % x", []byte(lp), want)
	}
	// Prepending in reverse order must give the same bytes.
	lp2 := New()
	for _, v := range []string{"010", "-5", "hello", "1", "a"} {
		lp2 = lp2.Prepend([]byte(v))
	}
	if !bytes.Equal(lp2, want) {
		t.Fatalf("prepend: got % x\nwant % x", []byte(lp2), want)
	}
}

func TestParseIntMatchesCanonical(t *testing.T) {
	cases := []string{"0", "-0", "00", "01", "1", "-1", "+1", "", "-", " 1", "1 ", "1a",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"-9223372036854775809", "99999999999999999999", "999999999999999999999",
		"18446744073709551615", "18446744073709551616", "-18446744073709551616", "1e3", "0x10"}
	for _, s := range cases {
		n, ok := parseInt([]byte(s))
		m, err := strconv.ParseInt(s, 10, 64)
		canon := err == nil && strconv.FormatInt(m, 10) == s
		if ok != canon || (ok && n != m) {
			t.Errorf("parseInt(%q) = %d, %v; want canonical=%v", s, n, ok, canon)
		}
	}
	for i := -5000; i <= 5000; i++ {
		s := strconv.Itoa(i)
		if n, ok := parseInt([]byte(s)); !ok || n != int64(i) {
			t.Fatalf("parseInt(%q) = %d, %v", s, n, ok)
		}
	}
}

func TestIntRoundTripBoundaries(t *testing.T) {
	var vals []int64
	for _, b := range []int64{0, 127, 4095, 32767, 1<<23 - 1, math.MaxInt32, math.MaxInt64} {
		vals = append(vals, b, b+1, -b, -b-1, -b+1)
	}
	vals = append(vals, math.MinInt64, math.MinInt64+1)
	lp := New()
	for _, n := range vals {
		lp = lp.AppendInt(n)
	}
	if err := Validate(lp, true); err != nil {
		t.Fatal(err)
	}
	i := 0
	for off := lp.First(); off >= 0; off = lp.Next(off) {
		n, ok := lp.GetInt(off)
		if !ok || n != vals[i] {
			t.Fatalf("entry %d: GetInt = %d, %v; want %d", i, n, ok, vals[i])
		}
		if s := lp.Get(off, make([]byte, 0, IntBufLen)); string(s) != strconv.FormatInt(vals[i], 10) {
			t.Fatalf("entry %d: Get = %q", i, s)
		}
		if !lp.Equal(off, []byte(strconv.FormatInt(vals[i], 10))) {
			t.Fatalf("entry %d: Equal failed", i)
		}
		i++
	}
}

func TestEqualComparesAsStrings(t *testing.T) {
	lp := New().Append([]byte("10")).Append([]byte("abc")).Append([]byte("010"))
	a, b, c := lp.Seek(0), lp.Seek(1), lp.Seek(2)
	for _, tc := range []struct {
		off  int
		v    string
		want bool
	}{
		{a, "10", true}, {a, "010", false}, {a, "+10", false}, {a, "10 ", false}, {a, "1", false},
		{b, "abc", true}, {b, "ab", false},
		{c, "010", true}, {c, "10", false},
	} {
		if got := lp.Equal(tc.off, []byte(tc.v)); got != tc.want {
			t.Errorf("Equal(%d, %q) = %v", tc.off, tc.v, got)
		}
	}
	if _, ok := lp.GetInt(b); ok {
		t.Error("GetInt on a non-numeric string reported an integer")
	}
	if n, ok := lp.GetInt(a); !ok || n != 10 {
		t.Error("GetInt on 10")
	}
}

func TestGetDoesNotAllocate(t *testing.T) {
	lp := New().Append([]byte("-9223372036854775808")).Append([]byte("hello"))
	scratch := make([]byte, 0, IntBufLen)
	allocs := testing.AllocsPerRun(100, func() {
		for off := lp.First(); off >= 0; off = lp.Next(off) {
			_ = lp.Get(off, scratch)
		}
	})
	if allocs != 0 {
		t.Fatalf("Get allocated %v times per run", allocs)
	}
}

func TestMutationsInPlace(t *testing.T) {
	lp := New().Grow(100)
	p := &lp[0]
	for i := range 10 {
		lp = lp.Append([]byte{'a' + byte(i)})
	}
	lp = lp.Prepend([]byte("head")).Delete(hdrSize)
	lp = lp.Replace(lp.Seek(3), []byte("xyz"))
	if &lp[0] != p {
		t.Fatal("mutations reallocated despite spare capacity")
	}
	allocs := testing.AllocsPerRun(100, func() {
		lp = lp.Append([]byte("q"))
		lp = lp.Delete(lp.Last())
	})
	if allocs != 0 {
		t.Fatalf("append+delete allocated %v times", allocs)
	}
}

func TestSeek(t *testing.T) {
	lp := New()
	for i := range 50 {
		lp = lp.Append([]byte("v" + strconv.Itoa(i)))
	}
	unknown := append(Listpack(nil), lp...)
	binary.LittleEndian.PutUint16(unknown[4:], countUnkwn)
	for _, l := range []Listpack{lp, unknown} {
		if l.Len() != 50 {
			t.Fatalf("Len = %d", l.Len())
		}
		for i := -55; i < 55; i++ {
			off := l.Seek(i)
			j := i
			if j < 0 {
				j += 50
			}
			if j < 0 || j >= 50 {
				if off != -1 {
					t.Fatalf("Seek(%d) = %d, want -1", i, off)
				}
				continue
			}
			if got := string(l.Get(off, nil)); got != "v"+strconv.Itoa(j) {
				t.Fatalf("Seek(%d) -> %q", i, got)
			}
		}
	}
}

func TestDeleteRange(t *testing.T) {
	build := func() Listpack {
		lp := New()
		for i := range 10 {
			lp = lp.Append([]byte(strconv.Itoa(i * 1000)))
		}
		return lp
	}
	lp := build().DeleteRange(build().Seek(2), 3)
	var got []string
	for off := lp.First(); off >= 0; off = lp.Next(off) {
		got = append(got, string(lp.Get(off, nil)))
	}
	if strings.Join(got, ",") != "0,1000,5000,6000,7000,8000,9000" || lp.Len() != 7 {
		t.Fatalf("got %v (len %d)", got, lp.Len())
	}
	lp = build()
	lp = lp.DeleteRange(lp.Seek(7), 100)
	if lp.Len() != 7 || Validate(lp, true) != nil {
		t.Fatalf("delete past end: len %d", lp.Len())
	}
	// A range delete on a listpack with an unknown count recounts it.
	lp = build()
	binary.LittleEndian.PutUint16(lp[4:], countUnkwn)
	lp = lp.DeleteRange(lp.First(), 4)
	if lp.headerCount() != 6 {
		t.Fatalf("header count %d after range delete", lp.headerCount())
	}
}

func TestCountBecomesUnknown(t *testing.T) {
	lp := New()
	for range countUnkwn - 1 {
		lp = lp.AppendInt(1)
	}
	if lp.headerCount() != countUnkwn-1 {
		t.Fatalf("count %d", lp.headerCount())
	}
	lp = lp.AppendInt(1)
	if lp.headerCount() != countUnkwn || lp.Len() != countUnkwn {
		t.Fatalf("header %d, Len %d", lp.headerCount(), lp.Len())
	}
	lp = lp.AppendInt(2)
	if lp.headerCount() != countUnkwn || lp.Len() != countUnkwn+1 {
		t.Fatalf("header %d, Len %d", lp.headerCount(), lp.Len())
	}
	// Like Redis, a single delete does not recount.
	lp = lp.Delete(lp.First())
	if lp.headerCount() != countUnkwn || lp.Len() != countUnkwn {
		t.Fatalf("after delete: header %d, Len %d", lp.headerCount(), lp.Len())
	}
	if err := Validate(lp, true); err != nil {
		t.Fatal(err)
	}
	if n, _ := lp.GetInt(lp.Seek(-1)); n != 2 {
		t.Fatal("Seek(-1) on unknown count")
	}
}

func TestConcat(t *testing.T) {
	a := New().Append([]byte("a")).AppendInt(7)
	b := New().Append([]byte("hello")).AppendInt(-5000)
	want := New().Append([]byte("a")).AppendInt(7).Append([]byte("hello")).AppendInt(-5000)
	if got := Concat(a.Grow(0), b); !bytes.Equal(got, want) {
		t.Fatalf("Concat = % x\nwant % x", []byte(got), []byte(want))
	}
	if got := concatFront(a, b); !bytes.Equal(got, want) {
		t.Fatalf("concatFront = % x\nwant % x", []byte(got), []byte(want))
	}
	if got := Concat(New(), New()); !bytes.Equal(got, New()) {
		t.Fatal("empty concat")
	}
}
