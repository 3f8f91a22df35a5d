package consumer

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
)

// record encodes a stored record as a broker would return it in a pull body.
func record(t *testing.T, m *message.Message, queueOffset, phyOffset int64) []byte {
	t.Helper()
	size, err := message.RecordSize(m)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, size)
	message.EncodeRecord(b, size, m, queueOffset, phyOffset, 1700000000123)
	return b
}

func zlibBytes(b []byte) []byte {
	var out bytes.Buffer
	w := zlib.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func TestDecodeMessages(t *testing.T) {
	born := netip.MustParseAddrPort("10.0.0.7:5555")
	plain := &message.Message{Topic: "T", QueueID: 2, Flag: 7, Body: []byte("hello"),
		Properties:    message.MarshalProperties(map[string]string{"TAGS": "a", "KEYS": "k1 k2", "UNIQ_KEY": "U1", "x": "y"}),
		BornTimestamp: 1700000000000, BornHost: born, StoreHost: testStoreHost, ReconsumeTimes: 2}
	compressed := &message.Message{Topic: "T", QueueID: 2, Body: zlibBytes([]byte("inflated body")),
		SysFlag: message.FlagCompressed, BornHost: born, StoreHost: testStoreHost}
	broken := &message.Message{Topic: "T", QueueID: 2, Body: []byte("not zlib"), SysFlag: message.FlagCompressed,
		BornHost: born, StoreHost: testStoreHost}
	body := append(record(t, plain, 5, 1000), record(t, compressed, 6, 2000)...)
	body = append(body, record(t, broken, 7, 3000)...)

	mq := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 2}
	msgs, err := decodeMessages(body, mq)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 {
		t.Fatalf("decoded %d messages, want 3", len(msgs))
	}
	m := msgs[0]
	want := &Message{Topic: "T", Tags: "a", Keys: []string{"k1", "k2"},
		Properties: map[string]string{"TAGS": "a", "KEYS": "k1 k2", "UNIQ_KEY": "U1", "x": "y"},
		Body:       []byte("hello"), Flag: 7, Queue: mq, QueueOffset: 5, MsgID: "U1",
		OffsetMsgID: message.OffsetMsgID(testStoreHost, 1000), CommitLogOffset: 1000, ReconsumeTimes: 2,
		BornTime: time.UnixMilli(1700000000000), BornHost: born, StoreTime: time.UnixMilli(1700000000123),
		StoreHost: testStoreHost, StoreSize: int32(len(record(t, plain, 5, 1000))), BodyCRC: 0}
	if diff := cmp.Diff(want, m, cmpopts.IgnoreUnexported(Message{}), cmpopts.IgnoreFields(Message{}, "BodyCRC"),
		cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
		t.Errorf("plain message (-want +got):\n%s", diff)
	}
	if got := string(msgs[1].Body); got != "inflated body" || msgs[1].Compressed {
		t.Errorf("compressed body = %q (still compressed %v), want inflated", got, msgs[1].Compressed)
	}
	if msgs[1].MsgID != msgs[1].OffsetMsgID || msgs[1].MsgID != message.OffsetMsgID(testStoreHost, 2000) {
		t.Errorf("msg id without UNIQ_KEY = %q, want the offset id %q", msgs[1].MsgID, msgs[1].OffsetMsgID)
	}
	if got := string(msgs[2].Body); got != "not zlib" || !msgs[2].Compressed {
		t.Errorf("broken compressed body = %q (compressed %v), want the raw bytes kept", got, msgs[2].Compressed)
	}

	// A truncated body yields the whole records before it and an error.
	got, err := decodeMessages(body[:len(body)-3], mq)
	if err == nil || len(got) != 2 || !errors.Is(err, message.ErrShort) {
		t.Errorf("truncated: %d messages, err %v; want 2 and ErrShort", len(got), err)
	}
}

// TestDecodeMessagesShared checks what decodeMessages shares between the messages of one pull
// answer: each still reads as if decoded alone, whatever the mix of topics and store hosts
// (IPv4 and IPv6 offset ids differ in length), past the 32 records the walk holds without
// allocating, and writing one message's properties leaves the others' alone.
func TestDecodeMessagesShared(t *testing.T) {
	v4, v6 := testStoreHost, netip.MustParseAddrPort("[2001:db8::7]:10911")
	var body []byte
	var want []*Message
	const n = 70
	for i := range n {
		topic := "T"
		if i%5 == 3 {
			topic = "%RETRY%g"
		}
		host := v4
		if i%3 == 1 {
			host = v6
		}
		props := map[string]string{"UNIQ_KEY": fmt.Sprintf("U%d", i), "TAGS": fmt.Sprintf("tag%d", i%4)}
		if i%7 == 0 {
			props = nil // no properties at all
		}
		m := &message.Message{Topic: topic, QueueID: 1, Body: []byte(fmt.Sprintf("body %d", i)),
			Properties: message.MarshalProperties(props), BornHost: v4, StoreHost: host}
		rec := record(t, m, int64(i), int64(1000*i))
		var r message.Record
		if _, err := message.DecodeRecord(rec, &r, false); err != nil {
			t.Fatal(err)
		}
		want = append(want, fromRecord(&r, MessageQueue{BrokerName: "b"}))
		body = append(body, rec...)
	}
	got, err := decodeMessages(body, MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1})
	if err != nil || len(got) != n {
		t.Fatalf("decoded %d messages, err %v; want %d", len(got), err, n)
	}
	opts := []cmp.Option{cmpopts.IgnoreUnexported(Message{}), cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })}
	for i := range got {
		if diff := cmp.Diff(want[i], got[i], opts...); diff != "" {
			t.Fatalf("message %d (-alone +in the batch):\n%s", i, diff)
		}
	}
	if got[1].OffsetMsgID != message.OffsetMsgID(v6, 1000) || len(got[1].OffsetMsgID) != 56 {
		t.Errorf("IPv6 offset id %q", got[1].OffsetMsgID)
	}
	got[0].Properties["x"] = "y"
	got[1].Properties["UNIQ_KEY"] = "changed"
	if _, ok := got[2].Properties["x"]; ok || got[2].Properties["UNIQ_KEY"] != "U2" || got[1].MsgID != "U1" {
		t.Errorf("a write to one message's properties showed in another's: %v, msg id %q", got[2].Properties, got[1].MsgID)
	}
}

