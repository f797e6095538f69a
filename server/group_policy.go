package server

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/redstream/redstream/resp"
	"github.com/redstream/redstream/stream"
)

// A consumer group's policy, beyond Redis (issue 15): XGROUP SETPOLICY
// and the same options on XGROUP CREATE, XINFO's view of it, and
// dead-lettering — what XCLAIM, XAUTOCLAIM, XREADGROUP (CLAIM, or a
// consumer's own history) and XNACK FATAL do with an entry instead of
// delivering it past the group's MAXDELIVER.
//
// A dead letter is moved in the command that caused it: the dead-letter
// stream's new entry and the PEL entry's removal are changes of that one
// command, so its one log record carries both, and replaying it (at the
// record's time, which gives the dead-letter entry's "*" ID) does both
// again. Nothing can see one without the other, across a crash or not.
//
// The dead-letter entry is
//
//	stream <key> id <original id> group <group> consumer <last owner, "" if none>
//	deliveries <count> reason <reason>  <the original field-value pairs...>
//
// — the metadata first, under fixed names, so a reader finds it without
// knowing the original fields; the original pairs after it, as they
// were. An entry already deleted from the stream (XDEL, a trim) is
// dead-lettered with the metadata alone: that it failed is still news.
//
// A dead-letter key that holds another type is refused by SETPOLICY
// (WRONGTYPE). If it comes to hold one later (SET, RENAME), or the
// dead-letter stream can take no more entries, the entry is not moved
// and not delivered either: it stays pending as it was, to be moved by a
// later attempt once the key is fixed, and INFO's
// stream_dead_letter_failures counts the refusal. Dropping it, or
// delivering it past the cap, would break the promise the policy makes.

// Reasons written in a dead-letter entry.
const (
	reasonMaxDeliver = "maxdeliver" // one more delivery would pass MAXDELIVER
	reasonFatal      = "fatal"      // XNACK ... FATAL
)

// Error replies of the policy options.
const (
	errPolicyNotInt   = "ERR %s must be a non-negative integer"
	errPolicyBackoff  = "ERR BACKOFF steps must be positive integers"
	errPolicySelfDead = "ERR DEADLETTER key must be another key than the stream's"
)

// policyArgs is a parsed set of policy options: each one given replaces
// that field of the group's policy.
type policyArgs struct {
	p                                 stream.Policy
	maxSet, deadSet, waitSet, backSet bool
	n                                 int // arguments consumed
}

// parseOption parses the policy option at argv[i], if it is one with its
// value; it returns the index of the value, whether it was a policy
// option, and an error text.
func (a *policyArgs) parseOption(x *Ctx, i int) (int, bool, string) {
	if i+1 >= len(x.argv) {
		return i, false, ""
	}
	opt, val := x.argv[i], x.argv[i+1]
	var msg string
	switch {
	case eqFold(opt, "maxdeliver"):
		a.p.MaxDeliver, msg = policyInt("MAXDELIVER", val)
		a.maxSet = true
	case eqFold(opt, "ackwait"):
		a.p.AckWait, msg = policyInt("ACKWAIT", val)
		a.waitSet = true
	case eqFold(opt, "deadletter"):
		a.p.DeadLetter = nil
		if len(val) > 0 {
			a.p.DeadLetter = val
		}
		a.deadSet = true
	case eqFold(opt, "backoff"):
		a.p.Backoff, msg = parseBackoff(val)
		a.backSet = true
	default:
		return i, false, ""
	}
	a.n += 2
	return i + 1, true, msg
}

func policyInt(name string, val []byte) (int64, string) {
	n, ok := resp.ParseInt(val)
	if !ok || n < 0 {
		return 0, fmt.Sprintf(errPolicyNotInt, name)
	}
	return n, ""
}

// parseBackoff parses "ms[,ms...]"; "" clears the schedule.
func parseBackoff(val []byte) ([]int64, string) {
	if len(val) == 0 {
		return nil, ""
	}
	var steps []int64
	for part := range bytes.SplitSeq(val, []byte(",")) {
		n, ok := resp.ParseInt(part)
		if !ok || n <= 0 {
			return nil, errPolicyBackoff
		}
		steps = append(steps, n)
	}
	return steps, ""
}

// apply returns old with the fields the options gave replaced.
func (a *policyArgs) apply(old stream.Policy) stream.Policy {
	if a.maxSet {
		old.MaxDeliver = a.p.MaxDeliver
	}
	if a.deadSet {
		old.DeadLetter = a.p.DeadLetter
	}
	if a.waitSet {
		old.AckWait = a.p.AckWait
	}
	if a.backSet {
		old.Backoff = a.p.Backoff
	}
	return old
}

// checkDeadLetterKey answers an error, and reports false, when the
// options name a dead-letter key that cannot be one: the stream itself
// (its entries would be appended to the stream they fail in), or a key
// holding another type.
func (a *policyArgs) checkDeadLetterKey(x *Ctx, key []byte) bool {
	dlq := a.p.DeadLetter
	if dlq == nil {
		return true
	}
	if bytes.Equal(dlq, key) {
		x.error(errPolicySelfDead)
		return false
	}
	if x.s.cluster != nil && KeySlot(dlq) != KeySlot(key) {
		// Dead letters are written by the apply of the stream's group:
		// the key must be in the stream's slot, as any multi-key write's.
		x.error(errCrossSlot)
		return false
	}
	if o := x.lookup(dlq); o != nil {
		if _, isStream := o.value.(*stream.Stream); !isStream {
			x.error(resp.ErrWrongType)
			return false
		}
	}
	return true
}

