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

// clone copies p; an empty dead-letter key or schedule becomes nil, so
// that IsZero holds for every policy that does nothing.
func (p Policy) clone() Policy {
	p.DeadLetter, p.Backoff = cloneOrNil(p.DeadLetter), cloneOrNil(p.Backoff)
	return p
}

func cloneOrNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// valid reports whether p is a policy XGROUP SETPOLICY could have set:
// what FromState requires of a loaded one.
func (p *Policy) valid() bool {
	if p.MaxDeliver < 0 || p.AckWait < 0 {
		return false
	}
	for _, ms := range p.Backoff {
		if ms <= 0 {
			return false
		}
	}
	return true
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

// DeadLetter removes id from the PEL (and its owner's) as a dead letter,
// which the group counts. It returns the entry as it was, and false when
// id was not pending.
func (g *Group) DeadLetter(id ID) (PendingEntry, bool) {
	pe, ok := g.PendingEntry(id)
	if !ok {
		return pe, false
	}
	g.Ack(id)
	g.dead++
	return pe, true
}

// DeadLettered returns how many entries the group has dead-lettered.
func (g *Group) DeadLettered() int64 { return g.dead }

// ShowsPolicy reports whether XINFO shows the group's policy: only when a
// client set one (or it dead-lettered something under an earlier one),
// so a Redis client sees Redis's replies.
func (g *Group) ShowsPolicy() bool { return !g.policy.IsZero() || g.dead > 0 }
