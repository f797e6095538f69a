package server

import (
	"bytes"
	"testing"
)

// cloneArgv's copy shares nothing with the arguments it copied (a
// client's read buffer is reused for its next command while the copy
// waits in a Raft entry), and growing one argument of the copy never
// overwrites the next, though they share one array.
func TestCloneArgvOwnsItsMemory(t *testing.T) {
	argv := [][]byte{[]byte("XADD"), []byte("k"), {}, nil, []byte("value")}
	got := cloneArgv(argv)
	for i := range argv {
		if !bytes.Equal(got[i], argv[i]) || (got[i] == nil) != (argv[i] == nil) {
			t.Fatalf("argument %d = %q (nil %v), want %q (nil %v)", i, got[i], got[i] == nil, argv[i], argv[i] == nil)
		}
	}
	argv[0][0], argv[4][0] = 'x', 'x'
	if string(got[0]) != "XADD" || string(got[4]) != "value" {
		t.Fatalf("the copy changed with the source: %q", got)
	}
	_ = append(got[1], "zz"...) // fits in the shared array if the cap were not cut
	if string(got[4]) != "value" || string(got[0]) != "XADD" {
		t.Fatalf("appending to one argument changed another: %q", got)
	}
}
