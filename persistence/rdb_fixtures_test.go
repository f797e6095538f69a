package persistence

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The .rdb files in testdata/rdb were written by redis-server 7.0 running
// the recipes below; testdata/rdb/README.md says how to remake them:
//
//	REDSTREAM_MAKE_RDB_FIXTURES=1 go test ./persistence -run TestMakeRDBFixtures
//
// Their .golden files are our decoder's rendering of them, checked by
// TestRDBGolden and rewritten with -update.

var update = flag.Bool("update", false, "rewrite golden files")

// A fixture is a dataset built by commands on a redis-server started with
// the given config directives.
type fixture struct {
	name   string
	config []string
	cmds   func() [][]string
	skip   bool // holds types redstream does not serve
}

const farFuture = "4102444800000" // 2100-01-01, so the keys never expire

func fixtures() []fixture {
	return []fixture{
		{name: "strings", config: []string{"--maxmemory-policy", "allkeys-lru"}, cmds: stringCmds},
		{name: "lists", cmds: listCmds},
		{name: "lists-compressed", config: []string{"--list-compress-depth", "1"}, cmds: compressedListCmds},
		{name: "streams", cmds: streamCmds},
		{name: "unsupported", config: []string{"--maxmemory-policy", "allkeys-lfu"}, cmds: unsupportedCmds, skip: true},
		{name: "nochecksum", config: []string{"--rdbchecksum", "no", "--rdbcompression", "no"}, cmds: noChecksumCmds},
	}
}

func stringCmds() [][]string {
	return [][]string{
		{"SET", "int", "12345"}, {"SET", "neg", "-7"}, {"SET", "i16", "-30000"}, {"SET", "i32", "2000000000"},
		{"SET", "bigint", "9007199254740993"}, {"SET", "embstr", "hello"},
		{"SET", "raw", "The quick brown fox jumps over the lazy dog, 0123456789!"},
		{"SET", "lzf", strings.Repeat("abcdefgh", 200)}, {"SET", "empty", ""},
		{"SET", "bin", "\x00\x01\xfe\xff\r\n"}, {"SET", "exp", "v", "PXAT", farFuture},
		{"SELECT", "3"}, {"SET", "db3", "three"}, {"SET", "exp3", "x", "PXAT", "4102444800123"},
		{"SELECT", "9"}, {"SET", "db9", "nine"},
	}
}

func listCmds() [][]string {
	cmds := [][]string{{"RPUSH", "small", "a", "b", "c", "1", "-2", "300000"}}
	for i := 0; i < 5000; i += 500 {
		c := []string{"RPUSH", "big"}
		for j := i; j < i+500; j++ {
			c = append(c, fmt.Sprintf("e%d", j))
		}
		cmds = append(cmds, c)
	}
	return append(cmds,
		[]string{"RPUSH", "huge", strings.Repeat("0123456789", 2000), "tail"}, []string{"LPUSH", "huge", "head"},
		[]string{"RPUSH", "withexp", "x"}, []string{"PEXPIREAT", "withexp", farFuture},
		[]string{"SELECT", "2"}, []string{"LPUSH", "other", "z", "y"})
}

func compressedListCmds() [][]string {
	c := []string{"RPUSH", "long"}
	for i := range 2000 {
		c = append(c, fmt.Sprintf("element-number-%06d", i))
	}
	return [][]string{c}
}

func streamCmds() [][]string {
	var cmds [][]string
	for i := 1; i <= 250; i++ {
		if i%40 == 0 {
			cmds = append(cmds, []string{"XADD", "big", fmt.Sprintf("%d-0", i), "other", "x"})
			continue
		}
		cmds = append(cmds, []string{"XADD", "big", fmt.Sprintf("%d-0", i), "field", fmt.Sprint(i), "value", fmt.Sprint(i * i)})
	}
	return append(cmds,
		[]string{"XDEL", "big", "1-0", "5-0", "120-0", "250-0"},
		[]string{"XGROUP", "CREATE", "big", "g1", "0"},
		[]string{"XREADGROUP", "GROUP", "g1", "alice", "COUNT", "10", "STREAMS", "big", ">"},
		[]string{"XREADGROUP", "GROUP", "g1", "bob", "COUNT", "5", "STREAMS", "big", ">"},
		[]string{"XACK", "big", "g1", "2-0", "3-0"},
		[]string{"XCLAIM", "big", "g1", "carol", "0", "4-0"},
		[]string{"XGROUP", "CREATECONSUMER", "big", "g1", "dave"},
		[]string{"XGROUP", "CREATE", "big", "g2", "$"},
		[]string{"XGROUP", "CREATE", "big", "g3", "100-0", "ENTRIESREAD", "50"},
		[]string{"XADD", "small", "5-1", "a", "1"}, []string{"XADD", "small", "5-2", "b", "2", "c", "3"},
		[]string{"XSETID", "small", "10-0", "ENTRIESADDED", "10", "MAXDELETEDID", "3-0"},
		[]string{"PEXPIREAT", "small", farFuture},
		[]string{"XGROUP", "CREATE", "empty", "g", "$", "MKSTREAM"},
		[]string{"XADD", "gone", "1-1", "x", "1"}, []string{"XDEL", "gone", "1-1"},
		[]string{"SELECT", "1"}, []string{"XADD", "s2", "1-1", "k", "v"})
}

