package server

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// cfgSetCase sets one directive on a default Config and checks what Get
// then prints, or that the value is refused (with errText when set).
type cfgSetCase struct {
	name    string
	args    []string
	get     string // the value Get prints afterwards, when ok
	bad     bool
	errText string // the exact message, when the case pins it
}

func cfgArgs(v ...string) []string { return v }

var cfgSetCases = []cfgSetCase{
	// port: 0..65535.
	{name: "port", args: cfgArgs("7000"), get: "7000"},
	{name: "port", args: cfgArgs("0"), get: "0"},
	{name: "port", args: cfgArgs("65535"), get: "65535"},
	{name: "port", args: cfgArgs("65536"), bad: true, errText: "argument must be between 0 and 65535 inclusive"},
	{name: "port", args: cfgArgs("-1"), bad: true, errText: "argument must be between 0 and 65535 inclusive"},
	{name: "port", args: cfgArgs("random"), get: "-1"}, // PortRandom until Listen picks one
	{name: "port", args: cfgArgs("http"), bad: true, errText: "argument couldn't be parsed into an integer"},
	// bind: any number of words, in one argument or several.
	{name: "bind", args: cfgArgs("10.0.0.1"), get: "10.0.0.1"},
	{name: "bind", args: cfgArgs("127.0.0.1", "-::1"), get: "127.0.0.1 -::1"},
	{name: "bind", args: cfgArgs("10.0.0.1 10.0.0.2"), get: "10.0.0.1 10.0.0.2"},
	{name: "bind", args: cfgArgs("  a   b ", "c"), get: "a b c"},
	// unixsocket, dir, logfile, requirepass: any string.
	{name: "unixsocket", args: cfgArgs("/tmp/redstream.sock"), get: "/tmp/redstream.sock"},
	{name: "unixsocket", args: cfgArgs(""), get: ""},
	{name: "dir", args: cfgArgs("/var/lib/redstream"), get: "/var/lib/redstream"},
	{name: "logfile", args: cfgArgs("/var/log/redstream.log"), get: "/var/log/redstream.log"},
	{name: "requirepass", args: cfgArgs("s3cret pass"), get: "s3cret pass"},
	{name: "requirepass", args: cfgArgs(""), get: ""},
	// unixsocketperm: octal, at most 0777.
	{name: "unixsocketperm", args: cfgArgs("700"), get: "700"},
	{name: "unixsocketperm", args: cfgArgs("0770"), get: "770"},
	{name: "unixsocketperm", args: cfgArgs("0"), get: "0"},
	{name: "unixsocketperm", args: cfgArgs("777"), get: "777"},
	{name: "unixsocketperm", args: cfgArgs("1000"), bad: true},
	{name: "unixsocketperm", args: cfgArgs("8"), bad: true},
	{name: "unixsocketperm", args: cfgArgs("rwx"), bad: true},
	// Booleans: yes/no in any case.
	{name: "protected-mode", args: cfgArgs("no"), get: "no"},
	{name: "protected-mode", args: cfgArgs("YES"), get: "yes"},
	{name: "protected-mode", args: cfgArgs("1"), bad: true, errText: "argument must be 'yes' or 'no'"},
	{name: "protected-mode", args: cfgArgs("true"), bad: true, errText: "argument must be 'yes' or 'no'"},
	{name: "protected-mode", args: cfgArgs(""), bad: true, errText: "argument must be 'yes' or 'no'"},
	{name: "latency-tracking", args: cfgArgs("No"), get: "no"},
	{name: "latency-tracking", args: cfgArgs("yes"), get: "yes"},
	{name: "latency-tracking", args: cfgArgs("off"), bad: true, errText: "argument must be 'yes' or 'no'"},
	// Integers.
	{name: "maxclients", args: cfgArgs("1"), get: "1"},
	{name: "maxclients", args: cfgArgs("50000"), get: "50000"},
	{name: "maxclients", args: cfgArgs("0"), bad: true},
	{name: "timeout", args: cfgArgs("0"), get: "0"},
	{name: "timeout", args: cfgArgs("300"), get: "300"},
	{name: "timeout", args: cfgArgs("2147483647"), get: "2147483647"},
	{name: "timeout", args: cfgArgs("2147483648"), bad: true, errText: "argument must be between 0 and 2147483647 inclusive"},
	{name: "timeout", args: cfgArgs("-1"), bad: true, errText: "argument must be between 0 and 2147483647 inclusive"},
	{name: "timeout", args: cfgArgs("1.5"), bad: true, errText: "argument couldn't be parsed into an integer"},
	{name: "timeout", args: cfgArgs("5s"), bad: true, errText: "argument couldn't be parsed into an integer"},
	{name: "timeout", args: cfgArgs(""), bad: true, errText: "argument couldn't be parsed into an integer"},
	{name: "timeout", args: cfgArgs(" 5"), bad: true, errText: "argument couldn't be parsed into an integer"},
	{name: "timeout", args: cfgArgs("99999999999999999999"), bad: true},
	{name: "tcp-keepalive", args: cfgArgs("60"), get: "60"},
	{name: "tcp-keepalive", args: cfgArgs("-1"), bad: true, errText: "argument must be between 0 and 2147483647 inclusive"},
	{name: "databases", args: cfgArgs("1"), get: "1"},
	{name: "databases", args: cfgArgs("64"), get: "64"},
	{name: "databases", args: cfgArgs("0"), bad: true},
	{name: "hz", args: cfgArgs("1"), get: "1"},
	{name: "hz", args: cfgArgs("100"), get: "100"},
	{name: "hz", args: cfgArgs("500"), get: "500"},
	{name: "hz", args: cfgArgs("-1"), bad: true},
	{name: "hz", args: cfgArgs("abc"), bad: true, errText: "argument couldn't be parsed into an integer"},
	{name: "list-max-listpack-size", args: cfgArgs("-5"), get: "-5"},
	{name: "list-max-listpack-size", args: cfgArgs("-1"), get: "-1"},
	{name: "list-max-listpack-size", args: cfgArgs("128"), get: "128"},
	// list-compress-depth: 0..INT_MAX (a list clamps it to 65535).
	{name: "list-compress-depth", args: cfgArgs("1"), get: "1"},
	{name: "list-compress-depth", args: cfgArgs("70000"), get: "70000"},
	{name: "list-compress-depth", args: cfgArgs("-1"), bad: true, errText: "argument must be between 0 and 2147483647 inclusive"},
	{name: "list-max-ziplist-size", args: cfgArgs("64"), get: "64"},
	{name: "list-max-ziplist-size", args: cfgArgs("x"), bad: true},
	{name: "stream-node-max-bytes", args: cfgArgs("0"), get: "0"},
	{name: "stream-node-max-bytes", args: cfgArgs("8192"), get: "8192"},
	{name: "stream-node-max-bytes", args: cfgArgs("-1"), bad: true},
	{name: "stream-node-max-entries", args: cfgArgs("0"), get: "0"},
	{name: "stream-node-max-entries", args: cfgArgs("1000"), get: "1000"},
	{name: "stream-node-max-entries", args: cfgArgs("-1"), bad: true},
	{name: "slowlog-log-slower-than", args: cfgArgs("-1"), get: "-1"},
	{name: "slowlog-log-slower-than", args: cfgArgs("0"), get: "0"},
	{name: "slowlog-log-slower-than", args: cfgArgs("9223372036854775807"), get: "9223372036854775807"},
	{name: "slowlog-log-slower-than", args: cfgArgs("9223372036854775808"), bad: true, errText: "argument couldn't be parsed into an integer"},
	{name: "slowlog-log-slower-than", args: cfgArgs("fast"), bad: true, errText: "argument couldn't be parsed into an integer"},
	{name: "slowlog-max-len", args: cfgArgs("0"), get: "0"},
	{name: "slowlog-max-len", args: cfgArgs("1024"), get: "1024"},
	{name: "slowlog-max-len", args: cfgArgs("-1"), bad: true},
	// Memory sizes.
	{name: "maxmemory", args: cfgArgs("0"), get: "0"},
	{name: "maxmemory", args: cfgArgs("100"), get: "100"},
	{name: "maxmemory", args: cfgArgs("1k"), get: "1000"},
	{name: "maxmemory", args: cfgArgs("1kb"), get: "1024"},
	{name: "maxmemory", args: cfgArgs("1KB"), get: "1024"},
	{name: "maxmemory", args: cfgArgs("1Kb"), get: "1024"},
	{name: "maxmemory", args: cfgArgs("2m"), get: "2000000"},
	{name: "maxmemory", args: cfgArgs("2mb"), get: "2097152"},
	{name: "maxmemory", args: cfgArgs("3g"), get: "3000000000"},
	{name: "maxmemory", args: cfgArgs("3gb"), get: "3221225472"},
	{name: "maxmemory", args: cfgArgs("10b"), get: "10"},
	{name: "maxmemory", args: cfgArgs("-1"), bad: true, errText: "argument must be a memory value"},
	{name: "maxmemory", args: cfgArgs("1.5gb"), bad: true, errText: "argument must be a memory value"},
	{name: "maxmemory", args: cfgArgs("1t"), bad: true, errText: "argument must be a memory value"},
	{name: "maxmemory", args: cfgArgs("1kib"), bad: true, errText: "argument must be a memory value"},
	{name: "maxmemory", args: cfgArgs("1 kb"), bad: true, errText: "argument must be a memory value"},
	{name: "maxmemory", args: cfgArgs("0x10"), bad: true, errText: "argument must be a memory value"},
	{name: "proto-max-bulk-len", args: cfgArgs("1mb"), get: "1048576"},
	{name: "proto-max-bulk-len", args: cfgArgs("1gb"), get: "1073741824"},
	{name: "proto-max-bulk-len", args: cfgArgs("1000"), bad: true},
	{name: "proto-max-bulk-len", args: cfgArgs("1m"), bad: true}, // 1,000,000 < 1 MiB
	{name: "client-query-buffer-limit", args: cfgArgs("2gb"), get: "2147483648"},
	{name: "client-query-buffer-limit", args: cfgArgs("1048576"), get: "1048576"},
	{name: "client-query-buffer-limit", args: cfgArgs("1kb"), bad: true},
	// Enums: case-insensitive in, lower case out.
	{name: "loglevel", args: cfgArgs("debug"), get: "debug"},
	{name: "loglevel", args: cfgArgs("WARNING"), get: "warning"},
	{name: "loglevel", args: cfgArgs("verbose"), get: "verbose"},
	{name: "loglevel", args: cfgArgs("nothing"), get: "nothing"},
	{name: "loglevel", args: cfgArgs("loud"), bad: true, errText: "argument(s) must be one of the following: debug, verbose, notice, warning, nothing"},
	{name: "maxmemory-policy", args: cfgArgs("noeviction"), get: "noeviction"},
	{name: "maxmemory-policy", args: cfgArgs("NoEviction"), get: "noeviction"},
	{name: "maxmemory-policy", args: cfgArgs("sometimes"), bad: true},
	// The append-only file.
	{name: "appendonly", args: cfgArgs("yes"), get: "yes"},
	{name: "appendonly", args: cfgArgs("NO"), get: "no"},
	{name: "appendonly", args: cfgArgs("always"), bad: true, errText: "argument must be 'yes' or 'no'"},
	{name: "appendfsync", args: cfgArgs("always"), get: "always"},
	{name: "appendfsync", args: cfgArgs("EVERYSEC"), get: "everysec"},
	{name: "appendfsync", args: cfgArgs("no"), get: "no"},
	{name: "appendfsync", args: cfgArgs("sometimes"), bad: true, errText: "argument(s) must be one of the following: always, everysec, no"},
	{name: "appenddirname", args: cfgArgs("aofdir"), get: "aofdir"},
	{name: "appendfilename", args: cfgArgs("queue.aof"), get: "queue.aof"},
	{name: "aof-load-truncated", args: cfgArgs("no"), get: "no"},
	{name: "aof-load-truncated", args: cfgArgs("yes"), get: "yes"},
	{name: "aof-load-truncated", args: cfgArgs("maybe"), bad: true, errText: "argument must be 'yes' or 'no'"},
	{name: "auto-aof-rewrite-percentage", args: cfgArgs("0"), get: "0"},
	{name: "auto-aof-rewrite-percentage", args: cfgArgs("-1"), bad: true, errText: "argument must be between 0 and 2147483647 inclusive"},
	{name: "auto-aof-rewrite-min-size", args: cfgArgs("1mb"), get: "1048576"},
	{name: "auto-aof-rewrite-min-size", args: cfgArgs("lots"), bad: true, errText: "argument must be a memory value"},
	{name: "save", args: cfgArgs("3600", "1", "300", "100"), get: "3600 1 300 100"},
	{name: "save", args: cfgArgs("60 1000"), get: "60 1000"},
	{name: "save", args: cfgArgs(""), get: ""},
	{name: "save", args: cfgArgs("60"), bad: true, errText: "Invalid save parameters"},
	{name: "save", args: cfgArgs("x", "1"), bad: true, errText: "Invalid save parameters"},
	{name: "dbfilename", args: cfgArgs("snap.rdb"), get: "snap.rdb"},
	{name: "dbfilename", args: cfgArgs("../x.rdb"), bad: true, errText: "dbfilename can't be a path, just a filename"},
	{name: "rdbcompression", args: cfgArgs("no"), get: "no"},
	{name: "rdbcompression", args: cfgArgs("sometimes"), bad: true, errText: "argument must be 'yes' or 'no'"},
	{name: "rdbchecksum", args: cfgArgs("no"), get: "no"},
	// client-output-buffer-limit: <class> <hard> <soft> <seconds>, any
	// number of classes, in one argument or several (outputlimit_test.go
	// has the rest).
	{name: "client-output-buffer-limit", args: cfgArgs("normal 1mb 512kb 10"), get: "normal 1048576 524288 10 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
	{name: "client-output-buffer-limit", args: cfgArgs("replica", "0", "0", "0"), get: "normal 0 0 0 slave 0 0 0 pubsub 33554432 8388608 60"},
	{name: "client-output-buffer-limit", args: cfgArgs("normal 1mb"), bad: true, errText: "Wrong number of arguments in buffer limit configuration."},
	{name: "client-output-buffer-limit", args: cfgArgs("master 0 0 0"), bad: true, errText: "Invalid client class specified in buffer limit configuration."},
	{name: "client-output-buffer-limit", args: cfgArgs("normal 1mb x 0"), bad: true, errText: "Error in hard, soft or soft_seconds setting in buffer limit configuration."},
	// Replication directives: startup only, range-checked.
	{name: "cluster-enabled", args: cfgArgs("yes"), get: "yes"},
	{name: "cluster-enabled", args: cfgArgs("maybe"), bad: true},
	{name: "cluster-port", args: cfgArgs("17000"), get: "17000"},
	{name: "cluster-port", args: cfgArgs("70000"), bad: true, errText: "argument must be between 0 and 65535 inclusive"},
	{name: "cluster-node-timeout", args: cfgArgs("2000"), get: "2000"},
	{name: "cluster-node-timeout", args: cfgArgs("10"), bad: true},
	{name: "cluster-announce-ip", args: cfgArgs("10.0.0.7"), get: "10.0.0.7"},
	{name: "cluster-announce-port", args: cfgArgs("7001"), get: "7001"},
	{name: "cluster-announce-port", args: cfgArgs("-2"), bad: true},
	{name: "raft-snapshot-threshold", args: cfgArgs("1000"), get: "1000"},
	{name: "raft-snapshot-threshold", args: cfgArgs("0"), bad: true},
	{name: "raft-trailing-logs", args: cfgArgs("0"), get: "0"},
	{name: "raft-trailing-logs", args: cfgArgs("-1"), bad: true},
}

func TestConfigSetGet(t *testing.T) {
	for _, tc := range cfgSetCases {
		cfg := DefaultConfig()
		before, _ := cfg.Get(tc.name)
		err := cfg.Set(tc.name, tc.args)
		after, ok := cfg.Get(tc.name)
		if !ok {
			t.Errorf("Get(%q): unknown parameter", tc.name)
			continue
		}
		if tc.bad {
			if err == nil {
				t.Errorf("Set(%q, %q) = nil, want an error (Get now %q)", tc.name, tc.args, after)
				continue
			}
			if tc.errText != "" && err.Error() != tc.errText {
				t.Errorf("Set(%q, %q) = %q, want %q", tc.name, tc.args, err, tc.errText)
			}
			if after != before {
				t.Errorf("Set(%q, %q) failed but changed the value from %q to %q", tc.name, tc.args, before, after)
			}
			continue
		}
		if err != nil {
			t.Errorf("Set(%q, %q) = %v, want nil", tc.name, tc.args, err)
			continue
		}
		if after != tc.get {
			t.Errorf("Set(%q, %q); Get = %q, want %q", tc.name, tc.args, after, tc.get)
		}
	}
}

// TestConfigSetCoversEveryParam makes sure the table above grows with
// the parameter list.
func TestConfigSetCoversEveryParam(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range cfgSetCases {
		covered[tc.name] = true
	}
	for _, name := range ParamNames() {
		if !covered[name] {
			t.Errorf("parameter %q has no case in cfgSetCases", name)
		}
	}
}

func TestConfigFields(t *testing.T) {
	cfg := DefaultConfig()
	set := func(name string, args ...string) {
		t.Helper()
		if err := cfg.Set(name, args); err != nil {
			t.Fatalf("Set(%q, %q): %v", name, args, err)
		}
	}
	set("bind", "0.0.0.0 ::", "-10.0.0.1")
	if !slices.Equal(cfg.Bind, []string{"0.0.0.0", "::", "-10.0.0.1"}) {
		t.Errorf("after bind: Bind = %q", cfg.Bind)
	}
	set("list-max-ziplist-size", "-3")
	if cfg.ListMaxListpackSize != -3 {
		t.Errorf("list-max-ziplist-size -3: ListMaxListpackSize = %d", cfg.ListMaxListpackSize)
	}
	if v, _ := cfg.Get("list-max-listpack-size"); v != "-3" {
		t.Errorf("Get(list-max-listpack-size) after setting the alias = %q, want -3", v)
	}
	if v, ok := cfg.Get("list-max-ziplist-size"); !ok || v != "-3" {
		t.Errorf("Get(list-max-ziplist-size) = %q, %v; want -3, true", v, ok)
	}
	set("maxmemory", "5mb")
	set("proto-max-bulk-len", "2mb")
	set("client-query-buffer-limit", "64mb")
	if cfg.MaxMemory != 5<<20 || cfg.ProtoMaxBulkLen != 2<<20 || cfg.ClientQueryBufferLimit != 64<<20 {
		t.Errorf("memory fields = %d, %d, %d", cfg.MaxMemory, cfg.ProtoMaxBulkLen, cfg.ClientQueryBufferLimit)
	}
	set("unixsocketperm", "755")
	if cfg.UnixSocketPerm != 0o755 {
		t.Errorf("unixsocketperm 755: UnixSocketPerm = %o", cfg.UnixSocketPerm)
	}
	set("protected-mode", "no")
	set("latency-tracking", "no")
	if cfg.ProtectedMode || cfg.LatencyTracking {
		t.Errorf("booleans not cleared: %v %v", cfg.ProtectedMode, cfg.LatencyTracking)
	}
	set("slowlog-log-slower-than", "-1")
	set("requirepass", "pw")
	set("hz", "50")
	if cfg.SlowlogSlowerThan != -1 || cfg.RequirePass != "pw" || cfg.Hz != 50 {
		t.Errorf("fields: slowlog %d, requirepass %q, hz %d", cfg.SlowlogSlowerThan, cfg.RequirePass, cfg.Hz)
	}
}

func TestConfigNamesAndArgs(t *testing.T) {
	cfg := DefaultConfig()
	// Unknown names.
	for _, name := range []string{"", "nosuchparam", "hz ", "list-max", "maxmemory-policies"} {
		if err := cfg.Set(name, []string{"1"}); !errors.Is(err, ErrUnknownParam) {
			t.Errorf("Set(%q) = %v, want ErrUnknownParam", name, err)
		}
		if v, ok := cfg.Get(name); ok || v != "" {
			t.Errorf("Get(%q) = %q, %v; want \"\", false", name, v, ok)
		}
	}
	// Names are case-insensitive.
	if err := cfg.Set("HZ", []string{"42"}); err != nil {
		t.Errorf("Set(HZ) = %v", err)
	}
	if v, ok := cfg.Get("Hz"); !ok || v != "42" {
		t.Errorf("Get(Hz) = %q, %v; want 42, true", v, ok)
	}
	if err := cfg.Set("List-Max-Ziplist-Size", []string{"7"}); err != nil || cfg.ListMaxListpackSize != 7 {
		t.Errorf("Set(List-Max-Ziplist-Size, 7) = %v, field %d", err, cfg.ListMaxListpackSize)
	}
	// Argument counts: one for every directive but bind; at least one.
	for _, name := range ParamNames() {
		if err := cfg.Set(name, nil); !errors.Is(err, ErrParamArgs) {
			t.Errorf("Set(%q, no args) = %v, want ErrParamArgs", name, err)
		}
		if name == "bind" || name == "save" || name == "client-output-buffer-limit" { // several words: "save 3600 1 300 100"
			continue
		}
		v, _ := cfg.Get(name)
		if err := cfg.Set(name, []string{v, v}); !errors.Is(err, ErrParamArgs) {
			t.Errorf("Set(%q, two args) = %v, want ErrParamArgs", name, err)
		}
	}
}

// TestConfigRoundTrip checks that every value Get prints can be set back
// (what CONFIG REWRITE and a config file rely on), and that ParamNames
// lists each directive once.
func TestConfigRoundTrip(t *testing.T) {
	names := ParamNames()
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("ParamNames lists %q twice", n)
		}
		seen[n] = true
		if n != strings.ToLower(n) {
			t.Errorf("ParamNames: %q is not lower case", n)
		}
	}
	for _, want := range []string{"port", "bind", "requirepass", "maxclients", "timeout", "maxmemory", "hz", "list-max-listpack-size", "proto-max-bulk-len", "client-query-buffer-limit"} {
		if !seen[want] {
			t.Errorf("ParamNames lacks %q", want)
		}
	}
	def := DefaultConfig()
	for _, n := range names {
		v, ok := def.Get(n)
		if !ok {
			t.Errorf("Get(%q) on the default config: unknown", n)
			continue
		}
		cfg := DefaultConfig()
		args := []string{v}
		if err := cfg.Set(n, args); err != nil {
			t.Errorf("Set(%q, %q) (the default, as Get prints it) = %v", n, v, err)
			continue
		}
		if got, _ := cfg.Get(n); got != v {
			t.Errorf("%q: Get after setting %q back = %q", n, v, got)
		}
	}
}

