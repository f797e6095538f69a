package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// parseOutcome is everything a Reader made of a byte stream: the
// requests, in order, and how it ended.
type parseOutcome struct {
	cmds [][]string
	end  string // "eof", "protocol: <msg>", "query buffer limit" or another error
}

func (o parseOutcome) String() string {
	return fmt.Sprintf("%d requests %q, then %s", len(o.cmds), o.cmds, o.end)
}

func outcomeOf(rd io.Reader, requireAuth bool) parseOutcome {
	cmds, err := parseAll(rd, func(r *Reader) { r.RequireAuth = requireAuth })
	var pe *ProtocolError
	end := "eof"
	switch {
	case err == nil:
	case errors.As(err, &pe):
		end = "protocol: " + pe.Msg
	case errors.Is(err, ErrQueryBufferLimit):
		end = "query buffer limit"
	default:
		end = "error: " + err.Error()
	}
	return parseOutcome{cmds: cmds, end: end}
}

func sameOutcome(a, b parseOutcome) bool {
	return a.end == b.end && equalCmds(a.cmds, b.cmds)
}

// encodeMultibulk writes argv the way a client library would.
func encodeMultibulk(argv []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(argv))
	for _, a := range argv {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

// readCommandSeeds are real request streams, well and badly formed.
func readCommandSeeds() []string {
	seeds := []string{
		mb("PING"),
		mb("SET", "queue:1", "hello world"),
		mb("LPUSH", "jobs", "a", "b", "c") + mb("BRPOP", "jobs", "0.01"),
		mb("MULTI") + mb("INCR", "n") + mb("LRANGE", "jobs", "0", "-1") + mb("EXEC"),
		mb("ECHO", "bin\r\n\x00\xff"),
		mb("SET", "k", "") + mb("GET", "k"),
		mb("HELLO", "3") + mb("CLIENT", "SETNAME", "fuzz"),
		"PING\r\n",
		"SET k \"v \\x41\\n\" 'it\\'s'\r\n",
		"ECHO \"unterminated\r\n",
		"\r\n\n*0\r\n*-1\r\nPING\n",
		"*1\rX$4\r\nPING\r\n",
		"*1\r\n$4\r\nPINGxx",
		"*2\r\n$3\r\nGET\r\n$1\r\n",
		"*2147483648\r\n",
		"*-0\r\n",
		"*1\r\n$-1\r\n",
		"*1\r\nx\r\n",
		"*1\r\n\xff\r\n",
		"*11\r\n",
		"*2\r\n$4\r\nAUTH\r\n$16385\r\n",
		"*1\r\n$536870913\r\n",
		"*1\r\n$500000000\r\nabc",
		"PING\x00 ignored\r\nPING\r\n",
	}
	var pipe strings.Builder
	for i := range 40 {
		fmt.Fprintf(&pipe, "*3\r\n$5\r\nRPUSH\r\n$1\r\nq\r\n$%d\r\n%s\r\nLLEN q\r\n", len(fmt.Sprint(i)), fmt.Sprint(i))
	}
	return append(seeds, pipe.String())
}

// FuzzReadCommand feeds arbitrary bytes to a Reader in one piece and in
// chunks chosen by a seed, with and without the unauthenticated limits.
// It checks that the Reader never panics, that chunking changes nothing
// (the same requests and the same ending), and that re-encoding the parsed
// requests as multibulk and parsing them again gives them back.
func FuzzReadCommand(f *testing.F) {
	for i, s := range readCommandSeeds() {
		f.Add([]byte(s), uint64(i))
		f.Add([]byte(s), uint64(i)<<8|1) // one byte at a time
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		// A hang is a bug too: crash loudly so the fuzzer keeps the input.
		watchdog := time.AfterFunc(10*time.Second, func() {
			panic(fmt.Sprintf("FuzzReadCommand: input %q (seed %d) still parsing after 10 s", data, seed))
		})
		defer watchdog.Stop()
		requireAuth := seed&2 != 0
		whole := outcomeOf(bytes.NewReader(data), requireAuth)

		var chunked parseOutcome
		if seed&1 != 0 {
			chunked = outcomeOf(&oneByteReader{data: data}, requireAuth)
		} else {
			chunked = outcomeOf(newChunkReader(data, seed, 1+int((seed>>2)%64)), requireAuth)
		}
		// The line limits are checked only while a line is incomplete,
		// so whether a line of more than 64 KiB is refused depends on
		// how it arrived; in Redis too. Compare only shorter inputs.
		if len(data) <= MaxInlineLen && !sameOutcome(whole, chunked) {
			t.Fatalf("input %q:\n whole:   %v\n chunked: %v", data, whole, chunked)
		}

		for _, c := range whole.cmds {
			if len(c) == 0 {
				t.Fatalf("input %q: an empty request was returned", data)
			}
		}
		// Re-encode what was parsed and parse it again.
		var again []byte
		for _, c := range whole.cmds {
			enc := encodeMultibulk(c)
			argv := make([][]byte, len(c))
			for i, a := range c {
				argv[i] = []byte(a)
			}
			if got := AppendCommand(nil, argv); !bytes.Equal(got, enc) {
				t.Fatalf("AppendCommand(%q) = %q, want %q", c, got, enc)
			}
			again = append(again, enc...)
		}
		re := outcomeOf(bytes.NewReader(again), false)
		if re.end != "eof" || !equalCmds(re.cmds, whole.cmds) {
			t.Fatalf("input %q: parsed %q; re-encoded as multibulk it parses as %v", data, whole.cmds, re)
		}
		// Multibulk requests parsed without the auth limits must also
		// pass with them when they are small enough.
		if !requireAuth && whole.end == "eof" {
			small := true
			for _, c := range whole.cmds {
				if len(c) > maxUnauthArgs {
					small = false
				}
				for _, a := range c {
					if len(a) > maxUnauthBulkLen {
						small = false
					}
				}
			}
			if small {
				if auth := outcomeOf(bytes.NewReader(again), true); !sameOutcome(auth, re) {
					t.Fatalf("input %q: small requests refused with RequireAuth: %v", data, auth)
				}
			}
		}
	})
}
