package persistence

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/server"
	"github.com/redstream/redstream/stream"
)

// DUMP payloads: one value as RESTORE takes it and DUMP gives it.
//
//	+-----------------------+----------------+--------------+
//	| type | value          | RDB version    | CRC-64       |
//	| as in an RDB file     | 2 bytes, LE    | 8 bytes, LE  |
//	+-----------------------+----------------+--------------+
//
// The type byte and value are exactly what an RDB file holds after a
// key's name (see the package documentation); the checksum is CRC64 of
// every byte before it, version included. There is no header, no key
// and no expiry: RESTORE's arguments carry those.
//
// We write DumpVersion (10), so Redis 7.0 and every later Redis loads our
// payloads, and read any version up to MaxRDBVersion (12, Redis 7.4):
// Redis refuses only a payload newer than itself, and so do we. Older
// payloads use older value types (ziplist quicklists, version-1
// streams), which the decoder reads as it does in files.
//
// Stream state version 10 has no place for — consumer active times and
// IDMP tables (see "State version 10 has no place for") — travels after
// the value, before the version: the AUX opcode, the name
// "redstream-stream-ext" and the same extension value files carry, for
// db 0 and an empty key. Redis reads a payload's value and never looks
// at what follows it, so it loads such a payload and drops the
// extension; our decoder attaches it. Nothing else may follow a value:
// other trailing bytes are a bad payload.

// DumpVersion is the RDB version written in DUMP payloads.
const DumpVersion = RDBVersion

// dumpFooter is the version and checksum after a payload's value.
const dumpFooter = 10

// Errors DecodeDump fails with, in Redis's words; every error it returns
// wraps one of them (test with errors.Is).
var (
	// ErrDumpPayload: the payload is shorter than its footer, its RDB
	// version is newer than MaxRDBVersion, or its checksum is wrong.
	ErrDumpPayload = errors.New("DUMP payload version or checksum are wrong")
	// ErrDumpData: the footer is right but the value is not: truncated,
	// malformed, failing validation, an empty list, or (also wrapping
	// ErrRDBUnsupported) a type redstream does not serve.
	ErrDumpData = errors.New("Bad data format")
)

// DumpOptions adjusts EncodeDump and DecodeDump.
type DumpOptions struct {
	// NoCompression writes no LZF strings (rdbcompression no).
	NoCompression bool
	// ListFill is list-max-listpack-size (zero: listpack.DefaultFill):
	// encoding, it decides which list nodes are written as plain
	// containers, as the RDB encoder does; decoding, it packs lists
	// stored in encodings without listpack nodes.
	ListFill int
}

func (o *DumpOptions) fill() int {
	if o == nil || o.ListFill == 0 {
		return listpack.DefaultFill
	}
	return o.ListFill
}

// EncodeDump returns v's DUMP payload. An empty list has none (Redis
// never holds one, and refuses one in RESTORE).
func EncodeDump(v Value, opt *DumpOptions) ([]byte, error) {
	t, err := valueType(v)
	if err != nil {
		return nil, err
	}
	if l, ok := v.(List); ok && l.Len() == 0 {
		return nil, errors.New("persistence: cannot DUMP an empty list")
	}
	var buf bytes.Buffer
	e := &Encoder{
		opt:   EncodeOptions{NoCompression: opt != nil && opt.NoCompression, ListFill: opt.fill()},
		plain: listpack.NewQuicklist(opt.fill()),
		w:     &rdbWriter{bw: bufio.NewWriterSize(&buf, 4096), compress: opt == nil || !opt.NoCompression},
	}
	var st *stream.State
	if s, ok := v.(Stream); ok {
		st = rdbState(s)
	}
	e.w.u8(t)
	e.value(v, st)
	if st != nil && needsExt(st) {
		e.w.u8(opAux)
		e.w.str([]byte(extAuxName))
		e.w.str(appendExt(nil, 0, nil, st))
	}
	if err := e.w.bw.Flush(); err != nil { // a bytes.Buffer never fails; kept for form
		return nil, err
	}
	out := binary.LittleEndian.AppendUint16(buf.Bytes(), DumpVersion)
	return binary.LittleEndian.AppendUint64(out, CRC64(out)), nil
}

// DumpVersionOf returns the RDB version in a payload's footer, or false
// when the payload is too short to have one.
func DumpVersionOf(payload []byte) (int, bool) {
	if len(payload) < dumpFooter {
		return 0, false
	}
	return int(binary.LittleEndian.Uint16(payload[len(payload)-dumpFooter:])), true
}

