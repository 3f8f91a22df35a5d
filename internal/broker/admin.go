package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/mqgo/mq/internal/names"
	"strconv"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// Queries and admin reads (RocketMQ QueryMessageProcessor and part of AdminBrokerProcessor).
//
// Bodies slaves sync from their master round-trip through exported Go types:
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG through SubscriptionGroupWrapper, GET_ALL_CONSUMER_OFFSET
// through protocol.ConsumerOffsetSerializeWrapper, GET_ALL_DELAY_OFFSET through
// protocol.DelayOffsetSerializeWrapper (GET_ALL_TOPIC_CONFIG, route.TopicConfigSerializeWrapper,
// is the send side's).

// registerAdmin installs the admin reads and writes:
// GET_BROKER_RUNTIME_INFO, GET_TOPIC_STATS_INFO, GET_CONSUME_STATS, GET_ALL_CONSUMER_OFFSET,
// GET_ALL_DELAY_OFFSET, GET_ALL_SUBSCRIPTIONGROUP_CONFIG, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
// and DELETE_SUBSCRIPTIONGROUP.
func (b *Broker) registerAdmin(d *remoting.Dispatcher) {
	for code, f := range map[int16]remoting.ProcessorFunc{
		remoting.GetBrokerRuntimeInfo:          b.processRuntimeInfo,
		remoting.GetTopicStatsInfo:             b.processTopicStats,
		remoting.GetConsumeStats:               b.processConsumeStats,
		remoting.GetAllConsumerOffset:          b.processAllConsumerOffset,
		remoting.GetAllDelayOffset:             b.processAllDelayOffset,
		remoting.GetAllSubscriptionGroupConfig: b.processAllSubscriptionGroups,
		remoting.UpdateAndCreateSubscription:   b.processUpdateSubscriptionGroup,
		remoting.DeleteSubscriptionGroup:       b.processDeleteSubscriptionGroup,
	} {
		b.handle(d, code, f, b.adminEx)
	}
}

// jsonResponse answers SUCCESS with v as JSON body.
func jsonResponse(v any) (*remoting.Command, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp, nil
}

// processAllSubscriptionGroups handles GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201), docs/protocol.md §6.3.
func (b *Broker) processAllSubscriptionGroups(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	return jsonResponse(b.groups.snapshot())
}

// processUpdateSubscriptionGroup handles UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200): the body is
// a SubscriptionGroupConfig; fields it leaves out take RocketMQ's defaults.
func (b *Broker) processUpdateSubscriptionGroup(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	c := NewSubscriptionGroupConfig("")
	if err := json.Unmarshal(req.Body, &c); err != nil {
		return remoting.NewResponse(remoting.SystemError, "bad subscription group config: "+err.Error()), nil
	}
	if c.GroupName == "" {
		return remoting.NewResponse(remoting.SystemError, "subscription group config without groupName"), nil
	}
	if resp := checkGroupField("groupName", c.GroupName); resp != nil {
		return resp, nil
	}
	// 0 is valid: RocketMQ reads it as "no retries for this group" (send-back answers SUCCESS).
	if remark := b.queueNumsRemark("retryQueueNums", c.RetryQueueNums, 0); remark != "" {
		return remoting.NewResponse(remoting.SystemError, "subscription group["+c.GroupName+"]: "+remark), nil
	}
	b.groups.update(c)
	b.log.Info().Str("group", c.GroupName).Msg("subscription group updated")
	return remoting.NewResponse(remoting.Success, ""), nil
}

// processDeleteSubscriptionGroup handles DELETE_SUBSCRIPTIONGROUP (207).
func (b *Broker) processDeleteSubscriptionGroup(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.DeleteSubscriptionGroupRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if b.groups.delete(h.GroupName) {
		b.log.Info().Str("group", h.GroupName).Msg("subscription group deleted")
	}
	return remoting.NewResponse(remoting.Success, ""), nil
}

// processAllConsumerOffset handles GET_ALL_CONSUMER_OFFSET (43).
func (b *Broker) processAllConsumerOffset(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	return jsonResponse(protocol.ConsumerOffsetSerializeWrapper{OffsetTable: b.offsets.snapshot()})
}

// processAllDelayOffset handles GET_ALL_DELAY_OFFSET (45): the schedule cursors, as
// delayOffset.json holds them (RocketMQ reads the file; the memory copy is newer).
func (b *Broker) processAllDelayOffset(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	return jsonResponse(b.retry.sched.snapshot())
}

