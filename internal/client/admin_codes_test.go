package client

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// resettableConsumer is a stub consumer that records 220s and answers 221.
type resettableConsumer struct {
	stubConsumer
	resets []map[protocol.MessageQueue]int64
	topics []string
	status map[protocol.MessageQueue]int64
}

func (r *resettableConsumer) ResetOffset(topic string, offsets map[protocol.MessageQueue]int64) {
	r.topics = append(r.topics, topic)
	r.resets = append(r.resets, offsets)
}

func (r *resettableConsumer) ConsumeStatus(string) map[protocol.MessageQueue]int64 { return r.status }

func TestResetAndStatusRequests(t *testing.T) {
	tr := &stubTransport{procs: map[int32]remoting.Processor{}}
	i, err := Acquire(Options{NameServers: []string{"127.0.0.1:1"}, Transport: tr, InstanceName: "admin-codes"})
	if err != nil {
		t.Fatal(err)
	}
	defer i.Release()
	mq := protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}
	c := &resettableConsumer{status: map[protocol.MessageQueue]int64{mq: 42}}
	if err := i.RegisterConsumer("g", c); err != nil {
		t.Fatal(err)
	}
	defer i.UnregisterConsumer("g")
	call := func(code int32, h remoting.Header, body []byte) *remoting.Command {
		t.Helper()
		req := remoting.NewRequest(code, remoting.EncodeHeader(h), body)
		resp, err := tr.procs[code].ProcessRequest(context.Background(), brokerChannel{}, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	table := map[protocol.MessageQueue]int64{mq: 3}
	reset := func(group string, body []byte) *remoting.Command {
		return call(remoting.ResetConsumerClientOffset, &protocol.ResetOffsetRequestHeader{Topic: "T", Group: group, Timestamp: 1}, body)
	}
	if resp := reset("g", protocol.EncodeResetOffsetBody(table)); resp != nil {
		t.Errorf("220 is one-way, answered %v", resp)
	}
	if resp := reset("g", []byte(`{"offsetTable":{{"topic":`)); resp != nil {
		t.Errorf("bad body answered %v", resp)
	}
	reset("other", protocol.EncodeResetOffsetBody(table))
	if diff := cmp.Diff([]map[protocol.MessageQueue]int64{table}, c.resets); diff != "" || len(c.topics) != 1 || c.topics[0] != "T" {
		t.Errorf("resets (-want +got):\n%s topics %v", diff, c.topics)
	}

	resp := call(remoting.GetConsumerStatusFromClient, &protocol.GetConsumerStatusRequestHeader{Topic: "T", Group: "g"}, nil)
	if resp.Code != remoting.Success {
		t.Fatalf("221: %d %s", resp.Code, resp.Remark)
	}
	if got, err := protocol.DecodeConsumerStatusBody(resp.Body); err != nil || !cmp.Equal(got.MessageQueueTable, c.status) {
		t.Errorf("221 answered %v, %v", got, err)
	}
	if resp := call(remoting.GetConsumerStatusFromClient, &protocol.GetConsumerStatusRequestHeader{Topic: "T", Group: "other"}, nil); resp.Code != remoting.SystemError {
		t.Errorf("221 for an unknown group: %d", resp.Code)
	}
}
