package config

import (
	"fmt"
	"net"
	"net/netip"
)

// AdvertisedAddr is the "ip:port" a listener bound to listen is known by, for the broker's own
// address and a master's HA address alike: ip (Broker.IP, RocketMQ's brokerIP1, or the HA
// address's brokerIP2), else the listener's host, else, for a wildcard listener, this machine's
// first non-loopback IPv4 address.
func AdvertisedAddr(listen, ip string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("listener address %q: %w", listen, err)
	}
	if ip == "" {
		ip = host
		if a, err := netip.ParseAddr(host); err != nil || a.IsUnspecified() {
			ip = firstIPv4()
		}
	}
	return net.JoinHostPort(ip, port), nil
}

// firstIPv4 is this machine's first non-loopback IPv4 address, or 127.0.0.1 without one.
func firstIPv4() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}
