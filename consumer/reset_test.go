package consumer

import (
	"slices"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// TestResetOffsetReconsumes moves a running push consumer back in time through the broker
// (222 -> 220) and checks it consumes the same messages again, then answers its position
// through 223 -> 221.
func TestResetOffsetReconsumes(t *testing.T) {
	for _, tc := range []struct {
		kind    string
		orderly bool
	}{{"inproc", false}, {"tcp", false}, {"inproc", true}} {
		kind := tc.kind
		name := kind
		if tc.orderly {
			name += "-orderly"
		}
		t.Run(name, func(t *testing.T) {
			n := testNode(t)
			a := newAdmin(t, n)
			topic, group := "ResetT-"+name, "reset-g-"+name
			a.createTopic(topic, 2)
			start := time.Now().UnixMilli()
			eventually(t, "clock past the start", func() bool { return time.Now().UnixMilli() > start })
			bodies := a.sendN(topic, 2, 6, "m")

			var s seen
			opts := append(fastOptions(t, n, transportFor(t, n, kind), group, "i-"+name), WithOrderly(tc.orderly))
			pc := startConsumer(t, topic, "*", s.recorder("c"), opts...)
			eventually(t, "first consumption", func() bool { return settled(pc.p, topic, 3) && s.count() == 6 })
			eventually(t, "offsets on the broker", func() bool {
				for _, mq := range heldQueues(pc, topic) {
					if a.brokerOffset(group, mq) != 3 {
						return false
					}
				}
				return true
			})

			resp := a.invoke(n.BrokerAddr(), remoting.NewRequest(remoting.InvokeBrokerToResetOffset, remoting.EncodeHeader(
				&protocol.ResetOffsetRequestHeader{Topic: topic, Group: group, Timestamp: start}), nil))
			if resp.Code != remoting.Success {
				t.Fatalf("reset: %d %s", resp.Code, resp.Remark)
			}
			eventually(t, "consumed again", func() bool { return s.count() == 12 })
			want := slices.Concat(bodies, bodies)
			slices.Sort(want)
			if got := s.bodies(); !slices.Equal(got, want) {
				t.Fatalf("consumed %v, want every message twice", got)
			}
			eventually(t, "settled again", func() bool { return settled(pc.p, topic, 3) })

			resp = a.invoke(n.BrokerAddr(), remoting.NewRequest(remoting.InvokeBrokerToGetConsumerStats, remoting.EncodeHeader(
				&protocol.GetConsumerStatusRequestHeader{Topic: topic, Group: group}), nil))
			if resp.Code != remoting.Success {
				t.Fatalf("consumer status: %d %s", resp.Code, resp.Remark)
			}
			status, err := protocol.DecodeConsumerStatusBody(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			offsets := status.ConsumerTable[pc.ClientID()]
			if len(offsets) != 2 {
				t.Fatalf("consumer status %v, want the two queues of %s", status.ConsumerTable, pc.ClientID())
			}
			for mq, off := range offsets {
				if mq.Topic != topic || off != 3 {
					t.Errorf("%v at %d, want 3", mq, off)
				}
			}
		})
	}
}

// TestRunningInfoThroughBroker asks a running push consumer for its running info through the
// broker (307), as mqadmin consumerStatus does.
func TestRunningInfoThroughBroker(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	const topic, group = "RunInfoT", "runinfo-g"
	a.createTopic(topic, 2)
	a.sendN(topic, 2, 4, "m")
	var s seen
	pc := startConsumer(t, topic, "*", s.recorder("c"), fastOptions(t, n, nil, group, "runinfo")...)
	eventually(t, "consumed", func() bool { return settled(pc.p, topic, 2) })

	resp := a.invoke(n.BrokerAddr(), remoting.NewRequest(remoting.GetConsumerRunningInfo, remoting.EncodeHeader(
		&protocol.GetConsumerRunningInfoRequestHeader{ConsumerGroup: group, ClientID: pc.ClientID()}), nil))
	if resp.Code != remoting.Success {
		t.Fatalf("running info: %d %s", resp.Code, resp.Remark)
	}
	info, err := protocol.DecodeConsumerRunningInfo(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if info.Properties[protocol.PropConsumeType] != protocol.ConsumePassively || info.Properties[protocol.PropConsumeOrderly] != "false" ||
		info.Properties["consumerGroup"] != group {
		t.Errorf("properties %v", info.Properties)
	}
	var subs []string
	for _, sd := range info.SubscriptionSet {
		subs = append(subs, sd.Topic)
	}
	slices.Sort(subs)
	if want := []string{RetryTopic(group), topic}; !slices.Equal(subs, want) {
		t.Errorf("subscriptions %v, want %v", subs, want)
	}
	queues := 0
	for mq, q := range info.MQTable {
		if mq.Topic != topic {
			continue
		}
		queues++
		if q.CommitOffset != 2 || q.CachedMsgCount != 0 || q.Droped || q.LastPullTimestamp == 0 {
			t.Errorf("%v: %+v", mq, q)
		}
	}
	if queues != 2 {
		t.Errorf("queue table %v, want the 2 queues of %s", info.MQTable, topic)
	}
	// The four messages were pulled and consumed within the minute the rates cover.
	st, ok := info.StatusTable[topic]
	if !ok || st.PullTPS <= 0 || st.ConsumeOKTPS <= 0 || st.ConsumeFailedTPS != 0 || st.ConsumeFailedMsgs != 0 {
		t.Errorf("status table %+v, want %s pulled and consumed, nothing failed", info.StatusTable, topic)
	}
}
