package tests

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The stream half of TestKill9: one producer XADDs entries that carry a
// unique sequence number, two consumers of one group read them with
// XREADGROUP and XACK some of what they were given. What the clients saw
// acknowledged is checked against the restarted server.

const (
	crashStream   = "events"
	crashGroup    = "g"
	crashMaxCount = 8 // the largest COUNT a consumer asks for
)

var crashConsumers = []string{"c0", "c1"}

// sentEntry is the field values one XADD carried.
type sentEntry struct {
	cycle int
	pad   string
}

// streamLog is what the stream clients saw acknowledged before the crash.
// Stream IDs are kept as the server wrote them.
type streamLog struct {
	mu           sync.Mutex
	groupCreated bool
	nextN        int
	sent         map[int]sentEntry          // every XADD sent, by its n
	added        map[int]string             // n → ID, for XADDs whose reply was received
	delivered    map[string]string          // ID → consumer, for XREADGROUP replies received
	pending      map[string]map[string]bool // consumer → IDs delivered, not acked, no XACK in flight
	ackCut       map[string]string          // ID → consumer: in an XACK the crash cut off
	acked        map[string]bool            // IDs whose XACK reply was received (or seen applied)
	readsCut     map[string]int             // consumer → XREADGROUPs cut off by crashes
	lastSeen     map[string]streamID        // consumer → highest ID delivered to it
	floor        streamID                   // the group's last-delivered-id at the last restart
	errs         []string                   // what the clients saw that was wrong
	stats        struct{ cutAddsFound, cutAcksApplied, cutAcksLost, unlogged, maxPEL int }
}

func newStreamLog() *streamLog {
	l := &streamLog{
		sent: map[int]sentEntry{}, added: map[int]string{}, delivered: map[string]string{},
		pending: map[string]map[string]bool{}, ackCut: map[string]string{}, acked: map[string]bool{},
		readsCut: map[string]int{}, lastSeen: map[string]streamID{},
	}
	for _, c := range crashConsumers {
		l.pending[c] = map[string]bool{}
	}
	return l
}

// failf records a wrong reply seen by a load goroutine, which cannot fail
// the test itself; the next verification reports it. Called with l.mu held.
func (l *streamLog) failf(format string, args ...any) {
	l.errs = append(l.errs, fmt.Sprintf(format, args...))
}

type streamID struct{ ms, seq uint64 }

func parseStreamID(s string) (streamID, bool) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return streamID{}, false
	}
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return streamID{ms, seq}, err1 == nil && err2 == nil
}

func (a streamID) less(b streamID) bool {
	return a.ms < b.ms || a.ms == b.ms && a.seq < b.seq
}

func (a streamID) String() string { return fmt.Sprintf("%d-%d", a.ms, a.seq) }

// crashPadAlphabet holds bytes that matter to RESP framing, so a record
// cut in the middle of one cannot pass for a whole one by accident.
const crashPadAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789\r\n\x00*$:-+ "

// checkEntry checks that e is a whole entry as one of our XADDs sent it:
// exactly the fields n, cycle and pad with the values sent for its n.
// It returns n. Called with l.mu held.
func (l *streamLog) checkEntry(e Reply) (id string, n int, err error) {
	if e.Type != '*' || len(e.Elems) != 2 || e.Elems[1].Type != '*' {
		return "", 0, fmt.Errorf("entry is not [id, fields]: %s", e)
	}
	id = e.Elems[0].Str
	if _, ok := parseStreamID(id); !ok {
		return id, 0, fmt.Errorf("malformed ID %q", id)
	}
	f := e.Elems[1].Elems
	if len(f) != 6 || f[0].Str != "n" || f[2].Str != "cycle" || f[4].Str != "pad" {
		return id, 0, fmt.Errorf("entry %s has malformed fields %s", id, e.Elems[1])
	}
	n, err1 := strconv.Atoi(f[1].Str)
	cycle, err2 := strconv.Atoi(f[3].Str)
	if err1 != nil || err2 != nil {
		return id, 0, fmt.Errorf("entry %s has malformed fields %s", id, e.Elems[1])
	}
	want, ok := l.sent[n]
	if !ok {
		return id, n, fmt.Errorf("entry %s has n=%d, which was never sent", id, n)
	}
	if cycle != want.cycle || f[5].Str != want.pad {
		return id, n, fmt.Errorf("entry %s (n=%d) holds cycle=%d pad=%q, sent cycle=%d pad=%q", id, n, cycle, f[5].Str, want.cycle, want.pad)
	}
	if a, ok := l.added[n]; ok && a != id {
		return id, n, fmt.Errorf("entry n=%d was acknowledged with ID %s but is at %s", n, a, id)
	}
	return id, n, nil
}

