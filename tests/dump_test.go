package tests

import (
	encbin "encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// DUMP and RESTORE, black-box: round trips of every type through the
// real binary with go-redis, RESTORE's options and errors, a blocked
// BLPOP served by a RESTORE, RESTOREd keys surviving a restart through
// the AOF, and payloads crossing both ways with redis-server 7.0.

// dmCRC64 is Redis's CRC-64 (Jones polynomial, reflected), written out
// bit by bit here so the test checks the server's table-driven one.
func dmCRC64(p []byte) uint64 {
	var crc uint64
	for _, b := range p {
		crc ^= uint64(b)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0x95ac9329ac4bc9b5
			} else {
				crc >>= 1
			}
		}
	}
	return crc
}

// dmFooter gives a payload body the version and a right checksum.
func dmFooter(body string, version uint16) string {
	p := encbin.LittleEndian.AppendUint16([]byte(body), version)
	return string(encbin.LittleEndian.AppendUint64(p, dmCRC64(p)))
}

// dmSeed builds the dataset both directions move: strings in each string
// encoding, lists small, multi-node and with a value too large for a
// node, streams with deletions, groups, PELs and consumers (gpSeed's "s").
func dmSeed(t testing.TB, raw *RawConn) {
	t.Helper()
	big := []string{"RPUSH", "biglist"}
	for i := range 5000 {
		big = append(big, fmt.Sprintf("element-%05d", i))
	}
	cmds := [][]string{
		{"SET", "int", "12345"}, {"SET", "neg", "-70000"}, {"SET", "short", "hello"}, {"SET", "empty", ""},
		{"SET", "lzf", strings.Repeat("abcdefgh", 300)}, {"SET", "bin", "\x00\x01\xfe\xff\r\n"},
		{"SET", "ttl", "v", "PXAT", "4102444800000"},
		{"RPUSH", "small", "a", "b", "c", "1", "-2", "300000"}, big,
		{"RPUSH", "huge", "head", strings.Repeat("0123456789", 2000), "tail"},
		{"XADD", "plain", "1-1", "f", "v"}, {"XADD", "plain", "2-1", "f", "w", "g", "x"},
	}
	for _, c := range cmds {
		if r := raw.Do(c...); r.Type == '-' {
			t.Fatalf("%v: %s", c[:2], r)
		}
	}
	gpSeed(t, raw, false)
}

// dmState renders everything a key holds that both Redis 7.0 and
// redstream report the same way, times included (DUMP carries them):
// fields newer than 7.0 (active-time, nacked-count, the IDMP figures) are
// dropped, and XPENDING's idle times, which move with each clock, masked.
func dmState(t testing.TB, raw *RawConn, key string) string {
	t.Helper()
	var b strings.Builder
	add := func(args ...string) { b.WriteString(raw.Do(args...).String() + "\n") }
	typ := raw.Do("TYPE", key).Str
	b.WriteString(typ + "\n")
	add("PEXPIRETIME", key)
	switch typ {
	case "string":
		add("GET", key)
	case "list":
		add("LLEN", key)
		add("LRANGE", key, "0", "-1")
	case "stream":
		add("XRANGE", key, "-", "+")
		full := raw.Do("XINFO", "STREAM", key, "FULL")
		full = sdStrip(full)
		for i := 0; i+1 < len(full.Elems); i += 2 {
			if full.Elems[i].Str != "groups" {
				continue
			}
			for j, g := range full.Elems[i+1].Elems {
				g = gdFields(g, nil, map[string]bool{"nacked-count": true})
				for k := 0; k+1 < len(g.Elems); k += 2 {
					if g.Elems[k].Str == "consumers" {
						for m, c := range g.Elems[k+1].Elems {
							g.Elems[k+1].Elems[m] = gdFields(c, nil, map[string]bool{"active-time": true})
						}
					}
				}
				full.Elems[i+1].Elems[j] = g
			}
		}
		b.WriteString(full.String() + "\n")
		for _, g := range raw.Do("XINFO", "GROUPS", key).Elems {
			name := ""
			for k := 0; k+1 < len(g.Elems); k += 2 {
				if g.Elems[k].Str == "name" {
					name = g.Elems[k+1].Str
				}
			}
			add("XPENDING", key, name)
			ext := []string{"XPENDING", key, name, "-", "+", "1000"}
			b.WriteString(gdMask(ext, raw.Do(ext...)).String() + "\n")
		}
	case "none":
	default:
		t.Fatalf("key %q is a %s", key, typ)
	}
	return b.String()
}

