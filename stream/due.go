package stream

import (
	"math"
	"slices"
)

// Redelivery index
//
// A group whose policy redelivers (AckWait or Backoff) keeps, beside its
// PEL, the pending entries ordered by the time they become due again,
// under a key of (due ms, order number):
//
//	queue (sorted, appended at its end)        out of order (omap)
//	  …100-7 → 5-0   …100-8 → 6-0 (stale)        …090-12 → 2-0
//	  …250-9 → 7-0   …                           (a claim back-dated)
//
// An entry's due time is its last delivery plus the policy's wait for its
// delivery count; a released entry (XNACK) is due at once (time 0). The
// order number, unique in the group, makes every key unique and keeps
// entries of one millisecond in the order they got them. Entries XNACK
// FATAL gave up on (the largest count) are never due.
//
// Almost every entry enters the index with a key above every other, since
// deliveries happen at a clock that never goes back and draw increasing
// order numbers: those keys go on the end of a plain queue, which costs
// an append. Acknowledgements mostly take the front of the queue; one
// from its middle only makes its item stale (an item is live while its
// PEL entry still has that key), and stale items are dropped when they
// reach the front, or all at once when they outnumber the live ones. The
// rare key below the queue's end (XCLAIM with IDLE or TIME) goes into an
// omap. So the drain of a group with a policy costs an append and a pop
// per entry, and the next entry to redeliver, or the next due time, is a
// look at both fronts.
//
// Every change of a PEL entry goes through putPending, updatePending or
// dropPending, which keep the index in step; SetPolicy and anything that
// renumbers the PEL rebuild it. Groups without a redelivery policy keep
// no index and pay nothing. Snapshots leave it out (they are never asked
// what is due), and so does State: FromState rebuilds it.

// dueIndex is a group's redelivery index.
type dueIndex struct {
	queue []dueItem // sorted by key, from head
	head  int
	live  int      // live items in the queue
	late  omap[ID] // keys that came below the queue's end: key → entry ID
}

type dueItem struct{ key, id ID }

// dueKey returns p's key in the due index, and false when p is never due.
func (g *Group) dueKey(p pending) (ID, bool) {
	if !g.policy.Redelivers() || p.count == math.MaxInt64 {
		return ID{}, false
	}
	at := int64(0)
	if p.owner != 0 {
		at = max(p.delivered, 0)
		if w := g.policy.Wait(p.count); at > math.MaxInt64-w {
			at = math.MaxInt64
		} else {
			at += w
		}
	}
	return ID{Ms: uint64(at), Seq: uint64(p.seq)}, true
}

// putPending stores p for id in the PEL, returning the entry it replaced.
func (g *Group) putPending(id ID, p pending) (old pending, replaced bool) {
	old, replaced = g.pel.Put(id, p)
	if replaced {
		g.unindex(old)
	}
	g.index(id, p)
	return old, replaced
}

// updatePending changes the pending entry id from old to p.
func (g *Group) updatePending(id ID, old, p pending) {
	g.pel.Update(id, p)
	g.unindex(old)
	g.index(id, p)
}

// dropPending removes id from the PEL, returning its entry.
func (g *Group) dropPending(id ID) (pending, bool) {
	p, ok := g.pel.Delete(id)
	if ok {
		g.unindex(p)
	}
	return p, ok
}

// index adds id's key; the PEL already holds p.
func (g *Group) index(id ID, p pending) {
	k, ok := g.dueKey(p)
	if !ok {
		return
	}
	d := &g.due
	if n := len(d.queue); n == d.head || d.queue[n-1].key.Compare(k) < 0 {
		d.queue = append(d.queue, dueItem{k, id})
		d.live++
		return
	}
	d.late.Set(k, id)
}

// unindex removes p's key; the PEL no longer holds p.
func (g *Group) unindex(p pending) {
	k, ok := g.dueKey(p)
	if !ok {
		return
	}
	d := &g.due
	if d.head < len(d.queue) && d.queue[d.head].key == k {
		d.head++
		d.live--
		g.dropStale()
		return
	}
	if _, found := d.late.Delete(k); found {
		return
	}
	d.live-- // in the middle of the queue: stale from now on
	if stale := len(d.queue) - d.head - d.live; stale > 64 && stale > d.live {
		g.compactQueue()
	}
}

// liveItem reports whether the PEL entry of it still has its key.
func (g *Group) liveItem(it dueItem) bool {
	p, ok := g.pel.Get(it.id)
	if !ok {
		return false
	}
	k, due := g.dueKey(p)
	return due && k == it.key
}

// dropStale pops stale items off the front of the queue, and gives the
// queue's room back once it is empty or mostly consumed.
func (g *Group) dropStale() {
	d := &g.due
	for d.head < len(d.queue) && !g.liveItem(d.queue[d.head]) {
		d.head++
	}
	switch {
	case d.head == len(d.queue):
		d.queue, d.head = d.queue[:0], 0 // keep the array: the next delivery appends to it
	case d.head > 1024 && d.head > len(d.queue)/2:
		d.queue = append(d.queue[:0], d.queue[d.head:]...)
		d.head = 0
	}
}

