package tests

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// XREAD BLOCK: wake-ups on XADD to one of several keys, several waiting
// clients, timeouts, disconnects, DEL and type changes of the key while
// blocked. Tests wait until INFO's blocked_clients shows a client blocked
// before they act; they never sleep to synchronise.

// sbBlocked returns INFO's blocked_clients.
func sbBlocked(t testing.TB, admin *RawConn) int {
	t.Helper()
	r := admin.Do("INFO", "clients")
	for _, line := range strings.Split(r.Str, "\r\n") {
		if v, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("INFO: %q", line)
			}
			return n
		}
	}
	t.Fatalf("INFO clients has no blocked_clients:\n%s", r.Str)
	return 0
}

// sbWaitBlocked waits (polling INFO, which has no notification) until
// exactly n clients are blocked.
func sbWaitBlocked(t testing.TB, admin *RawConn, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for got := sbBlocked(t, admin); got != n; got = sbBlocked(t, admin) {
		if time.Now().After(deadline) {
			t.Fatalf("blocked_clients = %d, want %d", got, n)
		}
		time.Sleep(time.Millisecond) // INFO is polled; there is nothing to wait on
	}
}

// sbExpect reads rc's pending reply and compares it with want in proto.
func sbExpect(t testing.TB, rc *RawConn, proto int, what, want string) {
	t.Helper()
	r, err := rc.TryRead(10 * time.Second)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if proto == 3 {
		want = strings.NewReplacer("$nil", "_", "*nil", "_").Replace(want)
	}
	if r.String() != want {
		t.Errorf("%s\n got: %s\nwant: %s", what, r, want)
	}
}

// sbStillBlocked checks, right after the writes that might have served a
// waiter, that n clients are still blocked. The server serves waiters
// before it answers the write, so this needs no waiting.
func sbStillBlocked(t testing.TB, admin *RawConn, n int, what string) {
	t.Helper()
	if got := sbBlocked(t, admin); got != n {
		t.Fatalf("%s: blocked_clients = %d, want %d", what, got, n)
	}
}

func TestStreamBlockingWakeup(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			admin.Do("FLUSHALL")
			rc := stDial(t, s.Addr, proto)
			admin.Do("XADD", "s2", "1-1", "old", "x")
			// $ on one present and two missing keys: only what comes later.
			rc.Send(Encode("XREAD", "BLOCK", "0", "STREAMS", "s1", "s2", "s3", "$", "$", "$"))
			sbWaitBlocked(t, admin, 1)
			admin.Do("XADD", "s2", "2-2", "new", "y")
			two, three := stRead("s2", stEntries(stEntry("2-2", "new", "y")))
			want := two
			if proto == 3 {
				want = three
			}
			sbExpect(t, rc, proto, "XREAD $ after XADD", want)

			// With an old ID there is data at once: BLOCK does not wait.
			rc.Send(Encode("XREAD", "BLOCK", "0", "COUNT", "1", "STREAMS", "s1", "s3", "s2", "$", "$", "0-0"))
			sbExpect(t, rc, proto, "XREAD with data is not blocked", stReadProto(proto, "s2", stEntries(stEntry("1-1", "old", "x"))))

			// A MULTI adding to two keys serves both at once.
			rc.Send(Encode("XREAD", "BLOCK", "0", "STREAMS", "s1", "s3", "$", "$"))
			sbWaitBlocked(t, admin, 1)
			admin.Do("MULTI")
			admin.Do("XADD", "s3", "1-0", "a", "1")
			admin.Do("XADD", "s1", "1-0", "b", "2")
			admin.Do("XADD", "s1", "2-0", "c", "3")
			admin.Do("EXEC")
			sbExpect(t, rc, proto, "XREAD after MULTI", stReadProto(proto,
				"s1", stEntries(stEntry("1-0", "b", "2"), stEntry("2-0", "c", "3")), "s3", stEntries(stEntry("1-0", "a", "1"))))
			sbWaitBlocked(t, admin, 0)
		})
	}
}

// stReadProto is stRead's rendering for proto.
func stReadProto(proto int, pairs ...string) string {
	two, three := stRead(pairs...)
	if proto == 3 {
		return three
	}
	return two
}

// TestStreamBlockingManyClients: every waiting client gets the new
// entries (XREAD does not consume them, unlike BLPOP).
func TestStreamBlockingManyClients(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	const n = 8
	conns := make([]*RawConn, n)
	for i := range conns {
		conns[i] = s.Raw(t)
		id := "$"
		if i%2 == 1 {
			id = "0" // the stream is missing: 0 waits as well
		}
		conns[i].Send(Encode("XREAD", "BLOCK", "0", "STREAMS", "q", id))
		sbWaitBlocked(t, admin, i+1)
	}
	// A client that blocks with COUNT and MAXCOUNT gets only one entry.
	capped := s.Raw(t)
	capped.Send(Encode("XREAD", "COUNT", "1", "MAXCOUNT", "1", "BLOCK", "0", "STREAMS", "q", "$"))
	sbWaitBlocked(t, admin, n+1)
	admin.Do("MULTI")
	admin.Do("XADD", "q", "7-0", "job", "1")
	admin.Do("XADD", "q", "8-0", "job", "2")
	admin.Do("EXEC")
	want := stReadProto(2, "q", stEntries(stEntry("7-0", "job", "1"), stEntry("8-0", "job", "2")))
	for i, rc := range conns {
		sbExpect(t, rc, 2, fmt.Sprintf("client %d", i), want)
	}
	sbExpect(t, capped, 2, "COUNT 1", stReadProto(2, "q", stEntries(stEntry("7-0", "job", "1"))))
	sbWaitBlocked(t, admin, 0)
}

