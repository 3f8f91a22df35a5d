package assignment

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/admin"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/rebalance"
	"github.com/mqgo/mq/remoting"
)

func attach(b *broker.Broker) error {
	s, err := New(b)
	if err != nil {
		return err
	}
	b.Attach(s)
	return attachAdmin(b)
}

func start(t *testing.T, mutate func(*broker.Options)) *brokertest.Broker {
	return brokertest.Start(t, brokertest.Config{Attach: attach, Mutate: mutate})
}

// member registers clientID in group over a connection of its own (the broker keys members by
// connection), of the kind kind names ("tcp" or "inproc").
func member(t *testing.T, tb *brokertest.Broker, kind, clientID, group string, subs ...protocol.SubscriptionData) {
	t.Helper()
	var tr remoting.Transport
	if kind == "tcp" {
		tr = wiretest.NewTCPClient(t)
	} else {
		tr = tb.NewInProc(t)
	}
	wiretest.Heartbeat(t, tr, tb.Addr, clientID, group, subs...)
}

func bodyCmd(t *testing.T, code int32, v any) *remoting.Command {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return remoting.NewRequest(code, nil, b)
}

// query asks QUERY_ASSIGNMENT and returns the assignments; nil when the answer has none.
func query(t *testing.T, tr remoting.Transport, addr string, b protocol.QueryAssignmentRequestBody) []protocol.MessageQueueAssignment {
	t.Helper()
	resp := wiretest.Invoke(t, tr, addr, bodyCmd(t, remoting.QueryAssignment, b))
	if resp.Code != remoting.Success {
		t.Fatalf("QUERY_ASSIGNMENT %+v: %d %q", b, resp.Code, resp.Remark)
	}
	var out struct {
		A *[]protocol.MessageQueueAssignment `json:"messageQueueAssignments"`
	}
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		t.Fatalf("body %s: %v", resp.Body, err)
	}
	if out.A == nil {
		return nil
	}
	return *out.A
}

func ids(as []protocol.MessageQueueAssignment, mode string) []int {
	out := []int{}
	for _, a := range as {
		if a.Mode != mode {
			return []int{-100}
		}
		out = append(out, a.MessageQueue.QueueID)
	}
	return out
}

func setMode(t *testing.T, tr remoting.Transport, addr string, b protocol.SetMessageRequestModeRequestBody) *remoting.Command {
	t.Helper()
	return wiretest.Invoke(t, tr, addr, bodyCmd(t, remoting.SetMessageRequestMode, b))
}

func TestQueryAssignmentPull(t *testing.T) {
	tb := start(t, nil)
	wiretest.CreateTopic(t, tb.TCP, tb.Addr, "T", 4)
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			g := "g-" + name
			for _, c := range []string{"c2", "c1"} {
				member(t, tb, name, c, g, wiretest.Sub("T", "*"))
			}
			q := protocol.QueryAssignmentRequestBody{Topic: "T", ConsumerGroup: g, ClientID: "c1",
				StrategyName: rebalance.NameAveragely, MessageModel: protocol.MessageModelClustering}
			if got := ids(query(t, tr, tb.Addr, q), "PULL"); !cmp.Equal(got, []int{0, 1}) {
				t.Errorf("c1 AVG: %v", got)
			}
			q.ClientID = "c2"
			if got := ids(query(t, tr, tb.Addr, q), "PULL"); !cmp.Equal(got, []int{2, 3}) {
				t.Errorf("c2 AVG: %v", got)
			}
			q.StrategyName = rebalance.NameAveragelyByCircle
			if got := ids(query(t, tr, tb.Addr, q), "PULL"); !cmp.Equal(got, []int{1, 3}) {
				t.Errorf("c2 AVG_BY_CIRCLE: %v", got)
			}
			as := query(t, tr, tb.Addr, q)
			if as[0].MessageQueue.Topic != "T" || as[0].MessageQueue.BrokerName != tb.Options().Broker.Name {
				t.Errorf("queue %+v", as[0].MessageQueue)
			}
			// A client not in the group gets nothing; broadcasting gets everything.
			q.ClientID = "stranger"
			if got := query(t, tr, tb.Addr, q); got == nil || len(got) != 0 {
				t.Errorf("stranger: %v, want an empty list", got)
			}
			q.MessageModel = protocol.MessageModelBroadcasting
			if got := ids(query(t, tr, tb.Addr, q), "PULL"); !cmp.Equal(got, []int{0, 1, 2, 3}) {
				t.Errorf("broadcasting: %v", got)
			}
			// No answer (the client keeps what it has): unknown strategy, topic or group.
			for _, bad := range []protocol.QueryAssignmentRequestBody{
				{Topic: "T", ConsumerGroup: g, ClientID: "c1", StrategyName: "CONSISTENT_HASH", MessageModel: protocol.MessageModelClustering},
				{Topic: "Nope", ConsumerGroup: g, ClientID: "c1", StrategyName: "AVG", MessageModel: protocol.MessageModelClustering},
				{Topic: "T", ConsumerGroup: "nobody", ClientID: "c1", StrategyName: "AVG", MessageModel: protocol.MessageModelClustering},
			} {
				if got := query(t, tr, tb.Addr, bad); got != nil {
					t.Errorf("%+v: %v, want no assignments", bad, got)
				}
			}
		})
	}
}

