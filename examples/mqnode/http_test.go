package main

import (
	"slices"
	"testing"
)

// -http's host is allowed when it is a name; an address needs no entry, the dashboard answers
// under the one it is reached at.
func TestHTTPAllowedHosts(t *testing.T) {
	for _, c := range []struct {
		listen, list string
		want         []string
	}{
		{"127.0.0.1:8080", "", nil},
		{"0.0.0.0:8080", "a.example, b.example:443 ,", []string{"a.example", "b.example:443"}},
		{"[::1]:0", "", nil},
		{"mq.internal:8080", "", []string{"mq.internal:8080"}},
		{"mq.internal:0", "x.example", []string{"x.example", "mq.internal"}},
		{":8080", "", nil},
		{"", "", nil},
	} {
		if got := httpAllowedHosts(c.listen, c.list); !slices.Equal(got, c.want) {
			t.Errorf("httpAllowedHosts(%q, %q) = %q, want %q", c.listen, c.list, got, c.want)
		}
	}
}
