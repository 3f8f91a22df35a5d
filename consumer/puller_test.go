package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// The puller is shared: every test here runs once with each consumer built on it.
var pullerKinds = []struct {
	name string
	// start builds a consumer with opts, subscribes it to topic, records what it consumes in
	// got under who, starts it and closes it at cleanup; it returns the consumer's puller.
	start func(t *testing.T, topic, who string, got *seen, opts ...Option) *puller
}{
	{"push", func(t *testing.T, topic, who string, got *seen, opts ...Option) *puller {
		return startConsumer(t, topic, "*", got.recorder(who), opts...).p
	}},
	{"pull", startPolling},
}

// startPolling is a lite pull consumer with a goroutine that polls until Close.
func startPolling(t *testing.T, topic, who string, got *seen, opts ...Option) *puller {
	t.Helper()
	c, err := NewPullConsumer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, "*"); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msgs, err := c.Poll(context.Background())
			if err != nil {
				return // closed
			}
			got.add(who, msgs)
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
	return c.p
}

// A queue that a rebalance moves to a new member is no longer pulled by its old holder, and the
// new holder goes on from the offset the old one committed: every message is consumed exactly
// once, those sent after the move by the queue's new holder.
func TestPullerHandsQueueOver(t *testing.T) {
	for _, kind := range pullerKinds {
		t.Run(kind.name, func(t *testing.T) {
			const topic, group = "handover", "g-handover"
			n := testNode(t)
			a := newAdmin(t, n)
			a.createTopic(topic, 4)
			var got seen
			opts := func(inst string) []Option {
				return fastOptions(t, n, transportFor(t, n, "inproc"), group, inst)
			}
			p1 := kind.start(t, topic, "h1", &got, opts("h1")...)
			eventually(t, "the first member holds every queue", func() bool { return len(heldBy(p1, topic)) == 4 })
			a.sendN(topic, 4, 16, "a")
			eventually(t, "the first batch consumed and committed on the broker", func() bool {
				for _, mq := range heldBy(p1, topic) {
					if a.brokerOffset(group, mq) != 4 {
						return false
					}
				}
				return settled(p1, topic, 4)
			})

			p2 := kind.start(t, topic, "h2", &got, opts("h2")...)
			holder := map[int]string{}
			eventually(t, "the members split the queues", func() bool {
				h1, h2 := heldBy(p1, topic), heldBy(p2, topic)
				clear(holder)
				for _, mq := range h1 {
					holder[mq.QueueID] = "h1"
				}
				for _, mq := range h2 {
					holder[mq.QueueID] = "h2"
				}
				return len(h1) == 2 && len(h2) == 2 && len(holder) == 4
			})
			a.sendN(topic, 4, 16, "b")
			eventually(t, "the second batch consumed", func() bool {
				return settled(p1, topic, 8) && settled(p2, topic, 8)
			})

			times := map[string]int{}
			for _, s := range got.snapshot() {
				times[s.body]++
				if q := s.msg.Queue.QueueID; strings.HasPrefix(s.body, "b-") && s.who != holder[q] {
					t.Errorf("%s of queue %d consumed by %s; %s holds the queue", s.body, q, s.who, holder[q])
				}
			}
			for body, n := range times {
				if n != 1 {
					t.Errorf("%s consumed %d times", body, n)
				}
			}
			if len(times) != 32 {
				t.Errorf("%d distinct messages consumed, want 32", len(times))
			}
		})
	}
}

// fakeBroker is an in-memory broker of one broker name, "b" at "addr", for pullers inside a
// synctest bubble: it answers offsets from a table, the group's members from a list, and
// long-polls every pull for the suspend time before answering that nothing is new.
type fakeBroker struct {
	fakeTransport

	mu        sync.Mutex
	stored    map[MessageQueue]int64 // the group's offsets on the broker
	members   []string
	pulls     map[MessageQueue][]int64 // offsets pulled from, by queue
	committed map[MessageQueue]int64   // offsets UPDATE_CONSUMER_OFFSET wrote
}

func newFakeBroker(stored map[MessageQueue]int64, members ...string) *fakeBroker {
	return &fakeBroker{stored: stored, members: members, pulls: map[MessageQueue][]int64{},
		committed: map[MessageQueue]int64{}}
}

func (f *fakeBroker) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	switch req.Code {
	case remoting.PullMessage:
		return f.pull(ctx, req)
	case remoting.GetConsumerListByGroup:
		f.mu.Lock()
		body, _ := json.Marshal(protocol.GetConsumerListByGroupResponseBody{ConsumerIDList: f.members})
		f.mu.Unlock()
		resp := remoting.NewResponse(remoting.Success, "")
		resp.Body = body
		return resp, nil
	case remoting.UpdateConsumerOffset:
		if err := f.commit(req); err != nil {
			return nil, err
		}
		return remoting.NewResponse(remoting.Success, ""), nil
	case remoting.QueryConsumerOffset:
		var h protocol.QueryConsumerOffsetRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			return nil, err
		}
		f.mu.Lock()
		off, ok := f.stored[MessageQueue{Topic: h.Topic, BrokerName: h.BrokerName, QueueID: int(h.QueueID)}]
		f.mu.Unlock()
		if !ok {
			return remoting.NewResponse(remoting.QueryNotFound, "no offset"), nil
		}
		resp := remoting.NewResponse(remoting.Success, "")
		resp.ExtFields = remoting.EncodeHeader(&protocol.OffsetResponseHeader{Offset: off})
		return resp, nil
	}
	return remoting.NewResponse(remoting.SystemError, fmt.Sprintf("fake broker: code %d", req.Code)), nil
}

