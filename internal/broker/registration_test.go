package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker/registrar"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// TestRegisterScheduleFloorSetting: tests lower RegisterNameServerPeriodMin, which moves the
// first periodic round and the floor together (the registrar's own tests run the schedule).
func TestRegisterScheduleFloorSetting(t *testing.T) {
	p := config.Periods{RegisterNameServerPeriod: time.Millisecond, RegisterNameServerPeriodMin: 5 * time.Millisecond}
	s := Options{Periods: p}.withDefaults().registerSchedule()
	if want := (registrar.Schedule{InitialDelay: 5 * time.Millisecond, Period: 5 * time.Millisecond}); s != want {
		t.Errorf("schedule %+v, want %+v", s, want)
	}
}

// codeCounter counts the requests passing through it by code. With refuseQuery it answers
// QUERY_DATA_VERSION itself with REQUEST_CODE_NOT_SUPPORTED, as a name server without the code
// would.
type codeCounter struct {
	remoting.Transport
	refuseQuery atomic.Bool
	mu          sync.Mutex
	counts      map[int32]int
}

func (c *codeCounter) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	c.mu.Lock()
	c.counts[req.Code]++
	c.mu.Unlock()
	if req.Code == remoting.QueryDataVersion && c.refuseQuery.Load() {
		return remoting.NewResponseFor(req, remoting.RequestCodeNotSupported, "not supported"), nil
	}
	return c.Transport.InvokeSync(ctx, addr, req)
}

func (c *codeCounter) count(code int32) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[code]
}

// restartableNameServer is a name server reached in-process at one address; restart replaces
// it with a fresh one that knows no broker, as a restarted process would.
type restartableNameServer struct {
	addr string
	cur  atomic.Pointer[route.NameServer]
	d    atomic.Pointer[remoting.Dispatcher]
	tr   *codeCounter
}

func startRestartableNameServer(t testing.TB) *restartableNameServer {
	t.Helper()
	r := &restartableNameServer{addr: "namesrv.restart.test:9876"}
	r.restart()
	inproc := remoting.NewInProcTransport(func(a string) *remoting.Dispatcher {
		if a == r.addr {
			return r.d.Load()
		}
		return nil
	}, nil, 0)
	r.tr = &codeCounter{Transport: inproc, counts: map[int32]int{}}
	t.Cleanup(func() {
		inproc.Close()
		r.d.Load().Close()
	})
	return r
}

func (r *restartableNameServer) restart() {
	ns := route.NewNameServer(route.Options{})
	d := remoting.NewDispatcher(nil)
	ns.Register(d, remoting.NewExecutor("namesrv", 2, 1000))
	d.Start()
	r.cur.Store(ns)
	if old := r.d.Swap(d); old != nil {
		old.Close()
	}
}

// knows reports whether the current name server has the broker at addr and a route to topic
// on it.
func (r *restartableNameServer) knows(addr, topic string) bool {
	info := r.cur.Load().ClusterInfo()
	bd, ok := info.BrokerAddrTable[config.DefaultBrokerName]
	if !ok || bd.BrokerAddrs[0] != addr {
		return false
	}
	rt, ok := r.cur.Load().TopicRoute(topic)
	return ok && len(rt.QueueDatas) > 0
}

func (r *restartableNameServer) withNameServer(o *Options) {
	o.NameServers = []string{r.addr}
	o.Transport = r.tr
}