// dmConsumerTimes lists each consumer of key's groups as "group consumer
// seen=T", with " active=T" where the server reports one.
func dmConsumerTimes(raw *RawConn, key string) []string {
	field := func(r Reply, name string) Reply {
		for i := 0; i+1 < len(r.Elems); i += 2 {
			if r.Elems[i].Str == name {
				return r.Elems[i+1]
			}
		}
		return Reply{}
	}
	var out []string
	if raw.Do("TYPE", key).Str != "stream" {
		return nil
	}
	for _, g := range field(raw.Do("XINFO", "STREAM", key, "FULL"), "groups").Elems {
		for _, c := range field(g, "consumers").Elems {
			line := fmt.Sprintf("%s %s seen=%d", field(g, "name").Str, field(c, "name").Str, field(c, "seen-time").Int)
			if a := field(c, "active-time"); a.Type == ':' {
				line += fmt.Sprint(" active=", a.Int)
			}
			out = append(out, line)
		}
	}
	return out
}

func dmKeys(t testing.TB, raw *RawConn) []string {
	t.Helper()
	var keys []string
	for _, k := range raw.Do("KEYS", "*").Elems {
		keys = append(keys, k.Str)
	}
	if len(keys) < 10 {
		t.Fatalf("only %d keys: %v", len(keys), keys)
	}
	return keys
}

// dmMove DUMPs every key of from and RESTOREs it into to (with its
// expiry as ABSTTL), then compares every key's state on both.
func dmMove(t *testing.T, from, to *RawConn, label string) {
	t.Helper()
	for _, k := range dmKeys(t, from) {
		p := from.Do("DUMP", k)
		if p.Type != '$' || p.Null {
			t.Fatalf("%s: DUMP %s = %s", label, k, p)
		}
		at := max(from.Do("PEXPIRETIME", k).Int, 0)
		if r := to.Do("RESTORE", k, strconv.FormatInt(at, 10), p.Str, "ABSTTL"); r.String() != `+"OK"` {
			t.Fatalf("%s: RESTORE %s = %s", label, k, r)
		}
		if got, want := dmState(t, to, k), dmState(t, from, k); got != want {
			t.Errorf("%s: %q differs after DUMP and RESTORE\n got: %s\nwant: %s", label, k, got, want)
		}
	}
}

// TestDumpDiffRedis moves the dataset from redis-server 7.0 to redstream
// and from redstream to redis-server 7.0 with DUMP and RESTORE, and
// compares each key on both sides. Redis's payloads re-encode to the same
// bytes (lists with a value too large for a node excepted: 7.0 packs
// those where 7.2 and later store plain nodes).
func TestDumpDiffRedis(t *testing.T) {
	t.Parallel()
	rd := StartRedis(t) // skips when redis-server is not installed
	s := StartServer(t)
	red, rs := rd.Raw(t), s.Raw(t)
	dmSeed(t, red)
	dmMove(t, red, rs, "redis 7.0 -> redstream")
	// Redis 7.0 keeps no active time: a consumer RESTOREd from its payload
	// has its seen time as active time, as in Redis 7.2 and later.
	consumers := 0
	for _, k := range dmKeys(t, red) {
		theirs, ours := dmConsumerTimes(red, k), dmConsumerTimes(rs, k)
		for i := range theirs {
			theirs[i] += fmt.Sprint(" active=", strings.Fields(theirs[i])[2][len("seen="):])
		}
		if fmt.Sprint(ours) != fmt.Sprint(theirs) {
			t.Errorf("%s: consumers after RESTORE %q, want %q", k, ours, theirs)
		}
		consumers += len(ours)
	}
	if consumers < 4 {
		t.Fatalf("only %d consumers compared", consumers)
	}
	for _, k := range dmKeys(t, red) {
		if k == "huge" {
			continue
		}
		if ours, theirs := rs.Do("DUMP", k), red.Do("DUMP", k); ours.Str != theirs.Str {
			t.Errorf("DUMP %s: redstream's payload (%d bytes) differs from redis's (%d bytes)", k, len(ours.Str), len(theirs.Str))
		}
	}

	rd2 := StartRedis(t)
	s2 := StartServer(t)
	red2, rs2 := rd2.Raw(t), s2.Raw(t)
	dmSeed(t, rs2)
	dmMove(t, rs2, red2, "redstream -> redis 7.0")
}

