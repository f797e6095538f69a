package server

import (
	"strconv"
	"testing"

	"github.com/redstream/redstream/resp"
)

// In-process benchmarks of the group handlers (see stream_bench_test.go):
// the drain loop of `redstream bench`'s groups rows, and XAUTOCLAIM over
// a large PEL.

func benchFill(b *testing.B, s *Server, key string, n int) {
	b.Helper()
	var w resp.Writer
	for i := 1; i <= n; i++ {
		w.Reset()
		benchRun(s, &w, benchArgv("XADD", key, strconv.Itoa(i), "event", "click", "user", "12345"), 0)
	}
	w.Reset()
	benchRun(s, &w, benchArgv("XGROUP", "CREATE", key, "g", "0"), 0)
}

// BenchmarkXReadGroupAck100 is one consumer's step of the drain: read 100
// new entries, acknowledge them. One op is 100 entries. With policy=all
// the group has every policy option (redstream bench's policy drain row):
// what indexing each delivery for redelivery costs.
func BenchmarkXReadGroupAck100(b *testing.B) {
	for _, policy := range []string{"none", "all", "cap"} {
		b.Run("policy="+policy, func(b *testing.B) {
			s := newStreamTestServer(b, nil, 100, 4096)
			n := max(b.N*100, 1000)
			benchFill(b, s, "bench", n)
			var w resp.Writer
			if policy == "cap" {
				benchRun(s, &w, benchArgv("XGROUP", "SETPOLICY", "bench", "g", "MAXDELIVER", "5", "DEADLETTER", "dead"), 0)
			}
			if policy == "all" {
				benchRun(s, &w, benchArgv("XGROUP", "SETPOLICY", "bench", "g", "MAXDELIVER", "5", "DEADLETTER", "dead",
					"ACKWAIT", "600000", "BACKOFF", "600000,1200000"), 0)
			}
			read := benchArgv("XREADGROUP", "GROUP", "g", "c", "COUNT", "100", "STREAMS", "bench", ">")
			ackArgv := make([][]byte, 3, 103)
			copy(ackArgv, benchArgv("XACK", "bench", "g"))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				w.Reset()
				benchRun(s, &w, read, 1000)
				ackArgv = ackArgv[:3]
				for j := 1; j <= 100; j++ {
					ackArgv = append(ackArgv, []byte(strconv.Itoa(i*100+j)+"-0"))
				}
				w.Reset()
				benchRun(s, &w, ackArgv, 1000)
			}
		})
	}
}

// BenchmarkXAutoClaim1000 claims 1,000 entries per op from a PEL of
// 100,000, going round and round; with a MAXDELIVER no entry reaches,
// what checking the cap costs.
func BenchmarkXAutoClaim1000(b *testing.B) {
	b.Run("policy=none", func(b *testing.B) { benchXAutoClaim(b) })
	b.Run("policy=maxdeliver", func(b *testing.B) { benchXAutoClaim(b, "MAXDELIVER", "1000000000", "DEADLETTER", "dlq") })
}

func benchXAutoClaim(b *testing.B, policy ...string) {
	s := newStreamTestServer(b, nil, 100, 4096)
	benchFill(b, s, "bench", 100_000)
	var w resp.Writer
	if len(policy) > 0 {
		benchRun(s, &w, benchArgv(append([]string{"XGROUP", "SETPOLICY", "bench", "g"}, policy...)...), 0)
	}
	benchRun(s, &w, benchArgv("XREADGROUP", "GROUP", "g", "owner", "STREAMS", "bench", ">"), 1000)
	b.ReportAllocs()
	b.ResetTimer()
	cursor := "0-0"
	for i := range b.N {
		w.Reset()
		benchRun(s, &w, benchArgv("XAUTOCLAIM", "bench", "g", "c"+strconv.Itoa(i%2), "0", cursor, "COUNT", "1000"), 1000)
		out := w.Bytes()
		// The cursor is the first bulk string of the reply.
		start := 0
		for k := 0; k < 2; k++ {
			for out[start] != '\n' {
				start++
			}
			start++
		}
		end := start
		for out[end] != '\r' {
			end++
		}
		cursor = string(out[start:end])
	}
}
