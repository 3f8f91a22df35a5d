package client

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

type stubConsumer struct {
	rebalanced int
	direct     []byte
}

func (s *stubConsumer) HeartbeatData() protocol.ConsumerData {
	return protocol.ConsumerData{GroupName: "g", ConsumeType: protocol.ConsumeActively,
		SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "T", SubString: "*"}}}
}
func (s *stubConsumer) SubscribedTopics() []string { return []string{"T"} }
func (s *stubConsumer) Rebalance()                 { s.rebalanced++ }
func (s *stubConsumer) ConsumeMessageDirectly(b []byte) *remoting.Command {
	s.direct = b
	r := remoting.NewResponse(remoting.Success, "")
	r.Body = []byte(`{"consumeResult":0}`)
	return r
}

// stubTransport records processors and fails every request.
type stubTransport struct{ procs map[int32]remoting.Processor }

func (t *stubTransport) InvokeSync(context.Context, string, *remoting.Command) (*remoting.Command, error) {
	return nil, remoting.ErrClosed
}
func (t *stubTransport) InvokeAsync(context.Context, string, *remoting.Command, func(*remoting.Command, error)) error {
	return remoting.ErrClosed
}
func (t *stubTransport) InvokeOneway(context.Context, string, *remoting.Command) error {
	return remoting.ErrClosed
}
func (t *stubTransport) RegisterProcessor(code int32, p remoting.Processor) { t.procs[code] = p }
func (t *stubTransport) Close() error                                       { return nil }

func TestBrokerInitiatedRequests(t *testing.T) {
	tr := &stubTransport{procs: map[int32]remoting.Processor{}}
	i, err := Acquire(Options{NameServers: []string{"127.0.0.1:1"}, Transport: tr, InstanceName: "procs"})
	if err != nil {
		t.Fatal(err)
	}
	defer i.Release()
	c := &stubConsumer{}
	if err := i.RegisterConsumer("g", c); err != nil {
		t.Fatal(err)
	}
	defer i.UnregisterConsumer("g")
	call := func(code int32, ext map[string]string, body []byte) *remoting.Command {
		t.Helper()
		p := tr.procs[code]
		if p == nil {
			t.Fatalf("no processor for %d", code)
		}
		resp, err := p.ProcessRequest(context.Background(), nil, remoting.NewRequest(code, ext, body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := call(remoting.NotifyConsumerIDsChanged, map[string]string{"consumerGroup": "g"}, nil); resp != nil || c.rebalanced != 1 {
		t.Fatalf("notify: reply %v, rebalances %d", resp, c.rebalanced)
	}
	resp := call(remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "g", "clientId": i.ClientID()}, nil)
	var info struct {
		Properties      map[string]string           `json:"properties"`
		SubscriptionSet []protocol.SubscriptionData `json:"subscriptionSet"`
	}
	if resp.Code != remoting.Success || json.Unmarshal(resp.Body, &info) != nil ||
		info.Properties["PROP_CONSUME_TYPE"] != protocol.ConsumeActively || len(info.SubscriptionSet) != 1 {
		t.Fatalf("running info: %d %s", resp.Code, resp.Body)
	}
	if resp := call(remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "other"}, nil); resp.Code != remoting.SystemError {
		t.Fatalf("running info of an unknown group: %d", resp.Code)
	}
	if resp := call(remoting.ConsumeMessageDirectly, map[string]string{"consumerGroup": "g"}, []byte("rec")); resp.Code != remoting.Success || string(c.direct) != "rec" {
		t.Fatalf("consume directly: %d %q", resp.Code, c.direct)
	}
	if resp := call(remoting.ConsumeMessageDirectly, map[string]string{"consumerGroup": "g"}, nil); resp.Code != remoting.SystemError {
		t.Fatalf("consume directly without body: %d", resp.Code)
	}
}
