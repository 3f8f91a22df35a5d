package metrics

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/admin"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/broker/stats"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	dto "github.com/prometheus/client_model/go"
)

// startMetrics is a master with its statistics, and metrics over it.
func startMetrics(t *testing.T) (*brokertest.Broker, *Metrics) {
	t.Helper()
	tb := brokertest.Start(t, brokertest.Config{Attach: func(b *broker.Broker) error {
		st := stats.New(b)
		b.Attach(st)
		// Topic and group administration, which the tests use to set up, is the admin service's.
		ad, err := admin.New(b, admin.Deps{Stats: st})
		if err != nil {
			return err
		}
		b.Attach(ad)
		return nil
	}})
	m := New(Sources{Broker: func() *broker.Broker { return tb.Broker },
		Listeners: []Listener{{Role: "broker", Conns: func() int { return 1 }}}})
	return tb, m
}

// sample is one series: its labels and value.
type sample struct {
	labels map[string]string
	value  float64
}

func gather(t *testing.T, m *Metrics) map[string][]sample {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string][]sample{}
	for _, f := range fams {
		for _, s := range f.Metric {
			l := map[string]string{}
			for _, p := range s.Label {
				l[p.GetName()] = p.GetValue()
			}
			out[f.GetName()] = append(out[f.GetName()], sample{l, metricValue(s)})
		}
	}
	return out
}

func metricValue(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.Counter.GetValue()
	case s.Gauge != nil:
		return s.Gauge.GetValue()
	case s.Histogram != nil:
		return float64(s.Histogram.GetSampleCount())
	}
	return math.NaN()
}

