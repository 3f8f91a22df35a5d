package protocol

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/remoting"
)

// goClientHeartbeat is a heartbeat body as the official Go client writes it (docs/protocol.md §5.1).
const goClientHeartbeat = `{"clientID":"10.0.0.1@1234","producerDataSet":[{"groupName":"pg"}],"consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,"topic":"T","subString":"a || b","tagsSet":["a","b"],"codeSet":["97","98"],"subVersion":1700000000000000000,"expressionType":"TAG"},{"classFilterMode":false,"topic":"%RETRY%cg","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1700000000000000001,"expressionType":"TAG"}],"unitMode":false}]}`

func TestHeartbeatDecodeGoClient(t *testing.T) {
	h, err := DecodeHeartbeatData([]byte(goClientHeartbeat))
	if err != nil {
		t.Fatal(err)
	}
	want := &HeartbeatData{ClientID: "10.0.0.1@1234", ProducerDataSet: []ProducerData{{GroupName: "pg"}},
		ConsumerDataSet: []ConsumerData{{GroupName: "cg", ConsumeType: ConsumePassively, MessageModel: Clustering,
			ConsumeFromWhere: ConsumeFromLastOffset, SubscriptionDataSet: []SubscriptionData{
				{Topic: "T", SubString: "a || b", TagsSet: []string{"a", "b"}, CodeSet: TagCodes{97, 98},
					SubVersion: 1700000000000000000, ExpressionType: ExpressionTag},
				{Topic: "%RETRY%cg", SubString: "*", TagsSet: []string{}, CodeSet: TagCodes{},
					SubVersion: 1700000000000000001, ExpressionType: ExpressionTag}}}}}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
	// Our encoder writes the Go client's bytes.
	if got := string(h.Encode()); got != goClientHeartbeat {
		t.Errorf("encode:\n got %s\nwant %s", got, goClientHeartbeat)
	}
}

func TestHeartbeatDecodeJavaClient(t *testing.T) {
	// Java clients send codeSet as numbers, may omit expressionType, and add fields we ignore.
	body := `{"clientID":"1.2.3.4@9","consumerDataSet":[{"groupName":"g","consumeType":"CONSUME_ACTIVELY",` +
		`"messageModel":"BROADCASTING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","unitMode":false,` +
		`"subscriptionDataSet":[{"classFilterMode":false,"codeSet":[-1,2598919],"subString":"TagA","tagsSet":["TagA"],` +
		`"topic":"T","subVersion":1700000000000,"filterClassSource":null}]}],"producerDataSet":[]}`
	h, err := DecodeHeartbeatData([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	sub := h.ConsumerDataSet[0].SubscriptionDataSet[0]
	if diff := cmp.Diff(TagCodes{-1, 2598919}, sub.CodeSet); diff != "" {
		t.Errorf("codeSet (-want +got):\n%s", diff)
	}
	if !IsTagType(sub.ExpressionType) {
		t.Errorf("empty expression type %q is not TAG", sub.ExpressionType)
	}
}

func TestHeartbeatDecodeErrors(t *testing.T) {
	for name, body := range map[string]string{
		"not json":       `{`,
		"bad code":       `{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":["x"]}]}]}`,
		"code too large": `{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":[4294967296]}]}]}`,
		"code object":    `{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":[{}]}]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeHeartbeatData([]byte(body)); err == nil {
				t.Error("decoded")
			}
		})
	}
	var c TagCodes
	if err := json.Unmarshal([]byte(`null`), &c); err != nil || c != nil {
		t.Errorf("null codeSet: %v %v", c, err)
	}
}

func TestLockBodies(t *testing.T) {
	// docs/protocol.md §5.8.
	const req = `{"consumerGroup":"cg","clientId":"10.0.0.1@1234","mqSet":[{"topic":"T","brokerName":"broker-a","queueId":0}]}`
	var body LockBatchRequestBody
	if err := json.Unmarshal([]byte(req), &body); err != nil {
		t.Fatal(err)
	}
	want := LockBatchRequestBody{ConsumerGroup: "cg", ClientID: "10.0.0.1@1234",
		MQSet: []MessageQueue{{Topic: "T", BrokerName: "broker-a", QueueID: 0}}}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	out, _ := json.Marshal(body)
	if string(out) != req {
		t.Errorf("encode %s", out)
	}
	resp, _ := json.Marshal(LockBatchResponseBody{LockOKMQSet: body.MQSet})
	if got := `{"lockOKMQSet":[{"topic":"T","brokerName":"broker-a","queueId":0}]}`; string(resp) != got {
		t.Errorf("response %s", resp)
	}
}

func TestConsumerHeadersRoundTrip(t *testing.T) {
	cases := []struct {
		name    string
		in, out remoting.Header
	}{
		{"unregister", &UnregisterClientRequestHeader{ClientID: "c@1", ProducerGroup: "p", ConsumerGroup: "g"},
			&UnregisterClientRequestHeader{}},
		{"unregister consumer only", &UnregisterClientRequestHeader{ClientID: "c@1", ConsumerGroup: "g"},
			&UnregisterClientRequestHeader{}},
		{"group", &ConsumerGroupHeader{ConsumerGroup: "g"}, &ConsumerGroupHeader{}},
		{"pull", &PullMessageRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: 3, QueueOffset: 1 << 40,
			MaxMsgNums: 32, SysFlag: 3, CommitOffset: 7, SuspendTimeoutMillis: 20000, Subscription: "a || b",
			SubVersion: 1700000000000000000, ExpressionType: "TAG", BrokerName: "broker-a"}, &PullMessageRequestHeader{}},
		{"pull response", &PullMessageResponseHeader{SuggestWhichBrokerID: 1, NextBeginOffset: 16, MinOffset: 2,
			MaxOffset: 16}, &PullMessageResponseHeader{}},
		{"query offset", &QueryConsumerOffsetRequestHeader{ConsumerGroup: "g", Topic: "%RETRY%g", QueueID: 0,
			BrokerName: "b"}, &QueryConsumerOffsetRequestHeader{}},
		{"update offset", &UpdateConsumerOffsetRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: 1,
			CommitOffset: 42, BrokerName: "b"}, &UpdateConsumerOffsetRequestHeader{}},
		{"queue", &QueueHeader{Topic: "T", QueueID: 2, BrokerName: "b"}, &QueueHeader{}},
		{"search", &SearchOffsetRequestHeader{Topic: "T", QueueID: 2, Timestamp: 1700000000000},
			&SearchOffsetRequestHeader{}},
		{"offset", &OffsetResponseHeader{Offset: -1}, &OffsetResponseHeader{}},
		{"earliest", &EarliestMsgStoreTimeResponseHeader{Timestamp: 1700000000000}, &EarliestMsgStoreTimeResponseHeader{}},
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
