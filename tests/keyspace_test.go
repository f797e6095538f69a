package tests

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Helpers shared by the keyspace, string, connection, server, multi,
// limits, redis-cli and diff tests. They carry a "bb" prefix so they do
// not collide with other files of the package.

// bbStep is one command of a table-driven script and the reply it must
// get, written the way Reply.String renders it.
type bbStep struct {
	cmd  string // words split on spaces; "double quotes" group words, "" is an empty argument
	want string
}

// Reply renderings for the tables.
const (
	bbOK        = `+"OK"`
	bbNilBulk   = `$nil`
	bbWrongType = `-"WRONGTYPE Operation against a key holding the wrong kind of value"`
	bbSyntax    = `-"ERR syntax error"`
	bbNotInt    = `-"ERR value is not an integer or out of range"`
)

func bbErr(msg string) string  { return "-" + strconv.Quote(msg) }
func bbBulk(s string) string   { return "$" + strconv.Quote(s) }
func bbStatus(s string) string { return "+" + strconv.Quote(s) }
func bbInt(n int64) string     { return ":" + strconv.FormatInt(n, 10) }
func bbArity(name string) string {
	return bbErr("ERR wrong number of arguments for '" + name + "' command")
}

// bbSplit splits a table command into arguments.
func bbSplit(line string) []string {
	var out []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '"':
			quoted = !quoted
			inWord = true
		case ch == ' ' && !quoted:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// bbMatch compares a rendered reply with a table's want. A want of
// ":~N" accepts an integer in [N-2000, N]: a PTTL read a moment after it
// was set.
func bbMatch(got, want string) bool {
	if n, ok := strings.CutPrefix(want, ":~"); ok {
		w, err1 := strconv.ParseInt(n, 10, 64)
		g, err2 := strconv.ParseInt(strings.TrimPrefix(got, ":"), 10, 64)
		return err1 == nil && err2 == nil && strings.HasPrefix(got, ":") && g <= w && g >= w-2000
	}
	return got == want
}

// bbRun runs a script on rc and reports every reply that differs.
func bbRun(t testing.TB, rc *RawConn, steps []bbStep) {
	t.Helper()
	for _, st := range steps {
		got := rc.Do(bbSplit(st.cmd)...).String()
		if !bbMatch(got, st.want) {
			t.Errorf("%s\n   got: %s\n  want: %s", st.cmd, got, st.want)
		}
	}
}

// bbWaitFor polls cond until it holds, failing the test after timeout.
func bbWaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond) // poll interval, not synchronisation
	}
}

// bbInfoText returns INFO's text (verbatim prefix stripped).
func bbInfoText(t testing.TB, rc *RawConn, sections ...string) string {
	t.Helper()
	r := rc.Do(append([]string{"INFO"}, sections...)...)
	if r.Type != '$' && r.Type != '=' {
		t.Fatalf("INFO %v = %s", sections, r)
	}
	return strings.TrimPrefix(r.Str, "txt:")
}

// bbInfo parses INFO into field → value.
func bbInfo(t testing.TB, rc *RawConn, sections ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(bbInfoText(t, rc, sections...), "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			m[k] = v
		}
	}
	return m
}

// bbInfoInt reads one integer INFO field.
func bbInfoInt(t testing.TB, rc *RawConn, section, field string) int64 {
	t.Helper()
	v, ok := bbInfo(t, rc, section)[field]
	if !ok {
		t.Fatalf("INFO %s has no field %s", section, field)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("INFO %s: %s=%q is not an integer", section, field, v)
	}
	return n
}

// bbStrings returns an array reply's bulk strings, sorted.
func bbStrings(t testing.TB, r Reply) []string {
	t.Helper()
	if r.Type != '*' && r.Type != '~' {
		t.Fatalf("want an array, got %s", r)
	}
	out := make([]string, 0, len(r.Elems))
	for _, e := range r.Elems {
		out = append(out, e.Str)
	}
	sort.Strings(out)
	return out
}

// bbClientID returns rc's CLIENT ID.
func bbClientID(t testing.TB, rc *RawConn) int64 {
	t.Helper()
	r := rc.Do("CLIENT", "ID")
	if r.Type != ':' {
		t.Fatalf("CLIENT ID = %s", r)
	}
	return r.Int
}

// bbServerMs returns the server's clock in ms (TIME).
func bbServerMs(t testing.TB, rc *RawConn) int64 {
	t.Helper()
	r := rc.Do("TIME")
	if len(r.Elems) != 2 {
		t.Fatalf("TIME = %s", r)
	}
	sec, err1 := strconv.ParseInt(r.Elems[0].Str, 10, 64)
	usec, err2 := strconv.ParseInt(r.Elems[1].Str, 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("TIME = %s", r)
	}
	return sec*1000 + usec/1000
}