// compactQueue drops every stale item.
func (g *Group) compactQueue() {
	d := &g.due
	live := d.queue[:0]
	for _, it := range d.queue[d.head:] {
		if g.liveItem(it) {
			live = append(live, it)
		}
	}
	clear(d.queue[len(live):])
	d.queue, d.head, d.live = live, 0, len(live)
}

// rebuildDue builds the due index from the PEL (after a policy change, a
// load or a renumbering): every key, sorted, in the queue.
func (g *Group) rebuildDue() {
	g.due = dueIndex{}
	if !g.policy.Redelivers() {
		return
	}
	g.pel.Ascend(MinID, func(id ID, p pending) bool {
		if k, ok := g.dueKey(p); ok {
			g.due.queue = append(g.due.queue, dueItem{k, id})
		}
		return true
	})
	slices.SortFunc(g.due.queue, func(a, b dueItem) int { return a.key.Compare(b.key) })
	g.due.live = len(g.due.queue)
}

// eachDue calls fn with the live items of the index in key order, from
// the first key >= from, until fn returns false.
func (g *Group) eachDue(from ID, fn func(dueItem) bool) {
	d := &g.due
	q := d.queue[d.head:]
	i, _ := slices.BinarySearchFunc(q, from, func(it dueItem, k ID) int { return it.key.Compare(k) })
	var late []dueItem // the omap's items are few: collect, then merge
	d.late.Ascend(from, func(k, id ID) bool {
		late = append(late, dueItem{k, id})
		return len(late) < 64
	})
	for {
		for i < len(q) && !g.liveItem(q[i]) {
			i++
		}
		var next dueItem
		switch {
		case i < len(q) && (len(late) == 0 || q[i].key.Compare(late[0].key) < 0):
			next = q[i]
			i++
		case len(late) > 0:
			next, late = late[0], late[1:]
			if len(late) == 0 {
				d.late.Ascend(next.key, func(k, id ID) bool {
					if k != next.key {
						late = append(late, dueItem{k, id})
					}
					return len(late) < 64
				})
			}
		default:
			return
		}
		if !fn(next) {
			return
		}
	}
}

// Due returns the pending entries due for redelivery at now, the longest
// due first (released entries before the rest), at most limit (0: all).
func (g *Group) Due(now int64, limit int) []ID {
	var ids []ID
	g.eachDue(MinID, func(it dueItem) bool {
		if int64(it.key.Ms) > now || (limit > 0 && len(ids) == limit) {
			return false
		}
		ids = append(ids, it.id)
		return true
	})
	return ids
}

// HasDue reports whether an entry is due for redelivery at now.
func (g *Group) HasDue(now int64) bool {
	due := false
	g.eachDue(MinID, func(it dueItem) bool {
		due = int64(it.key.Ms) <= now
		return false
	})
	return due
}

// NextDue returns the first due time after now (ms), for a blocked
// reader to wake then; false when no entry will become due.
func (g *Group) NextDue(now int64) (at int64, found bool) {
	g.eachDue(ID{Ms: uint64(max(now, 0)) + 1}, func(it dueItem) bool {
		at, found = int64(it.key.Ms), true
		return false
	})
	return at, found
}

// DueTime returns when the pending entry id is due for redelivery (ms),
// and false when it never is (no redelivery policy, XNACK FATAL, or not
// pending).
func (g *Group) DueTime(id ID) (int64, bool) {
	p, ok := g.pel.Get(id)
	if !ok {
		return 0, false
	}
	k, ok := g.dueKey(p)
	return int64(k.Ms), ok
}

// dueBytes estimates the index's memory.
func (g *Group) dueBytes() int64 {
	return int64(cap(g.due.queue))*32 + g.due.late.bytes(16)
}

// checkDue verifies that the live items of the index are exactly the PEL
// entries that are ever due, each under its key, the queue sorted and its
// live count right. A snapshot's group keeps no index.
func (g *Group) checkDue() error {
	if g.pel.epoch == frozenEpoch {
		return nil
	}
	d := &g.due
	if err := d.late.check(); err != nil {
		return errorf("group %q due index: %w", g.name, err)
	}
	live := 0
	for i, it := range d.queue[d.head:] {
		if i > 0 && d.queue[d.head+i-1].key.Compare(it.key) >= 0 {
			return errorf("group %q: due queue out of order at %s", g.name, it.key)
		}
		if g.liveItem(it) {
			live++
		}
	}
	if live != d.live {
		return errorf("group %q: due queue holds %d live items, counts %d", g.name, live, d.live)
	}
	want := 0
	var err error
	g.late(func(k, id ID) {
		if err == nil && !g.liveItem(dueItem{k, id}) {
			err = errorf("group %q: stale key %s in the due index", g.name, k)
		}
	})
	g.pel.Ascend(MinID, func(id ID, p pending) bool {
		if _, ok := g.dueKey(p); ok {
			want++
		}
		return true
	})
	if err == nil && live+d.late.Len() != want {
		err = errorf("group %q: due index holds %d entries, %d are ever due", g.name, live+d.late.Len(), want)
	}
	return err
}

func (g *Group) late(fn func(k, id ID)) {
	g.due.late.Ascend(MinID, func(k, id ID) bool { fn(k, id); return true })
}
