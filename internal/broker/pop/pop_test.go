package pop

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

const (
	tTopic = "PopTopic"
	tGroup = "PopGroup"
)

func TestPopAckExactlyOnce(t *testing.T) {
	for _, trName := range []string{"tcp", "inproc"} {
		t.Run(trName, func(t *testing.T) {
			e := start(t, "", nil)
			e.tr = e.Transports()[trName]
			wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 4)
			for q := range int32(4) {
				e.put(t, tTopic, q, 3, "", "m"+itoa32(q))
			}
			got := e.popAll(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0), 12)
			if len(got) != 12 {
				t.Fatalf("popped %d, want 12: %v", len(got), bodies(got))
			}
			for b, n := range bodies(got) {
				if n != 1 {
					t.Fatalf("%s popped %d times", b, n)
				}
			}
			for _, m := range got {
				h, err := protocol.ParseExtraInfo(m.handle)
				if err != nil {
					t.Fatalf("POP_CK %q: %v", m.handle, err)
				}
				if h.QueueID != m.qid || h.QueueOffset != m.offset || h.Retry != protocol.PopRetryNone ||
					h.InvisibleTime != 60_000 || h.BrokerName != e.Options().Broker.Name {
					t.Fatalf("handle %+v of message %+v", h, m)
				}
			}
			// Hidden: nothing more to pop.
			if resp, ms := e.pop(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0)); resp.Code != remoting.PollingTimeout || len(ms) != 0 {
				t.Fatalf("second pop: %d %q, %d messages", resp.Code, resp.Remark, len(ms))
			}
			if e.svc.Checkpoints() == 0 {
				t.Fatal("no checkpoints after the pops")
			}
			for _, m := range got {
				e.ack(t, tGroup, m)
				e.ack(t, tGroup, m) // a second ack is a no-op
			}
			if n := e.svc.Checkpoints(); n != 0 {
				t.Fatalf("%d checkpoints left after acking everything", n)
			}
			// Another group pops the same messages on its own.
			if other := e.popAll(t, popHeader("OtherGroup", tTopic, -1, 32, 60_000, 0), 12); len(other) != 12 {
				t.Fatalf("other group popped %d", len(other))
			}
		})
	}
}

// A pop hands out the topic's records byte for byte as stored, as a pull does and as RocketMQ
// 5's broker does (the handles come from the answer's header), over TCP and in-process, from
// one queue and from several.
func TestPopHandsOutStoredRecords(t *testing.T) {
	for _, trName := range []string{"tcp", "inproc"} {
		t.Run(trName, func(t *testing.T) {
			e := start(t, "", nil)
			e.tr = e.Transports()[trName]
			wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 3)
			stored := map[string][]byte{}
			for q := range int32(3) {
				e.put(t, tTopic, q, 4, "", "s"+itoa32(q))
				res := e.Store().GetMessage("reader", tTopic, q, 0, 32, 0, nil)
				for _, raw := range res.Messages {
					stored[string(raw)] = append([]byte(nil), raw...)
				}
				res.Release()
			}
			for _, h := range []*protocol.PopMessageRequestHeader{popHeader(tGroup, tTopic, 1, 32, 60_000, 0),
				popHeader(tGroup, tTopic, -1, 32, 60_000, 0)} {
				resp, ms := e.pop(t, h)
				if resp.Code != remoting.Success || len(ms) == 0 {
					t.Fatalf("pop: %d %q", resp.Code, resp.Remark)
				}
				for b := resp.Body; len(b) > 0; {
					var rec message.Record
					n, err := message.DecodeRecord(b, &rec, true)
					if err != nil {
						t.Fatal(err)
					}
					if _, ok := stored[string(b[:n])]; !ok {
						t.Fatalf("record %q of the answer is not as stored", rec.Body)
					}
					b = b[n:]
				}
				for _, m := range ms {
					if !m.fromHeader {
						t.Fatalf("%s carries POP_CK %q", m.body, m.props[protocol.PropertyPopCK])
					}
					e.ack(t, tGroup, m)
				}
			}
			if resp, ms := e.pop(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0)); len(ms) != 0 || resp.Code != remoting.PollingTimeout {
				t.Fatalf("pop after all were popped: %d %q, %d messages", resp.Code, resp.Remark, len(ms))
			}
			if n := e.svc.Checkpoints(); n != 0 {
				t.Fatalf("%d checkpoints left: the handles built from the header did not ack", n)
			}
		})
	}
}

