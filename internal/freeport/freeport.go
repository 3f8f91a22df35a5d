// Package freeport finds loopback ports for listeners whose address must be known before they
// bind: a Raft peer's (every member lists every address before the first starts), or a node's
// that a test restarts on the same address.
//
// A port probed with ":0" and released comes from the kernel's ephemeral range, from which the
// kernel also hands out the local port of every outgoing connection and of every other ":0"
// bind on the machine: with test packages running side by side, one of those can take the port
// before its listener binds it ("address already in use"). The ports here are picked at random
// below that range, where neither comes, and probed free; only another explicit pick of the
// same port in the same instant can still collide.
package freeport

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

const (
	// lowest is the bottom of the range picked from: above the well-known and most registered
	// service ports.
	lowest = 10000
	// defaultEphemeralStart is Linux's default ip_local_port_range start, used when the file
	// cannot be read.
	defaultEphemeralStart = 32768
	// attempts bounds the probes for one address.
	attempts = 200
)

// Addrs returns n distinct "127.0.0.1:port" addresses that were free a moment ago, outside the
// ephemeral port range.
func Addrs(n int) ([]string, error) {
	top := ephemeralStart()
	if top-lowest < 2*n {
		return probeEphemeral(n)
	}
	var out []string
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for len(out) < n {
		l, err := listenBelow(top)
		if err != nil {
			return nil, err
		}
		held = append(held, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}

// Addr returns one address as Addrs does.
func Addr() (string, error) {
	a, err := Addrs(1)
	if err != nil {
		return "", err
	}
	return a[0], nil
}

func listenBelow(top int) (net.Listener, error) {
	var last error
	for range attempts {
		port := lowest + rand.IntN(top-lowest)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			return l, nil
		}
		last = err
	}
	return nil, fmt.Errorf("freeport: no free port below %d after %d tries: %w", top, attempts, last)
}

// probeEphemeral is the fallback when the range below the ephemeral ports is too small.
func probeEphemeral(n int) ([]string, error) {
	var out []string
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("freeport: %w", err)
		}
		held = append(held, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}

// ephemeralStart is the first port of the kernel's ephemeral range.
func ephemeralStart() int {
	f, err := os.Open("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultEphemeralStart
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return defaultEphemeralStart
	}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return defaultEphemeralStart
	}
	v, err := strconv.Atoi(fields[0])
	if err != nil || v <= 0 || v > 65535 {
		return defaultEphemeralStart
	}
	return v
}
