package admin

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// resetNotice is one RESET_CONSUMER_CLIENT_OFFSET a client received.
type resetNotice struct {
	header  protocol.ResetOffsetRequestHeader
	offsets map[protocol.MessageQueue]int64
}

// recordResets collects the 220s sent to a client.
func recordResets(tr remoting.Transport) <-chan resetNotice {
	ch := make(chan resetNotice, 10)
	tr.RegisterProcessor(remoting.ResetConsumerClientOffset, remoting.ProcessorFunc(
		func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			var n resetNotice
			if err := n.header.Decode(req.ExtFields); err != nil {
				return nil, err
			}
			offsets, err := protocol.DecodeOffsetSerializeWrapper(req.Body)
			if err != nil {
				return nil, err
			}
			n.offsets = offsets
			ch <- n
			return nil, nil
		}))
	return ch
}

func resetCmd(topic, group string, timestamp int64, force bool) *remoting.Command {
	return remoting.NewRequest(remoting.InvokeBrokerToResetOffset, remoting.EncodeHeader(
		&protocol.ResetOffsetRequestHeader{Topic: topic, Group: group, Timestamp: timestamp, IsForce: force}), nil)
}

func TestResetOffsetByTimeMovesGroupAndTellsConsumers(t *testing.T) {
	tb := start(t, nil, nil)
	addTopic(t, tb, "T", 2)
	putMsgs(t, tb, "T", 0, 3, "", "old")
	putMsgs(t, tb, "T", 1, 2, "", "old")
	// Store times have millisecond resolution: the old messages are stored before mark and the
	// new ones after it.
	mark := time.Now().UnixMilli() + 1
	brokertest.Eventually(t, "clock past the mark", func() bool { return time.Now().UnixMilli() > mark })
	putMsgs(t, tb, "T", 0, 2, "", "new")
	putMsgs(t, tb, "T", 1, 1, "", "new")
	tb.Offsets().Commit("g", "T", 0, 5)
	tb.Offsets().Commit("g", "T", 1, 3)

	// Nobody online: RocketMQ's CONSUMER_NOT_ONLINE, and the offsets stay.
	if resp := brokertest.Invoke(t, tb.InProc, tb.Addr, resetCmd("T", "g", mark, false)); resp.Code != remoting.ConsumerNotOnline {
		t.Fatalf("no consumer: code %d %q", resp.Code, resp.Remark)
	}
	if off := tb.Offsets().Query("g", "T", 0); off != 5 {
		t.Fatalf("offset moved without consumers: %d", off)
	}

	a, b := wiretest.NewTCPClient(t), tb.InProc
	ra, rb := recordResets(a), recordResets(b)
	wiretest.Heartbeat(t, a, tb.Addr, "A@1", "g", wiretest.Sub("T", "*"))
	wiretest.Heartbeat(t, b, tb.Addr, "B@1", "g", wiretest.Sub("T", "*"))

	mq := func(q int) protocol.MessageQueue {
		return protocol.MessageQueue{Topic: "T", BrokerName: tb.Options().Broker.Name, QueueID: q}
	}
	want := map[protocol.MessageQueue]int64{mq(0): 3, mq(1): 2}
	resp := brokertest.Invoke(t, tb.TCP, tb.Addr, resetCmd("T", "g", mark, false))
	if resp.Code != remoting.Success {
		t.Fatalf("reset: code %d %q", resp.Code, resp.Remark)
	}
	got, err := protocol.DecodeOffsetSerializeWrapper(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answered table (-want +got):\n%s", diff)
	}
	for q, off := range map[int32]int64{0: 3, 1: 2} {
		if c := tb.Offsets().Query("g", "T", q); c != off {
			t.Errorf("queue %d committed %d, want %d", q, c, off)
		}
	}
	for name, rec := range map[string]<-chan resetNotice{"tcp": ra, "inproc": rb} {
		select {
		case n := <-rec:
			if n.header.Topic != "T" || n.header.Group != "g" || n.header.Timestamp != mark {
				t.Errorf("%s: header %+v", name, n.header)
			}
			if diff := cmp.Diff(want, n.offsets); diff != "" {
				t.Errorf("%s: told (-want +got):\n%s", name, diff)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no RESET_CONSUMER_CLIENT_OFFSET", name)
		}
	}

	// Unforced, a reset never moves the group forward; forced, it does.
	resp = brokertest.Invoke(t, tb.TCP, tb.Addr, resetCmd("T", "g", -1, false))
	if got, _ := protocol.DecodeOffsetSerializeWrapper(resp.Body); resp.Code != remoting.Success || got[mq(0)] != 3 {
		t.Errorf("unforced to the end: code %d table %v", resp.Code, got)
	}
	resp = brokertest.Invoke(t, tb.TCP, tb.Addr, resetCmd("T", "g", -1, true))
	if got, _ := protocol.DecodeOffsetSerializeWrapper(resp.Body); resp.Code != remoting.Success || got[mq(0)] != 5 || got[mq(1)] != 3 {
		t.Errorf("forced to the end: code %d table %v", resp.Code, got)
	}
	if c := tb.Offsets().Query("g", "T", 0); c != 5 {
		t.Errorf("forced: committed %d", c)
	}

	if resp := brokertest.Invoke(t, tb.TCP, tb.Addr, resetCmd("nosuch", "g", mark, false)); resp.Code != remoting.SystemError {
		t.Errorf("unknown topic: code %d", resp.Code)
	}
	if resp := brokertest.Invoke(t, tb.TCP, tb.Addr, resetCmd("T", "other", mark, false)); resp.Code != remoting.SystemError {
		t.Errorf("group without offsets: code %d", resp.Code)
	}
	bad := resetCmd("T", "g", mark, false)
	bad.ExtFields["group"] = "bad group name!"
	if resp := brokertest.Invoke(t, tb.TCP, tb.Addr, bad); resp.Code == remoting.Success {
		t.Error("invalid group name accepted")
	}
}

func TestGetConsumerStatusGathersEachClient(t *testing.T) {
	tb := start(t, nil, nil)
	addTopic(t, tb, "T", 2)
	a, b := wiretest.NewTCPClient(t), tb.InProc
	mq := func(q int) protocol.MessageQueue {
		return protocol.MessageQueue{Topic: "T", BrokerName: tb.Options().Broker.Name, QueueID: q}
	}
	answer := func(tr remoting.Transport, q int, off int64) {
		tr.RegisterProcessor(remoting.GetConsumerStatusFromClient, remoting.ProcessorFunc(
			func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
				var h protocol.GetConsumerStatusRequestHeader
				if err := h.Decode(req.ExtFields); err != nil || h.Group != "g" || h.Topic != "T" {
					return remoting.NewResponse(remoting.SystemError, "unexpected header"), nil
				}
				resp := remoting.NewResponse(remoting.Success, "")
				resp.Body = protocol.EncodeConsumerStatusBody(&protocol.ConsumerStatusBody{
					MessageQueueTable: map[protocol.MessageQueue]int64{mq(q): off}})
				return resp, nil
			}))
	}
	answer(a, 0, 7)
	answer(b, 1, 9)
	ask := func(clientAddr string) *remoting.Command {
		return remoting.NewRequest(remoting.InvokeBrokerToGetConsumerStats, remoting.EncodeHeader(
			&protocol.GetConsumerStatusRequestHeader{Topic: "T", Group: "g", ClientAddr: clientAddr}), nil)
	}
	if resp := brokertest.Invoke(t, tb.TCP, tb.Addr, ask("")); resp.Code != remoting.SystemError {
		t.Fatalf("no consumer: code %d", resp.Code)
	}
	wiretest.Heartbeat(t, a, tb.Addr, "A@1", "g", wiretest.Sub("T", "*"))
	wiretest.Heartbeat(t, b, tb.Addr, "B@1", "g", wiretest.Sub("T", "*"))

	for _, tc := range []struct {
		clientAddr string
		want       map[string]map[protocol.MessageQueue]int64
	}{
		{"", map[string]map[protocol.MessageQueue]int64{"A@1": {mq(0): 7}, "B@1": {mq(1): 9}}},
		{"B@1", map[string]map[protocol.MessageQueue]int64{"B@1": {mq(1): 9}}},
	} {
		resp := brokertest.Invoke(t, tb.TCP, tb.Addr, ask(tc.clientAddr))
		if resp.Code != remoting.Success {
			t.Fatalf("code %d %q", resp.Code, resp.Remark)
		}
		got, err := protocol.DecodeConsumerStatusBody(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got.ConsumerTable); diff != "" {
			t.Errorf("client %q: consumer table (-want +got):\n%s", tc.clientAddr, diff)
		}
	}
}

