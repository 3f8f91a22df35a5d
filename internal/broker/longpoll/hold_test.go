package longpoll

import (
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/remoting"
)

// TestPullHoldIndexes parks pulls of two connections on one queue, interleaved, takes them out
// by every route (close, take, expiry, arrival) and checks after each step that the indexes
// agree: every held pull sits where its positions say, and the slot counts match.
func TestPullHoldIndexes(t *testing.T) {
	h := New(100, 150)
	a := &wiretest.FakeChannel{Num: 1}
	b := &wiretest.FakeChannel{Num: 2}
	key := Queue{Topic: "T", QueueID: 0}
	now := time.Now()
	var pulls []*Pull
	for i := range 120 {
		ch := remoting.Channel(a)
		if i%2 == 1 {
			ch = b
		}
		slots := 1 // a: 60 slots; b: 90, every other pull of b taking 2; 150 in all
		if i%4 == 1 {
			slots = 2
		}
		p := &Pull{Channel: ch, Request: remoting.NewRequest(remoting.PullMessage, nil, nil), Queue: key,
			Offset: int64(i % 7), Deadline: now.Add(time.Duration(i) * time.Millisecond), Slots: slots}
		if res := h.Park(p); res != Parked {
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
			if _, ok := h.byChannel[p.Channel.ID()].pulls[p]; !ok {
				t.Fatalf("%s: pull missing from its connection's set", step)
			}
			n, slots = n+1, slots+p.Slots
		}
		chSlots := 0
		for _, c := range h.byChannel {
			chSlots += c.slots
		}
		if n != h.Count() || n != len(h.deadlines) || slots != h.slots || chSlots != h.slots {
			t.Fatalf("%s: %d in the queue, count %d, %d deadlines, slots %d/%d/%d", step, n, h.Count(),
				len(h.deadlines), slots, h.slots, chSlots)
		}
	}
	check("parked")
	if res := h.Park(&Pull{Channel: a, Queue: key, Deadline: now, Slots: 41}); res != ChannelFull {
		t.Errorf("connection a over its 100 slots: %v", res)
	}
	if res := h.Park(&Pull{Channel: &wiretest.FakeChannel{Num: 3}, Queue: key, Deadline: now, Slots: 31}); res != HoldFull {
		t.Errorf("the hold over its 150 slots: %v", res)
	}
	h.DropChannel(b.ID())
	check("connection b closed")
	for _, p := range pulls[:20] {
		h.Take(p)
	}
	check("taken")
	if got := len(h.Expired(now.Add(39 * time.Millisecond))); got != 10 {
		t.Errorf("expired %d pulls, want the 10 of a with deadlines 20..38 ms", got)
	}
	check("expired")
	woken := h.Arrive(key, 3, 0) // wakes those wanting offsets 0..2
	check("arrived")
	for _, p := range woken {
		if p.Offset >= 3 {
			t.Errorf("woke a pull wanting offset %d", p.Offset)
		}
	}
	for _, p := range h.byQueue[key] {
		if p.Offset < 3 {
			t.Errorf("left a pull wanting offset %d", p.Offset)
		}
	}
	if h.CloseAll(); h.Count() != 0 || h.slots != 0 || len(h.byChannel) != 0 || len(h.byQueue) != 0 {
		t.Errorf("after closeAll: count %d slots %d", h.Count(), h.slots)
	}
}
