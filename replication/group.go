package replication

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// Group is this node's voter of one Raft group: the raft instance, its
// log (raft-wal, with its metadata DB) and snapshots in the group's own
// directory, its transport, and whether it leads. Every group a node
// hosts is one of these, the main group (the server's keyspace, which
// the Node's server.Cluster methods stand for) and the others alike;
// only the directory, the state machine and what hears of leadership
// changes differ.
type Group struct {
	id     uint16
	dir    string               // wal/ and snapshots/ are under it
	self   server.ClusterMember // this node
	logger *slog.Logger
	// onLeading hears every change of leading (nil: nobody does).
	onLeading func(bool)
	// addrs, if set, gives the members' client addresses by ID.
	addrs func() map[string]string
	// preferred, if set, names the voter the cluster map wants leading.
	preferred func() string
	// commitTimeout, if set, replaces raftConfig's CommitTimeout: how
	// often an idle leader tells followers its commit index.
	commitTimeout time.Duration

	raft  *raft.Raft // nil until open has started it
	log   *wal.WAL
	meta  *metadb.BoltMetaDB
	trans raft.Transport

	leading atomic.Bool // leader, and every earlier term's entry applied (Barrier)
	// leadTerm is the term whose Barrier set leading: leading holds only
	// while the term is still that one (Leading). A node that lost and won
	// again before watchLeadership caught up is leader in a later term
	// whose earlier entries (another leader's) may not be applied yet.
	leadTerm atomic.Uint64
	// answerGrace is how long a follower may stay silent and still
	// count as answering: heartbeats go out every tenth of the heartbeat
	// timeout, this is half of it.
	answerGrace time.Duration
	// restores is the state machine's count of snapshots restored, for
	// settle (nil: the machine is not one of the server's databases).
	restores *atomic.Uint64
	// settleWait bounds how long settle waits for a newer leader's log;
	// settleBy is when the settling under way gives up.
	settleWait time.Duration
	settleMu   sync.Mutex
	settleBy   time.Time
	notify     chan bool
	done       chan struct{}
	wg         sync.WaitGroup
}

// newGroup makes group id's voter on this node, with its state in dir;
// open starts it.
func newGroup(id uint16, dir string, self server.ClusterMember, logger *slog.Logger) *Group {
	return &Group{id: id, dir: dir, self: self, logger: logger,
		notify: make(chan bool, 16), done: make(chan struct{})}
}

// open checks the group's stored state, opens it and starts Raft with
// machine as its state machine, over trans, or over the group's stream of
// mux if trans is nil. A fresh directory makes a voter of no
// configuration yet (Bootstrap, or a leader's AddVoter, makes it one); an
// existing one resumes where it stopped. On error nothing is left open.
func (g *Group) open(cfg Config, machine raft.FSM, mux *Mux, trans raft.Transport) error {
	walDir := filepath.Join(g.dir, "wal")
	if err := os.MkdirAll(walDir, 0o755); err != nil {
		return err
	}
	if err := checkLog(walDir, g.dir); err != nil {
		return err
	}
	// raft-wal v0.4.0's Close leaves its metadata DB open (and locked):
	// the group keeps a handle to close it itself, so a group can reopen
	// in the same process.
	g.meta = &metadb.BoltMetaDB{}
	var err error
	g.log, err = wal.Open(walDir, wal.WithMetaStore(g.meta),
		wal.WithSegmentFiler(segment.NewFiler(walDir, walFS{fs.New()})),
		wal.WithSegmentSize(cfg.walSegmentSize), wal.WithLogger(hcLogger(g.logger, "wal")))
	if err != nil {
		g.meta.Close()
		return fmt.Errorf("replication: opening the Raft log: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(g.dir, 2, hcLogger(g.logger, "snapshots"))
	if err != nil {
		g.closeStores()
		return err
	}
	if err := checkSnapshots(snaps, g.log, g.dir); err != nil {
		g.closeStores()
		return err
	}
	g.trans = trans
	if g.trans == nil {
		if mux == nil {
			g.closeStores()
			return fmt.Errorf("replication: group %d: no Raft port to carry its traffic", g.id)
		}
		stream, err := mux.Group(g.id)
		if err != nil {
			g.closeStores()
			return err
		}
		// MaxRPCsInFlight 1: no pipelined replication. hashicorp/raft's
		// pipeline can deadlock once a follower's answer is a failure
		// (a timeout across a partition, a higher term after it): its
		// sender waits on the decoder, which waits on a consumer that
		// has returned. The replication goroutine then never ends, so
		// the follower gets no more entries and Shutdown never returns
		// (hashicorp/raft#612; tests/cluster_partition_test.go hit it).
		// raft's own notes find pipelining of little use with batching.
		g.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: stream,
			MaxPool: 3, Timeout: 10 * time.Second, MaxRPCsInFlight: 1, Logger: hcLogger(g.logger, "transport")})
	}
	rc := raftConfig(cfg, g.self.ID, g.logger)
	rc.NotifyCh = g.notify
	if f, ok := machine.(*fsm); ok {
		g.restores = &f.restores
	}
	g.answerGrace = rc.HeartbeatTimeout / 2
	g.settleWait = cfg.settleWait
	if g.settleWait == 0 {
		g.settleWait = 2 * rc.ElectionTimeout // an election, and its first commit
	}
	if g.commitTimeout > 0 {
		rc.CommitTimeout = g.commitTimeout
	}
	// A follower reads back every entry it applies, and a leader every
	// entry it sends after its log writer has stored it: from the cache,
	// not a pread each (followers -15% CPU per write, XADD 50 clients).
	logs, err := raft.NewLogCache(1024, g.log)
	if err != nil {
		g.closeTransport()
		g.closeStores()
		return err
	}
	g.raft, err = raft.NewRaft(rc, machine, logs, g.log, snaps, g.trans)
	if err != nil {
		g.closeTransport()
		g.closeStores()
		return err
	}
	g.wg.Add(1)
	go g.watchLeadership()
	return nil
}