// DecodeDump checks a DUMP payload's footer, as Redis's RESTORE does —
// a version no newer than MaxRDBVersion and the right CRC-64 — then
// decodes its value with every check the RDB decoder makes (listpacks
// and stream nodes validated in depth) and nothing left over but the
// redstream extension. It never panics, and allocates in proportion to
// the payload. The value shares no memory with payload.
func DecodeDump(payload []byte, opt *DumpOptions) (Value, error) {
	ver, ok := DumpVersionOf(payload)
	if !ok {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the footer", ErrDumpPayload, len(payload))
	}
	if ver > MaxRDBVersion {
		return nil, fmt.Errorf("%w: RDB version %d, newer than %d", ErrDumpPayload, ver, MaxRDBVersion)
	}
	stored := binary.LittleEndian.Uint64(payload[len(payload)-8:])
	if sum := CRC64(payload[:len(payload)-8]); sum != stored {
		return nil, fmt.Errorf("%w: checksum %#016x, computed %#016x", ErrDumpPayload, stored, sum)
	}
	body := payload[:len(payload)-dumpFooter]
	v, err := decodeDumpBody(body, opt.fill(), ver)
	if err != nil {
		return nil, dumpDataError(err)
	}
	return v, nil
}

// dumpDataError wraps a decoding error in ErrDumpData, keeping it for
// errors.Is (ErrRDBUnsupported, say) and for its detail.
func dumpDataError(err error) error {
	return &multiWrap{msg: fmt.Sprintf("%v: %v", ErrDumpData, err), errs: []error{ErrDumpData, err}}
}

// decodeDumpBody decodes the type, the value and the optional extension.
func decodeDumpBody(body []byte, fill, version int) (Value, error) {
	// A small buffer (NewDecoder's is 256 KiB, for files): bufio reads a
	// large string straight into its slice anyway.
	d := &Decoder{opt: DecodeOptions{ListFill: fill}, started: true, version: version,
		r: &rdbReader{br: bufio.NewReaderSize(bytes.NewReader(body), 4096), size: int64(len(body))}}
	t, err := d.r.u8("the value type")
	if err != nil {
		return nil, err
	}
	if !knownType(t) {
		return nil, rdbCorruptf("unknown value type %d", t)
	}
	if t == typeStreamListpacks || t == typeStreamListpacks2 || t == typeStreamListpacks3 {
		return d.dumpStream(t, body)
	}
	v, err := d.value(t, nil)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, rdbCorruptf("the list is empty")
	}
	if left := int64(len(body)) - d.r.off; left != 0 {
		return nil, rdbCorruptf("%d bytes follow the value", left)
	}
	return v, nil
}

// dumpStream reads a stream's state, then the extension that may follow
// it, and builds the stream.
func (d *Decoder) dumpStream(t byte, body []byte) (Value, error) {
	st, err := d.streamState(t)
	if err != nil {
		return nil, err
	}
	if d.r.off < int64(len(body)) {
		ext, err := d.dumpExt()
		if err != nil {
			return nil, err
		}
		if err := applyExt(st, ext); err != nil {
			return nil, err
		}
	}
	if left := int64(len(body)) - d.r.off; left != 0 {
		return nil, rdbCorruptf("%d bytes follow the value", left)
	}
	return loadStream(t, st)
}

// dumpExt reads the extension that may follow a stream's value.
func (d *Decoder) dumpExt() (*streamExt, error) {
	op, err := d.r.u8("what follows the value")
	if err != nil {
		return nil, err
	}
	if op != opAux {
		return nil, rdbCorruptf("byte %#02x follows the value", op)
	}
	name, err := d.r.str("an aux field name")
	if err != nil {
		return nil, err
	}
	if string(name) != extAuxName {
		return nil, rdbCorruptf("aux field %q follows the value", name)
	}
	val, err := d.r.str("an aux field value")
	if err != nil {
		return nil, err
	}
	return parseExt(val)
}

// DumpCodec is the server.Codec cli plugs in: DUMP and RESTORE payloads
// for the server's values, through EncodeDump and DecodeDump.
type DumpCodec struct{}

var _ server.Codec = DumpCodec{}

// Dump returns the payload of a server value.
func (DumpCodec) Dump(value any, opt server.DumpOptions) ([]byte, error) {
	v, err := ToValue(value)
	if err != nil {
		return nil, err
	}
	fill := opt.ListFill
	if q, ok := value.(*listpack.Quicklist); ok {
		fill = q.Fill() // the list's own nodes decide which are plain
	}
	return EncodeDump(v, &DumpOptions{NoCompression: !opt.Compress, ListFill: fill})
}

// Restore decodes a payload into a server value. Its errors wrap
// server.ErrDumpPayload, server.ErrDumpData or, for a type redstream
// does not serve, server.ErrDumpType.
func (DumpCodec) Restore(payload []byte, opt server.DumpOptions) (any, error) {
	v, err := DecodeDump(payload, &DumpOptions{ListFill: opt.ListFill})
	if err != nil {
		var ue *UnsupportedError
		switch {
		case errors.Is(err, ErrDumpPayload):
			return nil, fmt.Errorf("%w (%v)", server.ErrDumpPayload, err)
		case errors.As(err, &ue):
			return nil, &server.DumpTypeError{Type: ue.What}
		}
		return nil, fmt.Errorf("%w (%v)", server.ErrDumpData, err)
	}
	value, err := FromValue(v, opt.ListFill)
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", server.ErrDumpData, err)
	}
	return value, nil
}
