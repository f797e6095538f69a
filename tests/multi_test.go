package tests

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const bbQueued = `+"QUEUED"`

func TestMultiBasics(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	other := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"EXEC", bbErr("ERR EXEC without MULTI")},
		{"DISCARD", bbErr("ERR DISCARD without MULTI")},
		{"MULTI", bbOK},
		{"SET a 1", bbQueued},
		{"INCR a", bbQueued},
		{"GET a", bbQueued},
		{"RPUSH l x", bbQueued},
	})
	// Nothing ran yet: another client does not see the writes.
	bbRun(t, other, []bbStep{{"EXISTS a l", ":0"}})
	bbRun(t, rc, []bbStep{
		{"EXEC", `*4[+"OK" :2 $"2" :1]`},
		{"EXEC", bbErr("ERR EXEC without MULTI")},
		{"MULTI", bbOK},
		{"EXEC", `*0[]`},
		{"MULTI", bbOK},
		{"MULTI", bbErr("ERR MULTI calls can not be nested")}, // does not abort
		{"WATCH a", bbErr("ERR WATCH inside MULTI is not allowed")},
		{"INCR a", bbQueued},
		{"EXEC", `*1[:3]`},
		{"MULTI", bbOK},
		{"SET a 100", bbQueued},
		{"DISCARD", bbOK},
		{"GET a", bbBulk("3")},
		{"MULTI x", bbArity("multi")},
		{"EXEC x", bbArity("exec")},
		{"DISCARD x", bbArity("discard")},
		{"WATCH", bbArity("watch")},
		{"UNWATCH x", bbArity("unwatch")},
	})
	if info := bbClientLines(t, rc.Do("CLIENT", "INFO")); info[0]["multi"] != "-1" {
		t.Errorf("CLIENT INFO multi=%s outside MULTI", info[0]["multi"])
	}
}

func TestMultiQueueingErrors(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	execAbort := bbErr("EXECABORT Transaction discarded because of previous errors.")
	bbRun(t, rc, []bbStep{
		// An unknown command dooms the transaction.
		{"MULTI", bbOK},
		{"SET a 1", bbQueued},
		{"NOSUCHCMD x", bbErr("ERR unknown command 'NOSUCHCMD', with args beginning with: 'x' ")},
		{"SET b 2", bbQueued},
		{"EXEC", execAbort},
		{"EXISTS a b", ":0"},
		// So does a wrong arity.
		{"MULTI", bbOK},
		{"SET a", bbArity("set")},
		{"GET a", bbQueued},
		{"EXEC", execAbort},
		{"EXEC", bbErr("ERR EXEC without MULTI")}, // EXECABORT ended the MULTI
		// And an unknown subcommand.
		{"MULTI", bbOK},
		{"CLIENT NOPE", bbErr("ERR unknown subcommand 'NOPE'. Try CLIENT HELP.")},
		{"EXEC", execAbort},
		// A command refused inside MULTI.
		{"MULTI", bbOK},
		{"SHUTDOWN", bbErr("ERR Command not allowed inside a transaction")},
		{"EXEC", execAbort},
		// DISCARD after a queueing error is fine.
		{"MULTI", bbOK},
		{"SET a", bbArity("set")},
		{"DISCARD", bbOK},
		{"EXISTS a", ":0"},
	})
}

func TestMultiRuntimeErrors(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"SET s hello", bbOK},
		{"MULTI", bbOK},
		{"SET a 1", bbQueued},
		{"INCR s", bbQueued},
		{"LPUSH s x", bbQueued},
		{"SET b 2", bbQueued},
		{"INCRBY b 3", bbQueued},
		{"EXEC", `*5[+"OK" ` + bbNotInt + ` ` + bbWrongType + ` +"OK" :5]`},
		{"MGET a b s", `*3[$"1" $"5" $"hello"]`},
	})
	// A blocking command inside MULTI does not block: it times out at once.
	bbRun(t, rc, []bbStep{
		{"MULTI", bbOK},
		{"BLPOP nolist 0", bbQueued},
		{"BLMOVE nolist d LEFT RIGHT 0", bbQueued},
		{"RPUSH q v", bbQueued},
		{"BLPOP q 0", bbQueued},
		{"EXEC", `*4[*nil $nil :1 *2[$"q" $"v"]]`}, // BLMOVE that cannot block: null bulk
	})
	// The commands of one EXEC share one time.
	bbRun(t, rc, []bbStep{{"MULTI", bbOK}, {"SET t v PX 30", bbQueued}})
	for range 50 {
		rc.Do("PTTL", "t")
	}
	ex := rc.Do("EXEC")
	if len(ex.Elems) != 51 {
		t.Fatalf("EXEC = %s", ex)
	}
	for _, e := range ex.Elems[1:] {
		if e.String() != ":30" {
			t.Errorf("PTTL inside the EXEC that set PX 30 = %s, want :30 (one time for the whole transaction)", e)
			break
		}
	}
}

