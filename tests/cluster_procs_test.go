package tests

import "testing"

// A cluster node sizes GOMAXPROCS by the CPU it uses
// (replication/procs.go): idle, it runs on one P, since each of Raft's
// goroutine hand-offs costs a thread wake-up while a second P is idle. A
// standalone node keeps every P it started with.
func TestClusterNodeRunsOnOnePWhileIdle(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2") // the nodes inherit it: the same start on any machine
	c := StartCluster(t)
	c.WaitSettled()
	for _, n := range c.Nodes {
		raw := dialRaw(t, n.Addr())
		if got := infoField(t, raw, "server", "go_maxprocs"); got != "1" {
			t.Errorf("node %s: INFO go_maxprocs %s while idle, want 1", n.Addr(), got)
		}
	}
	s := StartServer(t)
	if got := infoField(t, s.Raw(t), "server", "go_maxprocs"); got != "2" {
		t.Errorf("standalone node: INFO go_maxprocs %s, want the 2 it started with", got)
	}
}
