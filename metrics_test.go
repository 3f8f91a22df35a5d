package mq_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/metrics"
	"github.com/mqgo/mq/producer"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"
)

// scrape fetches url and parses it with Prometheus' own text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// value sums the samples of family name whose labels include want (counters, gauges, and a
// histogram's count).
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	var sum float64
	found := false
next:
	for _, m := range f.Metric {
		for k, v := range want {
			match := false
			for _, l := range m.Label {
				if l.GetName() == k && l.GetValue() == v {
					match = true
				}
			}
			if !match {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum, found
}

// TestMetricsMoveWithTraffic scrapes /metrics before and after traffic over TCP: the put and
// get counters, the request latency histogram and the lag of a group move as they must, and
// every scrape parses with Prometheus' text parser.
func TestMetricsMoveWithTraffic(t *testing.T) {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	n, err := mq.StartNode(mq.Options{
		Listen: "127.0.0.1:0",
		Logger: &l,
		Store:  config.Store{Dir: t.TempDir()},
		HTTP:   config.HTTP{Metrics: metrics.Prometheus()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	web := httptest.NewServer(n.Handler())
	t.Cleanup(web.Close)

	const topic, group, count = "MetricsTopic", "metrics-group", 20
	createTopicAndWait(t, n, topic)
	before := scrape(t, web.URL+"/metrics")
	if v, _ := value(before, "rocketmq_messages_in_total", map[string]string{"topic": topic}); v != 0 {
		t.Fatalf("messages in before any send: %v", v)
	}

	p := kindProducer(t, n, "tcp")
	var bodies []string
	bytes := 0
	for i := range count {
		body := fmt.Sprintf("metrics-%d", i)
		bodies = append(bodies, body)
		bytes += len(body)
		if _, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(body))); err != nil {
			t.Fatal(err)
		}
	}
	after := scrape(t, web.URL+"/metrics")
	if v, _ := value(after, "rocketmq_messages_in_total", map[string]string{"topic": topic, "is_system": "false"}); v != count {
		t.Fatalf("rocketmq_messages_in_total{topic=%s} = %v, want %d", topic, v, count)
	}
	if v, _ := value(after, "rocketmq_throughput_in_total", map[string]string{"topic": topic}); v < float64(bytes) {
		t.Fatalf("rocketmq_throughput_in_total = %v, want at least the %d body bytes", v, bytes)
	}
	if v, ok := value(after, "mq_connections", nil); !ok || v < 1 {
		t.Fatalf("mq_connections = %v (reported: %v) with a producer connected", v, ok)
	}
	sends, _ := value(after, "rocketmq_rpc_latency", map[string]string{"request_code": "SEND_MESSAGE_V2", "response_code": "SUCCESS"})
	if sends < count {
		t.Fatalf("rocketmq_rpc_latency count of successful SEND_MESSAGE_V2 = %v, want >= %d", sends, count)
	}

	d := kindConsumer(t, n, "tcp", topic, group)
	d.waitFor(t, bodies...)
	// The consumer commits its offsets asynchronously: wait for the lag to reach 0.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		fams := scrape(t, web.URL+"/metrics")
		lag, found := value(fams, "rocketmq_consumer_lag_messages", map[string]string{"consumer_group": group, "topic": topic})
		out, _ := value(fams, "rocketmq_messages_out_total", map[string]string{"consumer_group": group, "topic": topic})
		if found && lag == 0 && out >= count {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag of %s = %v (reported: %v), messages out = %v; want 0 and >= %d", group, lag, found, out, count)
		}
	}

	resp, err := http.Get(web.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz of a serving node: %s", resp.Status)
	}
	n.Close()
	resp, err = http.Get(web.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/healthz of a closed node: %s, want 503", resp.Status)
	}
}
