package bench

import (
	"fmt"
)

// groupPolicy is the policy policyDrainRow sets: every option, so every
// delivery is checked against the cap and indexed for redelivery. The
// wait is long enough that nothing comes due during the drain.
var groupPolicy = []string{"MAXDELIVER", "5", "DEADLETTER", "bench:dead", "ACKWAIT", "600000", "BACKOFF", "600000,1200000"}

// policyDrainRow is issue 15's price of a group policy: drainRow's drain
// without and with a policy on the group, one after the other on the same
// server, and how much slower the second was. Redis has no policies: its
// side drains without one twice, so its difference is the noise of two
// drains in a row, the baseline the target is measured against.
func policyDrainRow(consumers, entries int) Row {
	name := fmt.Sprintf("drain %d entries, %d consumers", entries, consumers)
	return Row{
		Group: "groups",
		Metrics: []Metric{
			{Name: name + ", no group policy", Unit: "ops/s", Higher: true},
			{Name: name + ", with a group policy (MAXDELIVER, DEADLETTER, ACKWAIT, BACKOFF)", Unit: "ops/s", Higher: true},
			{Name: "drain slower with the policy than without", Unit: "%", Points: true, Target: 5},
		},
		Run: func(t *Target) ([]float64, error) {
			plain, err := drain(t, consumers, entries, nil)
			if err != nil {
				return nil, err
			}
			if _, err := t.Do("FLUSHALL"); err != nil {
				return nil, err
			}
			var policy []string
			if t.Name != "redis" {
				policy = groupPolicy
			}
			with, err := drain(t, consumers, entries, policy)
			if err != nil {
				return nil, err
			}
			return []float64{plain[0], with[0], (1 - with[0]/plain[0]) * 100}, nil
		},
	}
}
