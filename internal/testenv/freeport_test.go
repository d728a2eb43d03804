package testenv

import (
	"net"
	"strconv"
	"testing"
)

// FreePort's ports are free to bind, distinct, and, where the kernel's
// range is known, below it (no port-0 listener or outgoing connection can
// take them meanwhile).
func TestFreePortBelowTheKernelsRange(t *testing.T) {
	start := ephemeralStart()
	seen := map[int]bool{}
	for range 20 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d returned twice", p)
		}
		seen[p] = true
		if start > minFreePort && (p < minFreePort || p >= start) {
			t.Fatalf("port %d, want one in [%d, %d)", p, minFreePort, start)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		l.Close()
	}
}
