package server

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

const defaultOutputLimitsText = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"

// TestOutputLimitsParse pins client-output-buffer-limit's parsing to
// Redis's (config.c updateClientOutputBufferLimit, memtoull, strtoll):
// every case was run through CONFIG SET on redis-server 7.0, one after
// the other from the defaults, and its reply and CONFIG GET noted.
func TestOutputLimitsParse(t *testing.T) {
	cases := []struct {
		value string
		err   string // Redis's text after "CONFIG SET failed (...) - "; "" when accepted
		get   string // CONFIG GET afterwards
	}{
		{"", "", defaultOutputLimitsText}, // splits into nothing: no change
		{"normal 0 0 0", "", defaultOutputLimitsText},
		{"normal 1mb 2MB 3", "", "normal 1048576 2097152 3 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
		{"replica 1gb 1k 10", "", "normal 1048576 2097152 3 slave 1073741824 1000 10 pubsub 33554432 8388608 60"},
		{"slave 1 2 3 pubsub 4 5 6", "", "normal 1048576 2097152 3 slave 1 2 3 pubsub 4 5 6"},
		{"master 0 0 0", errObufClass, "normal 1048576 2097152 3 slave 1 2 3 pubsub 4 5 6"},
		{"normal 0 0", errObufArgs, "normal 1048576 2097152 3 slave 1 2 3 pubsub 4 5 6"},
		{"normal -1 0 0", errObufSetting, "normal 1048576 2097152 3 slave 1 2 3 pubsub 4 5 6"},
		{"normal 1.5mb 0 0", errObufSetting, "normal 1048576 2097152 3 slave 1 2 3 pubsub 4 5 6"},
		{"normal mb 0 0", "", "normal 0 0 0 slave 1 2 3 pubsub 4 5 6"}, // no digits reads as 0
		{"normal 0 0 -1", errObufSetting, "normal 0 0 0 slave 1 2 3 pubsub 4 5 6"},
		{"normal 0 0  5", errObufArgs, "normal 0 0 0 slave 1 2 3 pubsub 4 5 6"}, // split at each space
		{"normal 0 0 +5", "", "normal 0 0 5 slave 1 2 3 pubsub 4 5 6"},
		{"normal 0 0 4294967297", "", "normal 0 0 1 slave 1 2 3 pubsub 4 5 6"}, // kept in a C int
		{"normal 0 0 2147483648", errObufSetting, "normal 0 0 1 slave 1 2 3 pubsub 4 5 6"},
		{"normal 99999999999999999999999 0 0", "", "normal 18446744073709551615 0 0 slave 1 2 3 pubsub 4 5 6"},
		{"normal 18446744073709551615gb 0 0", "", "normal 18446744072635809792 0 0 slave 1 2 3 pubsub 4 5 6"},
		{"NORMAL 0 0 0", "", "normal 0 0 0 slave 1 2 3 pubsub 4 5 6"},
		{"normal  0 0 0", errObufArgs, "normal 0 0 0 slave 1 2 3 pubsub 4 5 6"},
		{"foo 0 0 0", errObufClass, "normal 0 0 0 slave 1 2 3 pubsub 4 5 6"},
		{"normal 1b 0 0", "", "normal 1 0 0 slave 1 2 3 pubsub 4 5 6"},
		{"normal 5kb 0 0", "", "normal 5120 0 0 slave 1 2 3 pubsub 4 5 6"},
		{"normal 0 0 5x", errObufSetting, "normal 5120 0 0 slave 1 2 3 pubsub 4 5 6"},
		{"normal 0 0 ", "", "normal 0 0 0 slave 1 2 3 pubsub 4 5 6"}, // "" seconds read as 0
		{"normal 0 0 0 normal 1 1 1", "", "normal 1 1 1 slave 1 2 3 pubsub 4 5 6"},
		{"normal 1 1 1 bogus 0 0 0", errObufClass, "normal 1 1 1 slave 1 2 3 pubsub 4 5 6"}, // all or nothing
	}
	cfg := DefaultConfig()
	if got, _ := cfg.Get("client-output-buffer-limit"); got != defaultOutputLimitsText {
		t.Fatalf("default = %q, want Redis's %q", got, defaultOutputLimitsText)
	}
	for _, tc := range cases {
		err := cfg.Set("client-output-buffer-limit", []string{tc.value})
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Set(%q) = %v; Redis accepts it", tc.value, err)
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("Set(%q) = %v; Redis says %q", tc.value, err, tc.err)
		}
		if got, _ := cfg.Get("client-output-buffer-limit"); got != tc.get {
			t.Errorf("after Set(%q): Get = %q, Redis says %q", tc.value, got, tc.get)
		}
	}

	// A config file line gives the words one by one.
	cfg = DefaultConfig()
	if err := cfg.Set("client-output-buffer-limit", []string{"pubsub", "64mb", "16mb", "90"}); err != nil {
		t.Fatal(err)
	}
	if want := (OutputBufferLimit{Hard: 64 << 20, Soft: 16 << 20, SoftSeconds: 90}); cfg.ClientOutputBufferLimit[ClassPubSub] != want {
		t.Errorf("pubsub = %+v, want %+v", cfg.ClientOutputBufferLimit[ClassPubSub], want)
	}
	if err := cfg.Set("client-output-buffer-limit", []string{"normal", "1", "2"}); err == nil || err.Error() != errObufArgs {
		t.Errorf("three words = %v, want %q", err, errObufArgs)
	}
}

