package server

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// keylessCluster is a node hosting three groups: group 1 (database 0)
// keeps the slots groups 2 and 3 do not, group 2 (database 2) slots
// 0-5000 and 10000-12000 (two runs, so a SCAN crosses databases and
// back), group 3 (database 3) slots 6000-7000, and this node follows it.
// Forty keys, k0..k39, are committed to their slots' groups.
type keylessCluster struct {
	s       *Server
	lc, lc2 *logCluster
	lc3     *logCluster
	keys    map[int][]string // by group
}

func newKeylessCluster(t *testing.T) *keylessCluster {
	t.Helper()
	s, lc := newLogCluster(t)
	k := &keylessCluster{s: s, lc: lc, lc2: lc.another(2), lc3: lc.another(3), keys: map[int][]string{}}
	k.lc3.deposed = true
	for _, h := range []struct {
		id uint16
		db int
		cl *logCluster
	}{{2, 2, k.lc2}, {3, 3, k.lc3}} {
		if err := s.HostGroup(h.id, h.db, h.cl); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range []struct {
		first, last int
		id          uint16
	}{{0, 5000, 2}, {10000, 12000, 2}, {6000, 7000, 3}} {
		if err := s.AssignSlots(a.first, a.last, a.id); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		key := fmt.Sprintf("k%d", i)
		g := k.groupOf(key)
		k.apply(t, g, "SET", key, "v")
		k.keys[g] = append(k.keys[g], key)
	}
	for g := 1; g <= 3; g++ {
		if len(k.keys[g]) == 0 {
			t.Fatalf("no key of the forty is in group %d: pick others", g)
		}
	}
	return k
}

// groupOf is the group of key's slot, by the assignment above.
func (k *keylessCluster) groupOf(key string) int {
	switch slot := KeySlot([]byte(key)); {
	case slot <= 5000, slot >= 10000 && slot <= 12000:
		return 2
	case slot >= 6000 && slot <= 7000:
		return 3
	}
	return 1
}

// apply commits argv in group g's log as another node's entry would be:
// on every node, in the group's database, answering nobody here.
func (k *keylessCluster) apply(t *testing.T, g int, argv ...string) {
	t.Helper()
	rec := Record{Time: time.Now().UnixMilli()}
	for _, a := range argv {
		rec.Argv = append(rec.Argv, []byte(a))
	}
	base := map[int]int{1: 0, 2: 2, 3: 3}[g]
	if err := k.s.ApplyEntryAt(base, encodeEntry("another node", 1, []proposal{{}}, []Record{rec})); err != nil {
		t.Fatal(err)
	}
}

// want is the keys of groups gs, sorted.
func (k *keylessCluster) want(gs ...int) []string {
	var out []string
	for _, g := range gs {
		out = append(out, k.keys[g]...)
	}
	sort.Strings(out)
	return out
}

// bulks are the bulk strings of a raw reply, in order.
func bulks(reply string) []string {
	var out []string
	for _, b := range bulksOf([]byte(reply)) {
		out = append(out, string(b))
	}
	return out
}

func sorted(keys []string) []string {
	keys = slices.Clone(keys)
	sort.Strings(keys)
	return keys
}

// scanAll runs a whole SCAN iteration with args, and fails on a key
// returned twice.
func scanAll(t *testing.T, c *pipeConn, args ...string) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	cursor := "0"
	for calls := 0; ; calls++ {
		if calls > 10000 {
			t.Fatal("SCAN does not end")
		}
		got := bulks(c.do(append([]string{"SCAN", cursor}, args...)...))
		if len(got) == 0 {
			t.Fatalf("SCAN %s: no cursor", cursor)
		}
		for _, key := range got[1:] {
			if seen[key] {
				t.Fatalf("SCAN %v returned %s twice", args, key)
			}
			seen[key] = true
			out = append(out, key)
		}
		if cursor = got[0]; cursor == "0" {
			return sorted(out)
		}
	}
}

