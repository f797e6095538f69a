package testport

import (
	"net"
	"strconv"
	"testing"
)

func TestFreeIsBindableAndBelowTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	for range 20 {
		port, err := Free()
		if err != nil {
			t.Fatal(err)
		}
		if low > 12000 && (port < 10000 || port >= low) {
			t.Fatalf("port %d: want it in [10000, %d)", port, low)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", port, err)
		}
		ln.Close()
	}
}
