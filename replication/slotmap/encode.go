package slotmap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Version is the format version that Encode writes and Decode reads, the
// first byte of every encoded Map and Op.
const Version = 1

// ErrCorrupt is wrapped by every decoding error.
var ErrCorrupt = errors.New("slotmap: corrupt encoding")

// Encode is op in the format of the package doc, for a log entry. An op
// that could never apply (an unknown kind, a bad node ID or address, bad
// slot ranges: see Map.Apply) is refused.
func (op Op) Encode() ([]byte, error) {
	if err := op.check(); err != nil {
		return nil, err
	}
	b := []byte{Version, byte(op.Kind)}
	f := op.Kind.fields()
	if f&fNode != 0 {
		b = appendNode(b, op.Node)
	}
	if f&fNodeID != 0 {
		b = appendString(b, op.Node.ID)
	}
	if f&fGroup != 0 {
		b = binary.BigEndian.AppendUint16(b, op.Group)
	}
	if f&fVoters != 0 {
		b = appendStrings(b, op.Voters)
	}
	if f&fRanges != 0 {
		b = appendRanges(b, op.Ranges)
	}
	if f&fTerm != 0 {
		b = binary.BigEndian.AppendUint64(b, op.Term)
	}
	return b, nil
}

// DecodeOp reads an Op written by Encode. It refuses anything Encode
// would not write, and any op that could never apply (see Map.Apply).
func DecodeOp(data []byte) (Op, error) {
	r := reader{b: data}
	r.version()
	op := Op{Kind: Kind(r.u8())}
	if !op.Kind.known() && r.err == nil {
		r.fail("unknown op %d", op.Kind)
	}
	f := op.Kind.fields()
	if f&fNode != 0 {
		op.Node = r.node()
	}
	if f&fNodeID != 0 {
		op.Node.ID = r.string()
	}
	if f&fGroup != 0 {
		op.Group = r.u16()
	}
	if f&fVoters != 0 {
		op.Voters = r.strings()
	}
	if f&fRanges != 0 {
		op.Ranges = r.ranges()
	}
	if f&fTerm != 0 {
		op.Term = r.u64()
	}
	if err := r.end(); err != nil {
		return Op{}, err
	}
	if err := op.check(); err != nil {
		return Op{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return op, nil
}

// Encode is the whole map in the format of the package doc: a snapshot
// of the metadata group.
func (m *Map) Encode() []byte {
	b := binary.BigEndian.AppendUint64([]byte{Version}, m.Epoch)
	nodes := m.Nodes()
	b = binary.BigEndian.AppendUint32(b, uint32(len(nodes)))
	for _, n := range nodes {
		b = appendNode(b, n)
	}
	groups := m.Groups()
	b = binary.BigEndian.AppendUint32(b, uint32(len(groups)))
	for _, g := range groups {
		b = binary.BigEndian.AppendUint16(b, g.ID)
		b = appendStrings(b, g.Voters)
	}
	b = appendSlotRuns(b, &m.owner)
	b = appendSlotRuns(b, &m.target)
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.leaders)))
	for _, id := range slices.Sorted(maps.Keys(m.leaders)) {
		l := m.leaders[id]
		b = binary.BigEndian.AppendUint16(b, id)
		b = binary.BigEndian.AppendUint64(appendString(b, l.ID), l.Term)
	}
	return b
}