func TestKeysDelExistsTouchType(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"MSET a 1 b 2 c 3", bbOK},
		{"RPUSH l x y", ":2"},
		{"EXISTS a", ":1"},
		{"EXISTS a a a nokey", ":3"},
		{"EXISTS nokey", ":0"},
		{"TOUCH a l nokey", ":2"},
		{"TYPE a", bbStatus("string")},
		{"TYPE l", bbStatus("list")},
		{"TYPE nokey", bbStatus("none")},
		{"DEL a nokey a", ":1"},
		{"DEL a", ":0"},
		{"UNLINK b c nokey", ":2"},
		{"UNLINK l", ":1"},
		{"EXISTS a b c l", ":0"},
		{"DBSIZE", ":0"},
		{"DEL", bbArity("del")},
		{"UNLINK", bbArity("unlink")},
		{"EXISTS", bbArity("exists")},
		{"TOUCH", bbArity("touch")},
		{"TYPE", bbArity("type")},
		{"TYPE a b", bbArity("type")},
	})
}

func TestKeysGlobPatterns(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	keys := []string{"hello", "hallo", "hbllo", "hxllo", "hllo", "heeello", "a*b", "a?b", "axb", "[x]", "x", `a\b`, "Hello"}
	for _, k := range keys {
		if r := rc.Do("SET", k, "v"); r.String() != bbOK {
			t.Fatalf("SET %q = %s", k, r)
		}
	}
	all := slices.Clone(keys)
	sort.Strings(all)
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"*", all},
		{"h?llo", []string{"hallo", "hbllo", "hello", "hxllo"}},
		{"h*llo", []string{"hallo", "hbllo", "heeello", "hello", "hllo", "hxllo"}},
		{"h[ae]llo", []string{"hallo", "hello"}},
		{"h[^e]llo", []string{"hallo", "hbllo", "hxllo"}},
		{"h[a-b]llo", []string{"hallo", "hbllo"}},
		{"h[b-a]llo", []string{"hallo", "hbllo"}}, // reversed range
		{"a*b", []string{"a*b", "a?b", `a\b`, "axb"}},
		{`a\*b`, []string{"a*b"}},
		{`a\?b`, []string{"a?b"}},
		{`a\\b`, []string{`a\b`}},
		{`\[x\]`, []string{"[x]"}},
		{"[H]*", []string{"Hello"}},
		{"?", []string{"x"}},
		{"nomatch*", []string{}},
		{"HELLO", []string{}}, // case-sensitive
	} {
		got := bbStrings(t, rc.Do("KEYS", tc.pattern))
		if !slices.Equal(got, tc.want) {
			t.Errorf("KEYS %q = %q, want %q", tc.pattern, got, tc.want)
		}
		// SCAN MATCH uses the same matcher.
		var scanned []string
		cursor := "0"
		for {
			r := rc.Do("SCAN", cursor, "MATCH", tc.pattern, "COUNT", "3")
			if len(r.Elems) != 2 {
				t.Fatalf("SCAN = %s", r)
			}
			for _, e := range r.Elems[1].Elems {
				scanned = append(scanned, e.Str)
			}
			cursor = r.Elems[0].Str
			if cursor == "0" {
				break
			}
		}
		sort.Strings(scanned)
		scanned = slices.Compact(scanned)
		if !slices.Equal(scanned, tc.want) {
			t.Errorf("SCAN MATCH %q = %q, want %q", tc.pattern, scanned, tc.want)
		}
	}
}

// bbScanAll runs a whole SCAN with extra options and returns every key
// returned (duplicates kept) and the number of calls.
func bbScanAll(t testing.TB, rc *RawConn, opts ...string) ([]string, int) {
	t.Helper()
	var out []string
	cursor, calls := "0", 0
	for {
		r := rc.Do(append([]string{"SCAN", cursor}, opts...)...)
		calls++
		if r.Type != '*' || len(r.Elems) != 2 || r.Elems[0].Type != '$' || r.Elems[1].Type != '*' {
			t.Fatalf("SCAN %s %v = %s", cursor, opts, r)
		}
		for _, e := range r.Elems[1].Elems {
			out = append(out, e.Str)
		}
		cursor = r.Elems[0].Str
		if cursor == "0" {
			return out, calls
		}
		if calls > 100000 {
			t.Fatalf("SCAN never returned cursor 0")
		}
	}
}