func TestStreamBlockingTimeout(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	for _, proto := range []int{2, 3} {
		rc := stDial(t, s.Addr, proto)
		rc.Do("XADD", "d", "666", "f", "v")
		rc.Do("XADD", "d", "667", "f2", "v2")
		rc.Do("XDEL", "d", "667")
		for _, args := range [][]string{
			{"XREAD", "BLOCK", "100", "STREAMS", "nokey", "$"},
			{"XREAD", "BLOCK", "100", "STREAMS", "d", "666"}, // only a deleted entry follows: no empty reply
			{"XREAD", "BLOCK", "100", "STREAMS", "nokey", "+"},
		} {
			start := time.Now()
			r := rc.Do(args...)
			want := "*nil"
			if proto == 3 {
				want = "_"
			}
			if r.String() != want {
				t.Errorf("RESP%d %v = %s, want %s", proto, args, r, want)
			}
			if el := time.Since(start); el < 95*time.Millisecond {
				t.Errorf("RESP%d %v answered after %v", proto, args, el)
			}
		}
	}
}

// TestStreamBlockingKeyChanges follows Redis: a DEL, or the key turning
// into another type, does not wake an XREAD (it waits for a stream); a
// stream written later does.
func TestStreamBlockingKeyChanges(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin, rc := s.Raw(t), s.Raw(t)
	rc.Send(Encode("XREAD", "BLOCK", "20000", "STREAMS", "s1", "$"))
	sbWaitBlocked(t, admin, 1)
	admin.Do("MULTI")
	admin.Do("XADD", "s1", "1-1", "old", "a")
	admin.Do("DEL", "s1")
	admin.Do("LPUSH", "s1", "x")
	admin.Do("EXEC")
	admin.Do("RPUSH", "s1", "y")
	admin.Do("DEL", "s1")
	admin.Do("SET", "s1", "str")
	admin.Do("DEL", "s1")
	sbStillBlocked(t, admin, 1, "after XADD+DEL+LPUSH, RPUSH, SET")
	admin.Do("XADD", "s1", "2-2", "new", "b")
	sbExpect(t, rc, 2, "XADD after the changes", stReadProto(2, "s1", stEntries(stEntry("2-2", "new", "b"))))

	// A stream renamed onto the key serves the waiter.
	rc.Send(Encode("XREAD", "BLOCK", "0", "STREAMS", "w", "$"))
	sbWaitBlocked(t, admin, 1)
	admin.Do("XADD", "src", "3-3", "f", "v")
	admin.Do("RENAME", "src", "w")
	sbExpect(t, rc, 2, "RENAME onto the key", stReadProto(2, "w", stEntries(stEntry("3-3", "f", "v"))))
}

// TestStreamBlockingIDEdges: blocking on the largest sequence of a
// millisecond, and on "+" of a missing stream.
func TestStreamBlockingIDEdges(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin, rc := s.Raw(t), s.Raw(t)
	rc.Send(Encode("XREAD", "BLOCK", "0", "STREAMS", "x", "1-18446744073709551615"))
	sbWaitBlocked(t, admin, 1)
	admin.Do("XADD", "x", "1-1", "f", "v")
	admin.Do("XADD", "x", "1-18446744073709551615", "f", "v")
	sbStillBlocked(t, admin, 1, "entries up to the ID")
	admin.Do("XADD", "x", "2-1", "f", "v")
	sbExpect(t, rc, 2, "past the ID", stReadProto(2, "x", stEntries(stEntry("2-1", "f", "v"))))

	rc.Send(Encode("XREAD", "BLOCK", "20000", "STREAMS", "le", "+"))
	sbWaitBlocked(t, admin, 1)
	admin.Do("MULTI")
	admin.Do("XADD", "le", "1-0", "k1", "v1")
	admin.Do("XADD", "le", "2-0", "k2", "v2")
	admin.Do("EXEC")
	sbExpect(t, rc, 2, "+ after two adds", stReadProto(2, "le", stEntries(stEntry("2-0", "k2", "v2"))))
}

