package tests

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Differential tests: the same stream commands sent to redstream and to a
// real redis-server (7.0 here) must get the same replies. Skipped when
// redis-server is not installed.

// TestStreamDiffTables checks stream_test.go's expectations against
// redis-server, so they are Redis's answers and not guesses.
func TestStreamDiffTables(t *testing.T) {
	t.Parallel()
	r := StartRedis(t)
	for _, proto := range []int{2, 3} {
		rc := stDial(t, r.Addr, proto)
		for _, g := range stGroups {
			if g.redis8 {
				continue
			}
			t.Run(fmt.Sprintf("resp%d/%s", proto, g.name), func(t *testing.T) {
				stRunGroup(t, rc, proto, g, "redis-server")
			})
		}
	}
}

// sdGen generates random stream commands with explicit IDs, so that both
// servers pick the same IDs.
type sdGen struct {
	rng  *rand.Rand
	last map[string]uint64 // a guess at each key's last ms, to stay near it
}

var (
	sdKeys   = []string{"s1", "s2", "s3"}
	sdFields = []string{"f", "g", "event", "user", "123", ""}
	sdValues = []string{"v", "click", "12345", "-7", "", "x y", "9223372036854775808", "007", strings.Repeat("z", 90)}
)

func (g *sdGen) pick(xs []string) string { return xs[g.rng.Intn(len(xs))] }

// key is mostly a stream key, now and then the string key "str".
func (g *sdGen) key() string {
	if g.rng.Intn(25) == 0 {
		return "str"
	}
	return g.pick(sdKeys)
}

// id is an ID near key's last one: just past it, on it, or before it;
// now and then malformed or special.
func (g *sdGen) id(key string) string {
	ms := g.last[key]
	switch g.rng.Intn(30) {
	case 0:
		return "x"
	case 1:
		return "-"
	case 2:
		return "+"
	case 3:
		return "18446744073709551615-18446744073709551615"
	}
	ms = uint64(max(int64(ms)+int64(g.rng.Intn(6))-3, 0))
	switch g.rng.Intn(4) {
	case 0:
		return strconv.FormatUint(ms, 10)
	case 1:
		return fmt.Sprintf("%d-%d", ms, g.rng.Intn(3))
	}
	return fmt.Sprintf("%d-%d", ms, g.rng.Intn(4))
}

// addID is an ID for XADD, which moves the key's clock forward.
func (g *sdGen) addID(key string) string {
	if g.rng.Intn(8) == 0 {
		return g.id(key)
	}
	g.last[key] += uint64(g.rng.Intn(3))
	if g.rng.Intn(3) == 0 {
		return fmt.Sprintf("%d-*", g.last[key])
	}
	return fmt.Sprintf("%d-%d", g.last[key], g.rng.Intn(5))
}

func (g *sdGen) fieldValues() []string {
	n := 1 + g.rng.Intn(3)
	var out []string
	for i := range n {
		f := sdFields[i]
		if g.rng.Intn(5) == 0 {
			f = g.pick(sdFields)
		}
		out = append(out, f, g.pick(sdValues))
	}
	return out
}

// trim returns MAXLEN/MINID options, exact or approximate, with LIMIT.
func (g *sdGen) trim(key string) []string {
	var out []string
	if g.rng.Intn(2) == 0 {
		out = []string{"MAXLEN"}
	} else {
		out = []string{"MINID"}
	}
	op := []string{"", "=", "~"}[g.rng.Intn(3)]
	if op != "" {
		out = append(out, op)
	}
	if out[0] == "MAXLEN" {
		out = append(out, strconv.Itoa(g.rng.Intn(12)))
	} else {
		out = append(out, g.id(key))
	}
	if op == "~" && g.rng.Intn(3) == 0 {
		out = append(out, "LIMIT", strconv.Itoa(g.rng.Intn(8)))
	}
	return out
}

func (g *sdGen) count() string {
	if g.rng.Intn(15) == 0 {
		return strconv.Itoa(g.rng.Intn(3) - 1)
	}
	return strconv.Itoa(1 + g.rng.Intn(6))
}

