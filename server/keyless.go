package server

import (
	"bytes"
	"math/rand/v2"
)

// Keyless commands in cluster mode (replication/PARTITIONS.md §1). A
// client sees one database, 0, but the node keeps each hosted group's
// state in a database of its own, so a command without keys must say
// which of them it covers:
//
//   - DBSIZE, KEYS, SCAN, RANDOMKEY and INFO keyspace's db0 line cover
//     the databases of the groups this node leads: the node's own slots,
//     as a Redis Cluster primary answers for its own. A client that sent
//     READONLY reads stale data from followers on purpose, as it would
//     from a Redis Cluster replica, so for it they cover every group the
//     node hosts; and so they do on a node that leads no group, which is
//     a replica only and answers from its copy, as a Redis Cluster
//     replica does. A client that sums DBSIZE over the nodes that lead
//     (the cluster's primaries) so counts each key once.
//   - FLUSHDB and FLUSHALL are proposed to each group this node leads,
//     and each group's entry empties that group's database alone; the
//     client is answered once, when the last of them is applied.
//
// They are served at once, without the leadership check a keyed read
// waits for: which groups a node leads may have changed a moment ago.
// Outside cluster mode they act on the client's database, as ever.

// keylessCovers reports whether a keyless read of x covers group g's
// database. Lock should be held.
func (x *Ctx) keylessCovers(g *clusterGroup) bool {
	return g != nil && (g.cl.Leading() || x.c != nil && x.c.readonly || !x.s.leadsAnyGroup())
}

// leadsAnyGroup reports whether this node leads one of the groups it
// hosts. Lock should be held.
func (s *Server) leadsAnyGroup() bool {
	for _, g := range s.groups {
		if g.cl.Leading() {
			return true
		}
	}
	return false
}

// keylessDBs are the databases a keyless read of x covers: x's own
// outside cluster mode. Lock should be held.
func (x *Ctx) keylessDBs() []*DB {
	s := x.s
	if s.cluster == nil {
		return []*DB{x.db}
	}
	var dbs []*DB
	for _, g := range s.groups {
		if x.keylessCovers(g) {
			dbs = append(dbs, s.shard.dbs[g.db])
		}
	}
	return dbs
}

// randomKey is a key, not expired at now, of one of dbs, the database
// drawn in proportion to its keys; "" when none has such a key.
func randomKey(dbs []*DB, now int64) (string, bool) {
	total := 0
	for _, db := range dbs {
		total += db.Len()
	}
	if total == 0 {
		return "", false
	}
	first := 0
	if len(dbs) > 1 {
		for n := rand.N(total); n >= dbs[first].Len(); first++ {
			n -= dbs[first].Len()
		}
	}
	for i := range dbs { // the drawn one first; the others if its keys have all expired
		for key, o := range dbs[(first+i)%len(dbs)].keys { // map order is random
			if o.expireAt == 0 || o.expireAt > now {
				return key, true
			}
		}
	}
	return "", false
}

// scan is one SCAN call's walk: COUNT bounds the keys visited, MATCH and
// TYPE filter what is returned.
type scan struct {
	count   int
	match   []byte
	typ     string
	now     int64
	visited int
	out     []string
}

// walk visits, from order hash from, db's keys of slots up to last, and
// returns the order hash of the first key left unvisited once count keys
// are visited (never splitting keys that share one), or 0 when it reached
// the end of those slots. Call it only while visited < count, so that it
// visits at least one key, and a resumption point is above 0.
func (sc *scan) walk(db *DB, from uint64, last int) (next uint64) {
	lastHash, started := uint64(0), false
	each := func(e scanEntry) bool {
		if sc.visited >= sc.count && (!started || e.hash != lastHash) {
			next = e.hash
			return false
		}
		sc.visited++
		lastHash, started = e.hash, true
		o := db.keys[e.key]
		if o.expireAt != 0 && o.expireAt <= sc.now {
			return true
		}
		if sc.match != nil && !globMatch(sc.match, []byte(e.key), false) {
			return true
		}
		if sc.typ != "" && !matchType(o, sc.typ) {
			return true
		}
		sc.out = append(sc.out, e.key)
		return true
	}
	if last >= ClusterSlots-1 {
		db.order.AscendGreaterOrEqual(scanEntry{hash: from}, each)
	} else {
		db.order.AscendRange(scanEntry{hash: from}, scanEntry{hash: slotStart(last + 1)}, each)
	}
	return next
}