func TestRestoreRetryTopic(t *testing.T) {
	m := &Message{Topic: "%RETRY%g", Queue: MessageQueue{Topic: "%RETRY%g"},
		Properties: map[string]string{message.PropertyRetryTopic: "orders"}}
	restoreRetryTopic(m, RetryTopic("g"))
	if m.Topic != "orders" || m.Queue.Topic != "%RETRY%g" {
		t.Errorf("topic %q queue topic %q, want orders and %%RETRY%%g", m.Topic, m.Queue.Topic)
	}
	other := &Message{Topic: "x", Queue: MessageQueue{Topic: "x"}, Properties: map[string]string{message.PropertyRetryTopic: "orders"}}
	restoreRetryTopic(other, RetryTopic("g"))
	if other.Topic != "x" {
		t.Errorf("a message not from the retry topic was renamed to %q", other.Topic)
	}
}

func TestSubscriptionData(t *testing.T) {
	s := newSubscription("T", " b || a ||  b ", nil)
	d := s.data()
	if diff := cmp.Diff([]string{"a", "b"}, d.TagsSet); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	if len(d.CodeSet) != 2 || d.CodeSet[0] != 97 || d.CodeSet[1] != 98 {
		t.Errorf("codes %v, want [97 98]", d.CodeSet)
	}
	if !s.matches("a") || s.matches("c") || s.matches("a || b") {
		t.Error("tag matching wrong")
	}
	all := newSubscription("T", "*", nil)
	if !all.matches("") || !all.matches("zz") || len(all.data().TagsSet) != 0 || all.data().SubString != "*" {
		t.Error("* must match everything and carry no tags")
	}
}

func TestBatches(t *testing.T) {
	mk := func(topic string) *Message { return &Message{Topic: topic} }
	msgs := []*Message{mk("a"), mk("a"), mk("a"), mk("b"), mk("a")}
	var sizes []int
	for rest := msgs; len(rest) > 0; {
		var b []*Message
		b, rest = nextBatch(rest, 2)
		if cap(b) != len(b) {
			t.Errorf("batch of %d has room for %d: a listener's append would overwrite the next", len(b), cap(b))
		}
		sizes = append(sizes, len(b))
		for _, m := range b {
			if m.Topic != b[0].Topic {
				t.Errorf("batch mixes topics")
			}
		}
	}
	if diff := cmp.Diff([]int{2, 1, 1, 1}, sizes); diff != "" {
		t.Errorf("batch sizes (-want +got):\n%s", diff)
	}
}

// Each pulled message carries the offset range of the answer that brought it, though a queue
// keeps the strings of the last range.
func TestFilterOffsetRange(t *testing.T) {
	cfg := defaultConfig()
	cfg.group = "g"
	p := newPuller(cfg.pullerConfig, protocol.ConsumePassively, nil)
	p.mu.subs = map[string]*subscription{"T": newSubscription("T", "*", nil)}
	mq := MessageQueue{Topic: "T", BrokerName: "b"}
	qs := &queueState{mq: mq}
	for _, r := range [][2]int64{{0, 0}, {0, 1}, {100, 123456789012}, {100, 123456789012}, {7, 8}, {0, 0}} {
		msgs := []*Message{{Topic: "T", Queue: mq, Properties: map[string]string{}}}
		got := p.filter(qs, msgs, protocol.PullMessageResponseHeader{MinOffset: r[0], MaxOffset: r[1]})
		if len(got) != 1 {
			t.Fatalf("range %v: %d messages kept", r, len(got))
		}
		minS, maxS := got[0].Property(message.PropertyMinOffset), got[0].Property(message.PropertyMaxOffset)
		if minS != strconv.FormatInt(r[0], 10) || maxS != strconv.FormatInt(r[1], 10) {
			t.Errorf("range %v: MIN_OFFSET %q, MAX_OFFSET %q", r, minS, maxS)
		}
	}
}
