package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// A dead letter can be pulled from its DLQ topic: the topic is created read+write (6), as
// RocketMQ 4.9 creates it, and a consumer group may read it like any topic.
func TestDLQIsConsumable(t *testing.T) {
	tb := startTestBroker(t, nil)
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			group, reader := "dead_"+name, "ops_"+name
			dlq := names.DLQTopic(group)
			m := sbPut(t, tb, "T", 0, "poison", nil, 0)
			resp := sbSendBack(t, tr, tb, protocol.ConsumerSendMsgBackRequestHeader{Group: group, Offset: m.PhyOffset,
				DelayLevel: -1, MaxReconsumeTimes: 16})
			if resp.Code != remoting.Success {
				t.Fatalf("send back: %d %s", resp.Code, resp.Remark)
			}
			if tc, _ := tb.topics.Get(dlq); tc.Perm != route.PermReadWrite {
				t.Fatalf("DLQ perm %d, want %d", tc.Perm, route.PermReadWrite)
			}
			wiretest.Heartbeat(t, tr, tb.Addr, "ops@"+name, reader, wiretest.Sub(dlq, "*"))
			r := pull(t, tr, tb.Addr, pullHeader(reader, dlq, 0, 0))
			if r.code != remoting.Success || len(r.msgs) != 1 || string(r.msgs[0].Body) != "poison" {
				t.Fatalf("pull of the DLQ: %d %q %d msgs", r.code, r.remark, len(r.msgs))
			}
		})
	}
}

// A topics.json written by an earlier mq, whose dead-letter topics were write-only (perm 2),
// loads them read+write, says so once, bumps the data version so that name servers comparing
// versions take the change, and writes the file back corrected. A DLQ an operator set to
// another perm, and any other write-only topic, keep theirs.
func TestLoadMakesOldDLQReadable(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	topics := `{"topicConfigTable":{
		"%DLQ%old":{"topicName":"%DLQ%old","readQueueNums":1,"writeQueueNums":1,"perm":2,"topicFilterType":"SINGLE_TAG"},
		"%DLQ%older":{"topicName":"%DLQ%older","readQueueNums":1,"writeQueueNums":1,"perm":2,"topicFilterType":"SINGLE_TAG"},
		"%DLQ%closed":{"topicName":"%DLQ%closed","readQueueNums":1,"writeQueueNums":1,"perm":0,"topicFilterType":"SINGLE_TAG"},
		"Inbox":{"topicName":"Inbox","readQueueNums":1,"writeQueueNums":1,"perm":2,"topicFilterType":"SINGLE_TAG"}},
		"dataVersion":{"timestamp":1,"counter":7}}`
	if err := os.WriteFile(filepath.Join(dir, "config", "topics.json"), []byte(topics), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &countingWriter{}
	tb := startTestBrokerIn(t, dir, func(o *Options) {
		l := zerolog.New(zerolog.MultiLevelWriter(logs, zerolog.NewTestWriter(t))).Level(zerolog.WarnLevel)
		o.Logger = &l
	})
	want := map[string]int32{"%DLQ%old": route.PermReadWrite, "%DLQ%older": route.PermReadWrite,
		"%DLQ%closed": 0, "Inbox": route.PermWrite}
	for topic, perm := range want {
		if tc, ok := tb.topics.Get(topic); !ok || tc.Perm != perm {
			t.Errorf("%s loaded as %+v (exists %t), want perm %d", topic, tc, ok, perm)
		}
	}
	if v := tb.topics.Snapshot().DataVersion; v.Counter <= 7 {
		t.Errorf("data version %+v after the correction, want past the file's counter 7", v)
	}
	var lines []string
	for _, l := range logs.got() {
		if strings.Contains(l, "dead-letter topics") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `%DLQ%old`) || !strings.Contains(lines[0], `%DLQ%older`) ||
		strings.Contains(lines[0], "closed") {
		t.Errorf("want one warning naming both corrected topics, got %q", lines)
	}

	tb.Stop(t)
	written := readTopicsFile(t, dir)
	for topic, perm := range want {
		if written[topic].Perm != perm {
			t.Errorf("%s written back with perm %d, want %d", topic, written[topic].Perm, perm)
		}
	}
}
