// Package metrics serves a node's figures in the Prometheus exposition format. It keeps its own
// registry (never the process-global one), so an embedding application's metrics and ours do
// not collide and two nodes in one process each report their own.
//
// Names follow RocketMQ 5's broker metrics (BrokerMetricsConstant, RemotingMetricsConstant)
// where one exists, with their labels; the figures RocketMQ has no metric for are named mq_*.
// Request latency is observed as each request is processed (remoting.RequestObserver); the
// rest is read from the broker when scraped, so the hot paths pay for one histogram
// observation per request and nothing per scrape.
package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/addon"
	"github.com/mqgo/mq/internal/broker/stats"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// Listener and Sources are declared in internal/addon, which the node imports without pulling
// the Prometheus client.
type (
	Listener = addon.MetricsListener
	Sources  = addon.MetricsSources
)

// Factory is the addon.MetricsFactory that builds this package's metrics; package
// github.com/mqgo/mq/metrics hands it to applications.
type Factory struct{}

// NewMetrics is New.
func (Factory) NewMetrics(src Sources) addon.Metrics { return New(src) }

// Metrics is a node's registry and the request observer that feeds it.
type Metrics struct {
	reg     *prometheus.Registry
	rpc     *rpcObserver
	handler http.Handler
}

// New builds the registry: the Go runtime and process collectors, the request observer, and a
// collector that reads src at each scrape.
func New(src Sources) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{reg: reg, rpc: newRPCObserver()}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.rpc.latency, m.rpc.busy, &nodeCollector{src: src})
	opts := promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true}
	if src.Logger != nil {
		opts.ErrorLog = zerologPrinter{src.Logger}
	}
	m.handler = promhttp.HandlerFor(reg, opts)
	return m
}

// Observer is the remoting.RequestObserver to install on the node's dispatchers.
func (m *Metrics) Observer() remoting.RequestObserver { return m.rpc }

// Handler serves the registry (/metrics).
func (m *Metrics) Handler() http.Handler { return m.handler }

// Registry is the node's registry, for an embedder that adds its own collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

type zerologPrinter struct{ log *zerolog.Logger }

func (p zerologPrinter) Println(v ...any) {
	p.log.Warn().Str("component", "metrics").Msg(joinArgs(v))
}

func joinArgs(v []any) string {
	var b []byte
	for i, x := range v {
		if i > 0 {
			b = append(b, ' ')
		}
		if err, ok := x.(error); ok {
			b = append(b, err.Error()...)
		} else if s, ok := x.(string); ok {
			b = append(b, s...)
		}
	}
	return string(b)
}

// rpcLatencyBuckets are RocketMQ 5's rocketmq_rpc_latency buckets, in milliseconds
// (RemotingMetricsManager: 1, 3, 5, 7, 10, 100 ms, 1, 2, 3 s).
var rpcLatencyBuckets = []float64{1, 3, 5, 7, 10, 100, 1000, 2000, 3000}

// rpcObserver records each processed request in rocketmq_rpc_latency. The observers of a
// request code are cached per response code in a copy-on-write list, so a request costs a short
// scan and an observation, without the label hashing of HistogramVec.WithLabelValues and
// without allocating.
type rpcObserver struct {
	latency *prometheus.HistogramVec
	busy    *prometheus.CounterVec

	mu    sync.Mutex // serializes cache misses
	codes [maxCachedCode + 2]atomic.Pointer[[]respObserver]
}

// maxCachedCode is the highest request code with its own cache slot (RocketMQ's codes are
// below it); higher codes share the slot after it, and codes the default processor served the
// last one.
const maxCachedCode = 1023

type respObserver struct {
	code int32
	obs  prometheus.Observer
}

func (o *rpcObserver) slot(code int32, known bool) *atomic.Pointer[[]respObserver] {
	switch {
	case !known:
		return &o.codes[maxCachedCode+1]
	case code >= 0 && code <= maxCachedCode:
		return &o.codes[code]
	default:
		return nil
	}
}

// observer returns the histogram of a request and response code.
func (o *rpcObserver) observer(code int32, known bool, respCode int32) prometheus.Observer {
	slot := o.slot(code, known)
	if slot != nil {
		if list := slot.Load(); list != nil {
			for _, r := range *list {
				if r.code == respCode {
					return r.obs
				}
			}
		}
	}
	obs := o.latency.WithLabelValues(requestLabel(code, known), remoting.ResponseCodeName(respCode))
	if slot != nil {
		o.mu.Lock()
		var next []respObserver
		if list := slot.Load(); list != nil {
			next = append(next, *list...)
		}
		next = append(next, respObserver{respCode, obs})
		slot.Store(&next)
		o.mu.Unlock()
	}
	return obs
}

