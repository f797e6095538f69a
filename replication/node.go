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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redstream/redstream/server"
)

// Config is what a node needs to join its groups.
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
	// settleWait bounds how long a node that stopped leading waits to
	// learn what became of the entries it had in flight (Group.settle;
	// 0: two election timeouts). Tests that time the heal of a partition
	// by hand make it long.
	settleWait time.Duration
	// beforeHost, if set, runs as HostDataGroup starts (tests: a group
	// slow to open).
	beforeHost func(id uint16)
}

// Node is a redstream node's membership of Raft groups. It holds what
// the process has once: the node's ID, its Raft port (the Mux every
// group's traffic shares), the server and the logger. Each group it
// hosts is a Group, keyed by group number. The main group (mainGroup,
// under Dir/raft) has the server's keyspace as its state machine, and
// the server.Cluster methods Node implements are that group's; OpenGroup
// adds others.
type Node struct {
	srv    *server.Server
	fsm    *fsm
	mux    *Mux // the node's Raft port, nil with an injected Transport
	cfg    Config
	self   server.ClusterMember
	logger *slog.Logger

	main    *Group      // groups[mainGroup]
	parts   *partitions // the cluster map; nil with an injected Transport (partitions.go)
	mu      sync.Mutex
	groups  map[uint16]*Group // the open groups
	opening map[uint16]bool   // groups being opened
	closed  bool
}

// mainGroup is the number of the group whose state machine is the
// server's keyspace: every key's group until partitioning spreads keys
// over groups (issue 14, PARTITIONS.md).
const mainGroup uint16 = 1

// Open starts srv's node from cfg.Dir, with its main group: a fresh
// directory makes a node of no group yet (CLUSTER BOOTSTRAP or ADDNODE on
// a leader makes it a member); an existing one resumes where it stopped.
func Open(cfg Config, srv *server.Server) (*Node, error) {
	dir := filepath.Join(cfg.Dir, "raft")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	id, err := nodeID(dir)
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	n := &Node{
		srv:     srv,
		cfg:     cfg,
		self:    server.ClusterMember{ID: id, Addr: cfg.ClientAddr, BusAddr: cfg.BusAddr, Self: true},
		logger:  logger,
		groups:  map[uint16]*Group{},
		opening: map[uint16]bool{},
	}
	n.fsm = newFSM(srv, logger)
	// The main group's files are directly under Dir/raft, where a node
	// of a single group has always kept them.
	n.main = newGroup(mainGroup, dir, n.self, logger)
	n.main.onLeading = srv.LeadershipChanged
	n.main.addrs = n.fsm.clientAddrs
	n.main.preferred = func() string { return n.preferredLeader(mainGroup) }
	n.groups[mainGroup] = n.main
	srv.SetCluster(n) // before Raft starts: its first applies reach the server
	if cfg.Transport == nil {
		advertise, err := net.ResolveTCPAddr("tcp", cfg.BusAddr)
		if err != nil {
			return nil, fmt.Errorf("replication: cluster bus address %q: %w", cfg.BusAddr, err)
		}
		n.mux, err = ListenMux(cfg.BindAddr, advertise, logger)
		if err != nil {
			return nil, fmt.Errorf("replication: listening for Raft traffic on %s: %w", cfg.BindAddr, err)
		}
	}
	if err := n.main.open(cfg, n.fsm, n.mux, cfg.Transport); err != nil {
		if n.mux != nil {
			n.mux.Close()
		}
		return nil, err
	}
	if n.mux != nil {
		if err := n.startPartitions(); err != nil {
			n.Close()
			return nil, fmt.Errorf("replication: the cluster map: %w", err)
		}
	}
	return n, nil
}

// OpenGroup starts this node's voter of group id, with machine as its
// state machine, its state in Dir/raft/groups/<id> and its traffic on
// the node's Raft port (a node given Config.Transport has none, and opens
// no other group). A fresh group has no configuration yet: Bootstrap it,
// or have its leader add this node. Closing the node closes the group.
func (n *Node) OpenGroup(id uint16, machine raft.FSM) (*Group, error) {
	return n.openGroup(id, machine, nil)
}

