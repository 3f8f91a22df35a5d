package protocol

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/remoting"
)

func TestRetryQueryAdminHeadersRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		in   remoting.Header
		out  remoting.Header
	}{
		{"send back", &ConsumerSendMsgBackRequestHeader{Offset: 1234, Group: "cg", DelayLevel: -1,
			OriginMsgID: "C0A80001000000000000000000000001", OriginTopic: "T", UnitMode: true,
			MaxReconsumeTimes: 16, BrokerName: "broker-a"}, &ConsumerSendMsgBackRequestHeader{}},
		{"send back minimal", &ConsumerSendMsgBackRequestHeader{Group: "cg"}, &ConsumerSendMsgBackRequestHeader{}},
		{"query message", &QueryMessageRequestHeader{Topic: "T", Key: "k1", MaxNum: 32, BeginTimestamp: 1,
			EndTimestamp: 1 << 42, UniqueKeyQuery: true}, &QueryMessageRequestHeader{}},
		{"query message response", &QueryMessageResponseHeader{IndexLastUpdateTimestamp: 5,
			IndexLastUpdatePhyoffset: 6}, &QueryMessageResponseHeader{}},
		{"view message", &ViewMessageRequestHeader{Offset: 99}, &ViewMessageRequestHeader{}},
		{"topic stats", &GetTopicStatsInfoRequestHeader{Topic: "T"}, &GetTopicStatsInfoRequestHeader{}},
		{"consume stats", &GetConsumeStatsRequestHeader{ConsumerGroup: "cg", Topic: "T"},
			&GetConsumeStatsRequestHeader{}},
		{"consume stats all topics", &GetConsumeStatsRequestHeader{ConsumerGroup: "cg"},
			&GetConsumeStatsRequestHeader{}},
		{"delete group", &DeleteSubscriptionGroupRequestHeader{GroupName: "cg", RemoveOffset: true},
			&DeleteSubscriptionGroupRequestHeader{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ext := remoting.EncodeHeader(c.in)
			if err := c.out.Decode(ext); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(c.in, c.out); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// The Go client's send-back header (docs/protocol.md §5.7) decodes.
func TestSendBackHeaderFromGoClient(t *testing.T) {
	ext := map[string]string{"group": "cg", "offset": "4096", "delayLevel": "0",
		"originMsgId": "AC11000100002A9F0000000000001000", "originTopic": "TopicTest", "unitMode": "false",
		"maxReconsumeTimes": "16", "bname": "broker-a"}
	var h ConsumerSendMsgBackRequestHeader
	if err := h.Decode(ext); err != nil {
		t.Fatal(err)
	}
	want := ConsumerSendMsgBackRequestHeader{Offset: 4096, Group: "cg", OriginMsgID: "AC11000100002A9F0000000000001000",
		OriginTopic: "TopicTest", MaxReconsumeTimes: 16, BrokerName: "broker-a"}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	delete(ext, "offset")
	err := h.Decode(ext)
	var he *remoting.HeaderError
	if !errors.As(err, &he) || he.Field != "offset" {
		t.Fatalf("missing offset: %v", err)
	}
}

func TestTopicStatsTableWire(t *testing.T) {
	tab := &TopicStatsTable{OffsetTable: map[MessageQueue]TopicOffset{
		{Topic: "T", BrokerName: "b", QueueID: 1}: {MinOffset: 0, MaxOffset: 7, LastUpdateTimestamp: 1700000000000},
		{Topic: "T", BrokerName: "b", QueueID: 0}: {MinOffset: 2, MaxOffset: 3},
	}}
	got := string(tab.Encode())
	want := `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":3,"minOffset":2},` +
		`{"brokerName":"b","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":1700000000000,"maxOffset":7,"minOffset":0}}}`
	if got != want {
		t.Fatalf("encoded\n got %s\nwant %s", got, want)
	}
	back, err := DecodeTopicStatsTable([]byte(got))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tab, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	empty, err := DecodeTopicStatsTable((&TopicStatsTable{}).Encode())
	if err != nil || len(empty.OffsetTable) != 0 {
		t.Fatalf("empty table: %v %v", empty, err)
	}
}

func TestConsumeStatsWire(t *testing.T) {
	s := &ConsumeStats{ConsumeTps: 1.5, OffsetTable: map[MessageQueue]OffsetWrapper{
		{Topic: "%RETRY%cg", BrokerName: "b", QueueID: 0}: {BrokerOffset: 5, ConsumerOffset: 4, LastTimestamp: 9},
		{Topic: "T\"x{", BrokerName: "b", QueueID: 3}:     {BrokerOffset: 1},
	}}
	b := s.Encode()
	back, err := DecodeConsumeStats(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	zero := (&ConsumeStats{}).Encode()
	if want := `{"consumeTps":0.0,"offsetTable":{}}`; string(zero) != want {
		t.Errorf("empty stats %s, want %s", zero, want)
	}
	// The strict pair form and whitespace are accepted too.
	strict := `{ "consumeTps" : 2, "offsetTable" : [[{"topic":"T","brokerName":"b","queueId":1},{"brokerOffset":3}]] }`
	got, err := DecodeConsumeStats([]byte(strict))
	if err != nil {
		t.Fatal(err)
	}
	want := &ConsumeStats{ConsumeTps: 2, OffsetTable: map[MessageQueue]OffsetWrapper{
		{Topic: "T", BrokerName: "b", QueueID: 1}: {BrokerOffset: 3}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("strict form (-want +got):\n%s", diff)
	}
}

func TestAdminBodiesRejectGarbage(t *testing.T) {
	for _, in := range []string{"", "{", "[]", `{"offsetTable":{{"topic":"T"}}}`, `{"offsetTable":{{"topic":"T"}:}}`,
		`{"offsetTable":{"x":1}}`, `{"offsetTable":{}} x`, `{"offsetTable":{{"topic":"T"}:{"maxOffset":"x","brokerOffset":"x"}}}`,
		`{"offsetTable":{{"topic":"T}:1}}`, `{"offsetTable":[[1]]}`} {
		if _, err := DecodeTopicStatsTable([]byte(in)); !errors.Is(err, ErrMalformedBody) {
			t.Errorf("DecodeTopicStatsTable(%q) = %v, want ErrMalformedBody", in, err)
		}
		if _, err := DecodeConsumeStats([]byte(in)); !errors.Is(err, ErrMalformedBody) {
			t.Errorf("DecodeConsumeStats(%q) = %v, want ErrMalformedBody", in, err)
		}
	}
}

func FuzzDecodeAdminBodies(f *testing.F) {
	f.Add([]byte(`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"maxOffset":3}}}`))
	f.Add([]byte(`{"consumeTps":0.0,"offsetTable":[[{"topic":"T"},{}]]}`))
	f.Add([]byte(`{"a":[{"b":"}"}],"offsetTable":{}}`))
	f.Add([]byte(`{"offsetTable":{1:0,"a":{2:3}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if q := quoteBareKeys(b); json.Valid(b) && string(q) != string(b) {
			t.Fatalf("valid JSON changed: %s -> %s", b, q)
		}
		if s, err := DecodeConsumeStats(b); err == nil {
			if _, err := DecodeConsumeStats(s.Encode()); err != nil {
				t.Fatalf("re-decode: %v", err)
			}
		}
		if s, err := DecodeTopicStatsTable(b); err == nil {
			if _, err := DecodeTopicStatsTable(s.Encode()); err != nil {
				t.Fatalf("re-decode: %v", err)
			}
		}
	})
}

func TestOffsetWrappersRoundTrip(t *testing.T) {
	c := ConsumerOffsetSerializeWrapper{OffsetTable: map[string]map[int32]int64{"T@g": {0: 12, 3: 4}}}
	b, _ := json.Marshal(c)
	if want := `{"offsetTable":{"T@g":{"0":12,"3":4}}}`; string(b) != want {
		t.Errorf("consumer offsets %s, want %s", b, want)
	}
	var c2 ConsumerOffsetSerializeWrapper
	if err := json.Unmarshal(b, &c2); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, c2); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	d := DelayOffsetSerializeWrapper{OffsetTable: map[int32]int64{1: 0, 3: 17}}
	b, _ = json.Marshal(d)
	var d2 DelayOffsetSerializeWrapper
	if err := json.Unmarshal(b, &d2); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, d2); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Java brokers (fastjson) write integer map keys bare; a Go slave syncing from one, or a broker
// opening a Java store directory, reads them.
func TestOffsetWrappersReadFastjson(t *testing.T) {
	in := `{"offsetTable":{"%RETRY%g@g":{0:0},"T@g":{0:250, 1 :251,"2":252}}}`
	c, err := DecodeConsumerOffsetSerializeWrapper([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int32]int64{"%RETRY%g@g": {0: 0}, "T@g": {0: 250, 1: 251, 2: 252}}
	if diff := cmp.Diff(want, c.OffsetTable); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	d, err := DecodeDelayOffsetSerializeWrapper([]byte(`{"offsetTable":{1:0,2:5,18:-1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[int32]int64{1: 0, 2: 5, 18: -1}, d.OffsetTable); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Numbers that are values, or inside strings, stay as they are.
	for _, s := range []string{`{"a":[1,2],"b":{"c":"{1:2}"}}`, `[{"x":1},2]`, `{"k":-3}`} {
		if got := string(quoteBareKeys([]byte(s))); got != s {
			t.Errorf("quoteBareKeys(%s) = %s", s, got)
		}
	}
	if got := string(quoteBareKeys([]byte(`{1:{2:[{3:4}]}}`))); got != `{"1":{"2":[{"3":4}]}}` {
		t.Errorf("nested: %s", got)
	}
	if _, err := DecodeDelayOffsetSerializeWrapper([]byte(`{"offsetTable":{1:}}`)); !errors.Is(err, ErrMalformedBody) {
		t.Errorf("garbage: %v", err)
	}
}
