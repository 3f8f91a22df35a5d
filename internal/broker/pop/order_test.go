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
	e.ack(t, tGroup, tTopic, ms[0])
	if off := e.Offsets().Query(tGroup, tTopic, 0); off != 1 {
		t.Fatalf("consumer offset after the first ack %d, want 1", off)
	}
	if _, more := fifo(e, 300); len(more) != 0 {
		t.Fatalf("the queue handed out %v with one message of its batch unacked", bodies(more))
	}
	e.ack(t, tGroup, tTopic, ms[1])
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
	e.ack(t, tGroup, tTopic, ms[0]) // the first delivery's handle is spent: nothing moves
	if off := e.Offsets().Query(tGroup, tTopic, 0); off != 2 {
		t.Fatalf("a spent handle moved the offset to %d", off)
	}
	for _, m := range again {
		e.ack(t, tGroup, tTopic, m)
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
	e.ack(t, tGroup, tTopic, ms[0])
	if off := e.Offsets().Query(tGroup, tTopic, 0); off != 5 {
		t.Fatalf("consumer offset after the last ack %d, want 5", off)
	}
}