func TestKeysScan(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	for i := range 100 {
		rc.Send(Encode("SET", fmt.Sprintf("str:%03d", i), "v"))
	}
	for i := range 30 {
		rc.Send(Encode("RPUSH", fmt.Sprintf("list:%02d", i), "x"))
	}
	for range 130 {
		if r := rc.Read(); r.Type == '-' {
			t.Fatalf("setup: %s", r)
		}
	}

	all, calls := bbScanAll(t, rc)
	if got := len(slices.Compact(slices.Sorted(slices.Values(all)))); got != 130 {
		t.Errorf("SCAN returned %d distinct keys, want 130", got)
	}
	if calls < 2 {
		t.Errorf("SCAN with the default COUNT 10 over 130 keys took %d call(s), want several pages", calls)
	}

	one, calls := bbScanAll(t, rc, "COUNT", "1000")
	if calls != 1 || len(one) != 130 {
		t.Errorf("SCAN COUNT 1000 = %d keys in %d calls, want 130 in 1", len(one), calls)
	}

	strs, _ := bbScanAll(t, rc, "TYPE", "string", "COUNT", "7")
	lists, _ := bbScanAll(t, rc, "type", "LIST")
	if n := len(slices.Compact(slices.Sorted(slices.Values(strs)))); n != 100 {
		t.Errorf("SCAN TYPE string: %d keys, want 100", n)
	}
	for _, k := range strs {
		if !strings.HasPrefix(k, "str:") {
			t.Errorf("SCAN TYPE string returned %q", k)
		}
	}
	if n := len(slices.Compact(slices.Sorted(slices.Values(lists)))); n != 30 {
		t.Errorf("SCAN TYPE list: %d keys, want 30", n)
	}
	matched, _ := bbScanAll(t, rc, "MATCH", "list:1*", "TYPE", "list", "COUNT", "5")
	if got := slices.Compact(slices.Sorted(slices.Values(matched))); len(got) != 10 {
		t.Errorf("SCAN MATCH list:1* TYPE list = %q, want list:10..list:19", got)
	}
	none, _ := bbScanAll(t, rc, "MATCH", "list:*", "TYPE", "string")
	if len(none) != 0 {
		t.Errorf("SCAN MATCH list:* TYPE string = %q, want nothing", none)
	}

	bbRun(t, rc, []bbStep{
		{"SCAN", bbArity("scan")},
		{"SCAN abc", bbErr("ERR invalid cursor")},
		{"SCAN -1", bbErr("ERR invalid cursor")},
		{"SCAN 1.5", bbErr("ERR invalid cursor")},
		{"SCAN 18446744073709551616", bbErr("ERR invalid cursor")},
		{"SCAN 0 COUNT 0", bbSyntax},
		{"SCAN 0 COUNT -1", bbSyntax},
		{"SCAN 0 COUNT abc", bbNotInt},
		{"SCAN 0 MATCH", bbSyntax},
		{"SCAN 0 COUNT", bbSyntax},
		{"SCAN 0 FOO bar", bbSyntax},
	})
	// The last cursor of a walk is exactly "0", also with an empty page.
	if r := rc.Do("SCAN", "18446744073709551615", "COUNT", "100"); len(r.Elems) != 2 || r.Elems[0].Str != "0" {
		t.Errorf("SCAN from the largest cursor = %s, want cursor 0", r)
	}
}

// TestKeysScanUnknownType: Redis 8 refuses a TYPE it does not know
// ("ERR unknown type name 'foo'") instead of returning nothing.
func TestKeysScanUnknownType(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"SET a 1", bbOK},
		{"SCAN 0 TYPE foo", bbErr("ERR unknown type name 'foo'")},
		{"SCAN 0 TYPE hash", `*2[$"0" *0[]]`}, // a type Redis has: filters, no error
	})
}

// TestKeysScanGuarantee is SCAN's promise as a property: with keys added
// and deleted while a long scan runs, every key present for the whole
// scan is returned at least once, and the scan ends with cursor "0".
func TestKeysScanGuarantee(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	writer := s.Raw(t)
	const stable = 1500
	for i := range stable {
		rc.Send(Encode("SET", fmt.Sprintf("s:%d", i), "v"))
	}
	for range stable {
		if r := rc.Read(); r.String() != bbOK {
			t.Fatalf("setup: %s", r)
		}
	}
	seen := map[string]int{}
	cursor, calls, nextVolatile, oldestVolatile := "0", 0, 0, 0
	for {
		// Between pages, another client adds 20 keys and deletes 10 of
		// the keys it added earlier, so the table keeps changing shape.
		var batch strings.Builder
		for range 20 {
			batch.WriteString(Encode("SET", fmt.Sprintf("v:%d", nextVolatile), "v"))
			nextVolatile++
		}
		n := 20
		if nextVolatile-oldestVolatile > 40 {
			for range 10 {
				batch.WriteString(Encode("DEL", fmt.Sprintf("v:%d", oldestVolatile)))
				oldestVolatile++
			}
			n += 10
		}
		writer.Send(batch.String())
		for range n {
			if r := writer.Read(); r.Type == '-' {
				t.Fatalf("writer: %s", r)
			}
		}

		r := rc.Do("SCAN", cursor, "COUNT", "25")
		calls++
		if len(r.Elems) != 2 {
			t.Fatalf("SCAN = %s", r)
		}
		for _, e := range r.Elems[1].Elems {
			if !strings.HasPrefix(e.Str, "s:") && !strings.HasPrefix(e.Str, "v:") {
				t.Fatalf("SCAN returned a key nobody wrote: %q", e.Str)
			}
			seen[e.Str]++
		}
		cursor = r.Elems[0].Str
		if cursor == "0" {
			break
		}
		if calls > 5000 {
			t.Fatalf("SCAN did not finish after %d calls", calls)
		}
	}
	missing := 0
	for i := range stable {
		if seen[fmt.Sprintf("s:%d", i)] == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d keys present for the whole scan were never returned (%d calls)", missing, stable, calls)
	}
	if calls < stable/25 {
		t.Errorf("SCAN COUNT 25 over %d keys took only %d calls", stable, calls)
	}
}

