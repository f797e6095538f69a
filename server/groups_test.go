package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A client's replies keep its commands' order across groups: a write to
// another group than the one its awaited writes went to waits for their
// replies before it is proposed, since the two groups commit
// independently and the second could be answered first.
func TestRepliesKeepOrderAcrossGroups(t *testing.T) {
	s, lc, lc2 := twoGroups(t, "q")
	a := connect(t, s)
	// One write, so that one turn reads both: the first to group 2, the
	// second, to group 1, must wait for the first's reply.
	if _, err := a.conn.Write([]byte("*3\r\n$5\r\nRPUSH\r\n$1\r\nq\r\n$1\r\nx\r\n*3\r\n$5\r\nRPUSH\r\n$5\r\nother\r\n$1\r\ny\r\n")); err != nil {
		t.Fatal(err)
	}
	first := lc2.next(t)
	waitFor(t, func() bool { // the loop has read the second write, and holds it back
		s.shard.mu.Lock()
		defer s.shard.mu.Unlock()
		for _, c := range s.clients {
			if c.stashed != nil {
				return true
			}
		}
		return false
	})
	if n := len(lc.entries); n != 0 {
		t.Fatalf("group 1 got %d entries before group 2's was answered", n)
	}
	if err := s.ApplyEntryAt(2, first.data); err != nil {
		t.Fatal(err)
	}
	first.done <- nil
	if got := lc.commit(t); got != `["RPUSH" "other" "y"]` {
		t.Fatalf("group 1 committed %s", got)
	}
	for i, want := range []string{":1\r\n", ":1\r\n"} {
		if got := a.readReply(); got != want {
			t.Fatalf("reply %d = %q, want %q", i, got, want)
		}
	}
}

// A write refused at dispatch (here -CROSSSLOT) behind writes still in
// the log is answered after them: its refusal is a reply too. It was
// written at once, ahead of the earlier writes' replies, so a pipelining
// client matched every later reply to the wrong command.
func TestRefusalBehindProposalsKeepsOrder(t *testing.T) {
	s, lc := newLogCluster(t)
	a := connect(t, s)
	// One write, read in one turn: SET is proposed, then MSET (a and b
	// hash to different slots) is refused while SET is in the log.
	if _, err := a.conn.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n*5\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n")); err != nil {
		t.Fatal(err)
	}
	if got := lc.commit(t); got != `["SET" "a" "1"]` {
		t.Fatalf("committed %s", got)
	}
	if got := a.readReply(); got != "+OK\r\n" {
		t.Fatalf("first reply %q, want SET's +OK", got)
	}
	if got := a.readReply(); !strings.HasPrefix(got, "-CROSSSLOT") {
		t.Fatalf("second reply %q, want MSET's -CROSSSLOT", got)
	}
}

// WAIT counts the followers of the group the connection last wrote to,
// the first group's for a connection that wrote nothing.
func TestWaitCountsTheLastWrittenGroup(t *testing.T) {
	s, lc, lc2 := twoGroups(t, "q")
	lc.replicas, lc2.replicas = 2, 1
	a, b := connect(t, s), connect(t, s)
	a.write("RPUSH", "q", "x")
	lc2.commit(t)
	if got := a.readReply(); got != ":1\r\n" {
		t.Fatalf("RPUSH answered %q", got)
	}
	if got := a.do("WAIT", "0", "0"); got != ":1\r\n" {
		t.Errorf("WAIT after a write to group 2 = %q, want :1 (group 2's followers)", got)
	}
	if got := b.do("WAIT", "0", "0"); got != ":2\r\n" {
		t.Errorf("WAIT with no write = %q, want :2 (the first group's followers)", got)
	}
}

// COPY ... DB 0, the only database a cluster client has, copies within
// the key's group's database, whichever group that is.
func TestCopyToDatabaseZeroStaysInTheGroup(t *testing.T) {
	s, _, lc2 := twoGroups(t, "{q}a")
	a := connect(t, s)
	a.write("SET", "{q}a", "v")
	lc2.commit(t)
	if got := a.readReply(); got != "+OK\r\n" {
		t.Fatalf("SET answered %q", got)
	}
	a.write("COPY", "{q}a", "{q}b", "DB", "0")
	lc2.commit(t)
	if got := a.readReply(); got != ":1\r\n" {
		t.Fatalf("COPY ... DB 0 answered %q, want :1", got)
	}
	if got, want := dump(s), "db2 \"{q}a\" exp=0 string \"v\"\ndb2 \"{q}b\" exp=0 string \"v\"\n"; got != want {
		t.Errorf("keyspace:\n%s\nwant:\n%s", got, want)
	}
}

// twoGroups is a node leading two groups: group 1 (database 0, lc) and
// group 2 (database 2, lc2), which owns the slot of key.
func twoGroups(t *testing.T, key string) (*Server, *logCluster, *logCluster) {
	t.Helper()
	s, lc := newLogCluster(t)
	lc2 := lc.another(2)
	if err := s.HostGroup(2, 2, lc2); err != nil {
		t.Fatal(err)
	}
	slot := KeySlot([]byte(key))
	if err := s.AssignSlots(slot, slot, 2); err != nil {
		t.Fatal(err)
	}
	return s, lc, lc2
}

