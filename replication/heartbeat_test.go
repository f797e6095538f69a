package replication

import (
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// heartbeatTransport is an in-memory transport that keeps the heartbeat
// handler Raft gives it, as raft's NetworkTransport does to run it on the
// goroutine of the connection a heartbeat came in on.
type heartbeatTransport struct {
	*raft.InmemTransport
	handler func(raft.RPC)
}

func (t *heartbeatTransport) SetHeartbeatHandler(cb func(raft.RPC)) { t.handler = cb }

type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, io.EOF }
func (nopFSM) Restore(io.ReadCloser) error         { return nil }

// A newer leader's heartbeat reaching a leader that has not heard of the
// new term yet (one resumed from a pause, say) arrives on a transport
// goroutine, not Raft's main loop. Handling it there must not change the
// node's term or role under the main loop: a leader loop dispatching at
// that moment stamped its own new entries with the newer term, two
// different entries then had one index and term, and the deposed leader
// applied and acknowledged writes no other node has
// (TestClusterPauseLeader lost them). The heartbeat is refused; the newer
// leader's AppendEntries, which go through the main loop, depose it.
func TestHeartbeatFromANewerTermLeavesTermAndRoleToTheMainLoop(t *testing.T) {
	addr, inmem := raft.NewInmemTransport("")
	tr := &heartbeatTransport{InmemTransport: inmem}
	conf := raft.DefaultConfig()
	conf.LocalID = "leader"
	conf.HeartbeatTimeout, conf.ElectionTimeout = 50*time.Millisecond, 50*time.Millisecond
	conf.LeaderLeaseTimeout = 50 * time.Millisecond
	conf.Logger = hcLogger(slog.New(slog.NewTextHandler(io.Discard, nil)), "raft")
	store := raft.NewInmemStore()
	r, err := raft.NewRaft(conf, nopFSM{}, store, store, raft.NewDiscardSnapshotStore(), tr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Shutdown().Error() })
	if err := r.BootstrapCluster(raft.Configuration{Servers: []raft.Server{{ID: "leader", Address: addr}}}).Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the node to lead", func() bool { return r.State() == raft.Leader })
	if tr.handler == nil {
		t.Fatal("raft set no heartbeat handler")
	}

	term := r.CurrentTerm()
	respCh := make(chan raft.RPCResponse, 1)
	rpc := raft.RPC{
		Command: &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("newer"), Addr: []byte("newer")},
			Term:      term + 1,
		},
		RespChan: respCh,
	}
	tr.handler(rpc)
	resp := <-respCh
	if got := r.CurrentTerm(); got != term {
		t.Errorf("the heartbeat handler moved the term from %d to %d", term, got)
	}
	if r.State() != raft.Leader {
		t.Errorf("the heartbeat handler made the leader a %v", r.State())
	}
	if ae, ok := resp.Response.(*raft.AppendEntriesResponse); resp.Error == nil && (!ok || ae.Success) {
		t.Errorf("the heartbeat was answered %+v, want a refusal", resp.Response)
	}
}

// behindTransport is a leader's in-memory transport that makes one
// follower answer heartbeats as a node still in an older term does
// (refused, its own term below the leader's), and holds another's
// answers back a while, so the refusal reaches the leader first.
type behindTransport struct {
	*raft.InmemTransport
	on             atomic.Bool
	termDelta      atomic.Int64 // what the behind follower's term is off the leader's
	behind, slowed raft.ServerID
}

func (t *behindTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	err := t.InmemTransport.AppendEntries(id, target, args, resp)
	if !t.on.Load() || err != nil || len(args.Entries) > 0 || args.PrevLogEntry > 0 {
		return err // only heartbeats are changed
	}
	switch id {
	case t.behind:
		resp.Success, resp.Term = false, uint64(int64(args.Term)+t.termDelta.Load())
	case t.slowed:
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// A follower that has not yet taken the leader's term (a node restarted
// just now: its first AppendEntries from the leader's replicator will
// give it the term) refuses the leader's heartbeats, since the heartbeat
// path never changes a term. That refusal does not say another node
// leads, so it must not count against the leader in VerifyLeader: the
// leader kept leading its group, answered by the other follower, where
// counting it as a "no" made the leader step down and every read of the
// group answer -CLUSTERDOWN until an election (TestPartitionedClusterRestarts
// failed so in CI). A follower of a newer term still deposes it.
func TestHeartbeatRefusedByAFollowerBehindInTermKeepsTheLeader(t *testing.T) {
	ids := []raft.ServerID{"leader", "f1", "f2"}
	trans := map[raft.ServerID]*behindTransport{}
	var servers []raft.Server
	for _, id := range ids {
		addr, inmem := raft.NewInmemTransport(raft.ServerAddress(id))
		trans[id] = &behindTransport{InmemTransport: inmem, behind: "f2", slowed: "f1"}
		servers = append(servers, raft.Server{ID: id, Address: addr})
	}
	for _, a := range ids {
		for _, b := range ids {
			if a != b {
				trans[a].Connect(raft.ServerAddress(b), trans[b].InmemTransport)
			}
		}
	}
	rafts := map[raft.ServerID]*raft.Raft{}
	for _, id := range ids {
		conf := raft.DefaultConfig()
		conf.LocalID = id
		conf.Logger = hcLogger(slog.New(slog.NewTextHandler(io.Discard, nil)), "raft")
		conf.CommitTimeout = time.Minute // no idle AppendEntries: only heartbeats answer VerifyLeader
		if id == "leader" {
			conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
		} else {
			conf.HeartbeatTimeout, conf.ElectionTimeout = time.Minute, time.Minute // they never stand
		}
		store := raft.NewInmemStore()
		r, err := raft.NewRaft(conf, nopFSM{}, store, store, raft.NewDiscardSnapshotStore(), trans[id])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Shutdown().Error() })
		if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
			t.Fatal(err)
		}
		rafts[id] = r
	}
	leader := rafts["leader"]
	waitFor(t, "the node to lead", func() bool { return leader.State() == raft.Leader })
	if err := leader.Barrier(10 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	trans["leader"].termDelta.Store(-1)
	trans["leader"].on.Store(true)
	for i := range 3 {
		if err := leader.VerifyLeader().Error(); err != nil {
			t.Fatalf("VerifyLeader %d with f2 behind in term: %v (state %v)", i, err, leader.State())
		}
	}
	if leader.State() != raft.Leader {
		t.Fatalf("the leader is now a %v", leader.State())
	}
	// The positive control: a refusal from a newer term is a "no".
	trans["leader"].termDelta.Store(+1)
	if err := leader.VerifyLeader().Error(); err == nil {
		t.Fatal("VerifyLeader succeeded though f2 answered from a newer term")
	}
}
