package tests

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServedReplyLargerThanSocket: a push that serves a blocked client
// whose reply is far larger than a socket buffer returns at once, even
// though that client is not reading yet; the served client then gets the
// whole reply, followed in order by the replies of what it pipelined.
func TestServedReplyLargerThanSocket(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	admin := s.Raw(t)
	w := s.Raw(t)
	const n, size = 800, 16 << 10 // 12.5 MiB of reply
	w.Send(Encode("BLMPOP", "0", "1", "big", "LEFT", "COUNT", strconv.Itoa(n)) + Encode("PING"))
	ltWaitBlocked(t, admin, 1)

	push := []string{"RPUSH", "big"}
	for i := range n {
		push = append(push, strconv.Itoa(i)+":"+strings.Repeat("x", size))
	}
	start := time.Now()
	admin.Send(Encode(push...))
	if r, err := admin.TryRead(10 * time.Second); err != nil || r.Int != n {
		t.Fatalf("RPUSH of %d elements = %v, %v", n, r, err)
	}
	// The pusher must not wait for the served client to read; 10 s is a
	// bound for a stall, not a timing claim.
	t.Logf("RPUSH answered after %v with the served client not reading", time.Since(start))

	r := w.Read()
	if r.Type != '*' || len(r.Elems) != 2 || r.Elems[0].Str != "big" || len(r.Elems[1].Elems) != n {
		t.Fatalf("BLMPOP reply: type %c, %d elems", r.Type, len(r.Elems))
	}
	for i, e := range r.Elems[1].Elems {
		if want := strconv.Itoa(i) + ":"; !strings.HasPrefix(e.Str, want) || len(e.Str) != len(want)+size {
			t.Fatalf("element %d: %d bytes starting %q", i, len(e.Str), e.Str[:min(len(e.Str), 12)])
		}
	}
	if r := w.Read(); r.String() != `+"PONG"` {
		t.Fatalf("after BLMPOP: %s, want PONG", r)
	}
	lbDo(t, admin, 2, ":0", "EXISTS", "big")
}
