package listpack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"testing"
)

// prog reads a fuzz input as a little program: op codes, indexes and
// values. Reading past the end yields zeros, so every input is a program.
type prog struct{ b []byte }

func (p *prog) done() bool { return len(p.b) == 0 }

func (p *prog) byte() byte {
	if len(p.b) == 0 {
		return 0
	}
	c := p.b[0]
	p.b = p.b[1:]
	return c
}

func (p *prog) u16() int { return int(p.byte()) | int(p.byte())<<8 }

// index picks an index in -n-1..n+1 so that out-of-range cases occur.
func (p *prog) index(n int) int { return int(int8(p.byte())) % (n + 2) }

// value reads a value of one of several shapes: bytes from the input,
// integers of every encoding width (as text), non-canonical numbers, and
// long runs that reach the 12-bit, 32-bit and large-element sizes.
func (p *prog) value() []byte {
	switch p.byte() % 6 {
	case 0:
		n := int(p.byte() % 24)
		v := make([]byte, 0, n)
		for range n {
			v = append(v, p.byte())
		}
		return v
	case 1:
		var n int64
		for range p.byte()%8 + 1 {
			n = n<<8 | int64(p.byte())
		}
		if p.byte()&1 == 1 {
			n = -n
		}
		return []byte(strconv.FormatInt(n, 10))
	case 2:
		return []byte([]string{"0", "-0", "010", "+1", "9223372036854775808", "-9223372036854775808", ""}[p.byte()%7])
	case 3:
		// Mostly up to 5000 bytes; 1 in 16 up to 70000, past the 64 KiB
		// node limit. Big values make runs slow, so they are kept rare.
		n, big := p.u16(), p.byte()&15 == 0
		if big {
			return bytes.Repeat([]byte{'R'}, n%70000)
		}
		return bytes.Repeat([]byte{'r'}, n%5000)
	case 4:
		return bytes.Repeat([]byte{'s'}, 60+int(p.byte()%10))
	}
	return []byte(strconv.Itoa(int(p.byte()) - 128))
}

// checkListpack validates lp and compares it, forwards and backwards, with
// the model.
func checkListpack(t *testing.T, lp Listpack, model [][]byte) {
	t.Helper()
	if err := Validate(lp, true); err != nil {
		t.Fatalf("invalid after mutation: %v", err)
	}
	if lp.Len() != len(model) {
		t.Fatalf("Len %d, model %d", lp.Len(), len(model))
	}
	i := 0
	for off := lp.First(); off >= 0; off = lp.Next(off) {
		if !bytes.Equal(lp.Get(off, nil), model[i]) || !lp.Equal(off, model[i]) {
			t.Fatalf("forward %d: %q, want %q", i, short(lp.Get(off, nil)), short(model[i]))
		}
		i++
	}
	for off := lp.Last(); off >= 0; off = lp.Prev(off) {
		i--
		if !bytes.Equal(lp.Get(off, nil), model[i]) {
			t.Fatalf("backward %d: %q, want %q", i, short(lp.Get(off, nil)), short(model[i]))
		}
	}
	if i != 0 {
		t.Fatalf("backward walk ended at %d", i)
	}
}

// runListpackProg applies a program to a bare Listpack and a model slice.
func runListpackProg(t *testing.T, p *prog) {
	lp, model := New(), [][]byte(nil)
	for steps := 0; !p.done() && steps < 64; steps++ {
		op, n := p.byte()%7, len(model)
		switch op {
		case 0:
			v := p.value()
			lp, model = lp.Append(v), append(model, v)
		case 1:
			v := p.value()
			lp, model = lp.Prepend(v), slices.Insert(model, 0, v)
		case 2, 3, 4, 5:
			i := p.index(n)
			if i < 0 {
				i += n
			}
			if i < 0 || i >= n {
				continue
			}
			off := lp.Seek(i)
			switch op {
			case 2:
				v := p.value()
				lp, model = lp.Insert(off, v), slices.Insert(model, i, v)
			case 3:
				v := p.value()
				lp, model[i] = lp.Replace(off, v), v
			case 4:
				lp, model = lp.Delete(off), slices.Delete(model, i, i+1)
			case 5:
				c := int(p.byte() % 8)
				lp, model = lp.DeleteRange(off, c), slices.Delete(model, i, min(i+c, n))
			}
		case 6:
			x := int64(binary.LittleEndian.Uint64(append(p.b[:min(8, len(p.b)):min(8, len(p.b))], make([]byte, 8)...)))
			p.b = p.b[min(8, len(p.b)):]
			lp, model = lp.AppendInt(x), append(model, []byte(strconv.FormatInt(x, 10)))
		}
		checkListpack(t, lp, model)
	}
}

