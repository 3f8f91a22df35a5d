package mq

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/rebalance"
	"github.com/mqgo/mq/remoting"
)

// QUERY_ASSIGNMENT assigns the queues the name servers route, on every broker of the cluster,
// whichever broker is asked, to the members registered on it (RocketMQ 5's
// TopicRouteInfoManager); over TCP, against a name server and two brokers in their own nodes.
func TestQueryAssignmentAcrossBrokers(t *testing.T) {
	ns := startConsNode(t, Options{DisableBroker: true})
	a := startConsNode(t, Options{DisableNameServer: true, NameServers: []string{ns.Addr()}, Broker: config.Broker{Name: "broker-a"}})
	b := startConsNode(t, Options{DisableNameServer: true, NameServers: []string{ns.Addr()}, Broker: config.Broker{Name: "broker-b"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	invoke := func(c *remoting.Client, addr string, req *remoting.Command) *remoting.Command {
		t.Helper()
		resp, err := c.InvokeSync(ctx, addr, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	admin := wiretest.NewTCPClient(t)
	for _, n := range []*Node{a, b} {
		h := &protocol.CreateTopicRequestHeader{Topic: "AT", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}
		if resp := invoke(admin, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil)); resp.Code != remoting.Success {
			t.Fatalf("create on %s: %d %q", n.BrokerAddr(), resp.Code, resp.Remark)
		}
	}
	for _, id := range []string{"c1", "c2"} {
		c := wiretest.NewTCPClient(t)
		if resp := invoke(c, a.BrokerAddr(), wiretest.HeartbeatCmd(id, "ag", wiretest.Sub("AT", "*"))); resp.Code != remoting.Success {
			t.Fatalf("heartbeat: %d %q", resp.Code, resp.Remark)
		}
	}
	want := map[string][]rebalance.MessageQueue{
		"c1": {{Topic: "AT", BrokerName: "broker-a", QueueID: 0}, {Topic: "AT", BrokerName: "broker-a", QueueID: 1}},
		"c2": {{Topic: "AT", BrokerName: "broker-b", QueueID: 0}, {Topic: "AT", BrokerName: "broker-b", QueueID: 1}},
	}
	for id, w := range want {
		body, _ := json.Marshal(protocol.QueryAssignmentRequestBody{Topic: "AT", ConsumerGroup: "ag", ClientID: id,
			StrategyName: rebalance.NameAveragely, MessageModel: protocol.MessageModelClustering})
		resp := invoke(admin, a.BrokerAddr(), remoting.NewRequest(remoting.QueryAssignment, nil, body))
		var got protocol.QueryAssignmentResponseBody
		if resp.Code != remoting.Success || json.Unmarshal(resp.Body, &got) != nil {
			t.Fatalf("QUERY_ASSIGNMENT %s: %d %q %s", id, resp.Code, resp.Remark, resp.Body)
		}
		var qs []rebalance.MessageQueue
		for _, as := range got.MessageQueueAssignments {
			if as.Mode != config.MessageRequestModePull {
				t.Errorf("%s: mode %q", id, as.Mode)
			}
			qs = append(qs, as.MessageQueue)
		}
		if diff := cmp.Diff(w, qs); diff != "" {
			t.Errorf("%s (-want +got):\n%s", id, diff)
		}
	}
}
