package mq_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/metrics"
	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	dto "github.com/prometheus/client_model/go"
)

// scrapeNode scrapes a node's /metrics over HTTP and parses it with Prometheus' parser.
func scrapeNode(t *testing.T, n *mq.Node) map[string]*dto.MetricFamily {
	t.Helper()
	web := httptest.NewServer(n.Handler())
	defer web.Close()
	return scrape(t, web.URL+"/metrics")
}

// series lists the label sets of family name whose labels include want.
func series(fams map[string]*dto.MetricFamily, name string, want map[string]string) []map[string]string {
	f, ok := fams[name]
	if !ok {
		return nil
	}
	var out []map[string]string
next:
	for _, m := range f.Metric {
		l := map[string]string{}
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		for k, v := range want {
			if l[k] != v {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

// TestMetricsExporterParity runs what rocketmq-exporter's alerts watch on a master and its
// slave, scraped over HTTP: a consumer group that fails one message once (a retry) and one for
// good (a dead letter), then stops while messages keep coming (its backlog and latency grow),
// then is deleted (its series go); the master and the slave export different broker labels, and
// the master names its slave's replication lag by host, the same series across a reconnect.
func TestMetricsExporterParity(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{SlavesPerGroup: 1, Options: func(o *mq.Options) {
		o.HTTP.Metrics = metrics.Prometheus()
		o.HA.SlaveSyncPeriod = 100 * time.Millisecond
	}})
	const topic, group = "ParityTopic", "parity-group"
	retryTopic, dlqTopic := consumer.RetryTopic(group), "%DLQ%"+group
	c.CreateTopic(topic, 2)
	p := c.NewProducer()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	send := func(bodies ...string) {
		t.Helper()
		for _, b := range bodies {
			if _, err := p.SendSync(ctx, producer.NewMessage(topic, []byte(b))); err != nil {
				t.Fatal(err)
			}
		}
	}

	var mu sync.Mutex
	calls := map[string]int{}
	pc := c.NewPushConsumer(consumer.WithGroup(group), consumer.WithMaxReconsumeTimes(1))
	if err := pc.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			calls[string(m.Body)]++
			if b := string(m.Body); b == "fail-always" || b == "fail-once" && m.ReconsumeTimes == 0 {
				return consumer.ConsumeRetryLater, nil
			}
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	send("ok-1", "ok-2", "fail-once", "fail-always", "ok-3")
	// fail-always fails from the topic and from the retry topic (its one reconsume), then goes
	// to the dead-letter topic; fail-once succeeds from the retry topic.
	mqtest.Eventually(t, "every message consumed or failed for good", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return calls["ok-1"] > 0 && calls["ok-2"] > 0 && calls["ok-3"] > 0 && calls["fail-once"] >= 2 && calls["fail-always"] >= 2
	})

	master, slave := c.Master(0), c.Slaves()[0]
	exp := map[string]string{"cluster": mq.DefaultClusterName, "broker": master.BrokerName, "broker_id": "0", "role": "master", "group": group}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range exp {
			out[k] = v
		}
		for k, v := range extra {
			if v == "" {
				delete(out, k) // a label the family does not have
			} else {
				out[k] = v
			}
		}
		return out
	}
	// The consumers' figures are asked for by the first scrape, after the failures above.
	fams := scrapeNode(t, master.Current())
	if v, _ := value(fams, "rocketmq_client_consume_fail_msg_count", with(nil)); v < 2 {
		t.Errorf("consumer failures in the last hour %v, want at least 2 (fail-once, fail-always twice)", v)
	}
	if len(series(fams, "rocketmq_client_consume_rt", with(map[string]string{"topic": topic}))) != 1 {
		t.Errorf("no consume RT of %s: %v", topic, series(fams, "rocketmq_client_consume_rt", nil))
	}
	mqtest.Eventually(t, "the dead letter and the consumed retry in the metrics", func() bool {
		fams = scrapeNode(t, master.Current())
		dlq, _ := value(fams, "rocketmq_topic_dlq_offset", with(nil))
		dlqDiff, _ := value(fams, "rocketmq_group_dlqdiff", with(map[string]string{"topic": dlqTopic}))
		retried, _ := value(fams, "rocketmq_topic_retry_offset", with(map[string]string{"topic": retryTopic, "group": ""}))
		retryDiff, found := value(fams, "rocketmq_group_retrydiff", with(map[string]string{"topic": retryTopic}))
		diff, _ := value(fams, "rocketmq_group_diff", with(map[string]string{"topic": topic}))
		return dlq == 1 && dlqDiff == 1 && retried == 2 && found && retryDiff == 0 && diff == 0
	})
	if v, _ := value(fams, "rocketmq_producer_offset", with(map[string]string{"topic": topic, "group": ""})); v != 5 {
		t.Errorf("producer offset of %s = %v, want 5", topic, v)
	}
	if v, _ := value(fams, "rocketmq_consumer_offset", with(map[string]string{"topic": topic})); v != 5 {
		t.Errorf("consumer offset of %s = %v, want 5", topic, v)
	}
	if v, _ := value(fams, "rocketmq_group_get_latency_by_storetime", with(map[string]string{"topic": topic})); v != 0 {
		t.Errorf("latency of a caught-up group %v, want 0", v)
	}

	// The group stops; three more messages wait for it.
	if err := pc.Close(); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	send("late-1", "late-2", "late-3")
	sent := time.Now()
	lt := with(map[string]string{"topic": topic})
	mqtest.Eventually(t, "the stopped group's backlog", func() bool {
		fams = scrapeNode(t, master.Current())
		diff, _ := value(fams, "rocketmq_group_diff", lt)
		return diff == 3
	})
	start := time.Now()
	fams = scrapeNode(t, master.Current())
	end := time.Now()
	lat1, ok := value(fams, "rocketmq_group_get_latency_by_storetime", lt)
	// The oldest waiting message was stored between before and sent.
	if lo, hi := start.Sub(sent).Milliseconds()-1, end.Sub(before).Milliseconds()+1; !ok || lat1 < float64(lo) || lat1 > float64(hi) {
		t.Fatalf("latency %v (reported: %v), want the age of late-1, between %d and %d ms", lat1, ok, lo, hi)
	}
	time.Sleep(300 * time.Millisecond)
	lat2, _ := value(scrapeNode(t, master.Current()), "rocketmq_group_get_latency_by_storetime", lt)
	if lat2 < lat1+299 {
		t.Fatalf("latency %v ms, then %v ms 300 ms later: a stopped group's latency must grow with the clock", lat1, lat2)
	}

	// Master and slave: each names its id and role; only the master exports what the exporter
	// reads from masters, and the slave's replication lag by its host, not its port.
	sfams := scrapeNode(t, slave.Current())
	for name, want := range map[string]map[string]string{
		"rocketmq_brokeruntime_commitlog_maxoffset": {"broker_id": "1", "role": "slave", "broker": master.BrokerName},
		"rocketmq_storage_size":                     {"broker_id": "1", "role": "slave", "node_id": master.BrokerName},
	} {
		if len(series(sfams, name, want)) != 1 {
			t.Errorf("slave's %s: %v, want one series labelled %v", name, series(sfams, name, nil), want)
		}
	}
	if len(series(fams, "rocketmq_storage_size", map[string]string{"broker_id": "0", "role": "master"})) != 1 {
		t.Errorf("master's rocketmq_storage_size: %v", series(fams, "rocketmq_storage_size", nil))
	}
	if s := series(sfams, "rocketmq_group_diff", nil); len(s) != 0 {
		t.Errorf("a slave exports rocketmq_group_diff: %v", s)
	}
	replLag := func() []map[string]string {
		return series(scrapeNode(t, master.Current()), "mq_replication_lag_bytes", nil)
	}
	mqtest.Eventually(t, "the slave's replication lag named by host", func() bool {
		s := replLag()
		return len(s) == 1 && s[0]["slave_host"] == "127.0.0.1" && s[0]["slave_broker_id"] == ""
	})
	if err := c.Kill(slave); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(slave); err != nil {
		t.Fatal(err)
	}
	mqtest.Eventually(t, "the restarted slave under the same series", func() bool {
		s := replLag()
		return len(s) == 1 && s[0]["slave_host"] == "127.0.0.1" && !strings.Contains(s[0]["slave_host"], ":")
	})

	// The deleted group's series go, on the master at once, on the slave at its next sync.
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	resp, err := cl.InvokeSync(rctx, master.Addr(), remoting.NewRequest(remoting.DeleteSubscriptionGroup,
		remoting.EncodeHeader(&protocol.DeleteSubscriptionGroupRequestHeader{GroupName: group}), nil))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("delete group: %v %+v", err, resp)
	}
	mentions := func(fams map[string]*dto.MetricFamily) []string {
		var out []string
		for name, f := range fams {
			for _, m := range f.Metric {
				for _, l := range m.Label {
					if (l.GetName() == "group" || l.GetName() == "consumer_group") && l.GetValue() == group ||
						l.GetName() == "topic" && (l.GetValue() == retryTopic || l.GetValue() == dlqTopic) {
						out = append(out, name)
					}
				}
			}
		}
		return out
	}
	if m := mentions(scrapeNode(t, master.Current())); len(m) != 0 {
		t.Errorf("the master still exports the deleted group in %v", m)
	}
	mqtest.Eventually(t, "the slave drops the deleted group", func() bool {
		return len(mentions(scrapeNode(t, slave.Current()))) == 0
	})
}

