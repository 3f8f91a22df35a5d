package consumer

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// fakeTransport answers the offset requests with fixed offsets and records the codes asked.
type fakeTransport struct {
	answers map[int32]int64
	asked   []int32
}

func (f *fakeTransport) InvokeSync(_ context.Context, _ string, req *remoting.Command) (*remoting.Command, error) {
	f.asked = append(f.asked, req.Code)
	off, ok := f.answers[req.Code]
	if !ok {
		return remoting.NewResponse(remoting.QueryNotFound, "no offset"), nil
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = remoting.EncodeHeader(&protocol.OffsetResponseHeader{Offset: off})
	return resp, nil
}

func (f *fakeTransport) InvokeAsync(context.Context, string, *remoting.Command, func(*remoting.Command, error)) error {
	return nil
}
func (f *fakeTransport) InvokeOneway(context.Context, string, *remoting.Command) error { return nil }
func (f *fakeTransport) RegisterProcessor(int32, remoting.Processor)                   {}
func (f *fakeTransport) Close() error                                                  { return nil }

// fakeInstance is an instance with one broker, "b" at "addr".
type fakeInstance struct{ tr remoting.Transport }

func (f fakeInstance) ClientID() string                              { return "1.2.3.4@test" }
func (f fakeInstance) Transport() remoting.Transport                 { return f.tr }
func (f fakeInstance) RegisterConsumer(string, clientConsumer) error { return nil }
func (f fakeInstance) UnregisterConsumer(string)                     {}
func (f fakeInstance) BrokerAddr(string, int64) string               { return "addr" }
func (f fakeInstance) MasterAddr(string) string                      { return "addr" }
func (f fakeInstance) AdminAddr(string) string                       { return "addr" }
func (f fakeInstance) AnyBrokerAddrOfTopic(string) string            { return "addr" }
func (f fakeInstance) SendHeartbeatToAllBrokers(context.Context)     {}
func (f fakeInstance) Release() error                                { return nil }
func (f fakeInstance) TopicRoute(context.Context, string) (*route.TopicRouteData, error) {
	return &route.TopicRouteData{}, nil
}

// CachedTopicRoute has nothing cached: callers take TopicRoute, which the fakes built on this
// one answer.
func (f fakeInstance) CachedTopicRoute(string) *route.TopicRouteData { return nil }

// The consume-from-where table of docs/protocol.md §10.3, for a queue without a stored offset, and a
// stored offset winning over it.
func TestStartOffset(t *testing.T) {
	ts := time.UnixMilli(1700000000000)
	normal := MessageQueue{Topic: "T", BrokerName: "b"}
	retry := MessageQueue{Topic: RetryTopic("g"), BrokerName: "b"}
	cases := []struct {
		name   string
		from   From
		mq     MessageQueue
		stored bool
		want   int64
		asked  []int32
	}{
		{"last normal", FromLastOffset, normal, false, 50, []int32{remoting.QueryConsumerOffset, remoting.GetMaxOffset}},
		{"last retry", FromLastOffset, retry, false, 0, []int32{remoting.QueryConsumerOffset}},
		{"first normal", FromFirstOffset, normal, false, 0, []int32{remoting.QueryConsumerOffset}},
		{"first retry", FromFirstOffset, retry, false, 0, []int32{remoting.QueryConsumerOffset}},
		{"timestamp normal", FromTimestamp, normal, false, 30, []int32{remoting.QueryConsumerOffset, remoting.SearchOffsetByTimestamp}},
		{"timestamp retry", FromTimestamp, retry, false, 50, []int32{remoting.QueryConsumerOffset, remoting.GetMaxOffset}},
		{"stored", FromLastOffset, normal, true, 7, []int32{remoting.QueryConsumerOffset}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := &fakeTransport{answers: map[int32]int64{remoting.GetMaxOffset: 50, remoting.SearchOffsetByTimestamp: 30}}
			if c.stored {
				tr.answers[remoting.QueryConsumerOffset] = 7
			}
			inst := fakeInstance{tr: tr}
			p := &puller{cfg: pullerConfig{group: "g", from: c.from, fromTime: ts}, inst: inst,
				store: newRemoteOffsetStore("g", inst, false, testLogger(t))}
			got, err := p.startOffset(context.Background(), c.mq)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("start offset %d, want %d", got, c.want)
			}
			if diff := cmp.Diff(c.asked, tr.asked); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

// failingSendBack is a fakeTransport that refuses CONSUMER_SEND_MSG_BACK.
type failingSendBack struct{ fakeTransport }

func (f *failingSendBack) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	if req.Code == remoting.ConsumerSendMsgBack {
		f.asked = append(f.asked, req.Code)
		return remoting.NewResponse(remoting.SystemError, "refused"), nil
	}
	return f.fakeTransport.InvokeSync(ctx, addr, req)
}

// A failed batch whose send-back the broker refuses stays cached (the offset does not pass it)
// and is handed to the consume service again after the retry delay.
func TestSendBackFailureConsumesAgain(t *testing.T) {
	tr := &failingSendBack{fakeTransport{answers: map[int32]int64{}}}
	inst := fakeInstance{tr: tr}
	cfg := defaultConfig()
	cfg.group, cfg.sendBackRetryDelay = "g", 20*time.Millisecond
	pc := &PushConsumer{cfg: cfg.pushConfig, work: newWorkQueue()}
	pc.p = startedPuller(t, cfg.pullerConfig, pc, inst)
	pc.consumeCtx = pc.p.ctx
	pc.p.mu.subs = map[string]*subscription{"T": newSubscription("T", "*", func(context.Context, []*Message) (ConsumeResult, error) {
		return ConsumeRetryLater, nil
	})}
	mq := MessageQueue{Topic: "T", BrokerName: "b"}
	qs := &queueState{mq: mq, pq: newProcessQueue(mq)}
	msgs := msgsAt(0, 1)
	for _, m := range msgs {
		m.Topic, m.Queue = "T", mq
	}
	qs.pq.put(msgs)
	pc.consumeConcurrently(consumeRequest{qs: qs, msgs: msgs}, nil)
	if c, _, _ := qs.pq.stats(); c != 2 {
		t.Errorf("%d messages cached after the failed send-back, want 2", c)
	}
	if off, ok := pc.p.store.read(mq); ok && off > 0 {
		t.Errorf("offset committed (%d) past messages the broker never took", off)
	}
	// Batches of one (the default consume batch size).
	eventually(t, "both messages submitted again", func() bool { return pc.work.len() >= 2 })
	var again []int64
	for range 2 {
		req, _ := pc.work.pop()
		if req.qs != qs {
			t.Fatal("resubmitted to another queue")
		}
		for _, m := range req.msgs {
			again = append(again, m.QueueOffset)
		}
	}
	if !slices.Equal(again, []int64{0, 1}) {
		t.Errorf("consumed again: %v, want offsets 0 and 1", again)
	}
	if len(tr.asked) != 2 {
		t.Errorf("%d send-backs tried, want 2", len(tr.asked))
	}
}

type closeCounter struct {
	fakeTransport
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// An owned transport is closed when NewPushConsumer fails, when a later option replaces it, and
// when a consumer that never started is closed; a lent one never is.
func TestOwnedTransportClosed(t *testing.T) {
	bad, replaced, kept, lent := &closeCounter{}, &closeCounter{}, &closeCounter{}, &closeCounter{}
	if _, err := NewPushConsumer(WithOwnedTransport(bad), WithNameServers("127.0.0.1:1")); err == nil {
		t.Fatal("no group accepted")
	}
	pc, err := NewPushConsumer(WithGroup("g"), WithNameServers("127.0.0.1:1"), WithOwnedTransport(replaced),
		WithTransport(lent), WithOwnedTransport(kept))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Close(); err != nil {
		t.Fatal(err)
	}
	pc.Close()
	if bad.closed != 1 || replaced.closed != 1 || kept.closed != 1 || lent.closed != 0 {
		t.Errorf("closes: failed New %d, replaced %d, kept %d, lent %d; want 1 1 1 0",
			bad.closed, replaced.closed, kept.closed, lent.closed)
	}
}
