package pop

import (
	"fmt"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/storage"
)

// asyncFlush runs the broker as a node does by default, where acks are merged in memory, and
// sets how long they may stay there.
func asyncFlush(stay time.Duration) func(*broker.Options) {
	return func(o *broker.Options) {
		o.Store.FlushDiskType = storage.AsyncFlush
		o.Pop.CkStayBufferTime = stay
	}
}

// reviveRecords counts the records of every revive queue.
func (e *env) reviveRecords() int64 {
	var n int64
	for q := range reviveQueueNum {
		n += e.Store().MaxOffsetInQueue(e.svc.reviveTopic, q)
	}
	return n
}

// Under ASYNC_FLUSH four ACK_MESSAGEs of one pop write nothing when they are answered and one
// "bAck" record within the stay time; the acks hold across a restart, and only the fifth
// message comes back. Under SYNC_FLUSH every ack is its own record before its answer.
func TestBufferedAcksMergeIntoOneRecord(t *testing.T) {
	dir := t.TempDir()
	e := start(t, dir, asyncFlush(200*time.Millisecond))
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	e.put(t, tTopic, 0, 5, "", "m")
	got := e.popAll(t, popHeader(tGroup, tTopic, 0, 32, 1500, 0), 5)
	before := e.reviveRecords()
	for _, m := range got[:4] {
		e.ack(t, tGroup, m)
	}
	if n := e.reviveRecords() - before; n != 0 {
		t.Fatalf("%d revive records right after the acks, want 0 (merged in memory)", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.reviveRecords() == before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // more than the stay time: any further record would be there
	if n := e.reviveRecords() - before; n != 1 {
		t.Fatalf("%d revive records for four merged acks, want 1", n)
	}
	e.Stop(t)

	e = start(t, dir, asyncFlush(200*time.Millisecond))
	back := e.popAll(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0), 1)
	if back[0].body != got[4].body {
		t.Fatalf("came back %q, want %q", back[0].body, got[4].body)
	}
	if resp, ms := e.pop(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0)); len(ms) != 0 {
		t.Fatalf("popped more after the fifth came back: %d %v", resp.Code, bodies(ms))
	}

	sync := start(t, "", nil) // SYNC_FLUSH
	wiretest.CreateTopic(t, sync.TCP, sync.Addr, tTopic, 1)
	sync.put(t, tTopic, 0, 2, "", "s")
	got = sync.popAll(t, popHeader(tGroup, tTopic, 0, 32, 60_000, 0), 2)
	before = sync.reviveRecords()
	for i, m := range got {
		sync.ack(t, tGroup, m)
		if n := sync.reviveRecords() - before; n != int64(i+1) {
			t.Fatalf("SYNC_FLUSH: %d revive records after %d acks", n, i+1)
		}
	}
}

// A checkpoint whose invisible time passes has its merged acks written before its other
// messages go back: with a stay time far longer than the invisible time, the acked message
// still never comes back, across a restart too.
func TestBufferedAcksWrittenBeforeRevive(t *testing.T) {
	dir := t.TempDir()
	e := start(t, dir, asyncFlush(time.Hour))
	wiretest.CreateTopic(t, e.TCP, e.Addr, tTopic, 1)
	e.put(t, tTopic, 0, 3, "", "m")
	got := e.popAll(t, popHeader(tGroup, tTopic, 0, 32, 300, 0), 3)
	before := e.reviveRecords()
	e.ack(t, tGroup, got[0])
	back := e.popAll(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0), 2)
	want := map[string]int{got[1].body: 1, got[2].body: 1}
	if fmt.Sprint(bodies(back)) != fmt.Sprint(want) {
		t.Fatalf("came back %v, want %v", bodies(back), want)
	}
	// The revived checkpoint's ack record, and the pop of the two revived messages' one.
	if n := e.reviveRecords() - before; n < 2 {
		t.Fatalf("%d revive records after the revive, want the ack's and the new pop's", n)
	}
	for _, m := range back {
		e.ack(t, tGroup, m)
	}
	e.Stop(t) // writes the merged acks of the second pop
	e = start(t, dir, asyncFlush(time.Hour))
	if resp, ms := e.pop(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0)); len(ms) != 0 {
		t.Fatalf("popped after a restart with every message acked: %d %v", resp.Code, bodies(ms))
	}
	time.Sleep(400 * time.Millisecond) // past every invisible time: revives would have run
	if resp, ms := e.pop(t, popHeader(tGroup, tTopic, -1, 32, 60_000, 0)); len(ms) != 0 {
		t.Fatalf("an acked message came back: %d %v", resp.Code, bodies(ms))
	}
	if n := e.svc.Checkpoints(); n != 0 {
		t.Fatalf("%d checkpoints left", n)
	}
}
