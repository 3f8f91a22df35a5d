package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/mqgo/mq/internal/broker/ha"
	"github.com/mqgo/mq/storage"
)

// httpShutdownTimeout bounds how long Close waits for HTTP requests in flight (a dashboard
// page reading the cluster); the listener itself stops at once.
const httpShutdownTimeout = 5 * time.Second

// httpReadHeaderTimeout bounds a request's headers, so a client that never finishes them does
// not hold a connection for ever.
const httpReadHeaderTimeout = 10 * time.Second

// listenHTTP binds Options.HTTP.Listen before anything else of the node starts, so probes get
// an answer (503 starting) for the whole recovery, and serves Handler until closeHTTP.
func (n *Node) listenHTTP() error {
	if n.opts.HTTP.Listen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", n.opts.HTTP.Listen)
	if err != nil {
		return fmt.Errorf("mq: HTTP.Listen: %w", err)
	}
	n.http.srv = &http.Server{Handler: n.Handler(), ReadHeaderTimeout: httpReadHeaderTimeout}
	n.http.addr = ln.Addr().String()
	n.http.done = make(chan error, 1)
	go func() {
		err := n.http.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		n.http.done <- err
	}()
	n.log.Info().Str("role", "http").Str("addr", n.http.addr).Msg("serving")
	return nil
}

// closeHTTP stops the listener last of all, once the rest of the node has closed, and waits
// for its goroutine.
func (n *Node) closeHTTP() error {
	if n.http.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
	defer cancel()
	err := n.http.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = n.http.srv.Close() // requests still running after the grace period are cut
	}
	if err := errors.Join(err, <-n.http.done); err != nil {
		return fmt.Errorf("mq: HTTP listener: %w", err)
	}
	return nil
}

// HTTPAddr is the bound address of Options.HTTP.Listen, or "" when the node serves no HTTP.
func (n *Node) HTTPAddr() string { return n.http.addr }

// SetSite makes the node's HTTP listener serve h for every path Handler does not (package mq
// installs its dashboard once StartNode returns). Before, those paths answer 503 while the
// node starts and 404 after.
func (n *Node) SetSite(h http.Handler) { n.http.site.Store(&h) }

func (n *Node) serveSite(w http.ResponseWriter, r *http.Request) {
	if h := n.http.site.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	if n.started() && !n.closing.Load() {
		http.NotFound(w, r)
		return
	}
	plain(w, http.StatusServiceUnavailable, n.lifecycle()+"\n")
}

// started reports whether Start has finished (the store recovered, the broker registered).
func (n *Node) started() bool {
	select {
	case <-n.ready:
		return true
	default:
		return false
	}
}

// lifecycle names where the node is in its life: "starting", "serving" or "closing".
func (n *Node) lifecycle() string {
	switch {
	case n.closing.Load():
		return "closing"
	case !n.started():
		return "starting"
	default:
		return "serving"
	}
}

// serveHealth is liveness: 200 from the listener's start (a long store recovery is alive) until
// Close begins, 503 closing after, so an orchestrator restarts only a node that is going away.
func (n *Node) serveHealth(w http.ResponseWriter, _ *http.Request) {
	state := n.lifecycle()
	if state == "closing" {
		plain(w, http.StatusServiceUnavailable, "closing\n")
		return
	}
	plain(w, http.StatusOK, "ok: "+state+"\n")
}

// serveReady is readiness: 200 "ready" only while the node serves what its role promises,
// else 503 with the first reason it does not.
func (n *Node) serveReady(w http.ResponseWriter, _ *http.Request) {
	if reason := n.NotReady(); reason != "" {
		plain(w, http.StatusServiceUnavailable, "not ready: "+reason+"\n")
		return
	}
	plain(w, http.StatusOK, "ready\n")
}

// NotReady is why the node is not ready to serve clients, or "" when it is: starting (the
// store recovering, the role being decided, the broker registering), closing, its broker
// being swapped (a role change), a slave without an HA connection to its master, or a store
// refusing writes because its disk is above diskSpaceWarningLevelRatio.
func (n *Node) NotReady() string {
	switch n.lifecycle() {
	case "starting":
		return "starting (store recovering, role being settled or broker registering)"
	case "closing":
		return "closing"
	}
	if n.opts.DisableBroker {
		return ""
	}
	if gate := n.brokerGate.Load(); gate != nil {
		select {
		case <-*gate: // closed: the last swap is over
		default:
			return "broker restarting for a role change"
		}
	}
	b := n.broker.Load()
	if b == nil {
		return "no broker (a restart for a role change failed)"
	}
	if b.Role() == storage.Slave {
		s := ha.Of(b)
		if !s.MasterConnected() {
			if addr := s.MasterHAAddr(); addr != "" {
				return "slave not connected to its master at " + addr
			}
			return "slave has not learned its master's HA address yet"
		}
	}
	if b.Store().DiskFull() {
		return "refusing writes: disk used above diskSpaceWarningLevelRatio"
	}
	return ""
}

// plain writes a short text answer that no cache keeps.
func plain(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}
