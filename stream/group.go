package stream

import (
	"fmt"
	"math"
	"slices"

	"github.com/redstream/redstream/radix"
)

// Consumer groups
//
// A group remembers the last ID it delivered, a logical count of the
// entries it has read (for lag), its pending-entries list (PEL: the
// entries delivered and not yet acknowledged) and its consumers, each
// with its own PEL:
//
//	Group ── pel: ID → pending{delivered, count, seq, owner} ──┐
//	  │                                                         │ owner is a
//	  └─ consumers (by name) ── Consumer{seen, active, pel: IDs} ◀┘ consumer handle
//
// Redis makes the group PEL and the consumer PEL share one NACK struct.
// Here the group PEL holds the only copy of an entry's state and a
// consumer's PEL holds just the IDs it owns, which gives the same thing
// (one update, seen from both sides) without a pointer per entry: the
// state is 24 bytes inline in a chunk, the consumer's share 16. An entry
// with owner 0 belongs to nobody: XNACK released it back to the group.

// RefPolicy says what deleting an entry does to the PEL entries that
// still reference it (Redis 8.2's KEEPREF, DELREF and ACKED).
type RefPolicy uint8

// Reference policies.
const (
	KeepRef RefPolicy = iota // delete the entry, keep PEL references (XDEL's way)
	DelRef                   // delete the entry and every PEL reference to it
	Acked                    // delete only entries no group still needs
)

// NackMode is how XNACK changes a released entry's delivery count.
type NackMode uint8

// XNACK modes.
const (
	NackSilent NackMode = iota // one delivery less: this one did not count
	NackFail                   // the count stays
	NackFatal                  // the count becomes the largest possible: never retry
)

// ErrGroupExists means a group of that name already exists (BUSYGROUP).
var ErrGroupExists = fmt.Errorf("stream: consumer group name already exists")

// InvalidEntriesRead is the entries-read of a group whose logical read
// counter is unknown.
const InvalidEntriesRead = -1

// Group is a consumer group of a stream.
type Group struct {
	name        []byte
	lastID      ID    // the last ID delivered to the group
	entriesRead int64 // the logical read counter, or InvalidEntriesRead
	pel         omap[pending]
	consumers   radix.Tree[*Consumer]
	owners      []*Consumer // consumer handle → consumer; [0] stays nil
	free        []uint32    // handles of deleted consumers, for reuse
	released    int         // PEL entries without an owner
	seq         uint32      // the next time-order number
	policy      Policy      // what the group does beyond Redis (policy.go)
	due         dueIndex    // redelivery order, with a redelivering policy (due.go)
	dead        int64       // entries dead-lettered so far (policy.go)
}

// pending is the state of one PEL entry.
type pending struct {
	delivered int64 // ms of the last delivery; 0 once released by XNACK
	count     int64 // deliveries so far
	seq       uint32
	owner     uint32 // the owning consumer's handle; 0: nobody (released)
}

// seq orders PEL entries in time: CLAIM takes released entries first, in
// the order they were released, then the others oldest delivery first.
// Ordering by (delivered, seq) does both, because a released entry has
// delivered 0: seq is taken from a counter whenever delivered changes,
// so entries of the same millisecond keep the order they got it in.

// Consumer is a member of a group.
type Consumer struct {
	name   []byte
	seen   int64 // ms of the last attempted read or claim
	active int64 // ms of the last successful one; -1 if none yet
	pel    omap[struct{}]
	handle uint32
}

// Name returns the consumer's name.
func (c *Consumer) Name() []byte { return c.name }

// SeenTime returns when the consumer last tried to read or claim (ms).
func (c *Consumer) SeenTime() int64 { return c.seen }

// ActiveTime returns when the consumer last read or claimed something
// (ms), or -1 if it never has.
func (c *Consumer) ActiveTime() int64 { return c.active }

// Pending returns the number of entries the consumer owns.
func (c *Consumer) Pending() int { return c.pel.Len() }

