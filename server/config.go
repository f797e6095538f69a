package server

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/redstream/redstream/resp"
)

// Config holds the server's settings. Names follow Redis's directives; one
// table (params) maps each directive to its field, so the config file,
// CONFIG GET and CONFIG SET cannot disagree.
type Config struct {
	Port                     int
	Bind                     []string // addresses; a leading '-' means "skip if unavailable"
	UnixSocket               string
	UnixSocketPerm           uint32
	ProtectedMode            bool
	RequirePass              string
	MaxClients               int
	Timeout                  int // seconds a client may idle; 0 = forever
	TCPKeepalive             int // seconds
	Databases                int
	Dir                      string
	LogLevel                 string
	LogFile                  string
	ProtoMaxBulkLen          int64
	ClientQueryBufferLimit   int64
	ClientOutputBufferLimit  [numOutputClasses]OutputBufferLimit // per client class (ClassNormal...): outputlimit.go
	ListMaxListpackSize      int
	ListCompressDepth        int // inner list nodes kept LZF-compressed; 0 = off
	StreamNodeMaxBytes       int
	StreamNodeMaxEntries     int
	Hz                       int
	SlowlogSlowerThan        int64 // microseconds; negative disables
	SlowlogMaxLen            int
	MaxMemory                int64
	MaxMemoryPolicy          string
	LatencyTracking          bool
	AppendOnly               bool   // keep an append-only file (the durability promise)
	AppendFsync              string // always | everysec | no
	AppendDirName            string
	AppendFileName           string
	AOFLoadTruncated         bool // cut a torn tail at load instead of refusing
	AutoAOFRewritePercentage int64
	AutoAOFRewriteMinSize    int64
	Save                     string // save points: "3600 1 300 100 60 10000", "" for none
	DBFilename               string
	RDBCompression           bool
	RDBChecksum              bool
	// Replication (a Raft group; replication/). Names are Redis Cluster's.
	ClusterEnabled       bool
	ClusterPort          int    // Raft traffic; 0: port+10000, as Redis's cluster bus
	ClusterNodeTimeout   int64  // ms; the basis of Raft's heartbeat and election timeouts
	ClusterAnnounceIP    string // the address other nodes and clients are told; "": the first bind address
	ClusterAnnouncePort  int    // the client port clients are told; 0: port
	ClusterSnapshotAfter int64  // committed entries between Raft snapshots (raft-snapshot-threshold)
	ClusterTrailingLogs  int64  // entries kept behind a snapshot for slow followers (raft-trailing-logs)
}

// DefaultConfig is what the server runs with when nothing is configured:
// loopback only, data under ./data.
func DefaultConfig() Config {
	return Config{
		Port:                     6379,
		Bind:                     []string{"127.0.0.1", "-::1"},
		UnixSocketPerm:           0o700,
		ProtectedMode:            true,
		MaxClients:               10000,
		TCPKeepalive:             300,
		Databases:                16,
		Dir:                      "./data",
		LogLevel:                 "notice",
		ProtoMaxBulkLen:          512 << 20,
		ClientQueryBufferLimit:   1 << 30,
		ClientOutputBufferLimit:  defaultOutputLimits,
		ListMaxListpackSize:      -2,
		StreamNodeMaxBytes:       4096,
		StreamNodeMaxEntries:     100,
		Hz:                       10,
		SlowlogSlowerThan:        10000,
		SlowlogMaxLen:            128,
		MaxMemoryPolicy:          "noeviction",
		LatencyTracking:          true,
		AppendOnly:               true,
		AppendFsync:              "always",
		AppendDirName:            "appendonlydir",
		AppendFileName:           "appendonly.aof",
		AOFLoadTruncated:         true,
		AutoAOFRewritePercentage: 100,
		AutoAOFRewriteMinSize:    64 << 20,
		Save:                     "3600 1 300 100 60 10000",
		DBFilename:               "dump.rdb",
		RDBCompression:           true,
		RDBChecksum:              true,
		ClusterNodeTimeout:       1000,
		ClusterSnapshotAfter:     8192,
		ClusterTrailingLogs:      10240,
	}
}

// Errors from setting a parameter.
var (
	// ErrUnknownParam means no directive has that name.
	ErrUnknownParam = errors.New("server: unknown configuration parameter")
	// ErrImmutableParam means the parameter can be set at startup only.
	ErrImmutableParam = errors.New("can't set immutable config")
	// ErrParamArgs means the directive got the wrong number of arguments.
	ErrParamArgs = errors.New("wrong number of arguments")
)

