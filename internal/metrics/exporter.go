package metrics

import (
	"github.com/mqgo/mq/internal/broker/stats"
	"github.com/prometheus/client_golang/prometheus"
)

// rocketmq-exporter's series (github.com/apache/rocketmq-exporter, RMQMetricsCollector), with
// its names and label names, so that its Grafana dashboards and alert rules read them:
//
//   - per consumer group and topic, and per topic: what the exporter reads from each master
//     (examineConsumeStats, examineTopicStats, VIEW_BROKER_STATS_DATA), exported by masters
//     only, so that the exporter's sums over brokers count each queue once. Where the exporter
//     sums a group over the whole cluster (group_diff and its retry and DLQ kin), ours is per
//     broker: sum by (group, topic) for the exporter's figure.
//   - per broker: GET_BROKER_RUNTIME_INFO's figures, from every broker, masters and slaves
//     (a slave's commitlog_maxoffset against its master's is the exporter's commitlog_diff).
//
// Labels: the exporter's cluster, broker (the broker name), group and topic, and ours,
// broker_id and role; the runtime figures also carry the exporter's brokerIP (the broker's
// advertised address). The exporter's countOfOnlineConsumers and msgModel labels of group_diff
// are left out: a label whose value moves with a consumer joining would start a new series
// each time (rocketmq_consumer_connections counts the consumers).

var exporterLabels = []string{"cluster", "broker", "broker_id", "role"}

func expDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string{}, exporterLabels...), labels...), nil)
}