func unsupportedCmds() [][]string {
	cmds := [][]string{{"SET", "s", "v"}, {"HSET", "h", "a", "1", "b", "2"}, {"SADD", "intset", "1", "2", "3"},
		{"ZADD", "z", "1", "a", "2.5", "b"}, {"RPUSH", "l", "x"},
		{"FUNCTION", "LOAD", "#!lua name=mylib\nredis.register_function('f', function() return 1 end)"}}
	h, s, z := []string{"HSET", "bighash"}, []string{"SADD", "bigset"}, []string{"ZADD", "bigzset"}
	for i := range 200 {
		h = append(h, fmt.Sprintf("field%d", i), strings.Repeat("v", 70))
		s = append(s, fmt.Sprintf("member%d", i))
		z = append(z, fmt.Sprint(i), fmt.Sprintf("m%d", i))
	}
	return append(cmds, h, s, z, []string{"SET", "after", "end"})
}

func noChecksumCmds() [][]string {
	return [][]string{{"SET", "a", "1"}, {"SET", "long", strings.Repeat("xy", 100)}, {"RPUSH", "l", "a", "b"}}
}

// runFixture builds f's dataset in a fresh redis-server and returns the
// server (for queries) and its SAVEd file.
func runFixture(t testing.TB, f fixture) (*redisServer, []byte) {
	rs := startRedis(t, t.TempDir(), f.config...)
	for _, c := range f.cmds() {
		rs.must(t, c...)
	}
	rs.must(t, "SELECT", "0")
	return rs, rs.save(t)
}

func TestMakeRDBFixtures(t *testing.T) {
	if os.Getenv("REDSTREAM_MAKE_RDB_FIXTURES") == "" {
		t.Skip("set REDSTREAM_MAKE_RDB_FIXTURES=1 to rewrite testdata/rdb/*.rdb with redis-server")
	}
	for _, f := range fixtures() {
		_, b := runFixture(t, f)
		if err := os.WriteFile(filepath.Join("testdata", "rdb", f.name+".rdb"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRDBGolden(t *testing.T) {
	for _, f := range fixtures() {
		t.Run(f.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "rdb", f.name+".rdb"))
			if err != nil {
				t.Fatal(err)
			}
			got := goldenDump(t, b, f.skip)
			path := filepath.Join("testdata", "rdb", f.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Fatalf("decoding %s.rdb gives:\n%s\nwant:\n%s", f.name, got, want)
			}
		})
	}
}

// goldenDump decodes a fixture and renders the header facts and entries.
func goldenDump(t *testing.T, b []byte, skip bool) string {
	t.Helper()
	es, d, err := decodeAll(b, &DecodeOptions{SkipUnsupported: skip})
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	v, _ := d.Version()
	fmt.Fprintf(&sb, "version %d, checksum %s, %d bytes\n", v, d.Checksum().Status, len(b))
	for _, a := range d.Aux() {
		if a.Name == "redis-ver" || a.Name == "redis-bits" || a.Name == "aof-base" {
			fmt.Fprintf(&sb, "aux %s=%s\n", a.Name, a.Value)
		}
	}
	st := d.Stats()
	fmt.Fprintf(&sb, "skipped functions=%d module-aux=%d, empty keys=%d\n", st.SkippedFuncs, st.SkippedModAux, st.EmptyKeys)
	for _, e := range es {
		fmt.Fprintf(&sb, "[idle=%d freq=%d] ", min(e.Idle, 0), e.Freq) // idle seconds vary; show presence only
		dumpEntry(&sb, e)
	}
	return sb.String()
}
