package server

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// globCase is one pattern, one subject and what Redis's stringmatchlen
// answers.
type globCase struct {
	pattern, s string
	nocase     bool
	want       bool
}

var globCases = []globCase{
	// Empty pattern.
	{"", "", false, true},
	{"", "a", false, false},
	// Literals.
	{"hello", "hello", false, true},
	{"hello", "hell", false, false},
	{"hello", "helloo", false, false},
	{"hello", "HELLO", false, false},
	{"hello", "HELLO", true, true},
	{"HeLLo", "hEllO", true, true},
	{"\x00a\xff", "\x00a\xff", false, true},
	// Star.
	{"*", "anything", false, true},
	{"*", "x", false, true},
	{"a*", "a", false, true},
	{"a*", "abc", false, true},
	{"a*", "bac", false, false},
	{"*a", "bca", false, true},
	{"*a", "ab", false, false},
	{"a*b*c", "aXbYc", false, true},
	{"a*b*c", "abc", false, true},
	{"a*b*c", "aXbY", false, false},
	{"**a", "ba", false, true},
	{"a**", "a", false, true},
	{"a***b", "ab", false, true},
	{"*a*b", "aaaaaaab", false, true},
	{"*ab*ab", "abXabab", false, true},
	{"*ab*ab", "abXab", false, true},
	{"*ab*ab", "abXa", false, false},
	{"a*?", "a", false, false},
	{"a*?", "ab", false, true},
	{"*?*", "a", false, true},
	{"user:*:name", "user:42:name", false, true},
	{"user:*:name", "user:42:age", false, false},
	// Question mark: exactly one byte.
	{"h?llo", "hello", false, true},
	{"h?llo", "hllo", false, false},
	{"h?llo", "heello", false, false},
	{"?", "", false, false},
	{"??", "a", false, false},
	{"?", "\x00", false, true},
	// Classes.
	{"h[ae]llo", "hallo", false, true},
	{"h[ae]llo", "hello", false, true},
	{"h[ae]llo", "hillo", false, false},
	{"h[^e]llo", "hallo", false, true},
	{"h[^e]llo", "hello", false, false},
	{"h[a-b]llo", "hbllo", false, true},
	{"h[a-b]llo", "hcllo", false, false},
	{"[z-a]", "m", false, true}, // a reversed range is swapped
	{"[a-z]", "Q", false, false},
	{"[a-z]", "Q", true, true},
	{"[A-Z]", "q", true, true},
	{"[^a-z]", "Q", true, false},
	{"[abc]", "B", true, true},
	{"[0-9][0-9]", "42", false, true},
	{"[0-9][0-9]", "4x", false, false},
	{"[*]", "*", false, true},
	{"[*]", "a", false, false},
	{"[?]", "a", false, false},
	{"[Z-a]", "_", false, true},
	{"[Z-a]", "m", true, false}, // swapped first, then lowered: z..a is empty
	{"[Z-a]", "_", true, false},
	{"[a-c-e]", "-", false, true}, // after a range, '-' is a member
	{"[a-c-e]", "d", false, false},
	{"[]]", "]", false, false}, // "[]" is an empty class: ']' closes at once
	{"[]a", "a", false, false},
	{"[^]a", "xa", false, true}, // a negated empty class matches any byte
	// Escapes.
	{`\*`, "*", false, true},
	{`\*`, "a", false, false},
	{`a\?`, "a?", false, true},
	{`a\?`, "ab", false, false},
	{`\[a]`, "[a]", false, true},
	{`\\`, `\`, false, true},
	{`\a`, "a", false, true},
	{`\A`, "a", true, true},
	{`a\`, `a\`, false, true}, // a trailing backslash is itself
	{`a\`, "a", false, false},
	{`[\]]`, "]", false, true},
	{`[\-]`, "-", false, true},
	{`[a\-z]`, "b", false, false},
	{`[a\-z]`, "-", false, true},
	{`[\^a]`, "^", false, true},
	{`[\`, `\`, false, true}, // an unterminated class holding a backslash
	// Unterminated classes end with the pattern.
	{"[a", "a", false, true},
	{"[a", "b", false, false},
	{"[", "a", false, false},
	{"[^", "a", false, true},
	{"[^a", "b", false, true},
	{"[^a", "a", false, false},
	{"ab[", "abc", false, false},
	{"[a-", "a", false, true},
	{"[a-", "-", false, true},
	{"[a-", "b", false, false},
	// A range may end with ']', which then does not close the class.
	{"[a-]", "^", false, true},
	{"[a-]", "]", false, true},
	{"[a-]", "b", false, false},
	{"[a-]x", "x", false, true},
	{"[a-]x", "^x", false, false},
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range globCases {
		if got := globMatch([]byte(tc.pattern), []byte(tc.s), tc.nocase); got != tc.want {
			t.Errorf("globMatch(%q, %q, nocase=%v) = %v, want %v", tc.pattern, tc.s, tc.nocase, got, tc.want)
		}
	}
}

// TestGlobReference keeps the reference used by the fuzz target honest.
func TestGlobReference(t *testing.T) {
	for _, tc := range globCases {
		if got := refGlob([]byte(tc.pattern), []byte(tc.s), tc.nocase); got != tc.want {
			t.Errorf("refGlob(%q, %q, nocase=%v) = %v, want %v", tc.pattern, tc.s, tc.nocase, got, tc.want)
		}
	}
	for _, tc := range globRedisEdgeCases {
		if got := refGlobRedis([]byte(tc.pattern), []byte(tc.s), tc.nocase); got != tc.want {
			t.Errorf("refGlobRedis(%q, %q, nocase=%v) = %v, want %v", tc.pattern, tc.s, tc.nocase, got, tc.want)
		}
	}
}

// globRedisEdgeCases are corners where stringmatchlen does something
// surprising. Checked with KEYS and CONFIG GET on redis-server 7.0.
var globRedisEdgeCases = []globCase{
	// stringmatchlen never matches a non-empty pattern against an empty
	// string: "**" does not match the key "" (KEYS and SCAN answer the
	// one-byte pattern "*" without calling it).
	{"**", "", false, false},
	{"a*", "", false, false},
	// Inside a class an escaped byte is compared case-sensitively even
	// when matching without case (CONFIG GET [\H]z finds nothing).
	{`[\H]z`, "hz", true, false},
	{`[\h]z`, "hz", true, true},
}

func TestGlobMatchRedisEdgeCases(t *testing.T) {
	for _, tc := range globRedisEdgeCases {
		if got := globMatch([]byte(tc.pattern), []byte(tc.s), tc.nocase); got != tc.want {
			t.Errorf("globMatch(%q, %q, nocase=%v) = %v, want %v (as Redis's stringmatchlen)", tc.pattern, tc.s, tc.nocase, got, tc.want)
		}
	}
}

// TestGlobMatchBoundedCost checks that patterns built to make a
// backtracking matcher explode are answered quickly.
func TestGlobMatchBoundedCost(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{strings.Repeat("a*", 30) + "b", strings.Repeat("a", 20000), false},
		{strings.Repeat("*a", 50) + "*", strings.Repeat("a", 20000), true},
		{strings.Repeat("*?", 100) + "x", strings.Repeat("y", 20000), false},
		{strings.Repeat("[a-z]*", 40) + "!", strings.Repeat("q", 20000), false},
	}
	for _, tc := range cases {
		start := time.Now()
		got := globMatch([]byte(tc.pattern), []byte(tc.s), false)
		if got != tc.want {
			t.Errorf("globMatch(%q…, %d bytes) = %v, want %v", tc.pattern[:20], len(tc.s), got, tc.want)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("globMatch(%q…, %d bytes) took %v; want it bounded by len(pattern)*len(s)", tc.pattern[:20], len(tc.s), d)
		}
	}
}

func FuzzGlobMatch(f *testing.F) {
	for _, tc := range globCases {
		f.Add([]byte(tc.pattern), []byte(tc.s), tc.nocase)
	}
	f.Add([]byte("*[a-f]?\\*x*"), []byte("qqbz*xyz"), false)
	f.Fuzz(func(t *testing.T, pattern, s []byte, nocase bool) {
		if len(pattern) > 200 || len(s) > 200 {
			return // the reference is quadratic in memory
		}
		got := globMatch(pattern, s, nocase)
		// The edge cases of globRedisEdgeCases are left to that test.
		if len(s) == 0 || (nocase && bytes.IndexByte(pattern, '\\') >= 0 && bytes.IndexByte(pattern, '[') >= 0) {
			return
		}
		if want := refGlob(pattern, s, nocase); got != want {
			t.Fatalf("globMatch(%q, %q, nocase=%v) = %v; the reference says %v", pattern, s, nocase, got, want)
		}
	})
}

// refGlobRedis is refGlob with stringmatchlen's two surprises: an empty
// string matches only the empty pattern, and escapes inside a class
// compare case-sensitively.
func refGlobRedis(pattern, s []byte, nocase bool) bool {
	if len(s) == 0 {
		return len(pattern) == 0
	}
	return (&globRef{p: pattern, s: s, nocase: nocase, escCase: true}).match()
}

// refGlob is a plain recursive glob matcher (memoised, so it stays
// polynomial), written from the rules rather than from an algorithm:
// '*' any run of bytes, '?' one byte, '[...]' a class with '^' negation,
// 'x-y' ranges (either order), '\' escapes, an unterminated class
// running to the end of the pattern, and '\' before nothing being itself.
func refGlob(pattern, s []byte, nocase bool) bool {
	return (&globRef{p: pattern, s: s, nocase: nocase}).match()
}

type globRef struct {
	p, s    []byte
	nocase  bool
	escCase bool // escapes inside classes ignore nocase
	memo    map[[2]int]bool
}

func (g *globRef) match() bool {
	g.memo = make(map[[2]int]bool)
	return g.at(0, 0)
}

func (g *globRef) at(pi, si int) bool {
	key := [2]int{pi, si}
	if v, ok := g.memo[key]; ok {
		return v
	}
	v := g.step(pi, si)
	g.memo[key] = v
	return v
}

func (g *globRef) step(pi, si int) bool {
	if pi == len(g.p) {
		return si == len(g.s)
	}
	if g.p[pi] == '*' {
		return g.at(pi+1, si) || (si < len(g.s) && g.at(pi, si+1))
	}
	if si == len(g.s) {
		return false
	}
	c := g.s[si]
	switch g.p[pi] {
	case '?':
		return g.at(pi+1, si+1)
	case '[':
		ok, next := g.class(pi+1, c)
		return ok && g.at(next, si+1)
	case '\\':
		if pi+1 < len(g.p) {
			pi++
		}
	}
	return g.same(g.p[pi], c) && g.at(pi+1, si+1)
}

// class matches c against the class whose body starts at i and returns
// the index after it.
func (g *globRef) class(i int, c byte) (bool, int) {
	negate := i < len(g.p) && g.p[i] == '^'
	if negate {
		i++
	}
	hit := false
	for i < len(g.p) {
		switch {
		case g.p[i] == '\\' && i+1 < len(g.p):
			if g.escCase {
				hit = hit || g.p[i+1] == c
			} else {
				hit = hit || g.same(g.p[i+1], c)
			}
			i += 2
		case g.p[i] == ']':
			return hit != negate, i + 1
		case i+2 < len(g.p) && g.p[i+1] == '-':
			lo, hi, cc := g.p[i], g.p[i+2], c
			if lo > hi {
				lo, hi = hi, lo
			}
			if g.nocase { // after the swap, as Redis does
				lo, hi, cc = refLower(lo), refLower(hi), refLower(cc)
			}
			hit = hit || (lo <= cc && cc <= hi)
			i += 3
		default:
			hit = hit || g.same(g.p[i], c)
			i++
		}
	}
	return hit != negate, i
}

func (g *globRef) same(a, b byte) bool {
	if g.nocase {
		return refLower(a) == refLower(b)
	}
	return a == b
}

func refLower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c | 0x20
	}
	return c
}

// TestGlobMatchStarLimit: Redis's matcher gives up on a pattern once it
// has to look past its 1000th run of stars (a guard against abusive
// patterns), so such a pattern matches nothing, as KEYS shows on
// redis-server 7.0. A last run of stars, which needs no look past it,
// still matches.
func TestGlobMatchStarLimit(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		n       int // the subject is n 'a's
		want    bool
	}{
		{strings.Repeat("*?", 1000), 1000, true},
		{strings.Repeat("*?", 1001), 1001, false},
		{strings.Repeat("*a", 1000) + "*", 1000, true},
		{strings.Repeat("*a", 1001) + "*", 1001, false},
		{strings.Repeat("*?", 50000), 50000, false}, // Redis's own regression case
	} {
		if got := globMatch([]byte(tc.pattern), bytes.Repeat([]byte("a"), tc.n), false); got != tc.want {
			t.Errorf("globMatch(%q…(%d bytes), %d a's) = %v, want %v", tc.pattern[:8], len(tc.pattern), tc.n, got, tc.want)
		}
	}
}
