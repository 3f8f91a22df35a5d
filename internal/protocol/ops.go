package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
)

// The operators' admin requests of issue 31: the name service's write-permission switches and
// configuration, and the broker's configuration, consume statistics, offset cloning and
// ConsumeQueue inspection (RocketMQ 4.9's RequestCode, header classes and bodies).

// WipeWritePermOfBrokerRequestHeader is the header of WIPE_WRITE_PERM_OF_BROKER (205) and
// AddWritePermOfBrokerRequestHeader of ADD_WRITE_PERM_OF_BROKER (327): the broker name, as
// GET_REPLICA_INFO's header carries it.
type (
	WipeWritePermOfBrokerRequestHeader = GetReplicaInfoRequestHeader
	AddWritePermOfBrokerRequestHeader  = GetReplicaInfoRequestHeader
)

// WipeWritePermOfBrokerResponseHeader answers it with the number of topics changed.
type WipeWritePermOfBrokerResponseHeader struct {
	WipeTopicCount int32 `ext:"wipeTopicCount,required"`
}

// AddWritePermOfBrokerResponseHeader answers it with the number of topics changed.
type AddWritePermOfBrokerResponseHeader struct {
	AddTopicCount int32 `ext:"addTopicCount,required"`
}

// GetBrokerConfigResponseHeader answers GET_BROKER_CONFIG (26): version is the configuration's
// DataVersion as JSON; the body is the configuration as Java properties text.
type GetBrokerConfigResponseHeader struct {
	Version string `ext:"version,required"`
}

// GetConsumeStatsInBrokerHeader is the header of GET_BROKER_CONSUME_STATS (317): isOrder
// keeps only order topics.
type GetConsumeStatsInBrokerHeader struct {
	IsOrder bool `ext:"isOrder,required"`
}

// CloneGroupOffsetRequestHeader is the header of CLONE_GROUP_OFFSET (314): an empty topic
// clones every topic srcGroup has offsets for.
type CloneGroupOffsetRequestHeader struct {
	SrcGroup  string `ext:"srcGroup,required"`
	DestGroup string `ext:"destGroup,required"`
	Topic     string `ext:"topic,omitempty"`
	Offline   bool   `ext:"offline"`
}

// QueryConsumeQueueRequestHeader is the header of QUERY_CONSUME_QUEUE (321): count entries of
// one queue from index; consumerGroup, when set, asks for the group's subscription too.
type QueryConsumeQueueRequestHeader struct {
	Topic         string `ext:"topic,required"`
	QueueID       int32  `ext:"queueId,required"`
	Index         int64  `ext:"index,required"`
	Count         int32  `ext:"count,required"`
	ConsumerGroup string `ext:"consumerGroup,omitempty"`
}

// ViewBrokerStatsDataRequestHeader is the header of VIEW_BROKER_STATS_DATA (315): one
// statistic (TOPIC_PUT_NUMS, GROUP_GET_NUMS, ...) of one key (a topic, or topic@group).
type ViewBrokerStatsDataRequestHeader struct {
	StatsName string `ext:"statsName,required"`
	StatsKey  string `ext:"statsKey,required"`
}

// QueryTopicConsumeByWhoRequestHeader is the header of QUERY_TOPIC_CONSUME_BY_WHO (300).
type QueryTopicConsumeByWhoRequestHeader = TopicHeader

// QueryTopicsByConsumerRequestHeader is the header of QUERY_TOPICS_BY_CONSUMER (343).
type QueryTopicsByConsumerRequestHeader struct {
	Group string `ext:"group,required"`
}

// ConsumeStatsList is the body of GET_BROKER_CONSUME_STATS: per subscription group, the
// ConsumeStats of each topic it consumes on the broker, and the sum of their lags.
type ConsumeStatsList struct {
	BrokerAddr string
	// Groups are the groups in the order of the body, each with its topics' stats.
	Groups    []GroupConsumeStats
	TotalDiff int64
}

// GroupConsumeStats is one group of a ConsumeStatsList.
type GroupConsumeStats struct {
	Group string
	Stats []*ConsumeStats
}

// DecodeConsumeStatsList parses a GET_BROKER_CONSUME_STATS body, whose ConsumeStats carry
// fastjson's object keys. Errors wrap ErrMalformedBody.
func DecodeConsumeStatsList(b []byte) (*ConsumeStatsList, error) {
	l := &ConsumeStatsList{}
	err := scanObject(b, func(key, val []byte) error {
		name, err := fieldName(key)
		if err != nil {
			return err
		}
		switch name {
		case "brokerAddr":
			return json.Unmarshal(val, &l.BrokerAddr)
		case "totalDiff":
			return json.Unmarshal(val, &l.TotalDiff)
		case "consumeStatsList":
			return scanArray(val, func(elem []byte) error {
				return scanObject(elem, func(key, val []byte) error {
					group, err := fieldName(key)
					if err != nil {
						return err
					}
					g := GroupConsumeStats{Group: group}
					if err := scanArray(val, func(cs []byte) error {
						s, err := DecodeConsumeStats(cs)
						if err == nil {
							g.Stats = append(g.Stats, s)
						}
						return err
					}); err != nil {
						return err
					}
					l.Groups = append(l.Groups, g)
					return nil
				})
			})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: consume stats list: %v", ErrMalformedBody, err)
	}
	return l, nil
}

// scanArray calls fn with each element of the JSON array b (elements may hold fastjson's
// object keys).
func scanArray(b []byte, fn func(elem []byte) error) error {
	b = trimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '[' {
		return errors.New("not an array")
	}
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == ']' {
		return nil
	}
	for {
		end, err := skipValue(b, i)
		if err != nil {
			return err
		}
		if err := fn(b[i:end]); err != nil {
			return err
		}
		i = skipSpace(b, end)
		if i >= len(b) {
			return errors.New("unterminated array")
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			if skipSpace(b, i+1) != len(b) {
				return errors.New("data after array")
			}
			return nil
		default:
			return fmt.Errorf("unexpected %q in array", b[i])
		}
	}
}
