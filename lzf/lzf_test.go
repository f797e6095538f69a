package lzf

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// lzfVectors were produced by the LZF compressor Redis links (built from
// its source, outside this repository) with an output limit of len-4, the
// limit Redis's RDB writer uses. "-" means it declined to compress.
var lzfVectors = []struct{ in, out string }{
	{strings.Repeat("a", 40), "016161e01b00016161"},
	{"hello hello hello hello hello hello", "0668656c6c6f2068e01105016c6f"},
	{"The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog.",
		"1f54686520717569636b2062726f776e20666f78206a756d7073206f7665722074201e0a6c617a7920646f672e2054200de01d2c01672e"},
	{strings.Repeat("abc", 42), "0361626361e06f02016263"},
	{"0123456789abcdefghij", "-"},
}

// compressForRDB compresses src with the output limit Redis's RDB writer
// gives: four bytes less than the input.
func compressForRDB(src []byte) []byte {
	const minSave = 4
	if len(src) <= minSave {
		return nil
	}
	dst := make([]byte, len(src)-minSave)
	n := Compress(dst, src)
	if n == 0 {
		return nil
	}
	return dst[:n]
}

func TestLZFVectors(t *testing.T) {
	for _, v := range lzfVectors {
		got := compressForRDB([]byte(v.in))
		want := v.out
		if got == nil {
			if want != "-" {
				t.Errorf("%.20q: declined, want %s", v.in, want)
			}
			continue
		}
		if hex.EncodeToString(got) != want {
			t.Errorf("%.20q:\n got %x\nwant %s", v.in, got, want)
		}
		back := make([]byte, len(v.in))
		if n, err := Decompress(back, got); err != nil || string(back[:n]) != v.in {
			t.Errorf("%.20q: decompress gave %q, %v", v.in, back[:n], err)
		}
	}
}

func TestLZFRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		n := r.IntN(5000)
		src := make([]byte, n)
		alpha := 1 + r.IntN(255)
		for j := range src {
			src[j] = byte(r.IntN(alpha))
		}
		if i%5 == 0 { // long repeats
			for j := 8; j < n; j++ {
				if r.IntN(10) > 0 {
					src[j] = src[j-8]
				}
			}
		}
		dst := make([]byte, n+n/16+64)
		c := Compress(dst, src)
		if n > 0 && c == 0 {
			t.Fatalf("input %d: no room in %d bytes for %d", i, len(dst), n)
		}
		back := make([]byte, n)
		m, err := Decompress(back, dst[:c])
		if err != nil || m != n || !bytes.Equal(back, src) {
			t.Fatalf("input %d: round trip failed (%d of %d bytes, %v)", i, m, n, err)
		}
	}
}

func TestLZFCompressNoRoom(t *testing.T) {
	src := []byte(strings.Repeat("xy", 100))
	for size := range 12 {
		dst := make([]byte, size)
		n := Compress(dst, src)
		if n > size {
			t.Fatalf("limit %d: wrote %d", size, n)
		}
		if n > 0 {
			back := make([]byte, len(src))
			if m, err := Decompress(back, dst[:n]); err != nil || m != len(src) {
				t.Fatalf("limit %d: %d bytes back, %v", size, m, err)
			}
		}
	}
	if Compress(make([]byte, 10), nil) != 0 || Compress(nil, src) != 0 {
		t.Fatal("empty input or output must give 0")
	}
}

func TestDecompressErrors(t *testing.T) {
	cases := []struct {
		name string
		src  string // hex
		out  int
	}{
		{"literal cut short", "0561", 10},
		{"literal overflows output", "0361626364", 2},
		{"reference before start", "2000", 10},
		{"reference cut short", "20", 10},
		{"long reference cut short", "e0", 10},
		{"long reference missing offset", "0061e005", 50},
		{"reference overflows output", "016161e0ff00", 10},
	}
	for _, c := range cases {
		src, _ := hex.DecodeString(c.src)
		_, err := Decompress(make([]byte, c.out), src)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", c.name, err)
		}
	}
}

func FuzzLZF(f *testing.F) {
	for _, v := range lzfVectors {
		f.Add([]byte(v.in), uint16(len(v.in)))
		if b, err := hex.DecodeString(v.out); err == nil {
			f.Add(b, uint16(len(v.in)))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, outLen uint16) {
		// Decompressing arbitrary bytes must fail cleanly or stay in bounds.
		out := make([]byte, outLen)
		if n, err := Decompress(out, data); n > len(out) || (err != nil && !errors.Is(err, ErrCorrupt)) {
			t.Fatalf("n=%d err=%v", n, err)
		}
		// Compressing then decompressing must give the input back.
		dst := make([]byte, len(data)+len(data)/16+64)
		c := Compress(dst, data)
		back := make([]byte, len(data))
		if m, err := Decompress(back, dst[:c]); err != nil || m != len(data) || !bytes.Equal(back, data) {
			t.Fatalf("round trip: %d of %d bytes, %v", m, len(data), err)
		}
	})
}

func BenchmarkCompress(b *testing.B) {
	src := []byte(strings.Repeat("redstream stream entry field value 12345 ", 100))
	dst := make([]byte, len(src))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		Compress(dst, src)
	}
}
