package broker

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/broker/tables"
	"github.com/mqgo/mq/remoting"
)

// createTopic sends UPDATE_AND_CREATE_TOPIC with an attributes modification.
func createTopic(t *testing.T, tr remoting.Transport, addr, topic, attrs string) *remoting.Command {
	t.Helper()
	h := goAdminCreate(topic)
	h.ReadQueueNums, h.WriteQueueNums, h.Attributes = 2, 2, attrs
	return invoke(t, tr, addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil))
}

func TestTopicAttributesAdmin(t *testing.T) {
	tb := startTestBroker(t, nil)
	for trName, tr := range tb.Transports() {
		t.Run(trName, func(t *testing.T) {
			topic := "Typed_" + trName
			wantOK(t, createTopic(t, tr, tb.Addr, topic, "+message.type=FIFO"))
			got := allTopicConfig(t, tr, tb.Addr).TopicConfigTable[topic].Attributes
			if diff := cmp.Diff(map[string]string{"message.type": "FIFO"}, got); diff != "" {
				t.Fatalf("attributes (-want +got):\n%s", diff)
			}
			// An update without attributes (a 4.x admin) keeps them.
			wantOK(t, createTopic(t, tr, tb.Addr, topic, ""))
			if got := allTopicConfig(t, tr, tb.Addr).TopicConfigTable[topic].Attributes["message.type"]; got != "FIFO" {
				t.Errorf("after an update without attributes: message.type %q", got)
			}
			wantOK(t, createTopic(t, tr, tb.Addr, topic, "+message.type=DELAY"))
			if got := allTopicConfig(t, tr, tb.Addr).TopicConfigTable[topic].Attributes["message.type"]; got != "DELAY" {
				t.Errorf("after a change: message.type %q", got)
			}

			for _, c := range []struct{ attrs, remark string }{
				{"+color=red", "unsupported key: color"},
				{"+message.type=FAST", "value is not in set"},
				{"message.type=FIFO", "add/alter attribute format is wrong"},
				{"+queue.type=SimpleCQ", "attempt to update an unchangeable attribute. key: queue.type"},
				{"-cleanup.policy", "attempt to delete a nonexistent key: cleanup.policy"},
				{"+reserve.time=60000", "unsupported key: reserve.time"},
				{"+" + strings.Repeat("x", 50000) + "=1", "unsupported key"},
			} {
				resp := createTopic(t, tr, tb.Addr, topic, c.attrs)
				if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, c.remark) || len(resp.Remark) > 300 {
					t.Errorf("%.30q: %d %.300q, want SYSTEM_ERROR with %q", c.attrs, resp.Code, resp.Remark, c.remark)
				}
			}
			resp := createTopic(t, tr, tb.Addr, topic, "+message.type=MIXED")
			if resp.Code != remoting.InvalidParameter || resp.Remark != "MIXED message type is not supported." {
				t.Errorf("MIXED: %d %q", resp.Code, resp.Remark)
			}
			// Refusals changed nothing.
			if got := allTopicConfig(t, tr, tb.Addr).TopicConfigTable[topic].Attributes; !cmp.Equal(got, map[string]string{"message.type": "DELAY"}) {
				t.Errorf("after refusals: %v", got)
			}
			// A new topic takes only additions.
			resp = createTopic(t, tr, tb.Addr, "New_"+trName, "-message.type")
			if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "only add attribute is supported while creating topic") {
				t.Errorf("create with a deletion: %d %q", resp.Code, resp.Remark)
			}
			if _, ok := tb.topics.Get("New_" + trName); ok {
				t.Errorf("a refused creation created the topic")
			}
			wantOK(t, createTopic(t, tr, tb.Addr, topic, "-message.type"))
			if got := allTopicConfig(t, tr, tb.Addr).TopicConfigTable[topic].Attributes; got != nil {
				t.Errorf("after deletion: %v", got)
			}
		})
	}
}

func TestTopicAttributesMixedEnabled(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Types.EnableMixedMessageType = true })
	wantOK(t, createTopic(t, tb.TCP, tb.Addr, "Mixed", "+message.type=MIXED"))
	// A MIXED topic takes every type.
	for _, props := range []map[string]string{nil, {"DELAY": "3"}, {"__SHARDINGKEY": "g1"}} {
		sh := wiretest.SendHeader("Mixed", 0, props)
		wiretest.WantSendOK(t, invoke(t, tb.TCP, tb.Addr, wiretest.SendRequest(remoting.SendMessage, &sh, []byte("x"), remoting.SerializeJSON)))
	}
}