// TestDumpDiffRedisErrors sends the same RESTOREs to both servers:
// options, checks and their order, bad footers and bad values.
func TestDumpDiffRedisErrors(t *testing.T) {
	t.Parallel()
	_, _, p := bbStartPair(t)
	p.both(t, "SET k hello")
	good := p.rs.Do("DUMP", "k").Str
	if theirs := p.rd.Do("DUMP", "k").Str; good != theirs {
		t.Fatalf("DUMP of a short string: %q, redis %q", good, theirs)
	}
	flipped := []byte(good)
	flipped[2] ^= 0x20
	newer := dmFooter(good[:len(good)-10], 11) // Redis 7.0 refuses 11; we refuse 13, below
	cases := [][]string{
		{"DUMP", "nokey"}, {"DUMP"}, {"RESTORE", "n", "0"},
		{"RESTORE", "k", "0", good}, {"RESTORE", "k", "0", good, "FOO"}, {"RESTORE", "n", "x", good},
		{"RESTORE", "n", "-1", good}, {"RESTORE", "n", "0", good, "IDLETIME"}, {"RESTORE", "n", "0", good, "IDLETIME", "-1"},
		{"RESTORE", "n", "0", good, "IDLETIME", "x"}, {"RESTORE", "n", "0", good, "FREQ", "256"},
		{"RESTORE", "n", "0", good, "IDLETIME", "1", "FREQ", "1"}, {"RESTORE", "n", "0", good, "FREQ", "1", "IDLETIME", "1"},
		{"RESTORE", "n", "0", "short"}, {"RESTORE", "n", "0", ""}, {"RESTORE", "n", "0", string(flipped)},
		{"RESTORE", "n", "0", good[:len(good)-1]},
		{"RESTORE", "n", "0", dmFooter("\x12\x00", 10)},       // a list of no nodes
		{"RESTORE", "n", "0", dmFooter("\x00\x40\xffab", 10)}, // a string longer than the payload
		{"RESTORE", "n", "0", dmFooter("\x1e\x01x", 10)},      // no such type
		{"RESTORE", "n", "0", dmFooter("", 10)},
		{"RESTORE", "n", "0", dmFooter("\x00\x01x", 0)}, // version 0: old, so accepted
		{"GET", "n"},
		{"RESTORE", "k", "0", good, "REPLACE", "IDLETIME", "100"}, {"GET", "k"},
		{"RESTORE", "k", "1", good, "REPLACE", "ABSTTL"}, {"EXISTS", "k"},
		{"RESTORE", "k", "9223372036854775807", good}, {"EXISTS", "k"},
		{"RESTORE", "k", "0", good, "FREQ", "5", "ABSTTL"}, {"GET", "k"},
	}
	for _, c := range cases {
		got, want := p.rs.Do(c...), p.rd.Do(c...)
		if got.String() != want.String() {
			t.Errorf("%.60q\n  redstream: %s\n  redis:     %s", c, got, want)
		}
	}
	if r := p.rd.Do("RESTORE", "n2", "0", newer); r.String() != `-"ERR DUMP payload version or checksum are wrong"` {
		t.Errorf("redis 7.0 on a version 11 payload: %s", r)
	}
	if r := p.rs.Do("RESTORE", "n2", "0", newer); r.String() != `+"OK"` {
		t.Errorf("redstream on a version 11 payload: %s", r)
	}
	if r := p.rs.Do("RESTORE", "n3", "0", dmFooter(good[:len(good)-10], 13)); r.String() != `-"ERR DUMP payload version or checksum are wrong"` {
		t.Errorf("redstream on a version 13 payload: %s", r)
	}
}

