package tests

import (
	"testing"
)

// replyTypes is the type of each element of r, as one string.
func replyTypes(r Reply) string {
	out := make([]byte, len(r.Elems))
	for i, e := range r.Elems {
		out[i] = e.Type
	}
	return string(out)
}

// In RESP3, COMMAND INFO answers sets where Redis does: flags, ACL
// categories, tips, key specs, and an empty set for no subcommands (an
// array of them otherwise), side by side with redis-server.
func TestCommandInfoSetsInRESP3(t *testing.T) {
	t.Parallel()
	ours := StartServer(t).Raw(t)
	ours.Do("HELLO", "3")
	want := map[string]string{"get": "$:~:::~~~~", "client": "$:~:::~~~*"}
	for name, types := range want {
		r := ours.Do("COMMAND", "INFO", name)
		if len(r.Elems) != 1 {
			t.Fatalf("COMMAND INFO %s = %s", name, r)
		}
		if got := replyTypes(r.Elems[0]); got != types {
			t.Errorf("COMMAND INFO %s element types %q, want %q", name, got, types)
		}
	}
	redis := StartRedis(t).Raw(t)
	redis.Do("HELLO", "3")
	for name, types := range want {
		if got := replyTypes(redis.Do("COMMAND", "INFO", name).Elems[0]); got != types {
			t.Errorf("redis-server's COMMAND INFO %s element types %q, want %q", name, got, types)
		}
	}
}

// Every command's COMMAND DOCS gives its complexity.
func TestCommandDocsComplexity(t *testing.T) {
	t.Parallel()
	rc := StartServer(t).Raw(t)
	rc.Do("HELLO", "3")
	docs := rc.Do("COMMAND", "DOCS")
	var check func(name string, doc Reply)
	check = func(name string, doc Reply) {
		found := false
		for i := 0; i+1 < len(doc.Elems); i += 2 {
			switch doc.Elems[i].Str {
			case "complexity":
				found = doc.Elems[i+1].Str != ""
			case "subcommands":
				subs := doc.Elems[i+1]
				for j := 0; j+1 < len(subs.Elems); j += 2 {
					check(subs.Elems[j].Str, subs.Elems[j+1])
				}
			}
		}
		if !found {
			t.Errorf("COMMAND DOCS %s has no complexity: %s", name, doc)
		}
	}
	for i := 0; i+1 < len(docs.Elems); i += 2 {
		check(docs.Elems[i].Str, docs.Elems[i+1])
	}
	if len(docs.Elems) < 200 {
		t.Fatalf("COMMAND DOCS answered %d elements", len(docs.Elems))
	}
}
