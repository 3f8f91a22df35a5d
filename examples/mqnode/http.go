package main

import (
	"net"
	"net/netip"
	"strings"
)

// httpAllowedHosts are the names the dashboard answers under besides the address a request
// reached: those of -http-allowed-hosts, and -http's host when it is a name (with its port,
// unless that is 0). An address needs no entry: the dashboard answers under the one it was
// reached at.
func httpAllowedHosts(listen, list string) []string {
	var hosts []string
	for h := range strings.SplitSeq(list, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil || host == "" {
		return hosts
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return hosts
	}
	if port != "0" {
		host = net.JoinHostPort(host, port)
	}
	return append(hosts, host)
}
