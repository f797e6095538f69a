package tests

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Differential tests: the same list commands sent to redstream and to a
// real redis-server (7.0 here), over raw RESP2 and RESP3 connections, must
// get byte-for-byte the same replies. Skipped when redis-server is not
// installed.

// TestListDiffTables checks the expectations of list_test.go's tables
// against redis-server, so they are Redis's answers and not guesses. The
// groups marked redis8 are skipped: 7.0 lacks the commands or the fixes.
func TestListDiffTables(t *testing.T) {
	t.Parallel()
	r := StartRedis(t)
	for _, proto := range []int{2, 3} {
		rc := ltDial(t, r.Addr, proto)
		for _, g := range ltGroups {
			if g.redis8 {
				continue
			}
			t.Run(fmt.Sprintf("resp%d/%s", proto, g.name), func(t *testing.T) {
				ltRunGroup(t, rc, proto, g, "redis-server")
			})
		}
	}
}

// ldConns is one side of the differential test: a RESP2 and a RESP3
// connection to one server.
type ldConns struct {
	name string
	c    [2]*RawConn // [0] RESP2, [1] RESP3
}

func ldOpen(t *testing.T, name, addr string) *ldConns {
	return &ldConns{name: name, c: [2]*RawConn{ltDial(t, addr, 2), ltDial(t, addr, 3)}}
}

// ldGen generates random list commands over a few keys.
type ldGen struct {
	rng *rand.Rand
}

var (
	ldListKeys = []string{"k1", "k2", "k3", "k4"}
	ldStrKey   = "s"
	ldValues   = []string{"a", "b", "c", "a", "b", "10", "-3", "007", "0", "-0", "3.14", "", "x y", "9223372036854775807", "18446744073709551616", "a", "10"}
)

func (g *ldGen) pick(xs []string) string { return xs[g.rng.Intn(len(xs))] }

// key is mostly a list key, sometimes the string key (WRONGTYPE cases).
func (g *ldGen) key() string {
	if g.rng.Intn(12) == 0 {
		return ldStrKey
	}
	return g.pick(ldListKeys)
}

func (g *ldGen) val() string { return g.pick(ldValues) }

func (g *ldGen) vals(max int) []string {
	out := make([]string, 1+g.rng.Intn(max))
	for i := range out {
		out[i] = g.val()
	}
	return out
}

// index is a list index, mostly small, sometimes far out or not a number.
func (g *ldGen) index() string {
	switch g.rng.Intn(30) {
	case 0:
		return "9223372036854775807"
	case 1:
		return "-9223372036854775807"
	case 2:
		return "x"
	case 3:
		return "1.5"
	}
	return strconv.Itoa(g.rng.Intn(17) - 8)
}

// count is a count argument: mostly 0..6, sometimes negative or invalid.
func (g *ldGen) count() string {
	switch g.rng.Intn(25) {
	case 0:
		return "-1"
	case 1:
		return "x"
	case 2:
		return "9223372036854775807"
	}
	return strconv.Itoa(g.rng.Intn(7))
}

func (g *ldGen) end() string {
	switch g.rng.Intn(20) {
	case 0:
		return "MIDDLE"
	case 1:
		return "left"
	}
	if g.rng.Intn(2) == 0 {
		return "LEFT"
	}
	return "RIGHT"
}

func (g *ldGen) keys(max int) []string {
	out := make([]string, 1+g.rng.Intn(max))
	for i := range out {
		out[i] = g.key()
	}
	return out
}

