package stream

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// TestGroupRenumber runs the time-order counter to its end: the PEL is
// renumbered, and the order CLAIM follows is kept across it.
func TestGroupRenumber(t *testing.T) {
	s, g := pelStream(t, 300)
	c, _ := g.CreateConsumer([]byte("z"), 1)
	g.Release(ID{Ms: 7}, NackFail, -1)
	g.Release(ID{Ms: 3}, NackFail, -1)
	before := g.Claimable(math.MaxInt64, 0, 0)
	g.seq = math.MaxUint32 - 1
	g.Claim(c, ID{Ms: 200}, 5, -1, true, 5) // takes the counter's last value
	g.Claim(c, ID{Ms: 100}, 5, -1, true, 5) // renumbers first
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if g.seq > 400 {
		t.Fatalf("counter %d after renumbering 300 entries", g.seq)
	}
	after := g.Claimable(math.MaxInt64, 0, 0)
	// 200 and 100 now have time 5, later than all others but the ones
	// delivered at times 1..4, and 200 before 100.
	want := slices.DeleteFunc(slices.Clone(before), func(id ID) bool { return id.Ms == 200 || id.Ms == 100 })
	pos := func(ids []ID, ms uint64) int { return slices.Index(ids, ID{Ms: ms}) }
	if pos(after, 7) != 0 || pos(after, 3) != 1 || pos(after, 200) > pos(after, 100) {
		t.Fatalf("claim order after renumbering: %v", after[:8])
	}
	if got := slices.DeleteFunc(slices.Clone(after), func(id ID) bool { return id.Ms == 200 || id.Ms == 100 }); !slices.Equal(got, want) {
		t.Fatalf("the other entries changed order")
	}
}

// TestGroupsRoundTrip: Groups and SetGroups carry every part of the
// group state, released entries and their order included, and setGroups
// refuses states that break the PEL invariants.
func TestGroupsRoundTrip(t *testing.T) {
	s, g := pelStream(t, 1000)
	g.Release(ID{Ms: 900}, NackFatal, -1)
	g.Release(ID{Ms: 10}, NackSilent, -1)
	g.Release(ID{Ms: 500}, NackFail, 7)
	g.CreateConsumer([]byte("idle"), 42)
	s.CreateGroup([]byte("empty"), ID{Ms: 5}, InvalidEntriesRead)
	st := s.groupStates()
	fresh := New()
	fv := [][]byte{[]byte("event"), []byte("click"), []byte("user"), []byte("12345")}
	for i := 1; i <= 1000; i++ {
		fresh.Add(ID{Ms: uint64(i)}, fv, DefaultLimits)
	}
	if err := fresh.setGroups(st); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Check(); err != nil {
		t.Fatal(err)
	}
	fg := fresh.Group([]byte("g"))
	if dumpGroup(fg) != dumpGroup(g) {
		t.Fatalf("round trip differs\n got:\n%s\nwant:\n%s", dumpGroup(fg), dumpGroup(g))
	}
	if got, want := fg.Claimable(math.MaxInt64, 0, 5), g.Claimable(math.MaxInt64, 0, 5); !slices.Equal(got, want) {
		t.Fatalf("claim order %v, want %v", got, want)
	}
	bad := s.groupStates() // [empty, g]: by name
	bad[1].Consumers[1].PEL = append(bad[1].Consumers[1].PEL, bad[1].Consumers[0].PEL[0])
	if err := New().setGroups(bad); err == nil {
		t.Fatal("an entry owned twice was accepted")
	}
	bad = s.groupStates()
	bad[1].Released = append(bad[1].Released, bad[1].Released[0])
	if err := New().setGroups(bad); err == nil {
		t.Fatal("a released entry listed twice was accepted")
	}
}

func TestPolicyWait(t *testing.T) {
	p := Policy{AckWait: 5000}
	if p.Wait(1) != 5000 || p.Wait(9) != 5000 || !p.Redelivers() {
		t.Fatalf("ACKWAIT alone: %d %d", p.Wait(1), p.Wait(9))
	}
	p.Backoff = []int64{100, 1000, 10000}
	for count, want := range map[int64]int64{0: 100, 1: 100, 2: 1000, 3: 10000, 4: 10000, 100: 10000} {
		if got := p.Wait(count); got != want {
			t.Errorf("Wait(%d) = %d, want %d", count, got, want)
		}
	}
	var zero Policy
	if !zero.IsZero() || zero.Redelivers() || zero.Exhausted(1<<40) {
		t.Fatal("the zero policy must be Redis's behaviour")
	}
	capped := Policy{MaxDeliver: 3}
	if capped.Exhausted(2) || !capped.Exhausted(3) {
		t.Fatal("MaxDeliver 3 allows exactly 3 deliveries")
	}
}

func TestPolicySurvivesCloneAndSnapshot(t *testing.T) {
	s := New()
	g, err := s.CreateGroup([]byte("g"), MinID, 0)
	if err != nil {
		t.Fatal(err)
	}
	g.SetPolicy(Policy{MaxDeliver: 2, DeadLetter: []byte("dlq"), Backoff: []int64{1, 2}})
	for _, view := range []*Stream{s.Snapshot(), s.Clone()} {
		p := view.Group([]byte("g")).Policy()
		if p.MaxDeliver != 2 || string(p.DeadLetter) != "dlq" || len(p.Backoff) != 2 {
			t.Fatalf("policy lost in a copy: %+v", p)
		}
	}
}

func TestFromStateRefusesBadPolicy(t *testing.T) {
	s := New()
	if _, err := s.CreateGroup([]byte("g"), MinID, 0); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Policy{{MaxDeliver: -1}, {AckWait: -1}, {Backoff: []int64{10, 0}}} {
		st := s.State()
		st.Groups[0].Policy = bad
		if _, err := FromState(&st); !errors.Is(err, ErrCorrupt) {
			t.Errorf("policy %+v loaded: %v", bad, err)
		}
	}
	st := s.State()
	st.Groups[0].DeadLettered = -1
	if _, err := FromState(&st); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a negative dead-lettered count loaded: %v", err)
	}
}
