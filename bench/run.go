package bench

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Metric is one figure a row produces.
type Metric struct {
	Name   string
	Unit   string  // "ops/s", "ms", "B/elem"
	Higher bool    // higher is better (throughput); else lower is better
	Target float64 // the ratio the issue asks for (0.8 means ≥ 0.8x, or ≤ for lower-better); 0: none
	// Points compares by difference instead of ratio (percentages): the
	// target is how many points ours may exceed theirs by.
	Points bool
	// Limit bounds ours alone, in Unit (failover ≤ 2 s); 0: none.
	Limit float64
}

// Row is one measurement, run once per target per round.
type Row struct {
	Group   string
	Metrics []Metric
	// Fresh asks for newly started servers, for memory rows that must not
	// see what earlier rows left behind.
	Fresh bool
	// Config is given to both servers (Redis directives as flags, e.g.
	// "--appendonly", "yes"); a row with other settings than the running
	// server gets a fresh one.
	Config []string
	Rounds int // overrides Options.Rounds for rows too slow to repeat
	Run    func(t *Target) ([]float64, error)
	// RunSide, when set instead of Run, drives the side itself: for rows
	// that restart servers or compare settings within one measurement.
	RunSide func(s *Side) ([]float64, error)
}

// Side starts one kind of server (redstream or redis) on demand.
type Side struct {
	Start  func(config ...string) (*Target, error)
	target *Target
	config string // the settings target was started with
}

func (s *Side) get(fresh bool, config []string) (*Target, error) {
	key := strings.Join(config, " ")
	if s.target != nil && !fresh && s.config == key {
		return s.target, nil
	}
	return s.Restart(config...)
}

// Restart stops the side's server and starts a fresh one with config.
func (s *Side) Restart(config ...string) (*Target, error) {
	s.target.Stop()
	t, err := s.Start(config...)
	s.target, s.config = t, strings.Join(config, " ")
	return t, err
}

// Stop stops the side's server.
func (s *Side) Stop() { s.target.Stop(); s.target = nil }

// Options control a run.
type Options struct {
	Rounds int       // measurements per row per server; the median is shown
	Out    io.Writer // the table and progress lines
}

// result holds every round's values of one row on one side.
type result [][]float64

func (r result) median(i int) float64 {
	vals := make([]float64, 0, len(r))
	for _, round := range r {
		vals = append(vals, round[i])
	}
	sort.Float64s(vals)
	if len(vals) == 0 {
		return 0
	}
	return vals[len(vals)/2]
}

// Run measures every row on ours and, if theirs is not nil, on theirs,
// alternating which goes first, and prints the table.
func Run(rows []Row, ours, theirs *Side, opt Options) error {
	if opt.Rounds < 1 {
		opt.Rounds = 1
	}
	results := make([][2]result, len(rows))
	for i, row := range rows {
		fmt.Fprintf(opt.Out, "# %s: %s ...\n", row.Group, row.Metrics[0].Name)
		rounds := opt.Rounds
		if row.Rounds > 0 {
			rounds = row.Rounds
		}
		for round := range rounds {
			order := []int{0, 1}
			if round%2 == 1 {
				order = []int{1, 0}
			}
			for _, side := range order {
				s := ours
				if side == 1 {
					s = theirs
				}
				if s == nil {
					continue
				}
				vals, err := runOnce(row, s)
				if err != nil {
					return fmt.Errorf("%s %q: %w", row.Group, row.Metrics[0].Name, err)
				}
				results[i][side] = append(results[i][side], vals)
			}
		}
	}
	printTable(opt.Out, rows, results, ours, theirs)
	return nil
}

func runOnce(row Row, s *Side) ([]float64, error) {
	var vals []float64
	var err error
	if row.RunSide != nil {
		vals, err = row.RunSide(s)
	} else {
		vals, err = runOnTarget(row, s)
	}
	if err == nil && len(vals) != len(row.Metrics) {
		err = fmt.Errorf("row returned %d values for %d metrics", len(vals), len(row.Metrics))
	}
	return vals, err
}

func runOnTarget(row Row, s *Side) ([]float64, error) {
	t, err := s.get(row.Fresh, row.Config)
	if err != nil {
		return nil, err
	}
	if _, err := t.Do("FLUSHALL"); err != nil {
		return nil, err
	}
	return row.Run(t)
}

func printTable(out io.Writer, rows []Row, results [][2]result, ours, theirs *Side) {
	oursName, theirsName := "redstream", "redis"
	if ours.target != nil {
		oursName = ours.target.Name
	}
	if theirs != nil && theirs.target != nil {
		theirsName = theirs.target.Name
	}
	fmt.Fprintf(out, "\nmeasured %s (median of rounds)\n\n", time.Now().UTC().Format(time.RFC3339))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "group\tmeasurement\t%s\t%s\tratio\ttarget\t\n", oursName, theirsName)
	for i, row := range rows {
		for m, metric := range row.Metrics {
			a := results[i][0].median(m)
			line := []string{row.Group, metric.Name, format(a, metric.Unit), "-", "-", targetText(metric)}
			if theirs != nil && len(results[i][1]) > 0 {
				b := results[i][1].median(m)
				line[3] = format(b, metric.Unit)
				switch {
				case metric.Points:
					line[4] = fmt.Sprintf("%+.1f pts%s", a-b, verdict(a-b, metric))
				case b > 0:
					line[4] = fmt.Sprintf("%.2fx%s", a/b, verdict(a/b, metric))
				}
			}
			fmt.Fprintln(tw, strings.Join(line, "\t")+"\t")
		}
	}
	tw.Flush()
}

func targetText(m Metric) string {
	switch {
	case m.Target == 0:
		return ""
	case m.Points:
		return fmt.Sprintf("<= +%.0f pts", m.Target)
	case m.Higher:
		return fmt.Sprintf(">= %.2fx", m.Target)
	}
	return fmt.Sprintf("<= %.2fx", m.Target)
}

func verdict(ratio float64, m Metric) string {
	if m.Target == 0 {
		return ""
	}
	if (m.Higher && ratio >= m.Target) || (!m.Higher && ratio <= m.Target) || (m.Points && ratio <= m.Target) {
		return " ok"
	}
	return " MISS"
}

func format(v float64, unit string) string {
	switch unit {
	case "ops/s":
		return fmt.Sprintf("%s %s", thousands(int64(v)), unit)
	case "ms":
		return fmt.Sprintf("%.3f ms", v)
	case "s":
		return fmt.Sprintf("%.2f s", v)
	case "%":
		return fmt.Sprintf("%.1f%%", v)
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