func TestParseMemory(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"100", 100, true},
		{"1b", 1, true},
		{"1B", 1, true},
		{"1k", 1000, true},
		{"1K", 1000, true},
		{"1kb", 1024, true},
		{"1KB", 1024, true},
		{"1kB", 1024, true},
		{"1m", 1000 * 1000, true},
		{"1mb", 1 << 20, true},
		{"1MB", 1 << 20, true},
		{"1g", 1000 * 1000 * 1000, true},
		{"1gb", 1 << 30, true},
		{"1GB", 1 << 30, true},
		{"512mb", 512 << 20, true},
		{"16gb", 16 << 30, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"8589934591gb", 8589934591 << 30, true},
		{"8589934592gb", 0, false}, // overflows int64
		{"9223372036854775808", 0, false},
		{"-1", 0, false},
		{"-1kb", 0, false},
		{"1.5gb", 0, false},
		{"1t", 0, false},
		{"1tb", 0, false},
		{"1kib", 0, false},
		{"1 kb", 0, false},
		{" 1kb", 0, false},
		{"1kb ", 0, false},
		{"0x10", 0, false},
		{"1e3", 0, false},
		{"abc", 0, false},
		{"gb", 0, false},
		{"1bb", 0, false},
		{"1kbb", 0, false},
	}
	for _, tc := range cases {
		got, ok := ParseMemory(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestConfigRedisParsing pins where the directives' parsing differs from
// Redis's (config.c: string2ll for integers, memtoull for sizes, the
// bounds of createIntConfig & co.). Each case was checked with CONFIG SET
// on redis-server 7.0 or read from the current config.c.
func TestConfigRedisParsing(t *testing.T) {
	cases := []struct {
		name, value string
		ok          bool
		get         string // when ok
		errText     string // when !ok and pinned
	}{
		// Integers are parsed by string2ll: no '+', no leading zeros.
		{"hz", "+5", false, "", "argument couldn't be parsed into an integer"},
		{"hz", "010", false, "", "argument couldn't be parsed into an integer"},
		{"timeout", "+0", false, "", "argument couldn't be parsed into an integer"},
		{"timeout", "-0", false, "", "argument couldn't be parsed into an integer"},
		{"maxclients", "0100", false, "", "argument couldn't be parsed into an integer"},
		// Sizes are parsed by memtoull: digits, then a unit; no sign.
		{"maxmemory", "+5", false, "", "argument must be a memory value"},
		{"maxmemory", "+1kb", false, "", "argument must be a memory value"},
		{"maxmemory", "-0", false, "", "argument must be a memory value"},
		// slowlog-log-slower-than is bounded below by -1.
		{"slowlog-log-slower-than", "-5", false, "", "argument must be between -1 and 9223372036854775807 inclusive"},
		// The minimum of a size is reported as a range.
		{"proto-max-bulk-len", "1000", false, "", "argument must be between 1048576 and 9223372036854775807 inclusive"},
		{"client-query-buffer-limit", "1000", false, "", "argument must be between 1048576 and 9223372036854775807 inclusive"},
		// stream-node-max-bytes is a size (MEMORY_CONFIG).
		{"stream-node-max-bytes", "4kb", true, "4096", ""},
		// hz accepts 0..INT_MAX and is clamped to 1..500 (updateHZ).
		{"hz", "0", true, "1", ""},
		{"hz", "1000", true, "500", ""},
		// list-max-listpack-size takes any int (quicklist clamps it).
		{"list-max-listpack-size", "-6", true, "-6", ""},
		// The AOF names are plain names inside dir (isValidAOFfilename,
		// isValidAOFdirname).
		{"appendfilename", "", false, "", "appendfilename can't be empty"},
		{"appendfilename", "../escape.aof", false, "", "appendfilename can't be a path, just a filename"},
		{"appendfilename", `a\b.aof`, false, "", "appendfilename can't be a path, just a filename"},
		{"appenddirname", "", false, "", "appenddirname can't be empty"},
		{"appenddirname", "/var/lib/aof", false, "", "appenddirname can't be a path, just a dirname"},
	}
	for _, tc := range cases {
		cfg := DefaultConfig()
		err := cfg.Set(tc.name, []string{tc.value})
		got, _ := cfg.Get(tc.name)
		switch {
		case tc.ok && err != nil:
			t.Errorf("Set(%q, %q) = %v; Redis accepts it (CONFIG GET then says %q)", tc.name, tc.value, err, tc.get)
		case tc.ok && got != tc.get:
			t.Errorf("Set(%q, %q); Get = %q; Redis says %q", tc.name, tc.value, got, tc.get)
		case !tc.ok && err == nil:
			t.Errorf("Set(%q, %q) accepted (Get = %q); Redis refuses it: %q", tc.name, tc.value, got, tc.errText)
		case !tc.ok && tc.errText != "" && err.Error() != tc.errText:
			t.Errorf("Set(%q, %q) = %q; Redis says %q", tc.name, tc.value, err, tc.errText)
		}
	}
}

func FuzzParseMemory(f *testing.F) {
	for _, s := range []string{"0", "1kb", "5MB", "1g", "-1", "1.5gb", "+5", "8589934592gb", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ParseMemory(s)
		if !ok {
			return
		}
		if got < 0 {
			t.Fatalf("ParseMemory(%q) = %d, a negative size", s, got)
		}
		// An accepted value is digits and an optional unit.
		digits := strings.TrimRight(strings.ToLower(s), "kmgb")
		n, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || n > got && got != 0 {
			t.Fatalf("ParseMemory(%q) = %d, but its digits %q read %d, %v", s, got, digits, n, err)
		}
	})
}
