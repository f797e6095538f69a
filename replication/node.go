package replication

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/redstream/redstream/server"
)

// Config is what a node needs to join its group.
type Config struct {
	Dir         string        // the node's data directory; Raft keeps its state under Dir/raft
	BindAddr    string        // host:port Raft traffic listens on (cluster-port)
	BusAddr     string        // host:port the other nodes reach it at (cluster-announce-ip, cluster-port)
	ClientAddr  string        // host:port clients reach it at (MOVED, CLUSTER SLOTS)
	NodeTimeout time.Duration // cluster-node-timeout: a leader unheard of this long is replaced
	// SnapshotAfter and TrailingLogs are raft-snapshot-threshold and
	// raft-trailing-logs.
	SnapshotAfter, TrailingLogs uint64
	Logger                      *slog.Logger
	// Transport, if set, carries Raft traffic instead of TCP on BindAddr
	// (tests: raft's in-memory transport, to cut and heal links).
	Transport raft.Transport
	// walSegmentSize is the size of a Raft log segment file (0: raft-wal's
	// 64 MiB). raft-wal drops compacted entries a whole file at a time, so
	// tests that need a compacted entry gone make it small.
	walSegmentSize int
}

// Node is a redstream node's membership of its Raft group: the raft
// instance, its log and snapshots, and the state machine that applies
// committed entries to the server's keyspace. It implements
// server.Cluster.
type Node struct {
	srv    *server.Server
	raft   *raft.Raft
	fsm    *fsm
	log    *wal.WAL
	meta   *metadb.BoltMetaDB
	trans  raft.Transport
	mux    *Mux // the node's Raft port, nil with an injected Transport
	self   server.ClusterMember
	logger *slog.Logger

	leading atomic.Bool // leader, and every earlier term's entry applied (Barrier)
	// unheard holds, for each follower the leader's heartbeats fail to
	// reach, when it last answered (INFO replication's lag).
	unheardMu sync.Mutex
	unheard   map[raft.ServerID]time.Time
	observer  *raft.Observer
	notify    chan bool
	done      chan struct{}
	wg        sync.WaitGroup
}

