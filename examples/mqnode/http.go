package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/mqgo/mq"
	"github.com/rs/zerolog"
)

// webServer is the -http listener: the node's metrics, health and dashboard.
type webServer struct {
	addr string
	srv  *http.Server
	done chan error
}

// httpShutdownTimeout bounds how long a stopping node waits for HTTP requests in flight.
const httpShutdownTimeout = 5 * time.Second

// serveHTTP serves node.Handler() on addr; it returns nil, nil when addr is empty.
func serveHTTP(addr string, node *mq.Node, log *zerolog.Logger) (*webServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-http: %w", err)
	}
	w := &webServer{addr: ln.Addr().String(), done: make(chan error, 1),
		srv: &http.Server{Handler: node.Handler(), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		err := w.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		if err != nil {
			log.Error().Str("component", "mqnode").Err(err).Msg("http listener failed")
		}
		w.done <- err
	}()
	return w, nil
}

// httpAllowedHosts are the names the dashboard answers under besides the address a request
// reached: those of -http-allowed-hosts, and -http's host when it is a name (with its port,
// unless that is 0). An address needs no entry: the dashboard answers under the one it was
// reached at.
func httpAllowedHosts(listen, list string) []string {
	var hosts []string
	for h := range strings.SplitSeq(list, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil || host == "" {
		return hosts
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return hosts
	}
	if port != "0" {
		host = net.JoinHostPort(host, port)
	}
	return append(hosts, host)
}

// close stops the listener and waits for its goroutine; safe on a nil server.
func (w *webServer) close() error {
	if w == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
	defer cancel()
	return errors.Join(w.srv.Shutdown(ctx), <-w.done)
}
