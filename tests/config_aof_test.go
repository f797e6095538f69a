package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// CONFIG SET appendonly yes turns the AOF on while the server runs, as in
// Redis: it writes the keyspace as the AOF's base, then logs every write.
// A kill -9 afterwards loses nothing acknowledged, from before the switch
// or after it. An AOF an earlier run left is kept in quarantine.
func TestConfigSetAppendonlyOnAtRunTime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stale := StartServerIn(t, dir, "--save", "")
	stale.Raw(t).Do("SET", "stale", "from an earlier life")
	stale.Stop()

	s := StartServerIn(t, dir, "--appendonly", "no", "--save", "")
	raw := s.Raw(t)
	seedData(t, raw)
	if r := raw.Do("CONFIG", "SET", "appendonly", "yes"); r.String() != `+"OK"` {
		t.Fatalf("CONFIG SET appendonly yes = %s", r)
	}
	if r := raw.Do("CONFIG", "GET", "appendonly"); !strings.Contains(r.String(), `"yes"`) {
		t.Fatalf("CONFIG GET appendonly = %s", r)
	}
	if r := raw.Do("RPUSH", "after", "switch"); r.Int != 1 {
		t.Fatalf("RPUSH right after the switch = %s", r)
	}
	waitInfo(t, raw, "persistence", "aof_rewrite_in_progress", "0")
	if got := infoField(t, raw, "persistence", "aof_enabled"); got != "1" {
		t.Fatalf("aof_enabled = %s after turning the AOF on", got)
	}
	if r := raw.Do("RPUSH", "after", "base"); r.Int != 2 {
		t.Fatalf("RPUSH after the base = %s", r)
	}
	s.Kill()

	again := StartServerIn(t, dir, "--save", "")
	raw = again.Raw(t)
	checkData(t, raw, "after kill -9 with the AOF turned on at run time")
	if got := raw.Do("LRANGE", "after", "0", "-1").String(); got != `*2[$"switch" $"base"]` {
		t.Fatalf("writes after the switch: %s", got)
	}
	if got := raw.Do("EXISTS", "stale").Int; got != 0 {
		t.Fatalf("the earlier run's AOF was loaded: EXISTS stale = %d", got)
	}
	kept, _ := filepath.Glob(filepath.Join(dir, "quarantine", "appendonly.aof.*"))
	if len(kept) == 0 {
		t.Fatalf("the earlier run's AOF files are gone, not in quarantine")
	}
}

// CONFIG SET appendonly no turns the AOF off: writes go on, and the AOF's
// files stay where they are, whole.
func TestConfigSetAppendonlyOffAtRunTime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--save", "")
	raw := s.Raw(t)
	seedData(t, raw)
	if r := raw.Do("CONFIG", "SET", "appendonly", "no"); r.String() != `+"OK"` {
		t.Fatalf("CONFIG SET appendonly no = %s", r)
	}
	if got := infoField(t, raw, "persistence", "aof_enabled"); got != "0" {
		t.Fatalf("aof_enabled = %s after turning the AOF off", got)
	}
	if r := raw.Do("RPUSH", "queue", "not logged"); r.Int != 6 {
		t.Fatalf("RPUSH with the AOF off = %s", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest")); err != nil {
		t.Fatalf("the AOF's manifest after turning it off: %v", err)
	}
	s.Stop()
	checkData(t, StartServerIn(t, dir, "--save", "").Raw(t), "the AOF as it was turned off")
}

// appendfsync changes at run time, and writes go on under each policy.
func TestConfigSetAppendfsyncAtRunTime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--save", "")
	raw := s.Raw(t)
	for i, policy := range []string{"everysec", "no", "always", "everysec", "always"} {
		if r := raw.Do("CONFIG", "SET", "appendfsync", policy); r.String() != `+"OK"` {
			t.Fatalf("CONFIG SET appendfsync %s = %s", policy, r)
		}
		if r := raw.Do("CONFIG", "GET", "appendfsync"); !strings.Contains(r.String(), `"`+policy+`"`) {
			t.Fatalf("CONFIG GET appendfsync = %s, want %s", r, policy)
		}
		if r := raw.Do("RPUSH", "q", policy); r.Int != int64(i+1) {
			t.Fatalf("RPUSH under %s = %s", policy, r)
		}
	}
	if r := raw.Do("CONFIG", "SET", "appendfsync", "sometimes"); r.Type != '-' {
		t.Fatalf("CONFIG SET appendfsync sometimes = %s, want an error", r)
	}
	s.Kill()
	got := StartServerIn(t, dir, "--save", "").Raw(t).Do("LLEN", "q").Int
	if got != 5 {
		t.Fatalf("after kill -9, LLEN q = %d, want 5", got)
	}
}

