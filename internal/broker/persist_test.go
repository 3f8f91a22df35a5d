package broker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/names"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// testNameServer is a name server reached in-process by the broker, which counts the
// REGISTER_BROKER requests it is sent.
type testNameServer struct {
	*route.NameServer
	Addr string
	tr   *countingTransport
}

// countingTransport counts the REGISTER_BROKER requests passing through it.
type countingTransport struct {
	remoting.Transport
	registrations atomic.Int64
	onRegister    atomic.Pointer[func()]
}

func (c *countingTransport) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	if req.Code == remoting.RegisterBroker {
		c.registrations.Add(1)
		if f := c.onRegister.Load(); f != nil {
			(*f)()
		}
	}
	return c.Transport.InvokeSync(ctx, addr, req)
}

// startTestNameServer serves a name server in-process at a made-up address; pass it to
// startTestBroker with withNameServer.
func startTestNameServer(t testing.TB) *testNameServer {
	t.Helper()
	d := remoting.NewDispatcher(nil)
	ns := route.NewNameServer(route.Options{})
	ns.Register(d, remoting.NewExecutor("namesrv", 2, 10000))
	d.Start()
	const addr = "namesrv.test:9876"
	inproc := remoting.NewInProcTransport(func(a string) *remoting.Dispatcher {
		if a == addr {
			return d
		}
		return nil
	}, nil, 0)
	t.Cleanup(func() {
		inproc.Close()
		d.Close()
	})
	return &testNameServer{NameServer: ns, Addr: addr, tr: &countingTransport{Transport: inproc}}
}

// withNameServer makes the broker register with ns.
func (ns *testNameServer) withNameServer(o *Options) {
	o.NameServers = []string{ns.Addr}
	o.Transport = ns.tr
}

// routable reports whether the name server has a route to topic on a broker.
func (ns *testNameServer) routable(topic string) bool {
	r, ok := ns.TopicRoute(topic)
	return ok && len(r.QueueDatas) > 0 && len(r.BrokerDatas) > 0
}

// manyGroupsHeartbeat is one client's heartbeat with n consumer groups, each subscribed to T and
// its retry topic as the Go client subscribes.
func manyGroupsHeartbeat(clientID, prefix string, n int) *remoting.Command {
	hb := protocol.HeartbeatData{ClientID: clientID, ProducerDataSet: []protocol.ProducerData{}}
	for i := range n {
		g := fmt.Sprintf("%s-%05d", prefix, i)
		hb.ConsumerDataSet = append(hb.ConsumerDataSet, protocol.ConsumerData{GroupName: g,
			ConsumeType: protocol.ConsumePassively, MessageModel: protocol.Clustering,
			ConsumeFromWhere:    protocol.ConsumeFromLastOffset,
			SubscriptionDataSet: []protocol.SubscriptionData{wiretest.Sub("T", "*"), wiretest.Sub(names.RetryTopic(g), "*")}})
	}
	return remoting.NewRequest(remoting.HeartBeat, map[string]string{}, hb.Encode())
}

// waitRegistered waits for the broker's first registration (Run makes it before Ready), after
// which topic changes wait for their own round.
func waitRegistered(t testing.TB, tb *testBroker) {
	t.Helper()
	<-tb.Ready()
}

// metaFileWrites is the number of metadata files the broker's writer has written so far.
func metaFileWrites(tb *testBroker) int64 {
	topics, groups, offsets := tb.meta.FileWrites()
	return topics + groups + offsets
}

// readTopicsFile reads topics.json as the next start would.
func readTopicsFile(t testing.TB, dir string) map[string]TopicConfig {
	t.Helper()
	var w route.TopicConfigSerializeWrapper
	if _, err := storage.ReadJSONFile(dir+"/config/topics.json", &w); err != nil {
		t.Fatalf("topics.json: %v", err)
	}
	return w.TopicConfigTable
}

