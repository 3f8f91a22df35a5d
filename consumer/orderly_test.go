package consumer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/rebalance"
	"github.com/mqgo/mq/remoting"
)

// msgBroker is a fakeBroker that also serves messages, queue locks and send-backs, for push
// consumers inside a synctest bubble. Its queues hold the messages put with fill; a pull past
// them long-polls as fakeBroker's do.
type msgBroker struct {
	*fakeBroker
	t *testing.T

	mu        sync.Mutex
	records   map[MessageQueue][][]byte // encoded records by queue offset
	unlocks   []queueEvent
	sendBacks []protocol.ConsumerSendMsgBackRequestHeader
	// failSendBacks is how many send-backs to refuse before taking them.
	failSendBacks int
}

// queueEvent is a request about one queue and when it arrived.
type queueEvent struct {
	mq MessageQueue
	at time.Time
}

func newMsgBroker(t *testing.T, members ...string) *msgBroker {
	return &msgBroker{fakeBroker: newFakeBroker(map[MessageQueue]int64{}, members...), t: t,
		records: map[MessageQueue][][]byte{}}
}

// fill stores one message per body at the end of mq.
func (b *msgBroker) fill(mq MessageQueue, bodies ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, body := range bodies {
		m := testRecord(mq.Topic, body)
		m.QueueID = int32(mq.QueueID)
		off := int64(len(b.records[mq]))
		b.records[mq] = append(b.records[mq], record(b.t, m, off, 1000*int64(mq.QueueID)+off))
	}
}

func (b *msgBroker) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	switch req.Code {
	case remoting.PullMessage:
		if resp := b.pullStored(req); resp != nil {
			return resp, nil
		}
	case remoting.LockBatchMQ:
		var body protocol.LockBatchRequestBody
		if err := json.Unmarshal(req.Body, &body); err != nil {
			return nil, err
		}
		resp := remoting.NewResponse(remoting.Success, "")
		resp.Body, _ = json.Marshal(protocol.LockBatchResponseBody{LockOKMQSet: body.MQSet})
		return resp, nil
	case remoting.UnlockBatchMQ:
		var body protocol.LockBatchRequestBody
		if err := json.Unmarshal(req.Body, &body); err != nil {
			return nil, err
		}
		b.mu.Lock()
		for _, mq := range body.MQSet {
			b.unlocks = append(b.unlocks, queueEvent{mq: mq, at: time.Now()})
		}
		b.mu.Unlock()
		return remoting.NewResponse(remoting.Success, ""), nil
	case remoting.ConsumerSendMsgBack:
		var h protocol.ConsumerSendMsgBackRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			return nil, err
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		b.sendBacks = append(b.sendBacks, h)
		if b.failSendBacks > 0 {
			b.failSendBacks--
			return remoting.NewResponse(remoting.SystemError, "refused"), nil
		}
		return remoting.NewResponse(remoting.Success, ""), nil
	}
	return b.fakeBroker.InvokeSync(ctx, addr, req)
}

// pullStored answers a pull from the stored messages, or nil when the queue has none past the
// pull's offset.
func (b *msgBroker) pullStored(req *remoting.Command) *remoting.Command {
	var h protocol.PullMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		b.t.Error(err)
		return nil
	}
	mq := MessageQueue{Topic: h.Topic, BrokerName: h.BrokerName, QueueID: int(h.QueueID)}
	b.mu.Lock()
	defer b.mu.Unlock()
	recs := b.records[mq]
	if h.QueueOffset >= int64(len(recs)) {
		return nil
	}
	end := min(int(h.QueueOffset)+int(h.MaxMsgNums), len(recs))
	b.fakeBroker.mu.Lock()
	b.fakeBroker.pulls[mq] = append(b.fakeBroker.pulls[mq], h.QueueOffset)
	b.fakeBroker.mu.Unlock()
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = remoting.EncodeHeader(&protocol.PullMessageResponseHeader{NextBeginOffset: int64(end),
		MaxOffset: int64(len(recs))})
	resp.Body = bytes.Join(recs[h.QueueOffset:end], nil)
	return resp
}

// unlocksOf returns when mq was unlocked.
func (b *msgBroker) unlocksOf(mq MessageQueue) []time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []time.Time
	for _, e := range b.unlocks {
		if e.mq == mq {
			out = append(out, e.at)
		}
	}
	return out
}

func (b *msgBroker) sentBack() []protocol.ConsumerSendMsgBackRequestHeader {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.sendBacks)
}

