package protocol

import (
	"github.com/mqgo/mq/remoting"
)

// Pull sysFlag bits of PullMessageRequestHeader.SysFlag (docs/protocol.md §5.6). Part of the wire
// format; do not change.
const (
	PullFlagCommitOffset int32 = 1 << 0 // commitOffset carries the consumer's offset
	PullFlagSuspend      int32 = 1 << 1 // the broker may hold the request (long polling)
	PullFlagSubscription int32 = 1 << 2 // use this header's subscription, not the heartbeat's
	PullFlagClassFilter  int32 = 1 << 3 // class filter mode (never set by Go clients)
)

// BuildPullSysFlag combines the pull flags the way the clients do.
func BuildPullSysFlag(commitOffset, suspend, subscription, classFilter bool) int32 {
	var f int32
	if commitOffset {
		f |= PullFlagCommitOffset
	}
	if suspend {
		f |= PullFlagSuspend
	}
	if subscription {
		f |= PullFlagSubscription
	}
	if classFilter {
		f |= PullFlagClassFilter
	}
	return f
}

// PullMessageRequestHeader is the header of PULL_MESSAGE (11).
type PullMessageRequestHeader struct {
	ConsumerGroup        string
	Topic                string
	QueueID              int32
	QueueOffset          int64
	MaxMsgNums           int32
	SysFlag              int32
	CommitOffset         int64
	SuspendTimeoutMillis int64
	Subscription         string // empty unless PullFlagSubscription
	SubVersion           int64
	ExpressionType       string // "" means TAG
	BrokerName           string // "bname"; optional
}

// Encode implements remoting.Header with the keys and value forms the Go client sends.
func (h *PullMessageRequestHeader) Encode(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
	ext["topic"] = h.Topic
	remoting.PutInt32(ext, "queueId", h.QueueID)
	remoting.PutInt64(ext, "queueOffset", h.QueueOffset)
	remoting.PutInt32(ext, "maxMsgNums", h.MaxMsgNums)
	remoting.PutInt32(ext, "sysFlag", h.SysFlag)
	remoting.PutInt64(ext, "commitOffset", h.CommitOffset)
	remoting.PutInt64(ext, "suspendTimeoutMillis", h.SuspendTimeoutMillis)
	ext["subscription"] = h.Subscription
	remoting.PutInt64(ext, "subVersion", h.SubVersion)
	ext["expressionType"] = h.ExpressionType
	putOptional(ext, "bname", h.BrokerName)
}

// Decode implements remoting.Header.
func (h *PullMessageRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.ConsumerGroup = r.String("consumerGroup", true)
	h.Topic = r.String("topic", true)
	h.QueueID = r.Int32("queueId", true)
	h.QueueOffset = r.Int64("queueOffset", true)
	h.MaxMsgNums = r.Int32("maxMsgNums", true)
	h.SysFlag = r.Int32("sysFlag", true)
	h.CommitOffset = r.Int64("commitOffset", true)
	h.SuspendTimeoutMillis = r.Int64("suspendTimeoutMillis", true)
	h.Subscription = r.String("subscription", false)
	h.SubVersion = r.Int64("subVersion", true)
	h.ExpressionType = r.String("expressionType", false)
	h.BrokerName = r.String("bname", false)
	return r.Err()
}

// HasCommitOffset, HasSuspend and HasSubscription test the sysFlag bits.
func (h *PullMessageRequestHeader) HasCommitOffset() bool { return h.SysFlag&PullFlagCommitOffset != 0 }

// HasSuspend reports the long-polling bit.
func (h *PullMessageRequestHeader) HasSuspend() bool { return h.SysFlag&PullFlagSuspend != 0 }

// HasSubscription reports the subscription bit.
func (h *PullMessageRequestHeader) HasSubscription() bool { return h.SysFlag&PullFlagSubscription != 0 }

// PullMessageResponseHeader answers PULL_MESSAGE with codes 0, 19, 20 and 21. Every field is
// always written (docs/protocol.md §5.6: a missing nextBeginOffset rewinds the consumer to 0).
type PullMessageResponseHeader struct {
	SuggestWhichBrokerID int64
	NextBeginOffset      int64
	MinOffset            int64
	MaxOffset            int64
}

// Encode implements remoting.Header.
func (h *PullMessageResponseHeader) Encode(ext map[string]string) {
	remoting.PutInt64(ext, "suggestWhichBrokerId", h.SuggestWhichBrokerID)
	remoting.PutInt64(ext, "nextBeginOffset", h.NextBeginOffset)
	remoting.PutInt64(ext, "minOffset", h.MinOffset)
	remoting.PutInt64(ext, "maxOffset", h.MaxOffset)
}

// Decode implements remoting.Header.
func (h *PullMessageResponseHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.SuggestWhichBrokerID = r.Int64("suggestWhichBrokerId", false)
	h.NextBeginOffset = r.Int64("nextBeginOffset", true)
	h.MinOffset = r.Int64("minOffset", true)
	h.MaxOffset = r.Int64("maxOffset", true)
	return r.Err()
}
