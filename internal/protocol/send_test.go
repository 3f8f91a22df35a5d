package protocol

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/remoting"
)

const goClientProps = "TAGS\x01a\x02UNIQ_KEY\x01C0A8000100002A9F0000000000000001\x02"

// goClientSend is a single send as the official Go client builds it.
func goClientSend() SendMessageRequestHeader {
	return SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 2, SysFlag: 1, BornTimestamp: 1700000000123, Flag: 7,
		Properties: goClientProps, BrokerName: "broker-a"}
}

// TestSendHeaderWire pins the long-key encoding to docs/protocol.md §4.1.
func TestSendHeaderWire(t *testing.T) {
	h := goClientSend()
	want := map[string]string{
		"producerGroup": "pg", "topic": "T", "queueId": "2", "sysFlag": "1",
		"bornTimestamp": "1700000000123", "flag": "7", "properties": goClientProps,
		"reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "0",
		"defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "batch": "false", "bname": "broker-a",
	}
	if diff := cmp.Diff(want, remoting.EncodeHeader(&h)); diff != "" {
		t.Errorf("extFields (-want +got):\n%s", diff)
	}
}

// TestSendHeaderV2Wire pins the short-key encoding to docs/protocol.md §4.2 (a batch send).
func TestSendHeaderV2Wire(t *testing.T) {
	h := SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 3, BornTimestamp: 1700000000123, Batch: true, BrokerName: "broker-a"}
	want := map[string]string{
		"a": "pg", "b": "T", "c": "TBW102", "d": "4", "e": "3", "f": "0", "g": "1700000000123", "h": "0",
		"i": "", "j": "0", "k": "false", "l": "0", "m": "true", "n": "broker-a",
	}
	if diff := cmp.Diff(want, remoting.EncodeHeader((*SendMessageRequestHeaderV2)(&h))); diff != "" {
		t.Errorf("extFields (-want +got):\n%s", diff)
	}
}

