package server

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/redstream/redstream/stream"
)

// Stream commands and the one Apply path: a random mix of stream writes
// (with lists and strings around, for WRONGTYPE, RENAME and COPY) runs
// live; replaying the logged records must rebuild the same streams. A
// replica with other node limits must end up with the same entries and
// counters too, which holds only because approximate trims are logged in
// their exact form.

// newStreamTestServer is newTestServer with chosen node limits.
func newStreamTestServer(t testing.TB, log Log, maxEntries, maxBytes int) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.ProtectedMode = false
	cfg.StreamNodeMaxEntries, cfg.StreamNodeMaxBytes = maxEntries, maxBytes
	s, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dumpStreams renders every stream: its counters, IDMP figures and
// entries, and with layout its node count too.
func dumpStreams(t testing.TB, s *Server, layout bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, db := range s.dbs {
		keys := make([]string, 0, len(db.keys))
		for k, o := range db.keys {
			if _, ok := o.value.(*stream.Stream); ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			st := db.keys[k].value.(*stream.Stream)
			if err := st.Check(); err != nil {
				t.Errorf("stream %q: %v", k, err)
			}
			fmt.Fprintf(&b, "db%d %q len=%d last=%s first=%s maxdel=%s added=%d idmp=%+v\n", db.index, k, st.Len(),
				st.LastID(), st.FirstID(), st.MaxDeletedID(), st.EntriesAdded(), st.IDMPStats(s.lastTime))
			if layout {
				fmt.Fprintf(&b, "  nodes=%d rax=%d\n", st.Nodes(), st.RadixNodes())
			}
			for it := st.Range(stream.MinID, stream.MaxID, false); it.Next(); {
				fmt.Fprintf(&b, "  %s %q\n", it.ID(), it.Fields())
			}
		}
	}
	return b.String()
}

// streamMix returns one random command of the mix.
func streamMix(rng *rand.Rand) []string {
	keys := []string{"s1", "s2", "s3", "l"}
	k, k2 := keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))]
	n := fmt.Sprint(rng.IntN(30))
	ms := fmt.Sprint(rng.IntN(3))
	f, v := []string{"f", "g"}[rng.IntN(2)], fmt.Sprint(rng.IntN(50))
	cmds := [][]string{
		{"XADD", k, "*", f, v}, {"XADD", k, "*", f, v, "h", v}, {"XADD", k, "MAXLEN", "~", n, "*", f, v},
		{"XADD", k, "MAXLEN", "~", n, "LIMIT", "7", "*", f, v}, {"XADD", k, "MAXLEN", n, "*", f, v},
		{"XADD", k, "MINID", "~", ms + "-0", "*", f, v}, {"XADD", k, "NOMKSTREAM", "*", f, v},
		{"XADD", k, "IDMP", "p" + ms, v, "*", f, v}, {"XADD", k, "IDMPAUTO", "p" + ms, "*", f, v},
		{"XADD", k, ms + "-*", f, v}, {"XADD", k, "KEEPREF", "*", f, v},
		{"XDEL", k, "0-1", "1-0"}, {"XTRIM", k, "MAXLEN", "~", n}, {"XTRIM", k, "MAXLEN", n},
		{"XTRIM", k, "MINID", "~", "2-0", "LIMIT", "5"}, {"XSETID", k, "99999999999999-0"},
		{"XCFGSET", k, "IDMP-MAXSIZE", fmt.Sprint(1 + rng.IntN(3))}, {"RPUSH", "l", v},
		{"DEL", k}, {"RENAME", k, k2}, {"COPY", k, k2, "REPLACE"}, {"XREAD", "STREAMS", k, "0"},
	}
	cmd := cmds[rng.IntN(len(cmds))]
	switch cmd[0] {
	case "DEL", "RENAME", "COPY", "XSETID", "RPUSH":
		if rng.IntN(6) != 0 { // rarer, so streams grow
			cmd = cmds[rng.IntN(3)]
		}
	}
	return cmd
}

// xdelTarget picks the ID to delete from what the stream holds, so
// XDEL does delete.
func xdelTarget(s *Server, key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.dbs[0].keys[key]
	if o == nil {
		return "1-1"
	}
	st, ok := o.value.(*stream.Stream)
	if !ok || st.Len() == 0 {
		return "1-1"
	}
	it := st.Range(stream.MinID, stream.MaxID, st.Len()%2 == 0)
	it.Next()
	return it.ID().String()
}

func TestStreamReplayReproducesState(t *testing.T) {
	log := &recordingLog{}
	live := newStreamTestServer(t, log, 4, 4096) // small nodes: many node boundaries
	c := connect(t, live)
	rng := rand.New(rand.NewPCG(3, 4))
	switchAt := -1
	for i := range 4000 {
		cmd := streamMix(rng)
		if cmd[0] == "XDEL" {
			cmd[2] = xdelTarget(live, cmd[1])
		}
		if i == 2000 {
			c.do("CONFIG", "SET", "stream-node-max-entries", "2") // live layout changes mid-run
			log.mu.Lock()
			switchAt = len(log.records)
			log.mu.Unlock()
		}
		c.do(cmd...)
	}
	want := dumpStreams(t, live, true)
	if !strings.Contains(want, "idmp={Duration:100 MaxSize:") || strings.Count(want, "\n") < 20 {
		t.Fatalf("the mix built too little:\n%s", want)
	}
	// Same node limits: the same nodes, byte for byte in effect.
	same := newStreamTestServer(t, nil, 4, 4096)
	replay(t, same, log.records, switchAt, "2")
	if got := dumpStreams(t, same, true); got != want {
		t.Fatalf("replay with the same limits differs\nlive:\n%s\nreplayed:\n%s", want, got)
	}
	// Other limits: other nodes, the same stream.
	other := newStreamTestServer(t, nil, 100, 4096)
	replay(t, other, log.records, -1, "")
	if got, want := dumpStreams(t, other, false), dumpStreams(t, live, false); got != want {
		t.Fatalf("replay with other node limits differs\nlive:\n%s\nreplayed:\n%s", want, got)
	}
}

// replay applies recs; at record index at (if >= 0) it first sets
// stream-node-max-entries to entries, as the live run did at that point.
func replay(t *testing.T, s *Server, recs []Record, at int, entries string) {
	t.Helper()
	for i, rec := range recs {
		if i == at {
			s.mu.Lock()
			_ = s.cfg.Set("stream-node-max-entries", []string{entries})
			s.mu.Unlock()
		}
		if err := s.Apply(rec); err != nil {
			t.Fatalf("apply %q: %v", rec.Argv, err)
		}
	}
}