func TestMemToULL(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"", 0, true}, {"kb", 0, true}, {"7", 7, true}, {"7B", 7, true},
		{"1k", 1000, true}, {"1K", 1000, true}, {"1kb", 1024, true}, {"1Kb", 1024, true},
		{"2m", 2e6, true}, {"2mb", 2 << 20, true}, {"3g", 3e9, true}, {"3GB", 3 << 30, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"18446744073709551616", 1<<64 - 1, true}, // strtoull saturates
		{"-1", 0, false}, {"-0", 0, false}, {"+1", 0, false}, {" 1", 0, false}, {"1 ", 0, false},
		{"1.5", 0, false}, {"1t", 0, false}, {"1kib", 0, false}, {"0x10", 0, false},
		{strings.Repeat("0", 127) + "1", 0, false}, // 128 digits: longer than Redis's buffer
		{strings.Repeat("0", 126) + "1", 1, true},
	}
	for _, tc := range cases {
		got, ok := memToULL(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("memToULL(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestStrToSeconds(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"", 0, true}, {"60", 60, true}, {"+5", 5, true}, {" 5", 5, true}, {"\t5", 5, true},
		{"-0", 0, true}, {"007", 7, true}, {"2147483647", 1<<31 - 1, true},
		{"4294967297", 1, true},            // the low 32 bits
		{"99999999999999999999", 0, false}, // LLONG_MAX in an int is -1
		{"2147483648", 0, false}, {"-1", 0, false}, {"5 ", 0, false}, {"5x", 0, false},
		{" ", 0, false}, {"+", 0, false}, {"-", 0, false}, {"x", 0, false}, {"1e3", 0, false},
	}
	for _, tc := range cases {
		got, ok := strToSeconds(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("strToSeconds(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestOutputLimitReached follows Redis's checkClientOutputBufferLimits:
// the hard limit at once, the soft one only once exceeded continuously
// for more than its seconds (whole seconds), and a dip below it starts
// the count again.
func TestOutputLimitReached(t *testing.T) {
	s, err := New(DefaultConfig(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.cfg.ClientOutputBufferLimit[ClassNormal] = OutputBufferLimit{Hard: 1000, Soft: 100, SoftSeconds: 2}
	c := &Client{s: s}
	t0 := time.Unix(1000, 0)
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	steps := []struct {
		at   float64
		held int64
		want bool
	}{
		{0, 99, false},
		{0.5, 100, false},  // soft first seen: the count starts
		{2.9, 500, false},  // 2 s after, not more
		{3.0, 500, true},   // 3 s after: more than 2
		{3.1, 50, false},   // below: the count is reset
		{3.2, 100, false},  // starts again
		{5.99, 100, false}, // 5 - 3 = 2: not more
		{6.0, 999, true},
		{6.0, 1000, true}, // the hard limit, at once
	}
	for _, st := range steps {
		s.shard.mu.Lock()
		got := s.outputLimitReached(c, st.held, at(st.at))
		s.shard.mu.Unlock()
		if got != st.want {
			t.Errorf("at %.2fs with %d held: reached = %v, want %v", st.at, st.held, got, st.want)
		}
	}
	c2 := &Client{s: s}
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	if !s.outputLimitReached(c2, 1000, t0) {
		t.Errorf("a fresh client at the hard limit: not reached")
	}
	s.cfg.ClientOutputBufferLimit[ClassNormal] = OutputBufferLimit{}
	if s.outputLimitReached(c2, 1<<40, t0) {
		t.Errorf("with no limits: reached")
	}
}

// TestMemoryLimitFollowsMaxmemory: the Go memory limit is a quarter above
// maxmemory plus 64 MB while maxmemory is set, and what it was (GOMEMLIMIT
// or none) when it is not; CONFIG SET goes through applyConfig.
func TestMemoryLimitFollowsMaxmemory(t *testing.T) {
	base := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(base) })
	cfg := DefaultConfig()
	cfg.MaxMemory = 100 << 20
	s, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := debug.SetMemoryLimit(-1), int64(100<<20+25<<20+64<<20); got != want {
		t.Errorf("with maxmemory 100mb: Go memory limit %d, want %d", got, want)
	}
	for _, tc := range []struct{ maxmemory, want int64 }{
		{0, base},
		{1 << 30, min(base, 1<<30+1<<28+64<<20)},
		{math.MaxInt64, base}, // too big to add to: no limit of ours
	} {
		s.shard.mu.Lock()
		s.cfg.MaxMemory = tc.maxmemory
		s.applyConfig()
		s.shard.mu.Unlock()
		if got := debug.SetMemoryLimit(-1); got != tc.want {
			t.Errorf("maxmemory %d: Go memory limit %d, want %d", tc.maxmemory, got, tc.want)
		}
	}
}
