package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/names"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// Admin reads and subscription group admin (part of RocketMQ's AdminBrokerProcessor).
//
// Bodies slaves sync from their master round-trip through exported Go types:
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG through broker.SubscriptionGroupWrapper, GET_ALL_CONSUMER_OFFSET
// through protocol.ConsumerOffsetSerializeWrapper, GET_ALL_DELAY_OFFSET through
// protocol.DelayOffsetSerializeWrapper (GET_ALL_TOPIC_CONFIG, route.TopicConfigSerializeWrapper,
// is topics.go's).

// processAllSubscriptionGroups handles GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201), docs/protocol.md §6.3.
func (s *Service) processAllSubscriptionGroups(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	return jsonResponse(s.core.Groups().All())
}

// processUpdateSubscriptionGroup handles UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200): the body is
// a SubscriptionGroupConfig; fields it leaves out take RocketMQ's defaults.
func (s *Service) processUpdateSubscriptionGroup(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	c := broker.NewSubscriptionGroupConfig("")
	if err := json.Unmarshal(req.Body, &c); err != nil {
		return remoting.NewResponse(remoting.SystemError, "bad subscription group config: "+err.Error()), nil
	}
	if err := s.core.Groups().Update(c); err != nil {
		var re *remoting.ResponseError
		if errors.As(err, &re) {
			return remoting.NewResponse(re.Code, re.Remark), nil
		}
		return nil, err
	}
	s.log.Info().Str("group", c.GroupName).Msg("subscription group updated")
	return remoting.NewResponse(remoting.Success, ""), nil
}

// processDeleteSubscriptionGroup handles DELETE_SUBSCRIPTIONGROUP (207).
func (s *Service) processDeleteSubscriptionGroup(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.DeleteSubscriptionGroupRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if s.core.Groups().Delete(h.GroupName) {
		s.log.Info().Str("group", h.GroupName).Msg("subscription group deleted")
	}
	// RocketMQ 4.9.3's removeOffset: without it the group's lag stays on show.
	if h.RemoveOffset {
		if n := s.core.Offsets().RemoveGroup(h.GroupName); n > 0 {
			s.log.Info().Str("group", h.GroupName).Int("topics", n).Msg("consumer offsets of deleted group removed")
		}
	}
	return remoting.NewResponse(remoting.Success, ""), nil
}

// processAllConsumerOffset handles GET_ALL_CONSUMER_OFFSET (43).
func (s *Service) processAllConsumerOffset(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	return jsonResponse(protocol.ConsumerOffsetSerializeWrapper{OffsetTable: s.core.Offsets().All()})
}

// processAllDelayOffset handles GET_ALL_DELAY_OFFSET (45): the schedule cursors, as
// delayOffset.json holds them (RocketMQ reads the file; the memory copy is newer).
func (s *Service) processAllDelayOffset(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	return jsonResponse(s.delayOffsets())
}

// delayOffsets are the schedule's cursors, none without a schedule service.
func (s *Service) delayOffsets() protocol.DelayOffsetSerializeWrapper {
	if s.deps.Delays == nil {
		return protocol.DelayOffsetSerializeWrapper{OffsetTable: map[int32]int64{}}
	}
	return s.deps.Delays.DelayOffsets()
}