// HostDataGroup opens group id as one of the server's data groups
// (server/groups.go): its state is database id-1 of the server (every
// node maps a group to the same database, so its snapshots and restores
// name the same one), its leadership changes reach the server, and the
// server sends it the writes of the slots AssignSlots gives it. Its
// members' client addresses are the main group's address book: a data
// group's voters are nodes of the main group.
func (n *Node) HostDataGroup(id uint16) (*Group, error) {
	if n.cfg.beforeHost != nil {
		n.cfg.beforeHost(id)
	}
	db := int(id) - 1
	g, err := n.openGroup(id, newGroupFSM(n.srv, n.logger.With("group", id), db), func(g *Group) {
		g.onLeading = func(leading bool) { n.srv.GroupLeadershipChanged(id, leading) }
		g.addrs = n.fsm.clientAddrs
		g.preferred = func() string { return n.preferredLeader(id) }
	})
	if err != nil {
		return nil, err
	}
	if err := n.srv.HostGroup(id, db, dataGroup{g}); err != nil {
		return nil, err
	}
	return g, nil
}

// openGroup opens group id with machine; prepare, if set, sets the
// group up before it starts.
func (n *Node) openGroup(id uint16, machine raft.FSM, prepare func(*Group)) (*Group, error) {
	if id == mainGroup || id == forwardGroup {
		return nil, fmt.Errorf("replication: group %d is not one OpenGroup opens", id)
	}
	n.mu.Lock()
	switch {
	case n.closed:
		n.mu.Unlock()
		return nil, errors.New("replication: the node is closed")
	case n.groups[id] != nil || n.opening[id]:
		n.mu.Unlock()
		return nil, fmt.Errorf("replication: group %d is already open", id)
	}
	n.opening[id] = true
	n.mu.Unlock()
	g := newGroup(id, filepath.Join(n.cfg.Dir, "raft", "groups", strconv.Itoa(int(id))), n.self,
		n.logger.With("group", id))
	if prepare != nil {
		prepare(g)
	}
	err := g.open(n.cfg, machine, n.mux, nil)
	n.mu.Lock()
	delete(n.opening, id)
	closed := n.closed
	if err == nil && !closed {
		n.groups[id] = g
	}
	n.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if closed { // Close ran while the group opened
		g.close()
		return nil, errors.New("replication: the node is closed")
	}
	return g, nil
}