// CONFIG REWRITE writes what CONFIG SET changed into the config file the
// server started with, keeping the file's comments, and a restart on the
// file runs with it.
func TestConfigRewriteSurvivesRestart(t *testing.T) {
	t.Parallel()
	s := StartServerWithConfig(t, "# the queue service\nmaxclients 50\n\n# durability\nappendfsync always\n", "--save", "")
	raw := s.Raw(t)
	for _, kv := range [][2]string{{"maxclients", "88"}, {"appendfsync", "everysec"}, {"timeout", "30"}} {
		if r := raw.Do("CONFIG", "SET", kv[0], kv[1]); r.String() != `+"OK"` {
			t.Fatalf("CONFIG SET %s %s = %s", kv[0], kv[1], r)
		}
	}
	if r := raw.Do("CONFIG", "REWRITE"); r.String() != `+"OK"` {
		t.Fatalf("CONFIG REWRITE = %s", r)
	}
	path := filepath.Join(s.Dir, "redstream.conf")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{"# the queue service\nmaxclients 88\n", "# durability\nappendfsync everysec\n", "timeout 30\n"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the rewritten file lacks %q:\n%s", want, text)
		}
	}
	s.Stop()
	again := startProcess(t, s.Dir, []string{"server", path, "--port", "random"})
	got := again.Raw(t).Do("CONFIG", "GET", "maxclients", "appendfsync", "timeout").String()
	for _, want := range []string{`"88"`, `"everysec"`, `"30"`} {
		if !strings.Contains(got, want) {
			t.Fatalf("after a restart on the rewritten file, CONFIG GET = %s, want %s in it", got, want)
		}
	}
}

// Without a config file there is nothing to rewrite, and the error says
// so in Redis's words.
func TestConfigRewriteWithoutFile(t *testing.T) {
	t.Parallel()
	r := StartServer(t).Raw(t).Do("CONFIG", "REWRITE")
	if r.String() != `-"ERR The server is running without a config file"` {
		t.Fatalf("CONFIG REWRITE = %s", r)
	}
}

// Writers keep pushing while CONFIG SET appendonly yes writes the base:
// after a kill -9, every push that was acknowledged, before the switch,
// while the base was written, or after, is there.
func TestConfigSetAppendonlyUnderLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--appendonly", "no", "--save", "")
	raw := s.Raw(t)
	for i := range 20000 { // a base that takes a moment to write
		raw.Do("RPUSH", "filler", strings.Repeat("x", 100), strconv.Itoa(i))
	}
	const writers = 4
	stop := make(chan struct{})
	acked := make([][]string, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q, err := dialQuiet(s.Addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer q.Conn.Close()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				v := fmt.Sprintf("w%d-%d", w, i)
				if r, err := q.do("RPUSH", "q", v); err != nil || r.Type != ':' {
					return
				}
				acked[w] = append(acked[w], v)
			}
		}()
	}
	waitForPushes(t, raw, 200)
	if r := raw.Do("CONFIG", "SET", "appendonly", "yes"); r.String() != `+"OK"` {
		t.Fatalf("CONFIG SET appendonly yes = %s", r)
	}
	waitInfo(t, raw, "persistence", "aof_rewrite_in_progress", "0")
	before := raw.Do("LLEN", "q").Int
	waitForPushes(t, raw, before+200)
	close(stop)
	wg.Wait()
	s.Kill()

	got := map[string]bool{}
	for _, e := range StartServerIn(t, dir, "--save", "").Raw(t).Do("LRANGE", "q", "0", "-1").Elems {
		got[e.Str] = true
	}
	for w := range writers {
		for _, v := range acked[w] {
			if !got[v] {
				t.Fatalf("push %s was acknowledged, but is gone after kill -9 (%d pushes came back)", v, len(got))
			}
		}
	}
}

// waitForPushes waits until the list q holds at least n elements.
func waitForPushes(t *testing.T, raw *RawConn, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for raw.Do("LLEN", "q").Int < n {
		if time.Now().After(deadline) {
			t.Fatalf("the writers did not reach %d pushes", n)
		}
		time.Sleep(5 * time.Millisecond) // polling a counter others move
	}
}