// A node that leads any of its groups is a master to HELLO and ROLE, as
// CLUSTER NODES shows it, though it follows the first group; one that
// leads none is a replica.
func TestLeadingAnyGroupIsMaster(t *testing.T) {
	s, lc, lc2 := twoGroups(t, "q")
	lc.set(func() { lc.deposed, lc.status.Role = true, "follower" })
	a := connect(t, s)
	if got := a.do("HELLO", "2"); !strings.Contains(got, "$4\r\nrole\r\n$6\r\nmaster\r\n") {
		t.Errorf("HELLO leading group 2 only = %q, want role master", got)
	}
	if got := a.do("ROLE"); !strings.HasPrefix(got, "*3\r\n$6\r\nmaster\r\n") {
		t.Errorf("ROLE leading group 2 only = %q, want master", got)
	}
	lc2.set(func() { lc2.deposed = true })
	if got := a.do("HELLO", "2"); !strings.Contains(got, "$4\r\nrole\r\n$7\r\nreplica\r\n") {
		t.Errorf("HELLO leading nothing = %q, want role replica", got)
	}
}

// MapSlots: a slot of a hosted group is served here, a slot of a group
// the map says another node leads is redirected there, and a slot no
// group owns answers -CLUSTERDOWN. CLUSTER SLOTS shows the other group's
// range under its leader.
func TestMappedSlotsOfOtherGroupsRedirect(t *testing.T) {
	s, lc := newLogCluster(t)
	far := &fakeCluster{self: lc.self, members: []ClusterMember{
		{ID: strings.Repeat("f", 40), Addr: "10.0.0.9:7000", BusAddr: "10.0.0.9:17000", Leader: true},
		{ID: strings.Repeat("e", 40), Addr: "10.0.0.8:7000", BusAddr: "10.0.0.8:17000"},
	}}
	owners := make([]uint16, numSlots)
	there, none := KeySlot([]byte("b")), KeySlot([]byte("c"))
	for i := range owners {
		owners[i] = 1
	}
	owners[there], owners[none] = 7, 0
	if err := s.MapSlots(owners, nil, func(id uint16) Cluster {
		if id == 7 {
			return far
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	a := connect(t, s)
	a.write("SET", "a", "1")
	if got := lc.commit(t); got != `["SET" "a" "1"]` {
		t.Fatalf("group 1 committed %s", got)
	}
	if got := a.readReply(); got != "+OK\r\n" {
		t.Fatalf("SET a = %q", got)
	}
	if got, want := a.do("SET", "b", "1"), "-MOVED "+strconv.Itoa(there)+" 10.0.0.9:7000\r\n"; got != want {
		t.Errorf("SET b = %q, want %q", got, want)
	}
	a.do("READONLY")
	if got, want := a.do("GET", "b"), "-MOVED "+strconv.Itoa(there)+" 10.0.0.9:7000\r\n"; got != want {
		t.Errorf("READONLY GET b = %q, want %q: this node holds none of its data", got, want)
	}
	if got := a.do("GET", "c"); !strings.HasPrefix(got, "-CLUSTERDOWN") {
		t.Errorf("GET c = %q, want -CLUSTERDOWN", got)
	}
	slots := a.do("CLUSTER", "SLOTS")
	row := fmt.Sprintf(":%d\r\n:%d\r\n*4\r\n$8\r\n10.0.0.9\r\n:7000\r\n", there, there)
	if !strings.Contains(slots, row) {
		t.Errorf("CLUSTER SLOTS = %q, want a row %q", slots, row)
	}
}

// A client blocked on a key whose slot the map gives to another group is
// answered -MOVED to that group's leader, as Redis answers the clients
// blocked on a slot that moved away: its wait was in the old group's
// database, where no write of that slot lands any more.
func TestBlockedClientOfAMovedSlotIsRedirected(t *testing.T) {
	s, lc := newLogCluster(t)
	a := connect(t, s)
	a.write("BLPOP", "q", "0")
	lc.commit(t) // finds nothing: the client blocks
	waitBlocked(t, s, 1)
	far := &fakeCluster{members: []ClusterMember{{ID: strings.Repeat("f", 40), Addr: "10.0.0.9:7000", Leader: true}}}
	owners := make([]uint16, numSlots)
	for i := range owners {
		owners[i] = 1
	}
	slot := KeySlot([]byte("q"))
	owners[slot] = 7
	if err := s.MapSlots(owners, nil, func(uint16) Cluster { return far }); err != nil {
		t.Fatal(err)
	}
	a.conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a failure is a reply that never comes
	if got, want := a.readReply(), fmt.Sprintf("-MOVED %d 10.0.0.9:7000\r\n", slot); got != want {
		t.Fatalf("blocked BLPOP q after its slot moved: %q, want %q", got, want)
	}
}

// INFO replication on a node hosting several groups adds one line per
// group after the first group's fields.
func TestInfoReplicationListsEveryGroup(t *testing.T) {
	s, lc, lc2 := twoGroups(t, "q")
	lc2.set(func() {
		lc2.status = ClusterStatus{Role: "follower", Term: 7, LeaderID: "b", PreferredLeader: "c", CommitIndex: 40, AppliedIndex: 39, LastIndex: 41}
	})
	info := connect(t, s).do("INFO", "replication")
	want := []string{"raft_groups:2\r\n", "raft_group1:state=" + lc.status.Role + ",",
		"raft_group2:state=follower,term=7,leader_id=b,preferred_leader_id=c,commit_index=40,applied_index=39,last_index=41\r\n"}
	for _, w := range want {
		if !strings.Contains(info, w) {
			t.Errorf("INFO replication has no %q:\n%s", w, info)
		}
	}
}
