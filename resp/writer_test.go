package resp

import (
	"math"
	"strings"
	"testing"
)

// writerCase is one sequence of Writer calls and the exact bytes it must
// produce in RESP2 and in RESP3.
type writerCase struct {
	name  string
	write func(w *Writer)
	resp2 string
	resp3 string
}

var writerCases = []writerCase{
	{"Array", func(w *Writer) { w.Array(3) }, "*3\r\n", "*3\r\n"},
	{"Array0", func(w *Writer) { w.Array(0) }, "*0\r\n", "*0\r\n"},
	{"Map", func(w *Writer) { w.Map(2) }, "*4\r\n", "%2\r\n"},
	{"Map0", func(w *Writer) { w.Map(0) }, "*0\r\n", "%0\r\n"},
	{"Set", func(w *Writer) { w.Set(5) }, "*5\r\n", "~5\r\n"},
	{"Push", func(w *Writer) { w.Push(3) }, "*3\r\n", ">3\r\n"},
	{"Bulk", func(w *Writer) { w.Bulk([]byte("hello")) }, "$5\r\nhello\r\n", "$5\r\nhello\r\n"},
	{"BulkEmpty", func(w *Writer) { w.Bulk(nil) }, "$0\r\n\r\n", "$0\r\n\r\n"},
	{"BulkBinary", func(w *Writer) { w.Bulk([]byte("a\r\n\x00b")) }, "$5\r\na\r\n\x00b\r\n", "$5\r\na\r\n\x00b\r\n"},
	{"BulkString", func(w *Writer) { w.BulkString("queue") }, "$5\r\nqueue\r\n", "$5\r\nqueue\r\n"},
	{"BulkStringEmpty", func(w *Writer) { w.BulkString("") }, "$0\r\n\r\n", "$0\r\n\r\n"},
	{"BulkInt", func(w *Writer) { w.BulkInt(1234) }, "$4\r\n1234\r\n", "$4\r\n1234\r\n"},
	{"BulkIntNeg", func(w *Writer) { w.BulkInt(-7) }, "$2\r\n-7\r\n", "$2\r\n-7\r\n"},
	{"BulkIntMin", func(w *Writer) { w.BulkInt(math.MinInt64) }, "$20\r\n-9223372036854775808\r\n", "$20\r\n-9223372036854775808\r\n"},
	{"Status", func(w *Writer) { w.Status("PONG") }, "+PONG\r\n", "+PONG\r\n"},
	{"OK", func(w *Writer) { w.OK() }, "+OK\r\n", "+OK\r\n"},
	{"Error", func(w *Writer) { w.Error("ERR syntax error") }, "-ERR syntax error\r\n", "-ERR syntax error\r\n"},
	{"ErrorCRLF", func(w *Writer) { w.Error("ERR a\r\nb\nc\rd") }, "-ERR a  b c d\r\n", "-ERR a  b c d\r\n"},
	{"ErrorCode", func(w *Writer) { w.Error(ErrWrongType) }, "-" + ErrWrongType + "\r\n", "-" + ErrWrongType + "\r\n"},
	{"Int", func(w *Writer) { w.Int(42) }, ":42\r\n", ":42\r\n"},
	{"Int0", func(w *Writer) { w.Int(0) }, ":0\r\n", ":0\r\n"},
	{"IntNeg", func(w *Writer) { w.Int(-1) }, ":-1\r\n", ":-1\r\n"},
	{"IntMax", func(w *Writer) { w.Int(math.MaxInt64) }, ":9223372036854775807\r\n", ":9223372036854775807\r\n"},
	{"IntMin", func(w *Writer) { w.Int(math.MinInt64) }, ":-9223372036854775808\r\n", ":-9223372036854775808\r\n"},
	{"Null", func(w *Writer) { w.Null() }, "$-1\r\n", "_\r\n"},
	{"NullArray", func(w *Writer) { w.NullArray() }, "*-1\r\n", "_\r\n"},
	{"BoolTrue", func(w *Writer) { w.Bool(true) }, ":1\r\n", "#t\r\n"},
	{"BoolFalse", func(w *Writer) { w.Bool(false) }, ":0\r\n", "#f\r\n"},
	{"Double", func(w *Writer) { w.Double(1.5) }, "$3\r\n1.5\r\n", ",1.5\r\n"},
	{"DoubleInf", func(w *Writer) { w.Double(math.Inf(1)) }, "$3\r\ninf\r\n", ",inf\r\n"},
	{"DoubleNegInf", func(w *Writer) { w.Double(math.Inf(-1)) }, "$4\r\n-inf\r\n", ",-inf\r\n"},
	{"DoubleNaN", func(w *Writer) { w.Double(math.NaN()) }, "$3\r\nnan\r\n", ",nan\r\n"},
	{"DoubleInt", func(w *Writer) { w.Double(3) }, "$1\r\n3\r\n", ",3\r\n"},
	{"DoubleZero", func(w *Writer) { w.Double(0) }, "$1\r\n0\r\n", ",0\r\n"},
	{"Verbatim", func(w *Writer) { w.Verbatim("a\r\nb") }, "$4\r\na\r\nb\r\n", "=8\r\ntxt:a\r\nb\r\n"},
	{"VerbatimEmpty", func(w *Writer) { w.Verbatim("") }, "$0\r\n\r\n", "=4\r\ntxt:\r\n"},
	{"Raw", func(w *Writer) { w.Raw([]byte("+x\r\n")) }, "+x\r\n", "+x\r\n"},
	{"Sequence", func(w *Writer) {
		w.Map(2)
		w.BulkString("a")
		w.Int(1)
		w.BulkString("b")
		w.Set(2)
		w.Null()
		w.Bool(true)
	}, "*4\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n*2\r\n$-1\r\n:1\r\n", "%2\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n~2\r\n_\r\n#t\r\n"},
}