func TestKeylessReadsCoverLedGroups(t *testing.T) {
	k := newKeylessCluster(t)
	c := connect(t, k.s)
	n := func(gs ...int) string { return fmt.Sprintf(":%d\r\n", len(k.want(gs...))) }

	if got, want := c.do("DBSIZE"), n(1, 2); got != want {
		t.Errorf("DBSIZE leading groups 1 and 2 = %q, want %q", got, want)
	}
	if got, want := sorted(bulks(c.do("KEYS", "*"))), k.want(1, 2); !slices.Equal(got, want) {
		t.Errorf("KEYS * = %v, want %v", got, want)
	}
	var k1 []string // the led keys KEYS k1* finds
	for _, key := range k.want(1, 2) {
		if strings.HasPrefix(key, "k1") {
			k1 = append(k1, key)
		}
	}
	if got := sorted(bulks(c.do("KEYS", "k1*"))); !slices.Equal(got, k1) {
		t.Errorf("KEYS k1* = %v, want %v", got, k1)
	}
	for _, count := range []string{"1", "3", "1000"} {
		if got, want := scanAll(t, c, "COUNT", count), k.want(1, 2); !slices.Equal(got, want) {
			t.Errorf("SCAN COUNT %s returned %v, want %v", count, got, want)
		}
	}
	if got := scanAll(t, c, "MATCH", "k1*", "COUNT", "1"); !slices.Equal(got, k1) {
		t.Errorf("SCAN MATCH k1* COUNT 1 returned %v, want %v", got, k1)
	}

	// The one list, in group 2: SCAN TYPE finds it and nothing else.
	list := k.keys[2][0]
	k.apply(t, 2, "DEL", list)
	k.apply(t, 2, "RPUSH", list, "x")
	if got := scanAll(t, c, "TYPE", "list", "COUNT", "2"); !slices.Equal(got, []string{list}) {
		t.Errorf("SCAN TYPE list returned %v, want [%s]", got, list)
	}

	// INFO keyspace: one line, db0's, over both led groups' databases.
	k.apply(t, 1, "PEXPIRE", k.keys[1][0], "600000")
	k.apply(t, 2, "PEXPIRE", k.keys[2][1], "600000")
	info := c.do("INFO", "keyspace")
	wantLine := fmt.Sprintf("db0:keys=%d,expires=2,", len(k.want(1, 2)))
	if !strings.Contains(info, wantLine) || strings.Contains(info, "db2:") || strings.Contains(info, "db3:") {
		t.Errorf("INFO keyspace = %q, want one line %q...", info, wantLine)
	}

	// RANDOMKEY draws from both databases, and from them only.
	drawn := map[int]bool{}
	for i := 0; i < 2000 && !(drawn[1] && drawn[2]); i++ {
		got := bulks(c.do("RANDOMKEY"))
		if len(got) != 1 {
			t.Fatalf("RANDOMKEY = %v", got)
		}
		drawn[k.groupOf(got[0])] = true
	}
	if !drawn[1] || !drawn[2] || drawn[3] {
		t.Errorf("RANDOMKEY drew keys of groups %v, want 1 and 2", drawn)
	}
}

