package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// testBroker is a broker served over TCP on 127.0.0.1:0 and reachable in-process, with a
// t.TempDir() store and millisecond periods.
type testBroker struct {
	*Broker
	Dir    string
	Addr   string
	TCP    *remoting.Client
	InProc *remoting.InProcTransport

	d      *remoting.Dispatcher
	cancel context.CancelFunc
	done   chan error
	srvEnd chan error
}

// AttachServicesForTest builds the node's services over every test broker, as the node does
// (internal/broker/services). Package broker cannot import them, since they import it: the
// external test package sets it (services_test.go).
var AttachServicesForTest func(*Broker) error

// testOptions are millisecond periods, 64 KiB segments and, for masters, an HA listener on a
// free loopback port.
func testOptions(t testing.TB, dir string) Options {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	return Options{
		Store: storage.Options{Dir: dir, SegmentBytes: 64 << 10, ConsumeQueueUnits: 1000},
		HA:    HAOptions{ListenAddr: "127.0.0.1:0"},
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

// startTestBroker starts a broker on a fresh directory; mutate may change the options.
func startTestBroker(t testing.TB, mutate func(*Options)) *testBroker {
	t.Helper()
	return startTestBrokerIn(t, t.TempDir(), mutate)
}

// startTestBrokerIn starts a broker on dir (reuse a dir to test restarts).
func startTestBrokerIn(t testing.TB, dir string, mutate func(*Options)) *testBroker {
	t.Helper()
	opts := testOptions(t, dir)
	tb := &testBroker{Dir: dir, done: make(chan error, 1), srvEnd: make(chan error, 1)}
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
	if mutate != nil {
		mutate(&opts)
	}
	b, err := New(opts)
	if err == nil && AttachServicesForTest != nil {
		if err = AttachServicesForTest(b); err != nil {
			err = errors.Join(err, b.Close())
		}
	}
	if err != nil {
		cancel()
		<-tb.srvEnd
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
func (tb *testBroker) Stop(t testing.TB) {
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
func (tb *testBroker) Transports() map[string]remoting.Transport {
	return map[string]remoting.Transport{"tcp": tb.TCP, "inproc": tb.InProc}
}

// invoke sends req synchronously and fails the test on a transport error.
func invoke(t testing.TB, tr remoting.Transport, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := tr.InvokeSync(ctx, addr, req)
	if err != nil {
		t.Fatalf("invoke code %d: %v", req.Code, err)
	}
	return resp
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestBrokerStartsAndRestarts(t *testing.T) {
	tb := startTestBroker(t, nil)
	if _, ok := tb.topics.get(names.TopicAutoCreate); !ok {
		t.Fatal("TBW102 missing")
	}
	tb.topics.update(TopicConfig{TopicName: "Kept", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6})
	tb.offsets.commit("g", "Kept", 1, 42)
	dir := tb.Dir
	tb.Stop(t)
	tb2 := startTestBrokerIn(t, dir, nil)
	if _, ok := tb2.topics.get("Kept"); !ok {
		t.Fatal("topic lost across restart")
	}
	if off := tb2.offsets.query("g", "Kept", 1); off != 42 {
		t.Fatalf("offset after restart %d, want 42", off)
	}
}