// call is one listener call as a test listener saw it.
type call struct {
	body           string
	reconsumeTimes int32
	at             time.Duration // since the bubble's start
}

// calls records listener calls.
type calls struct {
	start time.Time
	mu    sync.Mutex
	list  []call
}

func newCalls() *calls { return &calls{start: time.Now()} }

func (c *calls) add(m *Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, call{body: string(m.Body), reconsumeTimes: m.ReconsumeTimes, at: time.Since(c.start)})
}

func (c *calls) of(body string) []call {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []call
	for _, x := range c.list {
		if x.body == body {
			out = append(out, x)
		}
	}
	return out
}

func (c *calls) all() []call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.list)
}

var (
	tq0 = MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}
	tq1 = MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}
)

// fakeOrderly starts an orderly push consumer of topic "T" on br (closed at cleanup).
func fakeOrderly(t *testing.T, br *msgBroker, l Listener, opts ...Option) *PushConsumer {
	t.Helper()
	log := testLogger(t)
	inst := brokerInstance{fakeInstance{tr: br}}
	base := []Option{WithGroup("g"), WithLogger(&log), WithOrderly(true), WithPullSuspend(time.Second),
		WithRebalanceInterval(time.Hour), WithPersistInterval(time.Hour), WithConsumeFrom(FromFirstOffset, time.Time{}),
		optionFunc(func(c *config) { c.inst = inst })}
	return startConsumer(t, "T", "*", l, append(base, opts...)...)
}

// An orderly consumer left at RocketMQ's default maxReconsumeTimes (-1, Integer.MAX_VALUE for
// orderly) never moves a failing message aside: it retries it locally after each suspend for
// as long as the listener fails, and the queue waits behind it.
func TestOrderlyRetriesForeverByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br := newMsgBroker(t, fakeInstance{}.ClientID())
		br.fill(tq0, "m-0", "m-1")
		got := newCalls()
		fakeOrderly(t, br, func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
			got.add(msgs[0])
			if string(msgs[0].Body) == "m-0" {
				return SuspendCurrentQueueAMoment, nil
			}
			return ConsumeSuccess, nil
		})
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		tries := got.of("m-0")
		// One call a second (the 1 s suspendCurrentQueueTimeMillis) for ten minutes: RocketMQ's
		// concurrent default of 16 would have given up within the first 17 s.
		if len(tries) < 590 {
			t.Fatalf("m-0 tried %d times in 10 minutes, want one try a second", len(tries))
		}
		for i, c := range tries {
			if c.reconsumeTimes != int32(i) {
				t.Fatalf("try %d has ReconsumeTimes %d, want %d", i, c.reconsumeTimes, i)
			}
		}
		if sb := br.sentBack(); len(sb) != 0 {
			t.Errorf("%d messages sent back (to the DLQ); want none without WithMaxReconsumeTimes", len(sb))
		}
		if n := len(got.of("m-1")); n != 0 {
			t.Errorf("m-1 consumed %d times while m-0 before it still fails", n)
		}
	})
}

// With maxReconsumeTimes set, a message that failed that many more times goes to the
// dead-letter topic (send-back with delay level -1); when that send and its resend fail (the
// fake route has no retry queue) the queue suspends and the message is consumed again, then
// sent again (RocketMQ's checkReconsumeTimes).
func TestOrderlyDLQOnlyPastExplicitMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br := newMsgBroker(t, fakeInstance{}.ClientID())
		br.failSendBacks = 1
		br.fill(tq0, "m-0", "m-1")
		got := newCalls()
		pc := fakeOrderly(t, br, func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
			got.add(msgs[0])
			if string(msgs[0].Body) == "m-0" {
				return SuspendCurrentQueueAMoment, fmt.Errorf("poison")
			}
			return ConsumeSuccess, nil
		}, WithMaxReconsumeTimes(2))
		time.Sleep(time.Minute)
		synctest.Wait()
		var times []int32
		for _, c := range got.of("m-0") {
			times = append(times, c.reconsumeTimes)
		}
		// Tries 0, 1 and 2 fail; at 2 the DLQ send is refused, so try 3 runs, fails, and the
		// second DLQ send is taken.
		if diff := cmp.Diff([]int32{0, 1, 2, 3}, times); diff != "" {
			t.Errorf("reconsume times of m-0's tries (-want +got):\n%s", diff)
		}
		sb := br.sentBack()
		if len(sb) != 2 {
			t.Fatalf("%d send-backs, want 2 (one refused, one taken)", len(sb))
		}
		for _, h := range sb {
			if h.DelayLevel != -1 || h.MaxReconsumeTimes != 2 {
				t.Errorf("send-back delay level %d, max reconsume times %d; want -1 (DLQ) and 2", h.DelayLevel, h.MaxReconsumeTimes)
			}
		}
		if n := len(got.of("m-1")); n != 1 {
			t.Errorf("m-1 consumed %d times after m-0 went to the DLQ, want 1", n)
		}
		if off, ok := pc.p.store.read(tq0); !ok || off != 2 {
			t.Errorf("committed offset %d (%v), want 2: past the dead-lettered message", off, ok)
		}
	})
}

