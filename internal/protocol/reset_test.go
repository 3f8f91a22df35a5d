package protocol

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResetOffsetBodies(t *testing.T) {
	table := map[MessageQueue]int64{
		{Topic: "T", BrokerName: "b", QueueID: 1}: 7,
		{Topic: "T", BrokerName: "b", QueueID: 0}: 3,
	}
	body := EncodeResetOffsetBody(table)
	if want := `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:3,{"brokerName":"b","queueId":1,"topic":"T"}:7}}`; string(body) != want {
		t.Errorf("ResetOffsetBody\n got %s\nwant %s", body, want)
	}
	if got, err := DecodeOffsetSerializeWrapper(body); err != nil || !cmp.Equal(got, table) {
		t.Errorf("decoded %v, %v", got, err)
	}
	if got, want := string(EncodeResetOffsetBodyForC(table)),
		`{"offsetTable":[{"brokerName":"b","offset":3,"queueId":0,"topic":"T"},{"brokerName":"b","offset":7,"queueId":1,"topic":"T"}]}`; got != want {
		t.Errorf("ResetOffsetBodyForC\n got %s\nwant %s", got, want)
	}
}

func TestConsumerStatusBody(t *testing.T) {
	mq := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 2}
	s := &ConsumerStatusBody{MessageQueueTable: map[MessageQueue]int64{mq: 4},
		ConsumerTable: map[string]map[MessageQueue]int64{"c@1": {mq: 5}, "c@2": {}}}
	got, err := DecodeConsumerStatusBody(EncodeConsumerStatusBody(s))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// Java's fastjson, pretty-printed.
	java := "{\n\t\"consumerTable\":{},\n\t\"messageQueueTable\":{{\n\t\t\"brokerName\":\"b\",\n\t\t\"queueId\":2,\n\t\t\"topic\":\"T\"\n\t}:9}\n}"
	if got, err := DecodeConsumerStatusBody([]byte(java)); err != nil || got.MessageQueueTable[mq] != 9 {
		t.Errorf("Java body: %v, %v", got, err)
	}
	if _, err := DecodeConsumerStatusBody([]byte(`{"messageQueueTable":{{"topic":"T"}:x}}`)); !errors.Is(err, ErrMalformedBody) {
		t.Errorf("bad offset: %v", err)
	}
}

func TestConsumerRunningInfo(t *testing.T) {
	mq := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}
	info := &ConsumerRunningInfo{
		Properties:      map[string]string{PropConsumeType: ConsumePassively},
		SubscriptionSet: []SubscriptionData{{Topic: "T", SubString: "*", TagsSet: []string{}, CodeSet: TagCodes{}, ExpressionType: "TAG"}},
		MQTable:         map[MessageQueue]ProcessQueueInfo{mq: {CommitOffset: 5, CachedMsgCount: 2, Locked: true}},
		StatusTable:     map[string]ConsumeStatus{"T": {ConsumeOKTPS: 1.5}},
	}
	body, err := EncodeConsumerRunningInfo(info)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeConsumerRunningInfo(body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(info, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// Java writes some properties as numbers or booleans.
	got, err = DecodeConsumerRunningInfo([]byte(`{"properties":{"PROP_CONSUMER_START_TIMESTAMP":1700000000000,"x":true},"mqTable":{}}`))
	if err != nil || got.Properties[PropConsumerStartTimestamp] != "1700000000000" || got.Properties["x"] != "true" {
		t.Errorf("Java properties: %v, %v", got, err)
	}
	empty, err := EncodeConsumerRunningInfo(&ConsumerRunningInfo{})
	if want := `{"jstack":"","mqTable":{},"properties":{},"statusTable":{},"subscriptionSet":[]}`; err != nil || string(empty) != want {
		t.Errorf("empty info %s, %v", empty, err)
	}
}
