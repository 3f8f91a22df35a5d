package broker

import (
	"slices"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/names"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

func TestHeartbeatRegistersConsumer(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 4)
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			group := "cg-" + name
			client := "10.0.0.1@" + name
			wiretest.Heartbeat(t, tr, tb.Addr, client, group, wiretest.Sub("T", "*"), wiretest.Sub(names.RetryTopic(group), "*"))
			code, ids := consumerList(t, tr, tb.Addr, group)
			if code != remoting.Success {
				t.Fatalf("consumer list code %d", code)
			}
			if diff := cmp.Diff([]string{client}, ids); diff != "" {
				t.Errorf("consumer ids (-want +got):\n%s", diff)
			}
			tc, ok := tb.topics.Get(names.RetryTopic(group))
			if !ok || tc.ReadQueueNums != 1 || tc.WriteQueueNums != 1 || tc.Perm != 6 {
				t.Errorf("retry topic %+v, exists %v", tc, ok)
			}
			if _, ok := tb.groups.Get(group); !ok {
				t.Error("subscription group not created")
			}
			st, ok := tb.clients.consumerGroupState(group)
			if !ok || st.MessageModel != protocol.Clustering || len(st.Subscriptions) != 2 || len(st.Connections) != 1 {
				t.Errorf("group state %+v", st)
			}
		})
	}
}

func TestHeartbeatProducerAndBadBody(t *testing.T) {
	tb := startTestBroker(t, nil)
	hb := protocol.HeartbeatData{ClientID: "p@1", ProducerDataSet: []protocol.ProducerData{{GroupName: "pg"}}}
	resp := invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.HeartBeat, nil, hb.Encode()))
	if resp.Code != remoting.Success {
		t.Fatalf("code %d", resp.Code)
	}
	if chs := tb.clients.producerChannels("pg"); len(chs) != 1 {
		t.Fatalf("producer channels %d", len(chs))
	}
	if ch, ok := tb.clients.clientChannel("p@1"); !ok || ch.Closed() {
		t.Error("client channel not found")
	}
	resp = invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.HeartBeat, nil, []byte("{")))
	if resp.Code != remoting.SystemError {
		t.Errorf("bad body: code %d", resp.Code)
	}
	resp = invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.CheckClientConfig, nil, []byte(`{}`)))
	if resp.Code != remoting.Success {
		t.Errorf("check client config: code %d", resp.Code)
	}
}

func TestConsumerListUnknownGroup(t *testing.T) {
	tb := startTestBroker(t, nil)
	resp := invoke(t, tb.InProc, tb.Addr, remoting.NewRequest(remoting.GetConsumerListByGroup,
		remoting.EncodeHeader(&protocol.ConsumerGroupHeader{ConsumerGroup: "nobody"}), nil))
	if resp.Code != remoting.SystemError || resp.Remark != "no consumer for this group, nobody" {
		t.Errorf("code %d remark %q", resp.Code, resp.Remark)
	}
	resp = invoke(t, tb.InProc, tb.Addr, remoting.NewRequest(remoting.GetConsumerListByGroup, nil, nil))
	if resp.Code != remoting.SystemError {
		t.Errorf("missing group: code %d", resp.Code)
	}
}