// A heartbeat bringing 2,000 new consumer groups is answered with every retry topic created
// and routable, after one registration round and one write per metadata file (the broker used
// to write both files and register once per group: 6,000 operations on growing tables).
func TestHeartbeatManyNewGroups(t *testing.T) {
	const groups = 2000
	ns := startTestNameServer(t)
	tb := startTestBroker(t, func(o *Options) {
		ns.withNameServer(o)
		// No periodic registration or flush during the test: every round and write counted
		// below is caused by the heartbeat.
		o.Periods.RegisterNameServerPeriod = time.Hour
		o.Periods.FlushConsumerOffsetInterval = time.Hour
		// The harness expires a client silent for a second; under -race on a loaded machine
		// the heartbeat and the checks below can take longer, and the first groups' member
		// would be gone. Expiry is not what this test measures.
		o.Periods.ClientChannelExpiredTime = time.Hour
	})
	waitRegistered(t, tb)
	rounds, writes := ns.tr.registrations.Load(), metaFileWrites(tb)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := tb.TCP.InvokeSync(ctx, tb.Addr, manyGroupsHeartbeat("many@1", "g", groups))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %v %+v", err, resp)
	}
	for i := range groups {
		g := fmt.Sprintf("g-%05d", i)
		if _, ok := tb.topics.Get(names.RetryTopic(g)); !ok {
			t.Fatalf("%s missing", names.RetryTopic(g))
		}
		// Routable at once: the answer waited for the registration.
		if !ns.routable(names.RetryTopic(g)) {
			t.Fatalf("%s not routable when the heartbeat was answered", names.RetryTopic(g))
		}
		if ids := tb.clients.consumers.ConsumerIDs(g); len(ids) != 1 || ids[0] != "many@1" {
			t.Fatalf("group %s members %v", g, ids)
		}
	}
	if n := ns.tr.registrations.Load() - rounds; n < 1 || n > 3 {
		t.Errorf("the heartbeat caused %d registration rounds, want 1 to 3", n)
	}
	eventually(t, "retry topics on disk", func() bool {
		// The writer may not have created the file yet: only a whole file counts.
		var w route.TopicConfigSerializeWrapper
		if _, err := storage.ReadJSONFile(tb.Dir+"/config/topics.json", &w); err != nil {
			return false
		}
		_, ok := w.TopicConfigTable[names.RetryTopic(fmt.Sprintf("g-%05d", groups-1))]
		return ok
	})
	eventually(t, "groups on disk", func() bool {
		var w SubscriptionGroupWrapper
		_, err := storage.ReadJSONFile(tb.Dir+"/config/subscriptionGroup.json", &w)
		return err == nil && len(w.SubscriptionGroupTable) == groups
	})
	if n := metaFileWrites(tb) - writes; n > 3 {
		t.Errorf("the heartbeat caused %d metadata file writes, want at most 3", n)
	}
}

// Concurrent topic changes share registration rounds: while a round is in flight, 50 creators
// wait for the next one, and each returns only once its topic is routable.
func TestRegistrationRoundsCoalesce(t *testing.T) {
	const creators = 50
	ns := startTestNameServer(t)
	tb := startTestBroker(t, func(o *Options) {
		ns.withNameServer(o)
		o.Periods.RegisterNameServerPeriod = time.Hour
	})
	waitRegistered(t, tb)
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	hook := func() {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-gate
	}
	ns.tr.onRegister.Store(&hook)
	var released sync.Once
	release := func() { released.Do(func() { close(gate) }) }
	t.Cleanup(release)
	rounds := ns.tr.registrations.Load()

	var wg sync.WaitGroup
	wg.Go(func() { tb.topics.CreateIfAbsent("first", 1, route.PermReadWrite, 0) })
	<-entered // the round carrying "first" is in flight, held at the name server
	tickets := func() uint64 {
		return tb.registrar.Rounds().Asked()
	}
	asked := tickets()
	notRoutable := make(chan string, creators)
	for i := range creators {
		wg.Go(func() {
			topic := fmt.Sprintf("c-%02d", i)
			tb.topics.CreateIfAbsent(topic, 1, route.PermReadWrite, 0)
			if !ns.routable(topic) {
				notRoutable <- topic
			}
		})
	}
	eventually(t, "every creator waiting", func() bool { return tickets() == asked+creators })
	release()
	wg.Wait()
	close(notRoutable)
	for topic := range notRoutable {
		t.Errorf("CreateIfAbsent(%s) returned before the topic was routable", topic)
	}
	if !ns.routable("first") {
		t.Error("first not routable")
	}
	if n := ns.tr.registrations.Load() - rounds; n > 3 {
		t.Errorf("%d creators caused %d registration rounds, want 2 (at most 3)", creators+1, n)
	}
}

