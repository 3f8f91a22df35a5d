package node

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mqgo/mq/internal/addon"
	"github.com/mqgo/mq/remoting"
)

// httpState is what the node serves over HTTP: its metrics (Options.HTTP.Metrics), fed from its
// dispatchers from the start, the handler built on first use, and the listener of
// Options.HTTP.Listen (health.go).
type httpState struct {
	metrics addon.Metrics // nil unless Options.HTTP.Metrics

	once    sync.Once
	handler http.Handler

	srv  *http.Server // nil without Options.HTTP.Listen
	addr string
	done chan error                   // Serve's result
	site atomic.Pointer[http.Handler] // SetSite's
}

// initMetrics builds the registry before any listener exists, so the dispatchers report every
// request from the first.
func (n *Node) initMetrics() {
	f, err := n.opts.metricsFactory()
	if err != nil {
		return // validate refused it; a zero Metrics is off
	}
	src := addon.MetricsSources{
		Broker:      n.Broker,
		ACLRefusals: n.ACLRefusals,
		Logger:      n.opts.Logger,
	}
	for _, ep := range n.servers {
		src.Listeners = append(src.Listeners, addon.MetricsListener{Role: ep.role, Conns: ep.srv.ConnCount})
	}
	n.http.metrics = f.NewMetrics(src)
	for _, ep := range n.servers {
		ep.d.SetObserver(n.http.metrics.Observer())
	}
}

// Handler serves /metrics (Prometheus exposition format; 404 saying how to turn them on
// without Options.HTTP.Metrics), /healthz (liveness: 200 until Close begins, 503 after) and
// /readyz (200 while ready, else 503 with the reason: NotReady); every other path goes to
// SetSite's handler, through which package mq adds the dashboard.
func (n *Node) Handler() http.Handler {
	n.http.once.Do(func() {
		mux := http.NewServeMux()
		if n.http.metrics != nil {
			mux.Handle("GET /metrics", n.http.metrics.Handler())
		} else {
			mux.HandleFunc("GET /metrics", serveMetricsOff)
		}
		mux.HandleFunc("GET /healthz", n.serveHealth)
		mux.HandleFunc("GET /readyz", n.serveReady)
		mux.HandleFunc("/", n.serveSite)
		n.http.handler = mux
	})
	return n.http.handler
}

// metricsOff is /metrics's answer on a node without Options.HTTP.Metrics.
const metricsOff = "metrics are off: set mq.Options.HTTP.Metrics to metrics.Prometheus() " +
	"(import github.com/mqgo/mq/metrics); mqnode turns them on\n"

func serveMetricsOff(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(metricsOff))
}

// SetRequestObserver replaces the metrics' observer on every listener (nil: none), for the
// benchmark that measures what observing costs a request.
func (n *Node) SetRequestObserver(o remoting.RequestObserver) {
	for _, ep := range n.servers {
		ep.d.SetObserver(o)
	}
}

// HTTPOptions are what the node's HTTP handler is built with beyond the node itself.
type HTTPOptions struct {
	// AllowedHosts are Options.HTTPAllowedHosts: the dashboard's names besides its listener's.
	AllowedHosts []string
}

// HTTPOptions are the settings of the node's HTTP handler (Options.HTTPAllowedHosts).
func (n *Node) HTTPOptions() HTTPOptions { return n.opts.httpOptions() }

// maxHTTPHostBytes is the longest DNS name, 253 bytes, and room for ":65535".
const maxHTTPHostBytes = 253 + 6

// checkHTTPHost accepts an allowed host as browsers send Host: a DNS name, an IPv4 address or
// an IPv6 one in brackets, each with an optional port; a bare IPv6 address is taken whole.
func checkHTTPHost(h string) error {
	h = strings.TrimSpace(h)
	if h == "" || len(h) > maxHTTPHostBytes {
		return fmt.Errorf("want a host name or address of 1 to %d bytes, with an optional :port", maxHTTPHostBytes)
	}
	if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return nil
	}
	name := h
	if host, port, err := net.SplitHostPort(h); err == nil {
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return fmt.Errorf("port %q: want 1 to 65535", port)
		}
		name = host
		if _, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil {
			return nil
		}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return fmt.Errorf("%q is neither a host name nor an IP address", name)
		}
	}
	if strings.Trim(name, ".") == "" {
		return fmt.Errorf("%q names no host", name)
	}
	return nil
}

// Credentials are what the node signs its requests with (Options.Security.Credentials).
func (n *Node) Credentials() remoting.Credentials { return n.opts.Security.Credentials }
