package persistence

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"

	"github.com/redstream/redstream/record"
	"github.com/redstream/redstream/resp"
	"github.com/redstream/redstream/server"
)

// An AOF increment file is a sequence of frames. A frame holds the
// records of one command — or of one whole MULTI/EXEC, so a transaction is
// replayed all or not at all — behind a header that carries the length and
// CRC-32C of what follows. Inside are the records as package record
// encodes them, an annotation line with the time and database and then
// the command in RESP, so `cat` shows what happened:
//
//	#RS <payload length> <crc32c, 8 hex digits>\r\n      frame header
//	#T <time ms> <db>\r\n                                record annotation
//	*3\r\n$5\r\nRPUSH\r\n$4\r\njobs\r\n$5\r\njob:1\r\n   the command
//	#T <time ms> <db>\r\n                                (more records of
//	...                                                   the same frame)
//
// The checksum is what lets a loader tell a torn tail from damage
// (scanIncr, aof_load.go). In the newest increment:
//
//   - frames that end at the end of the file, or where fill runs to the
//     end, end cleanly;
//   - a bad frame (a malformed header, a length past the end, a checksum
//     that does not match) with no valid frame anywhere after it and no
//     zeros at the end of the file is a torn tail: a crash cut the last
//     write short, so nothing in it was acknowledged. With
//     aof-load-truncated yes it is cut off, and the cut bytes are kept in
//     the quarantine folder;
//   - anything else is damage, and the load refuses, naming the file and
//     the offset. A valid frame after a bad one means data in the middle
//     was lost; zeros at the end mean the disk lost written data (a torn
//     write ends in fill, or just ends). `redstream aof check DIR --fix`
//     cuts there, keeping the cut bytes in quarantine.
//
// In an older increment every bad frame is damage.
//
// Under appendfsync always the file runs on past its last frame in fill
// (preallocate, aof.go), which a crash leaves behind. The fill is the
// 8-byte pattern "~rsfill\n" repeated and aligned to the file's offsets
// (the byte at offset o is fillPattern[o%8]), so no frame starts like it,
// zeros are never mistaken for it, and `tail` shows it for what it is:
//
//	...#RS 52 1f2e3d4c\r\n<payload>fill\n~rsfill\n~rsfill\n ...   to the end

// fillPattern is what preallocated space holds, repeated from offset 0.
const fillPattern = "~rsfill\n"

// fillBuf holds the pattern for a whole chunk from any alignment.
var fillBuf = func() []byte {
	b := make([]byte, preallocChunk+len(fillPattern))
	for i := range b {
		b[i] = fillPattern[i%len(fillPattern)]
	}
	return b
}()

// fillAt returns the n bytes of fill that belong at offset off
// (n ≤ preallocChunk).
func fillAt(off int64, n int) []byte {
	i := int(off % int64(len(fillPattern)))
	return fillBuf[i : i+n]
}

// isFill reports whether b, read from offset off, is fill.
func isFill(b []byte, off int64) bool {
	for i, c := range b {
		if c != fillPattern[(off+int64(i))%int64(len(fillPattern))] {
			return false
		}
	}
	return true
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const maxFrameHeader = 64 // "#RS " + two numbers + CRLF, with room

// appendFrame appends recs as one frame to dst: a header, then the
// records' encoding (package record). scratch is a reusable buffer for
// the payload; the grown scratch is returned.
func appendFrame(dst, scratch []byte, recs []server.Record) (out, scratchOut []byte) {
	p := record.Append(scratch[:0], recs...)
	dst = append(dst, "#RS "...)
	dst = strconv.AppendInt(dst, int64(len(p)), 10)
	dst = append(dst, ' ')
	dst = appendHex32(dst, crc32.Checksum(p, castagnoli))
	dst = append(dst, '\r', '\n')
	return append(dst, p...), p
}

// appendHex32 appends v as 8 lower-case hex digits (fmt's %08x, without
// fmt's cost on every write).
func appendHex32(dst []byte, v uint32) []byte {
	const digits = "0123456789abcdef"
	for shift := 28; shift >= 0; shift -= 4 {
		dst = append(dst, digits[v>>uint(shift)&0xf])
	}
	return dst
}

// Errors from reading frames.
var (
	// ErrTruncated means the data ended inside a frame: a write that a
	// crash cut short.
	ErrTruncated = errors.New("persistence: AOF ends in the middle of a frame")
	// ErrCorrupt means a frame is damaged: its header is malformed or its
	// checksum does not match.
	ErrCorrupt = errors.New("persistence: AOF frame is corrupt")
)

// frameReader reads frames from an increment file.
type frameReader struct {
	r       *bufio.Reader
	off     int64 // offset of the next frame
	payload []byte
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 256<<10)}
}

