package raft

// redstream: AppendEntries requests and responses, the messages of every
// replicated batch, are encoded and decoded here by hand instead of by
// go-msgpack's reflection, which cost about 6% of a leader's CPU and 5%
// of a follower's (perf, three local nodes under XADD load). The bytes
// are the ones NetworkTransport's MsgpackHandle writes, so nodes with
// and without this change talk to each other (fastwire_test.go checks
// both directions against the codec):
//
//	struct      map, one key per exported field, keys in name order,
//	            embedded RPCHeader's fields inlined:
//	            fixmap 0x80|n
//	key         fixstr 0xa0|len, the field's name
//	uint64      fixint 0x00-0x7f, else the smallest of uint8 0xcc,
//	            uint16 0xcd, uint32 0xce, uint64 0xcf (big-endian)
//	int         fixint, negative fixint 0xe0-0xff, else the smallest of
//	            int8 0xd0, int16 0xd1, int32 0xd2, int64 0xd3
//	bool        0xc2 false, 0xc3 true
//	[]byte      nil 0xc0; else raw: fixstr 0xa0|len (len < 32), str16
//	            0xda, str32 0xdb (no str8: the handle writes the old
//	            spec)
//	[]*Log      nil 0xc0; else fixarray 0x90|n, array16 0xdc, array32 0xdd
//	time.Time   its MarshalBinary bytes, as []byte (TimeNotBuiltin)
//
// The decoder reads any msgpack form of those types (bin, str8, signed
// or unsigned integers, the timestamp extension, maps and arrays of any
// width) and skips keys it does not know, as the codec does.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// appendUint appends v in the smallest msgpack unsigned form.
func appendUint(b []byte, v uint64) []byte {
	switch {
	case v < 0x80:
		return append(b, byte(v))
	case v <= 0xff:
		return append(b, 0xcc, byte(v))
	case v <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(v))
	case v <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), v)
}

// appendInt appends v in the smallest msgpack form the codec uses for a
// Go int.
func appendInt(b []byte, v int64) []byte {
	switch {
	case v >= 0 && v < 0x80, v < 0 && v >= -32:
		return append(b, byte(v))
	case v >= -128 && v <= 127:
		return append(b, 0xd0, byte(v))
	case v >= -32768 && v <= 32767:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(v))
	case v >= -1<<31 && v <= 1<<31-1:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(v))
}

// appendRaw appends v as a raw string, the form of field names, error
// texts and non-nil []byte alike.
func appendRaw[T string | []byte](b []byte, v T) []byte {
	switch n := len(v); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n <= 0xffff:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, v...)
}

func appendBytes(b, v []byte) []byte {
	if v == nil {
		return append(b, 0xc0)
	}
	return appendRaw(b, v)
}

// appendKey appends a field name.
func appendKey(b []byte, k string) []byte { return appendRaw(b, k) }

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 0xc3)
	}
	return append(b, 0xc2)
}

// appendAppendEntriesRequest appends req as the codec would write it;
// false if it cannot (a time the codec would refuse too), and then the
// caller uses the codec.
func appendAppendEntriesRequest(b []byte, req *AppendEntriesRequest) ([]byte, bool) {
	b = append(b, 0x89)
	b = appendBytes(appendKey(b, "Addr"), req.Addr)
	b = appendKey(b, "Entries")
	switch n := len(req.Entries); {
	case req.Entries == nil:
		b = append(b, 0xc0)
	case n < 16:
		b = append(b, 0x90|byte(n))
	case n <= 0xffff:
		b = binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
	}
	for _, l := range req.Entries {
		if l == nil {
			b = append(b, 0xc0)
			continue
		}
		at, err := l.AppendedAt.MarshalBinary()
		if err != nil {
			return b, false
		}
		b = append(b, 0x86)
		b = appendBytes(appendKey(b, "AppendedAt"), at)
		b = appendBytes(appendKey(b, "Data"), l.Data)
		b = appendBytes(appendKey(b, "Extensions"), l.Extensions)
		b = appendUint(appendKey(b, "Index"), l.Index)
		b = appendUint(appendKey(b, "Term"), l.Term)
		b = appendUint(appendKey(b, "Type"), uint64(l.Type))
	}
	b = appendBytes(appendKey(b, "ID"), req.ID)
	b = appendBytes(appendKey(b, "Leader"), req.Leader)
	b = appendUint(appendKey(b, "LeaderCommitIndex"), req.LeaderCommitIndex)
	b = appendUint(appendKey(b, "PrevLogEntry"), req.PrevLogEntry)
	b = appendUint(appendKey(b, "PrevLogTerm"), req.PrevLogTerm)
	b = appendInt(appendKey(b, "ProtocolVersion"), int64(req.ProtocolVersion))
	b = appendUint(appendKey(b, "Term"), req.Term)
	return b, true
}