// Name returns the group's name.
func (g *Group) Name() []byte { return g.name }

// LastID returns the last ID delivered to the group.
func (g *Group) LastID() ID { return g.lastID }

// EntriesRead returns the logical read counter, or InvalidEntriesRead.
func (g *Group) EntriesRead() int64 { return g.entriesRead }

// Pending returns the number of entries in the group PEL.
func (g *Group) Pending() int { return g.pel.Len() }

// Released returns how many PEL entries have no owner (XNACK'd).
func (g *Group) Released() int { return g.released }

// NumConsumers returns the number of consumers.
func (g *Group) NumConsumers() int { return g.consumers.Len() }

// Consumer returns the consumer called name, or nil.
func (g *Group) Consumer(name []byte) *Consumer {
	c, _ := g.consumers.Get(name)
	return c
}

// EachConsumer calls fn for each consumer in name order until it returns
// false.
func (g *Group) EachConsumer(fn func(*Consumer) bool) {
	for _, c := range g.consumers.All() {
		if !fn(c) {
			return
		}
	}
}

// CreateConsumer adds a consumer called name, seen at now and never
// active, unless one exists; it returns the consumer and whether it was
// created.
func (g *Group) CreateConsumer(name []byte, now int64) (*Consumer, bool) {
	if c := g.Consumer(name); c != nil {
		return c, false
	}
	c := &Consumer{name: append([]byte(nil), name...), seen: now, active: -1}
	if n := len(g.free); n > 0 {
		c.handle = g.free[n-1]
		g.free = g.free[:n-1]
		g.owners[c.handle] = c
	} else {
		if len(g.owners) == 0 {
			g.owners = append(g.owners, nil) // handle 0 means "no owner"
		}
		c.handle = uint32(len(g.owners))
		g.owners = append(g.owners, c)
	}
	g.consumers.Insert(c.name, c)
	return c, true
}

// Seen returns the consumer called name, creating it if needed, and
// records that it tried to read or claim at now (XREADGROUP, XCLAIM and
// XAUTOCLAIM all do this first). created reports a new consumer.
func (g *Group) Seen(name []byte, now int64) (c *Consumer, created bool) {
	c, created = g.CreateConsumer(name, now)
	c.seen = now
	return c, created
}

// DeleteConsumer removes the consumer called name and the entries it
// owns from the group PEL; it returns how many those were, and false if
// there was no such consumer. Released entries stay in the group.
func (g *Group) DeleteConsumer(name []byte) (int, bool) {
	c := g.Consumer(name)
	if c == nil {
		return 0, false
	}
	n := c.pel.Len()
	var ids []ID
	c.pel.Ascend(MinID, func(id ID, _ struct{}) bool { ids = append(ids, id); return true })
	for _, id := range ids {
		g.dropPending(id)
	}
	g.consumers.Delete(c.name)
	g.owners[c.handle] = nil
	g.free = append(g.free, c.handle)
	return n, true
}

// owner returns the consumer that owns p, or nil.
func (g *Group) owner(p pending) *Consumer {
	if p.owner == 0 {
		return nil
	}
	return g.owners[p.owner]
}

// nextSeq returns the next time-order number. When the 32-bit counter
// runs out (after four billion deliveries) the PEL is renumbered in its
// current order, so the order is kept.
func (g *Group) nextSeq() uint32 {
	if g.seq == math.MaxUint32 {
		g.renumber()
	}
	g.seq++
	return g.seq
}

func (g *Group) renumber() {
	type item struct {
		id ID
		p  pending
	}
	var all []item
	g.pel.Ascend(MinID, func(id ID, p pending) bool { all = append(all, item{id, p}); return true })
	slices.SortFunc(all, func(a, b item) int { return compareTime(a.p, b.p) })
	for i := range all {
		all[i].p.seq = uint32(i + 1)
		g.pel.Update(all[i].id, all[i].p)
	}
	g.seq = uint32(len(all))
	g.rebuildDue()
}