func TestQueryAssignmentPop(t *testing.T) {
	tb := start(t, nil)
	wiretest.CreateTopic(t, tb.TCP, tb.Addr, "P", 6)
	tr := tb.TCP
	for _, c := range []string{"c1", "c2", "c3"} {
		member(t, tb, "tcp", c, "pg", wiretest.Sub("P", "*"))
	}
	q := protocol.QueryAssignmentRequestBody{Topic: "P", ConsumerGroup: "pg", ClientID: "c1",
		StrategyName: rebalance.NameAveragely, MessageModel: protocol.MessageModelClustering}
	// popShareQueueNum -1 (the default of a POP mode set without one is 0: the same): every
	// member pops all of the broker's queues.
	if resp := setMode(t, tr, tb.Addr, protocol.SetMessageRequestModeRequestBody{Topic: "P", ConsumerGroup: "pg",
		Mode: "POP", PopShareQueueNum: -1}); resp.Code != remoting.Success {
		t.Fatalf("SET_MESSAGE_REQUEST_MODE: %d %q", resp.Code, resp.Remark)
	}
	if got := ids(query(t, tr, tb.Addr, q), "POP"); !cmp.Equal(got, []int{-1}) {
		t.Errorf("POP, no sharing: %v", got)
	}
	// popShareQueueNum 1 of 3 members, 6 queues: c1 pops its own and c2's.
	setMode(t, tr, tb.Addr, protocol.SetMessageRequestModeRequestBody{Topic: "P", ConsumerGroup: "pg", Mode: "POP", PopShareQueueNum: 1})
	if got := ids(query(t, tr, tb.Addr, q), "POP"); !cmp.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("POP share 1, c1: %v", got)
	}
	q.ClientID = "c3"
	if got := ids(query(t, tr, tb.Addr, q), "POP"); !cmp.Equal(got, []int{0, 1, 4, 5}) {
		t.Errorf("POP share 1, c3 (wraps to c1): %v", got)
	}
	// More members than queues: one queue each, by position.
	wiretest.CreateTopic(t, tb.TCP, tb.Addr, "Small", 2)
	for _, c := range []string{"d1", "d2", "d3", "d4"} {
		member(t, tb, "inproc", c, "small", wiretest.Sub("Small", "*"))
	}
	setMode(t, tr, tb.Addr, protocol.SetMessageRequestModeRequestBody{Topic: "Small", ConsumerGroup: "small", Mode: "POP", PopShareQueueNum: 1})
	q = protocol.QueryAssignmentRequestBody{Topic: "Small", ConsumerGroup: "small", ClientID: "d4",
		StrategyName: rebalance.NameAveragely, MessageModel: protocol.MessageModelClustering}
	if got := ids(query(t, tr, tb.Addr, q), "POP"); !cmp.Equal(got, []int{1}) {
		t.Errorf("POP, more members than queues, d4: %v", got)
	}
	// A retry topic is read by PULL whatever the default.
	tb2 := start(t, func(o *broker.Options) { o.Types.DefaultMessageRequestMode = "POP" })
	wiretest.CreateTopic(t, tb2.TCP, tb2.Addr, "D", 2)
	wiretest.Heartbeat(t, tb2.TCP, tb2.Addr, "c1", "dg", wiretest.Sub("D", "*"), wiretest.Sub("%RETRY%dg", "*"))
	q = protocol.QueryAssignmentRequestBody{Topic: "D", ConsumerGroup: "dg", ClientID: "c1",
		StrategyName: rebalance.NameAveragely, MessageModel: protocol.MessageModelClustering}
	if got := ids(query(t, tb2.TCP, tb2.Addr, q), "POP"); !cmp.Equal(got, []int{-1}) {
		t.Errorf("default POP: %v", got)
	}
	q.Topic = "%RETRY%dg"
	if got := ids(query(t, tb2.TCP, tb2.Addr, q), "PULL"); !cmp.Equal(got, []int{0}) {
		t.Errorf("retry topic under default POP: %v", got)
	}
}