// countingWriter counts log lines at warn level and above.
type countingWriter struct {
	mu    sync.Mutex
	lines []string
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"level":"error"`)) || bytes.Contains(p, []byte(`"level":"warn"`)) {
		w.mu.Lock()
		w.lines = append(w.lines, string(p))
		w.mu.Unlock()
	}
	return len(p), nil
}

func (w *countingWriter) got() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}

// Many topics created at once by sends over both transports: every send succeeds, every topic
// is routable when its send is answered and in topics.json after a clean stop, and nothing is
// logged at warn or error (concurrent persists used to collide on one temp file).
func TestConcurrentTopicCreation(t *testing.T) {
	const perTransport = 60
	ns := startTestNameServer(t)
	logged := &countingWriter{}
	tb := startTestBroker(t, func(o *Options) {
		ns.withNameServer(o)
		l := zerolog.New(io.MultiWriter(zerolog.NewTestWriter(t), logged)).Level(zerolog.WarnLevel)
		o.Logger = &l
	})
	waitRegistered(t, tb)
	errs := make(chan string, 2*perTransport)
	var wg sync.WaitGroup
	var topics []string
	for name, tr := range tb.Transports() {
		for i := range perTransport {
			topic := fmt.Sprintf("C-%s-%03d", name, i)
			topics = append(topics, topic)
			wg.Go(func() {
				h := wiretest.SendHeader(topic, 0, map[string]string{"UNIQ_KEY": topic})
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				resp, err := tr.InvokeSync(ctx, tb.Addr, wiretest.SendRequest(remoting.SendMessage, &h, []byte("x"), remoting.SerializeJSON))
				switch {
				case err != nil:
					errs <- fmt.Sprintf("%s: %v", topic, err)
				case resp.Code != remoting.Success:
					errs <- fmt.Sprintf("%s: code %d %s", topic, resp.Code, resp.Remark)
				case !ns.routable(topic):
					errs <- topic + ": not routable when the send was answered"
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	dir := tb.Dir
	tb.Stop(t)
	onDisk := readTopicsFile(t, dir)
	for _, topic := range topics {
		if _, ok := onDisk[topic]; !ok {
			t.Errorf("%s not in topics.json after a clean stop", topic)
		}
	}
	for _, l := range logged.got() {
		t.Errorf("logged: %s", l)
	}
	tb2 := startTestBrokerIn(t, dir, nil)
	for _, topic := range topics {
		if _, ok := tb2.topics.Get(topic); !ok {
			t.Errorf("%s lost across restart", topic)
		}
	}
}

// A heartbeat whose topic registration is slow (here the clock jumps past the expiry timeout
// while the round is in flight) does not expire the registrations it records: they are stamped
// when recorded, not when the heartbeat started.
func TestSlowHeartbeatKeepsItsRegistrations(t *testing.T) {
	ns := startTestNameServer(t)
	clock := wiretest.NewFakeClock()
	tb := startTestBroker(t, func(o *Options) {
		ns.withNameServer(o)
		o.Periods.RegisterNameServerPeriod = time.Hour
		o.ScanConnectionInterval = time.Hour // the test scans by hand
	})
	waitRegistered(t, tb)
	tb.clients.now = clock.Now // before any request reads it
	slow := func() { clock.Advance(2 * tb.opts.Periods.ClientChannelExpiredTime) }
	ns.tr.onRegister.Store(&slow)

	c := newTCPClient(t)
	resp := invoke(t, c, tb.Addr, manyGroupsHeartbeat("slow@1", "s", 3))
	if resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %d %s", resp.Code, resp.Remark)
	}
	ch, ok := tb.clients.clientChannel("slow@1")
	if !ok {
		t.Fatal("client not registered")
	}
	tb.clients.scanNotActiveChannels()
	for i := range 3 {
		g := fmt.Sprintf("s-%05d", i)
		if ids := tb.clients.consumers.ConsumerIDs(g); len(ids) != 1 {
			t.Errorf("group %s expired by the scan right after its heartbeat: %v", g, ids)
		}
	}
	if ch.Closed() {
		t.Error("the heartbeat's connection was closed as expired")
	}
	// The rule still expires what is really stale.
	clock.Advance(tb.opts.Periods.ClientChannelExpiredTime + time.Millisecond)
	tb.clients.scanNotActiveChannels()
	if ids := tb.clients.consumers.ConsumerIDs("s-00000"); len(ids) != 0 {
		t.Errorf("stale registration kept: %v", ids)
	}
	eventually(t, "stale connection closed", ch.Closed)
}

// BenchmarkHeartbeatNewGroups measures one heartbeat that brings 2,000 consumer groups the
// broker has never seen: each needs its subscription group and %RETRY% topic created,
// persisted and registered with the name server before the answer.
func BenchmarkHeartbeatNewGroups(b *testing.B) {
	const groups = 2000
	b.ReportAllocs()
	var rounds, writes int64
	for i := range b.N {
		b.StopTimer()
		ns := startTestNameServer(b)
		tb := startTestBroker(b, func(o *Options) {
			ns.withNameServer(o)
			// Long enough that a slow heartbeat cannot expire its own registrations on any
			// version of the broker: this measures time, not expiry.
			o.Periods.ClientChannelExpiredTime = time.Hour
			o.Periods.RegisterNameServerPeriod = time.Hour
		})
		addTopic(tb, "T", 4)
		waitRegistered(b, tb)
		req := manyGroupsHeartbeat(fmt.Sprintf("bench@%d", i), "g", groups)
		before, writesBefore := ns.tr.registrations.Load(), metaFileWrites(tb)
		b.StartTimer()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		resp, err := tb.TCP.InvokeSync(ctx, tb.Addr, req)
		cancel()
		b.StopTimer()
		if err != nil || resp.Code != remoting.Success {
			b.Fatalf("heartbeat: %v %v", err, resp)
		}
		rounds += ns.tr.registrations.Load() - before
		// The writer works after the answer; count what it wrote for this heartbeat.
		eventually(b, "groups on disk", func() bool { _, g, _ := tb.meta.FileWrites(); return g > 0 })
		writes += metaFileWrites(tb) - writesBefore
		tb.Stop(b)
		b.StartTimer()
	}
	b.ReportMetric(float64(rounds)/float64(b.N), "registrations/op")
	b.ReportMetric(float64(writes)/float64(b.N), "file-writes/op")
}
