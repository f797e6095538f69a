package server

import "testing"

// TestLookupDoesNotAllocate: finding a command runs for every request, so
// it must not make garbage (a heap allocation here showed up as a third of
// all allocations under XADD load).
func TestLookupDoesNotAllocate(t *testing.T) {
	s := &Server{commands: commandTable()}
	argv := [][]byte{[]byte("XADD"), []byte("k"), []byte("*"), []byte("f"), []byte("v")}
	sub := [][]byte{[]byte("Client"), []byte("GETNAME")}
	if n := testing.AllocsPerRun(100, func() {
		if c, _ := s.lookupCommand(argv); c == nil {
			t.Fatal("XADD not found")
		}
		if c, _ := s.lookupCommand(sub); c == nil {
			t.Fatal("CLIENT GETNAME not found")
		}
	}); n != 0 {
		t.Fatalf("lookupCommand allocates %v times per call", n)
	}
}
