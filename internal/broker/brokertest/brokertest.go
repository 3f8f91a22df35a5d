// Package brokertest starts a broker core, with the services a test attaches, served over TCP
// on 127.0.0.1:0 and reachable in-process, on a t.TempDir() store with millisecond periods. The
// packages of the broker's services test through it; package broker's own tests keep an
// internal harness that reaches the core's unexported state.
package brokertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// Broker is a running core with its services.
type Broker struct {
	*broker.Broker
	Dir    string
	Addr   string
	TCP    *remoting.Client
	InProc *remoting.InProcTransport

	d      *remoting.Dispatcher
	cancel context.CancelFunc
	done   chan error
	srvEnd chan error
}

// Config says how to start one: Mutate changes the options, Attach builds the services over the
// core and attaches them (it runs after broker.New, before Register and Run).
type Config struct {
	Mutate func(*broker.Options)
	Attach func(*broker.Broker) error
}

// Options are millisecond periods, 64 KiB segments and, for masters, an HA listener on a free
// loopback port.
func Options(t testing.TB, dir string) broker.Options {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	return broker.Options{
		Store: storage.Options{Dir: dir, SegmentBytes: 64 << 10, ConsumeQueueUnits: 1000},
		HA:    broker.HAOptions{ListenAddr: "127.0.0.1:0"},
		Periods: config.Periods{
			FlushConsumerOffsetInterval: 20 * time.Millisecond,
			RegisterNameServerPeriod:    50 * time.Millisecond,
			ClientChannelExpiredTime:    time.Second,
			RebalanceLockMaxLiveTime:    time.Second,
		},
		ScanConnectionInterval: 20 * time.Millisecond,
		Logger:                 &l,
	}
}

// Start starts a broker on a fresh directory.
func Start(t testing.TB, cfg Config) *Broker {
	t.Helper()
	return StartIn(t, t.TempDir(), cfg)
}

// StartIn starts a broker on dir (reuse a dir to test restarts). The test's cleanup stops it.
func StartIn(t testing.TB, dir string, cfg Config) *Broker {
	t.Helper()
	opts := Options(t, dir)
	tb := &Broker{Dir: dir, done: make(chan error, 1), srvEnd: make(chan error, 1)}
	tb.d = remoting.NewDispatcher(opts.Logger)
	tb.d.Start()
	srv := remoting.NewServer(tb.d, remoting.ServerOptions{Logger: opts.Logger, ScanInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	tb.cancel = cancel
	go func() { tb.srvEnd <- srv.Run(ctx) }()
	<-srv.Ready()
	if srv.Addr() == "" {
		cancel()
		t.Fatalf("server: %v", <-tb.srvEnd)
	}
	tb.Addr = srv.Addr()
	opts.BrokerAddr = tb.Addr
	if cfg.Mutate != nil {
		cfg.Mutate(&opts)
	}
	b, err := broker.New(opts)
	if err == nil && cfg.Attach != nil {
		if err = cfg.Attach(b); err != nil {
			err = errors.Join(err, b.Close())
		}
	}
	if err != nil {
		cancel()
		<-tb.srvEnd
		tb.d.Close()
		t.Fatal(err)
	}
	tb.Broker = b
	b.Register(tb.d)
	go func() { tb.done <- b.Run(ctx) }()
	select {
	case <-b.Ready():
	case err := <-tb.done:
		cancel()
		<-tb.srvEnd
		tb.d.Close()
		b.Close()
		t.Fatalf("broker run: %v", err)
	}
	tb.TCP = remoting.NewClient(remoting.ClientOptions{ScanInterval: 20 * time.Millisecond})
	tb.InProc = remoting.NewInProcTransport(func(addr string) *remoting.Dispatcher {
		if addr == tb.Addr {
			return tb.d
		}
		return nil
	}, nil, 20*time.Millisecond)
	t.Cleanup(func() { tb.Stop(t) })
	return tb
}

// Stop shuts the broker down cleanly (idempotent).
func (tb *Broker) Stop(t testing.TB) {
	if tb.cancel == nil {
		return
	}
	tb.TCP.Close()
	tb.InProc.Close()
	tb.cancel()
	tb.cancel = nil
	if err := <-tb.srvEnd; err != nil {
		t.Errorf("server: %v", err)
	}
	if err := <-tb.done; err != nil {
		t.Errorf("broker run: %v", err)
	}
	tb.d.Close()
	if err := tb.Close(); err != nil {
		t.Errorf("broker close: %v", err)
	}
}

// Transports returns the TCP and in-process transports by name, for tests that run both.
func (tb *Broker) Transports() map[string]remoting.Transport {
	return map[string]remoting.Transport{"tcp": tb.TCP, "inproc": tb.InProc}
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

// NewInProc is an in-process transport of its own (its own connections) to the broker, closed
// at the test's cleanup.
func (tb *Broker) NewInProc(t testing.TB) *remoting.InProcTransport {
	tr := remoting.NewInProcTransport(func(addr string) *remoting.Dispatcher {
		if addr == tb.Addr {
			return tb.d
		}
		return nil
	}, nil, 20*time.Millisecond)
	t.Cleanup(func() { tr.Close() })
	return tr
}
