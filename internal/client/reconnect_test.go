package client

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// restartableBroker is a broker that counts heartbeats per incarnation and can be restarted at
// the same address, beside a real name server; both reached in-process.
type restartableBroker struct {
	tr         *remoting.InProcTransport
	ns         atomic.Pointer[remoting.Dispatcher]
	broker     atomic.Pointer[remoting.Dispatcher]
	heartbeats atomic.Int32 // of the running incarnation
}

func startRestartableBroker(t *testing.T) *restartableBroker {
	t.Helper()
	rb := &restartableBroker{}
	rb.restartNameServer()
	rb.restart()
	rb.tr = remoting.NewInProcTransport(func(addr string) *remoting.Dispatcher {
		switch addr {
		case memNameServer:
			return rb.ns.Load()
		case memBroker:
			return rb.broker.Load()
		}
		return nil
	}, nil, 0)
	t.Cleanup(func() {
		rb.tr.Close()
		rb.broker.Load().Close()
		rb.ns.Load().Close()
	})
	(&memCluster{tr: rb.tr}).register(t, 4)
	return rb
}

// restartNameServer replaces the name server by a new, empty one.
func (rb *restartableBroker) restartNameServer() {
	d := remoting.NewDispatcher(nil)
	route.NewNameServer(route.Options{}).Register(d, remoting.NewExecutor("namesrv", 1, 64))
	d.Start()
	if old := rb.ns.Swap(d); old != nil {
		old.Close()
	}
}

// restart replaces the broker by a new one that has seen no heartbeat.
func (rb *restartableBroker) restart() {
	d := remoting.NewDispatcher(nil)
	d.Register(remoting.HeartBeat, remoting.ProcessorFunc(func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
		rb.heartbeats.Add(1)
		return remoting.NewResponse(remoting.Success, ""), nil
	}), remoting.NewExecutor("heartbeat", 1, 64))
	d.Register(remoting.GetMaxOffset, remoting.ProcessorFunc(func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
		return remoting.NewResponse(remoting.Success, ""), nil
	}), remoting.NewExecutor("other", 1, 64))
	d.Start()
	if old := rb.broker.Swap(d); old != nil {
		old.Close()
	}
	rb.heartbeats.Store(0)
}

// request sends the broker a request that is not a heartbeat, as a pull would.
func (rb *restartableBroker) request(t *testing.T, addr string) {
	t.Helper()
	if _, err := rb.tr.InvokeSync(context.Background(), addr, remoting.NewRequest(remoting.GetMaxOffset, nil, nil)); err != nil {
		t.Fatal(err)
	}
}

// countingConsumer records its rebalances and how many heartbeats the broker had at each.
type countingConsumer struct {
	rb         *restartableBroker
	rebalances atomic.Int32
	seenBeats  atomic.Int32 // the broker's heartbeats at the last rebalance
}

func (c *countingConsumer) HeartbeatData() protocol.ConsumerData {
	return protocol.ConsumerData{GroupName: "cg", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING",
		ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET", SubscriptionDataSet: []protocol.SubscriptionData{}}
}
func (c *countingConsumer) SubscribedTopics() []string { return []string{"T"} }
func (c *countingConsumer) Rebalance() {
	c.seenBeats.Store(c.rb.heartbeats.Load())
	c.rebalances.Add(1)
}
func (c *countingConsumer) ConsumeMessageDirectly([]byte) *remoting.Command { return nil }

// TestReconnectHeartbeatsThenRebalances: when the transport reconnects to a broker that
// restarted, the instance heartbeats it at once, long before heartbeatBrokerInterval, and only
// then makes its consumers rebalance; a reconnect to the name server alone does neither.
func TestReconnectHeartbeatsThenRebalances(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rb := startRestartableBroker(t)
		i, err := Acquire(Options{NameServers: []string{memNameServer}, Transport: rb.tr, InstanceName: "reconnect"})
		if err != nil {
			t.Fatal(err)
		}
		defer i.Release()
		c := &countingConsumer{rb: rb}
		if err := i.RegisterConsumer("cg", c); err != nil {
			t.Fatal(err)
		}
		if _, err := i.TopicRoute(context.Background(), "T"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := rb.heartbeats.Load(); n != 1 {
			t.Fatalf("%d heartbeats once the broker was found, want 1", n)
		}
		if n := c.rebalances.Load(); n != 0 {
			t.Fatalf("%d rebalances without a reconnect", n)
		}

		rb.restart()
		synctest.Wait()
		if n := rb.heartbeats.Load(); n != 0 {
			t.Fatalf("%d heartbeats before anything reconnected", n)
		}
		rb.request(t, memBroker)
		synctest.Wait()
		if n := rb.heartbeats.Load(); n != 1 {
			t.Fatalf("%d heartbeats after the reconnect, want 1 at once", n)
		}
		if n, beats := c.rebalances.Load(), c.seenBeats.Load(); n != 1 || beats != 1 {
			t.Fatalf("%d rebalances after the reconnect (the broker had %d heartbeats), want 1 after the heartbeat", n, beats)
		}

		// The name server on its own address coming back is no reason to heartbeat.
		rb.restartNameServer()
		if _, err := rb.tr.InvokeSync(context.Background(), memNameServer, route.BuildGetRouteInfo("T")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n, r := rb.heartbeats.Load(), c.rebalances.Load(); n != 1 || r != 1 {
			t.Fatalf("a name server reconnect caused %d heartbeats and %d rebalances in all, want 1 and 1", n, r)
		}
	})
}

// persistingConsumer is a countingConsumer that also records when it was asked to persist its
// offsets, by the broker's heartbeats at that moment.
type persistingConsumer struct {
	countingConsumer
	persists       atomic.Int32
	beatsAtPersist atomic.Int32
}

func (c *persistingConsumer) PersistOffsets(context.Context) {
	c.beatsAtPersist.Store(c.rb.heartbeats.Load())
	c.persists.Add(1)
}

// TestReconnectPersistsOffsetsBeforeHeartbeat: a broker killed without a clean shutdown comes
// back with stale offsets, so after a reconnect the consumers write theirs back before the
// heartbeat that makes them visible to a joining member; without a reconnect they do not.
func TestReconnectPersistsOffsetsBeforeHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rb := startRestartableBroker(t)
		i, err := Acquire(Options{NameServers: []string{memNameServer}, Transport: rb.tr, InstanceName: "reconnect-persist"})
		if err != nil {
			t.Fatal(err)
		}
		defer i.Release()
		c := &persistingConsumer{countingConsumer: countingConsumer{rb: rb}}
		if err := i.RegisterConsumer("cg", c); err != nil {
			t.Fatal(err)
		}
		if _, err := i.TopicRoute(context.Background(), "T"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := c.persists.Load(); n != 0 {
			t.Fatalf("%d offset persists without a reconnect", n)
		}
		rb.restart()
		rb.request(t, memBroker)
		synctest.Wait()
		if n, beats := c.persists.Load(), c.beatsAtPersist.Load(); n != 1 || beats != 0 {
			t.Fatalf("%d offset persists after the reconnect (the broker had %d heartbeats), want 1 before the heartbeat", n, beats)
		}
		if n := rb.heartbeats.Load(); n != 1 {
			t.Fatalf("%d heartbeats after the reconnect, want 1", n)
		}
	})
}
