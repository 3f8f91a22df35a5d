package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// GET_BROKER_CONFIG and UPDATE_BROKER_CONFIG: the broker's settings under RocketMQ's names
// (BrokerConfig, MessageStoreConfig and NettyServerConfig keys), in RocketMQ's units.

// maxConfigBody bounds UPDATE_BROKER_CONFIG's body: RocketMQ's whole configuration is a few
// kilobytes of properties text.
const maxConfigBody = 64 << 10

// millis renders a duration as RocketMQ's millisecond settings hold it.
func millis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// brokerConfig is the broker's configuration: each key is a RocketMQ setting the node has, with
// the node's value.
func (s *Service) brokerConfig() map[string]string {
	o := s.core.Options()
	b, st := o.Broker, storeDefaults(o.Store)
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	host, port := o.BrokerAddr, ""
	if k := strings.LastIndexByte(o.BrokerAddr, ':'); k >= 0 {
		host, port = o.BrokerAddr[:k], o.BrokerAddr[k+1:]
	}
	levels := make([]string, len(o.Timers.DelayLevels))
	for k, d := range o.Timers.DelayLevels {
		levels[k] = delayLevel(d)
	}
	return map[string]string{
		"brokerClusterName":              b.ClusterName,
		"brokerName":                     b.Name,
		"brokerId":                       i(b.ID),
		"brokerRole":                     string(s.core.Role()),
		"brokerIP1":                      host,
		"listenPort":                     port,
		"namesrvAddr":                    strings.Join(o.NameServers, ";"),
		KeyBrokerPermission:              strconv.Itoa(int(s.core.Permission())),
		"autoCreateTopicEnable":          strconv.FormatBool(!b.DisableAutoCreateTopic),
		"autoCreateSubscriptionGroup":    strconv.FormatBool(!o.DisableAutoCreateSubscriptionGroup),
		"forceRegister":                  strconv.FormatBool(!b.DisableForceRegister),
		"notifyConsumerIdsChangedEnable": strconv.FormatBool(!b.DisableNotifyConsumerIdsChanged),
		"defaultTopicQueueNums":          strconv.Itoa(int(o.DefaultTopicQueueNums)),
		"longPollingEnable":              strconv.FormatBool(!o.LongPollingDisable),
		"registerNameServerPeriod":       millis(o.Periods.RegisterNameServerPeriod),
		"flushConsumerOffsetInterval":    millis(o.Periods.FlushConsumerOffsetInterval),
		"channelExpiredTimeout":          millis(o.Periods.ClientChannelExpiredTime),
		"sendMessageThreadPoolNums":      strconv.Itoa(o.SendThreads),
		"pullMessageThreadPoolNums":      strconv.Itoa(o.PullThreads),
		"queryMessageThreadPoolNums":     strconv.Itoa(o.QueryThreads),
		"adminBrokerThreadPoolNums":      strconv.Itoa(o.AdminThreads),
		"clientManageThreadPoolNums":     strconv.Itoa(o.ClientThreads),
		"maxMessageSize":                 strconv.Itoa(o.Limits.MaxMessageBytes),
		"messageDelayLevel":              strings.Join(levels, " "),
		"rejectTransactionMessage":       strconv.FormatBool(o.Transactions.Reject),
		"transactionTimeOut":             millis(o.Transactions.Timeout),
		"transactionCheckMax":            strconv.Itoa(o.Transactions.CheckMax),
		"transactionCheckInterval":       millis(o.Transactions.CheckInterval),
		"storePathRootDir":               st.Dir,
		"storePathCommitLog":             st.Dir + "/commitlog",
		"flushDiskType":                  string(st.FlushDiskType),
		"readUnCommitted":                strconv.FormatBool(st.ReadUnCommitted),
		"mappedFileSizeCommitLog":        i(st.SegmentBytes),
		"mappedFileSizeConsumeQueue":     strconv.Itoa(st.ConsumeQueueUnits * 20),
		"flushIntervalCommitLog":         millis(st.FlushIntervalCommitLog),
		"fileReservedTime":               strconv.FormatInt(int64(st.FileReservedTime/time.Hour), 10),
		"deleteWhen":                     st.DeleteWhen,
		"diskMaxUsedSpaceRatio":          strconv.Itoa(st.DiskMaxUsedSpaceRatio),
		"diskSpaceCleanForciblyRatio":    strconv.Itoa(st.DiskSpaceCleanForciblyRatio),
		"diskSpaceWarningLevelRatio":     strconv.Itoa(st.DiskSpaceWarningLevelRatio),
		"cleanFileForciblyEnable":        strconv.FormatBool(!st.DisableCleanFileForcibly),
		"cleanResourceInterval":          millis(st.CleanResourceInterval),
		"accessMessageInMemoryMaxRatio":  strconv.Itoa(st.AccessMessageInMemoryMaxRatio),
		"messageIndexEnable":             strconv.FormatBool(!st.DisableIndex),
		"maxHashSlotNum":                 strconv.Itoa(st.MaxHashSlotNum),
		"maxIndexNum":                    strconv.Itoa(st.MaxIndexNum),
		"checkCRCOnRecover":              strconv.FormatBool(!st.DisableCRCOnRecover),
	}
}

