package tests

import (
	"strings"
	"testing"
	"time"
)

// TestMaxmemoryRefusesGrowthNotReads fills past maxmemory: commands that
// grow memory get Redis's OOM error, while reads and deletes keep working,
// and writes are accepted again once memory is freed.
func TestMaxmemoryRefusesGrowthNotReads(t *testing.T) {
	s := StartServer(t, "--maxmemory", "4mb")
	raw := s.Raw(t)
	big := strings.Repeat("x", 64<<10)
	deadline := time.Now().Add(20 * time.Second)
	var oom Reply
	for i := 0; ; i++ {
		r := raw.Do("RPUSH", "big", big)
		if r.Type == '-' {
			oom = r
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no OOM error after pushing %d x 64 KB past maxmemory 4mb", i)
		}
	}
	if want := "OOM command not allowed when used memory > 'maxmemory'."; oom.Str != want {
		t.Fatalf("error = %q, want %q", oom.Str, want)
	}
	if r := raw.Do("LLEN", "big"); r.Type != ':' || r.Int == 0 {
		t.Fatalf("LLEN while over maxmemory = %s", r)
	}
	if r := raw.Do("LPOP", "big"); r.Type != '$' {
		t.Fatalf("LPOP (not denyoom) while over maxmemory = %s", r)
	}
	if r := raw.Do("DEL", "big"); r.String() != ":1" {
		t.Fatalf("DEL = %s", r)
	}
	// The cron samples memory ten times a second and collects garbage
	// while over the limit, so freed memory is seen within about a second.
	for r := raw.Do("SET", "k", "v"); r.Type == '-'; r = raw.Do("SET", "k", "v") {
		if time.Now().After(deadline.Add(20 * time.Second)) {
			t.Fatalf("writes still refused after freeing memory: %s", r)
		}
		raw.Do("PING") // each try is a round trip: the server paces the loop
	}
}