func TestWriterEncodings(t *testing.T) {
	for _, tc := range writerCases {
		for _, proto := range []int{2, 3} {
			want := tc.resp2
			if proto == 3 {
				want = tc.resp3
			}
			w := Writer{Proto: proto}
			w.Raw([]byte("prefix"))
			tc.write(&w)
			got := string(w.Bytes())
			if got != "prefix"+want {
				t.Errorf("%s in RESP%d: got %q, want %q", tc.name, proto, strings.TrimPrefix(got, "prefix"), want)
			}
			if w.Len() != len(got) {
				t.Errorf("%s in RESP%d: Len() = %d, want %d", tc.name, proto, w.Len(), len(got))
			}
		}
	}
}

// TestWriterZeroValue checks the documented default: the zero Writer
// speaks RESP2 and so does any protocol other than 3.
func TestWriterZeroValue(t *testing.T) {
	for _, proto := range []int{0, 1, 2, 4} {
		w := Writer{Proto: proto}
		if w.RESP3() {
			t.Errorf("Writer{Proto: %d}.RESP3() = true, want false", proto)
		}
		w.Map(1)
		w.Null()
		if got := string(w.Bytes()); got != "*2\r\n$-1\r\n" {
			t.Errorf("Writer{Proto: %d}: Map(1) Null() = %q, want RESP2 %q", proto, got, "*2\r\n$-1\r\n")
		}
	}
	if w := (Writer{Proto: 3}); !w.RESP3() {
		t.Errorf("Writer{Proto: 3}.RESP3() = false")
	}
}