// With forceRegister off, a periodic round of an unchanged broker is one QUERY_DATA_VERSION per
// name server and no REGISTER_BROKER; a name server that restarted (and lost the broker) says
// changed and gets a whole registration in the next round.
func TestPeriodicRoundsQueryDataVersion(t *testing.T) {
	ns := startRestartableNameServer(t)
	tb := startTestBroker(t, func(o *Options) {
		ns.withNameServer(o)
		o.Periods.RegisterNameServerPeriod = 10 * time.Millisecond
		o.Periods.RegisterNameServerPeriodMin = 10 * time.Millisecond
		o.Broker.DisableForceRegister = true
	})
	<-tb.Ready()
	registered, queried := ns.tr.count(remoting.RegisterBroker), ns.tr.count(remoting.QueryDataVersion)
	if registered != 1 {
		t.Fatalf("REGISTER_BROKER sent %d times at start, want 1", registered)
	}
	eventually(t, "three periodic rounds", func() bool { return ns.tr.count(remoting.QueryDataVersion) >= queried+3 })
	if n := ns.tr.count(remoting.RegisterBroker); n != registered {
		t.Fatalf("an unchanged broker sent REGISTER_BROKER %d times in periodic rounds", n-registered)
	}

	ns.restart()
	eventually(t, "the restarted name server to learn the broker and its topics", func() bool {
		return ns.knows(tb.Addr, names.TopicAutoCreate)
	})
	if n := ns.tr.count(remoting.RegisterBroker); n <= registered {
		t.Fatalf("REGISTER_BROKER count %d after the restart, want more than %d", n, registered)
	}
}

// By default (RocketMQ's forceRegister true) every periodic round registers and none asks
// QUERY_DATA_VERSION.
func TestPeriodicRoundsRegisterByDefault(t *testing.T) {
	ns := startRestartableNameServer(t)
	tb := startTestBroker(t, func(o *Options) {
		ns.withNameServer(o)
		o.Periods.RegisterNameServerPeriod = 10 * time.Millisecond
		o.Periods.RegisterNameServerPeriodMin = 10 * time.Millisecond
	})
	<-tb.Ready()
	eventually(t, "three periodic registrations", func() bool { return ns.tr.count(remoting.RegisterBroker) >= 4 })
	if n := ns.tr.count(remoting.QueryDataVersion); n != 0 {
		t.Errorf("QUERY_DATA_VERSION sent %d times with forceRegister on", n)
	}
}

// A topic change registers at once, without asking first, even with forceRegister off and no
// periodic round due: the change is routable when CreateIfAbsent returns.
func TestTopicChangeRegistersAtOnce(t *testing.T) {
	ns := startRestartableNameServer(t)
	tb := startTestBroker(t, func(o *Options) {
		ns.withNameServer(o)
		o.Periods.RegisterNameServerPeriod = time.Hour
		o.Periods.RegisterNameServerPeriodMin = time.Hour
		o.Broker.DisableForceRegister = true
	})
	<-tb.Ready()
	registered := ns.tr.count(remoting.RegisterBroker)
	tb.topics.CreateIfAbsent("Changed", 2, route.PermReadWrite, 0)
	if !ns.knows(tb.Addr, "Changed") {
		t.Fatal("the new topic was not routable when its creation returned")
	}
	if n := ns.tr.count(remoting.RegisterBroker); n != registered+1 {
		t.Errorf("REGISTER_BROKER sent %d times for one topic change, want 1", n-registered)
	}
	if n := ns.tr.count(remoting.QueryDataVersion); n != 0 {
		t.Errorf("a topic change asked QUERY_DATA_VERSION %d times, want none", n)
	}
}

// A name server that refuses QUERY_DATA_VERSION is registered with every round (a deliberate
// difference: RocketMQ would count the refusal as unchanged and let the broker expire).
func TestRefusedDataVersionQueryRegisters(t *testing.T) {
	ns := startRestartableNameServer(t)
	ns.tr.refuseQuery.Store(true)
	tb := startTestBroker(t, func(o *Options) {
		ns.withNameServer(o)
		o.Periods.RegisterNameServerPeriod = 10 * time.Millisecond
		o.Periods.RegisterNameServerPeriodMin = 10 * time.Millisecond
		o.Broker.DisableForceRegister = true
	})
	<-tb.Ready()
	eventually(t, "three periodic rounds", func() bool { return ns.tr.count(remoting.QueryDataVersion) >= 3 })
	eventually(t, "registrations after refused queries", func() bool {
		return ns.tr.count(remoting.RegisterBroker) >= 3
	})
}