func TestKeysRandomKey(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"RANDOMKEY", bbNilBulk},
		{"SET only v", bbOK},
		{"RANDOMKEY", bbBulk("only")},
		{"RANDOMKEY x", bbArity("randomkey")},
	})
}

func TestKeysRandomKeyResp3(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	if r := rc.Do("HELLO", "3"); r.Type != '%' {
		t.Fatalf("HELLO 3 = %s", r)
	}
	bbRun(t, rc, []bbStep{
		{"RANDOMKEY", "_"},
		{"MSET a 1 b 2 c 3", bbOK},
	})
	got := map[string]bool{}
	for range 200 {
		r := rc.Do("RANDOMKEY")
		got[r.Str] = true
	}
	for k := range got {
		if k != "a" && k != "b" && k != "c" {
			t.Errorf("RANDOMKEY returned %q", k)
		}
	}
	if len(got) < 2 {
		t.Errorf("200 RANDOMKEY calls over 3 keys returned only %v", got)
	}
}

func TestKeysRename(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"RENAME nokey x", bbErr("ERR no such key")},
		{"RENAMENX nokey x", bbErr("ERR no such key")},
		{"SET a 1 EX 1000", bbOK},
		{"RENAME a b", bbOK},
		{"EXISTS a", ":0"},
		{"GET b", bbBulk("1")},
		{"TTL b", ":1000"},
		{"SET c 2", bbOK},
		{"RENAME b c", bbOK}, // overwrites, and c takes b's TTL
		{"GET c", bbBulk("1")},
		{"TTL c", ":1000"},
		{"SET d 3 EX 500", bbOK},
		{"SET e 4", bbOK},
		{"RENAME e d", bbOK}, // d's old TTL does not survive
		{"TTL d", ":-1"},
		{"RENAMENX d c", ":0"},
		{"GET c", bbBulk("1")},
		{"RENAMENX d f", ":1"},
		{"GET f", bbBulk("4")},
		{"RENAME f f", bbOK},
		{"RENAMENX f f", ":0"},
		{"GET f", bbBulk("4")},
		{"RPUSH l a b", ":2"},
		{"RENAME l l2", bbOK},
		{"LRANGE l2 0 -1", `*2[$"a" $"b"]`},
		{"RENAME a", bbArity("rename")},
		{"RENAMENX a", bbArity("renamenx")},
	})
}

func TestKeysCopy(t *testing.T) {
	s := StartServer(t, "--databases", "4")
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"COPY nokey x", ":0"},
		{"SET a hello EX 1000", bbOK},
		{"COPY a a", bbErr("ERR source and destination objects are the same")},
		{"COPY a a DB 0", bbErr("ERR source and destination objects are the same")},
		{"COPY a b", ":1"},
		{"GET b", bbBulk("hello")},
		{"TTL b", ":1000"},
		{"SET c other", bbOK},
		{"COPY a c", ":0"},
		{"GET c", bbBulk("other")},
		{"COPY a c REPLACE", ":1"},
		{"GET c", bbBulk("hello")},
		{"COPY a a DB 1", ":1"},
		{"COPY a x DB 4", bbErr("ERR DB index is out of range")},
		{"COPY a x DB -1", bbErr("ERR DB index is out of range")},
		{"COPY a x DB abc", bbNotInt},
		{"COPY a x DB", bbSyntax},
		{"COPY a x FOO", bbSyntax},
		{"COPY a", bbArity("copy")},
		{"RPUSH l 1 2 3", ":3"},
		{"COPY l l2", ":1"},
		{"RPUSH l2 4", ":4"}, // the copy is independent of its source
		{"LLEN l", ":3"},
		{"COPY l a REPLACE", ":1"},
		{"TYPE a", bbStatus("list")},
		{"TTL a", ":-1"}, // REPLACE takes the source's (absent) TTL
		{"SELECT 1", bbOK},
		{"GET a", bbBulk("hello")},
		{"TTL a", ":1000"},
		{"COPY a a DB 0", ":0"}, // exists there (now a list) and no REPLACE
	})
}