// runQuicklistProg applies a program to a Quicklist and a model slice.
func runQuicklistProg(t *testing.T, p *prog, fill, depth int) {
	q, m := NewQuicklist(fill), modelList(nil)
	q.SetCompressDepth(depth)
	for steps := 0; !p.done() && steps < 64; steps++ {
		n := len(m)
		switch p.byte() % 8 {
		case 0:
			v := p.value()
			q.PushTail(v)
			m = append(m, v)
		case 1:
			v := p.value()
			q.PushHead(v)
			m = slices.Insert(m, 0, v)
		case 2:
			if v, ok := q.PopHead(); ok != (n > 0) || ok && !bytes.Equal(v, m[0]) {
				t.Fatal("PopHead mismatch")
			} else if ok {
				m = m[1:]
			}
		case 3:
			if v, ok := q.PopTail(); ok != (n > 0) || ok && !bytes.Equal(v, m[n-1]) {
				t.Fatal("PopTail mismatch")
			} else if ok {
				m = m[:n-1]
			}
		case 4:
			i, v := p.index(n), p.value()
			j, _ := m.norm(i)
			if i == n {
				j = n
			}
			if q.Insert(i, v) {
				m = slices.Insert(m, j, v)
			}
		case 5:
			i, v := p.index(n), p.value()
			if j, ok := m.norm(i); ok && q.InsertAfter(i, v) {
				m = slices.Insert(m, j+1, v)
			}
		case 6:
			i, v := p.index(n), p.value()
			if j, ok := m.norm(i); ok && q.Set(i, v) {
				m[j] = v
			}
		case 7:
			i, c := p.index(n), int(p.byte()%8)
			if j, ok := m.norm(i); q.DeleteRange(i, c) > 0 && ok {
				m = slices.Delete(m, j, min(j+c, n))
			}
		}
		checkQuicklist(t, q, m)
	}
}

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{0, 0, 5, 'h', 'e', 'l', 'l', 'o', 1, 1, 4, 1, 2, 3, 4, 0}, int8(-2))
	f.Add([]byte{0, 3, 0xFF, 0x3F, 0, 3, 0xFF, 0x3F, 2, 1, 3, 1, 4, 4, 0, 5, 0, 3}, int8(1))
	f.Add([]byte{6, 1, 2, 3, 4, 5, 6, 7, 8, 6, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 4, 0xFF}, int8(3))
	f.Add(bytes.Repeat([]byte{0, 4, 1, 1, 4, 2, 3, 2, 0, 5, 6, 1, 2}, 10), int8(-1))
	f.Add(bytes.Repeat([]byte{1, 3, 0x10, 0x10, 4, 0x81, 4, 7, 0xFE, 3}, 8), int8(-5))
	f.Fuzz(func(t *testing.T, data []byte, fill int8) {
		runListpackProg(t, &prog{b: data})
		runQuicklistProg(t, &prog{b: data}, int(fill)%16-5, fuzzDepth(fill))
	})
}

// fuzzDepth draws a compression depth, 0 to 3, from the top bits of the
// fuzzer's fill byte (the fill uses the low ones).
func fuzzDepth(fill int8) int { return int(uint8(fill) >> 6) }

