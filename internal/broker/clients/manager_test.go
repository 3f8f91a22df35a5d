package clients

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/protocol"
)

func TestSubscriptionUpdates(t *testing.T) {
	m := NewManager(time.Now)
	ch := &wiretest.FakeChannel{Num: 1}
	reg := func(subs ...protocol.SubscriptionData) bool {
		changed, _ := m.RegisterConsumer(ChannelInfo{Channel: ch, ClientID: "c"},
			&protocol.ConsumerData{GroupName: "g", SubscriptionDataSet: subs})
		return changed
	}
	at := func(topic, expr string, version int64) protocol.SubscriptionData {
		s := wiretest.Sub(topic, expr)
		s.SubVersion = version
		return s
	}
	expr := func(topic string) string {
		s, _, _ := m.FindSubscription("g", topic)
		if s == nil {
			return ""
		}
		return s.Data().SubString
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
	st, _ := m.Snapshot("g")
	if diff := cmp.Diff([]string{"U"}, []string{st.Subscriptions[0].Topic}); diff != "" || len(st.Subscriptions) != 1 {
		t.Errorf("subscriptions %v", st.Subscriptions)
	}
}

func TestExpireKeepsChannelWithLiveGroups(t *testing.T) {
	clock := wiretest.NewFakeClock()
	m := NewManager(clock.Now)
	a, b := &wiretest.FakeChannel{Num: 1}, &wiretest.FakeChannel{Num: 2}
	m.RegisterConsumer(ChannelInfo{Channel: a, ClientID: "A"}, &protocol.ConsumerData{GroupName: "g1"})
	m.RegisterConsumer(ChannelInfo{Channel: b, ClientID: "B"}, &protocol.ConsumerData{GroupName: "g2"})
	m.RegisterProducer("p", ChannelInfo{Channel: b, ClientID: "B"})
	clock.Advance(time.Hour)
	m.RegisterConsumer(ChannelInfo{Channel: a, ClientID: "A"}, &protocol.ConsumerData{GroupName: "g2"})
	changes, closeList := m.Expire(time.Minute)
	if len(changes) != 2 {
		t.Errorf("changes %+v", changes)
	}
	if len(closeList) != 1 || closeList[0] != b {
		t.Errorf("close list %v", closeList)
	}
	if ids := m.ConsumerIDs("g2"); !cmp.Equal([]string{"A"}, ids) {
		t.Errorf("g2 %v", ids)
	}
	if ids := m.ConsumerIDs("g1"); ids != nil {
		t.Errorf("g1 %v", ids)
	}
	if chs := m.ProducerChannels("p"); len(chs) != 0 {
		t.Errorf("producer kept %v", chs)
	}
}

// The expiry rule: a registration lives for the timeout from when it was recorded, whatever
// time the request carrying it started; the caller's lastUpdate is not trusted.
func TestExpireCountsFromRecording(t *testing.T) {
	clock := wiretest.NewFakeClock()
	m := NewManager(clock.Now)
	ch := &wiretest.FakeChannel{Num: 1}
	started := clock.Now()
	clock.Advance(3 * time.Minute) // a slow heartbeat: creating its groups took this long
	m.RegisterConsumer(ChannelInfo{Channel: ch, ClientID: "A", lastUpdate: started}, &protocol.ConsumerData{GroupName: "g"})
	m.RegisterProducer("p", ChannelInfo{Channel: ch, ClientID: "A", lastUpdate: started})
	if changes, closeList := m.Expire(2 * time.Minute); len(changes) != 0 || len(closeList) != 0 {
		t.Fatalf("just-recorded registrations expired: changes %+v close %v", changes, closeList)
	}
	clock.Advance(2 * time.Minute)
	if changes, _ := m.Expire(2 * time.Minute); len(changes) != 0 {
		t.Fatalf("expired at exactly the timeout: %+v", changes)
	}
	clock.Advance(time.Millisecond)
	changes, closeList := m.Expire(2 * time.Minute)
	if len(changes) != 1 || len(closeList) != 1 || len(m.ProducerChannels("p")) != 0 {
		t.Fatalf("past the timeout: changes %+v close %v producers %v", changes, closeList, m.ProducerChannels("p"))
	}
}

// TestMember: a group's member is found by client id, not in another group, and not once its
// connection closed.
func TestMember(t *testing.T) {
	m := NewManager(time.Now)
	a, b := &wiretest.FakeChannel{Num: 1}, &wiretest.FakeChannel{Num: 2}
	m.RegisterConsumer(ChannelInfo{Channel: a, ClientID: "A", Version: 7}, &protocol.ConsumerData{GroupName: "g"})
	m.RegisterConsumer(ChannelInfo{Channel: b, ClientID: "B"}, &protocol.ConsumerData{GroupName: "h"})
	if c, ok := m.Member("g", "A"); !ok || c.Channel != a || c.Version != 7 {
		t.Errorf("Member(g, A) = %+v, %t", c, ok)
	}
	if c, ok := m.Member("g", "B"); ok {
		t.Errorf("Member(g, B) found %+v from another group", c)
	}
	_ = a.Close()
	if c, ok := m.Member("g", "A"); ok {
		t.Errorf("Member(g, A) found %+v after its connection closed", c)
	}
}

// TestAdopt: a broker replacing another takes its open registrations with their subscriptions
// and stamps (each expires when it would have on the old broker), skips closed connections,
// and keeps what it recorded itself.
func TestAdopt(t *testing.T) {
	clock := wiretest.NewFakeClock()
	old := NewManager(clock.Now)
	a, b, gone := &wiretest.FakeChannel{Num: 1}, &wiretest.FakeChannel{Num: 2}, &wiretest.FakeChannel{Num: 3}
	sub := &protocol.ConsumerData{GroupName: "g", MessageModel: "CLUSTERING", SubscriptionDataSet: []protocol.SubscriptionData{wiretest.Sub("T", "x")}}
	old.RegisterConsumer(ChannelInfo{Channel: a, ClientID: "A"}, sub)
	old.RegisterConsumer(ChannelInfo{Channel: gone, ClientID: "C"}, sub)
	old.RegisterConsumer(ChannelInfo{Channel: gone, ClientID: "C"}, &protocol.ConsumerData{GroupName: "only-gone"})
	old.RegisterConsumer(ChannelInfo{Channel: a, ClientID: "A"}, &protocol.ConsumerData{GroupName: "k"})
	old.RegisterProducer("p", ChannelInfo{Channel: a, ClientID: "A"})
	old.RegisterProducer("p", ChannelInfo{Channel: gone, ClientID: "C"})
	clock.Advance(time.Minute)
	old.RegisterConsumer(ChannelInfo{Channel: b, ClientID: "B"}, sub)
	old.RegisterConsumer(ChannelInfo{Channel: b, ClientID: "B"}, &protocol.ConsumerData{GroupName: "k"})
	_ = gone.Close()

	m := NewManager(clock.Now)
	// B's heartbeat for k reached the new broker first, under another client id: that newer
	// record stays.
	m.RegisterConsumer(ChannelInfo{Channel: b, ClientID: "B2"}, &protocol.ConsumerData{GroupName: "k"})
	m.Adopt(old)
	if ids := m.ConsumerIDs("g"); !cmp.Equal([]string{"A", "B"}, ids) {
		t.Errorf("group g after adoption: %v, want [A B]", ids)
	}
	if ids := m.ConsumerIDs("k"); !cmp.Equal([]string{"A", "B2"}, ids) {
		t.Errorf("group k after adoption: %v, want [A B2]", ids)
	}
	if ids := m.ConsumerIDs("only-gone"); ids != nil {
		t.Errorf("a group of a closed connection adopted: %v", ids)
	}
	if s, known, model := m.FindSubscription("g", "T"); s == nil || !known || model != "CLUSTERING" || s.Data().SubString != "x" {
		t.Errorf("subscription of g to T: %v, known %t, model %q", s, known, model)
	}
	if chs := m.ProducerChannels("p"); len(chs) != 1 || chs[0] != a {
		t.Errorf("producers of p: %v, want only A's", chs)
	}
	// A was recorded a minute before B: 45 s later, with a timeout of 90 s, only A is past it.
	clock.Advance(45 * time.Second)
	changes, _ := m.Expire(90 * time.Second)
	if len(changes) != 2 {
		t.Fatalf("expiry after adoption: %+v, want g and k losing A", changes)
	}
	if ids := m.ConsumerIDs("g"); !cmp.Equal([]string{"B"}, ids) {
		t.Errorf("group g after expiry: %v, want [B]", ids)
	}
	if chs := m.ProducerChannels("p"); len(chs) != 0 {
		t.Errorf("A's producer registration outlived its stamp: %v", chs)
	}
	// The old table was only read.
	if ids := old.ConsumerIDs("g"); !cmp.Equal([]string{"A", "B", "C"}, ids) {
		t.Errorf("old table changed by the adoption: %v", ids)
	}
}

// TestDropClosed: registrations of closed connections go, and the groups that lost members
// are reported with the members left.
func TestDropClosed(t *testing.T) {
	m := NewManager(time.Now)
	a, b := &wiretest.FakeChannel{Num: 1}, &wiretest.FakeChannel{Num: 2}
	m.RegisterConsumer(ChannelInfo{Channel: a, ClientID: "A"}, &protocol.ConsumerData{GroupName: "g"})
	m.RegisterConsumer(ChannelInfo{Channel: b, ClientID: "B"}, &protocol.ConsumerData{GroupName: "g"})
	m.RegisterConsumer(ChannelInfo{Channel: b, ClientID: "B"}, &protocol.ConsumerData{GroupName: "h"})
	m.RegisterProducer("p", ChannelInfo{Channel: b, ClientID: "B"})
	if changes := m.DropClosed(); len(changes) != 0 {
		t.Fatalf("nothing closed, changes %+v", changes)
	}
	_ = b.Close()
	changes := m.DropClosed()
	if len(changes) != 2 {
		t.Fatalf("changes %+v, want g and h", changes)
	}
	for _, c := range changes {
		switch c.Group {
		case "g":
			if len(c.Channels) != 1 || c.Channels[0] != a {
				t.Errorf("g's members left: %v", c.Channels)
			}
		case "h":
			if len(c.Channels) != 0 {
				t.Errorf("h's members left: %v", c.Channels)
			}
		default:
			t.Errorf("unexpected group %q", c.Group)
		}
	}
	if ids := m.ConsumerIDs("h"); ids != nil {
		t.Errorf("h kept: %v", ids)
	}
	if chs := m.ProducerChannels("p"); len(chs) != 0 {
		t.Errorf("producer kept: %v", chs)
	}
}