// Group is the node's voter of group id, or nil if the node hosts none.
func (n *Node) Group(id uint16) *Group {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.groups[id]
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

// Close stops the node: every group it hosts (their Raft instances,
// logs and transports), then its Raft port.
func (n *Node) Close() error {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	n.stopPartitions()
	n.mu.Lock()
	groups := n.groups
	n.groups = map[uint16]*Group{}
	n.mu.Unlock()
	var err error
	for id, g := range groups {
		if id != mainGroup {
			if cerr := g.close(); err == nil {
				err = cerr
			}
		}
	}
	// The main group last: the server hears it stop leading once nothing
	// else is running.
	if cerr := n.main.close(); err == nil {
		err = cerr
	}
	if n.mux != nil {
		if cerr := n.mux.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Self implements server.Cluster.
func (n *Node) Self() server.ClusterMember {
	m := n.self
	m.Leader = n.main.leading.Load()
	return m
}

// Members implements server.Cluster: the main group's voters, with the
// client addresses its log recorded.
func (n *Node) Members() []server.ClusterMember { return n.main.Members() }

// Status implements server.Cluster: the main group's.
func (n *Node) Status() server.ClusterStatus { return n.main.Status() }

// Leading implements server.Cluster: whether this node leads the main
// group.
func (n *Node) Leading() bool { return n.main.Leading() }

// Propose implements server.Cluster.
func (n *Node) Propose(entry []byte) func() error { return proposeEntry(n.main, entry) }

// proposeEntry hands the server's entry to g (server.Cluster's Propose).
// An entry Raft refused never reached the log: the server says so
// (ErrNotProposed). One in the log when this node stopped leading is
// settled by the log that follows (settle).
func proposeEntry(g *Group, entry []byte) func() error {
	var restores uint64
	if g.restores != nil {
		restores = g.restores.Load()
	}
	f := g.raft.Apply(entry, 0)
	return func() error {
		err := f.Error()
		switch {
		case err == nil:
			if err, ok := f.Response().(error); ok {
				return err
			}
			return nil
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrEnqueueTimeout),
			errors.Is(err, raft.ErrLeadershipTransferInProgress):
			return fmt.Errorf("%w (%v)", server.ErrNotProposed, err)
		case errors.Is(err, raft.ErrLeadershipLost) && f.Index() > 0 && g.restores != nil:
			if t, ok := f.(interface{ Term() uint64 }); ok {
				return g.settle(f.Index(), t.Term(), restores, err)
			}
		}
		return err
	}
}

// VerifyLeader implements server.Cluster.
func (n *Node) VerifyLeader() error { return n.main.VerifyLeader() }

// Bootstrap implements server.Cluster: a fresh node becomes a main group
// of one and, once it leads, records its client address in the log.
func (n *Node) Bootstrap() error {
	if err := n.main.Bootstrap([]server.ClusterMember{n.self}); err != nil {
		return err
	}
	if n.parts != nil {
		// The metadata group starts with the main group; its leader then
		// adds the main group's members (syncMetaMembers).
		if err := n.parts.meta.Bootstrap([]server.ClusterMember{n.self}); err != nil {
			return fmt.Errorf("the cluster map's group: %w", err)
		}
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
	return n.main.AddCaughtUp(m)
}

// RemoveNode implements server.Cluster.
func (n *Node) RemoveNode(id string) error {
	if !n.Leading() {
		return errors.New("not the leader")
	}
	if err := n.main.RemoveVoter(id); err != nil {
		return err
	}
	return n.applyMember(memberChange{ID: id, Remove: true})
}

func (n *Node) applyMember(m memberChange) error {
	resp, err := n.main.Propose(encodeMember(m), 10*time.Second)
	if err != nil {
		return err
	}
	if err, ok := resp.(error); ok {
		return err
	}
	return nil
}

// Replicas implements server.Cluster: the main group's followers whose
// logs hold index.
func (n *Node) Replicas(index uint64) int { return n.main.replicas(index) }

// Durable implements server.Cluster: whether this node's log of the main
// group holds index on disk.
func (n *Node) Durable(index uint64) bool { return n.main.durable(index) }

// Stats is hashicorp/raft's own view of the main group, for logs and
// debugging.
func (n *Node) Stats() map[string]string { return n.main.raft.Stats() }

// ensure the interface is met.
var _ server.Cluster = (*Node)(nil)

var _ io.Closer = (*Node)(nil)

// dataGroup is a data group as the server sees it (server.Cluster).
// Membership is the cluster map's business, not the server's CLUSTER
// commands': those act on the main group.
type dataGroup struct{ *Group }

var errDataGroupMembership = errors.New("replication: a data group's members change through the cluster map, not this command")

func (d dataGroup) Self() server.ClusterMember         { return d.self }
func (d dataGroup) Propose(entry []byte) func() error  { return proposeEntry(d.Group, entry) }
func (d dataGroup) Bootstrap() error                   { return errDataGroupMembership }
func (d dataGroup) AddNode(server.ClusterMember) error { return errDataGroupMembership }
func (d dataGroup) RemoveNode(string) error            { return errDataGroupMembership }
func (d dataGroup) Replicas(index uint64) int          { return d.replicas(index) }
func (d dataGroup) Durable(index uint64) bool          { return d.durable(index) }
