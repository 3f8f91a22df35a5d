package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestAddrsAreDistinctFreeAndBelowTheEphemeralRange(t *testing.T) {
	top := ephemeralStart()
	addrs, err := Addrs(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			t.Fatalf("%s given twice in %v", a, addrs)
		}
		seen[a] = true
		_, p, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		if top-lowest >= 10 && (port < lowest || port >= top) {
			t.Fatalf("port %d outside [%d, %d)", port, lowest, top)
		}
		l, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("%s is not free: %v", a, err)
		}
		l.Close()
	}
}
