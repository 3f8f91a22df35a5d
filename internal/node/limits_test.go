package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// TestLimitOptionsReachTheBroker: the node's MaxQueueNums, MaxLongPollingSuspend and
// MaxHeldPulls are the broker's.
func TestLimitOptionsReachTheBroker(t *testing.T) {
	o := haOpts(t, storage.AsyncMaster)
	o.Limits.MaxQueueNums = 32
	o.Limits.MaxLongPollingSuspend = 300 * time.Millisecond
	o.Limits.MaxHeldPulls = 1
	n := startNode(t, o)
	create := func(queues int32) *remoting.Command {
		h := &protocol.CreateTopicRequestHeader{Topic: "Limits", DefaultTopic: "TBW102", ReadQueueNums: queues,
			WriteQueueNums: queues, Perm: route.PermReadWrite, TopicFilterType: route.FilterSingleTag}
		return invoke(t, n, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil))
	}
	if resp := create(33); resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "[1, 32]") {
		t.Fatalf("33 queues: %d %q, want SYSTEM_ERROR naming the cap 32", resp.Code, resp.Remark)
	}
	if resp := create(32); resp.Code != remoting.Success {
		t.Fatalf("32 queues: %d %q", resp.Code, resp.Remark)
	}

	// Two pulls asking 2^50 ms on one connection: one is held (and answered by the 300 ms
	// cap), the other finds the hold full.
	tr := remoting.NewClient(remoting.ClientOptions{})
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	codes := make(chan int32, 2)
	for q := range int32(2) {
		h := &protocol.PullMessageRequestHeader{ConsumerGroup: "g", Topic: "Limits", QueueID: q, MaxMsgNums: 32,
			SysFlag: protocol.PullFlagSuspend | protocol.PullFlagSubscription, SuspendTimeoutMillis: 1 << 50,
			Subscription: "*", ExpressionType: protocol.ExpressionTag}
		err := tr.InvokeAsync(ctx, n.BrokerAddr(), remoting.NewRequest(remoting.PullMessage, remoting.EncodeHeader(h), nil),
			func(resp *remoting.Command, err error) {
				if err != nil {
					resp = remoting.NewResponse(-1, err.Error())
				}
				codes <- resp.Code
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	got := map[int32]int{}
	for range 2 {
		select {
		case c := <-codes:
			got[c]++
		case <-time.After(10 * time.Second):
			t.Fatalf("pulls not answered by the suspend cap; answers so far %v", got)
		}
	}
	if got[remoting.PullNotFound] != 1 || got[remoting.SystemBusy] != 1 {
		t.Errorf("answers %v, want one PULL_NOT_FOUND and one SYSTEM_BUSY", got)
	}
}

// TestMaxMessageBytesReachesTheBroker: the node's MaxMessageBytes is the broker's maxMessageSize.
func TestMaxMessageBytesReachesTheBroker(t *testing.T) {
	o := haOpts(t, storage.AsyncMaster)
	o.Limits.MaxMessageBytes = 1024
	n := startNode(t, o)
	if resp := send(t, n, n.BrokerAddr(), "Sized", 0, strings.Repeat("x", 1024)); resp.Code != remoting.Success {
		t.Fatalf("1024-byte body: %d %q", resp.Code, resp.Remark)
	}
	if resp := send(t, n, n.BrokerAddr(), "Sized", 0, strings.Repeat("x", 1025)); resp.Code != remoting.MessageIllegal {
		t.Fatalf("1025-byte body: %d %q, want MESSAGE_ILLEGAL", resp.Code, resp.Remark)
	}
}

// TestTopicLimitsReachTheBroker: the node's AutoCreateTopicBurst and AutoCreateTopicRate bound
// what one connection's sends create, and its MaxTopics what the broker holds.
func TestTopicLimitsReachTheBroker(t *testing.T) {
	o := haOpts(t, storage.AsyncMaster)
	o.Limits.AutoCreateTopicBurst, o.Limits.AutoCreateTopicRate = 2, 1
	n := startNode(t, o)
	tr := n.NewTransport()
	defer tr.Close()
	sendOn := func(topic string) *remoting.Command {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := tr.InvokeSync(ctx, n.BrokerAddr(), sendReq(topic, 0, "x"))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, topic := range []string{"Burst1", "Burst2"} {
		if resp := sendOn(topic); resp.Code != remoting.Success {
			t.Fatalf("%s: %d %q", topic, resp.Code, resp.Remark)
		}
	}
	if resp := sendOn("Burst3"); resp.Code != remoting.SystemBusy || !strings.Contains(resp.Remark, "AutoCreateTopicBurst 2") {
		t.Errorf("third new topic at once: %d %q, want SYSTEM_BUSY naming AutoCreateTopicBurst 2", resp.Code, resp.Remark)
	}
	if resp := sendOn("Burst1"); resp.Code != remoting.Success {
		t.Errorf("a send to a topic the connection created: %d %q", resp.Code, resp.Remark)
	}

	o = haOpts(t, storage.AsyncMaster)
	o.Limits.MaxTopics = 1 // fewer than the system topics: nothing more may be created
	n = startNode(t, o)
	if resp := send(t, n, n.BrokerAddr(), "OverCap", 0, "x"); resp.Code != remoting.TopicNotExist ||
		!strings.Contains(resp.Remark, "MaxTopics") {
		t.Errorf("a new topic past MaxTopics: %d %q, want TOPIC_NOT_EXIST naming MaxTopics", resp.Code, resp.Remark)
	}
}