// validateSeeds are listpacks, good and damaged, for FuzzValidate.
func validateSeeds() [][]byte {
	good := New()
	for _, v := range []string{"a", "1", "hello", "-5", "010", "1000000", string(rep(200)), "-9223372036854775808"} {
		good = good.Append([]byte(v))
	}
	unknown := slices.Clone(good)
	binary.LittleEndian.PutUint16(unknown[4:], countUnkwn)
	badBacklen := slices.Clone(good)
	badBacklen[8]++ // the back-length of "a"
	badEnc := slices.Clone(good)
	badEnc[hdrSize] = 0xF7
	huge := lpBytes(1, []byte{0xF0, 0xFF, 0xFF, 0xFF, 0xFF, 0x01})
	all := New() // one entry of every encoding
	var seeds [][]byte
	for _, g := range goldenEntries {
		if len(g.entry) < 300 { // small inputs keep the fuzzer fast
			all = all.Append([]byte(g.v))
			seeds = append(seeds, lpBytes(1, g.entry))
		}
	}
	return append(seeds, [][]byte{all,
		New(), good, unknown, badBacklen, badEnc, huge,
		good[:len(good)-1], good[:hdrSize], {},
		lpBytes(1, []byte{0x85, 'h', 'e', 'l', 'l', 'o', 0x06}),
		lpBytes(1, []byte{0xE0, 0x05, 'h', 'e', 'l', 'l', 'o', 0x07}),          // non-canonical 12-bit form
		lpBytes(1, []byte{0xF0, 0x01, 0x00, 0x00, 0x00, 'x', 0x06}),            // non-canonical 32-bit form
		lpBytes(2, []byte{0x01, 0x81, 0x00}, []byte{0x01, 0x01}),               // odd back-length
		lpBytes(1, []byte{0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}),           // runaway back-length
		lpBytes(1, []byte{0xF0, 0x00, 0x00, 0x00, 0x00}),                       // truncated 32-bit string
		lpBytes(3, []byte{0x01, 0x01}),                                         // wrong count
		append(lpBytes(0), 0xFF),                                               // size mismatch
		lpBytes(1, []byte{0x81, 0xFF, 0x02}, []byte{0xFF}, []byte{0x01, 0x01}), // terminator in the middle
	}...)
}

func FuzzValidate(f *testing.F) {
	for _, s := range validateSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		shallow, deep := Validate(b, false), Validate(b, true)
		if deep != nil {
			if !errors.Is(deep, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", deep)
			}
			return
		}
		if shallow != nil {
			t.Fatalf("deep validation passed but shallow failed: %v", shallow)
		}
		exerciseValid(t, Listpack(b))
	})
}

// exerciseValid runs every read method, then some mutations, on a
// listpack that passed deep validation: none may panic and the results
// must agree with each other.
func exerciseValid(t *testing.T, lp Listpack) {
	var fwd [][]byte
	for off := lp.First(); off >= 0; off = lp.Next(off) {
		fwd = append(fwd, slices.Clone(lp.Get(off, nil)))
		if n, ok := lp.GetInt(off); ok && strconv.FormatInt(n, 10) != string(fwd[len(fwd)-1]) {
			t.Fatalf("GetInt %d disagrees with Get %q", n, fwd[len(fwd)-1])
		}
	}
	if lp.Len() != len(fwd) {
		t.Fatalf("Len %d, walked %d", lp.Len(), len(fwd))
	}
	i := len(fwd)
	for off := lp.Last(); off >= 0; off = lp.Prev(off) {
		i--
		if i < 0 || !bytes.Equal(lp.Get(off, nil), fwd[i]) {
			t.Fatalf("backward walk disagrees at %d", i)
		}
	}
	for j := range fwd {
		if !bytes.Equal(lp.Get(lp.Seek(j), nil), fwd[j]) || !lp.Equal(lp.Seek(j-len(fwd)), fwd[j]) {
			t.Fatalf("Seek(%d) disagrees", j)
		}
	}
	// Mutations on a valid listpack keep it valid.
	model := slices.Clone(fwd)
	c := Listpack(slices.Clone(lp)).Append([]byte("tail")).Prepend([]byte("12"))
	model = append(slices.Insert(model, 0, []byte("12")), []byte("tail"))
	if len(fwd) > 0 {
		c = c.Replace(c.Seek(1), []byte("-77777"))
		model[1] = []byte("-77777")
		c = c.Delete(c.Seek(-2))
		model = slices.Delete(model, len(model)-2, len(model)-1)
	}
	checkListpack(t, c, model)
	q := QuicklistFromNodes(DefaultFill, []Listpack{Listpack(slices.Clone(lp))})
	q.PushTail([]byte("x"))
	checkQuicklist(t, q, append(slices.Clone(fwd), []byte("x")))
}
