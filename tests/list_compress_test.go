package tests

import (
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// compressValue is the i-th element of the test lists: 100 bytes, alike
// from one element to the next, as a backlog of jobs is.
func compressValue(i int) string {
	return fmt.Sprintf("job-%07d:", i) + strings.Repeat("payload ", 11)[:88]
}

// pushValues RPUSHes elements lo..hi-1 onto key, 1000 to a command.
func pushValues(t *testing.T, c *redis.Client, key string, lo, hi int) []string {
	t.Helper()
	var all []string
	for i := lo; i < hi; i += 1000 {
		var batch []any
		for j := i; j < min(i+1000, hi); j++ {
			batch = append(batch, compressValue(j))
			all = append(all, compressValue(j))
		}
		if err := c.RPush(ctx(t), key, batch...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return all
}

// checkList compares the whole list at key with want.
func checkList(t *testing.T, c *redis.Client, key string, want []string, when string) {
	t.Helper()
	got, err := c.LRange(ctx(t), key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: LRANGE %s gives %d elements, want %d, or they differ", when, key, len(got), len(want))
	}
}

// memoryUsage is MEMORY USAGE key.
func memoryUsage(t *testing.T, c *redis.Client, key string) int64 {
	t.Helper()
	n, err := c.MemoryUsage(ctx(t), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestListCompressDepth: after CONFIG SET list-compress-depth 1, a new
// long list of repetitive values costs a fraction of what the same list
// made before costs (MEMORY USAGE), reads and changes in its middle give
// the right answers, and BGSAVE and a restart keep it, compressed again
// on load.
func TestListCompressDepth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--appendonly", "no", "--save", "")
	c := s.Client(t)
	const n = 100_000
	plain := pushValues(t, c, "plain", 0, n) // depth 0, the default
	if err := c.ConfigSet(ctx(t), "list-compress-depth", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if got := c.ConfigGet(ctx(t), "list-compress-depth").Val()["list-compress-depth"]; got != "1" {
		t.Fatalf("CONFIG GET list-compress-depth = %q", got)
	}
	want := pushValues(t, c, "packed", 0, n)
	plainMem, packedMem := memoryUsage(t, c, "plain"), memoryUsage(t, c, "packed")
	t.Logf("MEMORY USAGE of %d elements: %d bytes at depth 0, %d at depth 1", n, plainMem, packedMem)
	if packedMem*4 > plainMem {
		t.Fatalf("depth 1 list takes %d bytes, depth 0 %d: not compressed", packedMem, plainMem)
	}
	if mem := memoryUsage(t, c, "plain"); mem != plainMem {
		t.Fatalf("the list made before CONFIG SET changed: %d bytes, was %d", mem, plainMem)
	}
	checkList(t, c, "plain", plain, "depth 0 list")

	// Reads and changes in the middle, on compressed nodes.
	if v := c.LIndex(ctx(t), "packed", 50_000).Val(); v != want[50_000] {
		t.Fatalf("LINDEX 50000 = %.20q", v)
	}
	if r := c.LRange(ctx(t), "packed", 40_000, 40_009).Val(); !slices.Equal(r, want[40_000:40_010]) {
		t.Fatalf("LRANGE 40000 40009 = %.40q", r)
	}
	if got := c.LInsertBefore(ctx(t), "packed", want[30_000], "inserted").Val(); got != n+1 {
		t.Fatalf("LINSERT = %d", got)
	}
	want = slices.Insert(want, 30_000, "inserted")
	if err := c.LSet(ctx(t), "packed", 60_000, "replaced").Err(); err != nil {
		t.Fatal(err)
	}
	want[60_000] = "replaced"
	if got := c.LRem(ctx(t), "packed", 0, want[70_000]).Val(); got != 1 {
		t.Fatalf("LREM = %d", got)
	}
	want = slices.Delete(want, 70_000, 70_001)
	if got := c.LPos(ctx(t), "packed", "replaced", redis.LPosArgs{}).Val(); got != 60_000 {
		t.Fatalf("LPOS = %d", got)
	}
	checkList(t, c, "packed", want, "after changes in the middle")
	if mem := memoryUsage(t, c, "packed"); mem > packedMem+packedMem/10 {
		t.Fatalf("after changes in the middle: %d bytes, was %d", mem, packedMem)
	}

	if err := c.BgSave(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
	waitInfo(t, s.Raw(t), "persistence", "rdb_bgsave_in_progress", "0")
	s.Stop()

	c = StartServerIn(t, dir, "--appendonly", "no", "--save", "", "--list-compress-depth", "1").Client(t)
	checkList(t, c, "packed", want, "after a restart")
	checkList(t, c, "plain", plain, "after a restart")
	if mem := memoryUsage(t, c, "plain"); mem*4 > plainMem {
		t.Fatalf("a list loaded with list-compress-depth 1 takes %d bytes, %d before: not compressed on load", mem, plainMem)
	}
}

// TestListCompressAgainstRedis runs the same seeded commands on long
// lists in redis-server and redstream, both at list-compress-depth 1
// (and 2 for a second key), and compares every reply.
func TestListCompressAgainstRedis(t *testing.T) {
	t.Parallel()
	red := StartRedis(t, "--list-compress-depth", "1").Raw(t)
	ours := StartServer(t, "--list-compress-depth", "1").Raw(t)
	rng := rand.New(rand.NewSource(16))
	send := func(args ...string) {
		t.Helper()
		want, got := red.Do(args...), ours.Do(args...)
		if got.String() != want.String() {
			t.Fatalf("%.60q: redstream %.80s, redis-server %.80s", args, got, want)
		}
	}
	for _, key := range []string{"d1", "d2"} {
		if key == "d2" {
			send("CONFIG", "SET", "list-compress-depth", "2")
		}
		for i := 0; i < 5000; i += 500 {
			args := []string{"RPUSH", key}
			for j := i; j < i+500; j++ {
				args = append(args, compressValue(j%700))
			}
			send(args...)
		}
		for range 1500 {
			i := strconv.Itoa(rng.Intn(5200) - 100)
			v := compressValue(rng.Intn(800))
			switch rng.Intn(10) {
			case 0:
				send("LINSERT", key, "BEFORE", v, compressValue(rng.Intn(5000)))
			case 1:
				send("LINSERT", key, "AFTER", v, "short")
			case 2:
				send("LSET", key, i, v)
			case 3:
				send("LREM", key, strconv.Itoa(rng.Intn(5)-2), v)
			case 4:
				send("LINDEX", key, i)
			case 5:
				send("LRANGE", key, i, strconv.Itoa(rng.Intn(5200)-100))
			case 6:
				send("LPUSH", key, v, v)
			case 7:
				send("RPOP", key, strconv.Itoa(rng.Intn(3)+1))
			case 8:
				send("LPOS", key, v, "RANK", strconv.Itoa(rng.Intn(5)-2|1))
			default:
				send("LTRIM", key, strconv.Itoa(rng.Intn(3)), strconv.Itoa(-1-rng.Intn(3)))
			}
		}
		send("LRANGE", key, "0", "-1")
		send("OBJECT", "ENCODING", key)
	}
}