// processTopicStats handles GET_TOPIC_STATS_INFO (202): per write queue, its offsets and the
// store time of its last message. It visits only the stored config's queues (at most
// MaxQueueNums), whatever the request says.
func (s *Service) processTopicStats(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetTopicStatsInfoRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	tc, ok := s.core.Topics().Get(h.Topic)
	if !ok {
		return remoting.NewResponse(remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist", h.Topic)), nil
	}
	store, opts := s.core.Store(), s.core.Options()
	n := s.core.Topics().QueueLoopBound(tc.WriteQueueNums)
	t := protocol.TopicStatsTable{OffsetTable: make(map[protocol.MessageQueue]protocol.TopicOffset, n)}
	for q := range n {
		o := protocol.TopicOffset{MinOffset: store.MinOffsetInQueue(h.Topic, q),
			MaxOffset: store.MaxOffsetInQueue(h.Topic, q)}
		if o.MaxOffset > 0 {
			o.LastUpdateTimestamp, _ = store.GetMessageStoreTimestamp(h.Topic, q, o.MaxOffset-1)
		}
		t.OffsetTable[protocol.MessageQueue{Topic: h.Topic, BrokerName: opts.Broker.Name, QueueID: int(q)}] = o
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = t.Encode()
	return resp, nil
}

// processConsumeStats handles GET_CONSUME_STATS (208): for the topic asked, or every topic the
// group has offsets for, each read queue's max offset, the group's offset and the store time of
// the last message consumed. consumeTps is 0: the broker keeps no per-group rates.
func (s *Service) processConsumeStats(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetConsumeStatsRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	topics := []string{h.Topic}
	if h.Topic == "" {
		topics = s.core.Offsets().TopicsOf(h.ConsumerGroup)
	}
	store, opts := s.core.Store(), s.core.Options()
	cs := protocol.ConsumeStats{OffsetTable: map[protocol.MessageQueue]protocol.OffsetWrapper{}}
	for _, topic := range topics {
		tc, ok := s.core.Topics().Get(topic)
		if !ok {
			continue
		}
		for q := range s.core.Topics().QueueLoopBound(tc.ReadQueueNums) {
			w := protocol.OffsetWrapper{BrokerOffset: store.MaxOffsetInQueue(topic, q),
				ConsumerOffset: max(0, s.core.Offsets().Query(h.ConsumerGroup, topic, q))}
			if w.ConsumerOffset > 0 {
				w.LastTimestamp, _ = store.GetMessageStoreTimestamp(topic, q, w.ConsumerOffset-1)
			}
			cs.OffsetTable[protocol.MessageQueue{Topic: topic, BrokerName: opts.Broker.Name, QueueID: int(q)}] = w
		}
		if s.deps.Stats != nil {
			cs.ConsumeTps += s.deps.Stats.ConsumeTPS(topic, h.ConsumerGroup)
		}
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = cs.Encode()
	return resp, nil
}

// brokerVersionDesc names this broker's version in GET_BROKER_RUNTIME_INFO as RocketMQ's do,
// by the protocol version it speaks ("V4_9_3"): one word, which mqadmin clusterList prints in
// a column of its own. brokerImplementation says it is mq.
var brokerVersionDesc = protocol.VersionDesc(int(remoting.ProtocolVersion))

const brokerImplementation = "mq"

// processRuntimeInfo handles GET_BROKER_RUNTIME_INFO (28): a KVTable with the RocketMQ keys we
// can fill (prepareRuntimeInfo and DefaultMessageStore.getRuntimeInfo).
func (s *Service) processRuntimeInfo(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = (&route.KVTable{Table: s.runtimeInfo(time.Now())}).Encode()
	return resp, nil
}

func (s *Service) runtimeInfo(now time.Time) map[string]string {
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	store, opts, pools := s.core.Store(), s.core.Options(), s.core.Pools()
	st := store.Stats()
	var put, putToday, putYesterday, get, getToday, getYesterday int64
	boot := now
	if s.deps.Stats != nil {
		put, putToday, putYesterday, get, getToday, getYesterday = s.deps.Stats.DayMarks(now)
		boot = s.deps.Stats.Started()
	}
	up := now.Sub(boot)
	t := map[string]string{
		"brokerVersionDesc":           brokerVersionDesc,
		"brokerImplementation":        brokerImplementation,
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
		// The request pools' backlog, as RocketMQ's thread pools report theirs, and the
		// CommitLog append lock's hold (clusterList's #InTPS(LOAD), #OutTPS(LOAD), #PCWait).
		"sendThreadPoolQueueSize":               strconv.Itoa(pools.Send.QueueLen()),
		"sendThreadPoolQueueHeadWaitTimeMills":  i64(pools.Send.HeadWait().Milliseconds()),
		"pullThreadPoolQueueSize":               strconv.Itoa(pools.Pull.QueueLen()),
		"pullThreadPoolQueueHeadWaitTimeMills":  i64(pools.Pull.HeadWait().Milliseconds()),
		"queryThreadPoolQueueSize":              strconv.Itoa(pools.Query.QueueLen()),
		"queryThreadPoolQueueHeadWaitTimeMills": i64(pools.Query.HeadWait().Milliseconds()),
		"pageCacheLockTimeMills":                i64(store.LockTimeMills(now.UnixMilli())),
		// Ours, not RocketMQ's.
		"commitLogSegments": strconv.Itoa(st.CommitLogSegments),
		"consumeQueues":     strconv.Itoa(st.ConsumeQueues),
		"commitLogFsyncs":   i64(st.CommitLogFsyncs),
	}
	if ts, err := store.EarliestMessageTime(); err == nil {
		t["earliestMessageTimeStamp"] = i64(ts)
	}
	if s.deps.Stats != nil {
		if putTps, getTps, ok := s.deps.Stats.Rates(); ok {
			t["putTps"], t["getTransferedTps"] = formatTPS(putTps), formatTPS(getTps)
		}
	}
	if d, err := store.DiskSpace(); err == nil {
		ratio := strconv.FormatFloat(d.UsedRatio(), 'f', -1, 64)
		t["commitLogDiskRatio"] = ratio
		t["commitLogDiskRatio_"+opts.Store.Dir] = ratio
		t["consumeQueueDiskRatio"] = ratio // one directory holds both
		t["commitLogDirCapacity"] = fmt.Sprintf("Total : %s, Free : %s.", humanBytes(d.Total), humanBytes(d.Free))
	}
	for level, off := range s.delayOffsets().OffsetTable {
		maxOff := store.MaxOffsetInQueue(names.TopicSchedule, level-1)
		t["scheduleMessageOffset_"+strconv.Itoa(int(level))] = i64(off) + "," + i64(maxOff)
	}
	return t
}

// formatTPS writes three rates as RocketMQ's runtime info does: separated by spaces.
func formatTPS(r [3]float64) string {
	var sb strings.Builder
	for i, v := range r {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(strconv.FormatFloat(v, 'f', 2, 64))
	}
	return sb.String()
}

// humanBytes formats n as RocketMQ's MixAll.humanReadableByteCount(n, false) does: binary
// units, one decimal ("1.5 GiB"), plain bytes below 1 KiB ("512 B").
func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatUint(n, 10) + " B"
	}
	exp, div := 0, uint64(unit)
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return strconv.FormatFloat(float64(n)/float64(div), 'f', 1, 64) + " " + string("KMGTPE"[exp]) + "iB"
}
