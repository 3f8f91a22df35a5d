package consumer

import (
	"strconv"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/message"
)

func msgsAt(offsets ...int64) []*Message {
	var out []*Message
	for _, o := range offsets {
		out = append(out, &Message{QueueOffset: o, Body: []byte("xx"), Properties: map[string]string{}})
	}
	return out
}

func TestProcessQueueConcurrentOffsets(t *testing.T) {
	pq := newProcessQueue(MessageQueue{Topic: "T"})
	if off := pq.remove(msgsAt(1)); off != -1 {
		t.Fatalf("remove from empty cache = %d, want -1", off)
	}
	ms := msgsAt(10, 11, 12, 13)
	if added := pq.put(ms); len(added) != 4 {
		t.Fatalf("added %d", len(added))
	}
	if added := pq.put(msgsAt(11, 14)); len(added) != 1 || added[0].QueueOffset != 14 {
		t.Fatalf("duplicate offsets must be skipped, added %v", added)
	}
	if c, b, span := pq.stats(); c != 5 || b != 10 || span != 4 {
		t.Fatalf("stats %d %d %d", c, b, span)
	}
	// Acknowledging a later message leaves the committed offset at the smallest in flight.
	if off := pq.remove(ms[2:3]); off != 10 {
		t.Errorf("after acking 12: commit %d, want 10", off)
	}
	if off := pq.remove(ms[0:2]); off != 13 {
		t.Errorf("after acking 10, 11: commit %d, want 13", off)
	}
	if off := pq.remove(append(ms[3:4], &Message{QueueOffset: 14})); off != 15 {
		t.Errorf("after emptying: commit %d, want max+1 = 15", off)
	}
	if c, b, _ := pq.stats(); c != 0 || b != 0 {
		t.Errorf("stats after emptying: %d msgs %d bytes", c, b)
	}
}

func TestProcessQueueOrderly(t *testing.T) {
	pq := newProcessQueue(MessageQueue{Topic: "T"})
	pq.put(msgsAt(3, 1, 2, 0))
	got := pq.take(2)
	if len(got) != 2 || got[0].QueueOffset != 0 || got[1].QueueOffset != 1 {
		t.Fatalf("take returned %v, want offsets 0 and 1", got)
	}
	if added := pq.put(msgsAt(1)); len(added) != 0 {
		t.Error("an offset being consumed was put again")
	}
	pq.putBack(got)
	again := pq.take(3)
	if len(again) != 3 || again[0].QueueOffset != 0 || again[2].QueueOffset != 2 {
		t.Fatalf("after putBack take returned %v", again)
	}
	if off := pq.commit(); off != 3 {
		t.Errorf("commit = %d, want 3", off)
	}
	if off := pq.commit(); off != -1 {
		t.Errorf("second commit = %d, want -1", off)
	}
	if c, _, _ := pq.stats(); c != 1 {
		t.Errorf("%d cached, want 1", c)
	}
}

func TestProcessQueueExpired(t *testing.T) {
	pq := newProcessQueue(MessageQueue{Topic: "T"})
	ms := msgsAt(0, 1, 2)
	pq.put(ms)
	now := time.Now()
	markConsumeStart(ms[:1], now.Add(-time.Hour), nil)
	markConsumeStart(ms[1:2], now, nil)
	got := pq.expired(now, time.Minute, 16)
	if len(got) != 1 || got[0] != ms[0] {
		t.Errorf("expired = %v, want only offset 0", got)
	}
	// A worker's stamp follows the clock: calls in one millisecond and in the next each see
	// their own time, property and field alike.
	var stamp consumeStamp
	for _, at := range []time.Time{now.Add(time.Second), now.Add(time.Second + time.Microsecond), now.Add(2 * time.Second)} {
		markConsumeStart(ms, at, &stamp)
		for _, m := range ms {
			if p, want := m.Property(message.PropertyConsumeStartTimestamp), strconv.FormatInt(at.UnixMilli(), 10); p != want || m.consumeStart.Load() != at.UnixMilli() {
				t.Errorf("offset %d: CONSUME_START_TIME %q, field %d; want %s", m.QueueOffset, p, m.consumeStart.Load(), want)
			}
		}
	}
}

func TestProcessQueueDrop(t *testing.T) {
	pq := newProcessQueue(MessageQueue{Topic: "T"})
	pq.drop()
	pq.drop()
	select {
	case <-pq.done:
	default:
		t.Fatal("done not closed")
	}
	if !pq.isDropped() {
		t.Fatal("not dropped")
	}
}

// tryConsumeLock waits for the orderly loop's listener call to end, up to its deadline.
func TestTryConsumeLock(t *testing.T) {
	pq := newProcessQueue(MessageQueue{Topic: "T"})
	if !pq.tryConsumeLock(time.Millisecond) {
		t.Fatal("a free slot was not taken")
	}
	if pq.tryConsumeLock(time.Millisecond) {
		t.Fatal("a held slot was taken")
	}
	released := make(chan struct{})
	go func() { <-released; pq.unlockConsume() }()
	close(released)
	if !pq.tryConsumeLock(time.Minute) {
		t.Fatal("a slot released while waiting was not taken")
	}
	pq.unlockConsume()
}
