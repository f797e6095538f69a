package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// infoField reads one field of INFO.
func infoField(t testing.TB, raw *RawConn, section, name string) string {
	t.Helper()
	for _, line := range strings.Split(raw.Do("INFO", section).Str, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s", section, name)
	return ""
}

// waitInfo polls INFO until name has the value want.
func waitInfo(t testing.TB, raw *RawConn, section, name, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for infoField(t, raw, section, name) != want {
		if time.Now().After(deadline) {
			t.Fatalf("INFO %s %s never became %q", section, name, want)
		}
		time.Sleep(5 * time.Millisecond) // no notification for a background job ending: poll
	}
}

func seedData(t testing.TB, raw *RawConn) {
	t.Helper()
	for _, cmd := range [][]string{
		{"RPUSH", "queue", "a", "b", "c", "10", "-3"},
		{"SET", "str", "value"},
		{"SET", "int", "12345"},
		{"SET", "ttl", "x", "EX", "1000"},
		{"SELECT", "3"}, {"RPUSH", "other", "x"}, {"SELECT", "0"},
	} {
		if r := raw.Do(cmd...); r.Type == '-' {
			t.Fatalf("%v: %s", cmd, r)
		}
	}
}

func checkData(t testing.TB, raw *RawConn, label string) {
	t.Helper()
	checks := []struct {
		cmd  []string
		want string
	}{
		{[]string{"LRANGE", "queue", "0", "-1"}, `*5[$"a" $"b" $"c" $"10" $"-3"]`},
		{[]string{"GET", "str"}, `$"value"`},
		{[]string{"GET", "int"}, `$"12345"`},
		{[]string{"SELECT", "3"}, `+"OK"`},
		{[]string{"LRANGE", "other", "0", "-1"}, `*1[$"x"]`},
		{[]string{"SELECT", "0"}, `+"OK"`},
	}
	for _, c := range checks {
		if got := raw.Do(c.cmd...).String(); got != c.want {
			t.Fatalf("%s: %v = %s, want %s", label, c.cmd, got, c.want)
		}
	}
	if ttl := raw.Do("TTL", "ttl"); ttl.Int < 990 || ttl.Int > 1000 {
		t.Fatalf("%s: TTL ttl = %s, want about 1000", label, ttl)
	}
}

// TestPersistRestartAOF: with the defaults (AOF, fsync always) a clean
// restart reproduces the data, expiry included.
func TestPersistRestartAOF(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir)
	seedData(t, s.Raw(t))
	s.Stop()
	checkData(t, StartServerIn(t, dir).Raw(t), "after restart")
}

// TestPersistBGSAVE: BGSAVE writes dump.rdb in the background; a server
// without AOF loads it at startup.
func TestPersistBGSAVE(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--appendonly", "no", "--save", "")
	raw := s.Raw(t)
	seedData(t, raw)
	before := raw.Do("LASTSAVE").Int
	if r := raw.Do("BGSAVE"); r.Str != "Background saving started" {
		t.Fatalf("BGSAVE = %s", r)
	}
	waitInfo(t, raw, "persistence", "rdb_bgsave_in_progress", "0")
	if got := infoField(t, raw, "persistence", "rdb_last_bgsave_status"); got != "ok" {
		t.Fatalf("rdb_last_bgsave_status = %s", got)
	}
	if got := infoField(t, raw, "persistence", "rdb_changes_since_last_save"); got != "0" {
		t.Fatalf("rdb_changes_since_last_save = %s after a save", got)
	}
	// The snapshot's pause is tracked, under the name Redis gives a fork's.
	if usec, err := strconv.Atoi(infoField(t, raw, "stats", "latest_fork_usec")); err != nil || usec < 0 || usec > 1_000_000 {
		t.Fatalf("latest_fork_usec = %d (%v), want the freeze's few microseconds", usec, err)
	}
	if after := raw.Do("LASTSAVE").Int; after < before {
		t.Fatalf("LASTSAVE went from %d to %d", before, after)
	}
	s.Stop()
	if _, err := os.Stat(filepath.Join(dir, "dump.rdb")); err != nil {
		t.Fatal(err)
	}
	checkData(t, StartServerIn(t, dir, "--appendonly", "no").Raw(t), "loaded from dump.rdb")
}

