package ha_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/ha"
	"github.com/mqgo/mq/internal/broker/services"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// A slave takes its master's topic attributes (RocketMQ 5's message.type) with the topics, its
// FIFO groups and its message request modes; what no request could have set is left out.
func TestSlaveSyncTopicAttributes(t *testing.T) {
	master := fakeMaster(t, map[int32]string{
		remoting.GetAllTopicConfig: `{"topicConfigTable":{
			"Fifo":{"topicName":"Fifo","readQueueNums":2,"writeQueueNums":2,"perm":6,"attributes":{"message.type":"FIFO"}},
			"Odd":{"topicName":"Odd","readQueueNums":1,"writeQueueNums":1,"perm":6,"attributes":{"message.type":"ODD","color":"red"}}},
			"dataVersion":{"timestamp":5,"counter":9}}`,
		remoting.GetAllSubscriptionGroupConfig: `{"subscriptionGroupTable":{
			"fifo":{"groupName":"fifo","consumeEnable":true,"consumeMessageOrderly":true,"retryQueueNums":1,"retryMaxTimes":16}},
			"dataVersion":{"timestamp":5,"counter":4}}`,
		remoting.GetAllConsumerOffset: `{"offsetTable":{}}`,
		remoting.GetAllDelayOffset:    `{"offsetTable":{}}`,
		remoting.GetAllMessageRequestMode: `{"messageRequestModeMap":{"Fifo":{
			"fifo":{"topic":"Fifo","consumerGroup":"fifo","mode":"POP","popShareQueueNum":1},
			"../x":{"topic":"Fifo","consumerGroup":"../x","mode":"POP"},
			"odd":{"topic":"Fifo","consumerGroup":"odd","mode":"PUSH"}}}}`,
	})
	slave := brokertest.Start(t, brokertest.Config{Mutate: func(o *broker.Options) {
		o.Broker.ID = 1
		o.Transport = master
	}, Attach: func(b *broker.Broker) error { return services.Attach(b, services.Deps{}) }})
	if err := ha.Of(slave.Broker).SyncFromMaster(context.Background(), fakeMasterAddr); err != nil {
		t.Fatalf("sync: %v", err)
	}
	var topics route.TopicConfigSerializeWrapper
	getJSON(t, slave, remoting.GetAllTopicConfig, &topics)
	if diff := cmp.Diff(map[string]string{"message.type": "FIFO"}, topics.TopicConfigTable["Fifo"].Attributes); diff != "" {
		t.Errorf("Fifo on the slave (-want +got):\n%s", diff)
	}
	if odd, ok := topics.TopicConfigTable["Odd"]; !ok || odd.Attributes != nil {
		t.Errorf("Odd on the slave: %+v %v", odd, ok)
	}
	var groups broker.SubscriptionGroupWrapper
	getJSON(t, slave, remoting.GetAllSubscriptionGroupConfig, &groups)
	if !groups.SubscriptionGroupTable["fifo"].ConsumeMessageOrderly {
		t.Errorf("fifo group on the slave: %+v", groups.SubscriptionGroupTable["fifo"])
	}
	var modes protocol.MessageRequestModeSerializeWrapper
	getJSON(t, slave, remoting.GetAllMessageRequestMode, &modes)
	want := map[string]map[string]protocol.SetMessageRequestModeRequestBody{"Fifo": {
		"fifo": {Topic: "Fifo", ConsumerGroup: "fifo", Mode: "POP", PopShareQueueNum: 1}}}
	if diff := cmp.Diff(want, modes.MessageRequestModeMap); diff != "" {
		t.Errorf("request modes on the slave (-want +got):\n%s", diff)
	}
}