// storeDefaults fills the store settings left zero with the defaults storage.Open applies
// (storage keeps its filled copy to itself), so the answer shows what the store runs with.
func storeDefaults(st storage.Options) storage.Options {
	or := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	ori := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if st.SegmentBytes == 0 {
		st.SegmentBytes = storage.DefaultSegmentBytes
	}
	if st.FlushDiskType == "" {
		st.FlushDiskType = storage.AsyncFlush
	}
	if st.DeleteWhen == "" {
		st.DeleteWhen = storage.DefaultDeleteWhen
	}
	ori(&st.ConsumeQueueUnits, storage.DefaultConsumeQueueUnits)
	ori(&st.DiskMaxUsedSpaceRatio, storage.DefaultDiskMaxUsedSpaceRatio)
	ori(&st.DiskSpaceCleanForciblyRatio, storage.DefaultDiskSpaceCleanForciblyRatio)
	ori(&st.DiskSpaceWarningLevelRatio, storage.DefaultDiskSpaceWarningLevelRatio)
	ori(&st.AccessMessageInMemoryMaxRatio, 40) // storage's default, RocketMQ's accessMessageInMemoryMaxRatio
	ori(&st.MaxHashSlotNum, storage.DefaultMaxHashSlotNum)
	ori(&st.MaxIndexNum, storage.DefaultMaxIndexNum)
	or(&st.FlushIntervalCommitLog, storage.DefaultFlushIntervalCommit)
	or(&st.FileReservedTime, storage.DefaultFileReservedTime)
	or(&st.CleanResourceInterval, storage.DefaultCleanResourceInterval)
	return st
}

// delayLevel writes one delay as RocketMQ's messageDelayLevel does ("1s", "5m", "2h", "1d").
func delayLevel(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0 && d > 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d%time.Hour == 0 && d > 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0 && d > 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}

// processGetBrokerConfig handles GET_BROKER_CONFIG (26): the configuration as properties text,
// and its version (RocketMQ's Configuration DataVersion, counting the updates) in the header.
func (s *Service) processGetBrokerConfig(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	version, err := json.Marshal(route.DataVersion{Timestamp: s.configVersionAt.Load(), Counter: s.configVersion.Load()})
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = remoting.EncodeHeader(&protocol.GetBrokerConfigResponseHeader{Version: string(version)})
	resp.Body = []byte(route.FormatProperties(s.brokerConfig()))
	return resp, nil
}

// processUpdateBrokerConfig handles UPDATE_BROKER_CONFIG (25). brokerPermission changes at run
// time, as in RocketMQ (registered again at once, so producers or consumers leave the broker at
// their next route refresh) and is persisted in the store's config/broker.properties. Every
// other key is refused with NO_PERMISSION naming it: the node reads its settings only at start
// (RocketMQ accepts them and most take effect only after a restart). A refused request changes
// nothing.
func (s *Service) processUpdateBrokerConfig(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if len(req.Body) > maxConfigBody {
		return remoting.NewResponse(remoting.SystemError,
			fmt.Sprintf("config body is %d bytes; at most %d are taken", len(req.Body), maxConfigBody)), nil
	}
	props, err := route.ParseProperties(string(req.Body))
	if err != nil {
		return remoting.NewResponse(remoting.SystemError, "string2Properties error: "+err.Error()), nil
	}
	var refused []string
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if k != KeyBrokerPermission {
			refused = append(refused, names.Quote(k, len(k)))
		}
	}
	if len(refused) > 0 {
		return remoting.NewResponse(remoting.NoPermission, fmt.Sprintf(
			"cannot change %s at run time: the broker changes only %s (set the others when starting the node)",
			route.ListSome(refused), KeyBrokerPermission)), nil
	}
	v, ok := props[KeyBrokerPermission]
	if !ok {
		return remoting.NewResponse(remoting.Success, ""), nil
	}
	p, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err == nil {
		err = broker.CheckPermission(int32(p))
	}
	if err != nil {
		return remoting.NewResponse(remoting.SystemError,
			fmt.Sprintf("%s=%s: %v", KeyBrokerPermission, names.Quote(v, len(v)), err)), nil
	}
	if err := s.persistConfig(map[string]string{KeyBrokerPermission: strconv.Itoa(int(p))}); err != nil {
		return remoting.NewResponse(remoting.SystemError, fmt.Sprintf("persist %s: %v", BrokerConfigFile, err)), nil
	}
	if err := s.core.SetPermission(int32(p)); err != nil {
		return remoting.NewResponse(remoting.SystemError, err.Error()), nil
	}
	s.configVersion.Add(1)
	s.configVersionAt.Store(time.Now().UnixMilli())
	s.log.Info().Str("client", ch.RemoteAddr()).Int64(KeyBrokerPermission, p).Msg("broker config updated")
	return remoting.NewResponse(remoting.Success, ""), nil
}
