package mq

import (
	"errors"
	"net/http"
	"sync"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/internal/dashboard"
	"github.com/mqgo/mq/remoting"
)

// webState is what Handler builds on first use: the dashboard and the admin client it reads
// the cluster with, over a transport that reaches this node in process. Close releases them.
type webState struct {
	mu      sync.Mutex
	handler http.Handler
	admin   *admin.Admin
	tr      remoting.Transport
	closed  bool
}

// Handler serves the node over HTTP: /metrics in the Prometheus exposition format (the node's
// own registry, not the global one) when Options.HTTP.Metrics is set, 404 saying how to turn it on
// otherwise, /healthz (200 once serving, 503 once closing) and the
// dashboard at /, which reads the whole cluster through the node's name servers, signing with
// Options.Security.Credentials when ACL is on. It has no authentication of its own: mount it behind the
// embedding application's, or serve it on a trusted network only. mqnode serves it with -http.
//
// The dashboard's API answers only requests whose Host names the address they reached (the
// listener's, for a server on every interface the one dialed), localhost with that port when
// it is a loopback one, or a name in Options.HTTP.AllowedHosts; behind an application's mux or
// a reverse proxy, list the names browsers use there. Writes (offset resets) also need the
// token the page fetches from GET /api/token, sent back in X-MQ-Token.
func (n *Node) Handler() http.Handler {
	w := &n.web
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.handler != nil {
		return w.handler
	}
	mux := http.NewServeMux()
	own := n.n.Handler()
	mux.Handle("GET /metrics", own)
	mux.Handle("GET /healthz", own)
	if !w.closed {
		tr := n.n.NewTransport()
		a, err := admin.New(admin.Options{NameServers: n.n.NameServers(), Transport: tr,
			Credentials: n.n.Credentials(), Logger: n.logger})
		if err != nil {
			// A node always has name servers (its own or Options.NameServers); without them
			// there is no cluster to show, and the page says so.
			tr.Close()
			mux.HandleFunc("/", func(rw http.ResponseWriter, _ *http.Request) {
				http.Error(rw, "dashboard: "+err.Error(), http.StatusServiceUnavailable)
			})
		} else {
			w.admin, w.tr = a, tr
			mux.Handle("/", dashboard.Handler(a, dashboard.Options{Logger: n.logger,
				AllowedHosts: n.n.HTTPOptions().AllowedHosts}))
		}
	}
	w.handler = mux
	return mux
}

// close releases what Handler built; a Handler asked for later serves /metrics and /healthz only.
func (w *webState) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	var err error
	if w.admin != nil {
		err = w.admin.Close()
	}
	if w.tr != nil {
		err = errors.Join(err, w.tr.Close())
	}
	return err
}