// TestDumpRestore round-trips every type through DUMP and RESTORE with
// go-redis, with each option, and checks that refused payloads leave
// nothing behind.
func TestDumpRestore(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	c := s.Client(t)
	ctx := ctx(t)
	dmSeed(t, s.Raw(t))
	for _, k := range []string{"int", "short", "lzf", "empty", "small", "biglist", "huge", "plain", "s"} {
		p, err := c.Dump(ctx, k).Result()
		if err != nil {
			t.Fatalf("DUMP %s: %v", k, err)
		}
		if ver := encbin.LittleEndian.Uint16([]byte(p[len(p)-10:])); ver != 10 {
			t.Fatalf("DUMP %s: RDB version %d, want 10", k, ver)
		}
		if crc := encbin.LittleEndian.Uint64([]byte(p[len(p)-8:])); crc != dmCRC64([]byte(p[:len(p)-8])) {
			t.Fatalf("DUMP %s: wrong checksum", k)
		}
		if err := c.Restore(ctx, k+"-copy", 0, p).Err(); err != nil {
			t.Fatalf("RESTORE %s: %v", k, err)
		}
		raw := s.Raw(t)
		want := dmState(t, raw, k)
		if got := dmState(t, raw, k+"-copy"); got != want {
			t.Fatalf("%s-copy differs\n got: %s\nwant: %s", k, got, want)
		}
		if err := c.Restore(ctx, k+"-copy", 0, p).Err(); err == nil || err.Error() != "BUSYKEY Target key name already exists." {
			t.Fatalf("RESTORE onto an existing key: %v", err)
		}
		if err := c.RestoreReplace(ctx, k+"-copy", 0, p).Err(); err != nil {
			t.Fatalf("RESTORE REPLACE %s: %v", k, err)
		}
	}
	// XINFO STREAM FULL's active times come through too (the extension
	// after the value carries them).
	full := func(k string) string { return fmt.Sprint(c.Do(ctx, "XINFO", "STREAM", k, "FULL").Val()) }
	if got, want := full("s-copy"), full("s"); got != want {
		t.Fatalf("XINFO STREAM FULL differs\n got: %s\nwant: %s", got, want)
	}

	p := c.Dump(ctx, "short").Val()
	if err := c.Restore(ctx, "t", 90*time.Second, p).Err(); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, "t").Val(); ttl <= 80*time.Second || ttl > 90*time.Second {
		t.Fatalf("PTTL after RESTORE with 90 s: %v", ttl)
	}
	if err := c.Do(ctx, "RESTORE", "a", "4102444800123", p, "ABSTTL").Err(); err != nil {
		t.Fatal(err)
	}
	if at := c.PExpireTime(ctx, "a").Val(); at != 4102444800123*time.Millisecond {
		t.Fatalf("PEXPIRETIME after ABSTTL: %v", at)
	}
	if err := c.Do(ctx, "RESTORE", "i", "0", p, "IDLETIME", "3600").Err(); err != nil {
		t.Fatal(err)
	}
	if idle := c.ObjectIdleTime(ctx, "i").Val(); idle < time.Hour || idle > time.Hour+5*time.Second {
		t.Fatalf("OBJECT IDLETIME after IDLETIME 3600: %v", idle)
	}
	if err := c.Do(ctx, "RESTORE", "f", "0", p, "FREQ", "200").Err(); err != nil {
		t.Fatal(err)
	}

	// A bad payload onto an existing key with REPLACE changes nothing.
	bad := []byte(c.Dump(ctx, "s").Val())
	bad[len(bad)/2] ^= 1
	for _, payload := range []string{string(bad), dmFooter(string(bad[:len(bad)/2]), 10)} {
		err := c.RestoreReplace(ctx, "small", 0, payload).Err()
		if err == nil || (err.Error() != "ERR DUMP payload version or checksum are wrong" && err.Error() != "ERR Bad data format") {
			t.Fatalf("RESTORE of a corrupt payload: %v", err)
		}
	}
	if got := c.LRange(ctx, "small", 0, -1).Val(); strings.Join(got, " ") != "a b c 1 -2 300000" {
		t.Fatalf("small after refused RESTOREs: %q", got)
	}
	if n := c.Exists(ctx, "n").Val(); n != 0 {
		t.Fatal("a refused RESTORE created its key")
	}
}

