package server

import (
	"testing"
	"time"

	"github.com/redstream/redstream/stream"
)

// dueNow waits, by polling the clock, until the millisecond due is past.
func dueNow(t *testing.T, due int64) {
	t.Helper()
	waitFor(t, func() bool { return time.Now().UnixMilli() > due })
}

// The server releases a due delayed entry by itself with a logged
// XRELEASE record, found through the index XADD queued the key in; an
// index item left by a deleted key does nothing.
func TestReleaseDelayedLogsXRelease(t *testing.T) {
	log := &recordingLog{}
	s := newTestServer(t, log)
	c := connect(t, s)
	c.do("XADD", "gone", "DELAY", "20", "*", "f", "v")
	c.do("DEL", "gone")
	c.do("XADD", "q", "DELAY", "30", "*", "f", "v")
	s.shard.mu.Lock()
	items := len(s.shard.delays.items)
	due := s.shard.delays.at[delayKey{0, "q"}]
	s.shard.mu.Unlock()
	if items != 2 {
		t.Fatalf("the index holds %d items, want 2", items)
	}
	dueNow(t, due)
	s.shard.mu.Lock()
	s.releaseDelayed()
	s.shard.mu.Unlock()
	log.mu.Lock()
	last := log.records[len(log.records)-1]
	n := len(log.records)
	log.mu.Unlock()
	if n != 4 || string(last.Argv[0]) != "XRELEASE" || string(last.Argv[1]) != "q" {
		t.Fatalf("%d records, the last %q", n, last.Argv)
	}
	if got := c.do("XLEN", "q"); got != ":1\r\n" {
		t.Fatalf("XLEN after the release = %s", got)
	}
}

// A Restore (a follower installing its leader's snapshot) rebuilds the
// index from the streams it installs.
func TestRestoreQueuesDelayedStreams(t *testing.T) {
	s := newTestServer(t, nil)
	c := connect(t, s)
	c.do("XADD", "old", "DELAY", "100000", "*", "f", "v")
	st := stream.New()
	if _, err := st.AddDelayed(uint64(time.Now().UnixMilli()+50), [][]byte{[]byte("f"), []byte("v")}); err != nil {
		t.Fatal(err)
	}
	err := s.Restore(func(put Put) error { return put(0, "restored", st, 0) })
	if err != nil {
		t.Fatal(err)
	}
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	d := &s.shard.delays
	if len(d.items) != 1 || d.items[0].k != (delayKey{0, "restored"}) {
		t.Fatalf("index after Restore: %v", d.items)
	}
}