// Open starts srv's node of its group from cfg.Dir: a fresh directory
// makes a node of no group yet (CLUSTER BOOTSTRAP or ADDNODE on a leader
// makes it a member); an existing one resumes where it stopped.
func Open(cfg Config, srv *server.Server) (*Node, error) {
	dir := filepath.Join(cfg.Dir, "raft")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	id, err := nodeID(dir)
	if err != nil {
		return nil, err
	}
	if err := checkLog(filepath.Join(dir, "wal"), dir); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	n := &Node{
		srv:    srv,
		self:   server.ClusterMember{ID: id, Addr: cfg.ClientAddr, BusAddr: cfg.BusAddr, Self: true},
		logger: logger,
		notify: make(chan bool, 16),
		done:   make(chan struct{}),
	}
	n.fsm = newFSM(srv, logger)
	srv.SetCluster(n) // before Raft starts: its first applies reach the server
	if err := os.MkdirAll(filepath.Join(dir, "wal"), 0o755); err != nil {
		return nil, err
	}
	// raft-wal v0.4.0's Close leaves its metadata DB open (and locked):
	// the node keeps a handle to close it itself, so a node can restart
	// in the same process.
	n.meta = &metadb.BoltMetaDB{}
	walDir := filepath.Join(dir, "wal")
	n.log, err = wal.Open(walDir, wal.WithMetaStore(n.meta),
		wal.WithSegmentFiler(segment.NewFiler(walDir, walFS{fs.New()})),
		wal.WithSegmentSize(cfg.walSegmentSize), wal.WithLogger(hcLogger(logger, "wal")))
	if err != nil {
		return nil, fmt.Errorf("replication: opening the Raft log: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hcLogger(logger, "snapshots"))
	if err != nil {
		n.closeStores()
		return nil, err
	}
	if err := checkSnapshots(snaps, n.log, dir); err != nil {
		n.closeStores()
		return nil, err
	}
	n.trans = cfg.Transport
	if n.trans == nil {
		advertise, err := net.ResolveTCPAddr("tcp", cfg.BusAddr)
		if err != nil {
			n.closeStores()
			return nil, fmt.Errorf("replication: cluster bus address %q: %w", cfg.BusAddr, err)
		}
		n.mux, err = ListenMux(cfg.BindAddr, advertise, logger)
		if err != nil {
			n.closeStores()
			return nil, fmt.Errorf("replication: listening for Raft traffic on %s: %w", cfg.BindAddr, err)
		}
		stream, err := n.mux.Group(soleGroup)
		if err != nil {
			n.closeStores()
			return nil, err
		}
		// MaxRPCsInFlight 1: no pipelined replication. hashicorp/raft's
		// pipeline can deadlock once a follower's answer is a failure
		// (a timeout across a partition, a higher term after it): its
		// sender waits on the decoder, which waits on a consumer that
		// has returned. The replication goroutine then never ends, so
		// the follower gets no more entries and Shutdown never returns
		// (hashicorp/raft#612; tests/cluster_partition_test.go hit it).
		// raft's own notes find pipelining of little use with batching.
		n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: stream,
			MaxPool: 3, Timeout: 10 * time.Second, MaxRPCsInFlight: 1, Logger: hcLogger(logger, "transport")})
	}
	rc := raftConfig(cfg, id, logger)
	rc.NotifyCh = n.notify
	// A follower reads back every entry it applies, and a leader every
	// entry it sends after its log writer has stored it: from the cache,
	// not a pread each (followers -15% CPU per write, XADD 50 clients).
	logs, err := raft.NewLogCache(1024, n.log)
	if err != nil {
		n.closeStores()
		return nil, err
	}
	n.raft, err = raft.NewRaft(rc, n.fsm, logs, n.log, snaps, n.trans)
	if err != nil {
		if closer, ok := n.trans.(io.Closer); ok {
			closer.Close()
		}
		n.closeStores()
		return nil, err
	}
	n.unheard = map[raft.ServerID]time.Time{}
	events := make(chan raft.Observation, 64)
	n.observer = raft.NewObserver(events, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation:
			return true
		}
		return false
	})
	n.raft.RegisterObserver(n.observer)
	n.wg.Add(2)
	go n.watchLeadership()
	go n.watchHeartbeats(events)
	return n, nil
}

// raftConfig derives Raft's timing from cluster-node-timeout: a follower
// that has not heard from its leader for that long starts an election,
// and a leader that has not reached a majority for half of it steps down
// (so it stops serving before anyone else can be elected).
func raftConfig(cfg Config, id string, logger *slog.Logger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(id)
	timeout := max(cfg.NodeTimeout, 50*time.Millisecond)
	rc.HeartbeatTimeout = timeout
	rc.ElectionTimeout = timeout
	rc.LeaderLeaseTimeout = timeout / 2
	// With no new entry, the leader tells followers its commit index every
	// CommitTimeout (an AppendEntries each): under load new entries carry
	// it anyway, so this only bounds how stale an idle follower's applied
	// state is (READONLY reads), and costs RPCs while idle: 5 ms kept an
	// idle leader at 8% of a core, 50 ms (raft's default) at 2.5%.
	rc.CommitTimeout = 50 * time.Millisecond
	rc.MaxAppendEntries = 256
	rc.BatchApplyCh = true // many proposals waiting become one append and one fsync
	rc.SnapshotThreshold = max(cfg.SnapshotAfter, 1)
	rc.TrailingLogs = cfg.TrailingLogs
	rc.SnapshotInterval = 10 * time.Second
	rc.Logger = hcLogger(logger, "raft")
	return rc
}

