package server

import (
	"fmt"
	"io"
	"log/slog"
	"math"
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
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	var b strings.Builder
	for _, db := range s.shard.dbs {
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
			fmt.Fprintf(&b, "db%d %q len=%d last=%s first=%s maxdel=%s added=%d idmp=%+v age=%+v\n", db.index, k, st.Len(),
				st.LastID(), st.FirstID(), st.MaxDeletedID(), st.EntriesAdded(), st.IDMPStats(s.shard.lastTime), st.Retention())
			if layout {
				fmt.Fprintf(&b, "  nodes=%d rax=%d\n", st.Nodes(), st.RadixNodes())
			}
			for it := st.Range(stream.MinID, stream.MaxID, false); it.Next(); {
				fmt.Fprintf(&b, "  %s %q\n", it.ID(), it.Fields())
			}
			dumpGroups(&b, st)
		}
	}
	return b.String()
}

// dumpGroups renders a stream's consumer groups completely: counters,
// every PEL entry with its time, count and owner, every consumer with its
// seen and active times, and the order CLAIM would take entries in.
func dumpGroups(b *strings.Builder, st *stream.Stream) {
	st.EachGroup(func(g *stream.Group) bool {
		lag, lagOK := st.Lag(g)
		fmt.Fprintf(b, "  group %q last=%s read=%d lag=%d/%v pending=%d released=%d policy=%+v dead=%d\n", g.Name(), g.LastID(),
			g.EntriesRead(), lag, lagOK, g.Pending(), g.Released(), *g.Policy(), g.DeadLettered())
		g.EachPending(nil, stream.MinID, stream.MaxID, func(pe stream.PendingEntry) bool {
			owner := "-"
			if pe.Consumer != nil {
				owner = string(pe.Consumer.Name())
			}
			fmt.Fprintf(b, "    %s t=%d n=%d %s\n", pe.ID, pe.DeliveryTime, pe.DeliveryCount, owner)
			return true
		})
		g.EachConsumer(func(c *stream.Consumer) bool {
			fmt.Fprintf(b, "    consumer %q seen=%d active=%d pending=%d\n", c.Name(), c.SeenTime(), c.ActiveTime(), c.Pending())
			return true
		})
		fmt.Fprintf(b, "    claim order %v\n", g.Claimable(math.MaxInt64, 0, 0))
		return true
	})
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
		{"XCFGSET", k, "MAXAGE", []string{"0", "3", "60000"}[rng.IntN(3)], []string{"KEEPREF", "DELREF", "ACKED"}[rng.IntN(3)]},
		{"DEL", k}, {"RENAME", k, k2}, {"COPY", k, k2, "REPLACE"}, {"XREAD", "STREAMS", k, "0"},
	}
	cmds = append(cmds, groupMix(rng, k, k2, n)...)
	cmd := cmds[rng.IntN(len(cmds))]
	switch cmd[0] {
	case "DEL", "RENAME", "COPY", "XSETID", "RPUSH", "XTRIM":
		if rng.IntN(6) != 0 { // rarer, so streams grow
			cmd = cmds[rng.IntN(3)]
		}
	}
	return cmd
}

// xdelTarget picks the ID to delete from what the stream holds, so
// XDEL does delete.
func xdelTarget(s *Server, key string) string {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	o := s.shard.dbs[0].keys[key]
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
		pickIDs(live, rng, cmd)
		if i%50 == 0 { // the age sweeper's logged XTRIMs, between commands as the cron's
			live.shard.mu.Lock()
			live.sweepAged()
			live.shard.mu.Unlock()
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
	sweeps := 0
	for _, rec := range log.records {
		if a := rec.Argv; len(a) == 5 && string(a[0]) == "XTRIM" && string(a[2]) == "MINID" && isRefPolicyWord(a[4]) {
			sweeps++ // only the sweeper writes that shape here
		}
	}
	if !strings.Contains(want, "idmp={Duration:100 MaxSize:") || sweeps == 0 || strings.Count(want, "\n") < 20 ||
		strings.Count(want, " t=") < 10 || strings.Count(want, "consumer ") < 5 ||
		!strings.Contains(want, `"reason"`) {
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
			s.shard.mu.Lock()
			_ = s.cfg.Set("stream-node-max-entries", []string{entries})
			s.shard.mu.Unlock()
		}
		if err := s.Apply(rec); err != nil {
			t.Fatalf("apply %q: %v", rec.Argv, err)
		}
	}
}

