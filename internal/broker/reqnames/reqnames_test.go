package reqnames

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// testGuard is a Guard whose send answers are marked, so a test sees which way a refusal went.
func testGuard() *Guard {
	return &Guard{
		SendTopicRemark: func(topic string) string {
			if names.CheckTopic(topic) != nil {
				return "msgCheck refused " + topic
			}
			return ""
		},
		SendRefusal: func(remark string) *remoting.Command {
			return remoting.NewResponse(remoting.SystemError, "send: "+remark)
		},
	}
}

// TestCheckHeader: the first bad name among the fields is refused naming its field, a send
// code's refusals go through the core's send answers (the target topic with its msgCheck
// remark), an absent name is the header decoder's, and a consumer group the broker builds
// retry topics from is held to names.MaxRetryGroupBytes.
func TestCheckHeader(t *testing.T) {
	sendV2, _ := Fields(remoting.SendMessageV2)
	pull, _ := Fields(remoting.PullMessage)
	sendBack, _ := Fields(remoting.ConsumerSendMsgBack)
	cases := []struct {
		name   string
		fields []Field
		send   bool
		ext    map[string]string
		remark string // "" for accepted
	}{
		{"valid send", sendV2, true, map[string]string{"a": "pg", "b": "T", "c": "TBW102"}, ""},
		{"send group", sendV2, true, map[string]string{"a": "p/g", "b": "T"}, "send: producerGroup: "},
		{"send topic", sendV2, true, map[string]string{"a": "pg", "b": "../T"}, "send: msgCheck refused ../T"},
		{"send default topic", sendV2, true, map[string]string{"a": "pg", "b": "T", "c": "a b"}, "send: defaultTopic: "},
		{"first bad wins", sendV2, true, map[string]string{"a": "p/g", "b": "../T"}, "send: producerGroup: "},
		{"absent names", sendV2, true, map[string]string{}, ""},
		{"pull topic", pull, false, map[string]string{"consumerGroup": "cg", "topic": "T@x"}, "topic: "},
		{"pull group", pull, false, map[string]string{"consumerGroup": strings.Repeat("g", 256), "topic": "T"}, "consumerGroup: "},
		{"pull long group", pull, false, map[string]string{"consumerGroup": strings.Repeat("g", 255), "topic": "T"}, ""},
		{"retry group too long", sendBack, false, map[string]string{"group": strings.Repeat("g", names.MaxRetryGroupBytes+1)}, "group: "},
		{"retry group longest", sendBack, false, map[string]string{"group": strings.Repeat("g", names.MaxRetryGroupBytes)}, ""},
	}
	g := testGuard()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := g.checkHeader(&remoting.Command{ExtFields: c.ext}, c.fields, c.send)
			switch {
			case c.remark == "" && resp != nil:
				t.Fatalf("refused: code %d remark %q", resp.Code, resp.Remark)
			case c.remark == "":
			case resp == nil:
				t.Fatalf("accepted, want a refusal starting %q", c.remark)
			case resp.Code != remoting.SystemError || !strings.HasPrefix(resp.Remark, c.remark):
				t.Fatalf("code %d remark %q, want SYSTEM_ERROR starting %q", resp.Code, resp.Remark, c.remark)
			}
		})
	}
}

// TestWrap: a wrapped processor never sees a refused request; a code without name fields gets
// its processor back unwrapped.
func TestWrap(t *testing.T) {
	var ran int
	p := remoting.ProcessorFunc(func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
		ran++
		return remoting.NewResponse(remoting.Success, ""), nil
	})
	fields, _ := Fields(remoting.PullMessage)
	w := testGuard().Wrap(remoting.PullMessage, fields, p)
	bad := remoting.NewRequest(remoting.PullMessage, map[string]string{"consumerGroup": "cg", "topic": "../x"}, nil)
	if resp, err := w.ProcessRequest(t.Context(), nil, bad); err != nil || resp.Code != remoting.SystemError || ran != 0 {
		t.Fatalf("bad topic: %v %v, processor ran %d times", resp, err, ran)
	}
	good := remoting.NewRequest(remoting.PullMessage, map[string]string{"consumerGroup": "cg", "topic": "T"}, nil)
	if resp, err := w.ProcessRequest(t.Context(), nil, good); err != nil || resp.Code != remoting.Success || ran != 1 {
		t.Fatalf("good names: %v %v, processor ran %d times", resp, err, ran)
	}
	// Unwrapped: even a bad name reaches it (a code without header names has nothing to check).
	u := testGuard().Wrap(remoting.HeartBeat, nil, p)
	if resp, _ := u.ProcessRequest(t.Context(), nil, bad); resp.Code != remoting.Success || ran != 2 {
		t.Fatalf("unwrapped processor: %v, ran %d times", resp, ran)
	}
}

