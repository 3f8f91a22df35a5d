package metrics

import (
	"strconv"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/broker/stats"
	"github.com/mqgo/mq/internal/names"
	"github.com/prometheus/client_golang/prometheus"
)

// nodeCollector reads the broker and the listeners at each scrape: RocketMQ 5's series and ours
// here, rocketmq-exporter's in exporter.go, the consumers' rates through clients.
type nodeCollector struct {
	src     Sources
	clients *clientStats
	now     func() time.Time
}

func newNodeCollector(src Sources) *nodeCollector {
	return &nodeCollector{src: src, clients: newClientStats(src.Logger), now: time.Now}
}

// brokerLabels are RocketMQ 5's (BrokerMetricsManager's cluster, node_type and node_id, the
// broker name) and ours: the broker id and the role, so that a master and its slaves, which
// share a broker name, never export the same series and a sum can pick the masters.
var brokerLabels = []string{"cluster", "node_type", "node_id", "broker_id", "role"}

// Role label values.
const (
	roleMaster = "master"
	roleSlave  = "slave"
)

var (
	descMessagesIn     = desc("rocketmq_messages_in_total", "Messages stored, per topic sent to.", "topic", "is_system")
	descThroughputIn   = desc("rocketmq_throughput_in_total", "Bytes stored, per topic sent to.", "topic", "is_system")
	descMessagesOut    = desc("rocketmq_messages_out_total", "Messages pulled, per topic and consumer group.", "topic", "consumer_group", "is_retry", "is_system")
	descThroughputOut  = desc("rocketmq_throughput_out_total", "Bytes pulled, per topic and consumer group.", "topic", "consumer_group", "is_retry", "is_system")
	descLag            = desc("rocketmq_consumer_lag_messages", "Messages a consumer group has not committed, per read queue of this broker (a queue it never committed counts from 0, as GET_CONSUME_STATS counts it).", "consumer_group", "topic", "queue_id")
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
	descReplLag        = desc("mq_replication_lag_bytes", "CommitLog bytes a connected slave has not acknowledged (masters only), per slave: the broker id it named (empty when the HA protocol carried none) and the host of its HA connection.", "slave_broker_id", "slave_host")
	descSlaves         = desc("mq_replication_slaves", "Slaves connected (masters only).")
	descParked         = desc("mq_pull_parked", "Long-poll pulls parked waiting for messages.")
	descHoldRefused    = desc("mq_pull_hold_refusals_total", "Pulls refused because the long-poll hold was full.")
	descPutTPS         = desc("mq_put_tps", "Messages stored per second over the last 10 s (runtime info's putTps).")
	descGetTPS         = desc("mq_get_tps", "Messages pulled per second over the last 10 s (runtime info's getTransferedTps).")
	descLeftOut        = desc("mq_metrics_left_out", "What this scrape's caps left out: (group, topic) pairs, queues, store reads of consumer latencies, consumers asked for their rates, (consumer, topic) figures kept of their answers.", "what")

	descConns      = prometheus.NewDesc("mq_connections", "Open remoting connections, per listener.", []string{"listener"}, nil)
	descACLRefused = prometheus.NewDesc("mq_acl_refusals_total", "Requests refused by the ACL (NO_PERMISSION).", nil, nil)
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string{}, brokerLabels...), labels...), nil)
}

var coreDescs = []*prometheus.Desc{descMessagesIn, descThroughputIn, descMessagesOut, descThroughputOut,
	descLag, descConsumerConns, descProducerConns, descTopics, descGroups, descStorageSize, descFlushBehind,
	descDispatchBehind, descDiskRatio, descDiskFree, descSegments, descFsyncs, descReplLag, descSlaves,
	descParked, descHoldRefused, descPutTPS, descGetTPS, descLeftOut, descConns, descACLRefused}

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range coreDescs {
		ch <- d
	}
	for _, d := range exporterDescs {
		ch <- d
	}
	for _, d := range clientDescs {
		ch <- d
	}
}

// emitter sends const metrics with a fixed prefix of label values.
type emitter struct {
	ch   chan<- prometheus.Metric
	base []string
}

