package listpack

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrCorrupt is wrapped by every error Validate returns, so callers that
// only need "is this listpack usable" can test errors.Is(err, ErrCorrupt).
// The more specific errors below also wrap it.
var ErrCorrupt = errors.New("listpack: corrupt")

// The specific kinds of corruption. Each wraps ErrCorrupt; Validate wraps
// them again with the offset or sizes involved.
var (
	// ErrTruncated means the bytes are too short to hold a header and a
	// terminator, or an entry's encoding runs past the end.
	ErrTruncated = fmt.Errorf("%w: truncated", ErrCorrupt)

	// ErrSizeMismatch means the header's total-bytes field disagrees with
	// the number of bytes given. RDB hands us a length-prefixed blob, so
	// the two must agree exactly.
	ErrSizeMismatch = fmt.Errorf("%w: header size does not match length", ErrCorrupt)

	// ErrNoTerminator means the last byte is not 0xFF, or the walk met the
	// terminator before the last byte.
	ErrNoTerminator = fmt.Errorf("%w: terminator misplaced", ErrCorrupt)

	// ErrBadEncoding means an entry starts with a byte that no encoding
	// uses (0xF5 to 0xFE).
	ErrBadEncoding = fmt.Errorf("%w: invalid encoding byte", ErrCorrupt)

	// ErrBacklen means an entry's back-length does not match the size its
	// encoding declares, so backward iteration would go astray.
	ErrBacklen = fmt.Errorf("%w: back-length mismatch", ErrCorrupt)

	// ErrCount means the header's element count disagrees with the number
	// of entries walked.
	ErrCount = fmt.Errorf("%w: element count mismatch", ErrCorrupt)
)

// Validate checks that b is a well-formed listpack without ever panicking,
// whatever the bytes. It always checks the header size, the total-bytes
// field and the terminator, plus the first entry. With deep set it walks
// every entry, checks each encoding stays inside b, that each back-length
// matches, that the terminator is met exactly at the end and that the
// header count (unless it is the "unknown" marker) equals the entries
// walked. Only a deep-validated listpack is safe for the other methods:
// RDB load and anything else reading foreign bytes must use deep.
func Validate(b []byte, deep bool) error {
	if len(b) < emptySize {
		return fmt.Errorf("%w: %d bytes, need at least %d", ErrTruncated, len(b), emptySize)
	}
	if total := binary.LittleEndian.Uint32(b); uint64(total) != uint64(len(b)) {
		return fmt.Errorf("%w: header says %d, have %d", ErrSizeMismatch, total, len(b))
	}
	if b[len(b)-1] != eof {
		return fmt.Errorf("%w: last byte is %#02x", ErrNoTerminator, b[len(b)-1])
	}
	if !deep {
		if b[hdrSize] == eof {
			return nil
		}
		_, err := checkEntry(b, hdrSize)
		return err
	}
	return walkEntries(b)
}

// walkEntries is the deep part of Validate: it visits every entry with
// checkEntry and compares the tally with the header count.
func walkEntries(b []byte) error {
	off, n := hdrSize, 0
	for b[off] != eof {
		next, err := checkEntry(b, off)
		if err != nil {
			return err
		}
		off = next
		n++
	}
	if off != len(b)-1 {
		return fmt.Errorf("%w: terminator at offset %d of %d bytes", ErrNoTerminator, off, len(b))
	}
	if c := int(binary.LittleEndian.Uint16(b[4:])); c != countUnkwn && c != n {
		return fmt.Errorf("%w: header says %d, walked %d", ErrCount, c, n)
	}
	return nil
}

// checkEntry validates the entry at off (which is not the terminator) and
// returns the offset of what follows it. The entry, back-length included,
// must end before the final terminator byte.
func checkEntry(b []byte, off int) (int, error) {
	l, err := checkedEncLen(b, off)
	if err != nil {
		return 0, err
	}
	last := len(b) - 1 // offset of the terminator
	bl := backlenSize(l)
	if l > uint64(last-off) || uint64(bl) > uint64(last-off)-l {
		return 0, fmt.Errorf("%w: entry at offset %d needs %d bytes, %d left",
			ErrTruncated, off, l+uint64(bl), last-off)
	}
	next := off + int(l) + bl
	got, _, ok := readBacklen(b, next-1, off)
	if !ok || got != l {
		return 0, fmt.Errorf("%w: entry at offset %d is %d bytes, back-length says %d",
			ErrBacklen, off, l, got)
	}
	return next, nil
}

// checkedEncLen is encLenAt for untrusted bytes: it returns the size of the
// encoding+data of the entry at off, reading length bytes only if they lie
// before the terminator.
func checkedEncLen(b []byte, off int) (uint64, error) {
	c, avail := b[off], len(b)-1-off
	need := 1
	switch {
	case c&0xF0 == enc12BitStr:
		need = 2
	case c == enc32BitStr:
		need = 5
	case c >= 0xF5:
		return 0, fmt.Errorf("%w: %#02x at offset %d", ErrBadEncoding, c, off)
	}
	if need > avail {
		return 0, fmt.Errorf("%w: length of entry at offset %d", ErrTruncated, off)
	}
	return uint64(encLenAt(b, off)), nil
}
