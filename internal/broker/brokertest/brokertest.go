// Package brokertest starts a broker core, with the services a test attaches, served over TCP
// on 127.0.0.1:0 and reachable in-process, on a t.TempDir() store with millisecond periods. The
// packages of the broker's services test through it; package broker's own tests keep an
// internal harness that reaches the core's unexported state.
package brokertest

import (
	"errors"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// Broker is a running core with its services, served by a wiretest.Served (its TCP and
// in-process transports, Stop, Transports and NewInProc).
type Broker struct {
	*broker.Broker
	*wiretest.Served
	Dir string
	// Addr is the served address (it hides the core's Addr method, which says the same).
	Addr string
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
		HA:    config.HA{Listen: "127.0.0.1:0"},
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
	tb, err := TryStartIn(t, dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TryStartIn is StartIn for a start that may fail (a test of what a failed start leaves): the
// error of broker.New or of cfg.Attach, the broker closed.
func TryStartIn(t testing.TB, dir string, cfg Config) (*Broker, error) {
	t.Helper()
	opts := Options(t, dir)
	srv := wiretest.Listen(t, opts.Logger)
	opts.BrokerAddr = srv.Addr
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
		srv.Abort()
		return nil, err
	}
	srv.Serve(t, b)
	return &Broker{Broker: b, Served: srv, Dir: dir, Addr: srv.Addr}, nil
}

// Invoke sends req synchronously and fails the test on a transport error.
func Invoke(t testing.TB, tr remoting.Transport, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	return wiretest.Invoke(t, tr, addr, req)
}

// Eventually polls cond until it holds or 10 s pass.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	wiretest.Eventually(t, what, cond)
}
