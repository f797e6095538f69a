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
	// What maxmemory counts is the data, so freed data is room at once
	// (not after the next garbage collection).
	if r := raw.Do("SET", "k", "v"); r.Type == '-' {
		t.Fatalf("the first write after freeing memory was refused: %s", r)
	}
}

// TestMaxmemoryCountsDataNotGarbage: values written and deleted leave
// garbage in the server's heap until the next collection. maxmemory
// counts the data, so with the data far below the limit no write is
// refused, however much garbage waits; and INFO used_memory is the data.
func TestMaxmemoryCountsDataNotGarbage(t *testing.T) {
	s := StartServer(t, "--maxmemory", "100mb")
	raw := s.Raw(t)
	mb := strings.Repeat("x", 1<<20)
	for i := range 60 {
		if r := raw.Do("RPUSH", "data", mb); r.Type == '-' {
			t.Fatalf("RPUSH %d of 60 x 1 MB under maxmemory 100mb: %s", i, r)
		}
	}
	used := infoInt(t, raw, "memory", "used_memory")
	if used < 60<<20 || used > 70<<20 {
		t.Fatalf("used_memory = %d with 60 MB of data, want 60-70 MB", used)
	}
	five := strings.Repeat("y", 5<<20)
	refused := 0
	for range 40 { // 200 MB of garbage, past the collector's 120 MB goal
		raw.Do("SET", "churn", five)
		raw.Do("DEL", "churn")
		if r := raw.Do("SET", "small", "v"); r.Type == '-' {
			refused++
		}
	}
	if refused > 0 {
		t.Fatalf("%d of 40 small SETs refused with 60 MB of data under maxmemory 100mb", refused)
	}
}
