package admin

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// TestTopicStatsOfCappedTopic: GET_TOPIC_STATS_INFO visits every queue of a topic at the
// largest count MaxQueueNums allows.
func TestTopicStatsOfCappedTopic(t *testing.T) {
	tb := start(t, nil, nil)
	addTopic(t, tb, "Wide", 1024)
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			resp := adminCall(t, tr, tb, remoting.GetTopicStatsInfo, &protocol.GetTopicStatsInfoRequestHeader{Topic: "Wide"}, nil)
			wantOK(t, resp)
			ts, err := protocol.DecodeTopicStatsTable(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if len(ts.OffsetTable) != 1024 {
				t.Errorf("GET_TOPIC_STATS_INFO on 1024 queues: %d entries", len(ts.OffsetTable))
			}
		})
	}
}

func TestSubscriptionGroupRetryQueueNumsCapped(t *testing.T) {
	tb := start(t, nil, nil)
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			group := "rq_" + name
			update := func(retryQueueNums string) *remoting.Command {
				return adminCall(t, tr, tb, remoting.UpdateAndCreateSubscription, nil,
					[]byte(`{"groupName":"`+group+`","retryQueueNums":`+retryQueueNums+`}`))
			}
			for _, n := range []string{"1025", "2147483647", "-1"} {
				resp := update(n)
				if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "retryQueueNums "+n+" is out of range [0, 1024]") {
					t.Errorf("retryQueueNums %s: %d %q", n, resp.Code, resp.Remark)
				}
				if _, ok := tb.Groups().All().SubscriptionGroupTable[group]; ok {
					t.Fatalf("retryQueueNums %s: group created", n)
				}
			}
			for _, n := range []int32{1024, 0} {
				wantOK(t, update(strconv.Itoa(int(n))))
				if gc, _ := tb.Groups().All().SubscriptionGroupTable[group]; gc.RetryQueueNums != n {
					t.Errorf("stored retryQueueNums %d, want %d", gc.RetryQueueNums, n)
				}
			}
		})
	}
}

// CONSUME_MESSAGE_DIRECTLY reads the message and asks the broker's ReadCheck about the
// message's own topic: a refused request never reaches the consumer.
func TestConsumeDirectlyChecksTheMessagesTopic(t *testing.T) {
	tb := start(t, func(o *broker.Options) {
		o.ReadCheck = func(_ remoting.Channel, _ *remoting.Command, topic string) *remoting.Command {
			if topic != "Mine" {
				return remoting.NewResponse(remoting.NoPermission, "no SUB permission on topic "+topic)
			}
			return nil
		}
	}, nil)
	addTopic(t, tb, "Mine", 1)
	addTopic(t, tb, "Theirs", 1)
	mine, theirs := put(t, tb, "Mine", 0, "mine"), put(t, tb, "Theirs", 0, "theirs")
	consumer := wiretest.NewTCPClient(t)
	var relayed atomic.Int32
	consumer.RegisterProcessor(remoting.ConsumeMessageDirectly, remoting.ProcessorFunc(
		func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			relayed.Add(1)
			if req.ExtFields["brokerName"] != config.DefaultBrokerName {
				return remoting.NewResponse(remoting.SystemError, "no brokerName in "+fmt.Sprint(req.ExtFields)), nil
			}
			resp := remoting.NewResponse(remoting.Success, "")
			resp.Body = []byte(fmt.Sprintf("relayed %d bytes holding %q: %t", len(req.Body), "mine", bytes.Contains(req.Body, []byte("mine"))))
			return resp, nil
		}))
	wiretest.Heartbeat(t, consumer, tb.Addr, "C@1", "shipping", wiretest.Sub("Mine", "*"))
	direct := func(group, msgID string) *remoting.Command {
		h := protocol.ConsumeMessageDirectlyRequestHeader{ConsumerGroup: group, ClientID: "C@1", MsgID: msgID}
		return brokertest.Invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.ConsumeMessageDirectly, remoting.EncodeHeader(&h), nil))
	}
	if resp := direct("shipping", theirs.MsgID()); resp.Code != remoting.NoPermission || !strings.Contains(resp.Remark, "Theirs") {
		t.Errorf("another topic: %d %q", resp.Code, resp.Remark)
	}
	if n := relayed.Load(); n != 0 {
		t.Fatalf("%d refused requests reached the consumer", n)
	}
	if resp := direct("shipping", mine.MsgID()); resp.Code != remoting.Success || !strings.HasSuffix(string(resp.Body), "true") {
		t.Errorf("own topic: code %d %q %q", resp.Code, resp.Remark, resp.Body)
	}
	if resp := direct("billing", mine.MsgID()); resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "not online") {
		t.Errorf("a group the client is not in: %d %q", resp.Code, resp.Remark)
	}
	if resp := direct("shipping", "not-an-id"); resp.Code != remoting.SystemError || !strings.HasPrefix(resp.Remark, "msgId: ") {
		t.Errorf("bad msgId: %d %q", resp.Code, resp.Remark)
	}
}

