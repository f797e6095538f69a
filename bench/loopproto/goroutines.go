package main

import (
	"net"
	"strconv"
	"sync"
)

// serveGoroutines is redstream's connection model at its smallest: a
// goroutine per connection reads, runs its requests under one mutex and
// writes the replies; a push that serves a waiter writes the waiter's
// reply on the waiter's socket itself, and the waiter's goroutine stays
// parked in its read until its client sends again.
func serveGoroutines(port int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	var mu sync.Mutex
	s := newStore[net.Conn]()
	serve := func(w net.Conn, key, v []byte) { _, _ = w.Write(appendPop(nil, key, v)) }
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			buf := make([]byte, 0, 16<<10)
			var out []byte
			for {
				if len(buf) == cap(buf) {
					buf = append(buf, 0)[:len(buf)]
				}
				n, err := c.Read(buf[len(buf):cap(buf)])
				if err != nil {
					mu.Lock()
					s.unblock(c)
					mu.Unlock()
					return
				}
				buf = buf[:len(buf)+n]
				out = out[:0]
				mu.Lock()
				for {
					argv, used := parse(buf)
					if used == 0 {
						break
					}
					out, _ = s.run(c, argv, out, serve)
					buf = buf[:copy(buf, buf[used:])]
				}
				mu.Unlock()
				if len(out) > 0 {
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}
		}()
	}
}