// param is one configuration directive.
type param struct {
	name    string
	alias   string // an older name Redis still accepts
	mutable bool   // CONFIG SET may change it while running
	multi   bool   // takes several words (bind)
	get     func(*Config) string
	set     func(*Config, []string) error
}

var params = []param{
	portParam(),
	{name: "bind", mutable: false, multi: true,
		get: func(c *Config) string { return strings.Join(c.Bind, " ") },
		set: func(c *Config, v []string) error {
			c.Bind = splitWords(v)
			return nil
		}},
	strParam("unixsocket", false, func(c *Config) *string { return &c.UnixSocket }),
	{name: "unixsocketperm",
		get: func(c *Config) string { return strconv.FormatUint(uint64(c.UnixSocketPerm), 8) },
		set: func(c *Config, v []string) error {
			n, err := strconv.ParseUint(v[0], 8, 32)
			if err != nil || n > 0o777 {
				return fmt.Errorf("argument couldn't be parsed as an octal permission")
			}
			c.UnixSocketPerm = uint32(n)
			return nil
		}},
	boolParam("protected-mode", true, func(c *Config) *bool { return &c.ProtectedMode }),
	strParam("requirepass", true, func(c *Config) *string { return &c.RequirePass }),
	intParam("maxclients", true, 1, math.MaxUint32, func(c *Config) *int { return &c.MaxClients }),
	intParam("timeout", true, 0, math.MaxInt32, func(c *Config) *int { return &c.Timeout }),
	intParam("tcp-keepalive", true, 0, math.MaxInt32, func(c *Config) *int { return &c.TCPKeepalive }),
	intParam("databases", false, 1, math.MaxInt32, func(c *Config) *int { return &c.Databases }),
	strParam("dir", false, func(c *Config) *string { return &c.Dir }),
	enumParam("loglevel", true, []string{"debug", "verbose", "notice", "warning", "nothing"}, func(c *Config) *string { return &c.LogLevel }),
	strParam("logfile", false, func(c *Config) *string { return &c.LogFile }),
	memParam("proto-max-bulk-len", true, 1<<20, func(c *Config) *int64 { return &c.ProtoMaxBulkLen }),
	memParam("client-query-buffer-limit", true, 1<<20, func(c *Config) *int64 { return &c.ClientQueryBufferLimit }),
	{name: "client-output-buffer-limit", mutable: true, multi: true,
		get: func(c *Config) string { return formatOutputLimits(&c.ClientOutputBufferLimit) },
		set: func(c *Config, v []string) error { return setOutputLimits(&c.ClientOutputBufferLimit, v) }},
	withAlias(intParam("list-max-listpack-size", true, math.MinInt32, math.MaxInt32, func(c *Config) *int { return &c.ListMaxListpackSize }), "list-max-ziplist-size"),
	intParam("list-compress-depth", true, 0, math.MaxInt32, func(c *Config) *int { return &c.ListCompressDepth }),
	intMemParam("stream-node-max-bytes", true, func(c *Config) *int { return &c.StreamNodeMaxBytes }),
	intParam("stream-node-max-entries", true, 0, math.MaxInt32, func(c *Config) *int { return &c.StreamNodeMaxEntries }),
	clamped(intParam("hz", true, 0, math.MaxInt32, func(c *Config) *int { return &c.Hz }), 1, 500, func(c *Config) *int { return &c.Hz }),
	int64Param("slowlog-log-slower-than", true, -1, math.MaxInt64, func(c *Config) *int64 { return &c.SlowlogSlowerThan }),
	intParam("slowlog-max-len", true, 0, math.MaxInt32, func(c *Config) *int { return &c.SlowlogMaxLen }),
	memParam("maxmemory", true, 0, func(c *Config) *int64 { return &c.MaxMemory }),
	enumParam("maxmemory-policy", true, []string{"noeviction"}, func(c *Config) *string { return &c.MaxMemoryPolicy }),
	boolParam("latency-tracking", true, func(c *Config) *bool { return &c.LatencyTracking }),
	boolParam("appendonly", true, func(c *Config) *bool { return &c.AppendOnly }),
	enumParam("appendfsync", true, []string{"always", "everysec", "no"}, func(c *Config) *string { return &c.AppendFsync }),
	fileName("appenddirname", "dirname", func(c *Config) *string { return &c.AppendDirName }),
	fileName("appendfilename", "filename", func(c *Config) *string { return &c.AppendFileName }),
	boolParam("aof-load-truncated", true, func(c *Config) *bool { return &c.AOFLoadTruncated }),
	int64Param("auto-aof-rewrite-percentage", true, 0, math.MaxInt32, func(c *Config) *int64 { return &c.AutoAOFRewritePercentage }),
	memParam("auto-aof-rewrite-min-size", true, 0, func(c *Config) *int64 { return &c.AutoAOFRewriteMinSize }),
	{name: "save", mutable: true, multi: true,
		get: func(c *Config) string { return c.Save },
		set: func(c *Config, v []string) error {
			joined := strings.Join(v, " ")
			if _, ok := parseSavePoints(joined); !ok {
				return errors.New("Invalid save parameters")
			}
			c.Save = strings.Join(strings.Fields(joined), " ")
			return nil
		}},
	fileName("dbfilename", "filename", func(c *Config) *string { return &c.DBFilename }),
	boolParam("rdbcompression", true, func(c *Config) *bool { return &c.RDBCompression }),
	boolParam("rdbchecksum", false, func(c *Config) *bool { return &c.RDBChecksum }),
	boolParam("cluster-enabled", false, func(c *Config) *bool { return &c.ClusterEnabled }),
	intParam("cluster-port", false, 0, 65535, func(c *Config) *int { return &c.ClusterPort }),
	int64Param("cluster-node-timeout", false, 100, math.MaxInt32, func(c *Config) *int64 { return &c.ClusterNodeTimeout }),
	strParam("cluster-announce-ip", false, func(c *Config) *string { return &c.ClusterAnnounceIP }),
	intParam("cluster-announce-port", false, 0, 65535, func(c *Config) *int { return &c.ClusterAnnouncePort }),
	int64Param("raft-snapshot-threshold", false, 1, math.MaxInt64, func(c *Config) *int64 { return &c.ClusterSnapshotAfter }),
	int64Param("raft-trailing-logs", false, 0, math.MaxInt64, func(c *Config) *int64 { return &c.ClusterTrailingLogs }),
}

