package server

import (
	"testing"
)

// TestWriteOwnIsLoggedAndWakesWaiters: a write the server makes by itself
// is logged like a client's (so replay repeats it) and serves the clients
// blocked on its key.
func TestWriteOwnIsLoggedAndWakesWaiters(t *testing.T) {
	log := &recordingLog{}
	s := newTestServer(t, log)
	waiter := connect(t, s)
	reply := make(chan string, 1)
	go func() { reply <- waiter.do("BLPOP", "q", "0") }()
	waitFor(t, func() bool { s.shard.mu.Lock(); defer s.shard.mu.Unlock(); return s.stats.blockedClients == 1 })
	s.shard.mu.Lock()
	s.writeOwn(0, []byte("RPUSH"), []byte("q"), []byte("job"))
	s.shard.mu.Unlock()
	if got := <-reply; got != "*2\r\n$1\r\nq\r\n$3\r\njob\r\n" {
		t.Fatalf("BLPOP reply %q", got)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.records) != 2 || string(log.records[0].Argv[0]) != "RPUSH" || string(log.records[1].Argv[0]) != "LPOP" {
		t.Fatalf("logged %d records: %v", len(log.records), log.records)
	}
}
