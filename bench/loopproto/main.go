// Command loopproto is issue 17's experiment: the smallest server that
// runs the delivery rows (LPUSH, BRPOP key 0), built two ways, so that
// `redstream bench --group delivery --redstream PATH` can measure what the
// connection layer alone costs per delivered message, apart from
// everything else redstream does.
//
//	loopproto server --mode goroutine ...  one goroutine per connection,
//	                                       one mutex, the pusher writes a
//	                                       waiter's reply (redstream's model)
//	loopproto server --mode epoll ...      one thread in epoll_wait reads,
//	                                       runs and writes for every
//	                                       connection (Redis's model)
//
// It understands only what the delivery rows send (PING, INFO, FLUSHALL,
// LPUSH, RPUSH, BRPOP with one key) and ignores every flag but --port and
// --mode. It is an experiment, not a server: no persistence, no limits.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strconv"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "server" {
		fmt.Fprintln(os.Stderr, "usage: loopproto server --port P --mode goroutine|epoll")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	port := fs.Int("port", 6379, "")
	mode := fs.String("mode", "epoll", "")
	var args []string // keep only the flags we know; the bench passes redstream's
	rest := os.Args[2:]
	for i := 0; i < len(rest); i++ {
		if (rest[i] == "--port" || rest[i] == "--mode") && i+1 < len(rest) {
			args = append(args, rest[i], rest[i+1])
			i++
		}
	}
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	if m := os.Getenv("LOOPPROTO_MODE"); m != "" {
		*mode = m
	}
	var err error
	switch *mode {
	case "goroutine":
		err = serveGoroutines(*port)
	case "epoll":
		err = serveEpoll(*port)
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// parse takes one multibulk request off the front of in; n is 0 when
// the request is not complete yet.
func parse(in []byte) (argv [][]byte, n int) {
	if len(in) == 0 || in[0] != '*' {
		return nil, 0
	}
	line := bytes.IndexByte(in, '\n')
	if line < 0 {
		return nil, 0
	}
	count, _ := strconv.Atoi(string(in[1 : line-1]))
	pos := line + 1
	for range count {
		if pos >= len(in) || in[pos] != '$' {
			return nil, 0
		}
		end := bytes.IndexByte(in[pos:], '\n')
		if end < 0 {
			return nil, 0
		}
		size, _ := strconv.Atoi(string(in[pos+1 : pos+end-1]))
		pos += end + 1
		if pos+size+2 > len(in) {
			return nil, 0
		}
		argv = append(argv, in[pos:pos+size])
		pos += size + 2
	}
	return argv, pos
}

// store is the keyspace: lists, and FIFO queues of clients waiting in
// BRPOP. A waiter is whatever the connection layer uses to reach it.
type store[W comparable] struct {
	lists   map[string][][]byte
	waiters map[string][]W
}

func newStore[W comparable]() *store[W] {
	return &store[W]{lists: map[string][][]byte{}, waiters: map[string][]W{}}
}

// run executes argv for client self and appends its reply to out. A
// push that finds a waiter hands the element to it through serve and does
// not store it; a BRPOP on an empty list queues self and returns blocked.
func (s *store[W]) run(self W, argv [][]byte, out []byte, serve func(W, []byte, []byte)) (reply []byte, blocked bool) {
	switch string(bytes.ToUpper(argv[0])) {
	case "PING":
		return append(out, "+PONG\r\n"...), false
	case "INFO":
		return appendBulk(out, []byte("redis_version:loopproto\r\n")), false
	case "FLUSHALL":
		clear(s.lists)
		return append(out, "+OK\r\n"...), false
	case "LPUSH", "RPUSH":
		key := string(argv[1])
		for _, v := range argv[2:] {
			if w := s.waiters[key]; len(w) > 0 {
				s.waiters[key] = w[1:]
				serve(w[0], argv[1], v)
				continue
			}
			s.lists[key] = append(s.lists[key], bytes.Clone(v))
		}
		return fmt.Appendf(out, ":%d\r\n", len(s.lists[key])), false
	case "BRPOP":
		key := string(argv[1])
		if l := s.lists[key]; len(l) > 0 {
			v := l[0] // LPUSH then BRPOP: the oldest is the first appended
			s.lists[key] = l[1:]
			return appendPop(out, argv[1], v), false
		}
		s.waiters[key] = append(s.waiters[key], self)
		return out, true
	}
	return append(out, "-ERR unknown command\r\n"...), false
}

// unblock forgets a waiter that went away.
func (s *store[W]) unblock(w W) {
	for k, ws := range s.waiters {
		for i, x := range ws {
			if x == w {
				s.waiters[k] = append(ws[:i:i], ws[i+1:]...)
				break
			}
		}
	}
}

func appendBulk(out, b []byte) []byte {
	out = fmt.Appendf(out, "$%d\r\n", len(b))
	return append(append(out, b...), '\r', '\n')
}

func appendPop(out, key, v []byte) []byte {
	out = append(out, "*2\r\n"...)
	return appendBulk(appendBulk(out, key), v)
}