func newRPCObserver() *rpcObserver {
	return &rpcObserver{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "rocketmq_rpc_latency",
			Help:        "Time the node took to process a request and produce its answer, in milliseconds. Requests answered later (parked pulls, sends waiting for a group commit) are not in it.",
			ConstLabels: prometheus.Labels{"protocol_type": "remoting"},
			Buckets:     rpcLatencyBuckets,
		}, []string{"request_code", "response_code"}),
		busy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mq_busy_rejections_total",
			Help: "Requests answered SYSTEM_BUSY: their pool's queue was full, or the broker's flow control refused them.",
		}, []string{"request_code"}),
	}
}

// requestLabel names a request code for a label; codes the default processor served are
// whatever a client sent, so they share one label instead of growing the series without bound.
func requestLabel(code int32, known bool) string {
	if !known {
		return "unsupported"
	}
	return remoting.RequestCodeName(code)
}

func (o *rpcObserver) Processed(code int32, known bool, respCode int32, answered bool, elapsed time.Duration) {
	if !answered {
		return
	}
	o.observer(code, known, respCode).Observe(float64(elapsed) / float64(time.Millisecond))
	if respCode == remoting.SystemBusy {
		o.busy.WithLabelValues(requestLabel(code, known)).Inc()
	}
}

func (o *rpcObserver) Rejected(code int32, known bool) {
	o.busy.WithLabelValues(requestLabel(code, known)).Inc()
}

// nodeCollector reads the broker and the listeners at each scrape.
type nodeCollector struct{ src Sources }