// appendAppendEntriesResponse appends the reply to an AppendEntries as
// handleCommand sends it: the error text ("" for none), then resp.
func appendAppendEntriesResponse(b []byte, rpcErr string, resp *AppendEntriesResponse) []byte {
	b = appendRaw(b, rpcErr) // a string: "" is 0xa0, never nil
	b = append(b, 0x87)
	b = appendBytes(appendKey(b, "Addr"), resp.Addr)
	b = appendBytes(appendKey(b, "ID"), resp.ID)
	b = appendUint(appendKey(b, "LastLog"), resp.LastLog)
	b = appendBool(appendKey(b, "NoRetryBackoff"), resp.NoRetryBackoff)
	b = appendInt(appendKey(b, "ProtocolVersion"), int64(resp.ProtocolVersion))
	b = appendBool(appendKey(b, "Success"), resp.Success)
	b = appendUint(appendKey(b, "Term"), resp.Term)
	return b
}

// wireReader decodes msgpack values from a stream.
type wireReader struct {
	r   *bufio.Reader
	key [32]byte
}

var errWire = errors.New("raft: malformed AppendEntries message")

func (w *wireReader) byte() (byte, error) { return w.r.ReadByte() }

// be reads an n-byte big-endian number.
func (w *wireReader) be(n int) (uint64, error) {
	var v uint64
	for range n {
		c, err := w.r.ReadByte()
		if err != nil {
			return 0, err
		}
		v = v<<8 | uint64(c)
	}
	return v, nil
}

// container reads a map or array header: its length, or -1 for nil.
func (w *wireReader) container(isMap bool) (int, error) {
	c, err := w.byte()
	if err != nil {
		return 0, err
	}
	fix, w16, w32 := byte(0x90), byte(0xdc), byte(0xdd)
	if isMap {
		fix, w16, w32 = 0x80, 0xde, 0xdf
	}
	switch {
	case c == 0xc0:
		return -1, nil
	case c&0xf0 == fix:
		return int(c & 0x0f), nil
	case c == w16:
		n, err := w.be(2)
		return int(n), err
	case c == w32:
		n, err := w.be(4)
		return int(n), err
	}
	return 0, fmt.Errorf("%w: byte %#x where a %s starts", errWire, c, map[bool]string{true: "map", false: "array"}[isMap])
}

// rawLen reads the header of a str or bin: its length, or -1 for nil.
func (w *wireReader) rawLen() (int, error) {
	c, err := w.byte()
	if err != nil {
		return 0, err
	}
	var n uint64
	switch {
	case c == 0xc0:
		return -1, nil
	case c&0xe0 == 0xa0:
		return int(c & 0x1f), nil
	case c == 0xd9 || c == 0xc4:
		n, err = w.be(1)
	case c == 0xda || c == 0xc5:
		n, err = w.be(2)
	case c == 0xdb || c == 0xc6:
		n, err = w.be(4)
	default:
		return 0, fmt.Errorf("%w: byte %#x where bytes start", errWire, c)
	}
	return int(n), err
}

