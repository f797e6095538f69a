package tests

import (
	"strings"
	"testing"
)

// In a group a consumer-group policy acts through the log: a follower
// that becomes leader redelivers what its old leader handed out and
// nobody acknowledged, dead-letters it past MAXDELIVER, and every node
// ends with the same dead-letter stream and PEL.
func TestClusterPolicyFailover(t *testing.T) {
	c := StartCluster(t)
	leader := c.WaitSettled()
	c.expectOK(leader, c.must(leader, "XGROUP", "CREATE", "{q}", "g", "$", "MKSTREAM",
		"MAXDELIVER", "2", "DEADLETTER", "{q}:dead", "ACKWAIT", "300"), "XGROUP CREATE with a policy")
	// Dead letters are written in the stream's slot: a key elsewhere is
	// refused as any cross-slot write is.
	if r, err := ask(leader, "XGROUP", "SETPOLICY", "{q}", "g", "DEADLETTER", "dead"); err != nil || r.Type != '-' ||
		!strings.HasPrefix(r.Str, "CROSSSLOT ") {
		t.Fatalf("SETPOLICY with a dead-letter key in another slot: %v %v", r, err)
	}
	id := c.must(leader, "XADD", "{q}", "*", "job", "x")
	if r := c.must(leader, "XREADGROUP", "GROUP", "g", "w1", "STREAMS", "{q}", ">"); !gtMatches(r, `*1[*2[$"{q}" *1[*2[$"`+id.Str+`" *2[$"job" $"x"]]]]]`) {
		t.Fatalf("first delivery: %s", r)
	}
	c.Kill(leader)
	next := c.WaitSettled()
	bbWaitFor(t, clusterBound, "the new leader to redeliver "+id.Str, func() bool {
		r, err := ask(next, "XREADGROUP", "GROUP", "g", "w2", "COUNT", "1", "STREAMS", "{q}", ">")
		return err == nil && gtMatches(r, `*1[*2[$"{q}" *1[*2[$"`+id.Str+`" *2[$"job" $"x"]]]]]`)
	})
	bbWaitFor(t, clusterBound, "the third delivery to dead-letter "+id.Str, func() bool {
		r, err := ask(next, "XREADGROUP", "GROUP", "g", "w3", "COUNT", "1", "STREAMS", "{q}", ">")
		if err != nil || r.Type == '-' || !r.Null {
			return false // not due yet: nothing; a served entry would be a third delivery
		}
		n, err := ask(next, "XLEN", "{q}:dead")
		return err == nil && n.Int == 1
	})
	c.Start(leader)
	for _, n := range c.Nodes {
		rc := readOnlyClient(t, n)
		bbWaitFor(t, clusterBound, n.Name+" to hold the dead letter", func() bool {
			dead, err := rc.XRange(ctx(t), "{q}:dead", "-", "+").Result()
			if err != nil || len(dead) != 1 {
				return false
			}
			v := dead[0].Values
			pending, err := rc.XPending(ctx(t), "{q}", "g").Result()
			return err == nil && pending.Count == 0 && v["id"] == id.Str && v["deliveries"] == "2" &&
				v["reason"] == "maxdeliver" && v["job"] == "x"
		})
	}
}

// In a group only the leader's sweeper trims by age, through the log: an
// idle stream's old entries leave every node, and the follower that
// becomes leader sweeps what its old leader left.
func TestClusterMaxAgeSweep(t *testing.T) {
	c := StartCluster(t)
	leader := c.WaitSettled()
	for _, key := range []string{"{a}old", "{b}old"} {
		if r := c.must(leader, "XADD", key, "*", "f", "v"); r.Type != '$' {
			t.Fatalf("XADD %s: %s", key, r)
		}
	}
	c.expectOK(leader, c.must(leader, "XCFGSET", "{a}old", "MAXAGE", "300"), "XCFGSET MAXAGE")
	// Young still when its leader dies (unless the machine is very slow):
	// the next leader's sweeper takes it.
	c.expectOK(leader, c.must(leader, "XCFGSET", "{b}old", "MAXAGE", "3000"), "XCFGSET MAXAGE")
	for _, n := range c.Nodes {
		rc := readOnlyClient(t, n)
		bbWaitFor(t, clusterBound, n.Name+" to drop the aged entry", func() bool {
			return rc.XLen(ctx(t), "{a}old").Val() == 0
		})
	}
	c.Kill(leader)
	c.WaitSettled()
	for _, n := range c.Others(leader) {
		rc := readOnlyClient(t, n)
		bbWaitFor(t, clusterBound, n.Name+" to drop the aged entry under the new leader", func() bool {
			return rc.XLen(ctx(t), "{b}old").Val() == 0
		})
	}
}