func TestKeysExpireFamily(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"EXPIRE nokey 100", ":0"},
		{"PEXPIRE nokey 100", ":0"},
		{"TTL nokey", ":-2"},
		{"PTTL nokey", ":-2"},
		{"EXPIRETIME nokey", ":-2"},
		{"PEXPIRETIME nokey", ":-2"},
		{"PERSIST nokey", ":0"},
		{"SET k v", bbOK},
		{"TTL k", ":-1"},
		{"PTTL k", ":-1"},
		{"EXPIRETIME k", ":-1"},
		{"PEXPIRETIME k", ":-1"},
		{"PERSIST k", ":0"},

		// NX / XX / GT / LT: a key without TTL counts as an infinite TTL.
		{"EXPIRE k 100 XX", ":0"},
		{"EXPIRE k 100 GT", ":0"},
		{"EXPIRE k 100 LT", ":1"},
		{"TTL k", ":100"},
		{"EXPIRE k 200 NX", ":0"},
		{"EXPIRE k 50 GT", ":0"},
		{"EXPIRE k 200 GT", ":1"},
		{"TTL k", ":200"},
		{"EXPIRE k 300 LT", ":0"},
		{"EXPIRE k 150 xx lt", ":1"},
		{"TTL k", ":150"},
		{"PERSIST k", ":1"},
		{"TTL k", ":-1"},
		{"EXPIRE k 100 NX", ":1"},
		{"PEXPIRE k 100000 XX", ":1"},
		{"PTTL k", ":~100000"},

		// Absolute forms and the *TIME readers.
		{"EXPIREAT k 32503680000", ":1"}, // year 3000
		{"EXPIRETIME k", ":32503680000"},
		{"PEXPIRETIME k", ":32503680000000"},
		{"PEXPIREAT k 32503680000123", ":1"},
		{"PEXPIRETIME k", ":32503680000123"},
		{"EXPIRETIME k", ":32503680000"},
		{"EXPIREAT k 32503680001 LT", ":0"},
		{"EXPIREAT k 32503680001 GT", ":1"},

		// Error texts.
		{"EXPIRE k 100 NX XX", bbErr("ERR NX and XX, GT or LT options at the same time are not compatible")},
		{"EXPIRE k 100 NX GT", bbErr("ERR NX and XX, GT or LT options at the same time are not compatible")},
		{"EXPIRE k 100 NX LT", bbErr("ERR NX and XX, GT or LT options at the same time are not compatible")},
		{"EXPIRE k 100 GT LT", bbErr("ERR GT and LT options at the same time are not compatible")},
		{"PEXPIRE k 100 lt gt", bbErr("ERR GT and LT options at the same time are not compatible")},
		{"EXPIRE k 100 FOO", bbErr("ERR Unsupported option FOO")},
		{"EXPIRE k abc", bbNotInt},
		{"EXPIRE k 1.5", bbNotInt},
		{"EXPIRE k", bbArity("expire")},
		{"PEXPIREAT k", bbArity("pexpireat")},
		{"TTL", bbArity("ttl")},
		{"PERSIST", bbArity("persist")},
		{"EXPIRE k 9999999999999999", bbErr("ERR invalid expire time in 'expire' command")},
		{"EXPIRE k -9999999999999999", bbErr("ERR invalid expire time in 'expire' command")},
		{"EXPIREAT k 9223372036854775807", bbErr("ERR invalid expire time in 'expireat' command")},
		{"PEXPIRE k 9223372036854775807", bbErr("ERR invalid expire time in 'pexpire' command")},
		{"EXISTS k", ":1"},

		// A time in the past deletes the key at once.
		{"EXPIRE k -1", ":1"},
		{"EXISTS k", ":0"},
		{"SET k v", bbOK},
		{"EXPIRE k 0", ":1"},
		{"EXISTS k", ":0"},
		{"SET k v", bbOK},
		{"EXPIREAT k 1", ":1"},
		{"EXISTS k", ":0"},
		{"SET k v", bbOK},
		{"PEXPIREAT k 1000", ":1"},
		{"GET k", bbNilBulk},
		{"SET k v", bbOK},
		{"PEXPIRE k -5", ":1"},
		{"TTL k", ":-2"},
		{"SET k v EX 100", bbOK},
		{"EXPIRE k -1 XX", ":1"}, // condition met: deleted
		{"EXISTS k", ":0"},
		{"SET k v", bbOK},
		{"EXPIRE k -1 XX", ":0"}, // condition not met: kept
		{"EXISTS k", ":1"},
		{"DBSIZE", ":1"},
	})
}

func TestKeysLazyExpiry(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	// One transaction runs at one instant, so the key is surely there.
	bbRun(t, rc, []bbStep{
		{"MULTI", bbOK},
		{"SET k v PX 50", `+"QUEUED"`},
		{"GET k", `+"QUEUED"`},
		{"PTTL k", `+"QUEUED"`},
		{"EXEC", `*3[+"OK" $"v" :50]`},
	})
	bbWaitFor(t, 5*time.Second, "GET of a PX 50 key to return nil", func() bool {
		return rc.Do("GET", "k").Null
	})
	bbRun(t, rc, []bbStep{
		{"EXISTS k", ":0"},
		{"TTL k", ":-2"},
		{"SET k2 v PX 30", bbOK},
	})
	bbWaitFor(t, 5*time.Second, "EXISTS of an expired key to be 0", func() bool {
		return rc.Do("EXISTS", "k2").Int == 0
	})
	bbRun(t, rc, []bbStep{
		{"GET k2", bbNilBulk},
		{"KEYS *", "*0[]"},
	})
}