func (g *sdGen) next() []string {
	k := g.key()
	cat := func(parts ...any) []string {
		var out []string
		for _, p := range parts {
			switch p := p.(type) {
			case string:
				out = append(out, p)
			case []string:
				out = append(out, p...)
			}
		}
		return out
	}
	switch n := g.rng.Intn(100); {
	case n < 30:
		return cat("XADD", k, g.addID(k), g.fieldValues())
	case n < 40:
		args := cat("XADD", k)
		if g.rng.Intn(5) == 0 {
			args = append(args, "NOMKSTREAM")
		}
		return cat(args, g.trim(k), g.addID(k), g.fieldValues())
	case n < 50:
		return cat("XDEL", k, g.id(k), g.id(k))
	case n < 56:
		return cat("XTRIM", k, g.trim(k))
	case n < 68:
		args := cat("XRANGE", k, g.id(k), g.id(k))
		if g.rng.Intn(2) == 0 {
			args[0] = "XREVRANGE"
		}
		if g.rng.Intn(4) == 0 {
			args[2] = "(" + args[2]
		}
		if g.rng.Intn(4) == 0 {
			args[3] = "(" + args[3]
		}
		if g.rng.Intn(2) == 0 {
			args = append(args, "COUNT", g.count())
		}
		return args
	case n < 76:
		k2 := g.key()
		args := []string{"XREAD"}
		if g.rng.Intn(2) == 0 {
			args = append(args, "COUNT", g.count())
		}
		return cat(args, "STREAMS", k, k2, g.readID(k), g.readID(k2))
	case n < 80:
		return []string{"XLEN", k}
	case n < 86:
		args := []string{"XINFO", "STREAM", k}
		switch g.rng.Intn(3) {
		case 1:
			args = append(args, "FULL")
		case 2:
			args = append(args, "FULL", "COUNT", strconv.Itoa(g.rng.Intn(4)))
		}
		return args
	case n < 88:
		return []string{"XSETID", k, g.setID(k)}
	case n < 90:
		return []string{"DEL", k}
	case n < 92:
		k2 := g.pick(sdKeys)
		g.last[k2] = max(g.last[k], g.last[k2])
		return []string{"RENAME", k, k2}
	case n < 94:
		return []string{"TYPE", k}
	case n < 95:
		return []string{"SET", "str", "v"}
	default:
		return []string{"XRANGE", g.pick(sdKeys), "-", "+"}
	}
}

// setID is an XSETID ID, mostly past anything deleted so far: 7.0 does
// not check it against the max deleted ID (Redis 8 does; see the tables).
func (g *sdGen) setID(key string) string {
	if g.rng.Intn(10) == 0 {
		return g.pick([]string{"x", "+", "-"})
	}
	g.last[key] += 6 + uint64(g.rng.Intn(3)) // random XADD IDs reach last+2
	return fmt.Sprintf("%d-%d", g.last[key], g.rng.Intn(3))
}

// readID is an XREAD ID: "$" or an ID ("+" is Redis 7.4's, so it is
// left to the tables).
func (g *sdGen) readID(key string) string {
	if id := g.id(key); id != "+" && g.rng.Intn(6) != 0 {
		return id
	}
	return "$"
}

// sdIDMPFields are XINFO STREAM fields of Redis 8.6 that 7.0 lacks.
var sdIDMPFields = map[string]bool{"idmp-duration": true, "idmp-maxsize": true, "pids-tracked": true,
	"iids-tracked": true, "iids-added": true, "iids-duplicates": true}

// sdStrip drops the Redis 8 IDMP fields from an XINFO STREAM reply.
func sdStrip(r Reply) Reply {
	if r.Type != '*' && r.Type != '%' {
		return r
	}
	out := Reply{Type: r.Type}
	for i := 0; i+1 < len(r.Elems); i += 2 {
		if !sdIDMPFields[r.Elems[i].Str] {
			out.Elems = append(out.Elems, r.Elems[i], r.Elems[i+1])
		}
	}
	return out
}