// TestPersistRewriteUnderLoad: BGREWRITEAOF while a client writes; after
// a restart every acknowledged write is there and the AOF is a new base
// plus one increment.
func TestPersistRewriteUnderLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir)
	raw, ctl := s.Raw(t), s.Raw(t)
	n := 0
	for round := range 5 {
		for range 200 {
			n++
			if r := raw.Do("RPUSH", "log", strconv.Itoa(n)); r.Int != int64(n) {
				t.Fatalf("RPUSH = %s, want :%d", r, n)
			}
		}
		if r := ctl.Do("BGREWRITEAOF"); r.Type == '-' && !strings.Contains(r.Str, "already in progress") {
			t.Fatalf("round %d: BGREWRITEAOF = %s", round, r)
		}
	}
	waitInfo(t, ctl, "persistence", "aof_rewrite_in_progress", "0")
	if got := infoField(t, ctl, "persistence", "aof_last_bgrewrite_status"); got != "ok" {
		t.Fatalf("aof_last_bgrewrite_status = %s", got)
	}
	s.Stop()
	manifest, err := os.ReadFile(filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest"))
	if err != nil || !strings.Contains(string(manifest), "type b") {
		t.Fatalf("manifest after rewrites:\n%s (%v); want a base", manifest, err)
	}
	r := StartServerIn(t, dir).Raw(t).Do("LRANGE", "log", "0", "-1")
	if len(r.Elems) != n {
		t.Fatalf("after restart the list has %d elements, want %d", len(r.Elems), n)
	}
	for i, e := range r.Elems {
		if e.Str != strconv.Itoa(i+1) {
			t.Fatalf("element %d = %q", i, e.Str)
		}
	}
}

// TestPersistShutdown: SHUTDOWN NOSAVE writes no dump even with save
// points; SHUTDOWN SAVE writes one without them.
func TestPersistShutdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--appendonly", "no")
	seedData(t, s.Raw(t))
	s.Raw(t).Send(Encode("SHUTDOWN", "NOSAVE"))
	<-s.Exited()
	if _, err := os.Stat(filepath.Join(dir, "dump.rdb")); !os.IsNotExist(err) {
		t.Fatalf("SHUTDOWN NOSAVE left a dump.rdb (%v)", err)
	}
	s2 := StartServerIn(t, dir, "--appendonly", "no", "--save", "")
	seedData(t, s2.Raw(t))
	s2.Raw(t).Send(Encode("SHUTDOWN", "SAVE"))
	<-s2.Exited()
	checkData(t, StartServerIn(t, dir, "--appendonly", "no").Raw(t), "after SHUTDOWN SAVE")
}

// TestPersistTornAOF: a tail cut mid-frame is dropped with a warning and
// the server starts; a byte flipped in the middle refuses to start with
// an error naming the file, the offset and the repair command.
func TestPersistTornAOF(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir)
	raw := s.Raw(t)
	for i := range 50 {
		raw.Do("RPUSH", "q", strconv.Itoa(i))
	}
	s.Stop()
	incr := filepath.Join(dir, "appendonlydir", "appendonly.aof.1.incr.aof")
	data, err := os.ReadFile(incr)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(incr, data[:len(data)-5], 0o644)
	s2 := StartServerIn(t, dir)
	if n := s2.Raw(t).Do("LLEN", "q").Int; n != 49 {
		t.Fatalf("after cutting the last frame LLEN = %d, want 49", n)
	}
	if !strings.Contains(s2.Output(), "dropped_bytes") {
		t.Fatalf("no warning about the dropped tail:\n%s", s2.Output())
	}
	s2.Stop()
	data, _ = os.ReadFile(incr)
	data[len(data)/2] ^= 0x20
	os.WriteFile(incr, data, 0o644)
	out, err := exec.Command(binary, "server", "--port", "random", "--dir", dir).CombinedOutput()
	if err == nil {
		t.Fatalf("the server started on a corrupt AOF:\n%s", out)
	}
	for _, want := range []string{"corrupt", incr, "offset", "redstream aof check"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("refusal does not mention %q:\n%s", want, out)
		}
	}
}