// TestAdminNamesGuarded: every name a header of the admin codes carries is checked before the
// processor runs (the Handlers' Names), with the remark naming the field; the longest valid
// name passes.
func TestAdminNamesGuarded(t *testing.T) {
	tb := start(t, nil, nil)
	rows := []struct {
		code     int32
		key      string
		optional bool
		h        remoting.Header
	}{
		{remoting.GetTopicStatsInfo, "topic", false, &protocol.GetTopicStatsInfoRequestHeader{Topic: "T"}},
		{remoting.GetConsumeStats, "consumerGroup", false, &protocol.GetConsumeStatsRequestHeader{ConsumerGroup: "cg"}},
		{remoting.GetConsumeStats, "topic", true, &protocol.GetConsumeStatsRequestHeader{ConsumerGroup: "cg"}},
		{remoting.DeleteSubscriptionGroup, "groupName", false, &protocol.DeleteSubscriptionGroupRequestHeader{GroupName: "gone"}},
		{remoting.GetConsumerConnectionList, "consumerGroup", false, &protocol.ConsumerGroupHeader{ConsumerGroup: "cg"}},
		{remoting.InvokeBrokerToResetOffset, "group", false, &protocol.ResetOffsetRequestHeader{Topic: "T", Group: "cg", Timestamp: -1}},
		{remoting.InvokeBrokerToResetOffset, "topic", false, &protocol.ResetOffsetRequestHeader{Topic: "T", Group: "cg", Timestamp: -1}},
		{remoting.InvokeBrokerToGetConsumerStats, "group", false, &protocol.GetConsumerStatusRequestHeader{Topic: "T", Group: "cg"}},
		{remoting.GetConsumerRunningInfo, "consumerGroup", false, &protocol.GetConsumerRunningInfoRequestHeader{ConsumerGroup: "cg", ClientID: "c"}},
		{remoting.ConsumeMessageDirectly, "consumerGroup", false, &protocol.ConsumeMessageDirectlyRequestHeader{ConsumerGroup: "cg", ClientID: "c", MsgID: "x"}},
	}
	for _, r := range rows {
		limit := 127
		if r.key != "topic" {
			limit = 255
		}
		bad := map[string]string{"slash": "a/b", "traversal": "../../x", "too long": strings.Repeat("n", limit+1)}
		for _, name := range slices.Sorted(maps.Keys(bad)) {
			t.Run(fmt.Sprintf("%d/%s/%s", r.code, r.key, name), func(t *testing.T) {
				ext := remoting.EncodeHeader(r.h)
				ext[r.key] = bad[name]
				resp := brokertest.Invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(r.code, ext, nil))
				if resp.Code != remoting.SystemError || !strings.HasPrefix(resp.Remark, r.key+": ") {
					t.Fatalf("%d %q, want SYSTEM_ERROR naming %s", resp.Code, resp.Remark, r.key)
				}
			})
		}
		t.Run(fmt.Sprintf("%d/%s/longest valid", r.code, r.key), func(t *testing.T) {
			ext := remoting.EncodeHeader(r.h)
			ext[r.key] = strings.Repeat("n", limit)
			resp := brokertest.Invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(r.code, ext, nil))
			if strings.HasPrefix(resp.Remark, r.key+": ") {
				t.Fatalf("valid name refused: %d %q", resp.Code, resp.Remark)
			}
		})
	}
	// The group in UPDATE_AND_CREATE_SUBSCRIPTIONGROUP's body.
	resp := adminCall(t, tb.TCP, tb, remoting.UpdateAndCreateSubscription, nil, []byte(`{"groupName":"../x"}`))
	if resp.Code != remoting.SystemError || !strings.HasPrefix(resp.Remark, "groupName: ") {
		t.Errorf("body group: %d %q", resp.Code, resp.Remark)
	}
}

func TestFormatRuntimeFigures(t *testing.T) {
	if got := formatTPS([3]float64{10, 77.5, 77.5}); got != "10.00 77.50 77.50" {
		t.Errorf("formatted %q", got)
	}
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		5 << 30: "5.0 GiB", 1 << 60: "1.0 EiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
