package stream

import (
	"testing"
)

// FuzzStream drives a stream and the sorted-slice model through
// fuzzer-chosen adds, deletes, exact and approximate trims and ranges in
// both directions, comparing them after every step (see runOps).
func FuzzStream(f *testing.F) {
	f.Add([]byte("\x03\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x00\x01"))
	f.Add([]byte("\x01\x02" + "\x00\x01\x00\x01\x01\x00\x01\x02\x00\x03\x00\x01\x06\x01\x00\x08\x00\x01\x0a\x01\x01\x02"))
	seed := make([]byte, 600)
	for i := range seed {
		seed[i] = byte(i*7 + i/3)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		runOps(t, data)
	})
}

// FuzzParseID checks the ID parsers never panic, agree with each other,
// and read back what AppendText writes.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"1-1", "-", "+", "(5", "5-*", " 7", "1--05", "18446744073709551615-18446744073709551615", "a\x00b"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		loose, errLoose := ParseID(b, 3)
		strict, errStrict := ParseStrictID(b, 3)
		if errStrict == nil && (errLoose != nil || loose != strict) {
			t.Fatalf("%q: strict %v %v, loose %v %v", b, strict, errStrict, loose, errLoose)
		}
		add, seqGiven, errAdd := ParseAddID(b)
		if errStrict == nil && (errAdd != nil || !seqGiven || (add.Ms != strict.Ms)) {
			t.Fatalf("%q: strict %v, add %v %v %v", b, strict, add, seqGiven, errAdd)
		}
		ParseRangeID(b, 0)
		if errLoose == nil {
			again, err := ParseID(loose.AppendText(nil), 0)
			if err != nil || again != loose {
				t.Fatalf("%q: %v does not read back: %v %v", b, loose, again, err)
			}
		}
	})
}