func TestKeysActiveExpiry(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	// One transaction: the counts are taken before anything can expire.
	var batch strings.Builder
	batch.WriteString(Encode("MULTI"))
	for i := range 200 {
		batch.WriteString(Encode("SET", fmt.Sprintf("t:%d", i), "v", "PX", "100"))
	}
	batch.WriteString(Encode("SET", "keep", "v") + Encode("DBSIZE") + Encode("INFO", "keyspace") + Encode("EXEC"))
	rc.Send(batch.String())
	for range 204 { // +OK and 203 QUEUED
		if r := rc.Read(); r.Type == '-' {
			t.Fatalf("setup: %s", r)
		}
	}
	ex := rc.Read()
	if len(ex.Elems) != 203 {
		t.Fatalf("EXEC = %.200s", ex)
	}
	if n := ex.Elems[201]; n.Int != 201 {
		t.Errorf("DBSIZE = %s, want 201", n)
	}
	if ks := ex.Elems[202].Str; !strings.Contains(ks, "db0:keys=201,expires=200,") {
		t.Errorf("INFO keyspace = %q, want db0:keys=201,expires=200,...", ks)
	}
	// Nobody reads the keys: only the active expire cycle can drop them.
	bbWaitFor(t, 10*time.Second, "DBSIZE to drop to 1 by active expiry", func() bool {
		return rc.Do("DBSIZE").Int == 1
	})
	info := bbInfo(t, rc, "keyspace")
	if !strings.HasPrefix(info["db0"], "keys=1,expires=0,") {
		t.Errorf("INFO keyspace db0 = %q after expiry, want keys=1,expires=0,...", info["db0"])
	}
	if n := bbInfoInt(t, rc, "stats", "expired_keys"); n != 200 {
		t.Errorf("expired_keys = %d, want 200", n)
	}
	// And with nothing left the db0 line goes away entirely.
	bbRun(t, rc, []bbStep{{"PEXPIRE keep 20", ":1"}})
	bbWaitFor(t, 10*time.Second, "INFO keyspace to list no database", func() bool {
		_, ok := bbInfo(t, rc, "keyspace")["db0"]
		return !ok
	})
}

func TestKeysObject(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	big := strings.Repeat("x", 100)
	var push []string
	for range 200 {
		push = append(push, big)
	}
	if r := rc.Do(append([]string{"RPUSH", "biglist"}, push...)...); r.Int != 200 {
		t.Fatalf("RPUSH = %s", r)
	}
	bbRun(t, rc, []bbStep{
		{"SET int 12345", bbOK},
		{"SET neg -9223372036854775808", bbOK},
		{"SET lead 012", bbOK},
		{"SET huge 99999999999999999999", bbOK},
		{"SET short hello", bbOK},
		{"SET s44 " + strings.Repeat("a", 44), bbOK},
		{"SET s45 " + strings.Repeat("a", 45), bbOK},
		{"SET app hello", bbOK},
		{"APPEND app x", ":6"},
		{"RPUSH small a b c", ":3"},
		{"OBJECT ENCODING int", bbBulk("int")},
		{"OBJECT ENCODING neg", bbBulk("int")},
		{"OBJECT ENCODING lead", bbBulk("embstr")},
		{"OBJECT ENCODING huge", bbBulk("embstr")},
		{"OBJECT ENCODING short", bbBulk("embstr")},
		{"OBJECT ENCODING s44", bbBulk("embstr")},
		{"OBJECT ENCODING s45", bbBulk("raw")},
		{"OBJECT ENCODING app", bbBulk("raw")},
		{"SET rawint 1", bbOK},
		{"APPEND rawint 2", ":2"},
		{"OBJECT ENCODING rawint", bbBulk("raw")},
		{"INCR rawint", ":13"}, // a new value: an int again, as in Redis
		{"OBJECT ENCODING rawint", bbBulk("int")},
		{"APPEND rawint 4", ":3"},
		{"INCRBYFLOAT rawint 0.5", bbBulk("134.5")},
		{"OBJECT ENCODING rawint", bbBulk("embstr")},
		{"APPEND newint 12", ":2"}, // a new key: encoded as SET would
		{"OBJECT ENCODING newint", bbBulk("int")},
		{"OBJECT ENCODING small", bbBulk("listpack")},
		{"OBJECT ENCODING biglist", bbBulk("quicklist")},
		{"INCR int", ":12346"},
		{"OBJECT ENCODING int", bbBulk("int")},
		{"SETRANGE int 0 9", ":5"},
		{"OBJECT ENCODING int", bbBulk("raw")},
		{"object encoding nokey", bbNilBulk},
		{"OBJECT IDLETIME short", ":0"},
		{"OBJECT IDLETIME nokey", bbNilBulk},
		{"OBJECT REFCOUNT short", ":1"},
		{"OBJECT REFCOUNT nokey", bbNilBulk},
		{"OBJECT FREQ short", bbErr("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")},
		{"OBJECT FREQ nokey", bbNilBulk},
		{"OBJECT", bbArity("object")},
		{"OBJECT ENCODING", bbArity("object|encoding")},
		{"OBJECT ENCODING a b", bbArity("object|encoding")},
		{"OBJECT FOO k", bbErr("ERR unknown subcommand 'FOO'. Try OBJECT HELP.")},
	})
	help := rc.Do("OBJECT", "HELP")
	if help.Type != '*' || len(help.Elems) < 4 || !strings.HasPrefix(help.Elems[0].Str, "OBJECT <subcommand>") {
		t.Fatalf("OBJECT HELP = %s", help)
	}
	text := help.String()
	for _, sub := range []string{"ENCODING", "FREQ", "IDLETIME", "REFCOUNT", "HELP"} {
		if !strings.Contains(text, `+"`+sub) {
			t.Errorf("OBJECT HELP does not describe %s: %s", sub, text)
		}
	}
}

