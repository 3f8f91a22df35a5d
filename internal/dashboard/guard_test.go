package dashboard_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mqgo/mq/internal/dashboard"
	"github.com/rs/zerolog"
)

// call sends method path to base with Host host (the URL's when empty) and the headers given
// (name, value pairs), and returns the status and the error text of a JSON error answer.
func call(t *testing.T, base, method, path, host, body string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a errorAnswer
	_ = json.NewDecoder(resp.Body).Decode(&a)
	return resp.StatusCode, a.Error
}

// DNS rebinding: a page of another site whose name now resolves to the node sends requests
// naming that site in Host. None of the API answers it, the token included, and no write
// goes through, whatever Origin and token it sends.
func TestForeignHostRefused(t *testing.T) {
	e := start(t)
	token := e.token(t)
	port := mustURL(t, e.url).Port()
	evil := "rebind.evil.example:" + port
	for _, path := range []string{"/api/overview", "/api/topics", "/api/groups", "/api/token", "/api/message?topic=T&key=k", "/api/nope",
		"/api/ha", "/api/producers?group=g&topic=T", "/api/browse?topic=T&begin=0", "/api/dlq", "/api/dlq?group=g", "/api/trace?id=AB"} {
		if st, msg := call(t, e.url, "GET", path, evil, ""); st != http.StatusForbidden || !strings.Contains(msg, `Host "rebind.evil.example:`) {
			t.Errorf("GET %s with a foreign Host: %d %q", path, st, msg)
		}
	}
	for path, body := range map[string]string{"/api/reset": `{"group":"g","topic":"T","timestamp":0}`,
		"/api/brokers/clear": `{"all":true}`, "/api/dlq/resend": `{"group":"g","msgId":"AB"}`} {
		st, msg := call(t, e.url, "POST", path, evil, body,
			"Content-Type", "application/json", "Origin", "http://"+evil, dashboard.TokenHeader, token)
		if st != http.StatusForbidden || !strings.Contains(msg, "allowed hosts") {
			t.Errorf("POST %s with a foreign Host and Origin: %d %q", path, st, msg)
		}
	}
	// The page itself holds nothing: a foreign Host still loads it, and its API calls fail.
	if st, _ := call(t, e.url, "GET", "/", evil, ""); st != http.StatusOK {
		t.Errorf("GET / with a foreign Host: %d", st)
	}
}

// The address a request reached, and loopback names on its port for a loopback listener,
// are the node's own.
func TestOwnHostsAllowed(t *testing.T) {
	e := start(t)
	port := mustURL(t, e.url).Port()
	for host, want := range map[string]int{
		"127.0.0.1:" + port:  http.StatusOK,
		"localhost:" + port:  http.StatusOK,
		"LOCALHOST.:" + port: http.StatusOK,
		"[::1]:" + port:      http.StatusOK,
		"localhost:1":        http.StatusForbidden,
		"127.0.0.1":          http.StatusForbidden, // port 80
		"127.0.0.2:" + port:  http.StatusForbidden,
	} {
		if st, msg := call(t, e.url, "GET", "/api/token", host, ""); st != want {
			t.Errorf("Host %q: %d %q, want %d", host, st, msg, want)
		}
	}
}

// Names given in Options.AllowedHosts are answered under, with any port or the one given.
func TestAllowedHosts(t *testing.T) {
	e := start(t)
	l := zerolog.Nop()
	srv := httptest.NewServer(serve(t, e.adm, dashboard.Options{Logger: &l,
		AllowedHosts: []string{"mq.example.com", " Proxy.Example:8443 ", "[2001:db8::1]:443", "", "mq.example.com."}}))
	t.Cleanup(srv.Close)
	for host, want := range map[string]int{
		"mq.example.com":           http.StatusOK,
		"MQ.Example.com:1234":      http.StatusOK,
		"proxy.example:8443":       http.StatusOK,
		"[2001:db8::1]:443":        http.StatusOK,
		"proxy.example:9000":       http.StatusForbidden,
		"proxy.example":            http.StatusForbidden,
		"evil.mq.example.com":      http.StatusForbidden,
		"mq.example.com.evil.test": http.StatusForbidden,
		"[2001:db8::1]:80":         http.StatusForbidden,
	} {
		if st, msg := call(t, srv.URL, "GET", "/api/token", host, ""); st != want {
			t.Errorf("Host %q: %d %q, want %d", host, st, msg, want)
		}
	}
}

// A handler called without a listener (no local address in the request) answers only the
// names it was given.
func TestNoListenerAddress(t *testing.T) {
	e := start(t)
	h := serve(t, e.adm, dashboard.Options{AllowedHosts: []string{"ops.example"}})
	for host, want := range map[string]int{"127.0.0.1:80": http.StatusForbidden, "": http.StatusForbidden, "ops.example": http.StatusOK} {
		req := httptest.NewRequest("GET", "/api/token", nil)
		req.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("Host %q without a listener: %d, want %d", host, w.Code, want)
		}
	}
}

// A write (an offset reset, clearing down brokers, re-sending a dead letter) needs the token
// of this handler, a JSON body and no foreign Origin; with all three it reaches the handler,
// which then judges the body.
func TestWritesNeedTheToken(t *testing.T) {
	e := start(t)
	token := e.token(t)
	own := "http://" + mustURL(t, e.url).Host
	bad := `{` // the handler's 400 shows the guard let the request through
	for _, c := range []struct {
		name    string
		headers []string
		status  int
		says    string
	}{
		{"no token", []string{"Content-Type", "application/json"}, 403, "no X-MQ-Token header"},
		{"wrong token", []string{"Content-Type", "application/json", dashboard.TokenHeader, strings.Repeat("0", 64)}, 403, "wrong X-MQ-Token"},
		{"token of a prefix", []string{"Content-Type", "application/json", dashboard.TokenHeader, token[:32]}, 403, "wrong X-MQ-Token"},
		{"not JSON", []string{"Content-Type", "text/plain", dashboard.TokenHeader, token}, 415, "application/json"},
		{"form", []string{"Content-Type", "application/x-www-form-urlencoded", dashboard.TokenHeader, token}, 415, "application/json"},
		{"foreign origin", []string{"Content-Type", "application/json", "Origin", "http://evil.example", dashboard.TokenHeader, token}, 403, "cross-origin"},
		{"null origin", []string{"Content-Type", "application/json", "Origin", "null", dashboard.TokenHeader, token}, 403, "cross-origin"},
		{"own origin", []string{"Content-Type", "application/json", "Origin", own, dashboard.TokenHeader, token}, 400, "request"},
		{"no origin (a tool)", []string{"Content-Type", "application/json; charset=utf-8", dashboard.TokenHeader, token}, 400, "request"},
	} {
		for _, path := range []string{"/api/reset", "/api/brokers/clear", "/api/dlq/resend"} {
			st, msg := call(t, e.url, "POST", path, "", bad, c.headers...)
			if st != c.status || !strings.Contains(msg, c.says) {
				t.Errorf("%s %s: %d %q, want %d saying %q", path, c.name, st, msg, c.status, c.says)
			}
		}
	}
	// Every handler makes its own token.
	other := httptest.NewServer(serve(t, e.adm, dashboard.Options{}))
	t.Cleanup(other.Close)
	if st, msg := call(t, other.URL, "POST", "/api/reset", "", bad, "Content-Type", "application/json", dashboard.TokenHeader, token); st != 403 {
		t.Errorf("another handler's token: %d %q", st, msg)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