func TestMultiWatch(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	other := s.Raw(t)
	rcID := bbClientID(t, rc)

	// A change by another client makes EXEC fail: *-1 in RESP2.
	bbRun(t, rc, []bbStep{
		{"SET k 1", bbOK},
		{"WATCH k", bbOK},
		{"MULTI", bbOK},
		{"INCR k", bbQueued},
	})
	bbRun(t, other, []bbStep{{"SET k 10", bbOK}})
	if info := bbClientLines(t, other.Do("CLIENT", "LIST", "ID", strconv.FormatInt(rcID, 10))); len(info) != 1 || info[0]["flags"] != "xd" {
		t.Errorf("CLIENT LIST of a client whose transaction is doomed = %v, want flags=xd", info)
	}
	bbRun(t, rc, []bbStep{
		{"EXEC", "*nil"},
		{"GET k", bbBulk("10")},
		// The failed EXEC unwatched: the next transaction runs.
		{"MULTI", bbOK},
		{"INCR k", bbQueued},
		{"EXEC", `*1[:11]`},
	})

	// RESP3: the failed EXEC is the null type.
	r3 := s.Raw(t)
	r3.Do("HELLO", "3")
	bbRun(t, r3, []bbStep{
		{"WATCH k", bbOK},
		{"MULTI", bbOK},
		{"GET k", bbQueued},
	})
	bbRun(t, other, []bbStep{{"DEL k", ":1"}})
	bbRun(t, r3, []bbStep{{"EXEC", "_"}})

	// Unchanged keys, a change by the client itself before MULTI, and
	// UNWATCH all let EXEC run.
	bbRun(t, rc, []bbStep{
		{"WATCH a b", bbOK},
		{"MULTI", bbOK},
		{"SET a 1", bbQueued},
		{"EXEC", `*1[+"OK"]`},
		{"WATCH a", bbOK},
		{"SET a 2", bbOK}, // its own write counts too
		{"MULTI", bbOK},
		{"GET a", bbQueued},
		{"EXEC", "*nil"},
		{"WATCH a", bbOK},
		{"UNWATCH", bbOK},
	})
	bbRun(t, other, []bbStep{{"SET a 3", bbOK}})
	bbRun(t, rc, []bbStep{
		{"MULTI", bbOK},
		{"GET a", bbQueued},
		{"EXEC", `*1[$"3"]`},
	})

	// DISCARD unwatches as well.
	bbRun(t, rc, []bbStep{
		{"WATCH a", bbOK},
		{"MULTI", bbOK},
		{"DISCARD", bbOK},
	})
	bbRun(t, other, []bbStep{{"SET a 4", bbOK}})
	bbRun(t, rc, []bbStep{
		{"MULTI", bbOK},
		{"GET a", bbQueued},
		{"EXEC", `*1[$"4"]`},
	})

	// Watching a missing key: creating it is a change.
	bbRun(t, rc, []bbStep{
		{"WATCH fresh", bbOK},
		{"MULTI", bbOK},
		{"SET fresh mine", bbQueued},
	})
	bbRun(t, other, []bbStep{{"SET fresh theirs", bbOK}})
	bbRun(t, rc, []bbStep{
		{"EXEC", "*nil"},
		{"GET fresh", bbBulk("theirs")},
	})

	// A write that changes nothing is not a change; an expire is.
	bbRun(t, rc, []bbStep{
		{"WATCH fresh", bbOK},
		{"MULTI", bbOK},
		{"GET fresh", bbQueued},
	})
	bbRun(t, other, []bbStep{{"DEL nothing-here", ":0"}, {"EXPIRE fresh 100", ":1"}})
	bbRun(t, rc, []bbStep{{"EXEC", "*nil"}})

	// A key watched in another database is another key.
	bbRun(t, rc, []bbStep{
		{"WATCH x", bbOK},
		{"MULTI", bbOK},
		{"GET x", bbQueued},
	})
	bbRun(t, other, []bbStep{{"SELECT 1", bbOK}, {"SET x 1", bbOK}, {"SELECT 0", bbOK}})
	bbRun(t, rc, []bbStep{{"EXEC", `*1[$nil]`}})

	if info := bbClientLines(t, rc.Do("CLIENT", "INFO")); info[0]["watch"] != "0" {
		t.Errorf("CLIENT INFO watch=%s after EXEC, want 0", info[0]["watch"])
	}
	bbRun(t, rc, []bbStep{{"WATCH p q r", bbOK}})
	if info := bbClientLines(t, rc.Do("CLIENT", "INFO")); info[0]["watch"] != "3" {
		t.Errorf("CLIENT INFO watch=%s after WATCH p q r, want 3", info[0]["watch"])
	}
	if n := bbInfoInt(t, rc, "clients", "watching_clients"); n != 1 {
		t.Errorf("watching_clients = %d, want 1", n)
	}
	if n := bbInfoInt(t, rc, "clients", "total_watched_keys"); n != 3 {
		t.Errorf("total_watched_keys = %d, want 3", n)
	}
}