// nodeID returns the node's ID, made on first start and kept in dir (as
// Redis keeps its node ID in nodes.conf): 40 hex characters.
func nodeID(dir string) (string, error) {
	path := filepath.Join(dir, "node-id")
	b, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if len(id) != 40 {
			return "", fmt.Errorf("replication: %s holds %q, not a node ID", path, id)
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var raw [20]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	id := hex.EncodeToString(raw[:])
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := syncFile(tmp); err != nil {
		return "", err
	}
	return id, os.Rename(tmp, path)
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// watchLeadership follows Raft's leadership changes. A new leader serves
// only after a Barrier: every entry of earlier terms is applied, so its
// keyspace holds every write acknowledged before it was elected.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	for {
		select {
		case <-n.done:
			return
		case leader := <-n.notify:
			if !leader {
				n.setLeading(false)
				continue
			}
			if err := n.raft.Barrier(0).Error(); err != nil {
				n.logger.Warn("new leader could not apply its log; not serving", "err", err)
				continue
			}
			if n.raft.State() == raft.Leader {
				n.setLeading(true)
			}
		}
	}
}

// watchHeartbeats notes which followers the leader cannot reach, and
// since when.
func (n *Node) watchHeartbeats(events <-chan raft.Observation) {
	defer n.wg.Done()
	for {
		select {
		case <-n.done:
			return
		case o := <-events:
			n.unheardMu.Lock()
			switch e := o.Data.(type) {
			case raft.FailedHeartbeatObservation:
				if _, ok := n.unheard[e.PeerID]; !ok {
					n.unheard[e.PeerID] = e.LastContact
				}
			case raft.ResumedHeartbeatObservation:
				delete(n.unheard, e.PeerID)
			}
			n.unheardMu.Unlock()
		}
	}
}

// lastContact is how long ago follower id last answered the leader: 0
// while its heartbeats succeed.
func (n *Node) lastContact(id string) time.Duration {
	n.unheardMu.Lock()
	defer n.unheardMu.Unlock()
	if at, ok := n.unheard[raft.ServerID(id)]; ok {
		return time.Since(at)
	}
	return 0
}

func (n *Node) setLeading(on bool) {
	if n.leading.Swap(on) != on {
		n.logger.Info("leadership changed", "leading", on, "term", n.raft.CurrentTerm())
		n.srv.LeadershipChanged(on)
	}
}

// Close stops the node: its Raft instance, log and transport.
func (n *Node) Close() error {
	n.raft.DeregisterObserver(n.observer)
	err := n.raft.Shutdown().Error()
	close(n.done)
	n.wg.Wait()
	n.setLeading(false)
	if closer, ok := n.trans.(io.Closer); ok {
		if cerr := closer.Close(); err == nil {
			err = cerr
		}
	}
	if cerr := n.closeStores(); err == nil {
		err = cerr
	}
	return err
}

// closeStores closes the Raft log and its metadata, and the Raft port.
func (n *Node) closeStores() error {
	err := errors.Join(n.log.Close(), n.meta.Close())
	if n.mux != nil {
		err = errors.Join(err, n.mux.Close())
	}
	return err
}

// Self implements server.Cluster.
func (n *Node) Self() server.ClusterMember {
	m := n.self
	m.Leader = n.leading.Load()
	return m
}

