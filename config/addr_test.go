package config

import (
	"net/netip"
	"testing"
)

// TestAdvertisedAddr: the configured IP wins, then the listener's host; a wildcard listener is
// advertised under an address a client can dial, never the wildcard itself.
func TestAdvertisedAddr(t *testing.T) {
	for _, c := range []struct{ listen, ip, want string }{
		{"127.0.0.1:10911", "", "127.0.0.1:10911"},
		{"127.0.0.1:10911", "10.0.0.5", "10.0.0.5:10911"},
		{"0.0.0.0:10912", "192.168.1.9", "192.168.1.9:10912"},
	} {
		if got, err := AdvertisedAddr(c.listen, c.ip); err != nil || got != c.want {
			t.Errorf("AdvertisedAddr(%q, %q) = %q, %v; want %q", c.listen, c.ip, got, err, c.want)
		}
	}
	for _, wildcard := range []string{"0.0.0.0:10911", "[::]:10911", ":10911"} {
		got, err := AdvertisedAddr(wildcard, "")
		if err != nil {
			t.Fatalf("AdvertisedAddr(%q): %v", wildcard, err)
		}
		ap, err := netip.ParseAddrPort(got)
		if err != nil || ap.Addr().IsUnspecified() || !ap.Addr().Is4() || ap.Port() != 10911 {
			t.Errorf("AdvertisedAddr(%q) = %q, want a dialable IPv4 address on port 10911", wildcard, got)
		}
	}
	if got, err := AdvertisedAddr("nope", ""); err == nil {
		t.Errorf("AdvertisedAddr(%q) = %q, want an error", "nope", got)
	}
}
