package acl

import (
	"net/netip"
	"strings"
	"testing"
)

func TestAddrPatternMatch(t *testing.T) {
	cases := []struct {
		pattern string
		match   []string
		miss    []string
	}{
		{"", nil, []string{"1.2.3.4", "::1", "inproc-7"}},
		{"   ", nil, []string{"1.2.3.4"}},
		{"*", []string{"1.2.3.4", "::1", "inproc-7"}, nil},
		{"*.*.*.*", []string{"1.2.3.4", "inproc-7"}, nil},
		{"*:*:*:*:*:*:*:*", []string{"fe80::1", "1.2.3.4"}, nil},
		{"192.168.0.1", []string{"192.168.0.1"}, []string{"192.168.0.2", "192.168.0.10", "inproc-7"}},
		{"192.168.0.1,192.168.0.3, 10.0.0.1", []string{"192.168.0.1", "192.168.0.3", "10.0.0.1"}, []string{"192.168.0.2"}},
		{"192.168.1.{1,2,3}", []string{"192.168.1.1", "192.168.1.3"}, []string{"192.168.1.4", "192.168.2.1"}},
		{"192.168.1.{1, 20 ,}", []string{"192.168.1.20"}, []string{"192.168.1.2"}},
		{"192.168.1.*", []string{"192.168.1.0", "192.168.1.255"}, []string{"192.168.2.1", "10.168.1.1"}},
		{"192.168.*.*", []string{"192.168.0.1", "192.168.255.7"}, []string{"192.169.0.1"}},
		{"10.*.*.*", []string{"10.1.2.3"}, []string{"11.1.2.3"}},
		{"192.168.1.1-100", []string{"192.168.1.1", "192.168.1.100", "192.168.1.50"},
			[]string{"192.168.1.0", "192.168.1.101", "192.168.2.50"}},
		{"192.168.1-10.*", []string{"192.168.1.7", "192.168.10.255"}, []string{"192.168.11.1", "192.168.0.1"}},
		{"192.168.1.5-5", []string{"192.168.1.5"}, []string{"192.168.1.6"}},
		{"192.168.1.0-0", []string{"192.168.1.0"}, []string{"192.168.1.1"}},
		{"::1", []string{"::1", "0:0:0:0:0:0:0:1"}, []string{"::2", "127.0.0.1"}},
		{"2001:DB8::1", []string{"2001:db8::1", "2001:0db8:0:0:0:0:0:1"}, []string{"2001:db8::2"}},
		{"::ffff:10.0.0.1", []string{"10.0.0.1", "::ffff:10.0.0.1"}, []string{"10.0.0.2"}},
		{"2001:db8::1,2001:db8::2", []string{"2001:db8::2"}, []string{"2001:db8::3"}},
		{"1:2:3:4:5:6:7:{8,9}", []string{"1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:9"}, []string{"1:2:3:4:5:6:7:a"}},
		{"2::ac5:78:1-200", []string{"2::ac5:78:1", "2:0:0:0:0:ac5:78:200"}, []string{"2::ac5:78:201", "2::ac5:79:1"}},
		{"2::ac5:78:*", []string{"2::ac5:78:ffff", "2::ac5:78:0"}, []string{"2::ac5:79:1", "2:0:0:0:ac5:78:0:1"}},
		{"2::ac5:78:1-200:*", []string{"2:0:0:0:ac5:78:1:ffff", "2:0:0:0:ac5:78:200:0"}, []string{"2:0:0:0:ac5:78:201:0"}},
		{"2:3:*", []string{"2:3::", "2:3:ffff:1::9"}, []string{"2:4::1"}},
		{"fe80::*", []string{"fe80::1", "fe80::ffff"}, []string{"fe80::1:1", "fe81::1"}},
	}
	for _, tc := range cases {
		p, err := compileAddrPattern(tc.pattern)
		if err != nil {
			t.Errorf("%q: %v", tc.pattern, err)
			continue
		}
		for _, s := range tc.match {
			if a, ok := peerAddr(s); !p.match(a, ok) {
				t.Errorf("%q does not match %s", tc.pattern, s)
			}
		}
		for _, s := range tc.miss {
			if a, ok := peerAddr(s); p.match(a, ok) {
				t.Errorf("%q matches %s", tc.pattern, s)
			}
		}
	}
}

