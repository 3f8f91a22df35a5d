package reply

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// env is a test broker with the reply service attached.
type env struct {
	*brokertest.Broker
	svc *Service
}

// start starts a broker with the reply service; mutate may change its options.
func start(t testing.TB, mutate func(*broker.Options)) *env {
	t.Helper()
	e := &env{}
	e.Broker = brokertest.Start(t, brokertest.Config{Mutate: mutate, Attach: func(b *broker.Broker) error {
		e.svc = New(b)
		b.Attach(e.svc)
		return nil
	}})
	return e
}

// createTopic creates a topic with queues read and write queues through UPDATE_AND_CREATE_TOPIC.
func createTopic(t testing.TB, tb *env, topic string, queues int32) {
	t.Helper()
	h := protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: names.TopicAutoCreate, ReadQueueNums: queues,
		WriteQueueNums: queues, Perm: 6}
	resp := brokertest.Invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(&h), nil))
	if resp.Code != remoting.Success {
		t.Fatalf("create topic %s: %d %q", topic, resp.Code, resp.Remark)
	}
}

// goSendHeader is a single send as the official Go client builds it (docs/protocol.md §4.1).
func goSendHeader(topic string, queueID int32, props map[string]string) protocol.SendMessageRequestHeader {
	return protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: names.TopicAutoCreate,
		DefaultTopicQueueNums: 4, QueueID: queueID, BornTimestamp: 1700000000123, Flag: 7,
		Properties: message.MarshalProperties(props), BrokerName: "broker-a"}
}

// sendRequest encodes h with the keys code uses and sets the header serialization.
func sendRequest(code int16, h *protocol.SendMessageRequestHeader, body []byte, ser remoting.SerializeType) *remoting.Command {
	ext := make(map[string]string, 16)
	switch code {
	case remoting.SendMessageV2, remoting.SendBatchMessage, remoting.SendReplyMessageV2:
		(*protocol.SendMessageRequestHeaderV2)(h).Encode(ext)
	default:
		h.Encode(ext)
	}
	req := remoting.NewRequest(code, ext, body)
	req.Serialize = ser
	return req
}

// storedRecord waits until (topic, queueID, offset) is dispatched and returns its record,
// decoded from a private copy of the stored bytes.
func storedRecord(t *testing.T, tb *env, topic string, queueID int32, offset int64) message.Record {
	t.Helper()
	var raw []byte
	brokertest.Eventually(t, fmt.Sprintf("%s/%d@%d dispatched", topic, queueID, offset), func() bool {
		r := tb.Store().GetMessage("test", topic, queueID, offset, 1, 0, nil)
		defer r.Release()
		if r.Status != storage.Found {
			return false
		}
		raw = bytes.Clone(r.Messages[0])
		return true
	})
	var rec message.Record
	if _, err := message.DecodeRecord(raw, &rec, true); err != nil {
		t.Fatalf("decode stored record: %v", err)
	}
	return rec
}

// wantSendOK checks a success response and returns its header.
func wantSendOK(t *testing.T, resp *remoting.Command) protocol.SendMessageResponseHeader {
	t.Helper()
	if resp.Code != remoting.Success {
		t.Fatalf("response %d %q, want SUCCESS", resp.Code, resp.Remark)
	}
	var h protocol.SendMessageResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		t.Fatalf("response header: %v (%v)", err, resp.ExtFields)
	}
	if h.MsgRegion != broker.RegionID || !h.TraceOn {
		t.Errorf("MSG_REGION %q TRACE_ON %t, want DefaultRegion true", h.MsgRegion, h.TraceOn)
	}
	return h
}

// wantRefused checks a refusal's code and remark and that nothing was appended since maxPhy.
func wantRefused(t *testing.T, tb *env, resp *remoting.Command, code int16, remark string, maxPhy int64) {
	t.Helper()
	if resp.Code != code || !strings.Contains(resp.Remark, remark) {
		t.Errorf("response %d %q, want %d containing %q", resp.Code, resp.Remark, code, remark)
	}
	if got := tb.Store().MaxPhyOffset(); got != maxPhy {
		t.Errorf("store max offset %d after a refused send, want %d", got, maxPhy)
	}
}

// checkMsgID checks that id is the offset message id of (the broker's store host, phy).
func checkMsgID(t *testing.T, tb *env, id string, phy int64) {
	t.Helper()
	host, off, err := message.ParseOffsetMsgID(id)
	if err != nil {
		t.Fatalf("msgId %q: %v", id, err)
	}
	if want := netip.MustParseAddrPort(tb.Addr); host != want || off != phy {
		t.Errorf("msgId %q = %v@%d, want %v@%d", id, host, off, want, phy)
	}
}

// newTCPClient is a second TCP client (a second connection) closed at cleanup.
func newTCPClient(t *testing.T) *remoting.Client {
	c := remoting.NewClient(remoting.ClientOptions{ScanInterval: 20 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	return c
}

// fakeChannel is a Channel that records nothing; only its identity matters here.
type fakeChannel struct {
	id     uint64
	closed bool
}

func (c *fakeChannel) ID() uint64                            { return c.id }
func (c *fakeChannel) RemoteAddr() string                    { return "10.0.0.9:1" }
func (c *fakeChannel) LocalAddr() string                     { return "10.0.0.1:10911" }
func (c *fakeChannel) WriteResponse(*remoting.Command) error { return nil }
func (c *fakeChannel) InvokeSync(context.Context, *remoting.Command) (*remoting.Command, error) {
	return nil, remoting.ErrClosed
}
func (c *fakeChannel) InvokeAsync(context.Context, *remoting.Command, func(*remoting.Command, error)) error {
	return remoting.ErrClosed
}
func (c *fakeChannel) InvokeOneway(*remoting.Command) error { return nil }
func (c *fakeChannel) Close() error                         { c.closed = true; return nil }
func (c *fakeChannel) Closed() bool                         { return c.closed }

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1700000000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// benchRounds runs round for i in 1..b.N from workers goroutines at once, after one untimed
// round 0 that connects, and reports rounds per second under unit and the p99 of one round.
func benchRounds(b *testing.B, workers int, unit string, round func(i int64) (time.Duration, error)) {
	if _, err := round(0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	lat := make([][]time.Duration, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	begin := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				d, err := round(i)
				if err != nil {
					b.Error(err)
					return
				}
				lat[w] = append(lat[w], d)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	b.StopTimer()
	all := slices.Concat(lat...)
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), unit)
	b.ReportMetric(float64(all[min(len(all)-1, len(all)*99/100)].Microseconds()), "p99-µs")
}