// TestStreamDiffRandom sends the same seeded random stream commands to
// redstream and redis-server, with several node limits, and compares every
// reply (XINFO STREAM minus the IDMP fields 7.0 lacks). Node boundaries are
// the same on both sides, so even "~" trims and radix-tree figures must
// agree. Set REDSTREAM_STREAM_DIFF_SEED to replay one seed.
func TestStreamDiffRandom(t *testing.T) {
	t.Parallel()
	r := StartRedis(t)
	s := StartServer(t)
	seeds := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if env := os.Getenv("REDSTREAM_STREAM_DIFF_SEED"); env != "" {
		seed, err := strconv.ParseInt(env, 10, 64)
		if err != nil {
			t.Fatalf("REDSTREAM_STREAM_DIFF_SEED: %v", err)
		}
		seeds = []int64{seed}
	}
	limits := [][2]string{{"100", "4096"}, {"3", "4096"}, {"1", "0"}, {"0", "60"}, {"5", "200"}}
	for i, seed := range seeds {
		lim := limits[i%len(limits)]
		t.Run(fmt.Sprintf("seed%d/entries=%s,bytes=%s", seed, lim[0], lim[1]), func(t *testing.T) {
			red, rs := ldOpenStream(t, r.Addr), ldOpenStream(t, s.Addr)
			for _, side := range [][2]*RawConn{red, rs} {
				for _, c := range [][]string{{"FLUSHALL"}, {"CONFIG", "SET", "stream-node-max-entries", lim[0]}, {"CONFIG", "SET", "stream-node-max-bytes", lim[1]}} {
					if got := side[0].Do(c...); got.Type == '-' {
						t.Fatalf("%v = %s", c, got)
					}
				}
			}
			sdRun(t, seed, 1500, red, rs)
		})
	}
}

// ldOpenStream opens a RESP2 and a RESP3 connection to addr.
func ldOpenStream(t *testing.T, addr string) [2]*RawConn {
	return [2]*RawConn{stDial(t, addr, 2), stDial(t, addr, 3)}
}

func sdRun(t *testing.T, seed int64, ops int, red, rs [2]*RawConn) {
	t.Helper()
	g := &sdGen{rng: rand.New(rand.NewSource(seed)), last: map[string]uint64{}}
	var history []string
	mismatches := 0
	for step := 0; step < ops; step++ {
		argv := g.next()
		proto := g.rng.Intn(2)
		want := red[proto].Do(argv...)
		got := rs[proto].Do(argv...)
		if argv[0] == "XINFO" {
			want, got = sdStrip(want), sdStrip(got)
		}
		line := fmt.Sprintf("RESP%d %s", proto+2, stQuote(argv))
		history = append(history, line)
		if got.String() == want.String() || sdKnownDiff(argv, got, want) {
			continue
		}
		mismatches++
		from := max(0, len(history)-15)
		t.Fatalf("seed %d step %d: %s\n redstream: %s\n     redis: %s\n recent commands:\n   %s\n (replay: REDSTREAM_STREAM_DIFF_SEED=%d)",
			seed, step, line, got, want, strings.Join(history[from:], "\n   "), seed)
	}
	for _, k := range sdKeys {
		for _, c := range [][]string{{"XRANGE", k, "-", "+"}, {"XINFO", "STREAM", k, "FULL", "COUNT", "0"}} {
			want, got := sdStrip(red[0].Do(c...)), sdStrip(rs[0].Do(c...))
			if got.String() != want.String() {
				t.Fatalf("seed %d: final %v differs\n redstream: %s\n     redis: %s", seed, c, got, want)
			}
		}
	}
}

// sdKnownDiff accepts replies that differ only because Redis 8 checks
// more than 7.0 and changed nothing on either side: XSETID is refused
// first for going below the max deleted ID, which 7.0 does not check.
func sdKnownDiff(argv []string, got, want Reply) bool {
	return argv[0] == "XSETID" && got.Type == '-' && want.Type == '-' &&
		strings.Contains(got.Str, "max_deleted_entry_id")
}

// stQuote renders argv for a failure message.
func stQuote(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \"\r\n") {
			a = strconv.Quote(a)
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}