func (e emitter) emit(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	e.ch <- prometheus.MustNewConstMetric(d, t, v, append(append(make([]string, 0, len(e.base)+len(labels)), e.base...), labels...)...)
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
	role := roleSlave
	if m.Master {
		role = roleMaster
	}
	id := strconv.FormatInt(m.BrokerID, 10)
	core := emitter{ch, []string{m.Cluster, "broker", m.BrokerName, id, role}}
	collectCore(core, &m)
	exp := emitter{ch, []string{m.Cluster, m.BrokerName, id, role}}
	collectExporter(exp, &m)
	var clientsLeft clientsLeftOut
	if m.Master {
		// Consumers register with every broker; only masters ask them, as the exporter does.
		var rows []clientRow
		rows, clientsLeft = c.clients.read(b, c.now())
		collectClients(exp, rows)
	}
	core.emit(descLeftOut, prometheus.GaugeValue, float64(m.LeftOut.GroupTopics), "group_topics")
	core.emit(descLeftOut, prometheus.GaugeValue, float64(m.LeftOut.Queues), "queues")
	core.emit(descLeftOut, prometheus.GaugeValue, float64(m.LeftOut.StoreReads), "store_reads")
	core.emit(descLeftOut, prometheus.GaugeValue, float64(clientsLeft.clients), "clients")
	core.emit(descLeftOut, prometheus.GaugeValue, float64(clientsLeft.rows), "client_topics")
}

// collectCore emits RocketMQ 5's series and ours.
func collectCore(e emitter, m *stats.Metrics) {
	for _, p := range m.Puts {
		sys := boolLabel(isSystemTopic(p.Topic))
		e.emit(descMessagesIn, prometheus.CounterValue, float64(p.Msgs), p.Topic, sys)
		e.emit(descThroughputIn, prometheus.CounterValue, float64(p.Bytes), p.Topic, sys)
	}
	for _, g := range m.Gets {
		retry, sys := boolLabel(names.IsRetryTopic(g.Topic)), boolLabel(isSystemTopic(g.Topic))
		e.emit(descMessagesOut, prometheus.CounterValue, float64(g.Msgs), g.Topic, g.Group, retry, sys)
		e.emit(descThroughputOut, prometheus.CounterValue, float64(g.Bytes), g.Topic, g.Group, retry, sys)
	}
	for _, l := range m.Lag {
		e.emit(descLag, prometheus.GaugeValue, float64(max(0, l.BrokerOffset-l.ConsumerOffset)),
			l.Group, l.Topic, strconv.Itoa(int(l.QueueID)))
	}
	for g, n := range m.Consumers {
		e.emit(descConsumerConns, prometheus.GaugeValue, float64(n), g)
	}
	e.emit(descProducerConns, prometheus.GaugeValue, float64(m.Producers))
	e.emit(descTopics, prometheus.GaugeValue, float64(m.Topics))
	e.emit(descGroups, prometheus.GaugeValue, float64(m.Groups))
	st := m.Store
	e.emit(descStorageSize, prometheus.GaugeValue, float64(st.MaxPhyOffset-st.MinPhyOffset))
	e.emit(descFlushBehind, prometheus.GaugeValue, float64(max(0, st.MaxPhyOffset-st.FlushedPhyOffset)))
	e.emit(descDispatchBehind, prometheus.GaugeValue, float64(max(0, st.MaxPhyOffset-st.DispatchedPhyOffset)))
	e.emit(descSegments, prometheus.GaugeValue, float64(st.CommitLogSegments))
	e.emit(descFsyncs, prometheus.CounterValue, float64(st.CommitLogFsyncs))
	if m.DiskKnown {
		e.emit(descDiskRatio, prometheus.GaugeValue, m.Disk.UsedRatio())
		e.emit(descDiskFree, prometheus.GaugeValue, float64(m.Disk.Free))
	}
	if m.Master {
		e.emit(descSlaves, prometheus.GaugeValue, float64(len(m.Slaves)))
		for _, s := range m.Slaves {
			id := ""
			if s.BrokerID > 0 {
				id = strconv.FormatInt(s.BrokerID, 10)
			}
			e.emit(descReplLag, prometheus.GaugeValue, float64(s.Bytes), id, s.Host)
		}
	}
	e.emit(descParked, prometheus.GaugeValue, float64(m.ParkedPulls))
	e.emit(descHoldRefused, prometheus.CounterValue, float64(m.HoldRefusals))
	e.emit(descPutTPS, prometheus.GaugeValue, m.PutTPS)
	e.emit(descGetTPS, prometheus.GaugeValue, m.GetTPS)
}

func boolLabel(b bool) string { return strconv.FormatBool(b) }

// isSystemTopic reports the topics RocketMQ 5's metrics label is_system: the broker's own
// topics, retry and dead-letter topics included.
func isSystemTopic(topic string) bool {
	return names.Reserved(topic) || names.IsRetryTopic(topic) || strings.HasPrefix(topic, names.DLQPrefix) || topic == names.TopicTrace
}
