package consumer

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// sendBackSpy passes requests on to a real transport, recording every CONSUMER_SEND_MSG_BACK
// header and every send to a retry topic; it answers either itself with SYSTEM_ERROR, as a
// broker that cannot take them would, while asked to.
type sendBackSpy struct {
	remoting.Transport
	refuse        atomic.Bool  // answer send-backs SYSTEM_ERROR
	refuseResends atomic.Bool  // answer sends to retry topics SYSTEM_ERROR
	resendAnswer  atomic.Int32 // when set, answer sends to retry topics with this code

	mu      sync.Mutex
	backs   []protocol.ConsumerSendMsgBackRequestHeader
	resends []protocol.SendMessageRequestHeader
}

func (s *sendBackSpy) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	switch req.Code {
	case remoting.ConsumerSendMsgBack:
		var h protocol.ConsumerSendMsgBackRequestHeader
		if err := h.Decode(req.ExtFields); err == nil {
			s.mu.Lock()
			s.backs = append(s.backs, h)
			s.mu.Unlock()
		}
		if s.refuse.Load() {
			return remoting.NewResponse(remoting.SystemError, "send back refused by the test"), nil
		}
	case remoting.SendMessageV2:
		var h protocol.SendMessageRequestHeader
		if err := (*protocol.SendMessageRequestHeaderV2)(&h).Decode(req.ExtFields); err == nil && isRetryTopic(h.Topic) {
			s.mu.Lock()
			s.resends = append(s.resends, h)
			s.mu.Unlock()
			if s.refuseResends.Load() {
				return remoting.NewResponse(remoting.SystemError, "resend refused by the test"), nil
			}
			if code := s.resendAnswer.Load(); code != 0 {
				return remoting.NewResponse(code, "answered by the test"), nil
			}
		}
	}
	return s.Transport.InvokeSync(ctx, addr, req)
}

func (s *sendBackSpy) recorded() ([]protocol.ConsumerSendMsgBackRequestHeader, []protocol.SendMessageRequestHeader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.backs), slices.Clone(s.resends)
}

// spyFor wraps the in-process transport of n, or a TCP client, in a sendBackSpy closed at
// cleanup.
func spyFor(t *testing.T, kind string, n interface{ NewTransport() remoting.Transport }) *sendBackSpy {
	t.Helper()
	var tr remoting.Transport
	if kind == "tcp" {
		tr = remoting.NewClient(remoting.ClientOptions{})
	} else {
		tr = n.NewTransport()
	}
	t.Cleanup(func() { tr.Close() })
	return &sendBackSpy{Transport: tr}
}