// watchLeadership follows Raft's leadership changes. A new leader serves
// only after a Barrier: every entry of earlier terms is applied, so its
// state machine holds every write acknowledged before it was elected.
func (g *Group) watchLeadership() {
	defer g.wg.Done()
	for {
		select {
		case <-g.done:
			return
		case leader := <-g.notify:
			if !leader {
				g.setLeading(false)
				continue
			}
			term := g.raft.CurrentTerm()
			if err := g.raft.Barrier(0).Error(); err != nil {
				g.logger.Warn("new leader could not apply its log; not serving", "err", err)
				continue
			}
			if g.raft.State() == raft.Leader && g.raft.CurrentTerm() == term {
				g.leadTerm.Store(term)
				g.setLeading(true)
			}
		}
	}
}

// lastContact is, on the leader, how long ago follower id last
// answered it; 0 while it answers (the time since its last answer is
// within answerGrace). It is read from the leader's replicator for the
// follower, which a new term starts afresh: a miss seen in an earlier
// term is gone with it.
func (g *Group) lastContact(id string) time.Duration {
	at, ok := g.raft.FollowerContact(raft.ServerID(id))
	if !ok {
		return 0
	}
	if d := time.Since(at); d > g.answerGrace {
		return d
	}
	return 0
}

func (g *Group) setLeading(on bool) {
	if g.leading.Swap(on) != on {
		g.logger.Info("leadership changed", "leading", on, "term", g.raft.CurrentTerm())
		if g.onLeading != nil {
			g.onLeading(on)
		}
	}
}

// close stops the group: its Raft instance, log and transport.
func (g *Group) close() error {
	err := g.raft.Shutdown().Error()
	close(g.done)
	g.wg.Wait()
	g.setLeading(false)
	if cerr := g.closeTransport(); err == nil {
		err = cerr
	}
	if cerr := g.closeStores(); err == nil {
		err = cerr
	}
	return err
}

// closeTransport closes the group's transport, and with it its stream of
// the Raft port. A NetworkTransport's Close leaves the connections it
// dialled open, and with them the goroutines that serve them on the
// other nodes: they are closed too.
func (g *Group) closeTransport() error {
	var err error
	if closer, ok := g.trans.(io.Closer); ok {
		err = closer.Close()
	}
	if nt, ok := g.trans.(*raft.NetworkTransport); ok {
		nt.CloseStreams()
	}
	return err
}

// closeStores closes the Raft log and its metadata.
func (g *Group) closeStores() error {
	return errors.Join(g.log.Close(), g.meta.Close())
}