var (
	// Per group and topic (masters).
	descGroupDiff      = expDesc("rocketmq_group_diff", "Messages of the topic on this broker the group has not consumed (queue end minus committed offset, summed over the read queues).", "group", "topic")
	descGroupRetryDiff = expDesc("rocketmq_group_retrydiff", "Messages of the group's retry topic on this broker it has not consumed.", "group", "topic")
	descGroupDLQDiff   = expDesc("rocketmq_group_dlqdiff", "Messages in the group's dead-letter topic on this broker (past its min offset and any offset the group committed there).", "group", "topic")
	descGroupLatency   = expDesc("rocketmq_group_get_latency_by_storetime", "Age in milliseconds of the oldest message of the topic on this broker the group has not consumed; 0 when it is caught up.", "group", "topic")
	descConsumerOffset = expDesc("rocketmq_consumer_offset", "The group's committed offsets in the topic on this broker, summed over the read queues.", "group", "topic")
	descConsumerTPS    = expDesc("rocketmq_consumer_tps", "Messages of the topic the group pulled per second over the last minute (GROUP_GET_NUMS).", "group", "topic")
	descConsumerSize   = expDesc("rocketmq_consumer_message_size", "Bytes of the topic the group pulled per second over the last minute (GROUP_GET_SIZE).", "group", "topic")
	// Per topic (masters).
	descProducerOffset = expDesc("rocketmq_producer_offset", "The topic's queue ends on this broker, summed: messages ever stored in it.", "topic")
	descRetryOffset    = expDesc("rocketmq_topic_retry_offset", "A retry topic's queue ends on this broker, summed.", "topic")
	descDLQOffset      = expDesc("rocketmq_topic_dlq_offset", "A group's dead-letter topic's queue ends on this broker, summed.", "group")
	descProducerTPS    = expDesc("rocketmq_producer_tps", "Messages stored in the topic per second over the last minute (TOPIC_PUT_NUMS).", "topic")
	descProducerSize   = expDesc("rocketmq_producer_message_size", "Bytes stored in the topic per second over the last minute (TOPIC_PUT_SIZE).", "topic")
	// Per broker (every broker).
	descBrokerTPS         = expDesc("rocketmq_broker_tps", "Messages stored per second over the last minute (BROKER_PUT_NUMS).", "brokerIP")
	descBrokerQPS         = expDesc("rocketmq_broker_qps", "Messages pulled per second over the last minute (BROKER_GET_NUMS).", "brokerIP")
	descRTMaxOffset       = expDesc("rocketmq_brokeruntime_commitlog_maxoffset", "The CommitLog's end (runtime info's commitLogMaxOffset).", "brokerIP")
	descRTMinOffset       = expDesc("rocketmq_brokeruntime_commitlog_minoffset", "The CommitLog's start (commitLogMinOffset).", "brokerIP")
	descRTDiskRatio       = expDesc("rocketmq_brokeruntime_commitlog_disk_ratio", "Part of the CommitLog's file system in use, 0 to 1 (commitLogDiskRatio).", "brokerIP")
	descRTCQDiskRatio     = expDesc("rocketmq_brokeruntime_consumequeue_disk_ratio", "Part of the ConsumeQueues' file system in use, 0 to 1 (consumeQueueDiskRatio; the same file system as the CommitLog's).", "brokerIP")
	descRTCapacityTotal   = expDesc("rocketmq_brokeruntime_commitlogdir_capacity_total", "Bytes of the CommitLog's file system (commitLogDirCapacity's Total).", "brokerIP")
	descRTCapacityFree    = expDesc("rocketmq_brokeruntime_commitlogdir_capacity_free", "Bytes free on the CommitLog's file system (commitLogDirCapacity's Free).", "brokerIP")
	descRTDispatchBehind  = expDesc("rocketmq_brokeruntime_dispatch_behind_bytes", "CommitLog bytes not yet dispatched (dispatchBehindBytes).", "brokerIP")
	descRTToFlush         = expDesc("rocketmq_brokeruntime_remain_howmanydata_toflush", "CommitLog bytes not yet flushed (remainHowManyDataToFlush).", "brokerIP")
	descRTEarliest        = expDesc("rocketmq_brokeruntime_earliest_message_timestamp", "Store time in milliseconds of the CommitLog's first message (earliestMessageTimeStamp).", "brokerIP")
	descRTPutTodayNow     = expDesc("rocketmq_brokeruntime_msg_put_total_today_now", "Messages stored since the broker started (msgPutTotalTodayNow).", "brokerIP")
	descRTGetTodayNow     = expDesc("rocketmq_brokeruntime_msg_gettotal_today_now", "Messages pulled since the broker started (msgGetTotalTodayNow).", "brokerIP")
	descRTPutTodayMorning = expDesc("rocketmq_brokeruntime_msg_puttotal_todaymorning", "Messages stored, as counted at this morning's midnight (msgPutTotalTodayMorning).", "brokerIP")
	descRTGetTodayMorning = expDesc("rocketmq_brokeruntime_msg_gettotal_todaymorning", "Messages pulled, as counted at this morning's midnight (msgGetTotalTodayMorning).", "brokerIP")
	descRTPutYesterday    = expDesc("rocketmq_brokeruntime_msg_puttotal_yesterdaymorning", "Messages stored, as counted at yesterday's midnight (msgPutTotalYesterdayMorning).", "brokerIP")
	descRTGetYesterday    = expDesc("rocketmq_brokeruntime_msg_gettotal_yesterdaymorning", "Messages pulled, as counted at yesterday's midnight (msgGetTotalYesterdayMorning).", "brokerIP")
	descRTPutTPS          = [3]*prometheus.Desc{
		expDesc("rocketmq_brokeruntime_put_tps10", "Messages stored per second over the last 10 s (putTps).", "brokerIP"),
		expDesc("rocketmq_brokeruntime_put_tps60", "Messages stored per second over the last 60 s (putTps).", "brokerIP"),
		expDesc("rocketmq_brokeruntime_put_tps600", "Messages stored per second over the last 600 s (putTps).", "brokerIP"),
	}
	descRTGetTPS = [3]*prometheus.Desc{
		expDesc("rocketmq_brokeruntime_gettransfered_tps10", "Messages pulled per second over the last 10 s (getTransferedTps).", "brokerIP"),
		expDesc("rocketmq_brokeruntime_gettransfered_tps60", "Messages pulled per second over the last 60 s (getTransferedTps).", "brokerIP"),
		expDesc("rocketmq_brokeruntime_gettransfered_tps600", "Messages pulled per second over the last 600 s (getTransferedTps).", "brokerIP"),
	}
)

