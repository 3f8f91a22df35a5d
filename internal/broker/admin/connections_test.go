package admin

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

func consumerConnectionCmd(group string) *remoting.Command {
	return remoting.NewRequest(remoting.GetConsumerConnectionList,
		remoting.EncodeHeader(&protocol.ConsumerGroupHeader{ConsumerGroup: group}), nil)
}

func TestConsumerConnectionListNamesMembersAndSubscriptions(t *testing.T) {
	tb := start(t, nil, nil)
	addTopic(t, tb, "T", 2)
	resp := brokertest.Invoke(t, tb.TCP, tb.Addr, consumerConnectionCmd("g"))
	if resp.Code != remoting.ConsumerNotOnline || resp.Remark != "the consumer group[g] not online" {
		t.Fatalf("empty group: code %d remark %q", resp.Code, resp.Remark)
	}

	wiretest.Heartbeat(t, tb.TCP, tb.Addr, "10.0.0.1@a", "g", wiretest.Sub("T", "a || b"))
	resp = brokertest.Invoke(t, tb.TCP, tb.Addr, consumerConnectionCmd("g"))
	if resp.Code != remoting.Success {
		t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
	}
	var body struct {
		ConnectionSet []struct {
			ClientID   string `json:"clientId"`
			ClientAddr string `json:"clientAddr"`
			Language   string `json:"language"`
			Version    int    `json:"version"`
		} `json:"connectionSet"`
		SubscriptionTable map[string]protocol.SubscriptionData `json:"subscriptionTable"`
		ConsumeType       string                               `json:"consumeType"`
		MessageModel      string                               `json:"messageModel"`
		ConsumeFromWhere  string                               `json:"consumeFromWhere"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		t.Fatalf("body %s: %v", resp.Body, err)
	}
	if len(body.ConnectionSet) != 1 || body.ConnectionSet[0].ClientID != "10.0.0.1@a" ||
		body.ConnectionSet[0].ClientAddr == "" || body.ConnectionSet[0].Language != "GO" {
		t.Errorf("connections %+v", body.ConnectionSet)
	}
	if got := body.SubscriptionTable["T"]; got.SubString != "a || b" || len(body.SubscriptionTable) != 1 {
		t.Errorf("subscriptions %+v", body.SubscriptionTable)
	}
	want := []string{protocol.ConsumePassively, protocol.Clustering, protocol.ConsumeFromLastOffset}
	if diff := cmp.Diff(want, []string{body.ConsumeType, body.MessageModel, body.ConsumeFromWhere}); diff != "" {
		t.Errorf("consume type, model, from where (-want +got):\n%s", diff)
	}

	bad := remoting.NewRequest(remoting.GetConsumerConnectionList, map[string]string{"consumerGroup": "bad group"}, nil)
	if resp := brokertest.Invoke(t, tb.TCP, tb.Addr, bad); resp.Code == remoting.Success {
		t.Errorf("illegal group name answered success")
	}
}

func TestProducerConnectionList(t *testing.T) {
	tb := start(t, nil, nil)
	req := func() *remoting.Command {
		return remoting.NewRequest(remoting.GetProducerConnectionList, map[string]string{"producerGroup": "pg"}, nil)
	}
	if resp := brokertest.Invoke(t, tb.TCP, tb.Addr, req()); resp.Code != remoting.SystemError {
		t.Fatalf("unknown group: code %d", resp.Code)
	}
	hb := protocol.HeartbeatData{ClientID: "p@1", ProducerDataSet: []protocol.ProducerData{{GroupName: "pg"}}}
	if resp := brokertest.Invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.HeartBeat, nil, hb.Encode())); resp.Code != remoting.Success {
		t.Fatalf("heartbeat code %d", resp.Code)
	}
	resp := brokertest.Invoke(t, tb.TCP, tb.Addr, req())
	var body struct {
		ConnectionSet []struct {
			ClientID string `json:"clientId"`
		} `json:"connectionSet"`
	}
	if resp.Code != remoting.Success || json.Unmarshal(resp.Body, &body) != nil ||
		len(body.ConnectionSet) != 1 || body.ConnectionSet[0].ClientID != "p@1" {
		t.Errorf("code %d body %s", resp.Code, resp.Body)
	}
}
