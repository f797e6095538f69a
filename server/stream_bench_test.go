package server

import (
	"strconv"
	"testing"

	"github.com/redstream/redstream/resp"
)

// In-process benchmarks of the stream handlers, without the network:
// what `redstream bench` measures end to end, minus the sockets. Run
// them with -cpuprofile to see where a command's time goes.

// benchRun runs argv's handler the way execute does, reusing w.
func benchRun(s *Server, w *resp.Writer, argv [][]byte, now int64) {
	cmd, _ := s.lookupCommand(argv)
	x := Ctx{s: s, w: w, db: s.shard.dbs[0], argv: argv, cmd: cmd, now: now}
	cmd.Run(&x)
}

func benchArgv(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

func BenchmarkXAdd(b *testing.B) {
	s := newStreamTestServer(b, nil, 100, 4096)
	var w resp.Writer
	argv := benchArgv("XADD", "bench", "*", "event", "click", "user", "12345")
	b.ReportAllocs()
	for i := range b.N {
		w.Reset()
		benchRun(s, &w, argv, int64(1_700_000_000_000+i/16))
	}
}

func BenchmarkXRange100(b *testing.B) {
	s := newStreamTestServer(b, nil, 100, 4096)
	var w resp.Writer
	for i := 1; i <= 100_000; i++ {
		w.Reset()
		benchRun(s, &w, benchArgv("XADD", "bench", strconv.Itoa(i), "event", "click", "user", "12345"), 0)
	}
	reqs := make([][][]byte, 512)
	for i := range reqs {
		reqs[i] = benchArgv("XRANGE", "bench", strconv.Itoa(1+i*191%99_000), "+", "COUNT", "100")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		w.Reset()
		benchRun(s, &w, reqs[i%len(reqs)], 0)
	}
}

func BenchmarkXReadOne(b *testing.B) {
	s := newStreamTestServer(b, nil, 100, 4096)
	var w resp.Writer
	for i := 1; i <= 1000; i++ {
		w.Reset()
		benchRun(s, &w, benchArgv("XADD", "bench", strconv.Itoa(i), "sent", "1700000000000000000"), 0)
	}
	argv := benchArgv("XREAD", "COUNT", "1000", "BLOCK", "10000", "STREAMS", "bench", "999")
	b.ReportAllocs()
	for range b.N {
		w.Reset()
		benchRun(s, &w, argv, 0)
	}
}
