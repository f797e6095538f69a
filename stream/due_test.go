package stream

import (
	"math"
	"slices"
	"testing"
)

// fuzzPolicy picks a group policy for runGroupOps from a byte: none, an
// ack wait, or a backoff schedule (with or without an ack wait beside it).
func fuzzPolicy(b byte) Policy {
	switch b % 4 {
	case 1:
		return Policy{AckWait: 100}
	case 2:
		return Policy{Backoff: []int64{50, 200, 400}}
	case 3:
		return Policy{AckWait: 30, Backoff: []int64{300, 10}, MaxDeliver: 3}
	}
	return Policy{}
}

// modelDue is when the model's pending entry is due again under p, and
// false when never.
func modelDue(pol *Policy, pe mPending) (int64, bool) {
	if !pol.Redelivers() || pe.count == math.MaxInt64 {
		return 0, false
	}
	if pe.owner == "" {
		return 0, true
	}
	return pe.delivered + pol.Wait(pe.count), true
}

// verifyDue checks Due, HasDue, NextDue and DueTime against the model:
// the entries due now, in due-time order, and the next due time after now.
func (r *groupRun) verifyDue() {
	r.t.Helper()
	pol := r.g.Policy()
	var want []ID
	next, hasNext := int64(math.MaxInt64), false
	for id, pe := range r.m.pel {
		at, ok := modelDue(pol, pe)
		if got, gotOK := r.g.DueTime(id); got != at || gotOK != ok {
			r.t.Fatalf("after %v: DueTime(%s) = %d %v, model %d %v", r.steps, id, got, gotOK, at, ok)
		}
		switch {
		case !ok:
		case at <= r.now:
			want = append(want, id)
		case at < next:
			next, hasNext = at, true
		}
	}
	got := r.g.Due(r.now, 0)
	if !sameIDs(got, want) || r.g.HasDue(r.now) != (len(want) > 0) {
		r.t.Fatalf("after %v: Due(%d) = %v, model %v", r.steps, r.now, got, want)
	}
	for i := 1; i < len(got); i++ {
		a, _ := modelDue(pol, r.m.pel[got[i-1]])
		b, _ := modelDue(pol, r.m.pel[got[i]])
		if a > b {
			r.t.Fatalf("after %v: Due out of order: %v", r.steps, got)
		}
	}
	if len(got) > 1 {
		if first := r.g.Due(r.now, 1); len(first) != 1 || first[0] != got[0] {
			r.t.Fatalf("Due with a limit of 1 = %v, want %v", first, got[:1])
		}
	}
	if at, ok := r.g.NextDue(r.now); ok != hasNext || (ok && at != next) {
		r.t.Fatalf("after %v: NextDue(%d) = %d %v, model %d %v", r.steps, r.now, at, ok, next, hasNext)
	}
}

func sameIDs(a, b []ID) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, ID.Compare)
	slices.SortFunc(b, ID.Compare)
	return slices.Equal(a, b)
}

// TestDueIndexFollowsPolicyChanges: setting, changing and removing a
// policy on a group with pending entries rebuilds the due times, and a
// clone carries its own index.
func TestDueIndexFollowsPolicyChanges(t *testing.T) {
	s := New()
	g, _ := s.CreateGroup([]byte("g"), MinID, 0)
	c, _ := g.CreateConsumer([]byte("c"), 0)
	for i := uint64(1); i <= 3; i++ {
		id := ID{Ms: i}
		if err := s.Add(id, [][]byte{[]byte("f"), []byte("v")}, DefaultLimits); err != nil {
			t.Fatal(err)
		}
		s.Deliver(g, c, id, int64(1000*i), false)
	}
	if g.HasDue(1 << 40) {
		t.Fatal("no policy: nothing is ever due")
	}
	g.SetPolicy(Policy{AckWait: 500})
	if got := g.Due(2500, 0); !slices.Equal(got, []ID{{Ms: 1}, {Ms: 2}}) {
		t.Fatalf("ACKWAIT 500 at 2500: due %v", got)
	}
	if at, ok := g.NextDue(2500); !ok || at != 3500 {
		t.Fatalf("next due %d %v, want 3500", at, ok)
	}
	cl := s.Clone().Group([]byte("g"))
	g.SetPolicy(Policy{Backoff: []int64{5000}})
	if g.HasDue(2500) {
		t.Fatal("BACKOFF 5000: nothing due at 2500")
	}
	if got := cl.Due(2500, 0); len(got) != 2 {
		t.Fatalf("the clone lost its own index: %v", got)
	}
	g.Release(ID{Ms: 3}, NackFail, -1)
	if got := g.Due(2500, 0); !slices.Equal(got, []ID{{Ms: 3}}) {
		t.Fatalf("a released entry is due at once: %v", got)
	}
	g.Release(ID{Ms: 2}, NackFatal, -1)
	if _, ok := g.DueTime(ID{Ms: 2}); ok {
		t.Fatal("XNACK FATAL: never due again")
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	g.SetPolicy(Policy{})
	if g.HasDue(1<<40) || len(g.due.queue) != 0 || g.due.late.Len() != 0 {
		t.Fatal("policy removed: the index must go")
	}
}

// TestDueQueueStaysSmall: acknowledgements out of order leave stale
// items, which are compacted away once they outnumber the live ones, and
// in-order acknowledgements give the front of the queue back; the index
// stays exact throughout.
func TestDueQueueStaysSmall(t *testing.T) {
	s := New()
	g, _ := s.CreateGroup([]byte("g"), MinID, 0)
	g.SetPolicy(Policy{AckWait: 1000})
	c, _ := g.CreateConsumer([]byte("c"), 0)
	const n = 3000
	for i := uint64(1); i <= n; i++ {
		id := ID{Ms: i}
		if err := s.Add(id, [][]byte{[]byte("f"), []byte("v")}, DefaultLimits); err != nil {
			t.Fatal(err)
		}
		s.Deliver(g, c, id, int64(i), false)
	}
	for i := uint64(2); i <= n; i += 2 { // every other one, but never the front
		g.Ack(ID{Ms: i})
		if stale := len(g.due.queue) - g.due.head - g.due.live; stale > 64 && stale > g.due.live {
			t.Fatalf("after acking %d: %d stale items beside %d live", i, stale, g.due.live)
		}
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= n; i += 2 { // now the rest, from the front
		g.Ack(ID{Ms: i})
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if len(g.due.queue) != 0 || g.due.live != 0 || g.HasDue(1<<40) {
		t.Fatalf("an empty PEL leaves %d queue items (%d live)", len(g.due.queue), g.due.live)
	}
}
