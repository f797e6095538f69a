package tests

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestClusterPartitionLeader cuts the leader off from both followers on
// the cluster bus while clients still reach it. The isolated leader must
// acknowledge nothing written to it once it has lost its majority, and
// answer no read from its old state, while the other two elect a leader
// and take writes; after healing, all three agree. It needs root and
// iptables (.ci/run installs it): each node runs as a user of its own,
// so iptables can drop what the leader sends to the followers' bus ports
// and what anyone sends to its own.
func TestClusterPartitionLeader(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("partitions need root (iptables)")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("iptables is not installed")
	}
	c := StartClusterOwnUsers(t)
	ch := NewChecker()
	faultCycles(t, c, ch, clusterCycles(1), func(cycle int, leader *ClusterNode) {
		others := c.Others(leader)
		before, after := "before-"+strconv.Itoa(cycle), "after-"+strconv.Itoa(cycle)
		c.SetOnLeader("chk:marker", before)
		heal := isolate(t, leader, others)
		ch.writeDirectly(t, leader, 3) // while it may still think it leads
		c.WaitSettledAmong(others)
		c.SetOnLeaderAmong(others, "chk:marker", after)
		r, err := ask(leader, "GET", "chk:marker")
		if err == nil && r.Type != '-' && r.Str != after {
			t.Fatalf("the isolated leader answered GET chk:marker with %s; the majority had acknowledged %q before", r, after)
		}
		ch.writeDirectly(t, leader, 3) // after the others elected a leader
		ch.WaitAcked(t, 20)            // the majority takes writes
		heal()
	})
	leader := c.WaitSettled()
	want := ch.Contents(t, c.ClusterClient())
	for _, n := range c.Others(leader) {
		waitSameContents(t, c, ch, n, want)
	}
}

// writeDirectly sends n writes to node, one at a time on connections of
// their own, records them, and fails the test if it acknowledged any:
// it is cut off from its group.
func (ch *Checker) writeDirectly(t *testing.T, node *ClusterNode, n int) {
	t.Helper()
	id := ch.newProducer()
	keys := ch.keys()
	for seq := range n {
		key := keys[seq%len(keys)]
		p := ch.Sent(key, id, seq)
		args := ch.writeCommand(key, p)
		r, err := ask(node, args...)
		if err == nil && r.Type == '-' {
			err = errors.New(r.Str)
		}
		if ch.Record(p, err) == acked {
			t.Fatalf("%s, cut off from its group, acknowledged %v: %s", node.Name, args, r)
		}
	}
}

// isolate drops the Raft traffic between n and others (iptables, by n's
// user and the bus ports); its clients still reach it. heal, also run
// when the test ends, removes the rules.
func isolate(t *testing.T, n *ClusterNode, others []*ClusterNode) (heal func()) {
	t.Helper()
	var ports []string
	for _, o := range others {
		ports = append(ports, strconv.Itoa(o.BusPort))
	}
	rules := [][]string{
		{"OUTPUT", "-p", "tcp", "-m", "owner", "--uid-owner", strconv.Itoa(n.User),
			"-m", "multiport", "--dports", strings.Join(ports, ","), "-j", "DROP"},
		{"OUTPUT", "-p", "tcp", "--dport", strconv.Itoa(n.BusPort), "-j", "DROP"},
	}
	var added [][]string
	heal = func() {
		for _, r := range added {
			if out, err := exec.Command("iptables", append([]string{"-D"}, r...)...).CombinedOutput(); err != nil {
				t.Errorf("iptables -D %v: %v\n%s", r, err, out)
			}
		}
		added = nil
	}
	t.Cleanup(heal)
	for _, r := range rules {
		if out, err := exec.Command("iptables", append([]string{"-I"}, r...)...).CombinedOutput(); err != nil {
			heal()
			t.Skipf("iptables cannot cut a node off here: iptables -I %v: %v\n%s", r, err, out)
		}
		added = append(added, r)
	}
	return heal
}
