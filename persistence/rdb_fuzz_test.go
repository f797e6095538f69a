package persistence

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// fixtureFiles returns the committed fixtures and a file of our own.
func fixtureFiles(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	paths, _ := filepath.Glob(filepath.Join("testdata", "rdb", "*.rdb"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	out["ours"] = encodeEntries(t, nil, roundTripEntries()[20:])
	return out
}

// onlyReader hides a reader's Len, so the decoder cannot know the size
// and must rely on reading in bounded chunks.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func decodeStream(b []byte, opt *DecodeOptions) error {
	d := NewDecoder(onlyReader{bytes.NewReader(b)}, opt)
	for {
		if _, err := d.Next(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// TestEveryPrefixIsTruncated cuts each fixture at about 250 evenly spaced
// lengths and expects ErrRDBTruncated, whether or not the decoder knows
// the file's size. (corrupt.txt's truncate-sweep cuts a small file at
// every length.)
func TestEveryPrefixIsTruncated(t *testing.T) {
	for name, b := range fixtureFiles(t) {
		stride := max(1, len(b)/250)
		for n := 9; n < len(b); n += stride {
			for _, known := range []bool{true, false} {
				var err error
				if known {
					_, _, err = decodeAll(b[:n], &DecodeOptions{SkipUnsupported: true})
				} else {
					err = decodeStream(b[:n], &DecodeOptions{SkipUnsupported: true})
				}
				var de *DecodeError
				if !errors.Is(err, ErrRDBTruncated) || !errors.As(err, &de) {
					t.Fatalf("%s cut at %d (size known %v): %v", name, n, known, err)
				}
			}
		}
	}
}

// TestAbsurdLengthsAllocateLittle feeds a string length of 4 GiB, with
// the size unknown to the decoder, and checks that it fails having
// allocated little.
func TestAbsurdLengthsAllocateLittle(t *testing.T) {
	f := newFile(10).op(opSelectDB).n(0).op(typeString).s("k").op(len32Bit, 0xff, 0xff, 0xff, 0xff).op(make([]byte, 100)...)
	b := f.done()
	allocated := allocatedBy(func() {
		if err := decodeStream(b, nil); !errors.Is(err, ErrRDBTruncated) {
			t.Fatalf("err = %v", err)
		}
	})
	if allocated > 2<<20 {
		t.Fatalf("allocated %d bytes for a %d-byte file", allocated, len(b))
	}
}

func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// FuzzDecode checks that no input makes the decoder panic or allocate far
// beyond its size, with or without a known size, and that whatever it
// accepts re-encodes to a file that decodes to the same entries.
func FuzzDecode(f *testing.F) {
	for _, b := range fixtureFiles(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var es []*Entry
		var err error
		allocated := allocatedBy(func() {
			es, _, err = decodeAll(b, &DecodeOptions{SkipUnsupported: true, IgnoreChecksum: true})
			decodeStream(b, nil)
		})
		if limit := uint64(8<<20 + 400*len(b)); allocated > limit {
			t.Fatalf("allocated %d bytes decoding %d", allocated, len(b))
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error is not a *DecodeError: %v", err)
			}
			return
		}
		reencodeSame(t, es)
	})
}

// reencodeSame writes the supported entries again and checks the result
// decodes to the same values.
func reencodeSame(t *testing.T, es []*Entry) {
	var keep []*Entry
	for _, e := range es {
		if _, skipped := e.Value.(Skipped); !skipped {
			keep = append(keep, e)
		}
	}
	again, _, err := decodeAll(encodeEntries(t, nil, keep), nil)
	if err != nil {
		t.Fatalf("re-encoded file does not decode: %v", err)
	}
	sameEntries(t, again, keep)
}
