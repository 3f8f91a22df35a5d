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
	mu     sync.Mutex
	built  bool
	admin  *admin.Admin
	tr     remoting.Transport
	dash   *dashboard.Server
	secret string // Options.Security.ClusterSecret, which controllers want proven
	closed bool
}

// Handler serves the node over HTTP: /metrics in the Prometheus exposition format (the node's
// own registry, not the global one) when Options.HTTP.Metrics is set, 404 saying how to turn it on
// otherwise, /healthz (liveness: 200 until Close begins, 503 "closing" after), /readyz
// (readiness: 200 "ready", or 503 with the reason while the node starts or closes, while a
// slave has no connection to its master, while its broker restarts for a role change, and
// while the store refuses writes for disk space) and the dashboard at /, which reads the whole
// cluster through the node's name servers, signing with Options.Security.Credentials when ACL
// is on and proving Options.Security.ClusterSecret when set (the controllers' codes want it for
// the HA view). The first call starts the dashboard's sampling of the cluster (one goroutine,
// every 2 s, stopped by Close), which keeps the throughput history and the brokers that went
// down for pages opened later. It has no authentication of its own: mount it behind the embedding application's, or
// serve it on a trusted network only. Options.HTTP.Listen (mqnode -http) serves it from the
// start of StartNode to the end of Close; mounted in an application's own server it answers
// from when the application mounts it.
//
// The dashboard's API answers only requests whose Host names the address they reached (the
// listener's, for a server on every interface the one dialed), localhost with that port when
// it is a loopback one, or a name in Options.HTTP.AllowedHosts; behind an application's mux or
// a reverse proxy, list the names browsers use there. Writes (offset resets, clearing down
// brokers, re-sending dead letters) also need the token the page fetches from GET /api/token,
// sent back in X-MQ-Token.
func (n *Node) Handler() http.Handler {
	w := &n.web
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.built || w.closed {
		return n.n.Handler()
	}
	w.built = true
	tr := n.n.NewTransport()
	a, err := admin.New(admin.Options{NameServers: n.n.NameServers(), Transport: tr,
		Credentials: n.n.Credentials(), ClusterSecret: w.secret, Logger: n.logger})
	if err != nil {
		// A node always has name servers (its own or Options.NameServers); without them
		// there is no cluster to show, and the page says so.
		tr.Close()
		n.n.SetSite(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
			http.Error(rw, "dashboard: "+err.Error(), http.StatusServiceUnavailable)
		}))
	} else {
		w.admin, w.tr = a, tr
		w.dash = dashboard.New(a, dashboard.Options{Logger: n.logger, AllowedHosts: n.n.HTTPOptions().AllowedHosts})
		n.n.SetSite(w.dash)
	}
	return n.n.Handler()
}

// HTTPAddr is the bound address of Options.HTTP.Listen, or "" when the node serves no HTTP of
// its own.
func (n *Node) HTTPAddr() string { return n.n.HTTPAddr() }

// stopSampling ends the dashboard's sampling of the cluster, before the node closes: the page
// still answers while the node drains, sampling on demand.
func (w *webState) stopSampling() {
	w.mu.Lock()
	dash := w.dash
	w.mu.Unlock()
	if dash != nil {
		_ = dash.Close() // it only stops a goroutine
	}
}

// close releases what Handler built; a Handler asked for later serves /metrics, /healthz and /readyz only.
func (w *webState) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.dash != nil {
		_ = w.dash.Close()
	}
	var err error
	if w.admin != nil {
		err = w.admin.Close()
	}
	if w.tr != nil {
		err = errors.Join(err, w.tr.Close())
	}
	return err
}