func lookupParam(name string) *param {
	name = strings.ToLower(name)
	if name == "" {
		return nil
	}
	for i := range params {
		if params[i].name == name || params[i].alias == name {
			return &params[i]
		}
	}
	return nil
}

// Set applies one directive as it appears in a config file: its name and
// its arguments. Startup-only parameters are accepted here.
func (c *Config) Set(name string, args []string) error {
	p := lookupParam(name)
	if p == nil {
		return ErrUnknownParam
	}
	if len(args) == 0 || (!p.multi && len(args) != 1) {
		return ErrParamArgs
	}
	return p.set(c, args)
}

// Get returns a directive's value as CONFIG GET prints it.
func (c *Config) Get(name string) (string, bool) {
	p := lookupParam(name)
	if p == nil {
		return "", false
	}
	return p.get(c), true
}

// PortRandom is the Port of "port random": listen on a free port the
// system picks (for tests; Redis has no such value). Port 0 turns TCP
// off, as in Redis.
const PortRandom = -1

// portParam is port: 0..65535 as in Redis, or "random" (PortRandom).
func portParam() param {
	p := intParam("port", false, 0, 65535, func(c *Config) *int { return &c.Port })
	set := p.set
	p.set = func(c *Config, v []string) error {
		if strings.EqualFold(v[0], "random") {
			c.Port = PortRandom
			return nil
		}
		return set(c, v)
	}
	return p
}

func withAlias(p param, alias string) param { p.alias = alias; return p }

func splitWords(v []string) []string {
	var out []string
	for _, s := range v {
		out = append(out, strings.Fields(s)...)
	}
	return out
}

func strParam(name string, mutable bool, field func(*Config) *string) param {
	return param{name: name, mutable: mutable,
		get: func(c *Config) string { return *field(c) },
		set: func(c *Config, v []string) error { *field(c) = v[0]; return nil }}
}

func enumParam(name string, mutable bool, values []string, field func(*Config) *string) param {
	return param{name: name, mutable: mutable,
		get: func(c *Config) string { return *field(c) },
		set: func(c *Config, v []string) error {
			s := strings.ToLower(v[0])
			if !slices.Contains(values, s) {
				return fmt.Errorf("argument(s) must be one of the following: %s", strings.Join(values, ", "))
			}
			*field(c) = s
			return nil
		}}
}

func boolParam(name string, mutable bool, field func(*Config) *bool) param {
	return param{name: name, mutable: mutable,
		get: func(c *Config) string {
			if *field(c) {
				return "yes"
			}
			return "no"
		},
		set: func(c *Config, v []string) error {
			switch strings.ToLower(v[0]) {
			case "yes":
				*field(c) = true
			case "no":
				*field(c) = false
			default:
				return errors.New("argument must be 'yes' or 'no'")
			}
			return nil
		}}
}