// compareTime orders PEL entries as CLAIM takes them.
func compareTime(a, b pending) int {
	switch {
	case a.delivered != b.delivered:
		if a.delivered < b.delivered {
			return -1
		}
		return 1
	case a.seq < b.seq:
		return -1
	case a.seq > b.seq:
		return 1
	}
	return 0
}

// PendingEntry is one entry of a PEL as callers see it.
type PendingEntry struct {
	ID            ID
	DeliveryTime  int64     // ms of the last delivery; 0 for a released entry
	DeliveryCount int64     // deliveries so far
	Consumer      *Consumer // the owner; nil for an entry released by XNACK
}

func (g *Group) entry(id ID, p pending) PendingEntry {
	return PendingEntry{ID: id, DeliveryTime: p.delivered, DeliveryCount: p.count, Consumer: g.owner(p)}
}

// PendingEntry returns the PEL entry for id.
func (g *Group) PendingEntry(id ID) (PendingEntry, bool) {
	p, ok := g.pel.Get(id)
	if !ok {
		return PendingEntry{}, false
	}
	return g.entry(id, p), true
}

// FirstPending and LastPending return the smallest and largest pending
// IDs (XPENDING's summary).
func (g *Group) FirstPending() (ID, bool) { return g.pel.Min() }

// LastPending returns the largest pending ID.
func (g *Group) LastPending() (ID, bool) { return g.pel.Max() }

// EachPending calls fn with the PEL entries whose IDs lie in [from, to],
// in ID order, until fn returns false: the group's whole PEL, or with c
// the entries c owns. fn must not change the group.
func (g *Group) EachPending(c *Consumer, from, to ID, fn func(PendingEntry) bool) {
	if c == nil {
		g.pel.Ascend(from, func(id ID, p pending) bool {
			return id.Compare(to) <= 0 && fn(g.entry(id, p))
		})
		return
	}
	c.pel.Ascend(from, func(id ID, _ struct{}) bool {
		if id.Compare(to) > 0 {
			return false
		}
		p, _ := g.pel.Get(id)
		return fn(g.entry(id, p))
	})
}

// Ack removes id from the PEL (and its owner's) and reports whether it
// was pending.
func (g *Group) Ack(id ID) bool {
	p, ok := g.dropPending(id)
	if !ok {
		return false
	}
	if c := g.owner(p); c != nil {
		c.pel.Delete(id)
	} else {
		g.released--
	}
	return true
}

// deliver records a delivery of id to c at now: a new PEL entry, or an
// existing one (the group's last ID was moved back) handed to c, with a
// count of 1 either way.
func (g *Group) deliver(c *Consumer, id ID, now int64) {
	p := pending{delivered: now, count: 1, seq: g.nextSeq(), owner: c.handle}
	if old, replaced := g.putPending(id, p); replaced {
		g.disown(id, old)
	}
	c.pel.Set(id, struct{}{})
}

// disown takes id out of the PEL of the consumer owning p, or out of the
// released count.
func (g *Group) disown(id ID, p pending) {
	if o := g.owner(p); o != nil {
		o.pel.Delete(id)
	} else {
		g.released--
	}
}

// Redeliver records that c read id again from its own history (XREADGROUP
// with an explicit ID): one more delivery, now.
func (g *Group) Redeliver(id ID, now int64) {
	old, ok := g.pel.Get(id)
	if !ok {
		return
	}
	p := old
	p.delivered, p.count, p.seq = now, p.count+1, g.nextSeq()
	g.updatePending(id, old, p)
}