// createCrashGroup creates the group once, before the first load; it must
// then survive every crash.
func createCrashGroup(t *testing.T, s *Server, l *streamLog) {
	t.Helper()
	if r := s.Raw(t).Do("XGROUP", "CREATE", crashStream, crashGroup, "$", "MKSTREAM"); r.Type != '+' {
		t.Fatalf("XGROUP CREATE = %s", r)
	}
	l.mu.Lock()
	l.groupCreated = true
	l.mu.Unlock()
}

func streamProducer(s *Server, cycle int, seed int64, l *streamLog, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	untilStopped(s, stop, func(c *quietConn) bool {
		size := rng.IntN(32)
		if rng.IntN(32) == 0 {
			size = rng.IntN(2000) // now and then one that fills a good part of a node
		}
		pad := make([]byte, size)
		for i := range pad {
			pad[i] = crashPadAlphabet[rng.IntN(len(crashPadAlphabet))]
		}
		l.mu.Lock()
		l.nextN++
		n := l.nextN
		l.sent[n] = sentEntry{cycle: cycle, pad: string(pad)}
		l.mu.Unlock()
		r, err := c.do("XADD", crashStream, "*", "n", strconv.Itoa(n), "cycle", strconv.Itoa(cycle), "pad", string(pad))
		if err != nil {
			return false // cut off: the entry may or may not be there
		}
		l.mu.Lock()
		if _, ok := parseStreamID(r.Str); r.Type != '$' || !ok {
			l.failf("cycle %d: XADD n=%d = %s", cycle, n, r)
			l.mu.Unlock()
			return false
		}
		l.added[n] = r.Str
		l.mu.Unlock()
		return true
	})
}

func streamConsumer(s *Server, name string, cycle int, seed int64, l *streamLog, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	untilStopped(s, stop, func(c *quietConn) bool {
		count := 1 + rng.IntN(crashMaxCount)
		block := 5 + rng.IntN(50)
		r, err := c.do("XREADGROUP", "GROUP", crashGroup, name, "COUNT", strconv.Itoa(count), "BLOCK", strconv.Itoa(block),
			"STREAMS", crashStream, ">")
		if err != nil {
			l.mu.Lock()
			l.readsCut[name]++
			l.mu.Unlock()
			return false
		}
		l.mu.Lock()
		if !l.takeDelivery(cycle, name, count, r) {
			l.mu.Unlock()
			return false
		}
		// Acknowledge about a quarter of what this consumer holds, older
		// deliveries (from before earlier crashes) included, so the PEL
		// has entries in it when the crash comes.
		var ids []string
		for id := range l.pending[name] {
			if rng.IntN(4) == 0 {
				ids = append(ids, id)
			}
		}
		for _, id := range ids {
			delete(l.pending[name], id)
			l.ackCut[id] = name
		}
		l.mu.Unlock()
		if len(ids) == 0 {
			return true
		}
		r, err = c.do(append([]string{"XACK", crashStream, crashGroup}, ids...)...)
		if err != nil {
			return false // left in ackCut: the next verification finds out
		}
		l.mu.Lock()
		if r.Type != ':' || r.Int != int64(len(ids)) {
			// Each ID was delivered to this consumer alone, its delivery
			// acknowledged, and not acked since: every one is pending.
			l.failf("cycle %d: %s: XACK of %d pending IDs %v = %s", cycle, name, len(ids), ids, r)
			l.mu.Unlock()
			return false
		}
		for _, id := range ids {
			delete(l.ackCut, id)
			l.acked[id] = true
		}
		l.mu.Unlock()
		return true
	})
}

// takeDelivery records an XREADGROUP reply and checks it: whole entries,
// never one already delivered, in increasing ID order above the group's
// last-delivered-id at the restart. Called with l.mu held.
func (l *streamLog) takeDelivery(cycle int, name string, count int, r Reply) bool {
	if r.Null {
		return true // BLOCK timed out
	}
	if r.Type != '*' || len(r.Elems) != 1 || len(r.Elems[0].Elems) != 2 || r.Elems[0].Elems[0].Str != crashStream {
		l.failf("cycle %d: %s: XREADGROUP = %s", cycle, name, r)
		return false
	}
	entries := r.Elems[0].Elems[1].Elems
	if len(entries) == 0 || len(entries) > count {
		l.failf("cycle %d: %s: XREADGROUP COUNT %d delivered %d entries: %s", cycle, name, count, len(entries), r)
		return false
	}
	for _, e := range entries {
		id, _, err := l.checkEntry(e)
		if err != nil {
			l.failf("cycle %d: %s: XREADGROUP delivered a bad entry: %v", cycle, name, err)
			return false
		}
		sid, _ := parseStreamID(id)
		if prev, ok := l.delivered[id]; ok {
			l.failf("cycle %d: %s: XREADGROUP > delivered %s again (first delivered to %s)", cycle, name, id, prev)
			return false
		}
		if !l.floor.less(sid) || !l.lastSeen[name].less(sid) {
			l.failf("cycle %d: %s: XREADGROUP > delivered %s, not above the group's last-delivered-id %s at restart and this consumer's last delivery %s",
				cycle, name, id, l.floor, l.lastSeen[name])
			return false
		}
		l.lastSeen[name] = sid
		l.delivered[id] = name
		l.pending[name][id] = true
	}
	return true
}