// The reconsume limit in force: the one set, else RocketMQ's per-mode default.
func TestMaxReconsumeTimesDefaults(t *testing.T) {
	for _, c := range []struct {
		orderly bool
		set     []Option
		want    int32
	}{
		{false, nil, 16},
		{true, nil, 1<<31 - 1},
		{false, []Option{WithMaxReconsumeTimes(3)}, 3},
		{true, []Option{WithMaxReconsumeTimes(3)}, 3},
		{true, []Option{WithMaxReconsumeTimes(0)}, 0},
	} {
		opts := append([]Option{WithGroup("g"), WithNameServers("127.0.0.1:1"), WithOrderly(c.orderly)}, c.set...)
		pc, err := NewPushConsumer(opts...)
		if err != nil {
			t.Fatal(err)
		}
		if got := pc.maxReconsumeTimes(); got != c.want {
			t.Errorf("orderly %v, options %d: limit %d, want %d", c.orderly, len(c.set), got, c.want)
		}
	}
	if _, err := NewPushConsumer(WithGroup("g"), WithNameServers("127.0.0.1:1"), WithMaxReconsumeTimes(-2)); err == nil {
		t.Error("max reconsume times -2 accepted")
	}
}

// dropFirstQueue makes a client whose id sorts first join the group, so the next rebalance
// gives it queue 0 of every topic, and returns the time of that rebalance.
func dropFirstQueue(br *msgBroker, pc *PushConsumer) time.Time {
	br.setMembers("0.0.0.0@first", fakeInstance{}.ClientID())
	pc.Rebalance()
	synctest.Wait()
	return time.Now()
}

// When rebalance drops an orderly queue that still has messages cached, its broker lock is
// released UNLOCK_DELAY_TIME_MILLS later (20 s, or WithUnlockDelay); a queue dropped with an
// empty cache is released at once.
func TestOrderlyUnlockDelay(t *testing.T) {
	for _, c := range []struct {
		name   string
		cached bool
		opts   []Option
		want   time.Duration
	}{
		{"cached, default delay", true, nil, 20 * time.Second},
		{"cached, delay set", true, []Option{WithUnlockDelay(5 * time.Second)}, 5 * time.Second},
		{"empty cache", false, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				br := newMsgBroker(t, fakeInstance{}.ClientID())
				br.fill(tq0, "m-0", "m-1")
				pc := fakeOrderly(t, br, func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
					if c.cached && string(msgs[0].Body) == "m-0" {
						return SuspendCurrentQueueAMoment, nil // m-0 and m-1 stay cached
					}
					return ConsumeSuccess, nil
				}, c.opts...)
				time.Sleep(3 * time.Second)
				synctest.Wait()
				at := dropFirstQueue(br, pc)
				if diff := cmp.Diff([]MessageQueue{tq1}, heldQueues(pc, "T")); diff != "" {
					t.Fatalf("held after the join (-want +got):\n%s", diff)
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				want := []time.Time{at.Add(c.want)}
				if diff := cmp.Diff(want, br.unlocksOf(tq0)); diff != "" {
					t.Errorf("unlocks of the dropped queue (-want +got):\n%s", diff)
				}
				if n := len(br.unlocksOf(tq1)); n != 0 {
					t.Errorf("the kept queue was unlocked %d times", n)
				}
			})
		})
	}
}