// TestStreamBlockingDisconnect: a client that goes away while blocked
// leaves nothing behind, and the others are still served.
func TestStreamBlockingDisconnect(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	gone := dialRaw(t, s.Addr)
	gone.Send(Encode("XREAD", "BLOCK", "0", "STREAMS", "k", "$"))
	stays := s.Raw(t)
	stays.Send(Encode("XREAD", "BLOCK", "0", "STREAMS", "k", "$"))
	sbWaitBlocked(t, admin, 2)
	gone.Conn.Close()
	sbWaitBlocked(t, admin, 1)
	admin.Do("XADD", "k", "1-1", "f", "v")
	sbExpect(t, stays, 2, "remaining client", stReadProto(2, "k", stEntries(stEntry("1-1", "f", "v"))))
	sbWaitBlocked(t, admin, 0)
	// CLIENT UNBLOCK answers like a timeout.
	stays.Send(Encode("XREAD", "BLOCK", "0", "STREAMS", "k", "$"))
	sbWaitBlocked(t, admin, 1)
	id := stays2ID(t, admin)
	if r := admin.Do("CLIENT", "UNBLOCK", id); r.String() != ":1" {
		t.Fatalf("CLIENT UNBLOCK = %s", r)
	}
	sbExpect(t, stays, 2, "unblocked", "*nil")
}

// stays2ID finds the blocked client's ID in CLIENT LIST.
func stays2ID(t testing.TB, admin *RawConn) string {
	t.Helper()
	for _, line := range strings.Split(admin.Do("CLIENT", "LIST").Str, "\n") {
		if strings.Contains(line, "cmd=xread") {
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "id="); ok {
					return v
				}
			}
		}
	}
	t.Fatal("no blocked XREAD in CLIENT LIST")
	return ""
}

// TestStreamBlockingClients drives XREAD BLOCK through go-redis (RESP3)
// and rueidis against a producer.
func TestStreamBlockingClients(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	gr, rr := s.Client(t), s.Rueidis(t)
	c := ctx(t)
	var wg sync.WaitGroup
	var grRes []redis.XStream
	var grErr, rrErr error
	var rrRes map[string][]rueidis.XRangeEntry
	wg.Add(2)
	go func() {
		defer wg.Done()
		grRes, grErr = gr.XRead(c, &redis.XReadArgs{Streams: []string{"jobs", "$"}, Block: 0}).Result()
	}()
	go func() {
		defer wg.Done()
		rrRes, rrErr = rr.Do(c, rr.B().Xread().Block(0).Streams().Key("jobs").Id("$").Build()).AsXRead()
	}()
	sbWaitBlocked(t, admin, 2)
	admin.Do("XADD", "jobs", "5-1", "task", "resize")
	wg.Wait()
	if grErr != nil || len(grRes) != 1 || grRes[0].Stream != "jobs" || len(grRes[0].Messages) != 1 ||
		grRes[0].Messages[0].ID != "5-1" || grRes[0].Messages[0].Values["task"] != "resize" {
		t.Errorf("go-redis XRead = %+v, %v", grRes, grErr)
	}
	if e := rrRes["jobs"]; rrErr != nil || len(e) != 1 || e[0].ID != "5-1" || e[0].FieldValues["task"] != "resize" {
		t.Errorf("rueidis XREAD = %+v, %v", rrRes, rrErr)
	}
	// A timeout is redis.Nil for go-redis and a nil message for rueidis.
	if _, err := gr.XRead(c, &redis.XReadArgs{Streams: []string{"jobs", "$"}, Block: 50 * time.Millisecond}).Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("go-redis timeout: %v", err)
	}
	if err := rr.Do(c, rr.B().Xread().Block(50).Streams().Key("jobs").Id("$").Build()).Error(); !rueidis.IsRedisNil(err) {
		t.Errorf("rueidis timeout: %v", err)
	}
}

// TestStreamBlockingStress: producers add to several streams while
// consumers follow them with XREAD BLOCK from the last ID they saw; every
// consumer must see every entry of its stream exactly once, in order.
func TestStreamBlockingStress(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	const streams, perStream, consumers = 3, 200, 6
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, streams+consumers)
	for i := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- sbFollow(c, s.Addr, fmt.Sprint("st", i%streams), perStream)
		}()
	}
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc := rueidisFor(s)
			defer rc.Close()
			for j := 1; j <= perStream; j++ {
				if err := rc.Do(c, rc.B().Xadd().Key(fmt.Sprint("st", i)).Id(fmt.Sprintf("%d-0", j)).FieldValue().FieldValue("n", strconv.Itoa(j)).Build()).Error(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func rueidisFor(s *Server) rueidis.Client {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true})
	if err != nil {
		panic(err)
	}
	return c
}

// sbFollow reads key with XREAD BLOCK until it has seen n entries.
func sbFollow(c context.Context, addr, key string, n int) error {
	g := redis.NewClient(&redis.Options{Addr: addr})
	defer g.Close()
	last, seen := "0", 0
	for seen < n {
		res, err := g.XRead(c, &redis.XReadArgs{Streams: []string{key, last}, Count: 7, Block: 0}).Result()
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		for _, m := range res[0].Messages {
			seen++
			if want := fmt.Sprintf("%d-0", seen); m.ID != want || m.Values["n"] != strconv.Itoa(seen) {
				return fmt.Errorf("%s: got %s %v, want %s", key, m.ID, m.Values, want)
			}
			last = m.ID
		}
	}
	return nil
}