// DecodeMap reads a Map written by Map.Encode. It refuses anything Encode
// would not write: bytes out of order, duplicates, runs not merged, and
// maps that break the invariants of the package doc.
func DecodeMap(data []byte) (*Map, error) {
	r := reader{b: data}
	r.version()
	m := &Map{Epoch: r.u64(), nodes: map[string]Node{}, groups: map[uint16][]string{}, leaders: map[uint16]leader{}}
	for range r.count(6) {
		n := r.node()
		if _, dup := m.nodes[n.ID]; dup && r.err == nil {
			r.fail("node %s is listed twice", n.ID)
		}
		m.nodes[n.ID] = n
	}
	for range r.count(6) {
		id, voters := r.u16(), r.strings()
		if _, dup := m.groups[id]; dup && r.err == nil {
			r.fail("group %d is listed twice", id)
		}
		m.groups[id] = voters
	}
	r.slotRuns(&m.owner)
	r.slotRuns(&m.target)
	for range r.count(12) {
		id, l := r.u16(), leader{ID: r.string(), Term: r.u64()}
		if _, dup := m.leaders[id]; dup && r.err == nil {
			r.fail("group %d has two leaders", id)
		}
		m.leaders[id] = l
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if !bytes.Equal(m.Encode(), data) {
		return nil, fmt.Errorf("%w: not in canonical order", ErrCorrupt)
	}
	return m, nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint16(b, uint16(len(s))), s...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

func appendNode(b []byte, n Node) []byte {
	return appendString(appendString(appendString(b, n.ID), n.Addr), n.BusAddr)
}

func appendRange(b []byte, r Range) []byte {
	return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(b, uint16(r.First)), uint16(r.Last))
}

func appendRanges(b []byte, ranges []Range) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(ranges)))
	for _, r := range ranges {
		b = appendRange(b, r)
	}
	return b
}

// appendSlotRuns writes the maximal runs of slots that hold a group.
func appendSlotRuns(b []byte, slots *[NumSlots]uint16) []byte {
	var set []OwnedRange
	for _, r := range runs(slots) {
		if r.Group != 0 {
			set = append(set, r)
		}
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(set)))
	for _, r := range set {
		b = binary.BigEndian.AppendUint16(appendRange(b, r.Range), r.Group)
	}
	return b
}

// reader takes values off the front of b. The first failure sticks in
// err; after it every read returns zero.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
	r.b = nil
}

func (r *reader) take(n int) []byte {
	if r.err != nil || len(r.b) < n {
		r.fail("too short")
		return make([]byte, n)
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() byte    { return r.take(1)[0] }
func (r *reader) u16() uint16 { return binary.BigEndian.Uint16(r.take(2)) }
func (r *reader) u32() uint32 { return binary.BigEndian.Uint32(r.take(4)) }
func (r *reader) u64() uint64 { return binary.BigEndian.Uint64(r.take(8)) }

func (r *reader) version() {
	if v := r.u8(); v != Version && r.err == nil {
		r.fail("unknown version %d", v)
	}
}

// count reads a count of items at least min bytes each, and refuses one
// the remaining bytes cannot hold (so garbage cannot make us allocate).
func (r *reader) count(min int) int {
	n := r.u32()
	if uint64(n)*uint64(min) > uint64(len(r.b)) {
		r.fail("count %d is more than the data holds", n)
		return 0
	}
	return int(n)
}

func (r *reader) string() string { return string(r.take(int(r.u16()))) }

func (r *reader) strings() []string {
	ss := make([]string, r.count(2))
	for i := range ss {
		ss[i] = r.string()
	}
	return ss
}

func (r *reader) node() Node { return Node{ID: r.string(), Addr: r.string(), BusAddr: r.string()} }

func (r *reader) ranges() []Range {
	rs := make([]Range, r.count(4))
	for i := range rs {
		rs[i] = Range{int(r.u16()), int(r.u16())}
	}
	return rs
}

// slotRuns reads runs written by appendSlotRuns into slots.
func (r *reader) slotRuns(slots *[NumSlots]uint16) {
	for range r.count(6) {
		first, last, group := int(r.u16()), int(r.u16()), r.u16()
		if r.err != nil {
			return
		}
		if first > last || last >= NumSlots || group == 0 {
			r.fail("bad slot run %d-%d of group %d", first, last, group)
			return
		}
		for s := first; s <= last; s++ {
			slots[s] = group
		}
	}
}

func (r *reader) end() error {
	if r.err == nil && len(r.b) > 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	return r.err
}
