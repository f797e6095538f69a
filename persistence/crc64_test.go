package persistence

import (
	"math/rand/v2"
	"testing"
)

// crcBitwise is the textbook one-bit-at-a-time CRC the tables must agree
// with.
func crcBitwise(crc uint64, p []byte) uint64 {
	for _, b := range p {
		crc ^= uint64(b)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ crcPoly
			} else {
				crc >>= 1
			}
		}
	}
	return crc
}

func TestCRC64KnownVectors(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
	}{
		{"", 0},
		// The check value of CRC-64/REDIS in the CRC catalogues.
		{"123456789", 0xe9c6d914c4b8d9ca},
		{"a", crcBitwise(0, []byte("a"))},
	}
	for _, c := range cases {
		if got := CRC64([]byte(c.in)); got != c.want {
			t.Errorf("CRC64(%q) = %#x, want %#x", c.in, got, c.want)
		}
	}
	if got := crcBitwise(0, []byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("bitwise reference gives %#x", got)
	}
}

func TestCRC64SlicingMatchesBitwise(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	for n := range 100 {
		p := buf[:n*37%len(buf)]
		if got, want := CRC64(p), crcBitwise(0, p); got != want {
			t.Fatalf("len %d: %#x, want %#x", len(p), got, want)
		}
	}
}

func TestUpdateCRC64Chains(t *testing.T) {
	p := []byte("REDIS0010 some bytes that are split in odd places")
	whole := CRC64(p)
	for cut := range len(p) + 1 {
		if got := UpdateCRC64(CRC64(p[:cut]), p[cut:]); got != whole {
			t.Fatalf("cut at %d: %#x, want %#x", cut, got, whole)
		}
	}
}

func BenchmarkCRC64(b *testing.B) {
	p := make([]byte, 1<<20)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		CRC64(p)
	}
}