func TestSendHeadersRoundTrip(t *testing.T) {
	full := goClientSend()
	full.ReconsumeTimes, full.MaxReconsumeTimes, full.UnitMode, full.Batch = 3, 16, true, true
	noMax := goClientSend()
	noMax.MaxReconsumeTimes = -1
	cases := []struct {
		name string
		in   remoting.Header
		out  remoting.Header
	}{
		{"v1", &full, &SendMessageRequestHeader{}},
		{"v1 no max", &noMax, &SendMessageRequestHeader{}},
		{"v2", (*SendMessageRequestHeaderV2)(&full), &SendMessageRequestHeaderV2{}},
		{"v2 no max", (*SendMessageRequestHeaderV2)(&noMax), &SendMessageRequestHeaderV2{}},
		{"response", &SendMessageResponseHeader{MsgID: "7F00000100002A9F0000000000000064", QueueID: 2,
			QueueOffset: 15, TransactionID: "tx", MsgRegion: "DefaultRegion", TraceOn: true},
			&SendMessageResponseHeader{}},
		{"response minimal", &SendMessageResponseHeader{MsgID: "a,b", QueueOffset: 1}, &SendMessageResponseHeader{}},
		{"create topic", &CreateTopicRequestHeader{Topic: "T", DefaultTopic: "defaultTopic", ReadQueueNums: 8,
			WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG", TopicSysFlag: 1, Order: true},
			&CreateTopicRequestHeader{}},
		{"delete topic", &DeleteTopicRequestHeader{Topic: "T"}, &DeleteTopicRequestHeader{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.out.Decode(remoting.EncodeHeader(c.in)); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(c.in, c.out); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSendHeaderOptionalFields decodes what old or minimal clients send: the optional fields
// absent, maxReconsumeTimes reported as -1.
func TestSendHeaderOptionalFields(t *testing.T) {
	ext := map[string]string{"producerGroup": "pg", "topic": "T", "defaultTopic": "TBW102",
		"defaultTopicQueueNums": "4", "queueId": "-1", "sysFlag": "0", "bornTimestamp": "5", "flag": "0"}
	var h SendMessageRequestHeader
	if err := h.Decode(ext); err != nil {
		t.Fatal(err)
	}
	want := SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: -1, BornTimestamp: 5, MaxReconsumeTimes: -1}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	if _, ok := remoting.EncodeHeader(&h)["maxReconsumeTimes"]; ok {
		t.Error("an absent maxReconsumeTimes was encoded")
	}
}

func TestSendHeadersMissingField(t *testing.T) {
	base := goClientSend()
	v1 := remoting.EncodeHeader(&base)
	v2 := remoting.EncodeHeader((*SendMessageRequestHeaderV2)(&base))
	without := func(m map[string]string, k string) map[string]string {
		c := make(map[string]string, len(m))
		for kk, v := range m {
			if kk != k {
				c[kk] = v
			}
		}
		return c
	}
	with := func(m map[string]string, k, v string) map[string]string {
		c := without(m, k)
		c[k] = v
		return c
	}
	cases := []struct {
		name  string
		h     remoting.Header
		ext   map[string]string
		field string
	}{
		{"v1 no topic", &SendMessageRequestHeader{}, without(v1, "topic"), "topic"},
		{"v1 no group", &SendMessageRequestHeader{}, without(v1, "producerGroup"), "producerGroup"},
		{"v1 no queue", &SendMessageRequestHeader{}, without(v1, "queueId"), "queueId"},
		{"v1 bad born", &SendMessageRequestHeader{}, with(v1, "bornTimestamp", "x"), "bornTimestamp"},
		{"v1 bad max", &SendMessageRequestHeader{}, with(v1, "maxReconsumeTimes", "y"), "maxReconsumeTimes"},
		{"v1 queue overflow", &SendMessageRequestHeader{}, with(v1, "queueId", "2147483648"), "queueId"},
		{"v2 no topic", &SendMessageRequestHeaderV2{}, without(v2, "b"), "b"},
		{"v2 bad sysflag", &SendMessageRequestHeaderV2{}, with(v2, "f", "1.5"), "f"},
		{"v1 keys in v2", &SendMessageRequestHeaderV2{}, v1, "a"},
		{"response no msgId", &SendMessageResponseHeader{}, map[string]string{"queueId": "1", "queueOffset": "2"}, "msgId"},
		{"create no topic", &CreateTopicRequestHeader{}, map[string]string{"readQueueNums": "8",
			"writeQueueNums": "8", "perm": "6"}, "topic"},
		{"create bad perm", &CreateTopicRequestHeader{}, map[string]string{"topic": "T", "readQueueNums": "8",
			"writeQueueNums": "8", "perm": "rw"}, "perm"},
		{"delete no topic", &DeleteTopicRequestHeader{}, map[string]string{}, "topic"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.h.Decode(c.ext)
			var he *remoting.HeaderError
			if !errors.As(err, &he) {
				t.Fatalf("Decode error %v, want a *remoting.HeaderError", err)
			}
			if he.Field != c.field {
				t.Errorf("error names %q, want %q (%v)", he.Field, c.field, err)
			}
		})
	}
}

// TestSendResponseHeaderWire pins the response to docs/protocol.md Appendix A.
func TestSendResponseHeaderWire(t *testing.T) {
	h := SendMessageResponseHeader{MsgID: "7F00000100002A9F0000000000000064", QueueID: 2, QueueOffset: 15,
		MsgRegion: "DefaultRegion", TraceOn: true}
	want := map[string]string{"msgId": "7F00000100002A9F0000000000000064", "queueId": "2", "queueOffset": "15",
		"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
	if diff := cmp.Diff(want, remoting.EncodeHeader(&h)); diff != "" {
		t.Errorf("extFields (-want +got):\n%s", diff)
	}
	for v, on := range map[string]bool{"": false, "false": false, "true": true, "1": true} {
		var got SendMessageResponseHeader
		if err := got.Decode(map[string]string{"msgId": "x", "queueId": "0", "queueOffset": "0", "TRACE_ON": v}); err != nil {
			t.Fatal(err)
		}
		if got.TraceOn != on {
			t.Errorf("TRACE_ON %q read as %t, want %t", v, got.TraceOn, on)
		}
	}
}

// TestCreateTopicHeaderWire pins UPDATE_AND_CREATE_TOPIC to the Go admin defaults of
// docs/protocol.md §6.1.
func TestCreateTopicHeaderWire(t *testing.T) {
	h := CreateTopicRequestHeader{Topic: "T", DefaultTopic: "defaultTopic", ReadQueueNums: 8, WriteQueueNums: 8,
		Perm: 6, TopicFilterType: "SINGLE_TAG"}
	want := map[string]string{"topic": "T", "defaultTopic": "defaultTopic", "readQueueNums": "8",
		"writeQueueNums": "8", "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}
	if diff := cmp.Diff(want, remoting.EncodeHeader(&h)); diff != "" {
		t.Errorf("extFields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"topic": "T"}, remoting.EncodeHeader(&DeleteTopicRequestHeader{Topic: "T"})); diff != "" {
		t.Errorf("delete extFields (-want +got):\n%s", diff)
	}
}
