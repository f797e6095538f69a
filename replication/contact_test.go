package replication

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// followerContact is what the leader's status says of follower id's last
// contact, and whether the status lists it.
func followerContact(g *Group, id string) (time.Duration, bool) {
	for _, f := range g.Status().Followers {
		if f.ID == id {
			return f.LastContact, true
		}
	}
	return 0, false
}

// A follower the leader could not reach shows how long ago it last
// answered, and shows nothing once it answers again, even when the node
// lost and won back the lead meanwhile: its new term's heartbeats reach
// the follower from the first, so no heartbeat "resumes". The leader
// kept the old term's miss for good, balance took the follower for
// down and never gave it the group it should lead, and INFO replication
// showed it lagging (TestPartitionedClusterRestarts timed out so).
func TestFollowerBackAfterALeaderChangeShowsNoMissedContact(t *testing.T) {
	nodes := startGroup(t)
	first, back, other := nodes[0], nodes[1], nodes[2]
	waitFor(t, "the first node to lead", func() bool { return leads(first, mainGroup) })
	id := back.node.self.ID
	back.stop()
	waitFor(t, "the leader to miss the stopped follower", func() bool {
		d, ok := followerContact(first.node.main, id)
		return ok && d > 0
	})
	if err := first.node.main.TransferLeadership(other.node.self.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the other node to lead", func() bool { return leads(other, mainGroup) })
	back = startNodeOn(t, back.dir, back.port, back.busPort)
	waitFor(t, "the restarted follower to catch up", func() bool {
		d, ok := followerContact(other.node.main, id)
		return ok && d == 0 && other.node.main.raft.MatchIndexes()[raft.ServerID(id)] >= other.node.main.raft.LastIndex()
	})
	if err := other.node.main.TransferLeadership(first.node.self.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first node to lead again", func() bool { return leads(first, mainGroup) })
	waitForWithin(t, 5*time.Second, "the leader to show the follower answering", func() bool {
		d, ok := followerContact(first.node.main, id)
		return ok && d == 0
	}, func() string {
		d, ok := followerContact(first.node.main, id)
		return fmt.Sprintf("last contact %v, listed %v", d, ok)
	})
}
