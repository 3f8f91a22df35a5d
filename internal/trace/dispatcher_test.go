package trace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

type sent struct {
	topic string
	keys  []string
	body  string
}

// fakeSender records trace messages; while gate is open-ended (non-nil) each send waits for
// a token from it.
type fakeSender struct {
	mu     sync.Mutex
	msgs   []sent
	gate   chan struct{}
	closed bool
	got    chan struct{} // one token per message
}

func newFakeSender() *fakeSender { return &fakeSender{got: make(chan struct{}, 1024)} }

func (s *fakeSender) SendTrace(ctx context.Context, topic string, keys []string, body []byte) error {
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	s.msgs = append(s.msgs, sent{topic, slices.Clone(keys), string(body)})
	s.mu.Unlock()
	s.got <- struct{}{}
	return nil
}

func (s *fakeSender) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("closed twice")
	}
	s.closed = true
	return nil
}

func (s *fakeSender) sent() []sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

func pub(id string, keys string) *Context {
	return &Context{Type: Pub, TimeStamp: 1, Group: "pg", Success: true,
		Beans: []Bean{{Topic: "t", MsgID: id, Keys: keys}}}
}

func testLogger(t *testing.T) zerolog.Logger { return zerolog.New(zerolog.NewTestWriter(t)) }

func TestDispatcherBatchesByCountAndKeysByMessage(t *testing.T) {
	s := newFakeSender()
	d := NewDispatcher(Config{BatchSize: 3, FlushInterval: time.Hour, Logger: testLogger(t)}, s)
	for i := range 3 {
		if !d.Append(pub(fmt.Sprint("M", i), "k shared")) {
			t.Fatal("append refused")
		}
	}
	<-s.got // a full batch leaves without waiting for the interval
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	msgs := s.sent()
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if m.topic != DefaultTopic {
		t.Errorf("topic %q", m.topic)
	}
	if want := []string{"M0", "k", "shared", "M1", "M2"}; !slices.Equal(m.keys, want) {
		t.Errorf("keys %q, want %q", m.keys, want)
	}
	got, err := Decode(m.body)
	if err != nil || len(got) != 3 {
		t.Fatalf("decoded %d records, %v", len(got), err)
	}
}

func TestDispatcherFlushesAfterInterval(t *testing.T) {
	s := newFakeSender()
	d := NewDispatcher(Config{Topic: "custom", BatchSize: 100, FlushInterval: 5 * time.Millisecond, Logger: testLogger(t)}, s)
	defer d.Close(context.Background())
	d.Append(pub("M", ""))
	select {
	case <-s.got:
	case <-time.After(5 * time.Second):
		t.Fatal("a lone record was never sent")
	}
	if m := s.sent()[0]; m.topic != "custom" || !strings.HasPrefix(m.body, "Pub\x01") {
		t.Fatalf("sent %+v", m)
	}
}

func TestDispatcherSplitsAtMaxMsgSize(t *testing.T) {
	s := newFakeSender()
	rec := len(Append(nil, pub("M0", "")))
	d := NewDispatcher(Config{BatchSize: 10, MaxMsgSize: 2*rec + 1, FlushInterval: time.Hour, Logger: testLogger(t)}, s)
	for i := range 5 {
		d.Append(pub(fmt.Sprint("M", i), ""))
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range s.sent() {
		if len(m.body) > 2*rec+1 {
			t.Errorf("message of %d bytes over the max %d", len(m.body), 2*rec+1)
		}
		ctxs, err := Decode(m.body)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range ctxs {
			ids = append(ids, c.Beans[0].MsgID)
		}
		if len(m.keys) != len(ctxs) {
			t.Errorf("keys %q for %d records", m.keys, len(ctxs))
		}
	}
	if want := []string{"M0", "M1", "M2", "M3", "M4"}; !slices.Equal(ids, want) {
		t.Fatalf("records %q, want %q", ids, want)
	}
}

func TestDispatcherDropsWhenFullWithoutBlocking(t *testing.T) {
	s := newFakeSender()
	s.gate = make(chan struct{})
	d := NewDispatcher(Config{QueueSize: 2, BatchSize: 1, FlushInterval: time.Hour, Logger: testLogger(t)}, s)
	// The first record is taken off the queue into a send the gate holds; then two fit.
	d.Append(pub("M0", ""))
	deadline := time.Now().Add(5 * time.Second)
	for len(d.queue) != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	accepted := 0
	for i := range 10 {
		if d.Append(pub(fmt.Sprint("N", i), "")) {
			accepted++
		}
	}
	if accepted != 2 || d.Dropped() != 8 {
		t.Fatalf("accepted %d, dropped %d; want 2 and 8", accepted, d.Dropped())
	}
	close(s.gate)
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(s.sent()); n != 3 {
		t.Fatalf("%d messages sent, want 3", n)
	}
	if d.Append(pub("late", "")) || d.Dropped() != 9 {
		t.Fatalf("append after Close accepted or not counted (dropped %d)", d.Dropped())
	}
}

func TestDispatcherCloseGivesUpAtItsContext(t *testing.T) {
	s := newFakeSender()
	s.gate = make(chan struct{})
	d := NewDispatcher(Config{BatchSize: 1, SendTimeout: time.Hour, Logger: testLogger(t)}, s)
	d.Append(pub("M", ""))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close: %v, want context.Canceled", err)
	}
	close(s.gate)
	<-d.done
}
