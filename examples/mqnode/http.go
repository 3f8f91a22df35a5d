package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
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

// close stops the listener and waits for its goroutine; safe on a nil server.
func (w *webServer) close() error {
	if w == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
	defer cancel()
	return errors.Join(w.srv.Shutdown(ctx), <-w.done)
}
