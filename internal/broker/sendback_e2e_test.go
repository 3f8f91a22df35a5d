package broker

import (
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/names"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// A consumer that keeps failing, as the Go push consumer drives the broker: pull, send back,
// long-poll the retry topic until the delayed copy arrives, fail again, until the message lands
// in the dead-letter topic.
func TestSendBackConsumerCycle(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) {
		o.Timers.DelayLevels = []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond,
			40 * time.Millisecond, 50 * time.Millisecond}
	})
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			group, topic := "cyc_"+name, "CT_"+name
			retry := names.RetryTopic(group)
			addTopic(tb, topic, 1)
			wiretest.Heartbeat(t, tr, tb.Addr, "c@"+name, group, wiretest.Sub(topic, "*"), wiretest.Sub(retry, "*"))
			sbPut(t, tb, topic, 0, "payload", map[string]string{message.PropertyUniqKey: "UK", message.PropertyTags: "A"}, 0)
			r := pull(t, tr, tb.Addr, pullHeader(group, topic, 0, 0))
			if r.code != remoting.Success || len(r.msgs) != 1 {
				t.Fatalf("first pull: %d %q %d msgs", r.code, r.remark, len(r.msgs))
			}
			msg := r.msgs[0]
			const maxTimes = 2
			for i := range maxTimes {
				resp := sbSendBack(t, tr, tb, protocol.ConsumerSendMsgBackRequestHeader{Group: group,
					Offset: msg.PhysicalOffset, OriginMsgID: "UK", OriginTopic: topic, MaxReconsumeTimes: maxTimes,
					BrokerName: "broker-a"})
				if resp.Code != remoting.Success {
					t.Fatalf("send back %d: %d %q", i, resp.Code, resp.Remark)
				}
				// Parked until the schedule service delivers the copy.
				r = pull(t, tr, tb.Addr, pullHeader(group, retry, 0, int64(i)))
				if r.code != remoting.Success || len(r.msgs) != 1 {
					t.Fatalf("retry pull %d: %d %q %d msgs", i, r.code, r.remark, len(r.msgs))
				}
				msg = r.msgs[0]
				props := message.UnmarshalProperties(msg.Properties)
				if msg.ReconsumeTimes != int32(i+1) || string(msg.Body) != "payload" ||
					props[message.PropertyRetryTopic] != topic || props[message.PropertyOriginMessageID] != "UK" ||
					props[message.PropertyUniqKey] != "UK" {
					t.Fatalf("retry %d: reconsume %d body %q props %v", i, msg.ReconsumeTimes, msg.Body, props)
				}
			}
			resp := sbSendBack(t, tr, tb, protocol.ConsumerSendMsgBackRequestHeader{Group: group,
				Offset: msg.PhysicalOffset, OriginMsgID: "UK", OriginTopic: topic, MaxReconsumeTimes: maxTimes})
			if resp.Code != remoting.Success {
				t.Fatalf("last send back: %d %q", resp.Code, resp.Remark)
			}
			dead := sbRead(t, tb, names.DLQTopic(group), 0, 0)
			if dead.ReconsumeTimes != maxTimes+1 || dead.Props[message.PropertyRetryTopic] != topic {
				t.Errorf("dead letter: reconsume %d props %v", dead.ReconsumeTimes, dead.Props)
			}
			if n := tb.Store().MaxOffsetInQueue(retry, 0); n != maxTimes {
				t.Errorf("retry queue holds %d messages, want %d", n, maxTimes)
			}
		})
	}
}