func intParam(name string, mutable bool, lo, hi int, field func(*Config) *int) param {
	p := int64Param(name, mutable, int64(lo), int64(hi), nil)
	p.get = func(c *Config) string { return strconv.Itoa(*field(c)) }
	p.set = func(c *Config, v []string) error {
		n, err := parseIntArg(v[0], int64(lo), int64(hi))
		if err == nil {
			*field(c) = int(n)
		}
		return err
	}
	return p
}

func int64Param(name string, mutable bool, lo, hi int64, field func(*Config) *int64) param {
	return param{name: name, mutable: mutable,
		get: func(c *Config) string { return strconv.FormatInt(*field(c), 10) },
		set: func(c *Config, v []string) error {
			n, err := parseIntArg(v[0], lo, hi)
			if err == nil {
				*field(c) = n
			}
			return err
		}}
}

// parseIntArg parses an integer directive strictly (Redis's string2ll:
// no '+', no leading zeros) within [lo, hi], with Redis's error texts.
func parseIntArg(s string, lo, hi int64) (int64, error) {
	n, ok := resp.ParseInt([]byte(s))
	if !ok {
		return 0, errors.New("argument couldn't be parsed into an integer")
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("argument must be between %d and %d inclusive", lo, hi)
	}
	return n, nil
}

// memParam is a byte size that accepts Redis's units (1k = 1000,
// 1kb = 1024, likewise m/mb and g/gb).
func memParam(name string, mutable bool, lo int64, field func(*Config) *int64) param {
	return param{name: name, mutable: mutable,
		get: func(c *Config) string { return strconv.FormatInt(*field(c), 10) },
		set: func(c *Config, v []string) error {
			n, ok := ParseMemory(v[0])
			if !ok {
				return errors.New("argument must be a memory value")
			}
			if n < lo {
				return fmt.Errorf("argument must be between %d and %d inclusive", lo, int64(math.MaxInt64))
			}
			*field(c) = n
			return nil
		}}
}

// intMemParam is memParam for an int field (stream-node-max-bytes).
func intMemParam(name string, mutable bool, field func(*Config) *int) param {
	return param{name: name, mutable: mutable,
		get: func(c *Config) string { return strconv.Itoa(*field(c)) },
		set: func(c *Config, v []string) error {
			n, ok := ParseMemory(v[0])
			if !ok || n > math.MaxInt32 {
				return errors.New("argument must be a memory value")
			}
			*field(c) = int(n)
			return nil
		}}
}

// clamped wraps an int param so out-of-range values are pulled into
// [lo, hi] instead of refused (Redis does this for hz).
func clamped(p param, lo, hi int, field func(*Config) *int) param {
	set := p.set
	p.set = func(c *Config, v []string) error {
		if err := set(c, v); err != nil {
			return err
		}
		*field(c) = max(lo, min(hi, *field(c)))
		return nil
	}
	return p
}

// fileName is a string param that must be a bare file (or directory)
// name, as appendfilename and appenddirname must.
func fileName(name, kind string, field func(*Config) *string) param {
	p := strParam(name, false, field)
	p.set = func(c *Config, v []string) error {
		switch {
		case v[0] == "":
			return fmt.Errorf("%s can't be empty", name)
		case strings.ContainsAny(v[0], "/\\") || v[0] == "." || v[0] == "..":
			return fmt.Errorf("%s can't be a path, just a %s", name, kind)
		}
		*field(c) = v[0]
		return nil
	}
	return p
}

// ParseMemory parses "100", "10k", "10kb", "5mb", "1gb" into bytes, as
// Redis's memtoull does: digits only (no sign), a unit suffix of any case.
func ParseMemory(s string) (int64, bool) {
	s = strings.ToLower(s)
	units := []struct {
		suffix string
		mul    int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1}}
	mul := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mul = strings.TrimSuffix(s, u.suffix), u.mul
			break
		}
	}
	if s == "" {
		return 0, false
	}
	n := int64(0)
	for _, c := range []byte(s) {
		d := int64(c - '0')
		if c < '0' || c > '9' || n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if n > math.MaxInt64/mul {
		return 0, false
	}
	return n * mul, true
}

// ParamNames lists every configuration directive, for command-line flags.
func ParamNames() []string {
	out := make([]string, len(params))
	for i, p := range params {
		out[i] = p.name
	}
	return out
}