// Members implements server.Cluster: the voters of the latest
// configuration, with the client addresses the group's log recorded.
func (n *Node) Members() []server.ClusterMember {
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return nil
	}
	_, leader := n.raft.LeaderWithID()
	addrs := n.fsm.clientAddrs()
	var out []server.ClusterMember
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		m := server.ClusterMember{ID: string(s.ID), BusAddr: string(s.Address), Addr: addrs[string(s.ID)],
			Leader: s.ID == leader, Self: string(s.ID) == n.self.ID}
		if m.Self {
			m.Addr = n.self.Addr
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b server.ClusterMember) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Status implements server.Cluster.
func (n *Node) Status() server.ClusterStatus {
	_, leader := n.raft.LeaderWithID()
	st := server.ClusterStatus{
		Role:         strings.ToLower(n.raft.State().String()),
		Term:         n.raft.CurrentTerm(),
		LeaderID:     string(leader),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.raft.AppliedIndex(),
		LastIndex:    n.raft.LastIndex(),
	}
	if matches := n.raft.MatchIndexes(); matches != nil {
		for _, m := range n.Members() {
			if !m.Self {
				st.Followers = append(st.Followers, server.FollowerStatus{ID: m.ID, Addr: m.Addr,
					MatchIndex: matches[raft.ServerID(m.ID)], LastContact: n.lastContact(m.ID)})
			}
		}
	}
	return st
}

// Leading implements server.Cluster.
func (n *Node) Leading() bool {
	return n.leading.Load() && n.raft.State() == raft.Leader
}

// Propose implements server.Cluster.
func (n *Node) Propose(entry []byte) func() error {
	f := n.raft.Apply(entry, 0)
	return func() error {
		if err := f.Error(); err != nil {
			if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrEnqueueTimeout) {
				return fmt.Errorf("%w (%v)", server.ErrNotProposed, err)
			}
			return err
		}
		if err, ok := f.Response().(error); ok {
			return err
		}
		return nil
	}
}

// VerifyLeader implements server.Cluster.
func (n *Node) VerifyLeader() error { return n.raft.VerifyLeader().Error() }

// Bootstrap implements server.Cluster: a fresh node becomes a group of
// one and, once it leads, records its client address in the log.
func (n *Node) Bootstrap() error {
	cfg := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: raft.ServerID(n.self.ID), Address: raft.ServerAddress(n.self.BusAddr)}}}
	if err := n.raft.BootstrapCluster(cfg).Error(); err != nil {
		if errors.Is(err, raft.ErrCantBootstrap) {
			return errors.New("this node already has Raft state (it is, or was, in a group)")
		}
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for !n.Leading() {
		if time.Now().After(deadline) {
			return errors.New("bootstrapped, but did not become leader within 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return n.applyMember(memberChange{ID: n.self.ID, Addr: n.self.Addr})
}

// AddNode implements server.Cluster: the member's client address goes
// into the log first, so every node can redirect to it once it votes.
func (n *Node) AddNode(m server.ClusterMember) error {
	if !n.Leading() {
		return errors.New("not the leader")
	}
	if err := n.applyMember(memberChange{ID: m.ID, Addr: m.Addr}); err != nil {
		return err
	}
	return n.raft.AddVoter(raft.ServerID(m.ID), raft.ServerAddress(m.BusAddr), 0, 0).Error()
}

// RemoveNode implements server.Cluster.
func (n *Node) RemoveNode(id string) error {
	if !n.Leading() {
		return errors.New("not the leader")
	}
	if err := n.raft.RemoveServer(raft.ServerID(id), 0, 0).Error(); err != nil {
		return err
	}
	return n.applyMember(memberChange{ID: id, Remove: true})
}

func (n *Node) applyMember(m memberChange) error {
	f := n.raft.Apply(encodeMember(m), 10*time.Second)
	if err := f.Error(); err != nil {
		return err
	}
	if err, ok := f.Response().(error); ok {
		return err
	}
	return nil
}

// Replicas implements server.Cluster.
func (n *Node) Replicas(index uint64) int {
	count := 0
	for id, match := range n.raft.MatchIndexes() {
		if string(id) != n.self.ID && match >= index {
			count++
		}
	}
	return count
}

// Stats is hashicorp/raft's own view, for logs and debugging.
func (n *Node) Stats() map[string]string { return n.raft.Stats() }

// ensure the interface is met.
var _ server.Cluster = (*Node)(nil)

var _ io.Closer = (*Node)(nil)
