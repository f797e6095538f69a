package persistence

import (
	"bytes"
	"fmt"
	"github.com/redstream/redstream/stream"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestRedisSideBySide proves both directions against redis-server 7.0:
// each fixture dataset is built in redis-server A and SAVEd; our decoder
// reads that file and our encoder writes it again; redis-server B loads
// our file; then every key must answer the same on A and B (GET, LRANGE,
// XRANGE, XINFO STREAM FULL, XPENDING, PEXPIRETIME, OBJECT ENCODING...).
// It also compares each key's bytes: our encoder writes what Redis wrote,
// except for lists holding values too large for a node, which Redis 7.0
// packs and newer Redis (and we) store as plain nodes.
func TestRedisSideBySide(t *testing.T) {
	needRedis(t)
	for _, f := range fixtures() {
		if f.skip {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			a, fileA := runFixture(t, f)
			es, d, err := decodeAll(fileA, nil)
			if err != nil {
				t.Fatal(err)
			}
			opt := &EncodeOptions{NoChecksum: d.Checksum().Status == ChecksumDisabled,
				NoCompression: f.name == "nochecksum"}
			fileB := encodeEntries(t, opt, es)
			dirB := t.TempDir()
			if err := os.WriteFile(filepath.Join(dirB, "dump.rdb"), fileB, 0o644); err != nil {
				t.Fatal(err)
			}
			b := startRedis(t, dirB, f.config...)
			compareServers(t, a, b)
			compareKeyBytes(t, fileA, fileB)
		})
	}
}

// compareServers checks that a and b hold the same keys answering the
// same in dbs 0 to 15.
func compareServers(t *testing.T, a, b *redisServer) {
	t.Helper()
	total := 0
	for db := range 16 {
		a.must(t, "SELECT", fmt.Sprint(db))
		b.must(t, "SELECT", fmt.Sprint(db))
		ka, kb := sortedKeys(t, a), sortedKeys(t, b)
		if !reflect.DeepEqual(ka, kb) {
			t.Fatalf("db %d keys differ:\n A %q\n B %q", db, ka, kb)
		}
		for _, k := range ka {
			for _, cmd := range probes(t, a, k) {
				ra, rb := a.must(t, cmd...), b.must(t, cmd...)
				if !reflect.DeepEqual(ra, rb) {
					t.Fatalf("db %d %q differs:\n A %v\n B %v", db, cmd, ra, rb)
				}
				total++
			}
		}
	}
	if total == 0 {
		t.Fatal("nothing compared")
	}
}

func sortedKeys(t *testing.T, rs *redisServer) []string {
	var ks []string
	for _, k := range rs.must(t, "KEYS", "*").([]any) {
		ks = append(ks, k.(string))
	}
	sort.Strings(ks)
	return ks
}

// probes returns the commands to compare for key k.
func probes(t *testing.T, rs *redisServer, k string) [][]string {
	cmds := [][]string{{"TYPE", k}, {"PEXPIRETIME", k}, {"OBJECT", "ENCODING", k}}
	switch rs.must(t, "TYPE", k) {
	case "string":
		cmds = append(cmds, []string{"GET", k})
	case "list":
		cmds = append(cmds, []string{"LRANGE", k, "0", "-1"}, []string{"LLEN", k})
	case "stream":
		cmds = append(cmds, []string{"XRANGE", k, "-", "+"}, []string{"XLEN", k}, []string{"XINFO", "STREAM", k, "FULL"})
		for _, g := range rs.must(t, "XINFO", "GROUPS", k).([]any) {
			name := fieldOf(g.([]any), "name").(string)
			cmds = append(cmds, []string{"XPENDING", k, name})
		}
	}
	return cmds
}

// fieldOf looks up a name in a flat name/value reply.
func fieldOf(kv []any, name string) any {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == name {
			return kv[i+1]
		}
	}
	return nil
}

// compareKeyBytes checks that each key is encoded byte for byte as in the
// other file, lists with oversized values excepted.
func compareKeyBytes(t *testing.T, fileA, fileB []byte) {
	t.Helper()
	ea, _, err := decodeAll(fileA, nil)
	if err != nil {
		t.Fatal(err)
	}
	eb, _, err := decodeAll(fileB, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range ea {
		if l, ok := e.Value.(List); ok && hasPlainNode(l) {
			continue
		}
		x := stripHints(fileA[e.Offset : e.Offset+e.Size])
		y := fileB[eb[i].Offset : eb[i].Offset+eb[i].Size]
		if !bytes.Equal(x, y) {
			t.Errorf("key %q: our bytes differ from Redis's (%d vs %d bytes)", e.Key, len(y), len(x))
		}
	}
}

// stripHints removes the IDLE and FREQ opcodes (eviction hints Redis
// writes under LRU/LFU policies, which our encoder does not) from the
// opcodes before an entry's type byte.
func stripHints(x []byte) []byte {
	var out []byte
	for len(x) > 0 {
		switch x[0] {
		case opExpireMs:
			out, x = append(out, x[:9]...), x[9:]
		case opIdle:
			_, n, _ := decodeLen(x[1:])
			x = x[1+n:]
		case opFreq:
			x = x[2:]
		default:
			return append(out, x...)
		}
	}
	return out
}

func hasPlainNode(l List) bool {
	e := NewEncoder(nil, nil)
	for _, lp := range l {
		if _, ok := e.plain.PlainValue(lp); ok {
			return true
		}
	}
	return false
}

// TestRedisLoadsOurFile writes our own dataset (all encodings, a stream
// with the redstream extension field, expiries, three dbs) and checks what
// redis-server 7.0 makes of it.
func TestRedisLoadsOurFile(t *testing.T) {
	needRedis(t)
	es := roundTripEntries()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), encodeEntries(t, nil, es), 0o644); err != nil {
		t.Fatal(err)
	}
	rs := startRedis(t, dir)
	for _, e := range es {
		rs.must(t, "SELECT", fmt.Sprint(e.DB))
		if e.HasExpire && e.ExpireAt < 1000 {
			if n := rs.must(t, "EXISTS", string(e.Key)); n != int64(0) {
				t.Errorf("%q expired in 1970 but loaded", e.Key)
			}
			continue
		}
		checkInRedis(t, rs, e)
	}
}

