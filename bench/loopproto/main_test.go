package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

// TestModesDeliver: both models hand a pushed element to a waiting BRPOP
// and answer the pusher, so the bench compares servers doing the same job.
func TestModesDeliver(t *testing.T) {
	for mode, serve := range map[string]func(int) error{"goroutine": serveGoroutines, "epoll": serveEpoll} {
		t.Run(mode, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := ln.Addr().(*net.TCPAddr).Port
			ln.Close()
			go serve(port) // runs until the test binary exits
			cons := dialRetry(t, port)
			prod := dialRetry(t, port)
			fmt.Fprint(cons, "*3\r\n$5\r\nBRPOP\r\n$1\r\nq\r\n$1\r\n0\r\n")
			// Whether the push finds the BRPOP waiting or the BRPOP finds
			// the element stored, the consumer gets the same reply.
			fmt.Fprint(prod, "*3\r\n$5\r\nLPUSH\r\n$1\r\nq\r\n$3\r\njob\r\n")
			pr := bufio.NewReader(prod)
			if line, err := pr.ReadString('\n'); err != nil || line[0] != ':' {
				t.Fatalf("LPUSH replied %q, %v", line, err)
			}
			cons.SetReadDeadline(time.Now().Add(5 * time.Second))
			want := "*2\r\n$1\r\nq\r\n$3\r\njob\r\n"
			got := make([]byte, len(want))
			if _, err := io.ReadFull(cons, got); err != nil || string(got) != want {
				t.Fatalf("BRPOP got %q, %v; want %q", got, err, want)
			}
		})
	}
}

func dialRetry(t *testing.T, port int) net.Conn {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			t.Cleanup(func() { c.Close() })
			return c
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
}

func TestParse(t *testing.T) {
	in := []byte("*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n*1\r\n$4\r\nPI")
	argv, n := parse(in)
	if n != 22 || len(argv) != 2 || string(argv[0]) != "PING" || string(argv[1]) != "hi" {
		t.Fatalf("parse = %q, %d", argv, n)
	}
	if _, n := parse(in[n:]); n != 0 {
		t.Fatalf("an incomplete request parsed as %d bytes", n)
	}
}
