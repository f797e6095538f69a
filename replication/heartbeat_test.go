package replication

import (
	"io"
	"log/slog"
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
