package broker

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// TestLongPollManyQueues parks one pull per queue on both transports, then fills the queues
// concurrently: every pull is answered once with its queue's first message and nothing stays
// parked.
func TestLongPollManyQueues(t *testing.T) {
	tb := startTestBroker(t, nil)
	const queues = 16
	addTopic(tb, "T", queues)
	wiretest.Heartbeat(t, tb.TCP, tb.Addr, "c@1", "g", wiretest.Sub("T", "*"))
	wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@2", "g", wiretest.Sub("T", "*"))
	var dones []<-chan *remoting.Command
	for q := range int32(queues) {
		tr := remoting.Transport(tb.TCP)
		if q%2 == 1 {
			tr = tb.InProc
		}
		dones = append(dones, asyncPull(t, tr, tb.Addr, pullHeader("g", "T", q, 0)))
	}
	eventually(t, "pulls parked", func() bool { return tb.pull.hold.count() == queues })
	var wg sync.WaitGroup
	for q := range int32(queues) {
		wg.Go(func() {
			for i := range 3 {
				m := &storage.Message{Topic: "T", QueueID: q, Body: []byte(fmt.Sprintf("m-%d", i)),
					BornHost: consumeTestBornHost, StoreHost: tb.storeHost}
				if _, err := tb.Store().PutMessage(m); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for q, done := range dones {
		select {
		case resp := <-done:
			r := decodePull(t, resp)
			if r.code != remoting.Success || len(r.msgs) == 0 || r.bodies[0] != "m-0" || r.msgs[0].QueueID != int32(q) {
				t.Errorf("queue %d: code %d bodies %v", q, r.code, r.bodies)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("queue %d: pull not answered", q)
		}
	}
	if n := tb.pull.hold.count(); n != 0 {
		t.Errorf("%d pulls still parked", n)
	}
}

// TestWokenPullIsNotParkedAgain: a tag whose hash collides with the subscription's wakes the
// parked pull (the ConsumeQueue test passes); the re-run rejects it by tag string and answers
// at once instead of parking again.
func TestWokenPullIsNotParkedAgain(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 1)
	wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@1", "g", wiretest.Sub("T", "Aa"))
	h := pullHeader("g", "T", 0, 0)
	h.SysFlag |= protocol.PullFlagCommitOffset
	h.CommitOffset = 7
	done := asyncPull(t, tb.InProc, tb.Addr, h)
	eventually(t, "pull parked", func() bool { return tb.pull.hold.count() == 1 })
	tb.offsets.Commit("g", "T", 0, 3) // a later commit the re-run must not overwrite
	putMsgs(t, tb, "T", 0, 1, "BB", "collide")
	select {
	case resp := <-done:
		r := decodePull(t, resp)
		if r.code != remoting.PullRetryImmediately || r.hdr.NextBeginOffset != 1 || len(r.msgs) != 0 {
			t.Errorf("code %d (%s) next %d msgs %d", r.code, r.remark, r.hdr.NextBeginOffset, len(r.msgs))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("woken pull parked again")
	}
	if off := tb.offsets.Query("g", "T", 0); off != 3 {
		t.Errorf("offset %d: the re-run committed again", off)
	}
}

// TestPullHoldIndexes parks pulls of two connections on one queue, interleaved, takes them out
// by every route (close, take, expiry, arrival) and checks after each step that the indexes
// agree: every held pull sits where its positions say, and the slot counts match.
func TestPullHoldIndexes(t *testing.T) {
	h := newPullHold(100, 150)
	a := &holdTestChannel{id: 1}
	b := &holdTestChannel{id: 2}
	key := queueKey{topic: "T", queueID: 0}
	now := time.Now()
	var pulls []*heldPull
	for i := range 120 {
		ch := remoting.Channel(a)
		if i%2 == 1 {
			ch = b
		}
		slots := 1 // a: 60 slots; b: 90, every other pull of b taking 2; 150 in all
		if i%4 == 1 {
			slots = 2
		}
		p := &heldPull{ch: ch, req: remoting.NewRequest(remoting.PullMessage, nil, nil), key: key,
			offset: int64(i % 7), deadline: now.Add(time.Duration(i) * time.Millisecond), slots: slots}
		if res := h.park(p); res != parked {
			t.Fatalf("pull %d: %v", i, res)
		}
		pulls = append(pulls, p)
	}
	check := func(step string) {
		t.Helper()
		h.mu.Lock()
		defer h.mu.Unlock()
		n, slots := 0, 0
		for i, p := range h.byQueue[key] {
			if p.queuePos != i {
				t.Fatalf("%s: pull at %d of its queue says %d", step, i, p.queuePos)
			}
			if h.deadlines[p.index] != p {
				t.Fatalf("%s: deadline index %d does not hold the pull", step, p.index)
			}
			if _, ok := h.byChannel[p.ch.ID()].pulls[p]; !ok {
				t.Fatalf("%s: pull missing from its connection's set", step)
			}
			n, slots = n+1, slots+p.slots
		}
		chSlots := 0
		for _, c := range h.byChannel {
			chSlots += c.slots
		}
		if n != h.count() || n != len(h.deadlines) || slots != h.slots || chSlots != h.slots {
			t.Fatalf("%s: %d in the queue, count %d, %d deadlines, slots %d/%d/%d", step, n, h.count(),
				len(h.deadlines), slots, h.slots, chSlots)
		}
	}
	check("parked")
	if res := h.park(&heldPull{ch: a, key: key, deadline: now, slots: 41}); res != parkChannelFull {
		t.Errorf("connection a over its 100 slots: %v", res)
	}
	if res := h.park(&heldPull{ch: &holdTestChannel{id: 3}, key: key, deadline: now, slots: 31}); res != parkHoldFull {
		t.Errorf("the hold over its 150 slots: %v", res)
	}
	h.dropChannel(b.ID())
	check("connection b closed")
	for _, p := range pulls[:20] {
		h.take(p)
	}
	check("taken")
	if got := len(h.expired(now.Add(39 * time.Millisecond))); got != 10 {
		t.Errorf("expired %d pulls, want the 10 of a with deadlines 20..38 ms", got)
	}
	check("expired")
	woken := h.arrive(key, 3, 0) // wakes those wanting offsets 0..2
	check("arrived")
	for _, p := range woken {
		if p.offset >= 3 {
			t.Errorf("woke a pull wanting offset %d", p.offset)
		}
	}
	for _, p := range h.byQueue[key] {
		if p.offset < 3 {
			t.Errorf("left a pull wanting offset %d", p.offset)
		}
	}
	if h.closeAll(); h.count() != 0 || h.slots != 0 || len(h.byChannel) != 0 || len(h.byQueue) != 0 {
		t.Errorf("after closeAll: count %d slots %d", h.count(), h.slots)
	}
}
