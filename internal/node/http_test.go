package node

import (
	"strings"
	"testing"

	"github.com/mqgo/mq/config"
)

// Allowed hosts are what browsers send in Host; anything else fails Start with the entry named.
func TestHTTPAllowedHostsValidated(t *testing.T) {
	for h, ok := range map[string]bool{
		"mq.example.com": true, "mq.example.com:8443": true, " proxy.internal ": true, "localhost": true,
		"10.0.0.5": true, "10.0.0.5:8080": true, "[2001:db8::1]:443": true, "2001:db8::1": true, "[::1]": true,
		"under_score.example": true, "trailing.dot.": true,
		"": false, "   ": false, "a/b": false, "http://mq.example.com": false, "mq.example.com:0": false,
		"mq.example.com:65536": false, "mq.example.com:http": false, "user@host": false, "*.example.com": false,
		".": false, "host name": false, strings.Repeat("a", 260): false, "ex\xffample": false,
	} {
		err := Options{Options: config.Options{Listen: "127.0.0.1:0", HTTP: config.HTTP{AllowedHosts: []string{h}}}}.withDefaults().validate()
		if ok && err != nil {
			t.Errorf("%q refused: %v", h, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "HTTP.AllowedHosts[0]")) {
			t.Errorf("%q: %v, want an error naming HTTP.AllowedHosts[0]", h, err)
		}
	}
}
