package tests

import "testing"

// TestSmoke proves the harness: build, start, talk RESP3 via go-redis,
// RESP2 via a raw socket, and stop cleanly.
func TestSmoke(t *testing.T) {
	s := StartServer(t)
	c := s.Client(t)
	if err := c.RPush(ctx(t), "q", "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	got, err := c.LRange(ctx(t), "q", 0, -1).Result()
	if err != nil || len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("LRANGE = %v, %v", got, err)
	}
	raw := s.Raw(t)
	if r := raw.Do("LLEN", "q"); r.String() != ":2" {
		t.Fatalf("LLEN = %s", r)
	}
	if r := raw.Do("HELLO", "3"); r.Type != '%' {
		t.Fatalf("HELLO 3 = %s", r)
	}
	if r := raw.Do("LPOP", "nokey"); r.String() != "_" {
		t.Fatalf("LPOP missing in RESP3 = %s", r)
	}
}