// TestFieldsTable: every listed field has a key and a remark name, and only send codes carry
// a send's target topic (its refusal is a send answer).
func TestFieldsTable(t *testing.T) {
	for code, fields := range requestNames {
		for _, f := range fields {
			if f.Key == "" || f.Field == "" || f.Kind > SendTopic {
				t.Errorf("code %d: field %+v", code, f)
			}
			if f.Kind == SendTopic && !isSendCode(code) {
				t.Errorf("code %d is not a send but lists %q as a send's topic", code, f.Key)
			}
		}
	}
	if _, ok := Fields(9999); ok {
		t.Error("an unknown code is listed")
	}
	if f, ok := Fields(remoting.HeartBeat); !ok || f != nil {
		t.Errorf("HEART_BEAT: %v %v, want listed without header names", f, ok)
	}
}

// TestCheckHeartbeat: a heartbeat's bad name is refused naming where in the body it is.
func TestCheckHeartbeat(t *testing.T) {
	sub := func(topic string) protocol.SubscriptionData { return protocol.SubscriptionData{Topic: topic} }
	cases := []struct {
		hb     protocol.HeartbeatData
		remark string
	}{
		{protocol.HeartbeatData{ProducerDataSet: []protocol.ProducerData{{GroupName: "pg"}, {GroupName: "p/g"}}},
			"producerDataSet[1].groupName: "},
		{protocol.HeartbeatData{ConsumerDataSet: []protocol.ConsumerData{{GroupName: strings.Repeat("g", names.MaxRetryGroupBytes+1)}}},
			"consumerDataSet[0].groupName: "},
		{protocol.HeartbeatData{ConsumerDataSet: []protocol.ConsumerData{{GroupName: "cg",
			SubscriptionDataSet: []protocol.SubscriptionData{sub("T"), sub("..")}}}},
			"consumerDataSet[0].subscriptionDataSet[1].topic: "},
		{protocol.HeartbeatData{ProducerDataSet: []protocol.ProducerData{{GroupName: "pg"}},
			ConsumerDataSet: []protocol.ConsumerData{{GroupName: "cg", SubscriptionDataSet: []protocol.SubscriptionData{sub("T")}}}}, ""},
	}
	for i, c := range cases {
		resp := CheckHeartbeat(&c.hb)
		if c.remark == "" {
			if resp != nil {
				t.Errorf("case %d refused: %q", i, resp.Remark)
			}
			continue
		}
		if resp == nil || resp.Code != remoting.SystemError || !strings.HasPrefix(resp.Remark, c.remark) {
			t.Errorf("case %d: %v, want SYSTEM_ERROR starting %q", i, resp, c.remark)
		}
	}
}

// TestCheckLock: a lock body's bad group or queue topic is a ResponseError naming it.
func TestCheckLock(t *testing.T) {
	mq := func(topic string) protocol.MessageQueue { return protocol.MessageQueue{Topic: topic, BrokerName: "b"} }
	cases := []struct {
		body   protocol.LockBatchRequestBody
		remark string
	}{
		{protocol.LockBatchRequestBody{ConsumerGroup: "c/g", MQSet: []protocol.MessageQueue{mq("T")}}, "consumerGroup: "},
		{protocol.LockBatchRequestBody{ConsumerGroup: "cg", MQSet: []protocol.MessageQueue{mq("T"), mq("T\xff")}}, "mqSet[1].topic: "},
		{protocol.LockBatchRequestBody{ConsumerGroup: "cg", MQSet: []protocol.MessageQueue{mq("T")}}, ""},
	}
	for i, c := range cases {
		err := CheckLock(&c.body)
		if c.remark == "" {
			if err != nil {
				t.Errorf("case %d refused: %v", i, err)
			}
			continue
		}
		var re *remoting.ResponseError
		if !errors.As(err, &re) || re.Code != remoting.SystemError || !strings.HasPrefix(re.Remark, c.remark) {
			t.Errorf("case %d: %v, want SYSTEM_ERROR starting %q", i, err, c.remark)
		}
	}
}

// TestCheckHeaderDoesNotAllocate: valid names cost a byte loop, whatever the kind.
func TestCheckHeaderDoesNotAllocate(t *testing.T) {
	g := testGuard()
	sendV2, _ := Fields(remoting.SendMessageV2)
	sendBack, _ := Fields(remoting.ConsumerSendMsgBack)
	send := &remoting.Command{ExtFields: map[string]string{"a": "pg", "b": "T", "c": "TBW102"}}
	back := &remoting.Command{ExtFields: map[string]string{"group": "cg", "originTopic": "T"}}
	n := testing.AllocsPerRun(100, func() {
		if g.checkHeader(send, sendV2, true) != nil || g.checkHeader(back, sendBack, false) != nil {
			t.Fatal("refused")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per check", n)
	}
}