// next returns a command; blocking commands come with a guard: the keys
// to check with EXISTS first (the command is only sent when one exists,
// so it cannot block).
func (g *ldGen) next() (argv []string, guard []string) {
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
	case n < 10:
		return cat("RPUSH", g.key(), g.vals(4)), nil
	case n < 18:
		return cat("LPUSH", g.key(), g.vals(4)), nil
	case n < 21:
		return cat("RPUSHX", g.key(), g.vals(2)), nil
	case n < 24:
		return cat("LPUSHX", g.key(), g.vals(2)), nil
	case n < 28:
		return cat("LPOP", g.key()), nil
	case n < 32:
		return cat("RPOP", g.key(), g.count()), nil
	case n < 34:
		return cat("LPOP", g.key(), g.count()), nil
	case n < 37:
		return cat("LLEN", g.key()), nil
	case n < 42:
		return cat("LRANGE", g.key(), g.index(), g.index()), nil
	case n < 46:
		return cat("LINDEX", g.key(), g.index()), nil
	case n < 49:
		return cat("LSET", g.key(), g.index(), g.val()), nil
	case n < 52:
		where := "BEFORE"
		if g.rng.Intn(2) == 0 {
			where = "AFTER"
		}
		if g.rng.Intn(20) == 0 {
			where = "NEAR"
		}
		return cat("LINSERT", g.key(), where, g.val(), g.val()), nil
	case n < 55:
		return cat("LREM", g.key(), strconv.Itoa(g.rng.Intn(7)-3), g.val()), nil
	case n < 57:
		return cat("LTRIM", g.key(), g.index(), g.index()), nil
	case n < 61:
		args := cat("LPOS", g.key(), g.val())
		if g.rng.Intn(2) == 0 {
			rank := g.rng.Intn(7) - 3
			args = append(args, "RANK", strconv.Itoa(rank))
		}
		if g.rng.Intn(2) == 0 {
			args = append(args, "COUNT", strconv.Itoa(g.rng.Intn(4)))
		}
		if g.rng.Intn(3) == 0 {
			args = append(args, "MAXLEN", strconv.Itoa(g.rng.Intn(6)))
		}
		return args, nil
	case n < 66:
		return cat("LMOVE", g.key(), g.key(), g.end(), g.end()), nil
	case n < 69:
		return cat("RPOPLPUSH", g.key(), g.key()), nil
	case n < 73:
		keys := g.keys(3)
		args := cat("LMPOP", strconv.Itoa(len(keys)), keys, g.end())
		if g.rng.Intn(2) == 0 {
			args = append(args, "COUNT", strconv.Itoa(1+g.rng.Intn(4)))
		}
		return args, nil
	case n < 76:
		keys := g.keys(3)
		return cat("BLPOP", keys, "0"), keys
	case n < 79:
		keys := g.keys(2)
		return cat("BRPOP", keys, "0.5"), keys
	case n < 82:
		src := g.key()
		return cat("BLMOVE", src, g.key(), g.end(), g.end(), "0"), []string{src}
	case n < 84:
		src := g.key()
		return cat("BRPOPLPUSH", src, g.key(), "0"), []string{src}
	case n < 86:
		keys := g.keys(2)
		return cat("BLMPOP", "0", strconv.Itoa(len(keys)), keys, g.end(), "COUNT", strconv.Itoa(1+g.rng.Intn(3))), keys
	case n < 89:
		return cat("DEL", g.keys(2)), nil
	case n < 92:
		return cat("EXISTS", g.keys(3)), nil
	case n < 95:
		return cat("TYPE", g.key()), nil
	case n < 97:
		// Keep a string around for WRONGTYPE; now and then on a list key.
		k := ldStrKey
		if g.rng.Intn(4) == 0 {
			k = g.pick(ldListKeys)
		}
		return cat("SET", k, g.val()), nil
	default:
		return cat("LRANGE", g.pick(ldListKeys), "0", "-1"), nil
	}
}

// ldNoEffect reports whether a reply shows the command changed nothing
// (an error or a null), so both sides are still in the same state even
// when their replies differ.
func ldNoEffect(r Reply) bool { return r.Type == '-' || r.Null }

