// Package wiretest is what a broker's tests need that does not need package broker: a
// dispatcher served over TCP on 127.0.0.1:0 and in-process, requests built as the official Go
// client builds them, checks of the answers and of what the store holds, and fakes. Package
// broker's own tests use it directly (they cannot import brokertest, which imports broker);
// brokertest builds on it for the services' tests.
package wiretest

import (
	"context"
	"testing"
	"time"

	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// Service is what Served runs behind its dispatcher: a broker core, as the test built it.
type Service interface {
	Register(*remoting.Dispatcher)
	Run(context.Context) error
	Ready() <-chan struct{}
	Close() error
}

// Served is a dispatcher served over TCP and reachable in-process. Listen starts the server
// first so that the service can be told its address; Serve then runs the service behind it.
type Served struct {
	Addr   string
	TCP    *remoting.Client
	InProc *remoting.InProcTransport
	// D is the dispatcher, for tests that set a guard on it.
	D *remoting.Dispatcher

	svc    Service
	ctx    context.Context
	cancel context.CancelFunc
	srvEnd chan error
	runEnd chan error
}

// Listen starts a dispatcher and a TCP server on 127.0.0.1:0. Call Serve next, or Abort when
// the service cannot be built.
func Listen(t testing.TB, logger *zerolog.Logger) *Served {
	t.Helper()
	s := &Served{srvEnd: make(chan error, 1), runEnd: make(chan error, 1)}
	s.D = remoting.NewDispatcher(logger)
	s.D.Start()
	srv := remoting.NewServer(s.D, remoting.ServerOptions{Logger: logger, ScanInterval: 20 * time.Millisecond})
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go func() { s.srvEnd <- srv.Run(s.ctx) }()
	<-srv.Ready()
	if srv.Addr() == "" {
		s.cancel()
		s.D.Close()
		t.Fatalf("server: %v", <-s.srvEnd)
	}
	s.Addr = srv.Addr()
	return s
}

// Abort stops what Listen started, for a test whose service failed to build.
func (s *Served) Abort() {
	s.cancel()
	<-s.srvEnd
	s.D.Close()
}

// Serve registers svc on the dispatcher, runs it until it is ready, opens the transports and
// stops it all at the test's cleanup. A service that ends before it is ready fails the test.
func (s *Served) Serve(t testing.TB, svc Service) {
	t.Helper()
	s.svc = svc
	svc.Register(s.D)
	go func() { s.runEnd <- svc.Run(s.ctx) }()
	select {
	case <-svc.Ready():
	case err := <-s.runEnd:
		s.Abort()
		svc.Close()
		t.Fatalf("broker run: %v", err)
	}
	s.TCP = remoting.NewClient(remoting.ClientOptions{ScanInterval: 20 * time.Millisecond})
	s.InProc = s.newInProc()
	t.Cleanup(func() { s.Stop(t) })
}

// Stop ends the service's run and the server, then closes the dispatcher and the service
// (idempotent). Errors from any of them fail the test.
func (s *Served) Stop(t testing.TB) {
	if s.cancel == nil {
		return
	}
	s.TCP.Close()
	s.InProc.Close()
	s.cancel()
	s.cancel = nil
	if err := <-s.srvEnd; err != nil {
		t.Errorf("server: %v", err)
	}
	if err := <-s.runEnd; err != nil {
		t.Errorf("broker run: %v", err)
	}
	s.D.Close()
	if err := s.svc.Close(); err != nil {
		t.Errorf("broker close: %v", err)
	}
}

// Cancel ends the service's run (and the server) without the rest of Stop, for a test of how
// the service ends; the cleanup's Stop does the rest.
func (s *Served) Cancel() { s.cancel() }

// Transports returns the TCP and in-process transports by name, for tests that run both.
func (s *Served) Transports() map[string]remoting.Transport {
	return map[string]remoting.Transport{"tcp": s.TCP, "inproc": s.InProc}
}

// NewInProc is an in-process transport of its own (its own connections), closed at the test's
// cleanup.
func (s *Served) NewInProc(t testing.TB) *remoting.InProcTransport {
	tr := s.newInProc()
	t.Cleanup(func() { tr.Close() })
	return tr
}

func (s *Served) newInProc() *remoting.InProcTransport {
	return remoting.NewInProcTransport(func(addr string) *remoting.Dispatcher {
		if addr == s.Addr {
			return s.D
		}
		return nil
	}, nil, 20*time.Millisecond)
}

// NewTCPClient is a second TCP client (a second connection), closed at the test's cleanup.
func NewTCPClient(t testing.TB) *remoting.Client {
	c := remoting.NewClient(remoting.ClientOptions{ScanInterval: 20 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	return c
}

// Invoke sends req synchronously and fails the test on a transport error.
func Invoke(t testing.TB, tr remoting.Transport, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := tr.InvokeSync(ctx, addr, req)
	if err != nil {
		t.Fatalf("invoke code %d: %v", req.Code, err)
	}
	return resp
}

// Eventually polls cond until it holds or 10 s pass.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