func TestConsumerRunningInfoRelayedToTheClient(t *testing.T) {
	tb := start(t, nil, nil)
	addTopic(t, tb, "T", 1)
	a := wiretest.NewTCPClient(t)
	a.RegisterProcessor(remoting.GetConsumerRunningInfo, remoting.ProcessorFunc(
		func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			resp := remoting.NewResponse(remoting.Success, "")
			resp.Body = []byte("info of " + req.Ext("clientId") + " in " + req.Ext("consumerGroup"))
			return resp, nil
		}))
	wiretest.Heartbeat(t, a, tb.Addr, "A@1", "g", wiretest.Sub("T", "*"))
	ask := func(group, clientID string) *remoting.Command {
		return brokertest.Invoke(t, tb.InProc, tb.Addr, remoting.NewRequest(remoting.GetConsumerRunningInfo, remoting.EncodeHeader(
			&protocol.GetConsumerRunningInfoRequestHeader{ConsumerGroup: group, ClientID: clientID}), nil))
	}
	if resp := ask("g", "A@1"); resp.Code != remoting.Success || string(resp.Body) != "info of A@1 in g" {
		t.Errorf("relayed: code %d body %q", resp.Code, resp.Body)
	}
	if resp := ask("g", "B@1"); resp.Code != remoting.SystemError || resp.Remark != "The Consumer <g> <B@1> not online" {
		t.Errorf("unknown client: code %d %q", resp.Code, resp.Remark)
	}
	if resp := ask("other", "A@1"); resp.Code != remoting.SystemError {
		t.Errorf("client of another group: code %d", resp.Code)
	}
}
