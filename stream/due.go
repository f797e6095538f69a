package stream

import "math"

// Redelivery index
//
// A group whose policy redelivers (AckWait or Backoff) keeps, beside its
// PEL, the pending entries ordered by the time they become due again:
//
//	due index (omap, key = due ms | order number)      group PEL
//	  1700000000100-7  →  5-0   ──────────────────▶   5-0  delivered …100-… count 1
//	  1700000000250-9  →  2-0                          2-0  …
//
// An entry's due time is its last delivery plus the policy's wait for its
// delivery count; a released entry (XNACK) is due at once (time 0). The
// order number, unique in the group, makes every key unique and keeps
// entries of one millisecond in the order they got it. Entries XNACK
// FATAL gave up on (the largest count) are never due. So the next entry
// to redeliver, and the time the next one will be due, are an O(log n)
// lookup, not a walk of the PEL: that is what lets XREADGROUP ">" hand
// out due entries first at the price of a lookup, and a blocked reader
// sleep until exactly the next due time.
//
// Every change of a PEL entry goes through putPending, updatePending or
// dropPending, which keep the index in step; SetPolicy and anything that
// renumbers the PEL rebuild it. Groups without a redelivery policy keep
// no index and pay nothing. A snapshot freezes it with the PEL (a copy of
// its chunk index); State leaves it out, since it is derived: FromState
// rebuilds it through SetPolicy.

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

func (g *Group) index(id ID, p pending) {
	if k, ok := g.dueKey(p); ok {
		g.due.Set(k, id)
	}
}

func (g *Group) unindex(p pending) {
	if k, ok := g.dueKey(p); ok {
		g.due.Delete(k)
	}
}

// rebuildDue builds the due index from the PEL (after a policy change or
// a renumbering).
func (g *Group) rebuildDue() {
	g.due = omap[ID]{}
	if !g.policy.Redelivers() {
		return
	}
	g.pel.Ascend(MinID, func(id ID, p pending) bool {
		g.index(id, p)
		return true
	})
}

// Due returns the pending entries due for redelivery at now, the longest
// due first (released entries before the rest), at most limit (0: all).
func (g *Group) Due(now int64, limit int) []ID {
	var ids []ID
	g.due.Ascend(MinID, func(k ID, id ID) bool {
		if int64(k.Ms) > now || (limit > 0 && len(ids) == limit) {
			return false
		}
		ids = append(ids, id)
		return true
	})
	return ids
}

// HasDue reports whether an entry is due for redelivery at now.
func (g *Group) HasDue(now int64) bool {
	k, ok := g.due.Min()
	return ok && int64(k.Ms) <= now
}

// NextDue returns the first due time after now (ms), for a blocked
// reader to wake then; false when no entry will become due.
func (g *Group) NextDue(now int64) (int64, bool) {
	var at int64
	found := false
	g.due.Ascend(ID{Ms: uint64(max(now, 0)) + 1}, func(k ID, _ ID) bool {
		at, found = int64(k.Ms), true
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

// checkDue verifies that the due index holds exactly the PEL entries that
// are ever due, each under its key.
func (g *Group) checkDue() error {
	if err := g.due.check(); err != nil {
		return errorf("group %q due index: %w", g.name, err)
	}
	want := 0
	var err error
	g.pel.Ascend(MinID, func(id ID, p pending) bool {
		k, ok := g.dueKey(p)
		if !ok {
			return true
		}
		want++
		if got, found := g.due.Get(k); !found || got != id {
			err = errorf("group %q: entry %s missing from the due index at %s", g.name, id, k)
		}
		return err == nil
	})
	if err == nil && g.due.Len() != want {
		err = errorf("group %q: due index holds %d entries, %d are ever due", g.name, g.due.Len(), want)
	}
	return err
}
