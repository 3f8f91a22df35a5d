package stats

import (
	"fmt"
	"testing"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

func startWithStats(t testing.TB) (*brokertest.Broker, *Service) {
	t.Helper()
	var s *Service
	tb := brokertest.Start(t, brokertest.Config{Attach: func(b *broker.Broker) error {
		s = New(b)
		b.Attach(s)
		return nil
	}})
	if Of(tb.Broker) != s {
		t.Fatal("Of does not find the attached service")
	}
	return tb, s
}

func topicPuts(s *Service, topic string) (msgs, bytes int64) {
	for _, p := range s.Metrics().Puts {
		if p.Topic == topic {
			return p.Msgs, p.Bytes
		}
	}
	return 0, 0
}

// TestCountsBatchesAndPulls: the core's send path counts every message of a batch under its
// topic, the pull path counts what a group got, and deleting the topic forgets its counters.
func TestCountsBatchesAndPulls(t *testing.T) {
	tb, s := startWithStats(t)
	// The topic admin is the admin service's, which imports this package: the core's view
	// creates and deletes the topic here.
	if err := tb.Topics().Update(broker.TopicConfig{TopicName: "Batch", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}, nil); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	var body []byte
	for i := range 3 {
		body = message.AppendBatchElement(body, 0, []byte(fmt.Sprintf("m%d", i)),
			message.MarshalProperties(map[string]string{"TAGS": "t"}))
	}
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "Batch", DefaultTopic: names.TopicAutoCreate,
		DefaultTopicQueueNums: 4, QueueID: 0, Batch: true}
	ext := map[string]string{}
	(*protocol.SendMessageRequestHeaderV2)(&h).Encode(ext)
	if resp := brokertest.Invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.SendBatchMessage, ext, body)); resp.Code != remoting.Success {
		t.Fatalf("batch: %d %q", resp.Code, resp.Remark)
	}
	if n, size := topicPuts(s, "Batch"); n != 3 || size <= int64(len(body)) {
		t.Fatalf("counted %d puts of %d bytes, want 3 stored records", n, size)
	}
	if put, _, _, _, _, _ := s.DayMarks(s.Started()); put != 3 {
		t.Errorf("put total %d, want 3", put)
	}

	brokertest.Eventually(t, "dispatch", func() bool { return tb.Store().MaxOffsetInQueue("Batch", 0) == 3 })
	hb := protocol.HeartbeatData{ClientID: "c1", ProducerDataSet: []protocol.ProducerData{},
		ConsumerDataSet: []protocol.ConsumerData{{GroupName: "cg", ConsumeType: protocol.ConsumePassively,
			MessageModel: protocol.Clustering, ConsumeFromWhere: protocol.ConsumeFromLastOffset,
			SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "Batch", SubString: "*", TagsSet: []string{},
				CodeSet: protocol.TagCodes{}, SubVersion: 1, ExpressionType: protocol.ExpressionTag}}}}}
	if resp := brokertest.Invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.HeartBeat, map[string]string{}, hb.Encode())); resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %d %q", resp.Code, resp.Remark)
	}
	pull := protocol.PullMessageRequestHeader{ConsumerGroup: "cg", Topic: "Batch", QueueID: 0, QueueOffset: 0,
		MaxMsgNums: 32, SysFlag: 0, SubVersion: 1, Subscription: "*", ExpressionType: "TAG"}
	if resp := brokertest.Invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.PullMessage, remoting.EncodeHeader(&pull), nil)); resp.Code != remoting.Success {
		t.Fatalf("pull: %d %q", resp.Code, resp.Remark)
	}
	var got int64
	for _, g := range s.Metrics().Gets {
		if g.Topic == "Batch" && g.Group == "cg" {
			got = g.Msgs
		}
	}
	if got != 3 {
		t.Errorf("counted %d messages got by cg, want 3", got)
	}

	if _, err := tb.Topics().Delete("Batch"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if n, _ := topicPuts(s, "Batch"); n != 0 {
		t.Errorf("a deleted topic keeps %d counted puts", n)
	}
	for _, g := range s.Metrics().Gets {
		if g.Topic == "Batch" {
			t.Errorf("a deleted topic keeps its gets: %+v", g)
		}
	}
}

// TestMetricsReadTheCore: a scrape names the broker and reads the core's tables; offsets of a
// group the broker does not have are not reported.
func TestMetricsReadTheCore(t *testing.T) {
	tb, s := startWithStats(t)
	tb.Offsets().Commit("cg", names.TopicSelfTest, 0, 0)
	if m := s.Metrics(); len(m.Lag) != 0 || len(m.GroupTopics) != 0 {
		t.Fatalf("a group without a subscription config reported: lag %+v, groups %+v", m.Lag, m.GroupTopics)
	}
	if err := tb.Groups().Update(broker.NewSubscriptionGroupConfig("cg")); err != nil {
		t.Fatal(err)
	}
	m := s.Metrics()
	if m.Cluster != config.DefaultClusterName || m.BrokerName != config.DefaultBrokerName || m.Topics != tb.Topics().Count() ||
		m.Topics == 0 || m.Groups != len(tb.Groups().All().SubscriptionGroupTable) || m.Store.MaxPhyOffset != tb.Store().MaxPhyOffset() ||
		!m.Master || m.BrokerID != 0 || m.Addr != tb.Addr {
		t.Fatalf("metrics %+v", m)
	}
	tc, _ := tb.Topics().Get(names.TopicSelfTest)
	if len(m.Lag) != int(tc.ReadQueueNums) || m.Lag[0].Group != "cg" || m.Lag[0].Topic != names.TopicSelfTest {
		t.Errorf("lag %+v, want one per read queue of %s (%d)", m.Lag, names.TopicSelfTest, tc.ReadQueueNums)
	}
	if len(m.GroupTopics) != 1 || m.GroupTopics[0] != (GroupTopic{Group: "cg", Topic: names.TopicSelfTest, LatencyKnown: true}) {
		t.Errorf("group topics %+v", m.GroupTopics)
	}
}