// walkGroups is SCAN in cluster mode. The cursor is an order hash, whose
// top bits are a slot (orderHash) whichever database the key is in, and
// every database orders its keys slot-major, so one integer resumes the
// walk across databases: the slots from the cursor's are taken in runs
// that belong to one group, each run walked in its group's database, the
// runs of groups x does not cover skipped. A slot that changes groups
// between two calls is walked in its new group's database, where the
// cursor's low bits mean another place: keys of that slot may then be
// missed or returned twice (as across a Redis Cluster resharding).
// Lock should be held.
func (x *Ctx) walkGroups(sc *scan, cursor uint64) uint64 {
	s := x.s
	from := cursor
	for slot := int(cursor >> slotShift); slot < ClusterSlots; {
		g := s.slotGroup[slot]
		last := slot
		for last+1 < ClusterSlots && s.slotGroup[last+1] == g {
			last++
		}
		if x.keylessCovers(g) {
			if next := sc.walk(s.shard.dbs[g.db], from, last); next != 0 {
				return next
			}
		}
		slot = last + 1
		from = slotStart(slot)
		if sc.visited >= sc.count && slot < ClusterSlots {
			return from
		}
	}
	return 0
}

// isFlush reports FLUSHDB and FLUSHALL.
func isFlush(cmd *Command) bool { return cmd.Name == "flushdb" || cmd.Name == "flushall" }

// fanout is one client command proposed to several groups (FLUSHALL to
// each group this node leads): the client is answered once, when the
// last of its proposals is applied or has failed.
type fanout struct {
	left    int    // proposals not yet applied or failed
	reply   []byte // what the first applied one answered
	applied bool
	failed  string // the first failure's error, if any
}

// proposeToLed proposes argv, at time now, to every group this node
// leads, for c to wait on as one command: a flush of the node's own
// slots. With one such group it is an ordinary proposal. Lock should be
// held.
func (s *Server) proposeToLed(c *Client, argv [][]byte, now int64) {
	var led []*clusterGroup
	for _, g := range s.groups {
		if g.cl.Leading() {
			led = append(led, g)
		}
	}
	switch len(led) {
	case 0:
		c.reject(errReadOnlyNode)
		return
	case 1:
		s.propose(led[0], c, argv, now, false)
		return
	}
	f := &fanout{left: len(led)}
	for i, g := range led {
		p := &g.prop
		p.recs = append(p.recs, Record{Time: now, DB: c.db, Argv: cloneArgv(argv)})
		p.owners = append(p.owners, proposal{c: c, proto: c.out.Proto, fan: f, uncounted: i > 0})
		c.wrote(g)
	}
	c.awaiting++
	// The groups commit independently: a write behind this one, even to
	// one of them, waits for its reply (proposable).
	c.proposingTo = nil
	s.loop.wake()
}

// fanApplied notes that one of a fanned-out command's proposals was
// applied, with x its apply. Lock should be held.
func (s *Server) fanApplied(o proposal, x *Ctx) {
	f := o.fan
	if !f.applied {
		f.applied = true
		f.reply = bytes.Clone(x.w.Bytes()) // the apply's writer is reused
	}
	s.fanDone(o)
}

// fanFailed notes that one of a fanned-out command's proposals was not
// applied. Lock should be held.
func (s *Server) fanFailed(o proposal, msg string) {
	if o.fan.failed == "" {
		o.fan.failed = msg
	}
	s.fanDone(o)
}

// fanDone answers a fanned-out command's client once all of its
// proposals are done: with the failure if one failed (the outcome is
// unknown if others were applied), else with the reply. Lock should be
// held.
func (s *Server) fanDone(o proposal) {
	f, c := o.fan, o.c
	if f.left--; f.left > 0 {
		return
	}
	c.awaiting--
	if c.fd < 0 {
		return
	}
	if !o.silent {
		switch {
		case f.failed != "" && f.applied:
			c.out.Error(errUnknownOutcome)
		case f.failed != "":
			c.out.Error(f.failed)
		default:
			c.out.Raw(f.reply)
		}
	}
	c.answered()
}