// xgroupSetPolicyCommand serves XGROUP SETPOLICY key group [MAXDELIVER n]
// [DEADLETTER key] [ACKWAIT ms] [BACKOFF ms[,ms...]]: the options are
// parsed first, then the key and group must exist, as for SETID.
func xgroupSetPolicyCommand(x *Ctx) {
	var a policyArgs
	for i := 4; i < len(x.argv); i++ {
		var isPolicy bool
		var msg string
		if i, isPolicy, msg = a.parseOption(x, i); !isPolicy {
			x.error(resp.SubcommandSyntax("xgroup", x.argv[1]))
			return
		} else if msg != "" {
			x.error(msg)
			return
		}
	}
	_, g, ok := xgroupTarget(x, false, true)
	if !ok || !a.checkDeadLetterKey(x, x.argv[2]) {
		return
	}
	g.SetPolicy(a.apply(*g.Policy()))
	x.modified(x.argv[2])
	dueTimesChanged(x, x.argv[2], g) // a new wait may make entries due now
	x.w.OK()
}

// writePolicyInfo writes the policy fields XINFO GROUPS and XINFO STREAM
// FULL add for a group that has a policy (see stream.Group.ShowsPolicy);
// nothing for one that does not.
func writePolicyInfo(x *Ctx, g *stream.Group) {
	if !g.ShowsPolicy() {
		return
	}
	p := g.Policy()
	x.w.BulkString("max-deliver")
	x.w.Int(p.MaxDeliver)
	x.w.BulkString("dead-letter")
	if p.DeadLetter != nil {
		x.w.Bulk(p.DeadLetter)
	} else {
		x.w.Null()
	}
	x.w.BulkString("ack-wait")
	x.w.Int(p.AckWait)
	x.w.BulkString("backoff")
	x.w.Array(len(p.Backoff))
	for _, ms := range p.Backoff {
		x.w.Int(ms)
	}
	x.w.BulkString("dead-lettered")
	x.w.Int(g.DeadLettered())
}

// policyInfoFields is how many fields writePolicyInfo adds for g.
func policyInfoFields(g *stream.Group) int {
	if g.ShowsPolicy() {
		return 5
	}
	return 0
}

// deadLetter moves the pending entry id of group g of the stream s at key
// to the group's dead-letter stream, or, without one, only drops it from
// the PEL; either way the group counts it. See the top of this file for
// the entry it appends and what happens when it cannot.
func deadLetter(x *Ctx, key []byte, s *stream.Stream, g *stream.Group, id stream.ID, reason string) {
	pe, ok := g.PendingEntry(id)
	if !ok {
		return
	}
	// A RENAME may have made the stream its own dead-letter key: refused,
	// as SETPOLICY refuses it.
	if dlq := g.Policy().DeadLetter; dlq != nil &&
		(bytes.Equal(dlq, key) || !appendDeadLetter(x, dlq, deadLetterFields(key, s, g, pe, reason))) {
		x.s.stats.deadLetterFailures++
		return
	}
	g.DeadLetter(id)
	x.s.stats.deadLetters++
	x.modified(key)
}

// deadLetterFields is the dead-letter entry for pe: the metadata, then
// the original entry's pairs if it is still in the stream.
func deadLetterFields(key []byte, s *stream.Stream, g *stream.Group, pe stream.PendingEntry, reason string) [][]byte {
	var owner []byte
	if pe.Consumer != nil {
		owner = pe.Consumer.Name()
	}
	fv := [][]byte{
		[]byte("stream"), key,
		[]byte("id"), pe.ID.AppendText(nil),
		[]byte("group"), g.Name(),
		[]byte("consumer"), owner,
		[]byte("deliveries"), strconv.AppendInt(nil, pe.DeliveryCount, 10),
		[]byte("reason"), []byte(reason),
	}
	f := s.Finder()
	defer f.Close()
	if it, ok := f.Find(pe.ID); ok {
		for range it.NumFields() {
			field, value := it.Pair()
			fv = append(fv, field, value)
		}
	}
	return fv
}

// appendDeadLetter adds fv to the stream at dlq, created if missing, with
// the ID "*" gives at the record's time, and wakes its readers. It
// reports false, changing nothing, when dlq holds another type or its
// stream can take no more entries.
func appendDeadLetter(x *Ctx, dlq []byte, fv [][]byte) bool {
	o := x.lookup(dlq)
	d := stream.New()
	if o != nil {
		var isStream bool
		if d, isStream = o.value.(*stream.Stream); !isStream {
			return false
		}
	}
	id, err := d.NextID(uint64(max(x.now, 0)))
	if err == nil {
		err = d.Add(id, fv, x.streamLimits())
	}
	if err != nil {
		return false
	}
	if o == nil {
		x.setKey(dlq, &Object{value: d})
	} else {
		x.modified(dlq)
		x.signalReady(dlq)
	}
	return true
}

// capDelivery dead-letters the pending entry pe instead of delivering it
// again when one more delivery would pass the group's MAXDELIVER, and
// reports whether it did (or tried: a dead-letter key of another type
// keeps the entry pending, undelivered).
func capDelivery(x *Ctx, key []byte, s *stream.Stream, g *stream.Group, pe stream.PendingEntry) bool {
	if !g.Policy().Exhausted(pe.DeliveryCount) {
		return false
	}
	deadLetter(x, key, s, g, pe.ID, reasonMaxDeliver)
	return true
}