// A failed send-back does not leave the message to be consumed again locally: the consumer
// resends it to the group's retry topic itself (RocketMQ's sendMessageBack fallback), so it
// comes back from there like any retried message (the first topic restored, the same id, one
// more reconsume), and the queue's offset moves past it at once.
func TestFailedSendBackIsResent(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			n := testNode(t)
			a := newAdmin(t, n)
			a.createTopic("resend", 1)
			spy := spyFor(t, kind, n)
			spy.refuse.Store(true)
			var got seen
			listener := func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
				got.add("c", msgs)
				if msgs[0].ReconsumeTimes == 0 {
					return ConsumeRetryLater, nil
				}
				return ConsumeSuccess, nil
			}
			opts := append(fastOptions(t, n, spy, "g-resend", "resend-"+kind), WithMaxReconsumeTimes(5))
			pc := startConsumer(t, "resend", "*", listener, opts...)
			a.sendN("resend", 1, 2, "r")
			eventually(t, "both messages redelivered", func() bool { return got.count() >= 4 })

			byBody := map[string][]*Message{}
			for _, s := range got.snapshot() {
				byBody[s.body] = append(byBody[s.body], s.msg)
			}
			for _, body := range []string{"r-0", "r-1"} {
				ms := byBody[body]
				if len(ms) != 2 {
					t.Fatalf("%s delivered %d times, want 2", body, len(ms))
				}
				first, again := ms[0], ms[1]
				if again.Topic != "resend" || again.Queue.Topic != RetryTopic("g-resend") || again.ReconsumeTimes != 1 ||
					again.MsgID != first.MsgID || again.Properties[message.PropertyOriginMessageID] != first.MsgID {
					t.Errorf("redelivery of %s: topic %q from %q, reconsume %d, id %q (first %q), origin %q", body,
						again.Topic, again.Queue.Topic, again.ReconsumeTimes, again.MsgID, first.MsgID,
						again.Properties[message.PropertyOriginMessageID])
				}
				for _, k := range []string{message.PropertyTransactionPrepared, message.PropertyMaxReconsumeTimes} {
					if _, ok := again.Properties[k]; ok {
						t.Errorf("redelivery of %s carries %s", body, k)
					}
				}
			}
			backs, resends := spy.recorded()
			if len(backs) != 2 || len(resends) != 2 {
				t.Fatalf("%d send-backs and %d resends, want 2 of each", len(backs), len(resends))
			}
			for _, h := range resends {
				props := message.UnmarshalProperties([]byte(h.Properties))
				if h.ProducerGroup != "CLIENT_INNER_PRODUCER" || h.ReconsumeTimes != 1 || h.MaxReconsumeTimes != 5 ||
					props[message.PropertyDelayTimeLevel] != "3" || props[message.PropertyRetryTopic] != "resend" {
					t.Errorf("resend header %+v, properties %v", h, props)
				}
			}
			mq := MessageQueue{Topic: "resend", BrokerName: "broker-a", QueueID: 0}
			eventually(t, "offset past both messages", func() bool {
				off, ok := pc.p.store.read(mq)
				return ok && off == 2
			})
		})
	}
}

// An orderly message past its limit whose DLQ send-back fails reaches the DLQ through the
// resend: its header carries the reconsume times unchanged, at the limit, so the broker's
// retry-topic check moves it to %DLQ%<group> (RocketMQ's orderly sendMessageBack).
func TestOrderlyDLQThroughResend(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("poison2", 1)
	spy := spyFor(t, "inproc", n)
	spy.refuse.Store(true)
	var got seen
	listener := func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
		if string(msgs[0].Body) == "p-1" {
			return SuspendCurrentQueueAMoment, nil
		}
		got.add("o", msgs)
		return ConsumeSuccess, nil
	}
	opts := append(fastOptions(t, n, spy, "g-poison2", "p2"),
		WithOrderly(true), WithSuspendDelay(10*time.Millisecond), WithMaxReconsumeTimes(2))
	startConsumer(t, "poison2", "*", listener, opts...)
	a.sendN("poison2", 1, 3, "p")
	eventually(t, "the rest of the queue", func() bool { return got.count() >= 2 })
	eventually(t, "message in the DLQ", func() bool { return a.maxOffset(DLQTopic("g-poison2"), 0) == 1 })
	if n := a.maxOffset(RetryTopic("g-poison2"), 0); n != 0 {
		t.Errorf("retry topic holds %d messages; the dead letter belongs in the DLQ only", n)
	}
	_, resends := spy.recorded()
	if len(resends) != 1 || resends[0].ReconsumeTimes != 2 || resends[0].MaxReconsumeTimes != 2 {
		t.Errorf("resends %+v, want one with reconsume times 2 and max 2", resends)
	}
}