func TestNotifyConsumerIDsChanged(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 4)
	a, b := newTCPClient(t), tb.InProc
	na, nb := recordNotifies(a), recordNotifies(b)

	wiretest.Heartbeat(t, a, tb.Addr, "A@1", "g", wiretest.Sub("T", "*"))
	na.waitNotify(t, "g") // A joined: A is told
	wiretest.Heartbeat(t, a, tb.Addr, "A@1", "g", wiretest.Sub("T", "*"))
	na.noNotify(t, "g") // nothing changed

	wiretest.Heartbeat(t, b, tb.Addr, "B@1", "g", wiretest.Sub("T", "*"))
	na.waitNotify(t, "g")
	nb.waitNotify(t, "g")
	if _, ids := consumerList(t, a, tb.Addr, "g"); !slices.Equal(ids, []string{"A@1", "B@1"}) {
		t.Fatalf("ids %v", ids)
	}

	// A subscribes to one more topic: everyone is told.
	addTopic(tb, "U", 1)
	wiretest.Heartbeat(t, a, tb.Addr, "A@1", "g", wiretest.Sub("T", "*"), wiretest.Sub("U", "*"))
	na.waitNotify(t, "g")
	nb.waitNotify(t, "g")

	// B disconnects: A is told and B is gone.
	tb.InProc.CloseConn(tb.Addr)
	na.waitNotify(t, "g")
	eventually(t, "B removed", func() bool {
		_, ids := consumerList(t, a, tb.Addr, "g")
		return slices.Equal(ids, []string{"A@1"})
	})

	// Notification off for the group: no messages.
	cfg, _ := tb.groups.Find("g")
	cfg.NotifyConsumerIdsChangedEnable = false
	tb.groups.Update(cfg)
	c := newTCPClient(t)
	nc := recordNotifies(c)
	wiretest.Heartbeat(t, c, tb.Addr, "C@1", "g", wiretest.Sub("T", "*"))
	na.noNotify(t, "g")
	nc.noNotify(t, "g")
}

func TestNotifyOverTCPDisconnect(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 4)
	a, b := newTCPClient(t), newTCPClient(t)
	na := recordNotifies(a)
	wiretest.Heartbeat(t, a, tb.Addr, "A@1", "g", wiretest.Sub("T", "*"))
	wiretest.Heartbeat(t, b, tb.Addr, "B@1", "g", wiretest.Sub("T", "*"))
	na.waitNotify(t, "g")
	na.waitNotify(t, "g")
	b.CloseConn(tb.Addr)
	na.waitNotify(t, "g")
	if _, ids := consumerList(t, a, tb.Addr, "g"); !slices.Equal(ids, []string{"A@1"}) {
		t.Fatalf("ids %v", ids)
	}
}

func TestUnregisterClient(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 4)
	a := newTCPClient(t)
	na := recordNotifies(a)
	wiretest.Heartbeat(t, a, tb.Addr, "A@1", "g", wiretest.Sub("T", "*"))
	wiretest.Heartbeat(t, tb.InProc, tb.Addr, "B@1", "g", wiretest.Sub("T", "*"))
	na.waitNotify(t, "g")
	na.waitNotify(t, "g")
	resp := invoke(t, tb.InProc, tb.Addr, remoting.NewRequest(remoting.UnregisterClient,
		remoting.EncodeHeader(&protocol.UnregisterClientRequestHeader{ClientID: "B@1", ConsumerGroup: "g"}), nil))
	if resp.Code != remoting.Success {
		t.Fatalf("code %d", resp.Code)
	}
	na.waitNotify(t, "g")
	if _, ids := consumerList(t, a, tb.Addr, "g"); !slices.Equal(ids, []string{"A@1"}) {
		t.Fatalf("ids %v", ids)
	}
}

func TestDuplicateClientIDListedOnce(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 4)
	// One client reaching the broker over two connections.
	wiretest.Heartbeat(t, tb.TCP, tb.Addr, "A@1", "g", wiretest.Sub("T", "*"))
	wiretest.Heartbeat(t, tb.InProc, tb.Addr, "A@1", "g", wiretest.Sub("T", "*"))
	if _, ids := consumerList(t, tb.TCP, tb.Addr, "g"); !slices.Equal(ids, []string{"A@1"}) {
		t.Fatalf("ids %v", ids)
	}
}

