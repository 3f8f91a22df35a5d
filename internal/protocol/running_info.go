package protocol

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// The body of a consumer's answer to GET_CONSUMER_RUNNING_INFO (307): RocketMQ's
// ConsumerRunningInfo, as fastjson writes it (queues as object keys in mqTable).

// Keys of ConsumerRunningInfo.Properties that RocketMQ's tools read.
const (
	PropNameServerAddr         = "PROP_NAMESERVER_ADDR"
	PropThreadPoolCoreSize     = "PROP_THREADPOOL_CORE_SIZE"
	PropConsumeOrderly         = "PROP_CONSUMEORDERLY"
	PropConsumeType            = "PROP_CONSUME_TYPE"
	PropClientVersion          = "PROP_CLIENT_VERSION"
	PropConsumerStartTimestamp = "PROP_CONSUMER_START_TIMESTAMP"
)

// ProcessQueueInfo is one held queue of a consumer: its committed offset, what it has cached,
// and its lock. Droped is RocketMQ's spelling.
type ProcessQueueInfo struct {
	CommitOffset            int64 `json:"commitOffset"`
	CachedMsgMinOffset      int64 `json:"cachedMsgMinOffset"`
	CachedMsgMaxOffset      int64 `json:"cachedMsgMaxOffset"`
	CachedMsgCount          int32 `json:"cachedMsgCount"`
	CachedMsgSizeInMiB      int32 `json:"cachedMsgSizeInMiB"`
	TransactionMsgMinOffset int64 `json:"transactionMsgMinOffset"`
	TransactionMsgMaxOffset int64 `json:"transactionMsgMaxOffset"`
	TransactionMsgCount     int32 `json:"transactionMsgCount"`
	Locked                  bool  `json:"locked"`
	TryUnlockTimes          int64 `json:"tryUnlockTimes"`
	LastLockTimestamp       int64 `json:"lastLockTimestamp"`
	Droped                  bool  `json:"droped"`
	LastPullTimestamp       int64 `json:"lastPullTimestamp"`
	LastConsumeTimestamp    int64 `json:"lastConsumeTimestamp"`
}

// ConsumeStatus is a topic's consumption rates in ConsumerRunningInfo.StatusTable.
type ConsumeStatus struct {
	PullRT            float64 `json:"pullRT"`
	PullTPS           float64 `json:"pullTPS"`
	ConsumeRT         float64 `json:"consumeRT"`
	ConsumeOKTPS      float64 `json:"consumeOKTPS"`
	ConsumeFailedTPS  float64 `json:"consumeFailedTPS"`
	ConsumeFailedMsgs int64   `json:"consumeFailedMsgs"`
}

// ConsumerRunningInfo is what a consumer reports of one group.
type ConsumerRunningInfo struct {
	Properties      map[string]string
	SubscriptionSet []SubscriptionData
	MQTable         map[MessageQueue]ProcessQueueInfo
	StatusTable     map[string]ConsumeStatus // by topic
	Jstack          string
}

// EncodeConsumerRunningInfo writes info as fastjson writes it, queues sorted.
func EncodeConsumerRunningInfo(info *ConsumerRunningInfo) ([]byte, error) {
	// RocketMQ never writes null for these: a nil map or slice goes out empty.
	props, subs, status := info.Properties, info.SubscriptionSet, info.StatusTable
	if props == nil {
		props = map[string]string{}
	}
	if subs == nil {
		subs = []SubscriptionData{}
	}
	if status == nil {
		status = map[string]ConsumeStatus{}
	}
	propsJSON, err := json.Marshal(props)
	if err != nil {
		return nil, err
	}
	subsJSON, err := json.Marshal(subs)
	if err != nil {
		return nil, err
	}
	statusJSON, err := json.Marshal(status)
	if err != nil {
		return nil, err
	}
	dst := append(make([]byte, 0, 256+256*len(info.MQTable)), `{"jstack":`...)
	dst = appendJSONString(dst, info.Jstack)
	dst = append(dst, `,"mqTable":{`...)
	for i, mq := range slices.SortedFunc(maps.Keys(info.MQTable), compareMessageQueue) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendMessageQueue(dst, mq)
		dst = append(dst, ':')
		pq, err := json.Marshal(info.MQTable[mq])
		if err != nil {
			return nil, err
		}
		dst = append(dst, pq...)
	}
	dst = append(dst, `},"properties":`...)
	dst = append(dst, propsJSON...)
	dst = append(dst, `,"statusTable":`...)
	dst = append(dst, statusJSON...)
	dst = append(dst, `,"subscriptionSet":`...)
	dst = append(dst, subsJSON...)
	return append(dst, '}'), nil
}

// DecodeConsumerRunningInfo reads a ConsumerRunningInfo written by fastjson or by
// EncodeConsumerRunningInfo. Properties written by Java as non-strings are kept as their JSON
// text. Errors wrap ErrMalformedBody.
func DecodeConsumerRunningInfo(b []byte) (*ConsumerRunningInfo, error) {
	info := &ConsumerRunningInfo{Properties: map[string]string{}, MQTable: map[MessageQueue]ProcessQueueInfo{},
		StatusTable: map[string]ConsumeStatus{}}
	err := scanObject(b, func(key, val []byte) error {
		name, err := fieldName(key)
		if err != nil {
			return err
		}
		switch name {
		case "jstack":
			return json.Unmarshal(val, &info.Jstack)
		case "subscriptionSet":
			return json.Unmarshal(val, &info.SubscriptionSet)
		case "statusTable":
			return json.Unmarshal(val, &info.StatusTable)
		case "properties":
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(val, &raw); err != nil {
				return err
			}
			for k, v := range raw {
				var s string
				if json.Unmarshal(v, &s) != nil {
					s = string(v)
				}
				info.Properties[k] = s
			}
		case "mqTable":
			return decodeQueueMap(val, func(mq MessageQueue, v []byte) error {
				var pq ProcessQueueInfo
				err := json.Unmarshal(v, &pq)
				info.MQTable[mq] = pq
				return err
			})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: consumer running info: %v", ErrMalformedBody, err)
	}
	return info, nil
}
