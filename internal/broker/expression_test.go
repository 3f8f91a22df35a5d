package broker

import (
	"testing"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

const sql92Refused = "The broker does not support consumer to filter message by SQL92"

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
		wantCode   int16
		wantRemark string
	}{
		{"TAG", withType(protocol.ExpressionTag, "a || b"), remoting.Success, ""},
		{"empty type means TAG", withType("", "*"), remoting.Success, ""},
		{"no subscription", []byte(`{"clientId":"c@1","group":"g"}`), remoting.Success, ""},
		{"SQL92", withType(protocol.ExpressionSQL92, "a > 1"), remoting.SystemError, sql92Refused},
		{"unknown type", withType("FOO", "x"), remoting.SystemError,
			"The broker does not support consumer to filter message by FOO"},
		// Java clients send codeSet as numbers.
		{"SQL92 from Java", []byte(`{"clientId":"c@1","group":"g","subscriptionData":{"classFilterMode":false,` +
			`"codeSet":[],"expressionType":"SQL92","subString":"a > 1","subVersion":1,"tagsSet":[],"topic":"T"}}`),
			remoting.SystemError, sql92Refused},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := check(c.body)
			if resp.Code != c.wantCode || resp.Remark != c.wantRemark {
				t.Errorf("code %d remark %q, want %d %q", resp.Code, resp.Remark, c.wantCode, c.wantRemark)
			}
		})
	}
	if resp := check([]byte("{")); resp.Code != remoting.SystemError {
		t.Errorf("bad body: code %d", resp.Code)
	}
}

// TestPullRefusesNonTagExpressions: a pull filtered by an expression the broker cannot evaluate
// is answered as RocketMQ 4.9 answers it with enablePropertyFilter off, and delivers nothing,
// though the queue has messages and a TAG pull of it succeeds.
func TestPullRefusesNonTagExpressions(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 1)
	putMsgs(t, tb, "T", 0, 3, "a", "m")
	const notExist = "The broker's consumer filter data is not exist!Your expression may be wrong!"
	cases := []struct {
		name       string
		heartbeat  bool // the subscription comes from a heartbeat, else from the pull's header
		exprType   string
		expr       string
		wantCode   int16
		wantRemark string
	}{
		{"header SQL92", false, protocol.ExpressionSQL92, "a > 1", remoting.SystemError, sql92Refused},
		{"header SQL92 without expression", false, protocol.ExpressionSQL92, "", remoting.SubscriptionParseFailed,
			"parse the consumer's subscription failed"},
		{"header unknown type", false, "FOO", "x", remoting.SystemError,
			"The broker does not support consumer to filter message by FOO"},
		{"heartbeat SQL92", true, protocol.ExpressionSQL92, "a > 1", remoting.SystemError, sql92Refused},
		{"heartbeat SQL92 without expression", true, protocol.ExpressionSQL92, "", remoting.FilterDataNotExist, notExist},
		{"heartbeat unknown type", true, "FOO", "x", remoting.FilterDataNotExist, notExist},
		{"header TAG", false, protocol.ExpressionTag, "a", remoting.Success, ""},
		{"heartbeat TAG", true, protocol.ExpressionTag, "a", remoting.Success, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := pullHeader("g", "T", 0, 0)
			h.SysFlag = 0
			if c.heartbeat {
				s := sub("T", c.expr)
				if c.exprType != protocol.ExpressionTag {
					s = protocol.SubscriptionData{Topic: "T", SubString: c.expr, TagsSet: []string{},
						CodeSet: protocol.TagCodes{}, SubVersion: s.SubVersion, ExpressionType: c.exprType}
				}
				// RocketMQ 4.9 registers any subscription: the heartbeat succeeds.
				heartbeat(t, tb.InProc, tb.Addr, "c@1", "g", s)
			} else {
				h.SysFlag, h.Subscription, h.ExpressionType = protocol.PullFlagSubscription, c.expr, c.exprType
			}
			r := pull(t, tb.TCP, tb.Addr, h)
			if r.code != c.wantCode || (c.wantCode != remoting.Success && r.remark != c.wantRemark) {
				t.Fatalf("code %d remark %q, want %d %q", r.code, r.remark, c.wantCode, c.wantRemark)
			}
			if wantN := map[bool]int{true: 3}[c.wantCode == remoting.Success]; len(r.msgs) != wantN {
				t.Errorf("%d messages delivered, want %d", len(r.msgs), wantN)
			}
		})
	}
}