// TestListDiffRandom sends the same seeded random command sequence to
// redstream and redis-server and compares every reply. Set
// REDSTREAM_LIST_DIFF_SEED to replay one seed.
func TestListDiffRandom(t *testing.T) {
	t.Parallel()
	r := StartRedis(t)
	s := StartServer(t)
	seeds := []int64{1, 2, 3}
	if env := os.Getenv("REDSTREAM_LIST_DIFF_SEED"); env != "" {
		seed, err := strconv.ParseInt(env, 10, 64)
		if err != nil {
			t.Fatalf("REDSTREAM_LIST_DIFF_SEED: %v", err)
		}
		seeds = []int64{seed}
	}
	configs := []string{"", "-2", "3", "1", "-1"}
	const ops = 1500
	for i, seed := range seeds {
		for j, size := range configs {
			if len(seeds) > 1 && (i+j)%2 == 1 {
				continue // every seed meets about half the configurations
			}
			name := fmt.Sprintf("seed%d/listpack-size=%s", seed, size)
			if size == "" {
				name = fmt.Sprintf("seed%d/default", seed)
			}
			t.Run(name, func(t *testing.T) {
				red, rs := ldOpen(t, "redis-server", r.Addr), ldOpen(t, "redstream", s.Addr)
				for _, side := range []*ldConns{red, rs} {
					setup := [][]string{{"FLUSHALL"}, {"CONFIG", "SET", "list-max-listpack-size", "-2"}}
					if size != "" {
						setup[1][3] = size
					}
					for _, cmd := range setup {
						if got := side.c[0].Do(cmd...); got.Type == '-' {
							t.Fatalf("%s: %v = %s", side.name, cmd, got)
						}
					}
				}
				ldRun(t, seed, ops, red, rs)
			})
		}
	}
}

func ldRun(t *testing.T, seed int64, ops int, red, rs *ldConns) {
	t.Helper()
	g := &ldGen{rng: rand.New(rand.NewSource(seed))}
	var history []string
	seen := map[string]bool{}
	mismatches := 0
	// send runs one command on both sides over the same protocol and
	// compares; it returns the redis-server reply and false when the
	// replies differ in a way that may have changed state.
	send := func(step int, proto int, argv []string) (Reply, bool) {
		want := red.c[proto].Do(argv...)
		got := rs.c[proto].Do(argv...)
		line := fmt.Sprintf("RESP%d %s", proto+2, ldQuote(argv))
		history = append(history, line)
		if got.String() == want.String() {
			return want, true
		}
		mismatches++
		sig := argv[0] + " " + got.String() + " " + want.String()
		if !seen[sig] {
			seen[sig] = true
			from := max(0, len(history)-12)
			t.Errorf("seed %d step %d: %s\n redstream: %s\n     redis: %s\n recent commands:\n   %s\n (replay: REDSTREAM_LIST_DIFF_SEED=%d)",
				seed, step, line, got, want, strings.Join(history[from:], "\n   "), seed)
		}
		return want, ldNoEffect(got) && ldNoEffect(want)
	}
	for step := 0; step < ops; step++ {
		argv, guard := g.next()
		proto := g.rng.Intn(2)
		if guard != nil {
			ex, ok := send(step, proto, append([]string{"EXISTS"}, guard...))
			if !ok {
				t.Fatalf("seed %d step %d: states diverged; stopping", seed, step)
			}
			if ex.Int == 0 {
				continue // the blocking command would block: skip it
			}
		}
		if _, ok := send(step, proto, argv); !ok {
			t.Fatalf("seed %d step %d: states diverged; stopping (%d mismatches so far)", seed, step, mismatches)
		}
	}
	// The final states must match too.
	for _, k := range append([]string{ldStrKey}, ldListKeys...) {
		for _, cmd := range [][]string{{"TYPE", k}, {"LRANGE", k, "0", "-1"}, {"LLEN", k}} {
			if _, ok := send(ops, 0, cmd); !ok {
				t.Fatalf("seed %d: final state of %s differs", seed, k)
			}
		}
	}
	if mismatches > 0 {
		t.Logf("seed %d: %d mismatching replies (%d distinct reported)", seed, mismatches, len(seen))
	}
}

// ldQuote renders argv for a failure message, quoting odd arguments.
func ldQuote(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \"\r\n") {
			a = strconv.Quote(a)
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}
