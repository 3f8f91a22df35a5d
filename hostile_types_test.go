package mq_test

import (
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// hsAttackTypes sends RocketMQ 5's requests of issue 28's types slice with hostile contents:
// topic attributes with unknown keys and values or in bulk, assignment and request-mode bodies
// that are oversized, malformed or name what no request may, and forged recall handles. Each is
// refused with a remark; a typed topic then refuses a send of another type and takes its own.
func hsAttackTypes(t *testing.T, e *hsEnv) func() {
	c := hsClient(t)
	const topic = "HostileTyped"
	create := func(attrs string) *remoting.Command {
		h := &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: 2,
			WriteQueueNums: 2, Perm: route.PermReadWrite, TopicFilterType: route.FilterSingleTag, Attributes: attrs}
		return hsInvoke(t, c, e.main.addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil))
	}
	many := strings.Repeat("+message.type=FIFO,", 3000)
	for _, attrs := range []string{"+color=red", "+message.type=../../x", "-message.type", "message.type=FIFO",
		"+queue.type=BatchCQ", "+reserve.time=1", many, "+" + strings.Repeat("k", 60000) + "=v", "+message.type=MIXED"} {
		resp := create(attrs)
		if resp.Code == remoting.Success || resp.Remark == "" || len(resp.Remark) > 512 {
			t.Errorf("attributes %.40q: %s %.200q, want a refusal with a short remark", attrs,
				remoting.ResponseCodeName(resp.Code), resp.Remark)
		}
	}
	if resp := create("+message.type=FIFO"); resp.Code != remoting.Success {
		t.Fatalf("FIFO topic: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	plain := hsSendRequest(topic, 0, []byte("plain"))
	if resp := hsInvoke(t, c, e.main.addr, plain); resp.Code != remoting.MessageIllegal ||
		!strings.Contains(resp.Remark, "the expected type is FIFO, but actual type is NORMAL") {
		t.Errorf("plain message to a FIFO topic: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	fifo := hsSendRequest(topic, 0, []byte("fifo"))
	h := &protocol.SendMessageRequestHeader{}
	if err := h.Decode(fifo.ExtFields); err != nil {
		t.Fatal(err)
	}
	h.Properties = message.MarshalProperties(map[string]string{"__SHARDINGKEY": "g1"})
	fifo = remoting.NewRequest(remoting.SendMessage, remoting.EncodeHeader(h), []byte("fifo"))
	if resp := hsInvoke(t, c, e.main.addr, fifo); resp.Code != remoting.Success {
		t.Errorf("FIFO message to a FIFO topic: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}

	body := func(v any) []byte {
		b, _ := json.Marshal(v)
		return b
	}
	bodies := []struct {
		code int32
		body []byte
	}{
		{remoting.QueryAssignment, make([]byte, 15<<20)},
		{remoting.QueryAssignment, []byte(`{"topic":`)},
		{remoting.QueryAssignment, body(protocol.QueryAssignmentRequestBody{Topic: "../../x", ConsumerGroup: "g",
			ClientID: "c", StrategyName: "AVG", MessageModel: "CLUSTERING"})},
		{remoting.QueryAssignment, body(protocol.QueryAssignmentRequestBody{Topic: topic, ConsumerGroup: "g",
			ClientID: "c", StrategyName: "AVG", MessageModel: strings.Repeat("M", 10000)})},
		{remoting.SetMessageRequestMode, make([]byte, 15<<20)},
		{remoting.SetMessageRequestMode, body(protocol.SetMessageRequestModeRequestBody{Topic: topic,
			ConsumerGroup: "a/b", Mode: "POP"})},
		{remoting.SetMessageRequestMode, body(protocol.SetMessageRequestModeRequestBody{Topic: topic,
			ConsumerGroup: "g", Mode: strings.Repeat("P", 10000)})},
	}
	conn := hsDial(t, e.main.addr, 0)
	for _, b := range bodies {
		resp, err := conn.invoke(remoting.NewRequest(b.code, nil, b.body))
		if err != nil {
			t.Fatalf("%s with a %d-byte body: %v", remoting.RequestCodeName(b.code), len(b.body), err)
		}
		if resp.Code != remoting.SystemError || resp.Remark == "" || len(resp.Remark) > 512 {
			t.Errorf("%s with a %d-byte body: %s %.200q", remoting.RequestCodeName(b.code), len(b.body),
				remoting.ResponseCodeName(resp.Code), resp.Remark)
		}
	}

	for _, handle := range []string{"", "%%%", strings.Repeat("A", 40000),
		base64.URLEncoding.EncodeToString([]byte("v1 " + topic + " broker-a 99999999999999 a\x01b"))} {
		req := remoting.NewRequest(remoting.RecallMessage, remoting.EncodeHeader(&protocol.RecallMessageRequestHeader{
			ProducerGroup: "hostile_pg", Topic: topic, RecallHandle: handle}), nil)
		if resp := hsInvoke(t, c, e.main.addr, req); resp.Code == remoting.Success {
			t.Errorf("RECALL_MESSAGE with handle %.40q succeeded", handle)
		}
	}
	if e.mode == "binary" {
		hsTypesSurviveKill(t, e)
	}
	return nil
}

// hsTypesSurviveKill runs a node of its own, gives a topic a message type and a group a
// request mode, kills the node with SIGKILL once both were answered SUCCESS, restarts it on the
// same store and finds both, and the type still enforced.
func hsTypesSurviveKill(t *testing.T, e *hsEnv) {
	store := filepath.Join(t.TempDir(), "store")
	first := hsStartKillable(t, e.bin, store)
	c := hsDial(t, first.addr, 0)
	invoke := func(c *hsConn, req *remoting.Command) *remoting.Command {
		t.Helper()
		resp, err := c.invoke(req)
		if err != nil {
			t.Fatalf("request %s: %v", remoting.RequestCodeName(req.Code), err)
		}
		return resp
	}
	h := &protocol.CreateTopicRequestHeader{Topic: "KilledTyped", DefaultTopic: "TBW102", ReadQueueNums: 2,
		WriteQueueNums: 2, Perm: route.PermReadWrite, TopicFilterType: route.FilterSingleTag, Attributes: "+message.type=DELAY"}
	if resp := invoke(c, remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil)); resp.Code != remoting.Success {
		t.Fatalf("typed topic: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	mode, _ := json.Marshal(protocol.SetMessageRequestModeRequestBody{Topic: "KilledTyped", ConsumerGroup: "killed_cg", Mode: "POP"})
	if resp := invoke(c, remoting.NewRequest(remoting.SetMessageRequestMode, nil, mode)); resp.Code != remoting.Success {
		t.Fatalf("request mode: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	first.kill()

	second := hsStartKillable(t, e.bin, store)
	defer second.kill()
	c = hsDial(t, second.addr, 0)
	var w route.TopicConfigSerializeWrapper
	if err := json.Unmarshal(invoke(c, remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil)).Body, &w); err != nil {
		t.Fatal(err)
	}
	if got := w.TopicConfigTable["KilledTyped"].Attributes["message.type"]; got != "DELAY" {
		t.Errorf("message.type after SIGKILL and restart: %q (%+v)", got, w.TopicConfigTable["KilledTyped"])
	}
	var modes protocol.MessageRequestModeSerializeWrapper
	if err := json.Unmarshal(invoke(c, remoting.NewRequest(remoting.GetAllMessageRequestMode, nil, nil)).Body, &modes); err != nil {
		t.Fatal(err)
	}
	if got := modes.MessageRequestModeMap["KilledTyped"]["killed_cg"].Mode; got != "POP" {
		t.Errorf("request mode after SIGKILL and restart: %q", got)
	}
	if resp := invoke(c, hsSendRequest("KilledTyped", 0, []byte("plain"))); resp.Code != remoting.MessageIllegal {
		t.Errorf("plain message to the DELAY topic after the restart: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
}