func TestMultiWatchExpiry(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	other := s.Raw(t)

	// A watched key that expires before EXEC fails the transaction, even
	// if nobody touched it.
	bbRun(t, rc, []bbStep{
		{"SET k v PX 500", bbOK},
		{"WATCH k", bbOK},
		{"MULTI", bbOK},
		{"SET other 1", bbQueued},
	})
	at := other.Do("PEXPIRETIME", "k").Int
	if at <= 0 {
		t.Fatalf("PEXPIRETIME k = %d", at)
	}
	bbWaitFor(t, 5*time.Second, "the server clock to pass the key's expiry", func() bool {
		return bbServerMs(t, other) > at+5
	})
	bbRun(t, rc, []bbStep{
		{"EXEC", "*nil"},
		{"EXISTS other", ":0"},
	})

	// The same when another client's read deleted it lazily.
	bbRun(t, rc, []bbStep{
		{"SET k v PX 500", bbOK},
		{"WATCH k", bbOK},
		{"MULTI", bbOK},
		{"SET other 1", bbQueued},
	})
	bbWaitFor(t, 5*time.Second, "the key to expire", func() bool {
		return other.Do("GET", "k").Null
	})
	bbRun(t, rc, []bbStep{{"EXEC", "*nil"}})

	// A key already expired when WATCHed: its removal is no change.
	bbRun(t, other, []bbStep{{"SET gone v PX 1", bbOK}})
	bbWaitFor(t, 5*time.Second, "the key to expire", func() bool {
		return bbServerMs(t, other) > other.Do("PEXPIRETIME", "gone").Int+5
	})
	bbRun(t, rc, []bbStep{
		{"WATCH gone", bbOK},
		{"MULTI", bbOK},
		{"SET after 1", bbQueued},
	})
	bbRun(t, other, []bbStep{{"EXISTS gone", ":0"}})
	bbRun(t, rc, []bbStep{{"EXEC", `*1[+"OK"]`}})
}

