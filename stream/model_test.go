package stream

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The model: the stream as a sorted slice of entries plus its counters,
// with the obvious implementation of every operation. runOps drives a
// Stream and the model with the same operations, decoded from a byte
// string, and compares them after every step: the "XRANGE fuzzing" idea of
// Redis's tests, extended to adds, deletes and trims. TestModel feeds it
// random bytes; FuzzStream lets the fuzzer choose them.

type modelEntry struct {
	id ID
	fv [][]byte
}

type model struct {
	entries []modelEntry
	last    ID
	maxDel  ID
	added   uint64
}

func (m *model) add(id ID, fv [][]byte) error {
	if m.last == MaxID {
		return ErrExhausted
	}
	if id.Compare(m.last) <= 0 {
		return ErrIDNotGreater
	}
	m.entries = append(m.entries, modelEntry{id, fv})
	m.last = id
	m.added++
	return nil
}

func (m *model) find(id ID) int {
	i, ok := slices.BinarySearchFunc(m.entries, id, func(e modelEntry, id ID) int { return e.id.Compare(id) })
	if !ok {
		return -1
	}
	return i
}

func (m *model) delete(id ID) bool {
	i := m.find(id)
	if i < 0 {
		return false
	}
	m.entries = slices.Delete(m.entries, i, i+1)
	if id.Compare(m.maxDel) > 0 {
		m.maxDel = id
	}
	return true
}

// trimExact removes what an exact, unlimited trim removes.
func (m *model) trimExact(t Trim) int64 {
	k := 0
	switch t.Strategy {
	case TrimMaxLen:
		k = max(len(m.entries)-int(min(t.MaxLen, uint64(len(m.entries)))), 0)
	case TrimMinID:
		for k < len(m.entries) && m.entries[k].id.Less(t.MinID) {
			k++
		}
	}
	m.entries = m.entries[k:]
	return int64(k)
}

func (m *model) rangeOf(start, end ID, rev bool, count int) []modelEntry {
	var out []modelEntry
	for _, e := range m.entries {
		if !e.id.Less(start) && e.id.Compare(end) <= 0 {
			out = append(out, e)
		}
	}
	if rev {
		slices.Reverse(out)
	}
	if count > 0 && len(out) > count {
		out = out[:count]
	}
	return out
}

// opReader hands out the fuzz input a byte at a time, zeros once empty.
type opReader struct {
	b []byte
}

func (r *opReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *opReader) n(k int) int { return int(r.byte()) % k }

var (
	modelFields = [][]byte{[]byte("event"), []byte("user"), []byte("123"), []byte("")}
	modelValues = [][]byte{[]byte("click"), []byte("12345"), []byte("-7"), []byte(""), []byte("x"),
		bytes.Repeat([]byte("v"), 70), []byte("9223372036854775807"), []byte("007")}
)

func (r *opReader) fields() [][]byte {
	nf := 1 + r.n(3)
	fv := make([][]byte, 0, 2*nf)
	for range nf {
		fv = append(fv, modelFields[r.n(len(modelFields))], modelValues[r.n(len(modelValues))])
	}
	return fv
}

// someID is an ID near the stream's content: often an entry's, else
// around it.
func (r *opReader) someID(m *model) ID {
	if len(m.entries) > 0 && r.n(2) == 0 {
		id := m.entries[r.n(len(m.entries))].id
		switch r.n(3) {
		case 1:
			id, _ = id.Incr()
		case 2:
			id, _ = id.Decr()
		}
		return id
	}
	return ID{Ms: uint64(r.n(40)), Seq: uint64(r.n(4))}
}

// harness runs one operation sequence on a Stream and the model.
type harness struct {
	t     testing.TB
	s     *Stream
	m     model
	lim   Limits
	now   uint64
	step  int
	log   []string
	snaps []snapshot // frozen views taken along the way
}

// snapshot is a Stream.Snapshot and what the model held when it was taken.
type snapshot struct {
	view    *Stream
	entries []modelEntry
	step    int
}

func (h *harness) fail(format string, args ...any) {
	h.t.Helper()
	from := max(0, len(h.log)-15)
	h.t.Fatalf("step %d: %s\nlimits %+v, last operations:\n  %s", h.step, fmt.Sprintf(format, args...), h.lim,
		strings.Join(h.log[from:], "\n  "))
}

// maxOps bounds one run, so that a long fuzz input stays fast.
const maxOps = 1500

func runOps(t testing.TB, data []byte) {
	t.Helper()
	r := &opReader{b: data}
	h := &harness{t: t, s: New(), now: 10}
	h.lim = Limits{MaxEntries: r.n(6), MaxBytes: r.n(4) * 60}
	for h.step = 0; len(r.b) > 0 && h.step < maxOps; h.step++ {
		h.op(r)
		if h.step < 64 || h.step%16 == 0 {
			if err := h.s.Check(); err != nil { // O(n): not every step of long runs
				h.fail("Check: %v", err)
			}
		}
		h.compareCounters()
		if h.step%8 == 0 {
			h.compareRange(MinID, MaxID, false, 0)
		}
		if h.step%37 == 5 && len(h.snaps) < 4 {
			h.snaps = append(h.snaps, snapshot{h.s.Snapshot(), slices.Clone(h.m.entries), h.step})
		}
	}
	h.checkSnapshots()
	if err := h.s.Check(); err != nil {
		h.fail("Check: %v", err)
	}
	h.compareRange(MinID, MaxID, false, 0)
	h.compareRange(MinID, MaxID, true, 0)
}

