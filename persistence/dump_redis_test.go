package persistence

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestDumpRedisSideBySide proves DUMP payloads both ways against
// redis-server 7.0: each fixture dataset is built in redis-server A; for
// every key, A's DUMP payload must decode, our encoding of the value must
// be the same bytes (lists with values too large for a node excepted, as
// for files), and our payload RESTOREd into redis-server B (with the TTL
// as ABSTTL) must answer every probe as the key in A does.
func TestDumpRedisSideBySide(t *testing.T) {
	needRedis(t)
	for _, f := range fixtures() {
		if f.skip {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			a, _ := runFixture(t, f)
			b := startRedis(t, t.TempDir(), f.config...)
			opt := &DumpOptions{NoCompression: f.name == "nochecksum"} // that fixture also turns rdbcompression off
			n := 0
			for db := range 16 {
				a.must(t, "SELECT", fmt.Sprint(db))
				b.must(t, "SELECT", fmt.Sprint(db))
				for _, k := range sortedKeys(t, a) {
					theirs := []byte(a.must(t, "DUMP", k).(string))
					v, err := DecodeDump(theirs, nil)
					if err != nil {
						t.Fatalf("db %d %q: Redis's payload: %v", db, k, err)
					}
					ours := mustDump(t, v, opt)
					if l, ok := v.(List); !(ok && hasPlainNode(l)) && !bytes.Equal(ours, theirs) {
						t.Errorf("db %d %q: our payload differs from Redis's (%d vs %d bytes)", db, k, len(ours), len(theirs))
					}
					ttl := a.must(t, "PEXPIRETIME", k).(int64)
					b.must(t, "RESTORE", k, fmt.Sprint(max(ttl, 0)), string(ours), "ABSTTL")
					n++
				}
			}
			if n == 0 {
				t.Fatal("no key compared")
			}
			compareServers(t, a, b)
		})
	}
}

// TestRedisRestoresOurPayloads RESTOREs our payload of every value kind
// into redis-server 7.0, those carrying the redstream extension after
// the value included (Redis reads the value and ignores the rest), and
// version 9 payloads built by hand as Redis 6 wrote them, and checks what
// Redis serves against what our decoder reads.
func TestRedisRestoresOurPayloads(t *testing.T) {
	needRedis(t)
	rs := startRedis(t, t.TempDir())
	for name, v := range dumpValues() {
		rs.must(t, "RESTORE", name, "0", string(mustDump(t, v, nil)))
		checkInRedis(t, rs, &Entry{Key: []byte(name), Value: v})
	}
	v9list := newPayload(typeListQuicklist)
	v9list.f.n(2).blob(ziplist(legacyValues[:10]...)).blob(ziplist(legacyValues[10:]...))
	es := []sEntry{{id: sid(1, 0), fields: []string{"a", "1"}}, {id: sid(2, 0), fields: []string{"a", "2"}, deleted: true},
		{id: sid(3, 0), fields: []string{"b", "3"}}}
	v9stream := newPayload(typeStreamListpacks)
	v9stream.f.n(1).blob(idBytes(es[0].id)).blob(buildNode(es[0].id, es)).n(2).id(sid(3, 0)).n(1)
	v9stream.f.s("g").id(sid(3, 0)).n(1).raw16(sid(1, 0)).ms(77).n(2).n(1).s("c").ms(100).n(1).raw16(sid(1, 0))
	for name, p := range map[string][]byte{"v9-list": v9list.done(9), "v9-stream": v9stream.done(9)} {
		v, err := DecodeDump(p, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rs.must(t, "RESTORE", name, "0", string(p))
		checkInRedis(t, rs, &Entry{Key: []byte(name), Value: v})
	}
	// Redis 7.0 refuses what is newer than it, as we refuse what is newer
	// than 7.4.
	s11 := newPayload(typeString)
	s11.f.s("x")
	if r, _ := rs.conn.do("RESTORE", "v11", "0", string(s11.done(11))); r != respError("ERR DUMP payload version or checksum are wrong") {
		t.Fatalf("Redis 7.0 RESTOREs a version 11 payload: %v", r)
	}
	// And both refuse the same corrupt value with the same words.
	bad := withFooter([]byte{typeListQuicklist2, 0}, DumpVersion)
	if r, _ := rs.conn.do("RESTORE", "bad", "0", string(bad)); r != respError("ERR Bad data format") {
		t.Fatalf("Redis 7.0 on an empty list: %v", r)
	}
	if _, err := DecodeDump(bad, nil); err == nil || !strings.HasPrefix(err.Error(), "Bad data format") {
		t.Fatalf("ours on an empty list: %v", err)
	}
}
