package server

import "time"

// Cluster is one of the node's Raft groups as the server sees it;
// package replication implements it, and nil means the node runs alone
// (no cluster-enabled). A group's leader is the master of the group's
// slots and its other voters that lead no group its replicas
// (cluster_topology.go); with
// SetCluster alone the one group owns all 16384 slots.
//
// Writes do not run on the node that receives them: the leader proposes
// them (Propose) and every node applies them once committed (ApplyEntry),
// the leader's apply producing the reply. So the keyspace only ever holds
// committed writes (replication/doc.go has the whole argument).
type Cluster interface {
	// Self is this node.
	Self() ClusterMember
	// Members are the group's voters, this node included, in a stable
	// order (by ID).
	Members() []ClusterMember
	// Status is the group's state as this node knows it.
	Status() ClusterStatus
	// Leading reports whether this node leads the group and has applied
	// every entry committed before its term: it may take writes and
	// serve reads.
	Leading() bool
	// Propose hands one batch (an encoded entry, see propose.go) to the
	// group. It returns at once; the returned wait blocks until the
	// entry is applied here or has failed. Called without the keyspace
	// lock (the apply takes it).
	Propose(entry []byte) (wait func() error)
	// VerifyLeader confirms with a majority that this node still leads.
	VerifyLeader() error
	// Bootstrap makes a fresh node a group of one, its leader.
	Bootstrap() error
	// AddNode makes m a voter; RemoveNode removes the voter with that ID.
	// Both run on the leader.
	AddNode(m ClusterMember) error
	RemoveNode(id string) error
	// Replicas counts, on the leader, the followers whose logs hold
	// every entry up to index durably (their Raft match index); 0 on a
	// follower.
	Replicas(index uint64) int
	// Durable reports whether this node's own log holds every entry up
	// to index on disk (WAITAOF's local count).
	Durable(index uint64) bool
}

// ClusterMember is one node of the group.
type ClusterMember struct {
	ID      string // 40 hex characters, kept in the node's dir (as Redis's nodes.conf)
	Addr    string // host:port clients connect to
	BusAddr string // host:port of its Raft traffic (cluster-port)
	Leader  bool
	Self    bool
}

// ClusterStatus is INFO replication's and CLUSTER INFO's view of the group.
type ClusterStatus struct {
	Role         string // "leader", "follower", "candidate" or "shutdown"
	Term         uint64
	LeaderID     string // "" while there is none
	CommitIndex  uint64
	AppliedIndex uint64
	LastIndex    uint64
	// PreferredLeader is the voter the cluster map wants to lead the
	// group (its leaders are balanced by handing each group to it); ""
	// when the cluster is not partitioned.
	PreferredLeader string
	// Followers is the leader's view of each other member, voters first;
	// empty on a follower.
	Followers []FollowerStatus
}

// FollowerStatus is one follower as its leader sees it.
type FollowerStatus struct {
	ID          string
	Addr        string
	MatchIndex  uint64 // the newest entry the follower is known to hold
	LastContact time.Duration
	// CatchingUp: a node added to the group that is not a voter yet (it
	// counts for no majority until it holds the log; a failed add leaves
	// it so until it is added again or removed).
	CatchingUp bool
}

// SetCluster puts the node in its first Raft group, which holds
// database 0 and every slot until AssignSlots gives slots to other
// groups (groups.go); call it before Serve.
func (s *Server) SetCluster(c Cluster) {
	s.cluster = c
	g := &clusterGroup{id: firstGroup, cl: c}
	s.groups = []*clusterGroup{g}
	s.slotGroup = make([]*clusterGroup, numSlots)
	for i := range s.slotGroup {
		s.slotGroup[i] = g
	}
}

const (
	errCrossSlot = "CROSSSLOT Keys in request don't hash to the same slot"
	// A cluster has database 0 only, as Redis Cluster.
	errSelectInCluster = "ERR SELECT is not allowed in cluster mode"
)

// sameSlot reports whether argv's keys hash to one slot, and inside MULTI
// to the slot of the keys queued before them, as Redis Cluster requires
// of every multi-key command and transaction (one slot is one group's),
// and returns that slot (-1: no keys; outside MULTI, argv's own). A
// command queued in MULTI sets the transaction's slot. Lock should be
// held.
func (c *Client) sameSlot(cmd *Command, argv [][]byte) (slot int, ok bool) {
	inTx := c.multi != nil && !isTxControl(cmd)
	txSlot := -1
	if inTx {
		txSlot = c.multi.slot - 1
	}
	slot, ok = commandSlot(cmd, argv, txSlot)
	if !ok {
		return 0, false
	}
	if inTx {
		c.multi.slot = slot + 1
		return slot, true
	}
	if cmd.Name == "exec" && c.multi != nil {
		return c.multi.slot - 1, true
	}
	return slot, true
}

// commandSlot returns the slot argv's keys hash to, starting from slot
// (-1: none yet), and false when they hash to more than one. It runs for
// every command in cluster mode, and twice for a pipelined write
// (proposable, then dispatch), so it walks the keys without listing them.
func commandSlot(cmd *Command, argv [][]byte, slot int) (int, bool) {
	ok := cmd.eachKey(argv, func(k int) bool {
		ks := KeySlot(argv[k])
		if slot >= 0 && ks != slot {
			return false
		}
		slot = ks
		return true
	})
	if !ok {
		return 0, false
	}
	return slot, true
}
