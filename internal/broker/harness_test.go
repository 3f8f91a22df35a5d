package broker

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// testBroker is a broker served over TCP on 127.0.0.1:0 and reachable in-process (wiretest's
// Served: TCP, InProc, Stop, Transports), with a t.TempDir() store and millisecond periods.
type testBroker struct {
	*Broker
	*wiretest.Served
	Dir string
	// Addr is the served address (it hides Broker.Addr, which says the same).
	Addr string
	// d is the dispatcher, for tests that guard it.
	d *remoting.Dispatcher
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

// startTestBroker starts a broker on a fresh directory; mutate may change the options.
func startTestBroker(t testing.TB, mutate func(*Options)) *testBroker {
	t.Helper()
	return startTestBrokerIn(t, t.TempDir(), mutate)
}

// startTestBrokerIn starts a broker on dir (reuse a dir to test restarts).
func startTestBrokerIn(t testing.TB, dir string, mutate func(*Options)) *testBroker {
	t.Helper()
	opts := testOptions(t, dir)
	srv := wiretest.Listen(t, opts.Logger)
	opts.BrokerAddr = srv.Addr
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
		srv.Abort()
		t.Fatal(err)
	}
	srv.Serve(t, b)
	return &testBroker{Broker: b, Served: srv, Dir: dir, Addr: srv.Addr, d: srv.D}
}

// invoke sends req synchronously and fails the test on a transport error.
var invoke = wiretest.Invoke

// eventually polls cond until it holds or 10 s pass.
var eventually = wiretest.Eventually

func TestBrokerStartsAndRestarts(t *testing.T) {
	tb := startTestBroker(t, nil)
	if _, ok := tb.topics.Get(names.TopicAutoCreate); !ok {
		t.Fatal("TBW102 missing")
	}
	tb.topics.Update(TopicConfig{TopicName: "Kept", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6})
	tb.offsets.Commit("g", "Kept", 1, 42)
	dir := tb.Dir
	tb.Stop(t)
	tb2 := startTestBrokerIn(t, dir, nil)
	if _, ok := tb2.topics.Get("Kept"); !ok {
		t.Fatal("topic lost across restart")
	}
	if off := tb2.offsets.Query("g", "Kept", 1); off != 42 {
		t.Fatalf("offset after restart %d, want 42", off)
	}
}

// goAdminCreate is UPDATE_AND_CREATE_TOPIC with the Go admin's defaults (docs/protocol.md §6.1).
func goAdminCreate(topic string) *protocol.CreateTopicRequestHeader {
	return &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "defaultTopic", ReadQueueNums: 8,
		WriteQueueNums: 8, Perm: 6, TopicFilterType: route.FilterSingleTag}
}

func allTopicConfig(t *testing.T, tr remoting.Transport, addr string) route.TopicConfigSerializeWrapper {
	t.Helper()
	resp := invoke(t, tr, addr, remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("GET_ALL_TOPIC_CONFIG: %d %q", resp.Code, resp.Remark)
	}
	var w route.TopicConfigSerializeWrapper
	if err := json.Unmarshal(resp.Body, &w); err != nil {
		t.Fatalf("GET_ALL_TOPIC_CONFIG body %q: %v", resp.Body, err)
	}
	return w
}

func wantOK(t *testing.T, resp *remoting.Command) {
	t.Helper()
	if resp.Code != remoting.Success {
		t.Fatalf("response %d %q", resp.Code, resp.Remark)
	}
}
