package dashboard

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// What keeps other web sites out of the API. A page of another origin cannot read the API's
// answers (no CORS headers are ever sent), but it can still send requests, and with DNS
// rebinding (its own name, re-pointed at this node's address) its requests even count as
// same-origin in the browser. Two checks close that:
//
//   - every /api/ request must name in Host one of the node's own addresses or a name it was
//     given (Options.AllowedHosts): a rebinding page's requests name the attacker's domain;
//   - every request that changes something must carry the token the page fetched from
//     GET /api/token in the X-MQ-Token header, with a JSON body and, when the browser sends
//     one, an Origin naming the same host. Another site can neither read the token nor set the
//     header without a CORS preflight this server never grants.

// TokenHeader carries the page's token on every request that changes something.
const TokenHeader = "X-MQ-Token"

// tokenBytes is the token's entropy: 256 bits.
const tokenBytes = 32

// newToken is a fresh random token. crypto/rand does not fail on the platforms Go supports
// (it crashes the program rather than return an error).
func newToken() string {
	b := make([]byte, tokenBytes)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// hostRule is one allowed name: any port when port is "".
type hostRule struct {
	name, port string
}

// parseHostRules reads Options.AllowedHosts: "name" or "name:port", IPv6 in brackets with a
// port. Entries that name nothing are skipped; the node validated them (internal/node).
func parseHostRules(hosts []string) []hostRule {
	var rules []hostRule
	for _, h := range hosts {
		name, port := splitHost(strings.TrimSpace(h))
		if name != "" {
			rules = append(rules, hostRule{name: name, port: port})
		}
	}
	return rules
}

// splitHost splits a Host header or an allowed host into a normalized name (lower case, no
// brackets, no trailing dot) and its port, "" when it has none.
func splitHost(h string) (name, port string) {
	if host, p, err := net.SplitHostPort(h); err == nil {
		h, port = host, p
	}
	h = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), ".")
	return strings.ToLower(h), port
}

// loopbackNames are the names of this machine a browser on it may use for a loopback listener.
var loopbackNames = map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}

// hostAllowed reports whether r's Host is one this server answers under: the address the
// request reached (the listener's host and port as bound; for a listener on every interface,
// the interface the client dialed), a loopback name with that port when the listener is on
// loopback, or one of the allowed hosts.
func (s *Server) hostAllowed(r *http.Request) bool {
	name, port := splitHost(r.Host)
	if name == "" {
		return false
	}
	for _, rule := range s.allowed {
		if rule.name == name && (rule.port == "" || rule.port == port) {
			return true
		}
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	la, err := netip.ParseAddrPort(local.String())
	if err != nil {
		return false
	}
	if port == "" {
		port = "80"
		if r.TLS != nil {
			port = "443"
		}
	}
	if port != strconv.Itoa(int(la.Port())) {
		return false
	}
	lip := la.Addr().Unmap().WithZone("")
	if ip, err := netip.ParseAddr(name); err == nil && ip.Unmap().WithZone("") == lip {
		return true
	}
	return lip.IsLoopback() && loopbackNames[name]
}

// safeMethod reports the methods that change nothing.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// guardAPI answers the /api/ requests another site could have sent and reports whether it did:
// a foreign Host, and for a request that changes something, a body that is not JSON, a foreign
// Origin or a missing or wrong token.
func (s *Server) guardAPI(w http.ResponseWriter, r *http.Request) bool {
	if !s.hostAllowed(r) {
		writeError(w, http.StatusForbidden, "Host "+quoteHost(r.Host)+" is not this node's: add it to the allowed hosts"+
			" (mqnode -http-allowed-hosts, mq.Options.HTTPAllowedHosts)")
		return true
	}
	if safeMethod(r.Method) {
		return false
	}
	// A cross-origin form cannot send application/json without a preflight.
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "want Content-Type application/json")
		return true
	}
	// Browsers name the origin of every cross-origin POST.
	if origin := r.Header.Get("Origin"); origin != "" {
		if u, err := url.Parse(origin); err != nil || !strings.EqualFold(u.Host, r.Host) {
			writeError(w, http.StatusForbidden, "cross-origin request")
			return true
		}
	}
	token := r.Header.Get(TokenHeader)
	if token == "" {
		writeError(w, http.StatusForbidden, "no "+TokenHeader+" header: get the token from GET /api/token")
		return true
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(s.token)) != 1 {
		writeError(w, http.StatusForbidden, "wrong "+TokenHeader+": get the token from GET /api/token")
		return true
	}
	return false
}

// quoteHost quotes at most 64 bytes of a Host header for an error text.
func quoteHost(h string) string { return strconv.Quote(truncate(h, 64)) }

type tokenBody struct {
	Token  string `json:"token"`
	Header string `json:"header"`
}

// tokenAnswer serves GET /api/token: the token the page sends back on every write. Only a page
// of this node's own origin can read the answer.
func (s *Server) tokenAnswer(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, tokenBody{Token: s.token, Header: TokenHeader})
}
