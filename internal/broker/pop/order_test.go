package pop

import (
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

func TestFIFOPop(t *testing.T) {
	dir := t.TempDir()
	e := start(t, dir, nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	e.put(t, tTopic, 0, 5, "", "m")
	fifo := func(e *env, invisible int64) (*remoting.Command, []popped) {
		t.Helper()
		h := popHeader(tGroup, tTopic, -1, 2, invisible, 0)
		h.Order = true
		return e.pop(t, h)
	}
	want := func(ms []popped, bodies ...string) {
		t.Helper()
		var got []string
		for _, m := range ms {
			got = append(got, m.body)
		}
		if strings.Join(got, ",") != strings.Join(bodies, ",") {
			t.Fatalf("popped %v, want %v", got, bodies)
		}
	}
	resp, ms := fifo(e, 300)
	want(ms, "m-0", "m-1")
	if h, err := protocol.ParseExtraInfo(ms[0].handle); err != nil || h.ReviveQid != orderReviveQid {
		t.Fatalf("FIFO handle %q: %v", ms[0].handle, err)
	}
	if resp.ExtFields["orderCountInfo"] == "" {
		t.Fatalf("no orderCountInfo in %v", resp.ExtFields)
	}
	if _, more := fifo(e, 300); len(more) != 0 {
		t.Fatalf("the queue handed out %v while its batch awaits ack", bodies(more))
	}
	e.ack(t, tGroup, ms[0])
	if off := e.Offsets().Query(tGroup, tTopic, 0); off != 1 {
		t.Fatalf("consumer offset after the first ack %d, want 1", off)
	}
	if _, more := fifo(e, 300); len(more) != 0 {
		t.Fatalf("the queue handed out %v with one message of its batch unacked", bodies(more))
	}
	e.ack(t, tGroup, ms[1])
	_, ms = fifo(e, 300)
	want(ms, "m-2", "m-3")
	// Not acked: after the invisible time the same batch comes again, counted.
	var again []popped
	came := func() bool { _, again = fifo(e, 60_000); return len(again) > 0 }
	for deadline := time.Now().Add(10 * time.Second); !came(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the unacked batch never came again")
		}
	}
	want(again, "m-2", "m-3")
	e.ack(t, tGroup, ms[0]) // the first delivery's handle is spent: nothing moves
	if off := e.Offsets().Query(tGroup, tTopic, 0); off != 2 {
		t.Fatalf("a spent handle moved the offset to %d", off)
	}
	for _, m := range again {
		e.ack(t, tGroup, m)
	}
	_, ms = fifo(e, 200)
	want(ms, "m-4")
	change := e.invoke(t, request(remoting.ChangeMessageInvisibleTime, &protocol.ChangeInvisibleTimeRequestHeader{
		ConsumerGroup: tGroup, Topic: tTopic, QueueID: 0, ExtraInfo: ms[0].handle, Offset: ms[0].offset, InvisibleTime: 60_000}))
	if change.Code != remoting.Success {
		t.Fatalf("FIFO change: %d %q", change.Code, change.Remark)
	}
	e.Stop(t)

	// After a restart the acks hold and the hidden message stays hidden past its first
	// invisible time (the change moved it).
	e = start(t, dir, nil)
	if off := e.Offsets().Query(tGroup, tTopic, 0); off != 4 {
		t.Fatalf("consumer offset after the restart %d, want 4", off)
	}
	time.Sleep(300 * time.Millisecond) // past the 200 ms the pop asked, not the 60 s of the change
	if _, more := fifo(e, 300); len(more) != 0 {
		t.Fatalf("the changed FIFO message came back early: %v", bodies(more))
	}
	e.ack(t, tGroup, ms[0])
	if off := e.Offsets().Query(tGroup, tTopic, 0); off != 5 {
		t.Fatalf("consumer offset after the last ack %d, want 5", off)
	}
}

// A group marked FIFO (consumeMessageOrderly) pops in order though the request does not ask.
func TestFIFOGroupPopsInOrder(t *testing.T) {
	e := start(t, "", nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	gc, _ := e.Groups().Find(tGroup)
	gc.ConsumeMessageOrderly = true
	if err := e.Groups().Update(gc); err != nil {
		t.Fatal(err)
	}
	e.put(t, tTopic, 0, 3, "", "m")
	plain := func() []popped {
		t.Helper()
		_, ms := e.pop(t, popHeader(tGroup, tTopic, -1, 2, 60_000, 0))
		return ms
	}
	first := plain()
	if len(first) != 2 {
		t.Fatalf("first pop %v", bodies(first))
	}
	if h, err := protocol.ParseExtraInfo(first[0].handle); err != nil || h.ReviveQid != orderReviveQid {
		t.Fatalf("a FIFO group's handle %q (%v): not a FIFO pop's", first[0].handle, err)
	}
	if more := plain(); len(more) != 0 {
		t.Fatalf("the queue handed out %v while the group's batch awaits ack", bodies(more))
	}
	for _, m := range first {
		e.ack(t, tGroup, m)
	}
	if next := plain(); len(next) != 1 || next[0].body != "m-2" {
		t.Fatalf("after the acks popped %v, want m-2", bodies(next))
	}
}

// The FIFO state table drops what RocketMQ's autoClean drops: a deleted topic's, an unknown
// group's, a queue's past the topic's read queues and a queue's not popped for 24 h; live
// entries stay.
func TestFIFOStateCleaned(t *testing.T) {
	e := start(t, "", nil)
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 2)
	if _, ok := e.svc.b.Groups().Find(tGroup); !ok {
		t.Fatal("no group")
	}
	now := nowMillis()
	live := &orderInfo{PopTime: now, LastConsume: now, Offsets: []int64{0}}
	o := e.svc.orders
	o.mu.Lock()
	o.t.Table = map[string]map[int32]*orderInfo{
		orderKey(tTopic, tGroup):       {0: live, 1: {LastConsume: now - orderIdleSpan - 1, Offsets: []int64{0}}, 5: {LastConsume: now, Offsets: []int64{0}}},
		orderKey("GoneTopic", tGroup):  {0: {LastConsume: now, Offsets: []int64{0}}},
		orderKey(tTopic, "gone-group"): {0: {LastConsume: now, Offsets: []int64{0}}},
		"no-separator":                 {0: {LastConsume: now, Offsets: []int64{0}}},
	}
	e.svc.cleanOrders(o, now)
	got := o.t.Table
	o.mu.Unlock()
	if len(got) != 1 || len(got[orderKey(tTopic, tGroup)]) != 1 || got[orderKey(tTopic, tGroup)][0] != live {
		t.Fatalf("after cleaning: %v", got)
	}
}