// Claim hands the pending entry id to c (XCLAIM, XAUTOCLAIM, XREADGROUP
// CLAIM): it is delivered at delivered, its count set to count when that
// is >= 0, else incremented when incr is set. It returns the count before
// the claim, and false when id is not pending.
func (g *Group) Claim(c *Consumer, id ID, delivered, count int64, incr bool, now int64) (int64, bool) {
	old, ok := g.pel.Get(id)
	if !ok {
		return 0, false
	}
	p, prev := old, old.count
	if p.owner != c.handle {
		g.disown(id, p)
		c.pel.Set(id, struct{}{})
		p.owner = c.handle
	}
	p.delivered, p.seq = delivered, g.nextSeq()
	switch {
	case count >= 0:
		p.count = count
	case incr:
		p.count++
	}
	g.updatePending(id, old, p)
	c.active = now
	return prev, true
}

// Force adds id to the PEL without an owner and with a count of 1, as
// XCLAIM FORCE does before claiming it; false if it was already pending.
func (g *Group) Force(id ID, now int64) bool {
	if g.pel.Has(id) {
		return false
	}
	g.putPending(id, pending{delivered: now, count: 1, seq: g.nextSeq()})
	g.released++
	return true
}

// Release gives id back to the group (XNACK): it loses its owner, its
// delivery time becomes 0, and it goes to the end of the released
// entries, the first CLAIM takes. Its count changes as mode says, or
// becomes retry when that is >= 0. It reports whether id was pending.
func (g *Group) Release(id ID, mode NackMode, retry int64) bool {
	old, ok := g.pel.Get(id)
	if !ok {
		return false
	}
	if o := g.owner(old); o != nil {
		o.pel.Delete(id)
		g.released++
	}
	p := old
	p.owner, p.delivered, p.seq = 0, 0, g.nextSeq()
	p.count = nackCount(p.count, mode, retry)
	g.updatePending(id, old, p)
	return true
}

// ForceRelease adds id to the PEL as a released entry (XNACK FORCE) whose
// count is 0, the largest for FATAL, or retry when that is >= 0.
func (g *Group) ForceRelease(id ID, mode NackMode, retry int64) {
	g.putPending(id, pending{count: nackCount(0, mode, retry), seq: g.nextSeq()})
	g.released++
}

// nackCount is the delivery count XNACK leaves.
func nackCount(count int64, mode NackMode, retry int64) int64 {
	switch {
	case retry >= 0:
		return retry
	case mode == NackFatal:
		return math.MaxInt64
	case mode == NackSilent:
		return max(count-1, 0)
	}
	return count
}