// TestKeysObjectIdletime checks that reads reset OBJECT IDLETIME, that
// CLIENT NO-TOUCH reads do not, and that TOUCH always does (Redis 7.2+:
// "TOUCH ... will touch the key even in no-touch mode").
func TestKeysObjectIdletime(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	notouch := s.Raw(t)
	bbRun(t, rc, []bbStep{{"MSET a 1 b 2 c 3 d 4", bbOK}})
	bbRun(t, notouch, []bbStep{{"CLIENT NO-TOUCH ON", bbOK}})
	bbWaitFor(t, 5*time.Second, "OBJECT IDLETIME to reach 1", func() bool {
		return rc.Do("OBJECT", "IDLETIME", "c").Int >= 1
	})
	// Asking about a key is not using it, as in Redis.
	for _, cmd := range [][]string{{"EXISTS", "d"}, {"TYPE", "d"}, {"TTL", "d"}, {"PTTL", "d"},
		{"EXPIRETIME", "d"}, {"PEXPIRETIME", "d"}, {"OBJECT", "ENCODING", "d"}} {
		rc.Do(cmd...)
		if r := rc.Do("OBJECT", "IDLETIME", "d"); r.Int < 1 {
			t.Errorf("OBJECT IDLETIME after %v = %s, want >= 1 (it does not touch)", cmd, r)
		}
	}
	bbRun(t, rc, []bbStep{
		{"GET a", bbBulk("1")},
		{"OBJECT IDLETIME a", ":0"},
	})
	bbRun(t, notouch, []bbStep{{"GET b", bbBulk("2")}})
	if r := rc.Do("OBJECT", "IDLETIME", "b"); r.Int < 1 {
		t.Errorf("OBJECT IDLETIME after a NO-TOUCH read = %s, want >= 1", r)
	}
	bbRun(t, notouch, []bbStep{{"TOUCH c", ":1"}})
	if r := rc.Do("OBJECT", "IDLETIME", "c"); r.Int != 0 {
		t.Errorf("OBJECT IDLETIME after TOUCH from a NO-TOUCH client = %s, want 0 (TOUCH always touches)", r)
	}
}

func TestKeysMemoryUsage(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	val := strings.Repeat("v", 1000)
	if r := rc.Do("SET", "k", val); r.String() != bbOK {
		t.Fatal(r)
	}
	r := rc.Do("MEMORY", "USAGE", "k")
	if r.Type != ':' || r.Int < 1000 || r.Int > 1400 {
		t.Errorf("MEMORY USAGE of a 1000-byte string = %s, want about 1000", r)
	}
	small := rc.Do("MEMORY", "USAGE", "k", "SAMPLES", "0")
	if small.Type != ':' || small.Int != r.Int {
		t.Errorf("MEMORY USAGE k SAMPLES 0 = %s, want %s", small, r)
	}
	bbRun(t, rc, []bbStep{
		{"RPUSH l a b c", ":3"},
		{"MEMORY USAGE nokey", bbNilBulk},
		{"MEMORY USAGE k SAMPLES", bbSyntax},
		{"MEMORY USAGE k SAMPLES x", bbNotInt},
		{"MEMORY USAGE k FOO 1", bbSyntax},
		{"MEMORY USAGE", bbArity("memory|usage")},
		{"MEMORY NOPE", bbErr("ERR unknown subcommand 'NOPE'. Try MEMORY HELP.")},
	})
	if r := rc.Do("MEMORY", "USAGE", "l"); r.Type != ':' || r.Int <= 0 {
		t.Errorf("MEMORY USAGE of a list = %s", r)
	}
}