// A queue dropped while its listener call runs keeps its broker lock until the call returns
// (the drop waits a second for it, as RocketMQ's does), then the unlock delay applies.
func TestOrderlyUnlockAfterBusyListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br := newMsgBroker(t, fakeInstance{}.ClientID())
		br.fill(tq0, "m-0", "m-1")
		start := time.Now()
		pc := fakeOrderly(t, br, func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
			if string(msgs[0].Body) == "m-0" {
				time.Sleep(10 * time.Second)
			}
			return ConsumeSuccess, nil
		})
		time.Sleep(5 * time.Second)
		dropFirstQueue(br, pc)
		time.Sleep(time.Minute)
		synctest.Wait()
		// m-0's call ends at 10 s; m-1 is still cached, so the unlock waits 20 s more.
		want := []time.Time{start.Add(30 * time.Second)}
		if diff := cmp.Diff(want, br.unlocksOf(tq0)); diff != "" {
			t.Errorf("unlocks of the dropped queue (-want +got):\n%s", diff)
		}
	})
}

// A delayed unlock still pending at Close is sent at once, and Close leaves nothing running;
// one whose queue a later rebalance gave back is not sent at all, as the lock is the new
// holder's.
func TestOrderlyPendingUnlock(t *testing.T) {
	suspendM0 := func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
		if string(msgs[0].Body) == "m-0" {
			return SuspendCurrentQueueAMoment, nil
		}
		return ConsumeSuccess, nil
	}
	t.Run("close", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			br := newMsgBroker(t, fakeInstance{}.ClientID())
			br.fill(tq0, "m-0", "m-1")
			pc := fakeOrderly(t, br, suspendM0)
			time.Sleep(3 * time.Second)
			dropFirstQueue(br, pc)
			time.Sleep(5 * time.Second)
			closed := time.Now()
			if err := pc.Close(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]time.Time{closed}, br.unlocksOf(tq0)); diff != "" {
				t.Errorf("unlocks of the dropped queue (-want +got):\n%s", diff)
			}
		})
	})
	t.Run("taken back", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			br := newMsgBroker(t, fakeInstance{}.ClientID())
			br.fill(tq0, "m-0", "m-1")
			pc := fakeOrderly(t, br, suspendM0)
			time.Sleep(3 * time.Second)
			dropFirstQueue(br, pc)
			time.Sleep(5 * time.Second)
			br.setMembers(fakeInstance{}.ClientID())
			pc.Rebalance()
			synctest.Wait()
			held := heldQueues(pc, "T")
			rebalance.SortQueues(held)
			if diff := cmp.Diff([]MessageQueue{tq0, tq1}, held); diff != "" {
				t.Fatalf("held after the other member left (-want +got):\n%s", diff)
			}
			time.Sleep(time.Minute)
			synctest.Wait()
			if got := br.unlocksOf(tq0); len(got) != 0 {
				t.Errorf("queue held again was unlocked at %v", got)
			}
		})
	})
}

// An orderly consumer that has consumed one queue for MAX_TIME_CONSUME_CONTINUOUSLY pauses it
// for 10 ms before going on (RocketMQ's submitConsumeRequestLater(10)), so other queues get
// the consume goroutines; below the limit the calls follow each other without a gap.
func TestOrderlyTurnLimit(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for _, c := range []struct {
		name string
		opts []Option
		want []time.Duration
	}{
		{"default 60 s", nil, ms(0, 300, 600, 900, 1200, 1500, 1800, 2100, 2400, 2700)},
		// A turn ends at the first check past 1 s: after the call that ended at 1.2 s.
		{"1 s", []Option{WithMaxTimeConsumeContinuously(time.Second)}, ms(0, 300, 600, 900, 1210, 1510, 1810, 2110, 2420, 2720)},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				br := newMsgBroker(t, fakeInstance{}.ClientID())
				var bodies []string
				for i := range 10 {
					bodies = append(bodies, fmt.Sprintf("m-%d", i))
				}
				br.fill(tq0, bodies...)
				got := newCalls()
				fakeOrderly(t, br, func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
					got.add(msgs[0])
					time.Sleep(300 * time.Millisecond)
					return ConsumeSuccess, nil
				}, c.opts...)
				time.Sleep(time.Minute)
				synctest.Wait()
				all := got.all()
				if len(all) != 10 {
					t.Fatalf("%d calls, want 10", len(all))
				}
				var at []time.Duration
				for _, x := range all {
					at = append(at, x.at-all[0].at)
				}
				if diff := cmp.Diff(c.want, at); diff != "" {
					t.Errorf("call times (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// Pulls of a queue pause while the bodies cached for it exceed pullThresholdSizeForQueue
// (WithPullThresholds' bytes; 100 MiB by default) and resume once the listeners drain it.
func TestPullThresholdSizeForQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br := newMsgBroker(t, fakeInstance{}.ClientID())
		body := string(bytes.Repeat([]byte("x"), 1024))
		var bodies []string
		for range 20 {
			bodies = append(bodies, body)
		}
		br.fill(tq0, bodies...)
		release := make(chan struct{})
		var mu sync.Mutex
		consumed := 0
		log := testLogger(t)
		inst := brokerInstance{fakeInstance{tr: br}}
		startConsumer(t, "T", "*", func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
			<-release
			mu.Lock()
			consumed += len(msgs)
			mu.Unlock()
			return ConsumeSuccess, nil
		}, WithGroup("g"), WithLogger(&log), WithPullSuspend(time.Second), WithRebalanceInterval(time.Hour),
			WithPersistInterval(time.Hour), optionFunc(func(c *config) { c.inst = inst }),
			WithConsumeFrom(FromFirstOffset, time.Time{}), WithPullBatchSize(4), WithPullThresholds(1000, 5*1024))
		time.Sleep(time.Minute)
		synctest.Wait()
		// 4 KiB cached after the first pull is under the 5 KiB threshold; 8 KiB after the
		// second is over it, so no third pull however long the listeners take.
		if diff := cmp.Diff([]int64{0, 4}, br.pullsOf(tq0)); diff != "" {
			t.Fatalf("pulls while the listeners hold 8 KiB (-want +got):\n%s", diff)
		}
		close(release)
		time.Sleep(time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if consumed != 20 {
			t.Errorf("%d messages consumed after the release, want 20", consumed)
		}
		if pulls := br.pullsOf(tq0); len(pulls) < 6 || !slices.Equal(pulls[:6], []int64{0, 4, 8, 12, 16, 20}) {
			t.Errorf("pulls after the release %v, want 0, 4, ..., 20 and on", pulls)
		}
	})
}

