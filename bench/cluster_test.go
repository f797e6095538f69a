package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestParsePerfCounts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		out   string
		calls float64
		ok    bool
	}{
		{"both syscalls summed", "657,,syscalls:sys_enter_fsync,2000702443,100.00,,\n3,,syscalls:sys_enter_fdatasync,2000702443,100.00,,\n", 660, true},
		{"zero is a count", "0,,syscalls:sys_enter_fsync,4659336,100.00,,\n", 0, true},
		{"not supported", "<not supported>,,syscalls:sys_enter_fsync,0,100.00,,\n", 0, false},
		{"perf failed", "event syntax error: 'syscalls:sys_enter_fsync'\n", 0, false},
		{"empty", "", 0, false},
	} {
		calls, ok := parsePerfCounts(tc.out)
		if calls != tc.calls || ok != tc.ok {
			t.Errorf("%s: got %v, %v; want %v, %v", tc.name, calls, ok, tc.calls, tc.ok)
		}
	}
}

func TestParseRedisBenchmarkCSV(t *testing.T) {
	out := `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"LPUSH","5231.95","8.521","2.240","6.951","16.239","34.335","123.135"
`
	vals, ok := parseRedisBenchmarkCSV(out)
	if !ok || len(vals) != 3 || vals[0] != 5231.95 || vals[1] != 6.951 || vals[2] != 34.335 {
		t.Fatalf("got %v, %v; want [5231.95 6.951 34.335], true", vals, ok)
	}
	for _, bad := range []string{"", "Could not connect to Redis at 127.0.0.1:1: Connection refused", `"LPUSH","x","1","1","1","1","1","1"`} {
		if vals, ok := parseRedisBenchmarkCSV(bad); ok {
			t.Errorf("%q parsed as %v", bad, vals)
		}
	}
}

// A side that did not measure a row prints "-", not NaN, and a limit is
// judged on R3's own figure.
func TestClusterTable(t *testing.T) {
	rows := []clusterRow{
		{metrics: []Metric{{Name: "XADD", Unit: "ops/s", Higher: true, Target: 0.5}, {Name: "CPU, follower 1", Unit: "µs"}}},
		{metrics: []Metric{{Name: "failover, p50", Unit: "s", Limit: 2}}},
	}
	results := [][3]result{
		{result{{4000, 30}}, result{{10000, math.NaN()}}, nil},
		{result{{2.5}}, nil, nil},
	}
	var out bytes.Buffer
	printClusterTable(&out, rows, results)
	text := out.String()
	for _, want := range []string{"0.40x MISS", ">= 0.50x", "2.50 s", "MISS  <= 2.00 s"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "NaN") {
		t.Errorf("table prints NaN:\n%s", text)
	}
}
