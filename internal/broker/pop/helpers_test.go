package pop

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/admin"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// env is a test broker with the POP service attached.
type env struct {
	*brokertest.Broker
	svc *Service
	tr  remoting.Transport
}

// start starts a broker on dir ("" for a fresh one) with the POP service, a 10 ms revive
// period and SYNC_FLUSH, and mutate's changes.
func start(t testing.TB, dir string, mutate func(*broker.Options)) *env {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	e := &env{}
	e.Broker = brokertest.StartIn(t, dir, brokertest.Config{Mutate: func(o *broker.Options) {
		o.Pop = config.Pop{ReviveInterval: 10 * time.Millisecond}
		o.Store.FlushDiskType = storage.SyncFlush
		if mutate != nil {
			mutate(o)
		}
	}, Attach: func(b *broker.Broker) error {
		s, err := New(b)
		if err != nil {
			return err
		}
		e.svc = s
		b.Attach(s)
		return attachAdmin(b)
	}})
	e.tr = e.TCP
	return e
}

func (e *env) invoke(t testing.TB, req *remoting.Command) *remoting.Command {
	t.Helper()
	return brokertest.Invoke(t, e.tr, e.Addr, req)
}

// put stores n messages in queue qid of topic.
func (e *env) put(t testing.TB, topic string, qid int32, n int, tag, prefix string) {
	t.Helper()
	wiretest.PutMsgs(t, e.Store(), e.Messages().StoreHost(), topic, qid, n, tag, prefix)
}

func popHeader(group, topic string, qid, n int32, invisible, poll int64) *protocol.PopMessageRequestHeader {
	return &protocol.PopMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: qid, MaxMsgNums: n,
		InvisibleTime: invisible, PollTime: poll, BornTime: time.Now().UnixMilli(), InitMode: protocol.PopInitModeMin}
}

func request(code int32, h remoting.Header) *remoting.Command {
	ext := map[string]string{}
	h.Encode(ext)
	return remoting.NewRequest(code, ext, nil)
}

// popped is one message of a pop answer.
type popped struct {
	body   string
	topic  string
	qid    int32
	offset int64
	handle string
	recon  int32
	props  map[string]string
	// fromHeader: the answer carried the record as stored, without POP_CK; handle is built
	// from the answer's header.
	fromHeader bool
}

// decodeBody reads a pop or peek answer's records.
func decodeBody(t testing.TB, b []byte) []popped {
	t.Helper()
	var out []popped
	for len(b) > 0 {
		var rec message.Record
		n, err := message.DecodeRecord(b, &rec, true)
		if err != nil {
			t.Fatalf("pop body record: %v", err)
		}
		props := message.UnmarshalProperties(rec.Properties)
		out = append(out, popped{body: string(rec.Body), topic: string(rec.Topic), qid: rec.QueueID,
			offset: rec.QueueOffset, handle: props[protocol.PropertyPopCK], recon: rec.ReconsumeTimes, props: props})
		b = b[n:]
	}
	return out
}

// pop pops and returns the answer and its messages, each with its receipt handle.
func (e *env) pop(t testing.TB, h *protocol.PopMessageRequestHeader) (*remoting.Command, []popped) {
	t.Helper()
	resp := e.invoke(t, request(remoting.PopMessage, h))
	if resp.Code != remoting.Success {
		return resp, nil
	}
	return resp, e.withHandles(t, resp, decodeBody(t, resp.Body))
}

// withHandles gives the messages of a pop answer that carry no POP_CK (those read from the
// topic itself, handed out as stored) the receipt handle a 5.x client builds from the
// answer's header: the checkpoint offset of the message's queue in startOffsetInfo, the
// answer's pop time, invisible time and reviveQid.
func (e *env) withHandles(t testing.TB, resp *remoting.Command, ms []popped) []popped {
	t.Helper()
	var h protocol.PopMessageResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		t.Fatalf("pop answer header: %v", err)
	}
	starts := map[string]int64{}
	for _, entry := range strings.Split(h.StartOffsetInfo, ";") {
		if f := strings.Fields(entry); len(f) == 3 {
			v, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				t.Fatalf("startOffsetInfo %q: %v", h.StartOffsetInfo, err)
			}
			starts[f[0]+" "+f[1]] = v
		}
	}
	for i := range ms {
		m := &ms[i]
		if m.handle != "" {
			continue
		}
		retry := protocol.PopRetryMarker(m.topic)
		start, ok := starts[retry+" "+itoa32(m.qid)]
		if !ok {
			t.Fatalf("%s has no POP_CK and startOffsetInfo %q names no offset of its queue", m.body, h.StartOffsetInfo)
		}
		m.handle = protocol.ExtraInfo{CkQueueOffset: start, PopTime: h.PopTime, InvisibleTime: h.InvisibleTime,
			ReviveQid: h.ReviveQid, Retry: retry, BrokerName: e.svc.brokerName, QueueID: m.qid, QueueOffset: m.offset}.String()
		m.fromHeader = true
	}
	return ms
}

// ack acknowledges m (popped for group from topic) and fails on a refusal.
// ack acks m as a 5.x client does: the header names the topic m was popped from (the pop retry
// topic for a revived message).
func (e *env) ack(t testing.TB, group string, m popped) {
	t.Helper()
	resp := e.invoke(t, request(remoting.AckMessage, &protocol.AckMessageRequestHeader{ConsumerGroup: group, Topic: m.topic,
		QueueID: m.qid, ExtraInfo: m.handle, Offset: m.offset}))
	if resp.Code != remoting.Success {
		t.Fatalf("ack %s: %d %q", m.body, resp.Code, resp.Remark)
	}
}

func bodies(ms []popped) map[string]int {
	out := map[string]int{}
	for _, m := range ms {
		out[m.body]++
	}
	return out
}

// popAll pops until n messages came or 10 s pass.
func (e *env) popAll(t testing.TB, h *protocol.PopMessageRequestHeader, n int) []popped {
	t.Helper()
	var got []popped
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		h.BornTime = time.Now().UnixMilli()
		resp, ms := e.pop(t, h)
		if resp.Code != remoting.Success && resp.Code != remoting.PollingTimeout {
			t.Fatalf("pop: %d %q", resp.Code, resp.Remark)
		}
		got = append(got, ms...)
		if len(ms) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if len(got) < n {
		t.Fatalf("popped %d messages, want %d: %v", len(got), n, bodies(got))
	}
	return got
}

func itoa32(v int32) string { return strconv.Itoa(int(v)) }

// attachAdmin attaches the admin service, whose topic admin the tests create topics with.
func attachAdmin(b *broker.Broker) error {
	s, err := admin.New(b, admin.Deps{})
	if err != nil {
		return err
	}
	b.Attach(s)
	return nil
}
