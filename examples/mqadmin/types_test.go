package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/remoting"
)

// updateTopic -a sets RocketMQ 5's topic attributes: a FIFO topic refuses a plain message, a
// NORMAL one takes it, and what the broker refuses is reported with its remark.
func TestUpdateTopicAttributes(t *testing.T) {
	n := startNode(t)
	ns := n.Addr()
	out := mustRun(t, "updateTopic", "-n", ns, "-c", mq.DefaultClusterName, "-t", "TypedT", "-r", "1", "-w", "1",
		"-a", "+message.type=FIFO")
	if !strings.Contains(out, "order=false, attributes={+message.type=FIFO}]") {
		t.Errorf("updateTopic -a:\n%s", out)
	}
	code, _, errOut := runCmd(t, "sendMessage", "-n", ns, "-t", "TypedT", "-p", "plain")
	if code != exitFailed || !strings.Contains(errOut, "TopicMessageType validate failed, the expected type is FIFO, but actual type is NORMAL") {
		t.Errorf("plain message to a FIFO topic: exit %d, %s", code, errOut)
	}
	mustRun(t, "updateTopic", "-n", ns, "-b", n.BrokerAddr(), "-t", "TypedT", "-r", "1", "-w", "1", "-a", "+message.type=NORMAL")
	if out := mustRun(t, "sendMessage", "-n", ns, "-t", "TypedT", "-p", "plain"); !strings.Contains(out, "SEND_OK") {
		t.Errorf("plain message to a NORMAL topic:\n%s", out)
	}
	code, _, errOut = runCmd(t, "updateTopic", "-n", ns, "-b", n.BrokerAddr(), "-t", "TypedT", "-a", "+color=red")
	if code != exitFailed || !strings.Contains(errOut, "unsupported key: color") {
		t.Errorf("unknown attribute: exit %d, %s", code, errOut)
	}
	if out := mustRun(t, "updateTopic", "-n", ns, "-b", n.BrokerAddr(), "-t", "PlainT"); !strings.Contains(out, "attributes={}]") {
		t.Errorf("updateTopic without -a:\n%s", out)
	}
}

// updateSubGroup -o true marks a FIFO consumer group, as RocketMQ 5's tool does.
func TestUpdateSubGroupOrderly(t *testing.T) {
	n := startNode(t)
	out := mustRun(t, "updateSubGroup", "-n", n.Addr(), "-b", n.BrokerAddr(), "-g", "fifoG", "-o", "true")
	if !strings.Contains(out, "consumeMessageOrderly=true") {
		t.Errorf("updateSubGroup -o:\n%s", out)
	}
	c := remoting.NewClient(remoting.ClientOptions{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.InvokeSync(ctx, n.BrokerAddr(), remoting.NewRequest(remoting.GetAllSubscriptionGroupConfig, nil, nil))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("GET_ALL_SUBSCRIPTIONGROUP_CONFIG: %v %+v", err, resp)
	}
	var w struct {
		Table map[string]struct {
			Orderly bool `json:"consumeMessageOrderly"`
		} `json:"subscriptionGroupTable"`
	}
	if err := json.Unmarshal(resp.Body, &w); err != nil {
		t.Fatal(err)
	}
	if g, ok := w.Table["fifoG"]; !ok || !g.Orderly {
		t.Errorf("fifoG on the broker: %+v %v", g, ok)
	}
}
