package admin

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

func TestAdminSubscriptionGroups(t *testing.T) {
	tb := start(t, nil, nil)
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			group := "ag_" + name
			resp := adminCall(t, tr, tb, remoting.UpdateAndCreateSubscription, nil,
				[]byte(`{"groupName":"`+group+`","retryMaxTimes":3,"consumeBroadcastEnable":false,"unknownField":1}`))
			wantOK(t, resp)
			resp = adminCall(t, tr, tb, remoting.GetAllSubscriptionGroupConfig, nil, nil)
			wantOK(t, resp)
			var w broker.SubscriptionGroupWrapper
			if err := json.Unmarshal(resp.Body, &w); err != nil {
				t.Fatal(err)
			}
			want := broker.NewSubscriptionGroupConfig(group)
			want.RetryMaxTimes, want.ConsumeBroadcastEnable = 3, false
			if diff := cmp.Diff(want, w.SubscriptionGroupTable[group]); diff != "" {
				t.Errorf("group (-want +got):\n%s", diff)
			}
			if w.DataVersion.Counter == 0 {
				t.Error("data version not set")
			}
			if diff := cmp.Diff(tb.Groups().All(), w); diff != "" {
				t.Errorf("wrapper round trip (-want +got):\n%s", diff)
			}
			wantOK(t, adminCall(t, tr, tb, remoting.DeleteSubscriptionGroup,
				&protocol.DeleteSubscriptionGroupRequestHeader{GroupName: group}, nil))
			if _, ok := tb.Groups().All().SubscriptionGroupTable[group]; ok {
				t.Error("group not deleted")
			}
			if resp = adminCall(t, tr, tb, remoting.UpdateAndCreateSubscription, nil, []byte(`{`)); resp.Code != remoting.SystemError {
				t.Errorf("bad body: %d", resp.Code)
			}
		})
	}
}

func TestAdminOffsetsForSlaveSync(t *testing.T) {
	tb := start(t, nil, delays{1: 0, 2: 9, 3: 0, 4: 0, 5: 0})
	tb.Offsets().Commit("g", "T", 0, 12)
	tb.Offsets().Commit("g", "T", 3, 4)
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			resp := adminCall(t, tr, tb, remoting.GetAllConsumerOffset, nil, nil)
			wantOK(t, resp)
			var co protocol.ConsumerOffsetSerializeWrapper
			if err := json.Unmarshal(resp.Body, &co); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]map[int32]int64{"T@g": {0: 12, 3: 4}}, co.OffsetTable); diff != "" {
				t.Errorf("consumer offsets (-want +got):\n%s", diff)
			}
			resp = adminCall(t, tr, tb, remoting.GetAllDelayOffset, nil, nil)
			wantOK(t, resp)
			var do protocol.DelayOffsetSerializeWrapper
			if err := json.Unmarshal(resp.Body, &do); err != nil {
				t.Fatal(err)
			}
			want := map[int32]int64{1: 0, 2: 9, 3: 0, 4: 0, 5: 0}
			if diff := cmp.Diff(want, do.OffsetTable); diff != "" {
				t.Errorf("delay offsets (-want +got):\n%s", diff)
			}
		})
	}
	// Without a schedule service there are no cursors to report, and the answer says so.
	bare := start(t, nil, nil)
	resp := adminCall(t, bare.TCP, bare, remoting.GetAllDelayOffset, nil, nil)
	wantOK(t, resp)
	if string(resp.Body) != `{"offsetTable":{}}` {
		t.Errorf("delay offsets without a schedule: %s", resp.Body)
	}
}

func TestAdminTopicAndConsumeStats(t *testing.T) {
	tb := start(t, nil, nil)
	addTopic(t, tb, "S", 2)
	var last int64
	for i := range 3 {
		last = put(t, tb, "S", 1, "m"+strconv.Itoa(i)).StoreTimestamp
	}
	brokertest.Eventually(t, "dispatch", func() bool { return tb.Store().MaxOffsetInQueue("S", 1) == 3 })
	tb.Offsets().Commit("cg", "S", 1, 2)
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			resp := adminCall(t, tr, tb, remoting.GetTopicStatsInfo, &protocol.GetTopicStatsInfoRequestHeader{Topic: "S"}, nil)
			wantOK(t, resp)
			ts, err := protocol.DecodeTopicStatsTable(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			want := map[protocol.MessageQueue]protocol.TopicOffset{
				{Topic: "S", BrokerName: "broker-a", QueueID: 0}: {},
				{Topic: "S", BrokerName: "broker-a", QueueID: 1}: {MaxOffset: 3, LastUpdateTimestamp: last},
			}
			if diff := cmp.Diff(want, ts.OffsetTable); diff != "" {
				t.Errorf("topic stats (-want +got):\n%s", diff)
			}
			resp = adminCall(t, tr, tb, remoting.GetTopicStatsInfo, &protocol.GetTopicStatsInfoRequestHeader{Topic: "nope"}, nil)
			if resp.Code != remoting.TopicNotExist {
				t.Errorf("unknown topic: %d", resp.Code)
			}

			for _, topic := range []string{"S", ""} {
				resp = adminCall(t, tr, tb, remoting.GetConsumeStats,
					&protocol.GetConsumeStatsRequestHeader{ConsumerGroup: "cg", Topic: topic}, nil)
				wantOK(t, resp)
				cs, err := protocol.DecodeConsumeStats(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				second, _ := tb.Store().GetMessageStoreTimestamp("S", 1, 1)
				want := map[protocol.MessageQueue]protocol.OffsetWrapper{
					{Topic: "S", BrokerName: "broker-a", QueueID: 0}: {},
					{Topic: "S", BrokerName: "broker-a", QueueID: 1}: {BrokerOffset: 3, ConsumerOffset: 2, LastTimestamp: second},
				}
				if diff := cmp.Diff(want, cs.OffsetTable); diff != "" {
					t.Errorf("consume stats of %q (-want +got):\n%s", topic, diff)
				}
			}
		})
	}
}

func TestAdminRuntimeInfo(t *testing.T) {
	tb := start(t, nil, delays{1: 0, 2: 0, 3: 0, 4: 0, 5: 0})
	put(t, tb, "T", 0, "x")
	tb.Messages().CountPut("T", 1, 100)
	tb.stats.CountGet("T", "G", 2, 200)
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			resp := adminCall(t, tr, tb, remoting.GetBrokerRuntimeInfo, nil, nil)
			wantOK(t, resp)
			kv, err := route.DecodeKVTable(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			for k, want := range map[string]string{"msgPutTotalTodayNow": "1", "msgGetTotalTodayNow": "2",
				"msgPutTotalTodayMorning": "0", "commitLogMinOffset": "0",
				"commitLogMaxOffset":      strconv.FormatInt(tb.Store().MaxPhyOffset(), 10),
				"scheduleMessageOffset_5": "0,0", "brokerVersionDesc": "V4_9_3", "sendThreadPoolQueueSize": "0",
				"sendThreadPoolQueueHeadWaitTimeMills": "0", "pullThreadPoolQueueSize": "0",
				"pullThreadPoolQueueHeadWaitTimeMills": "0", "pageCacheLockTimeMills": "0"} {
				if kv.Table[k] != want {
					t.Errorf("%s = %q, want %q", k, kv.Table[k], want)
				}
			}
			for _, k := range []string{"brokerVersion", "brokerVersionDesc", "runtime", "bootTimestamp",
				"earliestMessageTimeStamp", "dispatchBehindBytes"} {
				if kv.Table[k] == "" {
					t.Errorf("%s missing: %v", k, kv.Table)
				}
			}
		})
	}
}