func TestSetMessageRequestModeRefusals(t *testing.T) {
	tb := start(t, func(o *broker.Options) { o.DisableAutoCreateSubscriptionGroup = true })
	wiretest.CreateTopic(t, tb.TCP, tb.Addr, "T", 2)
	for name, tr := range tb.Transports() {
		for _, c := range []struct {
			name   string
			req    *remoting.Command
			code   int32
			remark string
		}{
			{"retry topic", bodyCmd(t, remoting.SetMessageRequestMode, protocol.SetMessageRequestModeRequestBody{
				Topic: "%RETRY%g", ConsumerGroup: "g", Mode: "POP"}), remoting.NoPermission, "retry topic is not allowed to set mode"},
			{"unknown topic", bodyCmd(t, remoting.SetMessageRequestMode, protocol.SetMessageRequestModeRequestBody{
				Topic: "Nope", ConsumerGroup: "g", Mode: "POP"}), remoting.TopicNotExist, "topic[Nope] not exist"},
			{"unknown group", bodyCmd(t, remoting.SetMessageRequestMode, protocol.SetMessageRequestModeRequestBody{
				Topic: "T", ConsumerGroup: "g", Mode: "POP"}), remoting.SubscriptionGroupNotExist, "subscription group does not exist"},
			{"unknown mode", bodyCmd(t, remoting.SetMessageRequestMode, protocol.SetMessageRequestModeRequestBody{
				Topic: "T", ConsumerGroup: "g", Mode: "PUSH"}), remoting.SystemError, `mode "PUSH" is neither PULL nor POP`},
			{"bad topic name", bodyCmd(t, remoting.SetMessageRequestMode, protocol.SetMessageRequestModeRequestBody{
				Topic: "../x", ConsumerGroup: "g", Mode: "POP"}), remoting.SystemError, "topic: "},
			{"bad group name", bodyCmd(t, remoting.SetMessageRequestMode, protocol.SetMessageRequestModeRequestBody{
				Topic: "T", ConsumerGroup: strings.Repeat("g", 300), Mode: "POP"}), remoting.SystemError, "consumerGroup: "},
			{"no body", remoting.NewRequest(remoting.SetMessageRequestMode, nil, nil), remoting.SystemError, "SET_MESSAGE_REQUEST_MODE: no body"},
			{"malformed body", remoting.NewRequest(remoting.SetMessageRequestMode, nil, []byte(`{"topic":`)), remoting.SystemError, "malformed body"},
			{"huge body", remoting.NewRequest(remoting.SetMessageRequestMode, nil, []byte(`{"topic":"`+strings.Repeat("x", 1<<20)+`"}`)),
				remoting.SystemError, "takes at most 65536 bytes of body"},
			{"query: bad model", bodyCmd(t, remoting.QueryAssignment, protocol.QueryAssignmentRequestBody{
				Topic: "T", ConsumerGroup: "g", ClientID: "c", StrategyName: "AVG"}), remoting.SystemError, "messageModel"},
			{"query: bad topic", bodyCmd(t, remoting.QueryAssignment, protocol.QueryAssignmentRequestBody{
				Topic: "a b", ConsumerGroup: "g", ClientID: "c", MessageModel: "CLUSTERING"}), remoting.SystemError, "topic: "},
			{"query: huge body", remoting.NewRequest(remoting.QueryAssignment, nil, make([]byte, 1<<20)), remoting.SystemError, "takes at most 65536 bytes of body"},
		} {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				resp := wiretest.Invoke(t, tr, tb.Addr, c.req)
				if resp.Code != c.code || !strings.Contains(resp.Remark, c.remark) || len(resp.Remark) > 512 {
					t.Errorf("%d %.200q, want %d with %q", resp.Code, resp.Remark, c.code, c.remark)
				}
			})
		}
	}
	if w := getAll(t, tb); len(w.MessageRequestModeMap) != 0 {
		t.Errorf("refusals stored modes: %+v", w)
	}
}