// Claimable returns the IDs CLAIM would take at now with minIdle: the
// released entries in the order they were released, then the entries
// idle for at least minIdle, longest idle first; at most limit (0: all).
func (g *Group) Claimable(now, minIdle int64, limit int) []ID {
	type cand struct {
		id ID
		p  pending
	}
	var out []cand
	g.pel.Ascend(MinID, func(id ID, p pending) bool {
		if p.owner == 0 || now-p.delivered >= minIdle {
			out = append(out, cand{id, p})
		}
		return true
	})
	slices.SortFunc(out, func(a, b cand) int { return compareTime(a.p, b.p) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	ids := make([]ID, len(out))
	for i, c := range out {
		ids[i] = c.id
	}
	return ids
}

// NextClaimable returns the first time after now (ms) at which an owned
// entry that is not yet idle for minIdle becomes so, for a blocked
// XREADGROUP CLAIM to wake then; ok is false when there is none.
// Entries claimable already are left out: they could not serve the
// reader (their stream entries are gone), and waking for them would spin.
func (g *Group) NextClaimable(now, minIdle int64) (at int64, ok bool) {
	at = math.MaxInt64
	g.pel.Ascend(MinID, func(_ ID, p pending) bool {
		if p.owner == 0 || minIdle > math.MaxInt64-p.delivered {
			return true // released: claimable now; or never, as far as int64 ms go
		}
		if t := p.delivered + minIdle; t > now && t < at {
			at, ok = t, true
		}
		return true
	})
	return at, ok
}

func errorf(format string, args ...any) error {
	return fmt.Errorf("stream: "+format, args...)
}

// copyWith copies the group's header and consumers around the PELs given,
// for freeze and clone. Names are never changed in place, so they are
// shared.
func (g *Group) copyWith(pel omap[pending], consumerPEL func(*Consumer) omap[struct{}]) *Group {
	f := &Group{name: g.name, lastID: g.lastID, entriesRead: g.entriesRead, pel: pel,
		released: g.released, seq: g.seq, free: slices.Clone(g.free), policy: g.policy.clone(), dead: g.dead}
	f.owners = make([]*Consumer, len(g.owners))
	for _, c := range g.consumers.All() {
		fc := &Consumer{name: c.name, seen: c.seen, active: c.active, pel: consumerPEL(c), handle: c.handle}
		f.consumers.Insert(fc.name, fc)
		f.owners[fc.handle] = fc
	}
	return f
}

// freeze returns a read-only view of the group for a snapshot; it costs
// the consumers and the PEL chunk indexes (see omap.freeze).
func (g *Group) freeze() *Group {
	return g.copyWith(g.pel.freeze(), func(c *Consumer) omap[struct{}] { return c.pel.freeze() })
}

// clone returns a deep copy of the group (COPY).
func (g *Group) clone() *Group {
	c := g.copyWith(g.pel.clone(), func(c *Consumer) omap[struct{}] { return c.pel.clone() })
	c.rebuildDue()
	return c
}

// memory estimates the bytes the group holds.
func (g *Group) memory() int64 {
	const perConsumer = 64 + 48 + 48 // struct, name tree slot, handle slot
	n := int64(len(g.name)) + 160 + g.pel.bytes(24) + g.dueBytes()
	for _, c := range g.owners { // by handle: a slice walk, no iterator to allocate
		if c != nil {
			n += perConsumer + int64(len(c.name)) + c.pel.bytes(0)
		}
	}
	return n
}

// check verifies the group's invariants: the PEL structures are sound;
// every owned entry is in its owner's PEL and nowhere else; the group PEL
// is exactly the union of the consumer PELs and the released entries; the
// handles and counts agree.
func (g *Group) check() error {
	if err := g.pel.check(); err != nil {
		return fmt.Errorf("group %q: %w", g.name, err)
	}
	owned, released := 0, 0
	var err error
	g.pel.Ascend(MinID, func(id ID, p pending) bool {
		switch c := g.owner(p); {
		case p.owner == 0:
			released++
		case int(p.owner) >= len(g.owners) || c == nil:
			err = errorf("group %q: entry %s owned by unknown handle %d", g.name, id, p.owner)
		case !c.pel.Has(id):
			err = errorf("group %q: entry %s owned by %q, missing from its PEL", g.name, id, c.name)
		default:
			owned++
		}
		if p.seq > g.seq {
			err = errorf("group %q: entry %s has order %d past the counter %d", g.name, id, p.seq, g.seq)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	if released != g.released {
		return errorf("group %q: %d released entries, counts %d", g.name, released, g.released)
	}
	inConsumers := 0
	for name, c := range g.consumers.All() {
		if string(name) != string(c.name) || int(c.handle) >= len(g.owners) || g.owners[c.handle] != c {
			return errorf("group %q: consumer %q badly indexed", g.name, c.name)
		}
		if err := c.pel.check(); err != nil {
			return fmt.Errorf("group %q consumer %q: %w", g.name, c.name, err)
		}
		c.pel.Ascend(MinID, func(id ID, _ struct{}) bool {
			if p, ok := g.pel.Get(id); !ok || p.owner != c.handle {
				err = errorf("group %q: consumer %q holds %s, which the group gives to another", g.name, c.name, id)
			}
			return err == nil
		})
		if err != nil {
			return err
		}
		inConsumers += c.pel.Len()
	}
	if inConsumers != owned {
		return errorf("group %q: consumers hold %d entries, the group says %d", g.name, inConsumers, owned)
	}
	return g.checkDue()
}