func TestMultiFlushTouchesWatched(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	other := s.Raw(t)
	for _, flush := range []string{"FLUSHALL", "FLUSHDB", "FLUSHALL ASYNC"} {
		bbRun(t, rc, []bbStep{
			{"SET k v", bbOK},
			{"WATCH k", bbOK},
			{"MULTI", bbOK},
			{"SET k mine", bbQueued},
		})
		bbRun(t, other, []bbStep{{flush, bbOK}})
		bbRun(t, rc, []bbStep{{"EXEC", "*nil"}, {"EXISTS k", ":0"}})
	}
	// Flushing an empty (watched, missing) key is no change, as in Redis.
	bbRun(t, rc, []bbStep{
		{"WATCH missing", bbOK},
		{"MULTI", bbOK},
		{"SET k mine", bbQueued},
	})
	bbRun(t, other, []bbStep{{"FLUSHALL", bbOK}})
	bbRun(t, rc, []bbStep{{"EXEC", `*1[+"OK"]`}})
	// FLUSHDB of another database leaves the watch alone.
	bbRun(t, rc, []bbStep{
		{"WATCH k", bbOK},
		{"MULTI", bbOK},
		{"GET k", bbQueued},
	})
	bbRun(t, other, []bbStep{{"SELECT 2", bbOK}, {"SET z 1", bbOK}, {"FLUSHDB", bbOK}})
	bbRun(t, rc, []bbStep{{"EXEC", `*1[$"mine"]`}})
}

func TestMultiGoRedis(t *testing.T) {
	s := StartServer(t)
	c := s.Client(t)
	cx := ctx(t)

	// TxPipeline wraps the queued commands in MULTI/EXEC.
	var incr *redis.IntCmd
	var get *redis.StringCmd
	_, err := c.TxPipelined(cx, func(p redis.Pipeliner) error {
		p.Set(cx, "k", "1", 0)
		incr = p.Incr(cx, "k")
		get = p.Get(cx, "k")
		return nil
	})
	if err != nil || incr.Val() != 2 || get.Val() != "2" {
		t.Fatalf("TxPipelined = %v; INCR %d GET %q", err, incr.Val(), get.Val())
	}
	// A runtime error in one command is that command's error only.
	cmds, err := c.TxPipelined(cx, func(p redis.Pipeliner) error {
		p.LPush(cx, "k", "x")
		p.Incr(cx, "k")
		return nil
	})
	if err == nil || len(cmds) != 2 || cmds[0].Err() == nil || cmds[1].Err() != nil {
		t.Errorf("TxPipelined with a WRONGTYPE: err=%v cmds=%v", err, cmds)
	}

	// Optimistic locking with Watch: concurrent increments all land.
	const workers, each = 4, 15
	var wg sync.WaitGroup
	var mu sync.Mutex
	var fails []error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := s.Client(t)
			for range each {
				for attempt := 0; ; attempt++ {
					err := cl.Watch(cx, func(tx *redis.Tx) error {
						n, err := tx.Get(cx, "counter").Int()
						if err != nil && err != redis.Nil {
							return err
						}
						_, err = tx.TxPipelined(cx, func(p redis.Pipeliner) error {
							p.Set(cx, "counter", strconv.Itoa(n+1), 0)
							return nil
						})
						return err
					}, "counter")
					if err == nil {
						break
					}
					if !errors.Is(err, redis.TxFailedErr) || attempt > 1000 {
						mu.Lock()
						fails = append(fails, err)
						mu.Unlock()
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(fails) > 0 {
		t.Fatalf("Watch transactions failed: %v", fails)
	}
	if n, err := c.Get(cx, "counter").Int(); err != nil || n != workers*each {
		t.Errorf("counter = %d, %v; want %d", n, err, workers*each)
	}

	// Watch reports TxFailedErr when the key changed under it.
	err = c.Watch(cx, func(tx *redis.Tx) error {
		if err := s.Client(t).Set(cx, "counter", "0", 0).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(cx, func(p redis.Pipeliner) error {
			p.Incr(cx, "counter")
			return nil
		})
		return err
	}, "counter")
	if !errors.Is(err, redis.TxFailedErr) {
		t.Errorf("Watch with a concurrent change = %v, want redis.TxFailedErr", err)
	}
	// The same through RESP2.
	c2 := s.Client2(t)
	err = c2.Watch(cx, func(tx *redis.Tx) error {
		if err := c.Set(cx, "counter", "5", 0).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(cx, func(p redis.Pipeliner) error {
			p.Incr(cx, "counter")
			return nil
		})
		return err
	}, "counter")
	if !errors.Is(err, redis.TxFailedErr) {
		t.Errorf("RESP2 Watch with a concurrent change = %v, want redis.TxFailedErr", err)
	}
}