// bytes reads a []byte of its own (nil for nil).
func (w *wireReader) bytes() ([]byte, error) {
	n, err := w.rawLen()
	if err != nil || n < 0 {
		return nil, err
	}
	if n <= maxTrustedLen {
		b := make([]byte, n)
		_, err = io.ReadFull(w.r, b)
		return b, err
	}
	// A length this large is believed only as the bytes arrive: a
	// damaged header must not make us allocate gigabytes.
	var buf bytes.Buffer
	buf.Grow(maxTrustedLen)
	if _, err := io.CopyN(&buf, w.r, int64(n)); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxTrustedLen is the largest length, of bytes or entries, allocated
// before the data arrives.
const maxTrustedLen = 1 << 20

// keyName reads a map key into the reader's scratch space.
func (w *wireReader) keyName() ([]byte, error) {
	n, err := w.rawLen()
	if err != nil {
		return nil, err
	}
	if n < 0 || n > len(w.key) {
		return nil, fmt.Errorf("%w: a key of %d bytes", errWire, n)
	}
	_, err = io.ReadFull(w.r, w.key[:n])
	return w.key[:n], err
}

// int reads any msgpack integer (nil is 0).
func (w *wireReader) int() (int64, error) {
	c, err := w.byte()
	if err != nil {
		return 0, err
	}
	var v uint64
	switch {
	case c < 0x80:
		return int64(c), nil
	case c >= 0xe0:
		return int64(int8(c)), nil
	case c == 0xc0:
		return 0, nil
	case c >= 0xcc && c <= 0xcf:
		v, err = w.be(1 << (c - 0xcc))
		return int64(v), err
	case c >= 0xd0 && c <= 0xd3:
		size := 1 << (c - 0xd0)
		v, err = w.be(size)
		shift := 64 - 8*size
		return int64(v<<shift) >> shift, err
	}
	return 0, fmt.Errorf("%w: byte %#x where an integer starts", errWire, c)
}

func (w *wireReader) uint() (uint64, error) {
	if c, err := w.r.Peek(1); err == nil && c[0] == 0xcf {
		w.r.Discard(1)
		return w.be(8) // all 64 bits: past int64's range
	}
	v, err := w.int()
	if err == nil && v < 0 {
		return 0, fmt.Errorf("%w: negative value %d for an unsigned field", errWire, v)
	}
	return uint64(v), err
}

func (w *wireReader) bool() (bool, error) {
	c, err := w.byte()
	switch {
	case err != nil:
		return false, err
	case c == 0xc3:
		return true, nil
	case c == 0xc2 || c == 0xc0:
		return false, nil
	}
	return false, fmt.Errorf("%w: byte %#x where a bool starts", errWire, c)
}

// time reads a time as the codec writes one with either setting of
// TimeNotBuiltin: MarshalBinary bytes (15 or 16 of them), or the msgpack
// timestamp's 4, 8 or 12 bytes, as an extension (with WriteExt) or raw.
func (w *wireReader) time() (time.Time, error) {
	peek, err := w.r.Peek(1)
	if err != nil {
		return time.Time{}, err
	}
	var b []byte
	switch c := peek[0]; c {
	case 0xd6, 0xd7, 0xc7: // fixext4, fixext8, ext8: type, then the payload
		w.r.Discard(1)
		n := 4 // fixext4
		if c == 0xd7 {
			n = 8
		}
		if c == 0xc7 {
			l, err := w.be(1)
			if err != nil {
				return time.Time{}, err
			}
			n = int(l)
		}
		if typ, err := w.byte(); err != nil || typ != 0xff {
			return time.Time{}, fmt.Errorf("%w: extension %#x where a time starts", errWire, typ)
		}
		b = make([]byte, n)
		if _, err := io.ReadFull(w.r, b); err != nil {
			return time.Time{}, err
		}
	default:
		if b, err = w.bytes(); err != nil || b == nil {
			return time.Time{}, err
		}
	}
	var t time.Time
	switch len(b) {
	case 4:
		return time.Unix(int64(binary.BigEndian.Uint32(b)), 0).UTC(), nil
	case 8:
		v := binary.BigEndian.Uint64(b)
		return time.Unix(int64(v&(1<<34-1)), int64(v>>34)).UTC(), nil
	case 12:
		return time.Unix(int64(binary.BigEndian.Uint64(b[4:])), int64(binary.BigEndian.Uint32(b))).UTC(), nil
	}
	return t, t.UnmarshalBinary(b)
}

// skip reads past one value of any type.
func (w *wireReader) skip() error { return w.skipDepth(0) }

// maxSkipDepth bounds how deep skip follows nested maps and arrays: a
// damaged message must not grow the stack without bound.
const maxSkipDepth = 64

func (w *wireReader) skipDepth(depth int) error {
	if depth > maxSkipDepth {
		return fmt.Errorf("%w: values nested deeper than %d", errWire, maxSkipDepth)
	}
	c, err := w.byte()
	if err != nil {
		return err
	}
	var n uint64 // bytes of payload to discard
	items := 0   // values that follow
	switch {
	case c < 0x80 || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
	case c&0xf0 == 0x80:
		items = 2 * int(c&0x0f)
	case c&0xf0 == 0x90:
		items = int(c & 0x0f)
	case c&0xe0 == 0xa0:
		n = uint64(c & 0x1f)
	case c == 0xcc || c == 0xd0:
		n = 1
	case c == 0xcd || c == 0xd1:
		n = 2
	case c == 0xca || c == 0xce || c == 0xd2:
		n = 4
	case c == 0xcb || c == 0xcf || c == 0xd3:
		n = 8
	case c == 0xd4, c == 0xd5, c == 0xd6, c == 0xd7, c == 0xd8:
		n = 1 + 1<<(c-0xd4) // type, then 1, 2, 4, 8 or 16 bytes
	case c == 0xc4 || c == 0xd9:
		n, err = w.be(1)
	case c == 0xc5 || c == 0xda:
		n, err = w.be(2)
	case c == 0xc6 || c == 0xdb:
		n, err = w.be(4)
	case c == 0xc7 || c == 0xc8 || c == 0xc9:
		n, err = w.be(1 << (c - 0xc7))
		n++ // the type byte
	case c == 0xdc || c == 0xdd:
		var m uint64
		m, err = w.be(2 << (c - 0xdc))
		items = int(m)
	case c == 0xde || c == 0xdf:
		var m uint64
		m, err = w.be(2 << (c - 0xde))
		items = 2 * int(m)
	default:
		return fmt.Errorf("%w: byte %#x", errWire, c)
	}
	if err != nil {
		return err
	}
	if _, err := w.r.Discard(int(n)); err != nil {
		return err
	}
	for range items {
		if err := w.skipDepth(depth + 1); err != nil {
			return err
		}
	}
	return nil
}

// header reads a field of RPCHeader; false if key is not one.
func (w *wireReader) header(key []byte, h *RPCHeader) (bool, error) {
	var err error
	switch string(key) {
	case "ProtocolVersion":
		var v int64
		v, err = w.int()
		h.ProtocolVersion = ProtocolVersion(v)
	case "ID":
		h.ID, err = w.bytes()
	case "Addr":
		h.Addr, err = w.bytes()
	default:
		return false, nil
	}
	return true, err
}

func (w *wireReader) appendEntriesRequest(req *AppendEntriesRequest) error {
	fields, err := w.container(true)
	if err != nil {
		return err
	}
	for range fields { // none for nil (-1)
		key, err := w.keyName()
		if err != nil {
			return err
		}
		if ok, err := w.header(key, &req.RPCHeader); ok {
			if err != nil {
				return err
			}
			continue
		}
		switch string(key) {
		case "Term":
			req.Term, err = w.uint()
		case "Leader":
			req.Leader, err = w.bytes()
		case "PrevLogEntry":
			req.PrevLogEntry, err = w.uint()
		case "PrevLogTerm":
			req.PrevLogTerm, err = w.uint()
		case "LeaderCommitIndex":
			req.LeaderCommitIndex, err = w.uint()
		case "Entries":
			req.Entries, err = w.entries()
		default:
			err = w.skip()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *wireReader) entries() ([]*Log, error) {
	n, err := w.container(false)
	if err != nil || n < 0 {
		return nil, err
	}
	logs := make([]*Log, 0, upTo1024(n)) // n is believed as entries arrive
	var structs []Log
	for range n {
		fields, err := w.container(true)
		if err != nil {
			return nil, err
		}
		if fields < 0 {
			logs = append(logs, nil) // a nil entry, as the codec leaves it
			continue
		}
		if len(structs) == 0 {
			structs = make([]Log, upTo1024(n-len(logs)))
		}
		l := &structs[0]
		structs = structs[1:]
		logs = append(logs, l)
		for range fields {
			key, err := w.keyName()
			if err != nil {
				return nil, err
			}
			switch string(key) {
			case "Index":
				l.Index, err = w.uint()
			case "Term":
				l.Term, err = w.uint()
			case "Type":
				var t uint64
				t, err = w.uint()
				l.Type = LogType(t)
			case "Data":
				l.Data, err = w.bytes()
			case "Extensions":
				l.Extensions, err = w.bytes()
			case "AppendedAt":
				l.AppendedAt, err = w.time()
			default:
				err = w.skip()
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return logs, nil
}

// appendEntriesResponse reads what appendAppendEntriesResponse writes:
// the error text, then the response.
func (w *wireReader) appendEntriesResponse(resp *AppendEntriesResponse) (rpcErr string, err error) {
	msg, err := w.bytes()
	if err != nil {
		return "", err
	}
	fields, err := w.container(true)
	if err != nil {
		return "", err
	}
	for range fields { // none for nil (-1)
		key, err := w.keyName()
		if err != nil {
			return "", err
		}
		if ok, err := w.header(key, &resp.RPCHeader); ok {
			if err != nil {
				return "", err
			}
			continue
		}
		switch string(key) {
		case "Term":
			resp.Term, err = w.uint()
		case "LastLog":
			resp.LastLog, err = w.uint()
		case "Success":
			resp.Success, err = w.bool()
		case "NoRetryBackoff":
			resp.NoRetryBackoff, err = w.bool()
		default:
			err = w.skip()
		}
		if err != nil {
			return "", err
		}
	}
	return string(msg), nil
}

// maxKeptWireBuffer bounds the encoding space a connection keeps between
// requests: a rare large batch should not pin its size for good.
const maxKeptWireBuffer = 1 << 20

// The entry points below let redstream's tests (replication/
// fastwire_test.go) hold this wire format to the codec's; Raft itself
// calls the unexported functions from NetworkTransport.

// AppendAppendEntriesRequestWire appends req's encoding; false if only
// the codec can encode it.
func AppendAppendEntriesRequestWire(b []byte, req *AppendEntriesRequest) ([]byte, bool) {
	return appendAppendEntriesRequest(b, req)
}

// ReadAppendEntriesRequestWire reads one request into req.
func ReadAppendEntriesRequestWire(r *bufio.Reader, req *AppendEntriesRequest) error {
	w := wireReader{r: r}
	return w.appendEntriesRequest(req)
}

// AppendAppendEntriesResponseWire appends a reply: the error text, then
// resp.
func AppendAppendEntriesResponseWire(b []byte, rpcErr string, resp *AppendEntriesResponse) []byte {
	return appendAppendEntriesResponse(b, rpcErr, resp)
}

// ReadAppendEntriesResponseWire reads one reply into resp and returns
// its error text.
func ReadAppendEntriesResponseWire(r *bufio.Reader, resp *AppendEntriesResponse) (string, error) {
	w := wireReader{r: r}
	return w.appendEntriesResponse(resp)
}

// upTo1024 is n, at most 1024 (this package's min is for uint64s).
func upTo1024(n int) int {
	if n > 1024 {
		return 1024
	}
	return n
}