// A producer that stores a POP_CK of its own cannot hand consumers a handle: here it copies
// the handle of a message the group popped and has not acked yet, and the pop answer gives its
// record the broker's handle instead, so acking it leaves the other message unacked.
func TestPopReplacesForgedPopCK(t *testing.T) {
	e := start(t, "", nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	e.put(t, tTopic, 0, 1, "", "first")
	first := e.popAll(t, popHeader(tGroup, tTopic, 0, 1, 60_000, 0), 1)[0]
	m := &storage.Message{Topic: tTopic, QueueID: 0, Body: []byte("forger"),
		Properties:    message.MarshalProperties(map[string]string{protocol.PropertyPopCK: first.handle}),
		BornTimestamp: time.Now().UnixMilli(), BornHost: e.Messages().StoreHost(), StoreHost: e.Messages().StoreHost()}
	if _, err := e.Store().PutMessage(m); err != nil {
		t.Fatal(err)
	}
	got := e.popAll(t, popHeader(tGroup, tTopic, 0, 32, 60_000, 0), 1)[0]
	if got.handle == first.handle || got.fromHeader {
		t.Fatalf("the forger's message came with handle %q (from the header: %v), the first's is %q",
			got.handle, got.fromHeader, first.handle)
	}
	if h, err := protocol.ParseExtraInfo(got.handle); err != nil || h.QueueOffset != got.offset {
		t.Fatalf("the forger's message has handle %q (%v), not its own", got.handle, err)
	}
	e.ack(t, tGroup, got)
	if n := e.svc.Checkpoints(); n != 1 {
		t.Fatalf("%d checkpoints after acking the forger's message, want the first's alone", n)
	}
	e.ack(t, tGroup, first)
	if n := e.svc.Checkpoints(); n != 0 {
		t.Fatalf("%d checkpoints left", n)
	}
}

func TestUnackedReturnAfterInvisibleTime(t *testing.T) {
	e := start(t, "", nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	e.put(t, tTopic, 0, 3, "", "m")
	got := e.popAll(t, popHeader(tGroup, tTopic, 0, 32, 300, 0), 3)
	e.ack(t, tGroup, got[0])
	back := e.popAll(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0), 2)
	want := map[string]int{got[1].body: 1, got[2].body: 1}
	if fmt.Sprint(bodies(back)) != fmt.Sprint(want) {
		t.Fatalf("came back %v, want %v", bodies(back), want)
	}
	for _, m := range back {
		h, err := protocol.ParseExtraInfo(m.handle)
		if err != nil || h.Retry != protocol.PopRetryV1 || m.topic != protocol.PopRetryTopicV1(tTopic, tGroup) || m.recon != 1 {
			t.Fatalf("returned message %+v handle %+v %v", m, h, err)
		}
		if m.props["1ST_POP_TIME"] == "" {
			t.Fatalf("returned message lacks 1ST_POP_TIME: %v", m.props)
		}
		if m.fromHeader {
			t.Fatalf("a message from the retry topic came without POP_CK: %+v", m)
		}
		e.ack(t, tGroup, m)
	}
	if n := e.svc.Checkpoints(); n != 0 {
		t.Fatalf("%d checkpoints left", n)
	}
}

func TestChangeInvisibleTime(t *testing.T) {
	e := start(t, "", nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	e.put(t, tTopic, 0, 2, "", "m")
	got := e.popAll(t, popHeader(tGroup, tTopic, 0, 32, 400, 0), 2)
	keep, let := got[0], got[1]
	change := func(m popped, invisible int64) *remoting.Command {
		return e.invoke(t, request(remoting.ChangeMessageInvisibleTime, &protocol.ChangeInvisibleTimeRequestHeader{
			ConsumerGroup: tGroup, Topic: tTopic, QueueID: m.qid, ExtraInfo: m.handle, Offset: m.offset, InvisibleTime: invisible}))
	}
	resp := change(keep, 60_000)
	if resp.Code != remoting.Success {
		t.Fatalf("change: %d %q", resp.Code, resp.Remark)
	}
	var rh protocol.ChangeInvisibleTimeResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil || rh.InvisibleTime != 60_000 {
		t.Fatalf("change answer %v: %v", resp.ExtFields, err)
	}
	// The old handle is spent.
	if again := change(keep, 60_000); again.Code != remoting.NoMessage {
		t.Fatalf("change with the old handle: %d %q", again.Code, again.Remark)
	}
	back := e.popAll(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0), 1)
	if back[0].body != let.body {
		t.Fatalf("came back %q, want %q", back[0].body, let.body)
	}
	e.ack(t, tGroup, back[0])
	// The new handle, as the client builds it from the answer, acks the changed message.
	old, _ := protocol.ParseExtraInfo(keep.handle)
	nh := protocol.ExtraInfo{CkQueueOffset: keep.offset, PopTime: rh.PopTime, InvisibleTime: rh.InvisibleTime,
		ReviveQid: rh.ReviveQid, Retry: old.Retry, BrokerName: old.BrokerName, QueueID: keep.qid, QueueOffset: keep.offset}
	keep.handle = nh.String()
	e.ack(t, tGroup, keep)
	if n := e.svc.Checkpoints(); n != 0 {
		t.Fatalf("%d checkpoints left", n)
	}
}

func TestBatchAck(t *testing.T) {
	e := start(t, "", nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	e.put(t, tTopic, 0, 5, "", "m")
	got := e.popAll(t, popHeader(tGroup, tTopic, 0, 32, 500, 0), 5)
	h, _ := protocol.ParseExtraInfo(got[0].handle)
	var bits []int
	for _, m := range got[:4] { // the fifth stays unacknowledged
		bits = append(bits, int(m.offset-h.CkQueueOffset))
	}
	body := &protocol.BatchAckMessageRequestBody{BrokerName: h.BrokerName, Acks: []protocol.BatchAck{{
		ConsumerGroup: tGroup, Topic: tTopic, Retry: h.Retry, StartOffset: h.CkQueueOffset, QueueID: 0,
		ReviveQueueID: h.ReviveQid, PopTime: h.PopTime, InvisibleTime: h.InvisibleTime, BitSet: protocol.BitSetOf(bits...)}}}
	resp := e.invoke(t, remoting.NewRequest(remoting.BatchAckMessage, map[string]string{}, body.Encode()))
	if resp.Code != remoting.Success {
		t.Fatalf("batch ack: %d %q", resp.Code, resp.Remark)
	}
	back := e.popAll(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0), 1)
	if back[0].body != got[4].body {
		t.Fatalf("came back %q, want %q", back[0].body, got[4].body)
	}
	for _, bad := range []string{"", "{", `{"acks":[{"c":"g","t":"t","r":"7"}]}`, `{"acks":[{"c":"g","t":"bad topic","r":"0"}]}`,
		`{"acks":[{"c":"g","t":"t","r":"0","rq":8}]}`, `{"acks":[{"c":"g","t":"t","r":"0","b":"!!"}]}`} {
		resp := e.invoke(t, remoting.NewRequest(remoting.BatchAckMessage, map[string]string{}, []byte(bad)))
		if resp.Code == remoting.Success {
			t.Fatalf("batch ack body %q accepted", bad)
		}
	}
}

func TestLongPolling(t *testing.T) {
	e := start(t, "", nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 2)
	if resp, _ := e.pop(t, popHeader(tGroup, tTopic, -1, 8, 60_000, 0)); resp.Code != remoting.PollingTimeout {
		t.Fatalf("empty pop without poll time: %d %q", resp.Code, resp.Remark)
	}
	done := make(chan *remoting.Command, 1)
	go func() {
		resp, err := e.TCP.InvokeSync(t.Context(), e.Addr, request(remoting.PopMessage, popHeader(tGroup, tTopic, -1, 8, 60_000, 20_000)))
		if err != nil {
			resp = remoting.NewResponse(-1, err.Error())
		}
		done <- resp
	}()
	brokertest.Eventually(t, "pop parked", func() bool {
		r := e.invoke(t, request(remoting.PollingInfo, &protocol.PollingInfoRequestHeader{ConsumerGroup: tGroup, Topic: tTopic, QueueID: -1}))
		var h protocol.PollingInfoResponseHeader
		return r.Code == remoting.Success && h.Decode(r.ExtFields) == nil && h.PollingNum == 1
	})
	e.put(t, tTopic, 1, 1, "", "late")
	select {
	case resp := <-done:
		if resp.Code != remoting.Success {
			t.Fatalf("woken pop: %d %q", resp.Code, resp.Remark)
		}
		if ms := decodeBody(t, resp.Body); len(ms) != 1 || ms[0].body != "late-0" {
			t.Fatalf("woken pop brought %v", bodies(ms))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("parked pop not woken by a new message")
	}
	// A woken pop that finds nothing (its filter refuses the new message) parks again and
	// takes the next message that passes.
	go func() {
		h := popHeader(tGroup, tTopic, -1, 8, 60_000, 20_000)
		h.Exp = "B"
		resp, err := e.TCP.InvokeSync(t.Context(), e.Addr, request(remoting.PopMessage, h))
		if err != nil {
			resp = remoting.NewResponse(-1, err.Error())
		}
		done <- resp
	}()
	brokertest.Eventually(t, "filtered pop parked", func() bool { return e.svc.polls.n.Load() == 1 })
	e.put(t, tTopic, 0, 1, "A", "a")
	brokertest.Eventually(t, "filtered pop parked again", func() bool { return e.svc.polls.n.Load() == 1 && len(done) == 0 })
	e.put(t, tTopic, 1, 1, "B", "b")
	select {
	case resp := <-done:
		if ms := decodeBody(t, resp.Body); resp.Code != remoting.Success || len(ms) != 1 || ms[0].body != "b-0" {
			t.Fatalf("filtered pop: %d %q %v", resp.Code, resp.Remark, bodies(ms))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("filtered pop not woken by a matching message")
	}
	// A parked pop whose poll time runs out answers POLLING_TIMEOUT.
	if resp, _ := e.pop(t, popHeader(tGroup, tTopic, -1, 8, 60_000, 50)); resp.Code != remoting.PollingTimeout {
		t.Fatalf("timed-out pop: %d %q", resp.Code, resp.Remark)
	}
}

func TestPollingFull(t *testing.T) {
	e := start(t, "", func(o *broker.Options) { o.Pop.PollingSize = 1 })
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	go e.TCP.InvokeSync(t.Context(), e.Addr, request(remoting.PopMessage, popHeader(tGroup, tTopic, -1, 8, 60_000, 20_000)))
	brokertest.Eventually(t, "pop parked", func() bool { return e.svc.polls.n.Load() == 1 })
	if resp, _ := e.pop(t, popHeader(tGroup, tTopic, -1, 8, 60_000, 20_000)); resp.Code != remoting.PollingFull {
		t.Fatalf("second parked pop: %d %q", resp.Code, resp.Remark)
	}
	nh := &protocol.NotificationRequestHeader{ConsumerGroup: tGroup, Topic: tTopic, QueueID: -1, PollTime: 20_000, BornTime: time.Now().UnixMilli()}
	r := e.invoke(t, request(remoting.Notification, nh))
	var h protocol.NotificationResponseHeader
	if err := h.Decode(r.ExtFields); err != nil || !h.PollingFull || h.HasMsg {
		t.Fatalf("notification when full: %d %v %v", r.Code, r.ExtFields, err)
	}
}

func TestNotificationAndPeek(t *testing.T) {
	e := start(t, "", nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	notify := func(poll int64) protocol.NotificationResponseHeader {
		t.Helper()
		r := e.invoke(t, request(remoting.Notification, &protocol.NotificationRequestHeader{ConsumerGroup: tGroup, Topic: tTopic,
			QueueID: -1, PollTime: poll, BornTime: time.Now().UnixMilli()}))
		var h protocol.NotificationResponseHeader
		if r.Code != remoting.Success || h.Decode(r.ExtFields) != nil {
			t.Fatalf("notification: %d %q", r.Code, r.Remark)
		}
		return h
	}
	if notify(0).HasMsg {
		t.Fatal("notification says there is a message in an empty topic")
	}
	if notify(30).HasMsg {
		t.Fatal("timed-out notification says there is a message")
	}
	e.put(t, tTopic, 0, 2, "", "m")
	if !notify(0).HasMsg {
		t.Fatal("notification misses a stored message")
	}
	peek := e.invoke(t, request(remoting.PeekMessage, &protocol.PeekMessageRequestHeader{Topic: tTopic, QueueID: 0, MaxMsgNums: 8, ConsumerGroup: tGroup}))
	if peek.Code != remoting.Success || len(decodeBody(t, peek.Body)) != 2 {
		t.Fatalf("peek: %d %q", peek.Code, peek.Remark)
	}
	// Peeking moved nothing: the pop gets both.
	e.popAll(t, popHeader(tGroup, tTopic, 0, 32, 60_000, 0), 2)
}

func TestPopFilters(t *testing.T) {
	e := start(t, "", nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	e.put(t, tTopic, 0, 3, "A", "a")
	e.put(t, tTopic, 0, 3, "B", "b")
	h := popHeader(tGroup, tTopic, 0, 32, 60_000, 0)
	h.ExpType, h.Exp = "TAG", "B"
	for _, m := range e.popAll(t, h, 3) {
		if !strings.HasPrefix(m.body, "b-") {
			t.Fatalf("tag filter B let %q through", m.body)
		}
	}
	h2 := popHeader("SQLGroup", tTopic, 0, 32, 60_000, 0)
	h2.ExpType, h2.Exp = "SQL92", "TAGS = 'A'"
	for _, m := range e.popAll(t, h2, 3) {
		if !strings.HasPrefix(m.body, "a-") {
			t.Fatalf("SQL filter let %q through", m.body)
		}
	}
	h3 := popHeader(tGroup, tTopic, 0, 32, 60_000, 0)
	h3.ExpType, h3.Exp = "SQL92", "a = = b"
	if resp, _ := e.pop(t, h3); resp.Code != remoting.SubscriptionParseFailed {
		t.Fatalf("bad SQL92: %d %q", resp.Code, resp.Remark)
	}
}

func TestRetryThenDLQ(t *testing.T) {
	e := start(t, "", nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	cfg := broker.NewSubscriptionGroupConfig(tGroup)
	cfg.RetryMaxTimes = 2
	if err := e.Groups().Update(cfg); err != nil {
		t.Fatal(err)
	}
	e.put(t, tTopic, 0, 1, "", "m")
	for want := range int32(3) { // reconsume times 0, 1, 2; then the dead-letter topic
		m := e.popAll(t, popHeader(tGroup, tTopic, -1, 32, 50, 0), 1)[0]
		if m.recon != want || m.body != "m-0" {
			t.Fatalf("pop %d: %+v", want, m)
		}
	}
	dlq := "%DLQ%" + tGroup
	brokertest.Eventually(t, "message in the dead-letter topic", func() bool { return e.Store().MaxOffsetInQueue(dlq, 0) == 1 })
	rec := wiretest.StoredRecord(t, e.Store(), dlq, 0, 0)
	if string(rec.Body) != "m-0" || rec.ReconsumeTimes != 3 {
		t.Fatalf("dead letter %q reconsumed %d", rec.Body, rec.ReconsumeTimes)
	}
	if resp, ms := e.pop(t, popHeader(tGroup, tTopic, -1, 32, 50, 0)); len(ms) != 0 {
		t.Fatalf("popped after the dead-letter move: %d %v", resp.Code, bodies(ms))
	}
}

func TestRestartKeepsInvisibilityAndAcks(t *testing.T) {
	dir := t.TempDir()
	e := start(t, dir, nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	e.put(t, tTopic, 0, 4, "", "m")
	got := e.popAll(t, popHeader(tGroup, tTopic, 0, 32, 1500, 0), 4)
	e.ack(t, tGroup, got[0])
	e.ack(t, tGroup, got[1])
	e.Stop(t)

	e = start(t, dir, nil)
	if n := e.svc.Checkpoints(); n != 1 {
		t.Fatalf("%d checkpoints after the restart, want 1", n)
	}
	if resp, ms := e.pop(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0)); len(ms) != 0 {
		t.Fatalf("popped right after the restart: %d %v", resp.Code, bodies(ms))
	}
	back := e.popAll(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0), 2)
	want := map[string]int{got[2].body: 1, got[3].body: 1}
	if fmt.Sprint(bodies(back)) != fmt.Sprint(want) {
		t.Fatalf("came back %v, want %v", bodies(back), want)
	}
}

// TestReplayRaisesPopOffset stands for a crash between a pop's checkpoint and the flush of
// its offset: the offset is rewound by hand before the restart, and the replay moves it past
// the popped messages again, so none is handed out twice.
func TestReplayRaisesPopOffset(t *testing.T) {
	dir := t.TempDir()
	e := start(t, dir, nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	e.put(t, tTopic, 0, 3, "", "m")
	got := e.popAll(t, popHeader(tGroup, tTopic, 0, 32, 60_000, 0), 3)
	e.ack(t, tGroup, got[0])
	e.Offsets().Commit(tGroup, tTopic, 0, 0)
	e.Stop(t)
	e = start(t, dir, nil)
	if off := e.Offsets().Query(tGroup, tTopic, 0); off != 3 {
		t.Fatalf("pop offset after the replay %d, want 3", off)
	}
	if resp, ms := e.pop(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0)); len(ms) != 0 {
		t.Fatalf("popped again after the replay: %d %v", resp.Code, bodies(ms))
	}
}

func TestHostileHeaders(t *testing.T) {
	e := start(t, "", nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	e.put(t, tTopic, 0, 1, "", "m")
	for name, c := range map[string]struct {
		mut  func(*protocol.PopMessageRequestHeader)
		code int32
	}{
		"maxMsgNums 33":        {func(h *protocol.PopMessageRequestHeader) { h.MaxMsgNums = 33 }, remoting.InvalidParameter},
		"maxMsgNums huge":      {func(h *protocol.PopMessageRequestHeader) { h.MaxMsgNums = math.MaxInt32 }, remoting.InvalidParameter},
		"maxMsgNums 0":         {func(h *protocol.PopMessageRequestHeader) { h.MaxMsgNums = 0 }, remoting.InvalidParameter},
		"invisibleTime 0":      {func(h *protocol.PopMessageRequestHeader) { h.InvisibleTime = 0 }, remoting.InvalidParameter},
		"invisibleTime -1":     {func(h *protocol.PopMessageRequestHeader) { h.InvisibleTime = -1 }, remoting.InvalidParameter},
		"invisibleTime 2^63-1": {func(h *protocol.PopMessageRequestHeader) { h.InvisibleTime = math.MaxInt64 }, remoting.InvalidParameter},
		"bornTime 0":           {func(h *protocol.PopMessageRequestHeader) { h.BornTime = 0 }, remoting.PollingTimeout},
		"bornTime negative":    {func(h *protocol.PopMessageRequestHeader) { h.BornTime = math.MinInt64 }, remoting.PollingTimeout},
		"queueId 1":            {func(h *protocol.PopMessageRequestHeader) { h.QueueID = 1 }, remoting.InvalidParameter},
		"queueId -2":           {func(h *protocol.PopMessageRequestHeader) { h.QueueID = -2 }, remoting.InvalidParameter},
		"no such topic":        {func(h *protocol.PopMessageRequestHeader) { h.Topic = "NoSuchTopic" }, remoting.TopicNotExist},
		"unknown filter type":  {func(h *protocol.PopMessageRequestHeader) { h.ExpType, h.Exp = "CLASS", "x" }, remoting.SystemError},
		"bad name":             {func(h *protocol.PopMessageRequestHeader) { h.Topic = "bad topic" }, remoting.SystemError},
	} {
		h := popHeader(tGroup, tTopic, 0, 8, 60_000, 0)
		c.mut(h)
		if resp, _ := e.pop(t, h); resp.Code != c.code {
			t.Errorf("%s: %d %q, want %d", name, resp.Code, resp.Remark, c.code)
		}
	}
	// A huge poll time is clamped to the suspend cap and still wakes on a message.
	done := make(chan *remoting.Command, 1)
	go func() {
		resp, err := e.TCP.InvokeSync(t.Context(), e.Addr, request(remoting.PopMessage, popHeader("HugePoll", tTopic, 0, 8, 60_000, math.MaxInt64)))
		if err != nil {
			resp = remoting.NewResponse(-1, err.Error())
		}
		done <- resp
	}()
	if resp := <-done; resp.Code != remoting.Success {
		t.Fatalf("pop with a huge poll time: %d %q", resp.Code, resp.Remark)
	}

	m := e.popAll(t, popHeader(tGroup, tTopic, 0, 8, 300, 0), 1)[0]
	ack := func(group, handle string, offset int64) *remoting.Command {
		return e.invoke(t, request(remoting.AckMessage, &protocol.AckMessageRequestHeader{ConsumerGroup: group, Topic: tTopic,
			QueueID: 0, ExtraInfo: handle, Offset: offset}))
	}
	for name, c := range map[string]struct {
		handle string
		offset int64
		code   int32
	}{
		"garbage":          {"garbage", m.offset, remoting.InvalidParameter},
		"seven fields":     {strings.Join(strings.Fields(m.handle)[:7], " "), m.offset, remoting.InvalidParameter},
		"negative":         {strings.Replace(m.handle, "0 ", "-1 ", 1), m.offset, remoting.InvalidParameter},
		"reviveQid 8":      {forge(t, m.handle, func(e *protocol.ExtraInfo) { e.ReviveQid = 8 }), m.offset, remoting.InvalidParameter},
		"offset past end":  {m.handle, 1 << 40, remoting.NoMessage},
		"offset negative":  {m.handle, -1, remoting.NoMessage},
		"forged pop time":  {forge(t, m.handle, func(e *protocol.ExtraInfo) { e.PopTime++ }), m.offset, remoting.Success},
		"forged ck offset": {forge(t, m.handle, func(e *protocol.ExtraInfo) { e.CkQueueOffset = 99 }), m.offset, remoting.Success},
	} {
		if resp := ack(tGroup, c.handle, c.offset); resp.Code != c.code {
			t.Errorf("ack %s: %d %q, want %d", name, resp.Code, resp.Remark, c.code)
		}
	}
	// Another group's ack of the handle answers as a late ack and acks nothing.
	if resp := ack("Thief", m.handle, m.offset); resp.Code != remoting.Success {
		t.Fatalf("foreign ack: %d %q", resp.Code, resp.Remark)
	}
	if back := e.popAll(t, popHeader(tGroup, tTopic, -1, 8, 60_000, 0), 1); back[0].body != m.body {
		t.Fatalf("came back %q", back[0].body)
	}
	change := request(remoting.ChangeMessageInvisibleTime, &protocol.ChangeInvisibleTimeRequestHeader{ConsumerGroup: tGroup,
		Topic: tTopic, QueueID: 0, ExtraInfo: m.handle, Offset: m.offset, InvisibleTime: 0})
	if resp := e.invoke(t, change); resp.Code != remoting.InvalidParameter {
		t.Fatalf("change to 0: %d %q", resp.Code, resp.Remark)
	}
}

func forge(t *testing.T, handle string, f func(*protocol.ExtraInfo)) string {
	t.Helper()
	e, err := protocol.ParseExtraInfo(handle)
	if err != nil {
		t.Fatal(err)
	}
	f(&e)
	return e.String()
}

func TestInitMode(t *testing.T) {
	e := start(t, "", nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	e.put(t, tTopic, 0, 3, "", "m")
	// MAX starts a new group at the queue's last message, unless the queue still holds its
	// very first one in memory (initPopOffsetByCheckMsgInMem), as here: then from there
	// (storage's TestSuggestSlaveAndUnits checks the memory measure).
	last := popHeader("LastGroup", tTopic, 0, 32, 60_000, 0)
	last.InitMode = protocol.PopInitModeMax
	if ms := e.popAll(t, last, 3); len(ms) != 3 || ms[0].body != "m-0" {
		t.Fatalf("initMode MAX on a queue whose first message is in memory popped %v, want all from the first", bodies(ms))
	}
	first := popHeader("FirstGroup", tTopic, 0, 32, 60_000, 0)
	first.InitMode = protocol.PopInitModeMin
	if ms := e.popAll(t, first, 3); ms[0].body != "m-0" {
		t.Fatalf("initMode MIN popped %v first", ms[0].body)
	}
}

// TestBatchAckOneRecordAcrossRestart acks four messages of one pop with one BATCH_ACK_MESSAGE:
// the revive queue gains one "bAck" record for them (5.x's BatchAckMsg), and after a restart
// the replay reads it, so only the fifth message comes back.
func TestBatchAckOneRecordAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	e := start(t, dir, nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	e.put(t, tTopic, 0, 5, "", "m")
	got := e.popAll(t, popHeader(tGroup, tTopic, 0, 32, 1500, 0), 5)
	h, _ := protocol.ParseExtraInfo(got[0].handle)
	var bits []int
	for _, m := range got[:4] {
		bits = append(bits, int(m.offset-h.CkQueueOffset))
	}
	body := &protocol.BatchAckMessageRequestBody{Acks: []protocol.BatchAck{{
		ConsumerGroup: tGroup, Topic: tTopic, Retry: h.Retry, StartOffset: h.CkQueueOffset, QueueID: 0,
		ReviveQueueID: h.ReviveQid, PopTime: h.PopTime, InvisibleTime: h.InvisibleTime, BitSet: protocol.BitSetOf(bits...)}}}
	before := e.Store().MaxOffsetInQueue(e.svc.reviveTopic, h.ReviveQid)
	if resp := e.invoke(t, remoting.NewRequest(remoting.BatchAckMessage, map[string]string{}, body.Encode())); resp.Code != remoting.Success {
		t.Fatalf("batch ack: %d %q", resp.Code, resp.Remark)
	}
	if after := e.Store().MaxOffsetInQueue(e.svc.reviveTopic, h.ReviveQid); after != before+1 {
		t.Fatalf("the batch ack wrote %d revive records, want 1", after-before)
	}
	e.Stop(t)

	e = start(t, dir, nil)
	if n := e.svc.Checkpoints(); n != 1 {
		t.Fatalf("%d checkpoints after the restart, want 1", n)
	}
	back := e.popAll(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0), 1)
	if back[0].body != got[4].body {
		t.Fatalf("came back %q, want %q", back[0].body, got[4].body)
	}
	if resp, ms := e.pop(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0)); len(ms) != 0 {
		t.Fatalf("popped more after the fifth came back: %d %v", resp.Code, bodies(ms))
	}
}

// A peek shows what a pop would hand out, the revived messages in the group's pop retry topic
// among them (PeekMessageProcessor reads the retry topic too).
func TestPeekSeesRevivedMessages(t *testing.T) {
	e := start(t, "", nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	e.put(t, tTopic, 0, 1, "", "m")
	e.popAll(t, popHeader(tGroup, tTopic, 0, 32, 300, 0), 1) // not acked: revived after 300 ms
	var seen []popped
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		peek := e.invoke(t, request(remoting.PeekMessage, &protocol.PeekMessageRequestHeader{Topic: tTopic, QueueID: -1,
			MaxMsgNums: 8, ConsumerGroup: tGroup}))
		if peek.Code == remoting.Success {
			seen = decodeBody(t, peek.Body)
			break
		}
		if peek.Code != remoting.PullNotFound || time.Now().After(deadline) {
			t.Fatalf("peek: %d %q", peek.Code, peek.Remark)
		}
	}
	if len(seen) != 1 || seen[0].body != "m-0" || seen[0].topic != protocol.PopRetryTopicV1(tTopic, tGroup) {
		t.Fatalf("peeked %+v, want m-0 from the pop retry topic", seen)
	}
	// Peeking moved nothing: the pop hands the revived message out.
	if back := e.popAll(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0), 1); back[0].body != "m-0" {
		t.Fatalf("popped %v after the peek", bodies(back))
	}
}
