package storage

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/rs/zerolog"
)

const testSegBytes = 64 << 10

var (
	testStoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	testBornHost  = netip.MustParseAddrPort("10.1.2.3:40000")
)

// testOptions are small-file options logging to the test.
func testOptions(t testing.TB, dir string) Options {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	if dir == "" {
		dir = t.TempDir()
	}
	return Options{
		Dir:                       dir,
		SegmentBytes:              testSegBytes,
		ConsumeQueueUnits:         64,
		MaxHashSlotNum:            64,
		MaxIndexNum:               500,
		FlushIntervalCommitLog:    10 * time.Millisecond,
		FlushIntervalConsumeQueue: 20 * time.Millisecond,
		Logger:                    &l,
	}
}

func openStore(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// runStore runs the services until the test ends.
func runStore(t testing.TB, s *Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := s.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	// Tests may Close the store at once; Run must have started by then. Run offers no signal
	// for that, so this polls (tests in a bubble use runStoreInBubble).
	waitFor(t, 5*time.Second, func() bool {
		s.runMu.Lock()
		defer s.runMu.Unlock()
		return s.running
	})
}

// runStoreInBubble runs the services until the test ends, for a test inside synctest.Test. It
// returns once every service is idle, at the instant Run started (the fake clock has not
// moved), so the test can count the services' periods from time.Now.
func runStoreInBubble(t *testing.T, s *Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	synctest.Wait()
}

func testMsg(topic string, qid int32, body string, props map[string]string) *Message {
	return &Message{
		Topic: topic, QueueID: qid, Body: []byte(body),
		Properties:    message.MarshalProperties(props),
		BornTimestamp: 1_700_000_000_000, BornHost: testBornHost, StoreHost: testStoreHost,
	}
}

func mustPut(t testing.TB, s *Store, m *Message) PutResult {
	t.Helper()
	r, err := s.PutMessage(m)
	if err != nil {
		t.Fatalf("PutMessage: %v (status %v)", err, r.Status)
	}
	return r
}

// waitDispatched waits until everything appended is in the ConsumeQueues.
func waitDispatched(t testing.TB, s *Store) {
	t.Helper()
	waitFor(t, 5*time.Second, func() bool { return s.DispatchedPhyOffset() >= s.MaxPhyOffset() })
}

// waitFor polls cond on the wall clock. It is for tests whose goroutines never all block (busy
// writers, as in the crash tests) or that watch state with no signal to wait on; tests of the
// timed services run in a synctest bubble and use synctest.Wait instead.
func waitFor(t testing.TB, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", d)
		}
		time.Sleep(time.Millisecond)
	}
}

// readAll pulls every message of a queue and decodes it.
func readAll(t testing.TB, s *Store, topic string, qid int32) []message.Record {
	t.Helper()
	var out []message.Record
	off := s.MinOffsetInQueue(topic, qid)
	for {
		r := s.GetMessage("g", topic, qid, off, 32, 0, nil)
		if r.Status != Found {
			st := r.Status
			r.Release()
			if st == OffsetOverflowOne || st == NoMessageInQueue {
				return out
			}
			t.Fatalf("GetMessage(%s,%d,%d): %v", topic, qid, off, st)
		}
		for i, b := range r.Messages {
			var rec message.Record
			if _, err := message.DecodeRecord(b, &rec, true); err != nil {
				t.Fatalf("record at queue offset %d: %v", r.QueueOffsets[i], err)
			}
			// Copy out of the mapping.
			cp := append([]byte(nil), b...)
			message.DecodeRecord(cp, &rec, false)
			out = append(out, rec)
		}
		off = r.NextBeginOffset
		r.Release()
	}
}

// fakeClock is a settable clock.
type fakeClock struct{ ms atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.ms.Store(t.UnixMilli())
	return c
}
func (c *fakeClock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

func body(i, n int) string {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte('a' + (i+j)%26)
	}
	return fmt.Sprintf("%06d:%s", i, b)
}
