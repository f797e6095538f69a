package bench

import (
	"fmt"
	"strings"
)

// groupPolicy is the policy policyDrainRow sets: every option, so every
// delivery is checked against the cap and indexed for redelivery. The
// wait is long enough that nothing comes due during the drain.
var groupPolicy = []string{"MAXDELIVER", "5", "DEADLETTER", "bench:dead", "ACKWAIT", "600000", "BACKOFF", "600000,1200000"}

// policyDrainRow is issue 15's price of a group policy: drainRow's drain
// without and with a policy on the group, one after the other on the same
// server (which goes first alternates by round, so neither always meets
// the heap the other left), and how much slower the policy drain was.
// Redis has no policies: its side drains without one twice, so its
// difference is the noise of two drains in a row, the baseline the
// target is measured against.
func policyDrainRow(consumers, entries int) Row {
	name := fmt.Sprintf("drain %d entries, %d consumers", entries, consumers)
	rounds := map[string]int{} // per side: rounds run so far
	return Row{
		Group: "groups",
		Metrics: []Metric{
			{Name: name + ", no group policy", Unit: "ops/s", Higher: true},
			{Name: name + ", with a group policy (MAXDELIVER, DEADLETTER, ACKWAIT, BACKOFF)", Unit: "ops/s", Higher: true},
			{Name: "drain slower with the policy than without", Unit: "%", Points: true, Target: 5},
		},
		Rounds: 6,
		Run: func(t *Target) ([]float64, error) {
			var policy []string
			if !strings.HasPrefix(t.Name, "redis") {
				policy = groupPolicy
			}
			runs := [][]string{nil, policy}
			if rounds[t.Name]%2 == 1 {
				runs[0], runs[1] = runs[1], runs[0]
			}
			plainFirst := rounds[t.Name]%2 == 0
			rounds[t.Name]++
			var got [2][]float64
			for i, p := range runs {
				if i > 0 {
					if _, err := t.Do("FLUSHALL"); err != nil {
						return nil, err
					}
				}
				v, err := drain(t, consumers, entries, p)
				if err != nil {
					return nil, err
				}
				got[i] = v
			}
			plain, with := got[0][0], got[1][0]
			if !plainFirst {
				plain, with = with, plain
			}
			return []float64{plain, with, (1 - with/plain) * 100}, nil
		},
	}
}
