package broker

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/protocol"
)

func TestSubscriptionUpdates(t *testing.T) {
	m := newConsumerManager(time.Now)
	ch := &wiretest.FakeChannel{Num: 1}
	reg := func(subs ...protocol.SubscriptionData) bool {
		changed, _ := m.registerConsumer(clientChannelInfo{ch: ch, clientID: "c"},
			&protocol.ConsumerData{GroupName: "g", SubscriptionDataSet: subs})
		return changed
	}
	at := func(topic, expr string, version int64) protocol.SubscriptionData {
		s := wiretest.Sub(topic, expr)
		s.SubVersion = version
		return s
	}
	expr := func(topic string) string {
		s, _, _ := m.findSubscription("g", topic)
		if s == nil {
			return ""
		}
		return s.data.SubString
	}
	if !reg(at("T", "a", 10)) {
		t.Error("first heartbeat: no change")
	}
	if reg(at("T", "a", 11)) {
		t.Error("newer version of the same expression counted as a change")
	}
	if reg(at("T", "b", 5)) || expr("T") != "a" {
		t.Errorf("older version replaced the subscription: %q", expr("T"))
	}
	// RocketMQ 4.9 replaces the expression without counting it as a change: members keep their
	// queues, so nobody needs to rebalance.
	if reg(at("T", "b", 12)) || expr("T") != "b" {
		t.Errorf("newer expression: %q, or counted as a change", expr("T"))
	}
	if !reg(at("T", "b", 13), at("U", "*", 13)) || expr("U") != "*" {
		t.Error("added topic")
	}
	if !reg(at("U", "*", 14)) || expr("T") != "" {
		t.Error("removed topic kept")
	}
	st, _ := m.snapshot("g")
	if diff := cmp.Diff([]string{"U"}, []string{st.Subscriptions[0].Topic}); diff != "" || len(st.Subscriptions) != 1 {
		t.Errorf("subscriptions %v", st.Subscriptions)
	}
}

func TestExpireKeepsChannelWithLiveGroups(t *testing.T) {
	clock := wiretest.NewFakeClock()
	m := newConsumerManager(clock.Now)
	a, b := &wiretest.FakeChannel{Num: 1}, &wiretest.FakeChannel{Num: 2}
	m.registerConsumer(clientChannelInfo{ch: a, clientID: "A"}, &protocol.ConsumerData{GroupName: "g1"})
	m.registerConsumer(clientChannelInfo{ch: b, clientID: "B"}, &protocol.ConsumerData{GroupName: "g2"})
	m.registerProducer("p", clientChannelInfo{ch: b, clientID: "B"})
	clock.Advance(time.Hour)
	m.registerConsumer(clientChannelInfo{ch: a, clientID: "A"}, &protocol.ConsumerData{GroupName: "g2"})
	changes, closeList := m.expire(time.Minute)
	if len(changes) != 2 {
		t.Errorf("changes %+v", changes)
	}
	if len(closeList) != 1 || closeList[0] != b {
		t.Errorf("close list %v", closeList)
	}
	if ids := m.consumerIDs("g2"); !cmp.Equal([]string{"A"}, ids) {
		t.Errorf("g2 %v", ids)
	}
	if ids := m.consumerIDs("g1"); ids != nil {
		t.Errorf("g1 %v", ids)
	}
	if chs := m.producerChannels("p"); len(chs) != 0 {
		t.Errorf("producer kept %v", chs)
	}
}

// The expiry rule: a registration lives for the timeout from when it was recorded, whatever
// time the request carrying it started; the caller's lastUpdate is not trusted.
func TestExpireCountsFromRecording(t *testing.T) {
	clock := wiretest.NewFakeClock()
	m := newConsumerManager(clock.Now)
	ch := &wiretest.FakeChannel{Num: 1}
	started := clock.Now()
	clock.Advance(3 * time.Minute) // a slow heartbeat: creating its groups took this long
	m.registerConsumer(clientChannelInfo{ch: ch, clientID: "A", lastUpdate: started}, &protocol.ConsumerData{GroupName: "g"})
	m.registerProducer("p", clientChannelInfo{ch: ch, clientID: "A", lastUpdate: started})
	if changes, closeList := m.expire(2 * time.Minute); len(changes) != 0 || len(closeList) != 0 {
		t.Fatalf("just-recorded registrations expired: changes %+v close %v", changes, closeList)
	}
	clock.Advance(2 * time.Minute)
	if changes, _ := m.expire(2 * time.Minute); len(changes) != 0 {
		t.Fatalf("expired at exactly the timeout: %+v", changes)
	}
	clock.Advance(time.Millisecond)
	changes, closeList := m.expire(2 * time.Minute)
	if len(changes) != 1 || len(closeList) != 1 || len(m.producerChannels("p")) != 0 {
		t.Fatalf("past the timeout: changes %+v close %v producers %v", changes, closeList, m.producerChannels("p"))
	}
}