// find returns the series of name whose labels include want.
func find(got map[string][]sample, name string, want map[string]string) []sample {
	var out []sample
next:
	for _, s := range got[name] {
		for k, v := range want {
			if s.labels[k] != v {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

func one(t *testing.T, got map[string][]sample, name string, want map[string]string) float64 {
	t.Helper()
	s := find(got, name, want)
	if len(s) != 1 {
		t.Fatalf("%s%v: %d series %v", name, want, len(s), s)
	}
	return s[0].value
}

// TestBrokerSeriesNameTheirBroker: every broker series carries the broker's id and role, busy
// counters exist at 0 before any rejection, and the exporter's series read a group's backlog,
// offsets and latency; a deleted group's series go.
func TestBrokerSeriesNameTheirBroker(t *testing.T) {
	tb, m := startMetrics(t)
	const topic, group = "ExpTopic", "exp-group"
	wiretest.CreateTopic(t, tb.TCP, tb.Addr, topic, 1)
	if err := tb.Groups().Update(broker.NewSubscriptionGroupConfig(group)); err != nil {
		t.Fatal(err)
	}
	wiretest.PutMsgs(t, tb.Store(), tb.Messages().StoreHost(), topic, 0, 4, "", "e")
	tb.Offsets().Commit(group, topic, 0, 1)

	got := gather(t, m)
	for _, code := range []string{"SEND_MESSAGE", "SEND_MESSAGE_V2", "PULL_MESSAGE", "HEART_BEAT"} {
		if v := one(t, got, "mq_busy_rejections_total", map[string]string{"request_code": code}); v != 0 {
			t.Errorf("busy %s = %v before any rejection", code, v)
		}
	}
	if len(find(got, "mq_busy_rejections_total", map[string]string{"request_code": "GET_ROUTEINFO_BY_TOPIC"})) != 0 {
		t.Error("a broker-only node's busy counters name a name server code")
	}
	for name, series := range got {
		if !strings.HasPrefix(name, "rocketmq_") || name == "rocketmq_rpc_latency" {
			continue
		}
		for _, s := range series {
			if s.labels["broker_id"] != "0" || s.labels["role"] != "master" {
				t.Fatalf("%s%v does not name the master", name, s.labels)
			}
		}
	}
	exp := map[string]string{"cluster": tb.Options().Broker.ClusterName, "broker": tb.Options().Broker.Name, "group": group, "topic": topic}
	if v := one(t, got, "rocketmq_group_diff", exp); v != 3 {
		t.Errorf("group diff %v, want 3", v)
	}
	if v := one(t, got, "rocketmq_consumer_offset", exp); v != 1 {
		t.Errorf("consumer offset %v, want 1", v)
	}
	if v := one(t, got, "rocketmq_group_get_latency_by_storetime", exp); v < 0 {
		t.Errorf("latency %v", v)
	}
	if v := one(t, got, "rocketmq_producer_offset", map[string]string{"topic": topic}); v != 4 {
		t.Errorf("producer offset %v, want 4", v)
	}
	if v := one(t, got, "rocketmq_brokeruntime_commitlog_maxoffset", map[string]string{"brokerIP": tb.Addr}); v != float64(tb.Store().MaxPhyOffset()) {
		t.Errorf("commitlog max offset %v, want %d", v, tb.Store().MaxPhyOffset())
	}
	for _, what := range []string{"group_topics", "queues", "store_reads", "clients", "client_topics"} {
		if v := one(t, got, "mq_metrics_left_out", map[string]string{"what": what}); v != 0 {
			t.Errorf("left out %s = %v", what, v)
		}
	}

	tb.Groups().Delete(group)
	got = gather(t, m)
	for name, series := range got {
		for _, s := range series {
			if s.labels["group"] == group || s.labels["consumer_group"] == group {
				t.Errorf("deleted group's %s%v still exported", name, s.labels)
			}
		}
	}
}

// consumerClient is a raw remoting client registered as a consumer of group, answering
// GET_CONSUMER_RUNNING_INFO with answer (nil: never, until the test ends).
func consumerClient(t *testing.T, tb *brokertest.Broker, clientID, group string, subs []protocol.SubscriptionData,
	answer func() *remoting.Command) *atomic.Int32 {
	t.Helper()
	c := wiretest.NewTCPClient(t)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	asked := new(atomic.Int32)
	c.RegisterProcessor(remoting.GetConsumerRunningInfo, remoting.ProcessorFunc(func(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		asked.Add(1)
		var h protocol.GetConsumerRunningInfoRequestHeader
		if err := h.Decode(req.ExtFields); err != nil || h.ConsumerGroup != group || h.ClientID != clientID {
			t.Errorf("running info asked with %v (%v)", req.ExtFields, err)
		}
		if answer == nil {
			<-stop
			return remoting.NewResponse(remoting.SystemError, "gone"), nil
		}
		return answer(), nil
	}))
	wiretest.Heartbeat(t, c, tb.Addr, clientID, group, subs...)
	return asked
}

func runningInfo(t *testing.T, status map[string]protocol.ConsumeStatus) *remoting.Command {
	t.Helper()
	body, err := protocol.EncodeConsumerRunningInfo(&protocol.ConsumerRunningInfo{StatusTable: status})
	if err != nil {
		t.Fatal(err)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp
}

// TestConsumerRatesFromRunningInfo: a master asks its consumers for their running info and
// exports the figures of the topics their group subscribes to; consumers that never answer,
// answer too much, garbage or figures no consumer measures cost the round its timeout and
// nothing else; answers are kept for the period; a deleted group's figures go at once.
func TestConsumerRatesFromRunningInfo(t *testing.T) {
	tb, m := startMetrics(t)
	const topic, group = "RateTopic", "rate-group"
	wiretest.CreateTopic(t, tb.TCP, tb.Addr, topic, 1)
	retry := names.RetryTopic(group)
	honest := consumerClient(t, tb, "honest@1", group, []protocol.SubscriptionData{wiretest.Sub(topic, "*")}, func() *remoting.Command {
		return runningInfo(t, map[string]protocol.ConsumeStatus{
			topic:         {PullRT: 3, PullTPS: 40, ConsumeRT: 12.5, ConsumeOKTPS: 39, ConsumeFailedTPS: 1, ConsumeFailedMsgs: 60},
			retry:         {ConsumeRT: 2, ConsumeFailedMsgs: 1},
			"OtherTopic":  {ConsumeRT: 99}, // not subscribed here: left out
			"%DLQ%x|$bad": {ConsumeRT: 99},
		})
	})
	consumerClient(t, tb, "silent@2", "silent-group", []protocol.SubscriptionData{wiretest.Sub(topic, "*")}, nil)
	consumerClient(t, tb, "huge@3", "huge-group", []protocol.SubscriptionData{wiretest.Sub(topic, "*")}, func() *remoting.Command {
		resp := remoting.NewResponse(remoting.Success, "")
		resp.Body = []byte(`{"statusTable":{"RateTopic":{"consumeRT":1}},"jstack":"` + strings.Repeat("x", maxRunningInfoBytes) + `"}`)
		return resp
	})
	consumerClient(t, tb, "garbage@4", "garbage-group", []protocol.SubscriptionData{wiretest.Sub(topic, "*")}, func() *remoting.Command {
		resp := remoting.NewResponse(remoting.Success, "")
		resp.Body = []byte(`{"statusTable":{"RateTopic":{"consumeRT":`)
		return resp
	})
	consumerClient(t, tb, "liar@5", "liar-group", []protocol.SubscriptionData{wiretest.Sub(topic, "*")}, func() *remoting.Command {
		resp := remoting.NewResponse(remoting.Success, "")
		resp.Body = []byte(`{"statusTable":{"RateTopic":{"consumeRT":-1,"pullTPS":1e400}}}`)
		return resp
	})
	consumerClient(t, tb, "refuses@6", "refusing-group", []protocol.SubscriptionData{wiretest.Sub(topic, "*")}, func() *remoting.Command {
		return remoting.NewResponse(remoting.SystemError, "no")
	})
	col := collectorOf(t, m)
	col.clients.timeout = 500 * time.Millisecond

	got := gather(t, m)
	l := map[string]string{"clientId": "honest@1", "group": group, "topic": topic, "role": "master", "broker_id": "0"}
	for name, want := range map[string]float64{"rocketmq_client_consume_rt": 12.5, "rocketmq_client_consume_ok_msg_tps": 39,
		"rocketmq_client_consume_fail_msg_tps": 1, "rocketmq_client_consume_fail_msg_count": 60,
		"rocketmq_client_consumer_pull_rt": 3, "rocketmq_client_consumer_pull_tps": 40} {
		if v := one(t, got, name, l); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	if v := one(t, got, "rocketmq_client_consume_fail_msg_count", map[string]string{"clientId": "honest@1", "topic": retry}); v != 1 {
		t.Errorf("retry topic's failures %v, want 1", v)
	}
	for _, s := range got["rocketmq_client_consume_rt"] {
		if s.labels["clientId"] != "honest@1" || (s.labels["topic"] != topic && s.labels["topic"] != retry) {
			t.Errorf("exported %v", s.labels)
		}
	}
	if honest.Load() != 1 {
		t.Fatalf("honest consumer asked %d times, want 1", honest.Load())
	}

	// Within the period the answers are reused, not asked again.
	gather(t, m)
	if honest.Load() != 1 {
		t.Fatalf("asked again within the period: %d", honest.Load())
	}
	col.clients.period = 0
	gather(t, m)
	if honest.Load() != 2 {
		t.Fatalf("asked %d times after the period, want 2", honest.Load())
	}

	col.clients.period = time.Hour
	del := protocol.DeleteTopicRequestHeader{Topic: topic}
	if resp := brokertest.Invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.DeleteTopicInBroker, remoting.EncodeHeader(&del), nil)); resp.Code != remoting.Success {
		t.Fatalf("delete topic: %d %q", resp.Code, resp.Remark)
	}
	got = gather(t, m)
	if s := find(got, "rocketmq_client_consume_rt", map[string]string{"topic": topic}); len(s) != 0 {
		t.Fatalf("a deleted topic's consumer figures still exported: %v", s)
	}
	if s := find(got, "rocketmq_client_consume_rt", map[string]string{"topic": retry}); len(s) != 1 {
		t.Fatalf("the retry topic's figures went with another topic: %v", got["rocketmq_client_consume_rt"])
	}
	tb.Groups().Delete(group)
	if s := find(gather(t, m), "rocketmq_client_consume_rt", map[string]string{"group": group}); len(s) != 0 {
		t.Fatalf("a deleted group's consumer figures still exported: %v", s)
	}
}

// TestClientsAskedAreCapped: past maxClients a round asks nobody more and says how many it left.
func TestClientsAskedAreCapped(t *testing.T) {
	tb, m := startMetrics(t)
	const topic = "CapClients"
	wiretest.CreateTopic(t, tb.TCP, tb.Addr, topic, 1)
	var asked []*atomic.Int32
	for i, id := range []string{"c@1", "c@2", "c@3"} {
		g := "cap-group-" + string(rune('a'+i))
		asked = append(asked, consumerClient(t, tb, id, g, []protocol.SubscriptionData{wiretest.Sub(topic, "*")}, func() *remoting.Command {
			return runningInfo(t, map[string]protocol.ConsumeStatus{topic: {ConsumeRT: 1}})
		}))
	}
	collectorOf(t, m).clients.maxClients = 2
	got := gather(t, m)
	if v := one(t, got, "mq_metrics_left_out", map[string]string{"what": "clients"}); v != 1 {
		t.Fatalf("left out %v clients, want 1", v)
	}
	if n := len(got["rocketmq_client_consume_rt"]); n != 2 {
		t.Fatalf("%d consumers exported, want 2", n)
	}
	if asked[0].Load() != 1 || asked[1].Load() != 1 || asked[2].Load() != 0 {
		t.Fatalf("asked %d %d %d, want the first two groups' consumers once", asked[0].Load(), asked[1].Load(), asked[2].Load())
	}

	// Every consumer asked, but only two (consumer, topic) figures kept: the first groups'.
	cs := collectorOf(t, m).clients
	cs.maxClients, cs.maxRows, cs.period = 10, 2, 0
	got = gather(t, m)
	if v := one(t, got, "mq_metrics_left_out", map[string]string{"what": "client_topics"}); v != 1 {
		t.Fatalf("left out %v figures, want 1", v)
	}
	if v := one(t, got, "mq_metrics_left_out", map[string]string{"what": "clients"}); v != 0 {
		t.Fatalf("left out %v clients, want 0", v)
	}
	if s := got["rocketmq_client_consume_rt"]; len(s) != 2 || s[0].labels["group"] == "cap-group-c" || s[1].labels["group"] == "cap-group-c" {
		t.Fatalf("kept %v, want cap-group-a's and cap-group-b's", s)
	}
	if asked[2].Load() != 1 {
		t.Fatalf("the third consumer asked %d times, want 1", asked[2].Load())
	}
}

// collectorOf finds the node collector registered in m.
func collectorOf(t *testing.T, m *Metrics) *nodeCollector {
	t.Helper()
	if m.node == nil {
		t.Fatal("no node collector")
	}
	return m.node
}