// summary says how much stream load the crashes cut into.
func (l *streamLog) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	cut := 0
	for _, k := range l.readsCut {
		cut += k
	}
	return fmt.Sprintf("stream: %d XADDs sent, %d acknowledged, %d cut off but applied; %d entries delivered, %d acked; "+
		"%d XREADGROUPs cut off, at most %d unlogged deliveries to one consumer; XACKs cut off: %d applied, %d not; largest PEL at a restart %d",
		len(l.sent), len(l.added), l.stats.cutAddsFound, len(l.delivered), len(l.acked),
		cut, l.stats.unlogged, l.stats.cutAcksApplied, l.stats.cutAcksLost, l.stats.maxPEL)
}

// verifyStreamAfterCrash checks the restarted server's stream and group
// against what the stream clients saw acknowledged.
func verifyStreamAfterCrash(t *testing.T, s *Server, l *streamLog, cycle int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) > 0 {
		t.Fatalf("before restart %d the stream clients saw:\n%s", cycle, strings.Join(l.errs, "\n"))
	}
	raw := s.Raw(t)

	// The stream: every acknowledged XADD at its ID with its fields, every
	// entry whole and sent by us, n increasing with the ID.
	present := map[string]int{}
	cutAddsFound := 0
	var last streamID
	lastN := 0
	for _, e := range raw.Do("XRANGE", crashStream, "-", "+").Elems {
		id, n, err := l.checkEntry(e)
		if err != nil {
			t.Fatalf("cycle %d: after kill -9: %v", cycle, err)
		}
		sid, _ := parseStreamID(id)
		if n <= lastN || !last.less(sid) {
			t.Fatalf("cycle %d: after kill -9 entry %s (n=%d) follows %s (n=%d)", cycle, id, n, last, lastN)
		}
		last, lastN = sid, n
		present[id] = n
		if _, ok := l.added[n]; !ok {
			cutAddsFound++
		}
	}
	l.stats.cutAddsFound = cutAddsFound
	for n, id := range l.added {
		if present[id] != n {
			t.Fatalf("cycle %d: acknowledged XADD n=%d (ID %s, cycle %d) is missing after kill -9", cycle, n, id, l.sent[n].cycle)
		}
	}
	for id, c := range l.delivered {
		if _, ok := present[id]; !ok {
			t.Fatalf("cycle %d: %s was delivered to %s but is not in the stream after kill -9", cycle, id, c)
		}
	}
	if !l.groupCreated {
		return
	}

	// The group's PEL: what is acked is gone, what was delivered and not
	// acked is there, owned by its consumer, delivered once.
	pel := map[string]string{}
	var pelMin, pelMax string
	perConsumer := map[string]int64{}
	for _, p := range raw.Do("XPENDING", crashStream, crashGroup, "-", "+", "1000000000").Elems {
		if len(p.Elems) != 4 {
			t.Fatalf("cycle %d: XPENDING entry %s", cycle, p)
		}
		id, owner := p.Elems[0].Str, p.Elems[1].Str
		if _, ok := present[id]; !ok {
			t.Fatalf("cycle %d: %s is pending for %s but not in the stream", cycle, id, owner)
		}
		if p.Elems[3].Int != 1 {
			t.Fatalf("cycle %d: %s (pending for %s) has delivery count %d; it was only ever read with >", cycle, id, owner, p.Elems[3].Int)
		}
		if l.acked[id] {
			t.Fatalf("cycle %d: %s is pending for %s, but its XACK was acknowledged", cycle, id, owner)
		}
		if c, ok := l.delivered[id]; ok && c != owner {
			t.Fatalf("cycle %d: %s was delivered to %s but is pending for %s", cycle, id, c, owner)
		}
		pel[id] = owner
		perConsumer[owner]++
		if pelMin == "" {
			pelMin = id
		}
		pelMax = id
	}
	for c, ids := range l.pending {
		for id := range ids {
			if pel[id] != c {
				t.Fatalf("cycle %d: %s was delivered to %s and never acked, but is not in the PEL after kill -9", cycle, id, c)
			}
		}
	}
	// An XACK the crash cut off may or may not have happened: settle it.
	for id, c := range l.ackCut {
		if owner, ok := pel[id]; ok {
			if owner != c {
				t.Fatalf("cycle %d: %s was delivered to %s but is pending for %s", cycle, id, c, owner)
			}
			l.pending[c][id] = true
			l.stats.cutAcksLost++
		} else {
			l.acked[id] = true
			l.stats.cutAcksApplied++
		}
		delete(l.ackCut, id)
	}
	// Pending entries we have no delivery for came from XREADGROUPs the
	// crash cut off, at most COUNT for each.
	unlogged := map[string]int{}
	for id, owner := range pel {
		if _, ok := l.delivered[id]; !ok {
			unlogged[owner]++
		}
	}
	l.stats.maxPEL = max(l.stats.maxPEL, len(pel))
	for c, k := range unlogged {
		l.stats.unlogged = max(l.stats.unlogged, k)
		if k > l.readsCut[c]*crashMaxCount {
			t.Fatalf("cycle %d: %d entries are pending for %s that no acknowledged XREADGROUP delivered, but only %d of its reads were cut off",
				cycle, k, c, l.readsCut[c])
		}
	}

	// XINFO GROUPS agrees with the PEL; last-delivered-id is an entry (or
	// 0-0) at or above everything delivered.
	var g map[string]Reply
	groups := raw.Do("XINFO", "GROUPS", crashStream)
	for _, e := range groups.Elems {
		m := map[string]Reply{}
		for i := 0; i+1 < len(e.Elems); i += 2 {
			m[e.Elems[i].Str] = e.Elems[i+1]
		}
		if m["name"].Str == crashGroup {
			g = m
		}
	}
	if g == nil {
		t.Fatalf("cycle %d: group %s is gone after kill -9: XINFO GROUPS = %s", cycle, crashGroup, groups)
	}
	if g["pending"].Int != int64(len(pel)) {
		t.Fatalf("cycle %d: XINFO GROUPS pending = %d, XPENDING lists %d", cycle, g["pending"].Int, len(pel))
	}
	ldi, ok := parseStreamID(g["last-delivered-id"].Str)
	if !ok {
		t.Fatalf("cycle %d: XINFO GROUPS last-delivered-id = %s", cycle, g["last-delivered-id"])
	}
	if _, ok := present[ldi.String()]; !ok && ldi != (streamID{}) {
		t.Fatalf("cycle %d: last-delivered-id %s is no entry of the stream", cycle, ldi)
	}
	for id := range l.delivered {
		if sid, _ := parseStreamID(id); ldi.less(sid) {
			t.Fatalf("cycle %d: last-delivered-id %s is below %s, delivered to %s", cycle, ldi, id, l.delivered[id])
		}
	}
	for id, owner := range pel {
		if sid, _ := parseStreamID(id); ldi.less(sid) {
			t.Fatalf("cycle %d: last-delivered-id %s is below %s, pending for %s", cycle, ldi, id, owner)
		}
	}
	// With nothing deleted, entries-read counts the entries up to
	// last-delivered-id exactly.
	read := int64(0)
	for id := range present {
		if sid, _ := parseStreamID(id); !ldi.less(sid) {
			read++
		}
	}
	if er := g["entries-read"]; er.Type != ':' || er.Int != read {
		t.Fatalf("cycle %d: XINFO GROUPS entries-read = %s, %d entries are at or below last-delivered-id %s", cycle, er, read, ldi)
	}
	l.floor = ldi

	// The XPENDING summary agrees too.
	sum := raw.Do("XPENDING", crashStream, crashGroup)
	if len(sum.Elems) != 4 || sum.Elems[0].Int != int64(len(pel)) || sum.Elems[1].Str != pelMin || sum.Elems[2].Str != pelMax {
		t.Fatalf("cycle %d: XPENDING summary %s, the PEL holds %d entries from %q to %q", cycle, sum, len(pel), pelMin, pelMax)
	}
	if len(sum.Elems[3].Elems) != len(perConsumer) {
		t.Fatalf("cycle %d: XPENDING summary %s, per consumer %v", cycle, sum, perConsumer)
	}
	for _, pc := range sum.Elems[3].Elems {
		if len(pc.Elems) != 2 {
			t.Fatalf("cycle %d: XPENDING summary %s", cycle, sum)
		}
		if k, err := strconv.ParseInt(pc.Elems[1].Str, 10, 64); err != nil || k != perConsumer[pc.Elems[0].Str] {
			t.Fatalf("cycle %d: XPENDING summary %s, per consumer %v", cycle, sum, perConsumer)
		}
	}
}