func TestKeysDatabases(t *testing.T) {
	s := StartServer(t, "--databases", "4")
	rc := s.Raw(t)
	other := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"SELECT 4", bbErr("ERR DB index is out of range")},
		{"SELECT -1", bbErr("ERR DB index is out of range")},
		{"SELECT x", bbNotInt},
		{"SELECT", bbArity("select")},
		{"MSET a 1 b 2", bbOK},
		{"SELECT 1", bbOK},
		{"DBSIZE", ":0"},
		{"GET a", bbNilBulk},
		{"SET a one", bbOK},
		{"SELECT 3", bbOK},
		{"MSET x 1 y 2 z 3", bbOK},
		{"DBSIZE", ":3"},
		{"SELECT 0", bbOK},
		{"DBSIZE", ":2"},
		{"GET a", bbBulk("1")},
		{"SELECT 1", bbOK},
		{"GET a", bbBulk("one")},
		{"FLUSHDB", bbOK},
		{"DBSIZE", ":0"},
		{"SELECT 0", bbOK},
		{"DBSIZE", ":2"},
		{"FLUSHDB FOO", bbSyntax},
		{"FLUSHDB SYNC", bbOK},
		{"DBSIZE", ":0"},
		{"SELECT 3", bbOK},
		{"DBSIZE", ":3"},
		{"DBSIZE x", bbArity("dbsize")},
	})
	// Another client sees each database on its own.
	bbRun(t, other, []bbStep{
		{"DBSIZE", ":0"},
		{"SELECT 3", bbOK},
		{"DBSIZE", ":3"},
		{"SET w 4", bbOK},
	})
	info := bbInfo(t, rc, "keyspace")
	if !strings.HasPrefix(info["db3"], "keys=4,expires=0,") || info["db0"] != "" {
		t.Errorf("INFO keyspace = %v, want only db3 with keys=4", info)
	}
	bbRun(t, rc, []bbStep{
		{"SELECT 2", bbOK},
		{"SET q 1", bbOK},
		{"FLUSHALL ASYNC", bbOK},
		{"DBSIZE", ":0"},
		{"SELECT 3", bbOK},
		{"DBSIZE", ":0"},
		{"SET a 1", bbOK},
		{"FLUSHALL SYNC", bbOK},
		{"DBSIZE", ":0"},
		{"FLUSHALL", bbOK},
		{"FLUSHALL NOW", bbSyntax},
		{"FLUSHALL SYNC ASYNC", bbSyntax},
	})
	if info := bbInfo(t, rc, "keyspace"); len(info) != 0 {
		t.Errorf("INFO keyspace after FLUSHALL = %v, want empty", info)
	}
}

// MOVE takes a key and its TTL to another database, wakes a client
// blocked on it there, and is logged so a restart finds it moved.
func TestKeysMove(t *testing.T) {
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--databases", "4", "--save", "")
	rc, blocked := s.Raw(t), s.Raw(t)
	bbRun(t, blocked, []bbStep{{"SELECT 2", bbOK}})
	blocked.Send(Encode("BLPOP", "jobs", "0"))
	bbWaitFor(t, 5*time.Second, "BLPOP to block", func() bool {
		return bbInfoInt(t, rc, "clients", "blocked_clients") == 1
	})
	bbRun(t, rc, []bbStep{
		{"RPUSH jobs a b", ":2"},
		{"SET s v EX 1000", bbOK},
		{"MOVE jobs 2", ":1"},
		{"EXISTS jobs", ":0"},
		{"MOVE s 3", ":1"},
		{"MOVE s 3", ":0"}, // gone from here
	})
	if r := blocked.Read(); r.String() != `*2[$"jobs" $"a"]` {
		t.Fatalf("BLPOP jobs in database 2 after MOVE = %s, want jobs a", r)
	}
	bbRun(t, rc, []bbStep{
		{"SELECT 3", bbOK},
		{"GET s", bbBulk("v")},
		{"TTL s", ":1000"},
		{"SET clash here", bbOK},
		{"SELECT 0", bbOK},
		{"SET clash there", bbOK},
		{"MOVE clash 3", ":0"}, // the target holds it: both stay
		{"GET clash", bbBulk("there")},
	})
	s.Stop()
	rc = StartServerIn(t, dir, "--databases", "4", "--save", "").Raw(t)
	bbRun(t, rc, []bbStep{
		{"SELECT 2", bbOK},
		{"LRANGE jobs 0 -1", `*1[$"b"]`},
		{"SELECT 3", bbOK},
		{"GET s", bbBulk("v")},
		{"GET clash", bbBulk("here")},
		{"SELECT 0", bbOK},
		{"EXISTS jobs s", ":0"},
	})
}
