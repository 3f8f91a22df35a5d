package client

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// The periods of the instance's loops, RocketMQ's pollNameServerInterval and
// heartbeatBrokerInterval (the defaults).
const (
	pollNameServerInterval  = 30 * time.Second
	heartbeatBrokerInterval = 30 * time.Second
)

const (
	memNameServer = "127.0.0.1:9876"
	memBroker     = "127.0.0.1:10911"
)

// memCluster is a real name server and a broker that only counts heartbeats, reached through
// one in-process transport: goroutines and channels only, so an Instance on it runs in a
// synctest bubble (the tests on real nodes in instance_test.go cannot: sockets never block
// durably).
type memCluster struct {
	tr         *remoting.InProcTransport
	heartbeats atomic.Int32
}

func startMemCluster(t *testing.T) *memCluster {
	t.Helper()
	mc := &memCluster{}
	ns := route.NewNameServer(route.Options{})
	nsd := remoting.NewDispatcher(nil)
	ns.Register(nsd, remoting.NewExecutor("namesrv", 1, 64))
	nsd.Start()
	bd := remoting.NewDispatcher(nil)
	bd.Register(remoting.HeartBeat, remoting.ProcessorFunc(func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
		mc.heartbeats.Add(1)
		return remoting.NewResponse(remoting.Success, ""), nil
	}), remoting.NewExecutor("broker", 1, 64))
	bd.Start()
	mc.tr = remoting.NewInProcTransport(func(addr string) *remoting.Dispatcher {
		switch addr {
		case memNameServer:
			return nsd
		case memBroker:
			return bd
		}
		return nil
	}, nil, 0)
	t.Cleanup(func() {
		mc.tr.Close()
		bd.Close()
		nsd.Close()
	})
	return mc
}

// register registers the broker with topic T on queues queues; each call is a new data
// version, so the name server takes the new topic config.
func (mc *memCluster) register(t *testing.T, queues int32) {
	t.Helper()
	req := route.BuildRegisterBroker(&route.RegisterBrokerRequest{
		ClusterName: "c", BrokerName: "broker-a", BrokerAddr: memBroker, BrokerID: 0,
		Body: route.RegisterBrokerBody{TopicConfigSerializeWrapper: route.TopicConfigSerializeWrapper{
			TopicConfigTable: map[string]route.TopicConfig{"T": {TopicName: "T", ReadQueueNums: queues, WriteQueueNums: queues, Perm: 6}},
			DataVersion:      route.DataVersion{Timestamp: time.Now().UnixMilli(), Counter: int64(queues)},
		}},
	})
	resp, err := mc.tr.InvokeSync(context.Background(), memNameServer, req)
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("register: %v %+v", err, resp)
	}
}

func acquireMem(t *testing.T, mc *memCluster, name string) *Instance {
	t.Helper()
	i, err := Acquire(Options{NameServers: []string{memNameServer}, Transport: mc.tr, InstanceName: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { i.Release() }) // before the cluster's cleanup
	return i
}

func cachedQueues(i *Instance) int32 {
	r := i.CachedTopicRoute("T")
	if r == nil || len(r.QueueDatas) != 1 {
		return -1
	}
	return r.QueueDatas[0].WriteQueueNums
}

// TestRouteRefreshedEveryPollInterval: a cached route is refreshed by the route loop exactly
// pollNameServerInterval after the instance started, on synctest's clock; a change at the
// name server stays unseen until then.
func TestRouteRefreshedEveryPollInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mc := startMemCluster(t)
		mc.register(t, 4)
		i := acquireMem(t, mc, "poll")
		if _, err := i.TopicRoute(context.Background(), "T"); err != nil {
			t.Fatal(err)
		}
		mc.register(t, 8)
		time.Sleep(pollNameServerInterval - time.Nanosecond)
		synctest.Wait()
		if q := cachedQueues(i); q != 4 {
			t.Fatalf("cached route has %d queues before the first poll, want the first route's 4", q)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if q := cachedQueues(i); q != 8 {
			t.Fatalf("cached route has %d queues after the first poll, want the new route's 8", q)
		}
	})
}

// TestHeartbeatEveryHeartbeatInterval: a broker found in a route gets a heartbeat at once (a
// producer is registered), then one every heartbeatBrokerInterval, on synctest's clock.
func TestHeartbeatEveryHeartbeatInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mc := startMemCluster(t)
		mc.register(t, 4)
		i := acquireMem(t, mc, "heartbeat")
		if err := i.RegisterProducer("pg"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the round it asked for, to no broker yet, is over
		if _, err := i.TopicRoute(context.Background(), "T"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := mc.heartbeats.Load(); n != 1 {
			t.Fatalf("%d heartbeats once the broker was found, want 1", n)
		}
		for want := int32(2); want <= 3; want++ {
			time.Sleep(heartbeatBrokerInterval - time.Nanosecond)
			synctest.Wait()
			if n := mc.heartbeats.Load(); n != want-1 {
				t.Fatalf("%d heartbeats before round %d, want %d", n, want, want-1)
			}
			time.Sleep(time.Nanosecond)
			synctest.Wait()
			if n := mc.heartbeats.Load(); n != want {
				t.Fatalf("%d heartbeats after round %d, want %d", n, want, want)
			}
		}
	})
}