func (h *harness) op(r *opReader) {
	switch r.n(12) {
	case 0, 1, 2, 3:
		h.now = uint64(int(h.now) + r.n(4) - 1) // the clock may step back
		id, err := h.s.NextID(h.now)
		h.add(id, err, r.fields(), fmt.Sprintf("add * (now %d)", h.now))
	case 4:
		id := h.m.last
		id.Ms += uint64(r.n(3))
		id.Seq = uint64(r.n(4))
		h.add(id, nil, r.fields(), "add "+id.String())
	case 5:
		ms := h.m.last.Ms + uint64(r.n(3)) - 1
		id, err := h.s.NextSeq(ms)
		h.add(id, err, r.fields(), fmt.Sprintf("add %d-*", ms))
	case 6, 7:
		h.delete(r.someID(&h.m))
	case 8:
		h.trimExact(r)
	case 9:
		h.trimApprox(r)
	default:
		h.rangeOp(r)
	}
}

func (h *harness) add(id ID, idErr error, fv [][]byte, what string) {
	h.log = append(h.log, what)
	if idErr != nil {
		if !errors.Is(idErr, ErrIDNotGreater) && !errors.Is(idErr, ErrExhausted) {
			h.fail("%s: unexpected error %v", what, idErr)
		}
		return
	}
	want := h.m.add(id, fv)
	if got := h.s.Add(id, fv, h.lim); !errors.Is(got, want) {
		h.fail("%s: Add = %v, model says %v", what, got, want)
	}
}

func (h *harness) delete(id ID) {
	h.log = append(h.log, "delete "+id.String())
	if got, want := h.s.Delete(id), h.m.delete(id); got != want {
		h.fail("Delete(%s) = %v, model says %v", id, got, want)
	}
}

func (h *harness) trimSpec(r *opReader) Trim {
	if r.n(2) == 0 {
		return Trim{Strategy: TrimMaxLen, MaxLen: uint64(r.n(len(h.m.entries) + 2))}
	}
	return Trim{Strategy: TrimMinID, MinID: r.someID(&h.m)}
}

func (h *harness) trimExact(r *opReader) {
	t := h.trimSpec(r)
	h.log = append(h.log, fmt.Sprintf("trim %+v", t))
	if got, want := h.s.Trim(t), h.m.trimExact(t); got != want {
		h.fail("Trim(%+v) = %d, model says %d", t, got, want)
	}
}

// trimApprox checks what a "~" trim may do: remove a prefix of the
// entries, never more than an exact trim would, nor more than the limit.
func (h *harness) trimApprox(r *opReader) {
	t := h.trimSpec(r)
	t.Approx = true
	t.Limit = int64(r.n(4) * 3)
	h.log = append(h.log, fmt.Sprintf("trim %+v", t))
	exact := model{entries: slices.Clone(h.m.entries)}
	most := exact.trimExact(Trim{Strategy: t.Strategy, MaxLen: t.MaxLen, MinID: t.MinID})
	got := h.s.Trim(t)
	if got > most || (t.Limit > 0 && got > t.Limit) {
		h.fail("Trim(%+v) removed %d; exact would remove %d", t, got, most)
	}
	h.m.entries = h.m.entries[got:]
}

func (h *harness) rangeOp(r *opReader) {
	a, b := r.someID(&h.m), r.someID(&h.m)
	if r.n(4) == 0 {
		a = MinID
	}
	if r.n(4) == 0 {
		b = MaxID
	}
	h.compareRange(a, b, r.n(2) == 0, r.n(5))
}

func (h *harness) compareRange(start, end ID, rev bool, count int) {
	h.t.Helper()
	want := h.m.rangeOf(start, end, rev, count)
	it := h.s.Range(start, end, rev)
	var got []modelEntry
	for (count == 0 || len(got) < count) && it.Next() {
		got = append(got, modelEntry{it.ID(), it.Fields()})
	}
	if !equalEntries(got, want) {
		h.fail("Range(%s, %s, rev %v, count %d)\n got: %s\nwant: %s", start, end, rev, count, render(got), render(want))
	}
}

// checkSnapshots verifies that every view still holds what the stream
// held when it was taken, whatever was written since.
func (h *harness) checkSnapshots() {
	h.t.Helper()
	for _, sn := range h.snaps {
		var got []modelEntry
		for it := sn.view.Range(MinID, MaxID, false); it.Next(); {
			got = append(got, modelEntry{it.ID(), it.Fields()})
		}
		if !equalEntries(got, sn.entries) {
			h.fail("snapshot of step %d changed\n got: %s\nwant: %s", sn.step, render(got), render(sn.entries))
		}
		if err := sn.view.Check(); err != nil {
			h.fail("snapshot of step %d: %v", sn.step, err)
		}
	}
}

func (h *harness) compareCounters() {
	s, m := h.s, &h.m
	first := ID{}
	if len(m.entries) > 0 {
		first = m.entries[0].id
	}
	if s.Len() != uint64(len(m.entries)) || s.LastID() != m.last || s.MaxDeletedID() != m.maxDel ||
		s.EntriesAdded() != m.added || s.FirstID() != first {
		h.fail("counters: len %d last %s maxdel %s added %d first %s; model %d %s %s %d %s",
			s.Len(), s.LastID(), s.MaxDeletedID(), s.EntriesAdded(), s.FirstID(),
			len(m.entries), m.last, m.maxDel, m.added, first)
	}
}

func equalEntries(a, b []modelEntry) bool {
	return slices.EqualFunc(a, b, func(x, y modelEntry) bool {
		return x.id == y.id && slices.EqualFunc(x.fv, y.fv, bytes.Equal)
	})
}

func render(es []modelEntry) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = fmt.Sprintf("%s%q", e.id, e.fv)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// TestModel runs many random operation sequences against the model.
func TestModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	runs := 300
	if testing.Short() {
		runs = 40
	}
	for i := range runs {
		data := make([]byte, 200+rng.IntN(1200))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) { runOps(t, data) })
	}
}