func TestTopicAttributesSurviveRestart(t *testing.T) {
	tb := startTestBroker(t, nil)
	wantOK(t, createTopic(t, tb.TCP, tb.Addr, "Kept", "+message.type=TRANSACTION"))
	wantOK(t, createTopic(t, tb.TCP, tb.Addr, "Journal", "+message.type=FIFO"))
	dir := tb.Dir
	tb.Stop(t)
	if got := readTopicsFile(t, dir)["Kept"].Attributes; got["message.type"] != "TRANSACTION" {
		t.Errorf("topics.json: Kept attributes %v", got)
	}
	tb2 := startTestBrokerIn(t, dir, nil)
	for topic, want := range map[string]string{"Kept": "TRANSACTION", "Journal": "FIFO"} {
		tc, ok := tb2.topics.Get(topic)
		if typ, set := tables.MessageType(tc); !ok || !set || typ != want {
			t.Errorf("%s after restart: %v %s %t, want %s", topic, ok, typ, set, want)
		}
	}
}

// A send whose type is not its topic's message.type is refused with MESSAGE_ILLEGAL and
// the remark RocketMQ 5 gives; a topic without the attribute takes everything.
func TestSendMessageTypeCheck(t *testing.T) {
	tb := startTestBroker(t, nil)
	for _, c := range []struct{ topic, attrs string }{{"Fifo", "+message.type=FIFO"}, {"Delay", "+message.type=DELAY"},
		{"Tx", "+message.type=TRANSACTION"}, {"Normal", "+message.type=NORMAL"}, {"Plain", ""},
		{"Unspecified", "+message.type=UNSPECIFIED"}} {
		wantOK(t, createTopic(t, tb.TCP, tb.Addr, c.topic, c.attrs))
	}
	kinds := map[string]map[string]string{
		"NORMAL":      nil,
		"FIFO":        {"__SHARDINGKEY": "group-1"},
		"DELAY":       {"DELAY": "2"},
		"TIMER":       {"TIMER_DELAY_SEC": "5"},
		"TRANSACTION": {"TRAN_MSG": "true", "PGROUP": "pg"},
	}
	accepts := map[string][]string{
		"Fifo":        {"FIFO"},
		"Delay":       {"DELAY", "TIMER"},
		"Tx":          {"TRANSACTION"},
		"Normal":      {"NORMAL"},
		"Plain":       {"NORMAL", "FIFO", "DELAY", "TIMER", "TRANSACTION"},
		"Unspecified": nil,
	}
	typeOf := map[string]string{"NORMAL": "NORMAL", "FIFO": "FIFO", "DELAY": "DELAY", "TIMER": "DELAY", "TRANSACTION": "TRANSACTION"}
	topicType := map[string]string{"Fifo": "FIFO", "Delay": "DELAY", "Tx": "TRANSACTION", "Normal": "NORMAL", "Unspecified": "UNSPECIFIED"}
	for name, tr := range tb.Transports() {
		for topic, ok := range accepts {
			for kind, props := range kinds {
				sh := wiretest.SendHeader(topic, 0, props)
				if kind == "TRANSACTION" {
					sh.SysFlag = 4 // TRANSACTION_PREPARED_TYPE
				}
				for _, code := range []int32{remoting.SendMessage, remoting.SendMessageV2} {
					resp := invoke(t, tr, tb.Addr, wiretest.SendRequest(code, &sh, []byte("x"), remoting.SerializeJSON))
					want := contains(ok, kind)
					if want && resp.Code != remoting.Success {
						t.Errorf("%s: %s message to %s refused: %d %q", name, kind, topic, resp.Code, resp.Remark)
					}
					if !want {
						remark := "TopicMessageType validate failed, the expected type is " + topicType[topic] +
							", but actual type is " + typeOf[kind]
						if resp.Code != remoting.MessageIllegal || resp.Remark != remark {
							t.Errorf("%s: %s message to %s: %d %q, want MESSAGE_ILLEGAL %q", name, kind, topic, resp.Code, resp.Remark, remark)
						}
					}
				}
			}
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestSendMessageTypeCheckDisabled(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Types.DisableTopicMessageTypeCheck = true })
	wantOK(t, createTopic(t, tb.TCP, tb.Addr, "Fifo", "+message.type=FIFO"))
	sh := wiretest.SendHeader("Fifo", 0, map[string]string{"DELAY": "2"})
	wiretest.WantSendOK(t, invoke(t, tb.TCP, tb.Addr, wiretest.SendRequest(remoting.SendMessage, &sh, []byte("x"), remoting.SerializeJSON)))
}
