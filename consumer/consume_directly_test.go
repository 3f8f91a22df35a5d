package consumer

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// TestConsumeMessageDirectlyThroughBroker asks a running push consumer, through the broker
// (309, as mqadmin's consumeMessageDirectly does), to run its listener on a message it
// consumed already: the listener sees the message again, the answer says it succeeded, and the
// group's offsets do not move.
func TestConsumeMessageDirectlyThroughBroker(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	const topic, group = "DirectT", "direct-g"
	a.createTopic(topic, 1)
	a.send(topic, 0, "TagD", "", "direct-body")
	var s seen
	pc := startConsumer(t, topic, "*", s.recorder("c"), fastOptions(t, n, nil, group, "direct")...)
	eventually(t, "consumed", func() bool { return s.count() == 1 })
	eventually(t, "offset on the broker", func() bool {
		return a.brokerOffset(group, MessageQueue{Topic: topic, BrokerName: "broker-a", QueueID: 0}) == 1
	})
	first := s.snapshot()[0].msg

	ask := func(h *protocol.ConsumeMessageDirectlyRequestHeader) *remoting.Command {
		return a.invoke(n.BrokerAddr(), remoting.NewRequest(remoting.ConsumeMessageDirectly, remoting.EncodeHeader(h), nil))
	}
	resp := ask(&protocol.ConsumeMessageDirectlyRequestHeader{ConsumerGroup: group, ClientID: pc.ClientID(), MsgID: first.OffsetMsgID})
	if resp.Code != remoting.Success {
		t.Fatalf("consume directly: %d %s", resp.Code, resp.Remark)
	}
	var result struct {
		Order, AutoCommit bool
		ConsumeResult     int
		Remark            string
	}
	if err := json.Unmarshal(resp.Body, &result); err != nil {
		t.Fatalf("answer %q: %v", resp.Body, err)
	}
	if result.ConsumeResult != 0 || !result.AutoCommit || result.Order {
		t.Fatalf("answer %+v, want CR_SUCCESS (0), autoCommit, not orderly", result)
	}
	msgs := s.snapshot()
	if len(msgs) != 2 || msgs[1].body != "direct-body" || msgs[1].msg.Tags != "TagD" || msgs[1].msg.Topic != topic {
		t.Fatalf("listener saw %d messages, the last %+v; want the message again", len(msgs), msgs[len(msgs)-1])
	}
	if off := a.brokerOffset(group, MessageQueue{Topic: topic, BrokerName: "broker-a", QueueID: 0}); off != 1 {
		t.Fatalf("group offset %d after consuming directly, want 1 (untouched)", off)
	}

	// An id that is not an offset message id, and a client that is not online, are refused
	// with a remark; neither reaches a listener.
	if resp := ask(&protocol.ConsumeMessageDirectlyRequestHeader{ConsumerGroup: group, ClientID: pc.ClientID(), MsgID: "zz"}); resp.Code != remoting.SystemError {
		t.Fatalf("bad msgId: %d %s", resp.Code, resp.Remark)
	}
	if resp := ask(&protocol.ConsumeMessageDirectlyRequestHeader{ConsumerGroup: group, ClientID: "nobody@1", MsgID: first.OffsetMsgID}); resp.Code != remoting.SystemError {
		t.Fatalf("client not online: %d %s", resp.Code, resp.Remark)
	}
	if s.count() != 2 {
		t.Fatalf("listener called %d times, want 2", s.count())
	}
}

// A dead letter consumed directly (RocketMQ dashboard's re-send of a DLQ message) reaches the
// listener of the topic it was first sent to: the record's topic is %DLQ%<group>, which the
// group does not subscribe to, and RETRY_TOPIC names the original.
func TestConsumeDeadLetterDirectly(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	const topic, group = "DirectDead", "direct-dead-g"
	a.createTopic(topic, 1)
	var failing atomic.Bool
	failing.Store(true)
	var s seen
	pc := startConsumer(t, topic, "*", func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
		s.add("c", msgs)
		if failing.Load() {
			return ConsumeRetryLater, nil
		}
		return ConsumeSuccess, nil
	}, append(fastOptions(t, n, nil, group, "direct-dead"), WithMaxReconsumeTimes(0))...)
	a.send(topic, 0, "TagX", "", "dead-body")

	var dead seen
	startConsumer(t, DLQTopic(group), "*", dead.recorder("ops"), fastOptions(t, n, nil, "direct-dead-ops", "direct-dead-ops")...)
	eventually(t, "the dead letter", func() bool { return dead.count() == 1 })
	letter := dead.snapshot()[0].msg
	failing.Store(false)

	resp := a.invoke(n.BrokerAddr(), remoting.NewRequest(remoting.ConsumeMessageDirectly, remoting.EncodeHeader(
		&protocol.ConsumeMessageDirectlyRequestHeader{ConsumerGroup: group, ClientID: pc.ClientID(), MsgID: letter.OffsetMsgID}), nil))
	if resp.Code != remoting.Success {
		t.Fatalf("consume the dead letter directly: %d %s", resp.Code, resp.Remark)
	}
	var result struct{ ConsumeResult int }
	if err := json.Unmarshal(resp.Body, &result); err != nil || result.ConsumeResult != 0 {
		t.Fatalf("answer %q (%v), want CR_SUCCESS (0)", resp.Body, err)
	}
	msgs := s.snapshot()
	if len(msgs) != 2 || msgs[1].body != "dead-body" || msgs[1].msg.Topic != topic || msgs[1].msg.Tags != "TagX" {
		t.Fatalf("listener saw %d messages, the last %+v; want the dead letter under topic %s", len(msgs), msgs[len(msgs)-1], topic)
	}
}