// TestMetricsControllerModeNamesSlaveID: in controller mode a slave names its broker id to its
// master, which labels the slave's replication lag with it; the master's series say broker_id 0
// and role master whichever replica it is, the slave's its own id.
func TestMetricsControllerModeNamesSlaveID(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{Controllers: 1, ControllerMode: true, SlavesPerGroup: 1,
		Options: func(o *mq.Options) { o.HTTP.Metrics = metrics.Prometheus() }})
	var master, slave *mqtest.Node
	mqtest.Eventually(t, "a master and a slave", func() bool {
		master = c.Master(0)
		for _, n := range c.Group(0) {
			if n != master && n.Running() && n.Current().Broker() != nil && !n.Current().Broker().IsMaster() {
				slave = n
			}
		}
		return master != nil && slave != nil
	})
	slaveID := slave.Current().Broker().Options().Broker.ID
	if slaveID <= 0 {
		t.Fatalf("slave broker id %d", slaveID)
	}
	mqtest.Eventually(t, "the slave's lag under its broker id", func() bool {
		s := series(scrapeNode(t, master.Current()), "mq_replication_lag_bytes", map[string]string{"broker_id": "0", "role": "master"})
		return len(s) == 1 && s[0]["slave_broker_id"] == strconv.FormatInt(slaveID, 10) && s[0]["slave_host"] == "127.0.0.1"
	})
	want := map[string]string{"broker_id": strconv.FormatInt(slaveID, 10), "role": "slave"}
	if s := series(scrapeNode(t, slave.Current()), "rocketmq_brokeruntime_commitlog_maxoffset", want); len(s) != 1 {
		t.Fatalf("slave's commitlog max offset labelled %v: %v", want, s)
	}
}