// ID is the group's number.
func (g *Group) ID() uint16 { return g.id }

// Leading reports whether this node leads the group and has applied every
// entry committed before its term.
func (g *Group) Leading() bool {
	return g.leading.Load() && g.raft.State() == raft.Leader && g.raft.CurrentTerm() == g.leadTerm.Load()
}

// Members are the voters of the group's latest configuration, sorted by
// ID, with their client addresses where the group knows them (this
// node's always).
func (g *Group) Members() []server.ClusterMember {
	cf := g.raft.GetConfiguration()
	if cf.Error() != nil {
		return nil
	}
	_, leader := g.raft.LeaderWithID()
	var addrs map[string]string
	if g.addrs != nil {
		addrs = g.addrs()
	}
	var out []server.ClusterMember
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		m := server.ClusterMember{ID: string(s.ID), BusAddr: string(s.Address), Addr: addrs[string(s.ID)],
			Leader: s.ID == leader, Self: string(s.ID) == g.self.ID}
		if m.Self {
			m.Addr = g.self.Addr
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b server.ClusterMember) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Status is the group's state as this node knows it; a leader lists its
// followers.
func (g *Group) Status() server.ClusterStatus {
	_, leader := g.raft.LeaderWithID()
	st := server.ClusterStatus{
		Role:         strings.ToLower(g.raft.State().String()),
		Term:         g.raft.CurrentTerm(),
		LeaderID:     string(leader),
		CommitIndex:  g.raft.CommitIndex(),
		AppliedIndex: g.raft.AppliedIndex(),
		LastIndex:    g.raft.LastIndex(),
	}
	if g.preferred != nil {
		st.PreferredLeader = g.preferred()
	}
	if matches := g.raft.MatchIndexes(); matches != nil {
		for _, m := range g.Members() {
			if !m.Self {
				st.Followers = append(st.Followers, server.FollowerStatus{ID: m.ID, Addr: m.Addr,
					MatchIndex: matches[raft.ServerID(m.ID)], LastContact: g.lastContact(m.ID)})
			}
		}
		st.Followers = append(st.Followers, g.catchingUp()...)
	}
	return st
}

// catchingUp is the leader's view of the group's non-voters (nodes being
// added, AddCaughtUp), by ID.
func (g *Group) catchingUp() []server.FollowerStatus {
	cf := g.raft.GetConfiguration()
	if cf.Error() != nil {
		return nil
	}
	var addrs map[string]string
	if g.addrs != nil {
		addrs = g.addrs()
	}
	var out []server.FollowerStatus
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			continue
		}
		held, _ := g.raft.ReplicatedIndex(s.ID)
		out = append(out, server.FollowerStatus{ID: string(s.ID), Addr: addrs[string(s.ID)], MatchIndex: held,
			LastContact: g.lastContact(string(s.ID)), CatchingUp: true})
	}
	slices.SortFunc(out, func(a, b server.FollowerStatus) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// apply hands data to Raft at once (waiting at most timeout for it to be
// taken, 0: no limit); the returned wait blocks until it is applied here,
// and returns the state machine's answer, or fails.
func (g *Group) apply(data []byte, timeout time.Duration) (wait func() (any, error)) {
	f := g.raft.Apply(data, timeout)
	return func() (any, error) {
		if err := f.Error(); err != nil {
			return nil, err
		}
		return f.Response(), nil
	}
}

// Propose commits data, on the leader, and returns the state machine's
// answer once this node has applied it. timeout bounds the wait for Raft
// to take it (0: no limit); raft.ErrNotLeader says this node does not
// lead.
func (g *Group) Propose(data []byte, timeout time.Duration) (any, error) {
	return g.apply(data, timeout)()
}

// VerifyLeader confirms with a majority that this node still leads.
func (g *Group) VerifyLeader() error { return g.raft.VerifyLeader().Error() }

// errHasState refuses to bootstrap a group that has Raft state.
var errHasState = errors.New("this node already has Raft state (it is, or was, in a group)")

// Bootstrap makes the group, on a node with no Raft state for it yet, a
// group of the given voters (this node among them, by ID and BusAddr).
// Every voter may be bootstrapped with the same set; one of them is then
// elected. It does not wait for a leader.
func (g *Group) Bootstrap(voters []server.ClusterMember) error {
	var cfg raft.Configuration
	for _, v := range voters {
		cfg.Servers = append(cfg.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(v.ID), Address: raft.ServerAddress(v.BusAddr)})
	}
	if err := g.raft.BootstrapCluster(cfg).Error(); err != nil {
		if errors.Is(err, raft.ErrCantBootstrap) {
			return errHasState
		}
		return err
	}
	return nil
}

