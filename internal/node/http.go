package node

import (
	"net/http"
	"sync"

	"github.com/mqgo/mq/internal/metrics"
	"github.com/mqgo/mq/remoting"
)

// httpState is what the node serves over HTTP: its metrics, fed from its dispatchers from the
// start, and the handler built on first use.
type httpState struct {
	metrics *metrics.Metrics

	once    sync.Once
	handler http.Handler
}

// initMetrics builds the registry before any listener exists, so the dispatchers report every
// request from the first.
func (n *Node) initMetrics() {
	src := metrics.Sources{
		Broker:      n.Broker,
		ACLRefusals: n.ACLRefusals,
		Logger:      n.opts.Logger,
	}
	for _, ep := range n.servers {
		src.Listeners = append(src.Listeners, metrics.Listener{Role: ep.role, Conns: ep.srv.ConnCount})
	}
	n.http.metrics = metrics.New(src)
	for _, ep := range n.servers {
		ep.d.SetObserver(n.http.metrics.Observer())
	}
}

// Handler serves /metrics (Prometheus exposition format) and /healthz (200 once the node
// serves, 503 once it closes); package mq adds the dashboard.
func (n *Node) Handler() http.Handler {
	n.http.once.Do(func() {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", n.http.metrics.Handler())
		mux.HandleFunc("GET /healthz", n.serveHealth)
		n.http.handler = mux
	})
	return n.http.handler
}

func (n *Node) serveHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	select {
	case <-n.ready:
	default:
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("starting\n"))
		return
	}
	if n.closing.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("closing\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// SetRequestObserver replaces the metrics' observer on every listener (nil: none), for the
// benchmark that measures what observing costs a request.
func (n *Node) SetRequestObserver(o remoting.RequestObserver) {
	for _, ep := range n.servers {
		ep.d.SetObserver(o)
	}
}

// Credentials are what the node signs its requests with (Options.Credentials).
func (n *Node) Credentials() remoting.Credentials { return n.opts.Credentials }