func (f *fakeBroker) pull(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.PullMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	mq := MessageQueue{Topic: h.Topic, BrokerName: h.BrokerName, QueueID: int(h.QueueID)}
	f.mu.Lock()
	f.pulls[mq] = append(f.pulls[mq], h.QueueOffset)
	f.mu.Unlock()
	t := time.NewTimer(time.Duration(h.SuspendTimeoutMillis) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	resp := remoting.NewResponse(remoting.PullNotFound, "")
	resp.ExtFields = remoting.EncodeHeader(&protocol.PullMessageResponseHeader{NextBeginOffset: h.QueueOffset,
		MaxOffset: h.QueueOffset})
	return resp, nil
}

func (f *fakeBroker) InvokeOneway(_ context.Context, _ string, req *remoting.Command) error {
	if req.Code == remoting.UpdateConsumerOffset {
		return f.commit(req)
	}
	return nil
}

func (f *fakeBroker) commit(req *remoting.Command) error {
	var h protocol.UpdateConsumerOffsetRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.committed[MessageQueue{Topic: h.Topic, BrokerName: h.BrokerName, QueueID: int(h.QueueID)}] = h.CommitOffset
	return nil
}

func (f *fakeBroker) setMembers(ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.members = ids
}

// pullsOf returns the offsets mq was pulled from so far.
func (f *fakeBroker) pullsOf(mq MessageQueue) []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pulls[mq])
}

func (f *fakeBroker) committedOf(mq MessageQueue) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	off, ok := f.committed[mq]
	return off, ok
}

// brokerInstance is the client instance of a fakeBroker: topic "T" has two queues on it.
type brokerInstance struct{ fakeInstance }

func (brokerInstance) TopicRoute(context.Context, string) (*route.TopicRouteData, error) {
	return &route.TopicRouteData{
		QueueDatas:  []route.QueueData{{BrokerName: "b", ReadQueueNums: 2, WriteQueueNums: 2, Perm: route.PermReadWrite}},
		BrokerDatas: []route.BrokerData{{BrokerName: "b", BrokerAddrs: map[int64]string{route.MasterID: "addr"}}},
	}, nil
}

// Each consumer takes its queues at the offsets its group committed; when a rebalance gives a
// queue to another member, the queue's offset is written to the broker (the periodic persist
// is an hour away) and its pulls stop, while the queue kept goes on being pulled. Time is synctest's: the one-second long polls
// and a minute of them run at once.
func TestPullerResumesAndStopsPullingDroppedQueue(t *testing.T) {
	for _, kind := range pullerKinds {
		t.Run(kind.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testDropStopsPulls(t, kind.start) })
		})
	}
}

func testDropStopsPulls(t *testing.T, start func(*testing.T, string, string, *seen, ...Option) *puller) {
	q0 := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}
	q1 := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}
	br := newFakeBroker(map[MessageQueue]int64{q0: 7, q1: 3}, fakeInstance{}.ClientID())
	inst := brokerInstance{fakeInstance{tr: br}}
	log := testLogger(t)
	opts := []Option{WithGroup("g"), WithLogger(&log), WithPullSuspend(time.Second),
		WithRebalanceInterval(time.Hour), WithPersistInterval(time.Hour),
		optionFunc(func(c *config) { c.inst = inst })}
	p := start(t, "T", "c", &seen{}, opts...)
	synctest.Wait()
	if diff := cmp.Diff([]MessageQueue{q0, q1}, heldBy(p, "T")); diff != "" {
		t.Fatalf("held (-want +got):\n%s", diff)
	}
	time.Sleep(5 * time.Second)
	synctest.Wait()
	for mq, want := range map[MessageQueue]int64{q0: 7, q1: 3} {
		pulls := br.pullsOf(mq)
		if len(pulls) < 5 || slices.ContainsFunc(pulls, func(off int64) bool { return off != want }) {
			t.Errorf("%s pulled from %v, want at least 5 pulls from the committed offset %d", mq, pulls, want)
		}
	}

	// A member whose client id sorts first joins: Averagely gives it queue 0.
	br.setMembers("0.0.0.0@first", fakeInstance{}.ClientID())
	p.Rebalance()
	synctest.Wait()
	if diff := cmp.Diff([]MessageQueue{q1}, heldBy(p, "T")); diff != "" {
		t.Fatalf("held after the join (-want +got):\n%s", diff)
	}
	if off, ok := br.committedOf(q0); !ok || off != 7 {
		t.Errorf("offset of the dropped queue written as %d (%v), want 7", off, ok)
	}
	dropped, kept := len(br.pullsOf(q0)), len(br.pullsOf(q1))
	time.Sleep(time.Minute)
	synctest.Wait()
	if n := len(br.pullsOf(q0)); n != dropped {
		t.Errorf("the dropped queue was pulled %d more times", n-dropped)
	}
	if n := len(br.pullsOf(q1)); n < kept+50 {
		t.Errorf("the kept queue was pulled %d times in a minute of 1 s long polls", n-kept)
	}
}