var (
	brokerLabels = []string{"cluster", "node_type", "node_id"}

	descMessagesIn     = desc("rocketmq_messages_in_total", "Messages stored, per topic sent to.", "topic", "is_system")
	descThroughputIn   = desc("rocketmq_throughput_in_total", "Bytes stored, per topic sent to.", "topic", "is_system")
	descMessagesOut    = desc("rocketmq_messages_out_total", "Messages pulled, per topic and consumer group.", "topic", "consumer_group", "is_retry", "is_system")
	descThroughputOut  = desc("rocketmq_throughput_out_total", "Bytes pulled, per topic and consumer group.", "topic", "consumer_group", "is_retry", "is_system")
	descLag            = desc("rocketmq_consumer_lag_messages", "Messages a consumer group has not committed, per queue of this broker.", "consumer_group", "topic", "queue_id")
	descConsumerConns  = desc("rocketmq_consumer_connections", "Consumers connected, per group.", "consumer_group")
	descProducerConns  = desc("rocketmq_producer_connections", "Producer registrations.")
	descTopics         = desc("rocketmq_topic_number", "Topics configured on this broker.")
	descGroups         = desc("rocketmq_consumer_group_number", "Subscription groups configured on this broker.")
	descStorageSize    = desc("rocketmq_storage_size", "Bytes of CommitLog the store holds (its end minus its start).")
	descFlushBehind    = desc("rocketmq_storage_flush_behind_bytes", "CommitLog bytes written but not yet flushed to disk.")
	descDispatchBehind = desc("rocketmq_storage_dispatch_behind_bytes", "CommitLog bytes not yet dispatched to ConsumeQueues and the index.")
	descDiskRatio      = desc("mq_storage_disk_used_ratio", "Part of the store's file system in use, 0 to 1 (runtime info's commitLogDiskRatio).")
	descDiskFree       = desc("mq_storage_disk_free_bytes", "Bytes free on the store's file system.")
	descSegments       = desc("mq_storage_commitlog_segments", "CommitLog segment files.")
	descFsyncs         = desc("mq_storage_fsyncs_total", "Flushes that synced CommitLog data.")
	descReplLag        = desc("mq_replication_lag_bytes", "CommitLog bytes a connected slave has not acknowledged (masters only).", "slave")
	descSlaves         = desc("mq_replication_slaves", "Slaves connected (masters only).")
	descParked         = desc("mq_pull_parked", "Long-poll pulls parked waiting for messages.")
	descHoldRefused    = desc("mq_pull_hold_refusals_total", "Pulls refused because the long-poll hold was full.")
	descPutTPS         = desc("mq_put_tps", "Messages stored per second over the last 10 s (runtime info's putTps).")
	descGetTPS         = desc("mq_get_tps", "Messages pulled per second over the last 10 s (runtime info's getTransferedTps).")

	descConns      = prometheus.NewDesc("mq_connections", "Open remoting connections, per listener.", []string{"listener"}, nil)
	descACLRefused = prometheus.NewDesc("mq_acl_refusals_total", "Requests refused by the ACL (NO_PERMISSION).", nil, nil)
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string{}, brokerLabels...), labels...), nil)
}

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMessagesIn, descThroughputIn, descMessagesOut, descThroughputOut,
		descLag, descConsumerConns, descProducerConns, descTopics, descGroups, descStorageSize, descFlushBehind,
		descDispatchBehind, descDiskRatio, descDiskFree, descSegments, descFsyncs, descReplLag, descSlaves,
		descParked, descHoldRefused, descPutTPS, descGetTPS, descConns, descACLRefused} {
		ch <- d
	}
}

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	for _, l := range c.src.Listeners {
		ch <- prometheus.MustNewConstMetric(descConns, prometheus.GaugeValue, float64(l.Conns()), l.Role)
	}
	if c.src.ACLRefusals != nil {
		ch <- prometheus.MustNewConstMetric(descACLRefused, prometheus.CounterValue, float64(c.src.ACLRefusals()))
	}
	if c.src.Broker == nil {
		return
	}
	b := c.src.Broker()
	if b == nil {
		return
	}
	sv := stats.Of(b)
	if sv == nil {
		return // a broker without its statistics service has no figures to report
	}
	m := sv.Metrics()
	base := []string{m.Cluster, "broker", m.BrokerName}
	emit := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, append(append(make([]string, 0, len(base)+len(labels)), base...), labels...)...)
	}
	for _, p := range m.Puts {
		sys := boolLabel(isSystemTopic(p.Topic))
		emit(descMessagesIn, prometheus.CounterValue, float64(p.Msgs), p.Topic, sys)
		emit(descThroughputIn, prometheus.CounterValue, float64(p.Bytes), p.Topic, sys)
	}
	for _, g := range m.Gets {
		retry, sys := boolLabel(names.IsRetryTopic(g.Topic)), boolLabel(isSystemTopic(g.Topic))
		emit(descMessagesOut, prometheus.CounterValue, float64(g.Msgs), g.Topic, g.Group, retry, sys)
		emit(descThroughputOut, prometheus.CounterValue, float64(g.Bytes), g.Topic, g.Group, retry, sys)
	}
	for _, l := range m.Lag {
		emit(descLag, prometheus.GaugeValue, float64(max(0, l.BrokerOffset-l.ConsumerOffset)),
			l.Group, l.Topic, strconv.Itoa(int(l.QueueID)))
	}
	for g, n := range m.Consumers {
		emit(descConsumerConns, prometheus.GaugeValue, float64(n), g)
	}
	emit(descProducerConns, prometheus.GaugeValue, float64(m.Producers))
	emit(descTopics, prometheus.GaugeValue, float64(m.Topics))
	emit(descGroups, prometheus.GaugeValue, float64(m.Groups))
	st := m.Store
	emit(descStorageSize, prometheus.GaugeValue, float64(st.MaxPhyOffset-st.MinPhyOffset))
	emit(descFlushBehind, prometheus.GaugeValue, float64(max(0, st.MaxPhyOffset-st.FlushedPhyOffset)))
	emit(descDispatchBehind, prometheus.GaugeValue, float64(max(0, st.MaxPhyOffset-st.DispatchedPhyOffset)))
	emit(descSegments, prometheus.GaugeValue, float64(st.CommitLogSegments))
	emit(descFsyncs, prometheus.CounterValue, float64(st.CommitLogFsyncs))
	if m.DiskKnown {
		emit(descDiskRatio, prometheus.GaugeValue, m.Disk.UsedRatio())
		emit(descDiskFree, prometheus.GaugeValue, float64(m.Disk.Free))
	}
	if m.BrokerID == 0 {
		emit(descSlaves, prometheus.GaugeValue, float64(len(m.Slaves)))
		for _, s := range m.Slaves {
			emit(descReplLag, prometheus.GaugeValue, float64(s.Bytes), s.Addr)
		}
	}
	emit(descParked, prometheus.GaugeValue, float64(m.ParkedPulls))
	emit(descHoldRefused, prometheus.CounterValue, float64(m.HoldRefusals))
	emit(descPutTPS, prometheus.GaugeValue, m.PutTPS)
	emit(descGetTPS, prometheus.GaugeValue, m.GetTPS)
}

func boolLabel(b bool) string { return strconv.FormatBool(b) }

// isSystemTopic reports the topics RocketMQ 5's metrics label is_system: the broker's own
// topics, retry and dead-letter topics included.
func isSystemTopic(topic string) bool {
	return names.Reserved(topic) || names.IsRetryTopic(topic) || strings.HasPrefix(topic, names.DLQPrefix) || topic == names.TopicTrace
}