// processTopicStats handles GET_TOPIC_STATS_INFO (202): per write queue, its offsets and the
// store time of its last message. It visits only the stored config's queues (at most
// MaxQueueNums), whatever the request says.
func (b *Broker) processTopicStats(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetTopicStatsInfoRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	tc, ok := b.topics.get(h.Topic)
	if !ok {
		return remoting.NewResponse(remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist", h.Topic)), nil
	}
	n := b.queueLoopBound(tc.WriteQueueNums)
	t := protocol.TopicStatsTable{OffsetTable: make(map[protocol.MessageQueue]protocol.TopicOffset, n)}
	for q := range n {
		o := protocol.TopicOffset{MinOffset: b.store.MinOffsetInQueue(h.Topic, q),
			MaxOffset: b.store.MaxOffsetInQueue(h.Topic, q)}
		if o.MaxOffset > 0 {
			o.LastUpdateTimestamp, _ = b.store.GetMessageStoreTimestamp(h.Topic, q, o.MaxOffset-1)
		}
		t.OffsetTable[protocol.MessageQueue{Topic: h.Topic, BrokerName: b.opts.BrokerName, QueueID: int(q)}] = o
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = t.Encode()
	return resp, nil
}

// processConsumeStats handles GET_CONSUME_STATS (208): for the topic asked, or every topic the
// group has offsets for, each read queue's max offset, the group's offset and the store time of
// the last message consumed. consumeTps is 0: the broker keeps no per-group rates.
func (b *Broker) processConsumeStats(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetConsumeStatsRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	topics := []string{h.Topic}
	if h.Topic == "" {
		topics = b.offsets.topicsOf(h.ConsumerGroup)
	}
	s := protocol.ConsumeStats{OffsetTable: map[protocol.MessageQueue]protocol.OffsetWrapper{}}
	for _, topic := range topics {
		tc, ok := b.topics.get(topic)
		if !ok {
			continue
		}
		for q := range b.queueLoopBound(tc.ReadQueueNums) {
			w := protocol.OffsetWrapper{BrokerOffset: b.store.MaxOffsetInQueue(topic, q),
				ConsumerOffset: max(0, b.offsets.query(h.ConsumerGroup, topic, q))}
			if w.ConsumerOffset > 0 {
				w.LastTimestamp, _ = b.store.GetMessageStoreTimestamp(topic, q, w.ConsumerOffset-1)
			}
			s.OffsetTable[protocol.MessageQueue{Topic: topic, BrokerName: b.opts.BrokerName, QueueID: int(q)}] = w
		}
		s.ConsumeTps += b.retry.stats.groupRates.tps(topic, h.ConsumerGroup)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = s.Encode()
	return resp, nil
}

// brokerVersionDesc names this broker in GET_BROKER_RUNTIME_INFO.
const brokerVersionDesc = "mq (RocketMQ 4.x protocol)"

// processRuntimeInfo handles GET_BROKER_RUNTIME_INFO (28): a KVTable with the RocketMQ keys we
// can fill (prepareRuntimeInfo and DefaultMessageStore.getRuntimeInfo).
func (b *Broker) processRuntimeInfo(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = (&route.KVTable{Table: b.runtimeInfo(time.Now())}).Encode()
	return resp, nil
}

func (b *Broker) runtimeInfo(now time.Time) map[string]string {
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	st := b.store.Stats()
	put, putToday, putYesterday, get, getToday, getYesterday := b.retry.stats.dayMarks(now)
	boot := b.retry.stats.start
	up := now.Sub(boot)
	t := map[string]string{
		"brokerVersionDesc":           brokerVersionDesc,
		"brokerVersion":               i64(int64(remoting.ProtocolVersion)),
		"msgPutTotalTodayNow":         i64(put),
		"msgPutTotalTodayMorning":     i64(putToday),
		"msgPutTotalYesterdayMorning": i64(putYesterday),
		"msgGetTotalTodayNow":         i64(get),
		"msgGetTotalTodayMorning":     i64(getToday),
		"msgGetTotalYesterdayMorning": i64(getYesterday),
		"commitLogMinOffset":          i64(st.MinPhyOffset),
		"commitLogMaxOffset":          i64(st.MaxPhyOffset),
		"dispatchBehindBytes":         i64(st.MaxPhyOffset - st.DispatchedPhyOffset),
		"remainHowManyDataToFlush":    i64(st.MaxPhyOffset - st.FlushedPhyOffset),
		"bootTimestamp":               i64(boot.UnixMilli()),
		"runtime": fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]", int(up.Hours())/24,
			int(up.Hours())%24, int(up.Minutes())%60, int(up.Seconds())%60),
		// Ours, not RocketMQ's.
		"commitLogSegments": strconv.Itoa(st.CommitLogSegments),
		"consumeQueues":     strconv.Itoa(st.ConsumeQueues),
		"commitLogFsyncs":   i64(st.CommitLogFsyncs),
	}
	if ts, err := b.store.EarliestMessageTime(); err == nil {
		t["earliestMessageTimeStamp"] = i64(ts)
	}
	if putTps, getTps, ok := b.retry.stats.tps.rates(); ok {
		t["putTps"], t["getTransferedTps"] = formatTPS(putTps), formatTPS(getTps)
	}
	if d, err := b.store.DiskSpace(); err == nil {
		ratio := strconv.FormatFloat(d.UsedRatio(), 'f', -1, 64)
		t["commitLogDiskRatio"] = ratio
		t["commitLogDiskRatio_"+b.opts.Store.Dir] = ratio
		t["consumeQueueDiskRatio"] = ratio // one directory holds both
		t["commitLogDirCapacity"] = fmt.Sprintf("Total : %s, Free : %s.", humanBytes(d.Total), humanBytes(d.Free))
	}
	for level, off := range b.retry.sched.snapshot().OffsetTable {
		maxOff := b.store.MaxOffsetInQueue(names.TopicSchedule, level-1)
		t["scheduleMessageOffset_"+strconv.Itoa(int(level))] = i64(off) + "," + i64(maxOff)
	}
	return t
}