// TestPersistRDBWithRedis: a dump written by redstream loads in
// redis-server, and one written by redis-server loads in redstream, with
// the same answers on both sides.
func TestPersistRDBWithRedis(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed; skipping the RDB round trip with Redis")
	}
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--appendonly", "no", "--save", "")
	raw := s.Raw(t)
	seedData(t, raw)
	if r := raw.Do("SAVE"); r.String() != `+"OK"` {
		t.Fatalf("SAVE = %s", r)
	}
	s.Stop()
	redis := StartRedis(t, "--dir", dir, "--dbfilename", "dump.rdb")
	rr := redis.Raw(t)
	checkData(t, rr, "redis-server loading redstream's dump")
	rr.Do("RPUSH", "fromredis", "1", "2")
	if r := rr.Do("SAVE"); r.String() != `+"OK"` {
		t.Fatalf("redis SAVE = %s", r)
	}
	s2 := StartServerIn(t, dir, "--appendonly", "no", "--save", "")
	r2 := s2.Raw(t)
	checkData(t, r2, "redstream loading redis-server's dump")
	if got := r2.Do("LRANGE", "fromredis", "0", "-1").String(); got != `*2[$"1" $"2"]` {
		t.Fatalf("LRANGE fromredis = %s", got)
	}
}

// TestPersistDiskFull runs the server on a 2 MB tmpfs: when the disk
// fills, writes are refused (MISCONF) or their clients disconnected
// unacknowledged; nothing acknowledged is lost; when space returns, writes
// are accepted again. Needs root (mount), so it skips elsewhere.
func TestPersistDiskFull(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v: %s); skipping the disk-full test", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	s := StartServerIn(t, dir, "--save", "")
	acked := 0
	value := strings.Repeat("v", 1000)
	var refusal string
	for i := 1; i < 10000 && refusal == ""; i++ {
		c, err := dialQuiet(s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.do("RPUSH", "big", fmt.Sprintf("%d:%s", i, value))
		c.Conn.Close()
		switch {
		case err != nil: // disconnected unacknowledged: the write failed
		case r.Type == '-':
			refusal = r.Str
		default:
			acked = i
		}
	}
	if !strings.HasPrefix(refusal, "MISCONF") {
		t.Fatalf("after filling the disk the refusal is %q, want MISCONF", refusal)
	}
	if out, err := exec.Command("mount", "-o", "remount,size=64m", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v %s", err, out)
	}
	raw := s.Raw(t)
	deadline := time.Now().Add(20 * time.Second)
	for r := raw.Do("SET", "after", "1"); r.Type == '-'; r = raw.Do("SET", "after", "1") {
		if time.Now().After(deadline) {
			t.Fatalf("writes still refused after space returned: %s", r)
		}
		time.Sleep(50 * time.Millisecond) // the AOF retries once a second
	}
	s.Stop()
	r := StartServerIn(t, dir).Raw(t).Do("LRANGE", "big", "0", "-1")
	if len(r.Elems) < acked {
		t.Fatalf("after restart %d elements, but %d were acknowledged", len(r.Elems), acked)
	}
	for i, e := range r.Elems[:acked] {
		if !strings.HasPrefix(e.Str, strconv.Itoa(i+1)+":") {
			t.Fatalf("element %d = %.20q...", i, e.Str)
		}
	}
}

// TestPersistCorruptRDB: a dump.rdb whose checksum does not match is
// refused at startup with an error that says so and names the file.
func TestPersistCorruptRDB(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--appendonly", "no", "--save", "")
	seedData(t, s.Raw(t))
	if r := s.Raw(t).Do("SAVE"); r.Type == '-' {
		t.Fatalf("SAVE = %s", r)
	}
	s.Stop()
	path := filepath.Join(dir, "dump.rdb")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-12] ^= 0x01 // a byte inside the last value, before the checksum
	os.WriteFile(path, data, 0o644)
	out, err := exec.Command(binary, "server", "--port", "random", "--dir", dir, "--appendonly", "no").CombinedOutput()
	if err == nil {
		t.Fatalf("the server started on a damaged dump.rdb:\n%s", out)
	}
	if !strings.Contains(string(out), path) || !strings.Contains(strings.ToLower(string(out)), "checksum") {
		t.Fatalf("the refusal does not name the file and the checksum:\n%s", out)
	}
}