// A group this node does not lead is left out, unless the client asked
// for a follower's (stale) reads with READONLY.
func TestKeylessReadsFollowLeadership(t *testing.T) {
	k := newKeylessCluster(t)
	c := connect(t, k.s)
	k.lc2.set(func() { k.lc2.deposed = true })
	if got, want := c.do("DBSIZE"), fmt.Sprintf(":%d\r\n", len(k.keys[1])); got != want {
		t.Errorf("DBSIZE leading group 1 only = %q, want %q", got, want)
	}
	if got, want := sorted(bulks(c.do("KEYS", "*"))), k.want(1); !slices.Equal(got, want) {
		t.Errorf("KEYS * = %v, want %v", got, want)
	}
	if got, want := scanAll(t, c, "COUNT", "1"), k.want(1); !slices.Equal(got, want) {
		t.Errorf("SCAN COUNT 1 returned %v, want %v", got, want)
	}
	for range 200 {
		if key := bulks(c.do("RANDOMKEY")); len(key) != 1 || k.groupOf(key[0]) != 1 {
			t.Fatalf("RANDOMKEY = %v, want a key of group 1", key)
		}
	}
	k.lc.set(func() { k.lc.deposed = true })
	// A node that leads nothing is a replica only: it answers from its
	// copy of every group, as a Redis Cluster replica does.
	all := k.want(1, 2, 3)
	if got, want := c.do("DBSIZE"), fmt.Sprintf(":%d\r\n", len(all)); got != want {
		t.Errorf("DBSIZE leading nothing = %q, want %q", got, want)
	}
	if got := scanAll(t, c, "COUNT", "5"); !slices.Equal(got, all) {
		t.Errorf("SCAN leading nothing returned %v, want %v", got, all)
	}
	k.lc.set(func() { k.lc.deposed = false })
	if got := c.do("READONLY"); got != "+OK\r\n" {
		t.Fatalf("READONLY = %q", got)
	}
	if got, want := c.do("DBSIZE"), fmt.Sprintf(":%d\r\n", len(all)); got != want {
		t.Errorf("DBSIZE with READONLY = %q, want %q", got, want)
	}
	if got := scanAll(t, c, "COUNT", "1"); !slices.Equal(got, all) {
		t.Errorf("SCAN with READONLY returned %v, want %v", got, all)
	}
	if got := sorted(bulks(c.do("KEYS", "*"))); !slices.Equal(got, all) {
		t.Errorf("KEYS * with READONLY = %v, want %v", got, all)
	}
}

// A SCAN cursor names a slot: a call resumed in another group's run
// carries on there. Each page's cursor is above the last key returned
// (slot-major), so a client may resume from any page.
func TestScanCursorCrossesDatabases(t *testing.T) {
	k := newKeylessCluster(t)
	c := connect(t, k.s)
	cursor, last := "0", -1
	for {
		got := bulks(c.do("SCAN", cursor, "COUNT", "1"))
		for _, key := range got[1:] {
			slot := KeySlot([]byte(key))
			if slot < last {
				t.Fatalf("SCAN returned %s (slot %d) after a key of slot %d", key, slot, last)
			}
			last = slot
		}
		if cursor = got[0]; cursor == "0" {
			break
		}
		var next uint64
		fmt.Sscan(cursor, &next)
		if int(next>>slotShift) < last {
			t.Fatalf("cursor %s is in slot %d, before the last key's %d", cursor, next>>slotShift, last)
		}
	}
	// A cursor in group 3's run, which this node does not lead, resumes
	// at the next run's keys.
	got := bulks(c.do("SCAN", fmt.Sprint(slotStart(6000)), "COUNT", "1000"))
	var want []string
	for _, key := range k.want(1, 2) {
		if KeySlot([]byte(key)) >= 6000 {
			want = append(want, key)
		}
	}
	if got[0] != "0" || !slices.Equal(sorted(got[1:]), want) {
		t.Errorf("SCAN from slot 6000 = %v, want cursor 0 and %v", got, want)
	}
}