func TestChannelExpiry(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Periods.ClientChannelExpiredTime = 300 * time.Millisecond })
	addTopic(tb, "T", 4)
	stale, live := newTCPClient(t), newTCPClient(t)
	nl := recordNotifies(live)
	wiretest.Heartbeat(t, stale, tb.Addr, "S@1", "g", wiretest.Sub("T", "*"))
	wiretest.Heartbeat(t, live, tb.Addr, "L@1", "g", wiretest.Sub("T", "*"), wiretest.Sub("U", "*"))
	// The live client keeps heartbeating g; it stops sending group g2 (it keeps the connection).
	wiretest.Heartbeat(t, live, tb.Addr, "L@1", "g2", wiretest.Sub("T", "*"))
	nl.waitNotify(t, "g")
	nl.waitNotify(t, "g2")
	staleCh, _ := tb.clients.clientChannel("S@1")
	deadline := time.Now().Add(10 * time.Second)
	for {
		wiretest.Heartbeat(t, live, tb.Addr, "L@1", "g", wiretest.Sub("T", "*"), wiretest.Sub("U", "*"))
		_, ids := consumerList(t, live, tb.Addr, "g")
		_, ids2 := consumerList(t, live, tb.Addr, "g2")
		if slices.Equal(ids, []string{"L@1"}) && len(ids2) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not expired: g %v g2 %v", ids, ids2)
		}
		time.Sleep(50 * time.Millisecond)
	}
	nl.waitNotify(t, "g") // the stale member left
	eventually(t, "stale connection closed", staleCh.Closed)
	liveCh, ok := tb.clients.clientChannel("L@1")
	if !ok || liveCh.Closed() {
		t.Error("the live client's connection was closed with its expired group")
	}
}

// TestExpressionChangeIsNotAGroupChange: RocketMQ 4.9's updateSubscription replaces a topic's
// subscription by a newer subVersion without reporting a change, so only membership (and the
// set of topics) makes the broker send NOTIFY_CONSUMER_IDS_CHANGED.
func TestExpressionChangeIsNotAGroupChange(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 4)
	a, b := newTCPClient(t), tb.InProc
	na, nb := recordNotifies(a), recordNotifies(b)
	wiretest.Heartbeat(t, a, tb.Addr, "A@1", "g", wiretest.Sub("T", "x"))
	na.waitNotify(t, "g")
	wiretest.Heartbeat(t, b, tb.Addr, "B@1", "g", wiretest.Sub("T", "x"))
	na.waitNotify(t, "g")
	nb.waitNotify(t, "g")

	wiretest.Heartbeat(t, a, tb.Addr, "A@1", "g", wiretest.Sub("T", "y"))
	na.noNotify(t, "g")
	nb.noNotify(t, "g")
	st, _ := tb.clients.consumerGroupState("g")
	if len(st.Subscriptions) != 1 || st.Subscriptions[0].SubString != "y" {
		t.Fatalf("subscriptions %+v, want T replaced by y", st.Subscriptions)
	}

	c := newTCPClient(t)
	nc := recordNotifies(c)
	wiretest.Heartbeat(t, c, tb.Addr, "C@1", "g", wiretest.Sub("T", "y"))
	na.waitNotify(t, "g")
	nb.waitNotify(t, "g")
	nc.waitNotify(t, "g")
}

// TestNotifyConsumerIdsChangedDisabled: the broker-wide switch (RocketMQ's
// notifyConsumerIdsChangedEnable false) silences joins, unregistrations and disconnections,
// while membership is still tracked.
func TestNotifyConsumerIdsChangedDisabled(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Broker.DisableNotifyConsumerIdsChanged = true })
	addTopic(tb, "T", 4)
	a, b, c := newTCPClient(t), newTCPClient(t), newTCPClient(t)
	na, nb := recordNotifies(a), recordNotifies(b)
	wiretest.Heartbeat(t, a, tb.Addr, "A@1", "g", wiretest.Sub("T", "*"))
	wiretest.Heartbeat(t, b, tb.Addr, "B@1", "g", wiretest.Sub("T", "*"))
	wiretest.Heartbeat(t, c, tb.Addr, "C@1", "g", wiretest.Sub("T", "*"))
	if _, ids := consumerList(t, a, tb.Addr, "g"); !slices.Equal(ids, []string{"A@1", "B@1", "C@1"}) {
		t.Fatalf("ids %v", ids)
	}
	resp := invoke(t, c, tb.Addr, remoting.NewRequest(remoting.UnregisterClient,
		remoting.EncodeHeader(&protocol.UnregisterClientRequestHeader{ClientID: "C@1", ConsumerGroup: "g"}), nil))
	if resp.Code != remoting.Success {
		t.Fatalf("unregister: code %d", resp.Code)
	}
	b.CloseConn(tb.Addr)
	eventually(t, "B and C gone", func() bool {
		_, ids := consumerList(t, a, tb.Addr, "g")
		return slices.Equal(ids, []string{"A@1"})
	})
	na.noNotify(t, "g")
	nb.noNotify(t, "g")
}
