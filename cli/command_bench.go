package cli

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/redstream/redstream/bench"
	ucli "github.com/urfave/cli/v2"
)

// benchCommand is `redstream bench`: the side-by-side benchmark against
// redis-server (when installed), printing both figures and the ratio.
func benchCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "bench",
		Usage: "measure redstream against redis-server side by side",
		Description: "Starts this redstream binary and, when redis-server is on PATH, a redis-server, each as its\n" +
			"own process on loopback, runs every row against both (alternating), and prints medians and ratios.",
		Flags: []ucli.Flag{
			&ucli.IntFlag{Name: "rounds", Value: 3, Usage: "measurements per row and server; the median is shown"},
			&ucli.Float64Flag{Name: "scale", Value: 1, Usage: "multiply every row's amount of work (0.1 for a quick look)"},
			&ucli.StringSliceFlag{Name: "group", Usage: "only these groups (lists, streams, delayed, ..., cluster: a three-node group beside one node with appendfsync always and NATS JetStream R3; partitions: three nodes over 1, 3 and 6 Raft groups)"},
			&ucli.StringFlag{Name: "only", Usage: "only rows whose name contains this text (e.g. memory)"},
			&ucli.StringFlag{Name: "redstream", Usage: "measure the redstream binary at this path (an older build, an experiment) instead of this one", DefaultText: "this binary"},
		},
		Action: runBench,
	}
}

func runBench(c *ucli.Context) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if p := c.String("redstream"); p != "" {
		exe = p
	}
	all := append(bench.ListRows(c.Float64("scale")), bench.StreamRows(c.Float64("scale"))...)
	all = append(all, bench.PersistenceRows(c.Float64("scale"))...)
	all = append(all, bench.GroupRows(c.Float64("scale"))...)
	all = append(all, bench.DeliveryRows(c.Float64("scale"))...)
	all = append(all, bench.DelayedRows(c.Float64("scale"))...)
	groups, only := c.StringSlice("group"), c.String("only")
	if rows := selectRows(all, groups, only); len(rows) > 0 {
		if err := runSideBySide(c, exe, rows); err != nil {
			return err
		}
	}
	if len(groups) == 0 || slices.Contains(groups, "cluster") {
		if err := bench.RunCluster(bench.ClusterOptions{Exe: exe, Scale: c.Float64("scale"), Rounds: c.Int("rounds"), Only: only, Out: c.App.Writer}); err != nil {
			return err
		}
	}
	if len(groups) == 0 || slices.Contains(groups, "partitions") {
		return bench.RunPartitions(bench.PartitionsOptions{Exe: exe, Scale: c.Float64("scale"), Rounds: partitionRounds(c), Only: only, Out: c.App.Writer})
	}
	return nil
}

// partitionRounds is --rounds when given; else 2: each pass starts three
// clusters, and two alternating passes show the noise within 5 minutes.
func partitionRounds(c *ucli.Context) int {
	if c.IsSet("rounds") {
		return c.Int("rounds")
	}
	return 2
}

// runSideBySide measures rows on this redstream and, when installed, on
// redis-server.
func runSideBySide(c *ucli.Context, exe string, rows []bench.Row) error {
	ours := &bench.Side{Start: func(cfg ...string) (*bench.Target, error) { return bench.StartRedstream(exe, cfg...) }}
	defer ours.Stop()
	var theirs *bench.Side
	if probe, err := bench.StartRedis(); err != nil {
		return err
	} else if probe == nil {
		fmt.Fprintln(c.App.Writer, "redis-server not found on PATH: measuring redstream alone (apt-get install redis-server for ratios)")
	} else {
		probe.Stop()
		theirs = &bench.Side{Start: func(cfg ...string) (*bench.Target, error) { return bench.StartRedis(cfg...) }}
		defer theirs.Stop()
	}
	return bench.Run(rows, ours, theirs, bench.Options{Rounds: c.Int("rounds"), Out: c.App.Writer})
}

// selectRows keeps the rows of the named groups (all when none) whose
// first metric's name contains only.
func selectRows(rows []bench.Row, groups []string, only string) []bench.Row {
	var out []bench.Row
	for _, r := range rows {
		if (len(groups) == 0 || slices.Contains(groups, r.Group)) && strings.Contains(r.Metrics[0].Name, only) {
			out = append(out, r)
		}
	}
	return out
}