var exporterDescs = []*prometheus.Desc{descGroupDiff, descGroupRetryDiff, descGroupDLQDiff, descGroupLatency,
	descConsumerOffset, descConsumerTPS, descConsumerSize, descProducerOffset, descRetryOffset, descDLQOffset,
	descProducerTPS, descProducerSize, descBrokerTPS, descBrokerQPS, descRTMaxOffset, descRTMinOffset,
	descRTDiskRatio, descRTCQDiskRatio, descRTCapacityTotal, descRTCapacityFree, descRTDispatchBehind,
	descRTToFlush, descRTEarliest, descRTPutTodayNow, descRTGetTodayNow, descRTPutTodayMorning,
	descRTGetTodayMorning, descRTPutYesterday, descRTGetYesterday,
	descRTPutTPS[0], descRTPutTPS[1], descRTPutTPS[2], descRTGetTPS[0], descRTGetTPS[1], descRTGetTPS[2]}

// collectExporter emits the exporter's series.
func collectExporter(e emitter, m *stats.Metrics) {
	gauge := prometheus.GaugeValue
	ip := m.Addr
	st := m.Store
	e.emit(descBrokerTPS, gauge, m.PutRates[1], ip)
	e.emit(descBrokerQPS, gauge, m.GetRates[1], ip)
	e.emit(descRTMaxOffset, gauge, float64(st.MaxPhyOffset), ip)
	e.emit(descRTMinOffset, gauge, float64(st.MinPhyOffset), ip)
	if m.DiskKnown {
		e.emit(descRTDiskRatio, gauge, m.Disk.UsedRatio(), ip)
		e.emit(descRTCQDiskRatio, gauge, m.Disk.UsedRatio(), ip)
		e.emit(descRTCapacityTotal, gauge, float64(m.Disk.Total), ip)
		e.emit(descRTCapacityFree, gauge, float64(m.Disk.Free), ip)
	}
	e.emit(descRTDispatchBehind, gauge, float64(max(0, st.MaxPhyOffset-st.DispatchedPhyOffset)), ip)
	e.emit(descRTToFlush, gauge, float64(max(0, st.MaxPhyOffset-st.FlushedPhyOffset)), ip)
	if m.EarliestMsgTime > 0 {
		e.emit(descRTEarliest, gauge, float64(m.EarliestMsgTime), ip)
	}
	e.emit(descRTPutTodayNow, gauge, float64(m.PutTotal), ip)
	e.emit(descRTGetTodayNow, gauge, float64(m.GetTotal), ip)
	e.emit(descRTPutTodayMorning, gauge, float64(m.PutToday), ip)
	e.emit(descRTGetTodayMorning, gauge, float64(m.GetToday), ip)
	e.emit(descRTPutYesterday, gauge, float64(m.PutYesterday), ip)
	e.emit(descRTGetYesterday, gauge, float64(m.GetYesterday), ip)
	for i := range 3 {
		e.emit(descRTPutTPS[i], gauge, m.PutRates[i], ip)
		e.emit(descRTGetTPS[i], gauge, m.GetRates[i], ip)
	}
	if !m.Master {
		return
	}
	for _, g := range m.GroupTopics {
		switch g.Kind {
		case stats.RetryTopic:
			e.emit(descGroupRetryDiff, gauge, float64(g.Diff), g.Group, g.Topic)
		case stats.DLQTopic:
			e.emit(descGroupDLQDiff, gauge, float64(g.Diff), g.Group, g.Topic)
		default:
			e.emit(descGroupDiff, gauge, float64(g.Diff), g.Group, g.Topic)
		}
		if g.LatencyKnown {
			e.emit(descGroupLatency, gauge, float64(g.LatencyMs), g.Group, g.Topic)
		}
		e.emit(descConsumerOffset, gauge, float64(g.ConsumerOffset), g.Group, g.Topic)
	}
	for _, g := range m.Gets {
		e.emit(descConsumerTPS, gauge, g.MinuteMsgs, g.Group, g.Topic)
		e.emit(descConsumerSize, gauge, g.MinuteBytes, g.Group, g.Topic)
	}
	for _, t := range m.TopicOffsets {
		switch t.Kind {
		case stats.RetryTopic:
			e.emit(descRetryOffset, gauge, float64(t.MaxOffset), t.Topic)
		case stats.DLQTopic:
			e.emit(descDLQOffset, gauge, float64(t.MaxOffset), stats.GroupOf(t.Topic))
		default:
			e.emit(descProducerOffset, gauge, float64(t.MaxOffset), t.Topic)
		}
	}
	for _, p := range m.Puts {
		e.emit(descProducerTPS, gauge, p.MinuteMsgs, p.Topic)
		e.emit(descProducerSize, gauge, p.MinuteBytes, p.Topic)
	}
}