func getAll(t *testing.T, tb *brokertest.Broker) protocol.MessageRequestModeSerializeWrapper {
	t.Helper()
	resp := wiretest.Invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.GetAllMessageRequestMode, nil, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("GET_ALL_MESSAGE_REQUEST_MODE: %d %q", resp.Code, resp.Remark)
	}
	var w protocol.MessageRequestModeSerializeWrapper
	if err := json.Unmarshal(resp.Body, &w); err != nil {
		t.Fatalf("%s: %v", resp.Body, err)
	}
	return w
}

// The modes set survive a restart (messageRequestMode.json) and GET_ALL_MESSAGE_REQUEST_MODE
// lists them as RocketMQ's wrapper.
func TestMessageRequestModesPersist(t *testing.T) {
	dir := t.TempDir()
	tb := brokertest.StartIn(t, dir, brokertest.Config{Attach: attach})
	wiretest.CreateTopic(t, tb.TCP, tb.Addr, "T", 2)
	for i := range 3 {
		m := protocol.SetMessageRequestModeRequestBody{Topic: "T", ConsumerGroup: fmt.Sprintf("g%d", i), Mode: "POP", PopShareQueueNum: i}
		if resp := setMode(t, tb.TCP, tb.Addr, m); resp.Code != remoting.Success {
			t.Fatalf("%d %q", resp.Code, resp.Remark)
		}
	}
	setMode(t, tb.TCP, tb.Addr, protocol.SetMessageRequestModeRequestBody{Topic: "T", ConsumerGroup: "g2"}) // back to PULL
	want := protocol.MessageRequestModeSerializeWrapper{MessageRequestModeMap: map[string]map[string]protocol.SetMessageRequestModeRequestBody{
		"T": {"g0": {Topic: "T", ConsumerGroup: "g0", Mode: "POP"}, "g1": {Topic: "T", ConsumerGroup: "g1", Mode: "POP", PopShareQueueNum: 1},
			"g2": {Topic: "T", ConsumerGroup: "g2", Mode: "PULL"}}}}
	if diff := cmp.Diff(want, getAll(t, tb)); diff != "" {
		t.Errorf("GET_ALL (-want +got):\n%s", diff)
	}
	tb.Stop(t)
	tb2 := brokertest.StartIn(t, dir, brokertest.Config{Attach: attach})
	if diff := cmp.Diff(want, getAll(t, tb2)); diff != "" {
		t.Errorf("after restart (-want +got):\n%s", diff)
	}
	wiretest.Heartbeat(t, tb2.TCP, tb2.Addr, "c1", "g0", wiretest.Sub("T", "*"))
	q := protocol.QueryAssignmentRequestBody{Topic: "T", ConsumerGroup: "g0", ClientID: "c1",
		StrategyName: rebalance.NameAveragely, MessageModel: protocol.MessageModelClustering}
	if got := ids(query(t, tb2.TCP, tb2.Addr, q), "POP"); !cmp.Equal(got, []int{-1}) {
		t.Errorf("g0 after restart: %v", got)
	}
}

// attachAdmin attaches the admin service, whose topic admin the tests create topics with.
func attachAdmin(b *broker.Broker) error {
	s, err := admin.New(b, admin.Deps{})
	if err != nil {
		return err
	}
	b.Attach(s)
	return nil
}