func TestAddrPatternErrors(t *testing.T) {
	for _, s := range []string{
		"192.168.1", "192.168.1.256", "192.168.01.1", "1.2.3.4.5", "host.example",
		"192.168.1.{1,x}", "192.168.{1,2}", "192.168.1{1,2}", "{1.2.3.4}", "192.168.1.{}", "1.2.3.{4}{5}",
		"*.1.1.1", "1-10.*.*.*", "192.168.1-5.7", "192.*.1.*", "192.168.1.10-5", "192.168.1.-5", "192.168.1.5-",
		"192.168.1.1-300", "192.168.1.**", "192.168.1.+1-5",
		"fe80::1%eth0", "2::*:1", "2::1-2:3", "2::1-2:3:*", "2:*:*", "1-2:3", "2::1:2::3:*", "1:2:3:4:5:6:7:8:*",
		"2::1:g-h", "2::12345:*", "1:2:3:4:5:6:7::*", ",,", "1.2.3.4,,x",
	} {
		if _, err := compileAddrPattern(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestPeerAddr(t *testing.T) {
	cases := []struct {
		remote string
		want   string // "" for no address
	}{
		{"192.168.0.1:10911", "192.168.0.1"},
		{"192.168.0.1", "192.168.0.1"},
		{"[::1]:9876", "::1"},
		{"[fe80::1%eth0]:9876", "fe80::1"},
		{"[::ffff:10.1.2.3]:1", "10.1.2.3"},
		{"2001:db8::7", "2001:db8::7"},
		{"inproc-42", ""},
		{"pipe:3", ""},
		{"[::1", ""},
		{"", ""},
		{"300.1.1.1:80", ""},
	}
	for _, tc := range cases {
		a, ok := peerAddr(tc.remote)
		got := ""
		if ok {
			got = a.String()
		}
		if got != tc.want {
			t.Errorf("peerAddr(%q) = %q, want %q", tc.remote, got, tc.want)
		}
	}
}

// TestPeerAddrNoAllocs: white lists are matched on every request, so parsing the addresses
// transports give (and made-up ones that are no IP) must not allocate.
func TestPeerAddrNoAllocs(t *testing.T) {
	for _, remote := range []string{"192.168.0.1:10911", "[2001:db8::7]:10911", "inproc-42"} {
		if n := testing.AllocsPerRun(100, func() { peerAddr(remote) }); n != 0 {
			t.Errorf("peerAddr(%q): %v allocs", remote, n)
		}
	}
}

// FuzzAddrPattern: any pattern either fails to compile or matches any address without
// panicking, and a pattern naming one address matches that address.
func FuzzAddrPattern(f *testing.F) {
	for _, s := range []string{"*", "192.168.1.*", "192.168.1.1-100", "2::ac5:78:1-200:*", "fe80::*",
		"192.168.1.{1,2}", "::1,1.2.3.4", "1:2:3:4:5:6:7:{8,9}", "10.*.*.*"} {
		f.Add(s, "192.168.1.7:10911")
	}
	f.Fuzz(func(t *testing.T, pattern, remote string) {
		p, err := compileAddrPattern(pattern)
		if err != nil {
			if strings.TrimSpace(pattern) == "" {
				t.Fatalf("blank pattern refused: %v", err)
			}
			return
		}
		a, ok := peerAddr(remote)
		p.match(a, ok)
		if one, err := netip.ParseAddr(strings.TrimSpace(pattern)); err == nil && one.Zone() == "" {
			if !p.match(one.Unmap(), true) {
				t.Fatalf("%q does not match itself", pattern)
			}
		}
	})
}
