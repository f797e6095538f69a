package tests

import (
	"strings"
	"testing"
)

// TestDiffCommandKeySpecs compares where COMMAND says each command's keys
// are — the legacy first/last/step and the key specs' begin_search and
// find_keys — with redis-server's, for every command both have. Cluster
// clients route by these. The specs' flags are left out: Redis describes
// each key's access in more detail than redstream does.
func TestDiffCommandKeySpecs(t *testing.T) {
	_, _, p := bbStartPair(t)
	for _, proto := range []string{"2", "3"} {
		p.rs.Do("HELLO", proto)
		p.rd.Do("HELLO", proto)
		ours := commandKeyInfo(p.rs.Do("COMMAND"))
		theirs := commandKeyInfo(p.rd.Do("COMMAND"))
		if len(ours) == 0 || len(theirs) == 0 {
			t.Fatalf("RESP%s: COMMAND gave %d and %d commands", proto, len(ours), len(theirs))
		}
		compared := 0
		for name, want := range theirs {
			got, ok := ours[name]
			if !ok {
				continue // a command redstream does not have
			}
			compared++
			if got != want {
				t.Errorf("RESP%s %s:\n  redstream: %s\n  redis:     %s", proto, name, got, want)
			}
		}
		if compared < 50 {
			t.Fatalf("RESP%s: only %d commands compared", proto, compared)
		}
	}
	// GETKEYS follows the specs: XREADGROUP's search for STREAMS starts
	// after the group and consumer, which may bear that very name.
	for _, conn := range []*RawConn{p.rs, p.rd} {
		if r := conn.Do("COMMAND", "GETKEYS", "XREADGROUP", "GROUP", "streams", "streams", "STREAMS", "k1", "k2", ">", ">"); r.String() != `*2[$"k1" $"k2"]` {
			t.Errorf("COMMAND GETKEYS XREADGROUP GROUP streams streams STREAMS k1 k2 > > = %s", r)
		}
	}
}

// commandKeyInfo maps each command (and subcommand) of a COMMAND reply to
// its key positions, rendered for comparison.
func commandKeyInfo(all Reply) map[string]string {
	out := map[string]string{}
	var walk func(list Reply)
	walk = func(list Reply) {
		for _, e := range list.Elems {
			if len(e.Elems) < 10 {
				continue
			}
			var b strings.Builder
			b.WriteString(e.Elems[3].String() + " " + e.Elems[4].String() + " " + e.Elems[5].String() + " " + string(e.Elems[8].Type))
			for _, spec := range e.Elems[8].Elems {
				for i := 0; i+1 < len(spec.Elems); i += 2 {
					if k := spec.Elems[i].Str; k == "begin_search" || k == "find_keys" {
						b.WriteString(" " + k + "=" + spec.Elems[i+1].String())
					}
				}
			}
			out[e.Elems[0].Str] = b.String()
			walk(e.Elems[9])
		}
	}
	walk(all)
	return out
}