// TestRestoreServesBlockedBLPOP: a client blocked in BLPOP on a key is
// served by a RESTORE of a list there, as by a push.
func TestRestoreServesBlockedBLPOP(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	c := s.Client(t)
	ctx := ctx(t)
	c.RPush(ctx, "src", "job1", "job2")
	p := c.Dump(ctx, "src").Val()
	got := make(chan []string, 1)
	go func() {
		v, _ := s.Client(t).BLPop(ctx, 0, "q").Result()
		got <- v
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(c.Info(ctx, "clients").Val(), "blocked_clients:1") {
		if time.Now().After(deadline) {
			t.Fatal("BLPOP never blocked")
		}
		time.Sleep(5 * time.Millisecond) // polling INFO: the wait has no notification
	}
	if err := c.Restore(ctx, "q", 0, p).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-got:
		if strings.Join(v, " ") != "q job1" {
			t.Fatalf("BLPOP = %q", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RESTORE did not serve the blocked BLPOP")
	}
	if rest := c.LRange(ctx, "q", 0, -1).Val(); strings.Join(rest, " ") != "job2" {
		t.Fatalf("q after the pop: %q", rest)
	}
}

// TestRestoreSurvivesRestart: RESTOREd keys, their expiries (relative
// ones included: logged as absolute) and their values come back the same
// from the AOF, and from the AOF after a rewrite.
func TestRestoreSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir)
	raw := s.Raw(t)
	dmSeed(t, raw)
	c := s.Client(t)
	ctx := ctx(t)
	var keys []string
	for _, k := range []string{"lzf", "biglist", "huge", "s"} {
		p := c.Dump(ctx, k).Val()
		if err := c.Restore(ctx, k+"-r", time.Hour, p).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Do(ctx, "RESTORE", k+"-a", "4102444800000", p, "ABSTTL").Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.RestoreReplace(ctx, k, 0, p).Err(); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k, k+"-r", k+"-a")
	}
	c.Do(ctx, "RESTORE", "int", "1", c.Dump(ctx, "short").Val(), "ABSTTL", "REPLACE") // deletes int
	state := func(raw *RawConn) string {
		var b strings.Builder
		for _, k := range append(keys, "int") {
			b.WriteString(k + ": " + dmState(t, raw, k))
		}
		// Unmasked, with the fields newer than Redis 7.0: active times too.
		b.WriteString(raw.Do("XINFO", "STREAM", "s-r", "FULL").String())
		return b.String()
	}
	want := state(raw)
	s.Stop()
	s = StartServerIn(t, dir)
	raw = s.Raw(t)
	if got := state(raw); got != want {
		t.Fatalf("after a restart (AOF replay)\n got: %s\nwant: %s", got, want)
	}
	if r := raw.Do("BGREWRITEAOF"); r.Type == '-' {
		t.Fatal(r)
	}
	waitInfo(t, raw, "persistence", "aof_rewrite_in_progress", "0")
	s.Stop()
	raw = StartServerIn(t, dir).Raw(t)
	if got := state(raw); got != want {
		t.Fatalf("after a rewrite and a restart\n got: %s\nwant: %s", got, want)
	}
}
