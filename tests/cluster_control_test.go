package tests

import "testing"

// TestClusterCheckerCatchesLoss is the checker's positive control: after
// a clean run, the keys are tampered with through the cluster — an
// acknowledged payload removed, another written twice, one nobody sent,
// one the server had refused — and the checker must report exactly those.
func TestClusterCheckerCatchesLoss(t *testing.T) {
	c := StartCluster(t)
	ch := NewChecker()
	cc := c.ClusterClient()
	stop := ch.Produce(cc, producers)
	ch.WaitAcked(t, 200)
	stop()
	report := ch.Check(ch.Contents(t, cc))
	if !report.Clean() || report.Acked < 200 {
		t.Fatalf("before tampering: %s", report)
	}
	ch.catchesTampering(t, cc, ch.Lists[0])
}
