package server

import (
	"github.com/redstream/redstream/stream"
)

// Server-driven redelivery (a group policy's ACKWAIT and BACKOFF, issue
// 15). Redis leaves a crashed consumer's entries pending until some
// client claims them, choosing a min-idle time; here the group's policy
// says when an unacknowledged entry is due again, and XREADGROUP ">"
// hands due entries to the consumer asking before any new entry, as
// CLAIM would, but in the plain reply shape (a client that knows only
// Redis's commands reads them like new entries) and with the delivery
// count raised. Everything is decided at the record's time, so a replayed
// XREADGROUP redelivers exactly what the live one did.
//
// Waiting readers need no polling: a blocked XREADGROUP's timer (the one
// CLAIM uses, group_block.go) is set to the group's next due time, an
// O(log n) lookup in the group's due index (stream/due.go), set when it
// blocks and again whenever a write to the key re-runs it. A reader that
// blocks is the first served by new entries, so only commands that move
// due times earlier need to signal the key: dueTimesChanged.

// redelivers reports whether st's group hands out due entries on ">":
// its policy redelivers and the reader did not ask for CLAIM (which
// chooses its own idle time).
func redelivers(a *xrgArgs, st *xrgStream) bool {
	return !a.claim && !st.history && st.g.Policy().Redelivers()
}

// serveDue writes the entries due again, longest due first, up to COUNT
// and the budget, and hands each to c with one delivery more. An entry
// deleted from the stream leaves the PEL (nothing is left to deliver, as
// XCLAIM decides); one whose deliveries reached the policy's MAXDELIVER
// goes to the dead-letter stream instead (capDelivery). It returns how
// many entries it wrote.
//
// With COUNT it looks at the due entries a batch at a time, so a read of
// ten does not list a hundred thousand due after an outage. Every entry
// looked at leaves the due list (redelivered, so due again later; gone;
// dead-lettered) except one whose dead-letter key refused it: those stay
// at the front of the list, and skip counts them.
func serveDue(x *Ctx, a *xrgArgs, st *xrgStream, c *stream.Consumer, budget *xreadBudget) int {
	if !st.due {
		return 0
	}
	f := st.s.Finder()
	defer f.Close()
	n, skip := 0, 0
	for {
		want := 0 // all
		if a.count > 0 {
			want = skip + a.count - n
		}
		batch := st.g.Due(x.now, want)
		if len(batch) <= skip {
			return n
		}
		for _, id := range batch[skip:] {
			pe, _ := st.g.PendingEntry(id)
			it, live := f.Find(id)
			switch {
			case !live:
				st.g.Ack(id)
			case capDelivery(x, st.key, st.s, st.g, pe):
				if _, still := st.g.PendingEntry(id); still {
					skip++ // refused by the dead-letter key: still due
				}
			default:
				if budget.refuse(budget.admits(it)) {
					return n
				}
				st.g.Claim(c, id, x.now, -1, true, x.now)
				writeEntry(x.w, it)
				x.s.stats.redelivered++ // on every apply, replay too: as the dead-letter and release counts
				n++
			}
			x.modified(st.key)
		}
		if want == 0 || len(batch) < want || n >= a.count {
			return n
		}
	}
}

// dueTimesChanged signals key after a command may have made an entry of
// g due sooner than the blocked readers' timers say (XCLAIM with IDLE or
// TIME back-dates deliveries; SETPOLICY may shorten the waits; XNACK
// signals by itself): their re-run serves it, or sets the timer again.
func dueTimesChanged(x *Ctx, key []byte, g *stream.Group) {
	if g.Policy().Redelivers() {
		x.signalReady(key)
	}
}
