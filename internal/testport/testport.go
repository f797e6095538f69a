// Package testport picks loopback ports for tests that start servers.
package testport

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Free returns a loopback TCP port nobody listens on. It picks one below
// the kernel's range of ephemeral ports when it can: a port from that
// range may be taken by any outgoing connection (another test's client)
// between this check and the server's bind, or while a killed node is
// down and waits to restart on the same ports.
func Free() (int, error) {
	if low := ephemeralLow(); low > 12000 {
		for range 200 {
			port := 10000 + rand.IntN(low-10000)
			if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				ln.Close()
				return port, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralLow is the first port of Linux's ephemeral range; 0 when it
// cannot be read (another system).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0
	}
	low, _ := strconv.Atoi(fields[0])
	return low
}
