package tests

import (
	"errors"
	"slices"
	"testing"
)

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
	key := ch.Lists[0]
	acked := ch.AcknowledgedIn(key, 0)
	if len(acked) < 3 { // the third, after the second written again, makes that one out of order
		t.Fatalf("producer 0 has %d acknowledged writes to %s", len(acked), key)
	}
	lost, twice := acked[0], acked[1]
	refused := ch.Sent(key, ch.newProducer(), 0)
	ch.Record(refused, errors.New("CLUSTERDOWN The cluster is down"))
	if n, err := cc.LRem(ctx(t), key, 0, lost).Result(); err != nil || n != 1 {
		t.Fatalf("LREM %s %s: %d, %v", key, lost, n, err)
	}
	if err := cc.RPush(ctx(t), key, twice, "never-sent", refused).Err(); err != nil {
		t.Fatal(err)
	}

	report = ch.Check(ch.Contents(t, cc))
	t.Logf("after tampering: %s", report)
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"lost", report.Lost, []string{lost}},
		{"duplicated", report.Duplicated, []string{twice}},
		{"unsent", report.Unsent, []string{key + "/never-sent"}},
		{"failed but applied", report.FailedFound, []string{refused}},
		{"reordered", report.Reordered, []string{key + "/" + twice}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
}
