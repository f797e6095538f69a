package stream

import "slices"

// Policy is what a consumer group does, beyond Redis, with entries its
// consumers fail to acknowledge (XGROUP SETPOLICY). The zero Policy is
// Redis's behaviour: no cap, no dead letters, no server redelivery.
//
//   - MaxDeliver caps deliveries: a delivery that would make an entry's
//     count exceed it moves the entry to the DeadLetter stream instead
//     (or, without one, just drops it from the PEL), in the same write.
//   - AckWait and Backoff make the server redeliver: an entry not
//     acknowledged within its wait after a delivery becomes due again,
//     and XREADGROUP ">" hands due entries out before new ones. The wait
//     after the n-th delivery is Backoff[n-1] (its last step repeating),
//     or AckWait when Backoff is empty.
//
// Every decision reads the record's clock, so replay and followers agree
// (DESIGN principle 2).
type Policy struct {
	MaxDeliver int64   // deliveries allowed per entry; 0: no cap
	DeadLetter []byte  // the dead-letter stream's key; nil: none
	AckWait    int64   // ms; 0: no redelivery unless Backoff is set
	Backoff    []int64 // ms after the 1st, 2nd, … delivery; the last repeats
}

// IsZero reports whether p is Redis's behaviour (no policy at all).
func (p *Policy) IsZero() bool {
	return p.MaxDeliver == 0 && p.DeadLetter == nil && p.AckWait == 0 && len(p.Backoff) == 0
}

// Redelivers reports whether the server redelivers unacknowledged
// entries.
func (p *Policy) Redelivers() bool { return p.AckWait > 0 || len(p.Backoff) > 0 }

// Wait returns how long (ms) an entry delivered count times may stay
// unacknowledged before it is due again; 0 when the policy never
// redelivers.
func (p *Policy) Wait(count int64) int64 {
	if len(p.Backoff) == 0 {
		return p.AckWait
	}
	i := min(max(count, 1), int64(len(p.Backoff))) - 1
	return p.Backoff[i]
}

// Exhausted reports whether one more delivery of an entry delivered
// count times would exceed the cap.
func (p *Policy) Exhausted(count int64) bool {
	return p.MaxDeliver > 0 && count >= p.MaxDeliver
}

func (p Policy) clone() Policy {
	p.DeadLetter = slices.Clone(p.DeadLetter)
	p.Backoff = slices.Clone(p.Backoff)
	return p
}

// Policy returns the group's policy. The caller must not change it; use
// SetPolicy.
func (g *Group) Policy() *Policy { return &g.policy }

// SetPolicy replaces the group's policy (and rebuilds the due index,
// whose times depend on it).
func (g *Group) SetPolicy(p Policy) {
	g.policy = p.clone()
	g.rebuildDue()
}