// groupMix returns the group commands of the mix: every way a group, a
// PEL or a consumer changes, with times taken from the record (CLAIM and
// IDLE decisions, delivery times) and the reference policies of trims.
func groupMix(rng *rand.Rand, k, k2, n string) [][]string {
	g := []string{"g1", "g2"}[rng.IntN(2)]
	c := []string{"alice", "bob", "carol"}[rng.IntN(3)]
	id, ids := "ID", []string{"ID", "ID"} // picked from the stream when the command runs (pickIDs)
	mix := [][]string{
		{"XGROUP", "CREATE", k, g, "0", "MKSTREAM"}, {"XGROUP", "CREATE", k, g, "$"},
		{"XGROUP", "SETID", k, g, "0", "ENTRIESREAD", "0"}, {"XGROUP", "CREATECONSUMER", k, g, c},
		{"XGROUP", "DELCONSUMER", k, g, c},
		{"XREADGROUP", "GROUP", g, c, "COUNT", n, "STREAMS", k, ">"},
		{"XREADGROUP", "GROUP", g, c, "COUNT", "3", "STREAMS", k, ">"},
		{"XREADGROUP", "GROUP", g, c, "NOACK", "COUNT", "2", "STREAMS", k, ">"},
		{"XREADGROUP", "GROUP", g, c, "STREAMS", k, "0"},
		{"XREADGROUP", "GROUP", g, c, "COUNT", "4", "CLAIM", "3", "STREAMS", k, k2, ">", ">"},
		{"XREADGROUP", "GROUP", g, c, "MAXCOUNT", "3", "BLOCK", "1", "STREAMS", k, ">"},
		{"XACK", k, g, ids[0], ids[1]}, {"XACKDEL", k, g, "ACKED", "IDS", "2", ids[0], ids[1]},
		{"XNACK", k, g, []string{"FAIL", "SILENT", "FATAL"}[rng.IntN(3)], "IDS", "2", ids[0], ids[1]},
		{"XNACK", k, g, "FAIL", "IDS", "1", id, "FORCE", "RETRYCOUNT", "4"},
		{"XCLAIM", k, g, c, "2", ids[0], ids[1]}, {"XCLAIM", k, g, c, "0", id, "IDLE", "5", "JUSTID"},
		{"XCLAIM", k, g, c, "0", id, "FORCE", "TIME", "7", "RETRYCOUNT", "2", "LASTID", id},
		{"XAUTOCLAIM", k, g, c, "4", "0", "COUNT", "3"},
		{"XDELEX", k, []string{"KEEPREF", "DELREF", "ACKED"}[rng.IntN(3)], "IDS", "1", id},
		{"XTRIM", k, "MAXLEN", n, []string{"KEEPREF", "DELREF", "ACKED"}[rng.IntN(3)]},
		// Policies: a dead-letter stream of its own, none, another stream
		// of the mix, itself (refused) or the list (WRONGTYPE, or a failed
		// move when a RENAME puts the list there later).
		{"XGROUP", "SETPOLICY", k, g, "MAXDELIVER", fmt.Sprint(rng.IntN(4)), "DEADLETTER", []string{"dlq", "", k2, "l"}[rng.IntN(4)]},
		{"XGROUP", "CREATE", k, g, "0", "MAXDELIVER", fmt.Sprint(1 + rng.IntN(2)), "DEADLETTER", "dlq", "BACKOFF", "60000,120000"},
	}
	if rng.IntN(10) == 0 {
		mix = append(mix, []string{"XGROUP", "DESTROY", k, g})
	}
	return mix
}

// pickIDs replaces each "ID" argument of cmd with the ID of an entry of
// the stream at key or of one pending in one of its groups (now and then
// an ID that is neither), so that acks and claims find something.
func pickIDs(s *Server, rng *rand.Rand, cmd []string) {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	var ids []string
	if o := s.shard.dbs[0].keys[cmd[1]]; o != nil {
		if st, ok := o.value.(*stream.Stream); ok {
			for it := st.Range(stream.MinID, stream.MaxID, false); it.Next(); {
				ids = append(ids, it.ID().String())
			}
			st.EachGroup(func(g *stream.Group) bool {
				g.EachPending(nil, stream.MinID, stream.MaxID, func(pe stream.PendingEntry) bool {
					ids = append(ids, pe.ID.String())
					return true
				})
				return true
			})
		}
	}
	for i, a := range cmd {
		if a != "ID" {
			continue
		}
		cmd[i] = "1-1"
		if len(ids) > 0 && rng.IntN(8) != 0 {
			cmd[i] = ids[rng.IntN(len(ids))]
		}
	}
}

// TestBlockedXReadGroupLogsNonBlockingForm: a blocked XREADGROUP is
// logged without BLOCK, both when it blocks (it created its consumer) and
// when an XADD serves it, so replay never blocks and rebuilds the PEL.
func TestBlockedXReadGroupLogsNonBlockingForm(t *testing.T) {
	log := &recordingLog{}
	s := newTestServer(t, log)
	waiter, writer := connect(t, s), connect(t, s)
	writer.do("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
	reply := make(chan string, 1)
	go func() {
		reply <- waiter.do("XREADGROUP", "GROUP", "g", "c", "COUNT", "5", "BLOCK", "0", "STREAMS", "q", ">")
	}()
	waitFor(t, func() bool { s.shard.mu.Lock(); defer s.shard.mu.Unlock(); return s.stats.blockedClients == 1 })
	writer.do("XADD", "q", "1-1", "f", "v")
	if got := <-reply; !strings.Contains(got, "1-1") {
		t.Fatalf("XREADGROUP reply %q", got)
	}
	var got []string
	for _, r := range log.records {
		got = append(got, strings.Join(bytesToStrings(r.Argv), " "))
	}
	want := []string{"XGROUP CREATE q g $ MKSTREAM", "XREADGROUP GROUP g c COUNT 5 STREAMS q >", "XADD q 1-1 f v",
		"XREADGROUP GROUP g c COUNT 5 STREAMS q >"}
	if !slices.Equal(got, want) {
		t.Fatalf("logged %q, want %q", got, want)
	}
	replica := newTestServer(t, nil)
	for _, rec := range log.records {
		if err := replica.Apply(rec); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := dumpStreams(t, replica, false), dumpStreams(t, s, false); got != want {
		t.Fatalf("replica\n%s\nlive\n%s", got, want)
	}
}

func bytesToStrings(argv [][]byte) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = string(a)
	}
	return out
}
