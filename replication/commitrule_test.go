package replication

import (
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// recordingFSM keeps the index and term of every entry it applies.
type recordingFSM struct {
	mu      sync.Mutex
	applied []raft.Log
}

func (f *recordingFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, raft.Log{Index: l.Index, Term: l.Term})
	return nil
}

func (f *recordingFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, io.EOF }
func (f *recordingFSM) Restore(io.ReadCloser) error         { return nil }

func (f *recordingFSM) entries() []raft.Log {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]raft.Log(nil), f.applied...)
}

// A follower may hold entries past the leader's log that a deposed
// leader wrote and no majority kept. An AppendEntries whose previous
// entry matches, but that carries none of those later indexes, tells the
// follower nothing about them, so its commit index may move only to the
// last entry the request vouches for, never to the end of the follower's
// own log (upstream took min(leader's commit, our last index) and applied
// the deposed leader's entries, diverging this node's state from the
// others'). The leader's next request, which overwrites them, then
// commits its own.
func TestFollowerCommitsOnlyWhatTheLeaderVouchedFor(t *testing.T) {
	followerAddr, followerTrans := raft.NewInmemTransport("")
	leaderAddr, leaderTrans := raft.NewInmemTransport("")
	followerTrans.Connect(leaderAddr, leaderTrans)
	leaderTrans.Connect(followerAddr, followerTrans)

	// The follower's log: a configuration and two commands of term 1,
	// then three commands a deposed leader of term 2 wrote.
	store := raft.NewInmemStore()
	voters := raft.Configuration{Servers: []raft.Server{
		{ID: "follower", Address: followerAddr}, {ID: "leader", Address: leaderAddr}, {ID: "third", Address: "nowhere"}}}
	logs := []*raft.Log{{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(voters)}}
	for i := uint64(2); i <= 6; i++ {
		term := uint64(1)
		if i >= 4 {
			term = 2
		}
		logs = append(logs, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: []byte("stale " + strconv.FormatUint(i, 10))})
	}
	if err := store.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := store.SetUint64([]byte("CurrentTerm"), 2); err != nil {
		t.Fatal(err)
	}

	conf := raft.DefaultConfig()
	conf.LocalID = "follower"
	conf.HeartbeatTimeout, conf.ElectionTimeout = time.Minute, time.Minute // it must stay a follower
	conf.LeaderLeaseTimeout = time.Minute
	conf.Logger = hcLogger(slog.New(slog.NewTextHandler(io.Discard, nil)), "raft")
	fsm := &recordingFSM{}
	r, err := raft.NewRaft(conf, fsm, store, store, raft.NewDiscardSnapshotStore(), followerTrans)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Shutdown().Error() })

	commitIndex := func() uint64 {
		n, _ := strconv.ParseUint(r.Stats()["commit_index"], 10, 64)
		return n
	}
	appendEntries := func(req *raft.AppendEntriesRequest) {
		t.Helper()
		var resp raft.AppendEntriesResponse
		if err := leaderTrans.AppendEntries("follower", followerAddr, req, &resp); err != nil {
			t.Fatal(err)
		}
		if !resp.Success {
			t.Fatalf("AppendEntries(prev %d, %d entries) refused", req.PrevLogEntry, len(req.Entries))
		}
	}

	// The leader of term 3 has committed up to 6 in its own log. It
	// checks that the follower agrees with it up to 3 and sends nothing
	// yet: entries 4..6 of term 2 are not the leader's.
	header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("leader"), Addr: []byte(leaderAddr)}
	appendEntries(&raft.AppendEntriesRequest{RPCHeader: header, Term: 3, PrevLogEntry: 3, PrevLogTerm: 1, LeaderCommitIndex: 6})
	if got := commitIndex(); got != 3 {
		t.Fatalf("commit index %d after a request that vouches for entries up to 3, want 3", got)
	}
	waitFor(t, "the follower to apply entries 2 and 3", func() bool { return len(fsm.entries()) == 2 })

	// Its next request carries its entries 4 and 5 of term 3, which
	// replace the stale ones; the commit moves to 5, the last it sent.
	ours := []*raft.Log{
		{Index: 4, Term: 3, Type: raft.LogCommand, Data: []byte("leader 4")},
		{Index: 5, Term: 3, Type: raft.LogCommand, Data: []byte("leader 5")}}
	appendEntries(&raft.AppendEntriesRequest{RPCHeader: header, Term: 3, PrevLogEntry: 3, PrevLogTerm: 1, Entries: ours, LeaderCommitIndex: 6})
	if got := commitIndex(); got != 5 {
		t.Fatalf("commit index %d after the leader's entries up to 5, want 5", got)
	}
	waitFor(t, "the follower to apply the leader's entries 4 and 5", func() bool { return len(fsm.entries()) == 4 })
	for _, l := range fsm.entries() {
		if l.Index >= 4 && l.Term != 3 {
			t.Fatalf("the follower applied entry %d of term %d, a deposed leader's, not the leader's", l.Index, l.Term)
		}
	}
	// An older request, resent, never moves the commit back.
	appendEntries(&raft.AppendEntriesRequest{RPCHeader: header, Term: 3, PrevLogEntry: 3, PrevLogTerm: 1, LeaderCommitIndex: 6})
	if got := commitIndex(); got != 5 {
		t.Fatalf("commit index %d after a resent older request, want 5", got)
	}
}