// A suspended orderly queue waits suspendCurrentQueueTimeMillis clamped into [10 ms, 30 s],
// as RocketMQ's submitConsumeRequestLater does.
func TestOrderlySuspendClamped(t *testing.T) {
	for _, c := range []struct {
		set  time.Duration
		want time.Duration
	}{{time.Hour, 30 * time.Second}, {time.Nanosecond, 10 * time.Millisecond}, {2 * time.Second, 2 * time.Second}} {
		t.Run(c.set.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				br := newMsgBroker(t, fakeInstance{}.ClientID())
				br.fill(tq0, "m-0")
				got := newCalls()
				fakeOrderly(t, br, func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
					got.add(msgs[0])
					if len(got.all()) < 4 {
						return SuspendCurrentQueueAMoment, nil
					}
					return ConsumeSuccess, nil
				}, WithSuspendDelay(c.set))
				time.Sleep(2 * time.Minute)
				synctest.Wait()
				tries := got.of("m-0")
				if len(tries) != 4 {
					t.Fatalf("%d tries, want 4", len(tries))
				}
				for i := 1; i < len(tries); i++ {
					if gap := tries[i].at - tries[i-1].at; gap != c.want {
						t.Errorf("try %d came %v after the previous, want %v", i, gap, c.want)
					}
				}
			})
		})
	}
}

// A listener call never starts on a dropped queue, even when the drop lands between the
// orderly loop's last check and its taking the queue's consume lock: the drop may already have
// released the broker lock to another client (RocketMQ checks again under the consume lock).
func TestOrderlyNoCallOnDroppedQueue(t *testing.T) {
	pc, err := NewPushConsumer(WithGroup("g"), WithNameServers("127.0.0.1:1"), WithOrderly(true))
	if err != nil {
		t.Fatal(err)
	}
	var called int
	if err := pc.Subscribe("T", "*", func(context.Context, []*Message) (ConsumeResult, error) {
		called++
		return ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	pc.p.ctx, pc.p.cancel = context.WithCancel(context.Background())
	defer pc.p.cancel()
	qs := &queueState{mq: tq0, pq: newProcessQueue(tq0)}
	qs.pq.drop()
	msg := &Message{Topic: "T", Properties: map[string]string{}}
	// callOrderly's wait for a consume slot may pick the free slot over the closed done
	// channel (select chooses at random), so it reaches the consume lock about half the time.
	for range 64 {
		if _, ok := pc.callOrderly(qs, []*Message{msg}); ok {
			t.Fatal("callOrderly reported a call on a dropped queue")
		}
	}
	if called != 0 {
		t.Errorf("listener called %d times on a dropped queue", called)
	}
}