// When the resend fails too, the message stays in the cache and is consumed again locally
// after the send-back retry delay, and the queue's offset waits for it.
func TestResendFailureConsumesAgain(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("stuck", 1)
	spy := spyFor(t, "inproc", n)
	spy.refuse.Store(true)
	spy.refuseResends.Store(true)
	var got seen
	listener := func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
		got.add("c", msgs)
		if got.count() == 1 {
			return ConsumeRetryLater, nil
		}
		return ConsumeSuccess, nil
	}
	opts := append(fastOptions(t, n, spy, "g-stuck", "stuck"),
		WithSendBackRetryDelay(50*time.Millisecond))
	pc := startConsumer(t, "stuck", "*", listener, opts...)
	a.sendN("stuck", 1, 1, "s")
	eventually(t, "consumed again locally", func() bool { return got.count() >= 2 })
	if again := got.snapshot()[1].msg; again.Queue.Topic != "stuck" {
		t.Errorf("second delivery from %q, want the local cache of stuck", again.Queue.Topic)
	}
	backs, resends := spy.recorded()
	if len(backs) != 1 || len(resends) == 0 {
		t.Errorf("%d send-backs and %d resend attempts, want 1 and some", len(backs), len(resends))
	}
	mq := MessageQueue{Topic: "stuck", BrokerName: "broker-a", QueueID: 0}
	eventually(t, "offset past the message once consumed", func() bool {
		off, ok := pc.p.store.read(mq)
		return ok && off == 1
	})
}

// A resend answered FLUSH_SLAVE_TIMEOUT (stored, not yet on a slave) does not hand the message
// over: the copy may go with its broker, so the message is consumed again locally. It used to
// count as handed over, as a producer's send with that status is stored (internal/sim, seed 54:
// a message asked for again was lost in a failover).
func TestResendNotReplicatedConsumesAgain(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("unsure", 1)
	spy := spyFor(t, "inproc", n)
	spy.refuse.Store(true)
	spy.resendAnswer.Store(remoting.FlushSlaveTimeout)
	var got seen
	listener := func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
		got.add("c", msgs)
		if got.count() == 1 {
			return ConsumeRetryLater, nil
		}
		return ConsumeSuccess, nil
	}
	opts := append(fastOptions(t, n, spy, "g-unsure", "unsure"), WithSendBackRetryDelay(50*time.Millisecond))
	startConsumer(t, "unsure", "*", listener, opts...)
	a.sendN("unsure", 1, 1, "s")
	eventually(t, "consumed again locally", func() bool { return got.count() >= 2 })
	if again := got.snapshot()[1].msg; again.Queue.Topic != "unsure" {
		t.Errorf("second delivery from %q, want the local cache of unsure", again.Queue.Topic)
	}
}

// A message whose listener call outlives the consume timeout is sent back with delay level 3
// whatever its reconsume times (RocketMQ 4.9's cleanExpiredMsg), not 3 + reconsume times:
// here a message already retried once.
func TestExpiredMessageDelayLevel(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("expire", 1)
	spy := spyFor(t, "inproc", n)
	var got seen
	listener := func(ctx context.Context, msgs []*Message) (ConsumeResult, error) {
		got.add("e", msgs)
		switch msgs[0].ReconsumeTimes {
		case 0:
			return ConsumeRetryLater, nil
		case 1:
			select { // outlive the consume timeout
			case <-time.After(1500 * time.Millisecond):
			case <-ctx.Done():
			}
		}
		return ConsumeSuccess, nil
	}
	opts := append(fastOptions(t, n, spy, "g-expire", "expire"), WithConsumeTimeout(200*time.Millisecond))
	startConsumer(t, "expire", "*", listener, opts...)
	a.sendN("expire", 1, 1, "e")
	eventually(t, "the expired message redelivered", func() bool {
		for _, s := range got.snapshot() {
			if s.msg.ReconsumeTimes == 2 {
				return true
			}
		}
		return false
	})
	backs, _ := spy.recorded()
	var levels []int32
	for _, h := range backs {
		levels = append(levels, h.DelayLevel)
	}
	if !slices.Equal(levels[:min(2, len(levels))], []int32{0, 3}) {
		t.Errorf("send-back delay levels %v, want 0 (the failure, broker's choice) then 3 (expired)", levels)
	}
}
