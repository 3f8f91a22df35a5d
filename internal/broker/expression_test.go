package broker

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

func TestCheckClientConfig(t *testing.T) {
	tb := startTestBroker(t, nil)
	check := func(body []byte) *remoting.Command {
		return invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.CheckClientConfig, nil, body))
	}
	withType := func(exprType, expr string) []byte {
		b := protocol.CheckClientRequestBody{ClientID: "c@1", Group: "g",
			SubscriptionData: protocol.SubscriptionData{Topic: "T", SubString: expr, ExpressionType: exprType}}
		return b.Encode()
	}
	cases := []struct {
		name       string
		body       []byte
		wantCode   int32
		wantRemark string
	}{
		{"TAG", withType(protocol.ExpressionTag, "a || b"), remoting.Success, ""},
		{"empty type means TAG", withType("", "*"), remoting.Success, ""},
		{"no subscription", []byte(`{"clientId":"c@1","group":"g"}`), remoting.Success, ""},
		{"SQL92", withType(protocol.ExpressionSQL92, "a > 1 AND b IN ('x', 'y')"), remoting.Success, ""},
		{"SQL92 that does not compile", withType(protocol.ExpressionSQL92, "a > "), remoting.SubscriptionParseFailed, "*"},
		{"unknown type", withType("FOO", "x"), remoting.SystemError,
			"The broker does not support consumer to filter message by FOO"},
		// Java clients send codeSet as numbers.
		{"SQL92 from Java", []byte(`{"clientId":"c@1","group":"g","subscriptionData":{"classFilterMode":false,` +
			`"codeSet":[],"expressionType":"SQL92","subString":"a > 1","subVersion":1,"tagsSet":[],"topic":"T"}}`),
			remoting.Success, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := check(c.body)
			// "*": any remark but none (the compiler's message).
			remarkOK := resp.Remark == c.wantRemark || c.wantRemark == "*" && resp.Remark != ""
			if resp.Code != c.wantCode || !remarkOK {
				t.Errorf("code %d remark %q, want %d %q", resp.Code, resp.Remark, c.wantCode, c.wantRemark)
			}
		})
	}
	if resp := check([]byte("{")); resp.Code != remoting.SystemError {
		t.Errorf("bad body: code %d", resp.Code)
	}
}

// putWithProperty stores n messages in topic's queue 0 with tag and property a = 0..n-1 (and
// b = "x" for even a, "y" for odd).
func putWithProperty(t *testing.T, tb *testBroker, topic string, n int, tag string) {
	t.Helper()
	before := tb.Store().MaxOffsetInQueue(topic, 0)
	for i := range n {
		props := map[string]string{message.PropertyUniqKey: fmt.Sprintf("u-%d", i), message.PropertyTags: tag,
			"a": strconv.Itoa(i), "b": map[bool]string{true: "x", false: "y"}[i%2 == 0]}
		m := &storage.Message{Topic: topic, QueueID: 0, Body: []byte(fmt.Sprintf("m-%d", i)),
			Properties: message.MarshalProperties(props), BornTimestamp: time.Now().UnixMilli(),
			BornHost: consumeTestBornHost, StoreHost: tb.storeHost}
		if _, err := tb.Store().PutMessage(m); err != nil {
			t.Fatalf("put: %v", err)
		}
	}
	eventually(t, "messages dispatched", func() bool { return tb.Store().MaxOffsetInQueue(topic, 0) >= before+int64(n) })
}

// TestPullExpressions: a pull filtered by SQL92 (from its header or from a heartbeat) delivers
// exactly the messages whose properties make the expression true; an expression that does not
// compile, or a type the broker cannot evaluate, is answered as RocketMQ 4.9 answers it and
// delivers nothing, though the queue has messages and a TAG pull of it succeeds.
func TestPullExpressions(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 1)
	putWithProperty(t, tb, "T", 6, "tagA")
	const notExist = "The broker's consumer filter data is not exist!Your expression may be wrong!"
	all := []string{"m-0", "m-1", "m-2", "m-3", "m-4", "m-5"}
	cases := []struct {
		name       string
		heartbeat  bool // the subscription comes from a heartbeat, else from the pull's header
		exprType   string
		expr       string
		wantCode   int32
		wantRemark string // "*": any non-empty remark
		want       []string
	}{
		{"header SQL92", false, protocol.ExpressionSQL92, "a > 2", remoting.Success, "", []string{"m-3", "m-4", "m-5"}},
		{"heartbeat SQL92", true, protocol.ExpressionSQL92, "b = 'x' AND TAGS = 'tagA'", remoting.Success, "", []string{"m-0", "m-2", "m-4"}},
		// RocketMQ's answer when the messages read matched nothing: the client pulls again at once.
		{"heartbeat SQL92 matching nothing", true, protocol.ExpressionSQL92, "c IS NOT NULL", remoting.PullRetryImmediately,
			"NO_MATCHED_MESSAGE", nil},
		{"header SQL92 that does not compile", false, protocol.ExpressionSQL92, "a >", remoting.SubscriptionParseFailed, "*", nil},
		{"header SQL92 without expression", false, protocol.ExpressionSQL92, "", remoting.SubscriptionParseFailed,
			"parse the consumer's subscription failed", nil},
		{"header unknown type", false, "FOO", "x", remoting.SystemError,
			"The broker does not support consumer to filter message by FOO", nil},
		{"heartbeat SQL92 that does not compile", true, protocol.ExpressionSQL92, "a >", remoting.FilterDataNotExist, notExist, nil},
		{"heartbeat SQL92 without expression", true, protocol.ExpressionSQL92, "", remoting.FilterDataNotExist, notExist, nil},
		{"heartbeat unknown type", true, "FOO", "x", remoting.FilterDataNotExist, notExist, nil},
		{"header TAG", false, protocol.ExpressionTag, "tagA", remoting.Success, "", all},
		{"heartbeat TAG", true, protocol.ExpressionTag, "tagA", remoting.Success, "", all},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			group := fmt.Sprintf("g%d", i)
			h := pullHeader(group, "T", 0, 0)
			h.SysFlag = 0
			if c.heartbeat {
				s := wiretest.Sub("T", c.expr)
				if c.exprType != protocol.ExpressionTag {
					s = protocol.SubscriptionData{Topic: "T", SubString: c.expr, TagsSet: []string{},
						CodeSet: protocol.TagCodes{}, SubVersion: s.SubVersion, ExpressionType: c.exprType}
				}
				// RocketMQ 4.9 registers any subscription: the heartbeat succeeds.
				wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@1", group, s)
			} else {
				h.SysFlag, h.Subscription, h.ExpressionType = protocol.PullFlagSubscription, c.expr, c.exprType
			}
			r := pull(t, tb.TCP, tb.Addr, h)
			remarkOK := c.wantCode == remoting.Success || r.remark == c.wantRemark || c.wantRemark == "*" && r.remark != ""
			if r.code != c.wantCode || !remarkOK {
				t.Fatalf("code %d remark %q, want %d %q", r.code, r.remark, c.wantCode, c.wantRemark)
			}
			var got []string
			for _, m := range r.msgs {
				got = append(got, string(m.Body))
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("delivered %v, want %v", got, c.want)
			}
		})
	}
}