// FLUSHALL goes to each group this node leads and empties their
// databases, not the one of the group it follows; its client is answered
// once, after the last, and a write it sent behind waits for that reply.
func TestFlushallGoesToEachLedGroup(t *testing.T) {
	k := newKeylessCluster(t)
	a := connect(t, k.s)
	k.lc.failLeft(t)
	k.lc2.failLeft(t)
	if _, err := a.conn.Write([]byte("*1\r\n$8\r\nFLUSHALL\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n")); err != nil {
		t.Fatal(err)
	}
	if got := k.lc.commit(t); got != `["FLUSHALL"]` {
		t.Fatalf("group 1 committed %s", got)
	}
	waiting := func() bool {
		k.s.shard.mu.Lock()
		defer k.s.shard.mu.Unlock()
		for _, c := range k.s.clients {
			return c.awaiting == 1 && c.stashed != nil
		}
		return false
	}
	waitFor(t, waiting) // SET is read, and held back
	if n := len(k.lc.entries); n != 0 {
		t.Fatalf("group 1 got %d more entries before FLUSHALL was answered", n)
	}
	if got := k.lc2.commit(t); got != `["FLUSHALL"]` {
		t.Fatalf("group 2 committed %s", got)
	}
	if got := a.readReply(); got != "+OK\r\n" {
		t.Fatalf("FLUSHALL answered %q", got)
	}
	if got := k.lc.commit(t); got != `["SET" "a" "1"]` {
		t.Fatalf("group 1 committed %s", got)
	}
	if got := a.readReply(); got != "+OK\r\n" {
		t.Fatalf("SET answered %q", got)
	}
	if stats := a.do("INFO", "commandstats"); !strings.Contains(stats, "cmdstat_flushall:calls=1,") {
		t.Errorf("FLUSHALL is not counted once:\n%s", stats)
	}
	var want strings.Builder
	want.WriteString("db0 \"a\" exp=0 string \"1\"\n")
	for _, key := range sorted(k.keys[3]) {
		fmt.Fprintf(&want, "db3 %q exp=0 string \"v\"\n", key)
	}
	if got := dump(k.s); got != want.String() {
		t.Errorf("keyspace after FLUSHALL:\n%s\nwant:\n%s", got, want.String())
	}
}

// One group's FLUSHALL entry empties that group's database only, on
// every node: the others' state is their own logs'.
func TestFlushallEntryEmptiesItsGroupOnly(t *testing.T) {
	k := newKeylessCluster(t)
	k.apply(t, 2, "FLUSHALL")
	k.apply(t, 3, "FLUSHDB")
	var want strings.Builder
	for _, key := range sorted(k.keys[1]) {
		fmt.Fprintf(&want, "db0 %q exp=0 string \"v\"\n", key)
	}
	if got := dump(k.s); got != want.String() {
		t.Errorf("keyspace:\n%s\nwant:\n%s", got, want.String())
	}
}

// When one of FLUSHALL's proposals fails, the client hears it once, when
// the others are done too.
func TestFlushallPartFails(t *testing.T) {
	k := newKeylessCluster(t)
	a := connect(t, k.s)
	k.lc.failLeft(t)
	k.lc2.failLeft(t)
	a.write("FLUSHALL")
	e := k.lc2.next(t)
	e.done <- ErrNotProposed // never reached group 2's log
	waitFor(t, func() bool { // its failure is seen, and answers nobody yet
		k.s.shard.mu.Lock()
		defer k.s.shard.mu.Unlock()
		for _, g := range k.s.groups {
			if g.id == 2 {
				return len(g.prop.inflight) == 0
			}
		}
		return false
	})
	k.s.shard.mu.Lock()
	for _, c := range k.s.clients {
		if c.awaiting != 1 || c.out.Len() > c.sent {
			t.Errorf("after one part failed: awaiting %d, %d bytes unsent", c.awaiting, c.out.Len()-c.sent)
		}
	}
	k.s.shard.mu.Unlock()
	if got := k.lc.commit(t); got != `["FLUSHALL"]` {
		t.Fatalf("group 1 committed %s", got)
	}
	if got := a.readReply(); !strings.HasPrefix(got, "-UNKNOWN") {
		t.Errorf("FLUSHALL with one part applied, one not = %q, want -UNKNOWN", got)
	}
	if got := a.do("DBSIZE"); got != fmt.Sprintf(":%d\r\n", len(k.keys[2])) {
		t.Errorf("DBSIZE = %q: group 2's keys should be left", got)
	}
}