func TestWriterMarkTruncateReset(t *testing.T) {
	var w Writer
	w.OK()
	m := w.Mark()
	if m != 5 {
		t.Fatalf("Mark() after OK = %d, want 5", m)
	}
	w.Int(1)
	w.BulkString("dropped")
	w.Truncate(m)
	w.Int(2)
	if got := string(w.Bytes()); got != "+OK\r\n:2\r\n" {
		t.Fatalf("after Truncate: %q, want %q", got, "+OK\r\n:2\r\n")
	}
	before := cap(w.Bytes())
	w.Reset()
	if w.Len() != 0 || len(w.Bytes()) != 0 {
		t.Fatalf("after Reset: Len() = %d, Bytes() = %q", w.Len(), w.Bytes())
	}
	w.OK()
	if cap(w.Bytes()) != before {
		t.Errorf("Reset did not keep the buffer: cap %d, was %d", cap(w.Bytes()), before)
	}
}

func TestWriterInsertLen(t *testing.T) {
	cases := []struct {
		kind         byte
		n            int
		resp2, resp3 string // the header inserted
	}{
		{'*', 2, "*2\r\n", "*2\r\n"},
		{'*', 0, "*0\r\n", "*0\r\n"},
		{'%', 2, "*4\r\n", "%2\r\n"},
		{'%', 0, "*0\r\n", "%0\r\n"},
		{'~', 3, "*3\r\n", "~3\r\n"},
		{'*', 1234567, "*1234567\r\n", "*1234567\r\n"},
		{'%', 1234567, "*2469134\r\n", "%1234567\r\n"},
	}
	for _, tc := range cases {
		for _, proto := range []int{2, 3} {
			hdr := tc.resp2
			if proto == 3 {
				hdr = tc.resp3
			}
			// In the middle: something before the mark and elements after.
			w := Writer{Proto: proto}
			w.OK()
			mark := w.Mark()
			w.BulkString("a")
			w.Int(7)
			w.BulkString("tail-element-longer-than-the-header")
			w.InsertLen(mark, tc.kind, tc.n)
			want := "+OK\r\n" + hdr + "$1\r\na\r\n:7\r\n$35\r\ntail-element-longer-than-the-header\r\n"
			if got := string(w.Bytes()); got != want {
				t.Errorf("InsertLen(%d, %q, %d) RESP%d in the middle: got %q, want %q", mark, tc.kind, tc.n, proto, got, want)
			}
			// At the very end: nothing written after the mark.
			w = Writer{Proto: proto}
			w.Int(1)
			w.InsertLen(w.Mark(), tc.kind, tc.n)
			if got, want := string(w.Bytes()), ":1\r\n"+hdr; got != want {
				t.Errorf("InsertLen at the end RESP%d: got %q, want %q", proto, got, want)
			}
			// At the start of an empty writer.
			w = Writer{Proto: proto}
			w.InsertLen(0, tc.kind, tc.n)
			if got := string(w.Bytes()); got != hdr {
				t.Errorf("InsertLen into an empty writer RESP%d: got %q, want %q", proto, got, hdr)
			}
		}
	}
}

// TestWriterInsertLenNested builds a nested reply whose lengths are known
// only afterwards, inner first, and checks the whole encoding.
func TestWriterInsertLenNested(t *testing.T) {
	for _, proto := range []int{2, 3} {
		w := Writer{Proto: proto}
		outer := w.Mark()
		w.BulkString("k")
		inner := w.Mark()
		w.Int(1)
		w.Int(2)
		w.InsertLen(inner, '~', 2)
		w.InsertLen(outer, '%', 1)
		want := "*2\r\n$1\r\nk\r\n*2\r\n:1\r\n:2\r\n"
		if proto == 3 {
			want = "%1\r\n$1\r\nk\r\n~2\r\n:1\r\n:2\r\n"
		}
		if got := string(w.Bytes()); got != want {
			t.Errorf("RESP%d nested InsertLen: got %q, want %q", proto, got, want)
		}
	}
}

