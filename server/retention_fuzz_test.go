package server

import (
	"strings"
	"testing"

	"github.com/redstream/redstream/resp"
	"github.com/redstream/redstream/stream"
)

// refXCfgSet is the XCFGSET grammar written plainly, as the model the
// server's parser is checked against: whether args are accepted, and the
// age limit they leave on a stream that had none.
func refXCfgSet(args []string) (stream.Retention, bool) {
	var r stream.Retention
	if len(args) == 0 {
		return r, false
	}
	for i := 0; i < len(args); {
		opt := strings.ToLower(args[i])
		known := opt == "maxage" || opt == "idmp-duration" || opt == "idmp-maxsize"
		if !known || i+1 >= len(args) {
			return r, false
		}
		n, ok := resp.ParseInt([]byte(args[i+1]))
		switch {
		case !ok:
			return r, false
		case opt == "idmp-duration" && (n < 1 || n > 86400), opt == "idmp-maxsize" && (n < 1 || n > 10000), n < 0:
			return r, false
		}
		i += 2
		if opt != "maxage" {
			continue
		}
		r = stream.Retention{MaxAge: n}
		if i < len(args) {
			switch strings.ToLower(args[i]) {
			case "keepref":
				i++
			case "delref":
				r.Refs = stream.DelRef
				i++
			case "acked":
				r.Refs = stream.Acked
				i++
			}
		}
		if n == 0 {
			r = stream.Retention{}
		}
	}
	return r, true
}

// FuzzXCfgSet runs XCFGSET with arbitrary options (space separated) on a
// fresh stream and compares the reply and the age limit left with the
// model's.
func FuzzXCfgSet(f *testing.F) {
	for _, seed := range []string{
		"MAXAGE 10", "maxage 0 ACKED", "IDMP-DURATION 5 MAXAGE 60000 DELREF IDMP-MAXSIZE 7", "MAXAGE -1",
		"MAXAGE 10 ACKED DELREF", "ACKED", "MAXAGE", "MAXAGE 9223372036854775807 keepref", "MAXAGE 5 MAXAGE 0",
		"MAXAGE 07", "IDMP-MAXSIZE 10001 MAXAGE 1", "MAXAGE 1 IDMP-DURATION",
	} {
		f.Add(seed)
	}
	s := newTestServer(f, nil)
	f.Fuzz(func(t *testing.T, in string) {
		args := strings.Fields(in)
		c := connect(t, s)
		c.do("DEL", "s")
		c.do("XADD", "s", "*", "f", "v")
		reply := c.do(append([]string{"XCFGSET", "s"}, args...)...)
		want, ok := refXCfgSet(args)
		if !ok {
			want = stream.Retention{} // a refused XCFGSET changes nothing
		}
		if ok != (reply == "+OK\r\n") || !ok && !strings.HasPrefix(reply, "-ERR ") {
			t.Fatalf("XCFGSET s %q = %q; the model says accepted=%v", args, reply, ok)
		}
		s.shard.mu.Lock()
		got := s.shard.dbs[0].keys["s"].value.(*stream.Stream).Retention()
		s.shard.mu.Unlock()
		if got != want {
			t.Fatalf("XCFGSET s %q left %+v, the model %+v", args, got, want)
		}
	})
}