// next returns the records of the next frame. At a clean end it returns
// io.EOF; a frame cut short gives ErrTruncated, a damaged one ErrCorrupt
// (both wrapped with the offset). The records alias an internal buffer
// valid until the next call.
func (fr *frameReader) next() ([]server.Record, int64, error) {
	start := fr.off
	if b, err := fr.r.Peek(1); err == nil && b[0] != '#' {
		switch {
		case b[0] == fillPattern[start%int64(len(fillPattern))]:
			return nil, start, fr.fillToEnd(start)
		case b[0] == 0:
			return nil, start, fmt.Errorf("%w: at offset %d: zeros where a frame should start", ErrCorrupt, start)
		}
	}
	header, err := fr.r.ReadSlice('\n')
	switch {
	case err == io.EOF && len(header) == 0:
		return nil, start, io.EOF
	case err == io.EOF:
		return nil, start, fmt.Errorf("%w: at offset %d, in a frame header", ErrTruncated, start)
	case err != nil && !errors.Is(err, bufio.ErrBufferFull):
		return nil, start, err
	case err != nil || len(header) > maxFrameHeader:
		return nil, start, fmt.Errorf("%w: at offset %d: header too long", ErrCorrupt, start)
	}
	n, sum, ok := parseFrameHeader(header)
	if !ok {
		return nil, start, fmt.Errorf("%w: at offset %d: bad header %q", ErrCorrupt, start, bytes.TrimSpace(header))
	}
	if cap(fr.payload) < n {
		fr.payload = make([]byte, n)
	}
	p := fr.payload[:n]
	if _, err := io.ReadFull(fr.r, p); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, start, fmt.Errorf("%w: at offset %d, %d-byte frame cut short", ErrTruncated, start, n)
		}
		return nil, start, err
	}
	fr.off = start + int64(len(header)) + int64(n)
	if got := crc32.Checksum(p, castagnoli); got != sum {
		return nil, start, fmt.Errorf("%w: at offset %d: checksum %08x, header says %08x", ErrCorrupt, start, got, sum)
	}
	recs, err := record.Parse(p)
	if err != nil {
		return nil, start, fmt.Errorf("%w: at offset %d: %v", ErrCorrupt, start, err)
	}
	return recs, start, nil
}

// fillToEnd reads what follows fill where a frame should start: fill to
// the end of the file is preallocated space (see preallocate) and ends
// the frames cleanly (io.EOF); anything else there is damage.
func (fr *frameReader) fillToEnd(start int64) error {
	buf := make([]byte, 64<<10)
	for off := start; ; {
		n, err := fr.r.Read(buf)
		if !isFill(buf[:n], off) {
			return fmt.Errorf("%w: at offset %d: data after fill", ErrCorrupt, start)
		}
		off += int64(n)
		if err == io.EOF {
			return io.EOF
		}
		if err != nil {
			return err
		}
	}
}

// parseFrameHeader parses "#RS <len> <crc>\r\n".
func parseFrameHeader(h []byte) (n int, sum uint32, ok bool) {
	rest, found := bytes.CutPrefix(h, []byte("#RS "))
	if !found {
		return 0, 0, false
	}
	rest, found = bytes.CutSuffix(rest, []byte("\r\n"))
	if !found {
		return 0, 0, false
	}
	lenText, crcText, found := bytes.Cut(rest, []byte{' '})
	if !found || len(crcText) != 8 || !lowerHex(crcText) {
		return 0, 0, false
	}
	l, isInt := resp.ParseInt(lenText)
	c, err := strconv.ParseUint(string(crcText), 16, 32)
	if !isInt || err != nil || l < 0 || l > 1<<32 {
		return 0, 0, false
	}
	return int(l), uint32(c), true
}

// lowerHex reports whether b is lower-case hex digits only: the one
// spelling the writer uses, so a frame has exactly one valid encoding.
func lowerHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