// AddVoter makes m (by ID and BusAddr) a voter; on the leader.
func (g *Group) AddVoter(m server.ClusterMember) error {
	return g.raft.AddVoter(raft.ServerID(m.ID), raft.ServerAddress(m.BusAddr), 0, 0).Error()
}

// catchUpWait bounds how long AddCaughtUp waits for a new member's log:
// less than `redstream cluster add-node`'s default timeout (30 s), so the
// command sees the TRYAGAIN and asks again while the copy goes on.
var catchUpWait = 10 * time.Second

// AddCaughtUp makes m a voter once its log has caught up: it joins as a
// non-voter, which counts for no majority, and is promoted when it holds
// every entry the group had when it joined (Raft thesis, section 4.2.1).
// Added as a voter at once, a node that cannot answer yet (stopped,
// unreachable, still copying a large snapshot) would count for the
// majority from the start: going from one voter to two, or from three
// with one down to four, the group could then commit nothing, and elect
// no leader, until that node caught up. If m has not caught up within
// catchUpWait, it stays a non-voter, receiving the log, and the error
// says to ask again (-TRYAGAIN). A member that is a voter already is
// added again (its address updated at most).
func (g *Group) AddCaughtUp(m server.ClusterMember) error {
	id := raft.ServerID(m.ID)
	cf := g.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return err
	}
	for _, s := range cf.Configuration().Servers {
		if s.ID == id && s.Suffrage == raft.Voter {
			return g.AddVoter(m)
		}
	}
	if err := g.raft.AddNonvoter(id, raft.ServerAddress(m.BusAddr), 0, 0).Error(); err != nil {
		return err
	}
	target := g.raft.LastIndex()
	deadline := time.Now().Add(catchUpWait)
	for {
		held, ok := g.raft.ReplicatedIndex(id)
		if !ok {
			return raft.ErrNotLeader
		}
		if held >= target {
			return g.AddVoter(m)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("TRYAGAIN node %s is still catching up with the log after %s (%d of %d entries); it receives the log as a non-voter and becomes a voter when it is added again once it holds them",
				m.ID, catchUpWait, held, target)
		}
		time.Sleep(20 * time.Millisecond) // replication progress is not notified
	}
}

// RemoveVoter removes the member with that ID; on the leader.
func (g *Group) RemoveVoter(id string) error {
	return g.raft.RemoveServer(raft.ServerID(id), 0, 0).Error()
}

// TransferLeadership has this node, the leader, hand the group's
// leadership to the voter with that ID: it brings the voter's log up to
// its own and tells it to start an election at once. It returns when the
// voter has been told; the voter serves once it is elected and has
// applied the log (Leading).
func (g *Group) TransferLeadership(id string) error {
	cf := g.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return err
	}
	for _, s := range cf.Configuration().Servers {
		if string(s.ID) == id {
			if s.Suffrage != raft.Voter {
				return fmt.Errorf("replication: %s is not a voter of group %d", id, g.id)
			}
			return g.raft.LeadershipTransferToServer(s.ID, s.Address).Error()
		}
	}
	return fmt.Errorf("replication: %s is not a member of group %d", id, g.id)
}

// durable reports whether this node's own log holds every entry up to
// index on disk. A leader writes its log beside replicating it (fork
// change 1) and may apply an entry the followers alone made committed,
// so its own count is its match index, set once its StoreLogs returned;
// a follower stores entries before it acknowledges them, so its last
// index is on disk.
func (g *Group) durable(index uint64) bool {
	if match, leading := g.raft.MatchIndexes()[raft.ServerID(g.self.ID)]; leading {
		return match >= index
	}
	return g.raft.LastIndex() >= index
}

// replicas counts, on the leader, the followers whose match index is at
// least index.
func (g *Group) replicas(index uint64) int {
	count := 0
	for id, match := range g.raft.MatchIndexes() {
		if string(id) != g.self.ID && match >= index {
			count++
		}
	}
	return count
}