// checkInRedis compares one of our entries with what Redis serves.
func checkInRedis(t *testing.T, rs *redisServer, e *Entry) {
	k := string(e.Key)
	want := int64(-1)
	if e.HasExpire {
		want = e.ExpireAt
	}
	if got := rs.must(t, "PEXPIRETIME", k); got != want {
		t.Errorf("%q: PEXPIRETIME %v, want %d", k, got, want)
	}
	switch v := e.Value.(type) {
	case String:
		if got := rs.must(t, "GET", k); got != string(v) {
			t.Errorf("%q: GET gives %.40q", k, got)
		}
	case List:
		var vals []any
		for _, lp := range v {
			for off := lp.First(); off >= 0; off = lp.Next(off) {
				vals = append(vals, string(lp.Get(off, nil)))
			}
		}
		if got := rs.must(t, "LRANGE", k, "0", "-1"); !reflect.DeepEqual(got, vals) {
			t.Errorf("%q: LRANGE differs", k)
		}
	case Stream:
		st := v.State()
		checkStreamInRedis(t, rs, k, &st)
	}
}

func checkStreamInRedis(t *testing.T, rs *redisServer, k string, s *stream.State) {
	var ids []string
	for _, e := range streamEntries(s) {
		if !strings.HasPrefix(e, "(deleted)") {
			ids = append(ids, strings.Fields(e)[0])
		}
	}
	var got []string
	for _, e := range rs.must(t, "XRANGE", k, "-", "+").([]any) {
		got = append(got, e.([]any)[0].(string))
	}
	if !reflect.DeepEqual(got, ids) {
		t.Errorf("%q: XRANGE IDs %v, want %v", k, got, ids)
	}
	full := rs.must(t, "XINFO", "STREAM", k, "FULL").([]any)
	for name, want := range map[string]any{"length": int64(s.Length), "last-generated-id": s.LastID.String(),
		"max-deleted-entry-id": s.MaxDeletedID.String(), "entries-added": int64(s.EntriesAdded),
		"recorded-first-entry-id": s.FirstID.String()} {
		if got := fieldOf(full, name); got != want {
			t.Errorf("%q: XINFO STREAM FULL %s = %v, want %v", k, name, got, want)
		}
	}
	groups := fieldOf(full, "groups").([]any)
	if len(groups) != len(s.Groups) {
		t.Fatalf("%q: %d groups, want %d", k, len(groups), len(s.Groups))
	}
	for i, g := range s.Groups {
		checkGroupInRedis(t, rs, k, g, groups[i].([]any))
	}
}

func checkGroupInRedis(t *testing.T, rs *redisServer, k string, g stream.GroupState, info []any) {
	read := any(int64(g.EntriesRead))
	if g.EntriesRead < 0 {
		read = nil
	}
	if fieldOf(info, "name") != string(g.Name) || fieldOf(info, "last-delivered-id") != g.LastID.String() ||
		fieldOf(info, "entries-read") != read || fieldOf(info, "pel-count") != int64(len(g.PEL)) {
		t.Errorf("%q group %q: XINFO says %v", k, g.Name, info)
	}
	sum := rs.must(t, "XPENDING", k, string(g.Name)).([]any)
	if sum[0] != int64(len(g.PEL)) {
		t.Errorf("%q group %q: XPENDING count %v, want %d", k, g.Name, sum[0], len(g.PEL))
	}
	for i, p := range g.PEL {
		pe := fieldOf(info, "pending").([]any)[i].([]any)
		if pe[0] != p.ID.String() || pe[2] != p.DeliveryTime || pe[3] != int64(p.DeliveryCount) {
			t.Errorf("%q group %q: pending %v, want %+v", k, g.Name, pe, p)
		}
	}
	for i, c := range g.Consumers {
		ci := fieldOf(info, "consumers").([]any)[i].([]any)
		if fieldOf(ci, "name") != string(c.Name) || fieldOf(ci, "seen-time") != c.SeenTime ||
			fieldOf(ci, "pel-count") != int64(len(c.PEL)) {
			t.Errorf("%q group %q: consumer %v, want %+v", k, g.Name, ci, c)
		}
	}
}
