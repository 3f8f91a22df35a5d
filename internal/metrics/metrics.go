// Package metrics serves a node's figures in the Prometheus exposition format. It keeps its own
// registry (never the process-global one), so an embedding application's metrics and ours do
// not collide and two nodes in one process each report their own.
//
// Three sets of names: RocketMQ 5's broker metrics (BrokerMetricsConstant,
// RemotingMetricsConstant) where RocketMQ 5 has the metric, with its labels (collector.go);
// rocketmq-exporter's, for the alerting signals RocketMQ 4.x operators get from it: consumer
// latency and backlog, retry and dead-letter backlog, offsets, the broker's runtime figures, the
// consumers' own rates (exporter.go, clients.go); and mq_* for ours. Every broker series names
// its broker's id and role, so a master and its slaves never export the same series.
//
// Request latency is observed as each request is processed (remoting.RequestObserver); the
// rest is read from the broker when scraped (internal/broker/stats computes the figures, with
// caps on what one scrape visits), so the hot paths pay for one histogram observation per
// request and nothing per scrape. The consumers' rates come from GET_CONSUMER_RUNNING_INFO,
// asked of the connected consumers at most every clientStatsPeriod by a scrape (clients.go).
package metrics

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/addon"
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
	node    *nodeCollector
	handler http.Handler
}

// New builds the registry: the Go runtime and process collectors, the request observer, and a
// collector that reads src at each scrape.
func New(src Sources) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{reg: reg, rpc: newRPCObserver(), node: newNodeCollector(src)}
	m.rpc.zeroBusy(src.Listeners)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.rpc.latency, m.rpc.busy, m.node)
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

// Requests whose busy counters exist from the start at 0, so that a rate or an increase over
// them counts the first rejection (a counter born at 1 has no increase): the traffic of each
// role, which is where pools fill. Other codes appear at their first rejection.
var (
	brokerBusyCodes = []int32{remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage,
		remoting.ConsumerSendMsgBack, remoting.PullMessage, remoting.LitePullMessage, remoting.PopMessage,
		remoting.HeartBeat, remoting.QueryConsumerOffset, remoting.UpdateConsumerOffset}
	nameServerBusyCodes = []int32{remoting.GetRouteInfoByTopic, remoting.RegisterBroker}
)

// zeroBusy creates the busy counters of the codes the listeners' roles serve.
func (o *rpcObserver) zeroBusy(listeners []Listener) {
	for _, l := range listeners {
		if strings.Contains(l.Role, "broker") {
			for _, c := range brokerBusyCodes {
				o.busy.WithLabelValues(remoting.RequestCodeName(c))
			}
		}
		if strings.Contains(l.Role, "namesrv") {
			for _, c := range nameServerBusyCodes {
				o.busy.WithLabelValues(remoting.RequestCodeName(c))
			}
		}
	}
}