// TestFormatFloat checks doubles as Redis prints them (d2string, which
// addReplyDouble uses in both protocols since Redis 7.2): "inf", "-inf",
// "nan", integers without a fraction or exponent when the value is a
// whole number within ±2^62, and otherwise fpconv_dtoa's shortest form —
// plain decimals while the exponent is small, and an exponent with no
// zero padding ("1e-7", "1e+21") beyond that.
func TestFormatFloat(t *testing.T) {
	cases := []struct {
		f    float64
		want string
	}{
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
		{math.NaN(), "nan"},
		{0, "0"},
		{math.Copysign(0, -1), "-0"},
		{1.5, "1.5"},
		{-0.5, "-0.5"},
		{0.1, "0.1"},
		{3, "3"},
		{100, "100"},
		{-42, "-42"},
		{123456.5, "123456.5"},
		{0.0001, "0.0001"},
		{1e21, "1e+21"},
		{1.23e22, "1.23e+22"},
		{1e100, "1e+100"},
		{1e-100, "1e-100"},
		{2.5e-10, "2.5e-10"},
		{5e18, "5e+18"}, // above 2^62: no longer printed as an integer
		// Whole numbers up to 2^62 print as integers in Redis.
		{1e6, "1000000"},
		{1.5e10, "15000000000"},
		{4e18, "4000000000000000000"},
		// fpconv_dtoa writes plain decimals for exponents down to -6 ...
		{1234567.5, "1234567.5"},
		{1e-5, "0.00001"},
		{1.5e-5, "0.000015"},
		{1e-6, "0.000001"},
		// ... and exponents without a leading zero.
		{1e-7, "1e-7"},
		{1.5e-8, "1.5e-8"},
	}
	for _, tc := range cases {
		got := string(FormatFloat(nil, tc.f))
		if got != tc.want {
			t.Errorf("FormatFloat(%v) = %q, want %q (Redis d2string)", tc.f, got, tc.want)
		}
	}
	// It appends.
	if got := string(FormatFloat([]byte("x="), 2.5)); got != "x=2.5" {
		t.Errorf("FormatFloat appends: got %q, want %q", got, "x=2.5")
	}
}

// TestFormatFloatRoundTrip checks that every finite double prints as text
// that ParseFloat reads back to the same value.
func TestFormatFloatRoundTrip(t *testing.T) {
	vals := []float64{0.1, 0.2, 1.0 / 3, math.Pi, 1e-300, 1e300, math.MaxFloat64, math.SmallestNonzeroFloat64, -123.456, 9007199254740993}
	for _, f := range vals {
		s := FormatFloat(nil, f)
		back, ok := ParseFloat(s)
		if !ok || back != f {
			t.Errorf("FormatFloat(%v) = %q, ParseFloat gives %v, %v", f, s, back, ok)
		}
	}
}

func TestAppendCommand(t *testing.T) {
	cases := []struct {
		argv []string
		want string
	}{
		{[]string{"PING"}, "*1\r\n$4\r\nPING\r\n"},
		{[]string{"SET", "k", ""}, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"},
		{[]string{"RPUSH", "q", "a\r\nb"}, "*3\r\n$5\r\nRPUSH\r\n$1\r\nq\r\n$4\r\na\r\nb\r\n"},
		{[]string{}, "*0\r\n"},
	}
	for _, tc := range cases {
		argv := make([][]byte, len(tc.argv))
		for i, a := range tc.argv {
			argv[i] = []byte(a)
		}
		got := string(AppendCommand([]byte("pre"), argv))
		if got != "pre"+tc.want {
			t.Errorf("AppendCommand(%q) = %q, want %q", tc.argv, got, "pre"+tc.want)
		}
		if enc := string(Encode(argv)); enc != tc.want {
			t.Errorf("Encode(%q) = %q, want %q", tc.argv, enc, tc.want)
		}
		if len(tc.argv) == 0 {
			continue
		}
		back, err := parseAll(strings.NewReader(got[3:]), nil)
		if err != nil || len(back) != 1 || !equalWords(back[0], tc.argv) {
			t.Errorf("AppendCommand(%q) reads back as %q, %v", tc.argv, back, err)
		}
	}
}
