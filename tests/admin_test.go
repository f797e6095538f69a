package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runCmd runs the redstream binary and returns its output and whether it
// succeeded.
func runCmd(t *testing.T, args ...string) (string, bool) {
	t.Helper()
	out, err := exec.Command(binary, args...).CombinedOutput()
	return string(out), err == nil
}

// TestAdminSnapshotAndAOF drives the admin commands as an operator would:
// snapshot save --wait against a running server, aof check on a sound and
// a damaged AOF, aof check --fix, snapshot restore (refusing to overwrite
// without --force), and a server starting from the restored data.
func TestAdminSnapshotAndAOF(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--save", "")
	raw := s.Raw(t)
	for i := range 30 {
		raw.Do("RPUSH", "q", strconv.Itoa(i))
	}
	if out, ok := runCmd(t, "snapshot", "save", "--addr", s.Addr, "--wait"); !ok || !strings.Contains(out, "saved") {
		t.Fatalf("snapshot save --wait: %s", out)
	}
	s.Stop()
	aofDir := filepath.Join(dir, "appendonlydir")
	if out, ok := runCmd(t, "aof", "check", aofDir); !ok || !strings.Contains(out, "AOF is valid") {
		t.Fatalf("aof check on a sound AOF: %s", out)
	}
	incr := filepath.Join(aofDir, "appendonly.aof.1.incr.aof")
	data, _ := os.ReadFile(incr)
	data[len(data)/2] ^= 0x20
	os.WriteFile(incr, data, 0o644)
	if out, ok := runCmd(t, "aof", "check", aofDir); ok || !strings.Contains(out, "DAMAGED at offset") {
		t.Fatalf("aof check on a damaged AOF succeeded or said nothing: %s", out)
	}
	if out, ok := runCmd(t, "aof", "check", aofDir, "--fix", "--yes"); !ok || !strings.Contains(out, "bytes dropped") {
		t.Fatalf("aof check --fix --yes: %s", out)
	}
	if out, ok := runCmd(t, "aof", "check", aofDir); !ok {
		t.Fatalf("aof check after the fix: %s", out)
	}
	n := StartServerIn(t, dir).Raw(t).Do("LLEN", "q").Int
	if n == 0 || n >= 30 {
		t.Fatalf("after cutting the middle of the AOF, LLEN = %d: want the prefix before the damage", n)
	}

	target := t.TempDir()
	dump := filepath.Join(dir, "dump.rdb")
	if out, ok := runCmd(t, "snapshot", "restore", dump, "--dir", target); !ok {
		t.Fatalf("snapshot restore: %s", out)
	}
	if out, ok := runCmd(t, "snapshot", "restore", dump, "--dir", target); ok || !strings.Contains(out, "--force") {
		t.Fatalf("a second restore without --force was not refused: %s", out)
	}
	if out, ok := runCmd(t, "snapshot", "restore", dump, "--dir", target, "--force"); !ok {
		t.Fatalf("snapshot restore --force: %s", out)
	}
	for _, mode := range []string{"yes", "no"} {
		s := StartServerIn(t, target, "--appendonly", mode)
		if r := s.Raw(t).Do("LLEN", "q"); r.Int != 30 {
			t.Fatalf("a server with appendonly %s on the restored dir has LLEN %s, want 30", mode, r)
		}
		s.Stop() // one server per data directory
	}
}

// TestAdminAOFExportLoadsInRedis: an AOF that a kill -9 left (ending in
// the preallocated fill, which redis-server refuses) is exported into a
// directory redis-server loads, with appendonly yes (the AOF base) and no
// (dump.rdb), holding the same data: stream IDs as redstream made them,
// other databases, expiries, groups and their pending entries. The source
// is not changed.
func TestAdminAOFExportLoadsInRedis(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed; skipping the export check with Redis")
	}
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--save", "")
	raw := s.Raw(t)
	seedData(t, raw)
	id := raw.Do("XADD", "events", "*", "type", "click").Str
	raw.Do("XGROUP", "CREATE", "events", "workers", "0")
	raw.Do("XREADGROUP", "GROUP", "workers", "w1", "STREAMS", "events", ">")
	s.Kill()
	incr := filepath.Join(dir, "appendonlydir", "appendonly.aof.1.incr.aof")
	before, _ := os.ReadFile(incr)
	if tail := string(before[max(0, len(before)-32):]); !strings.Contains(tail, "~rsfill\n") {
		t.Fatalf("the killed server's AOF does not end in fill: %q", tail)
	}
	dst := t.TempDir()
	if out, ok := runCmd(t, "aof", "export", dir, dst); !ok || !strings.Contains(out, "exported") {
		t.Fatalf("aof export: %s", out)
	}
	if after, _ := os.ReadFile(incr); string(after) != string(before) {
		t.Fatal("aof export changed the source AOF")
	}
	for _, appendonly := range []string{"yes", "no"} {
		rr := StartRedis(t, "--dir", dst, "--appendonly", appendonly).Raw(t)
		label := "redis-server on the export, appendonly " + appendonly
		checkData(t, rr, label)
		if got := rr.Do("XRANGE", "events", "-", "+").String(); !strings.Contains(got, id) {
			t.Fatalf("%s: XRANGE events = %s, want the entry %s", label, got, id)
		}
		if got := rr.Do("XPENDING", "events", "workers").String(); !strings.HasPrefix(got, "*4[:1 ") {
			t.Fatalf("%s: XPENDING events workers = %s, want 1 pending", label, got)
		}
	}
}
