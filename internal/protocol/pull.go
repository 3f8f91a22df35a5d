package protocol

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

// PullMessageRequestHeader is the header of PULL_MESSAGE (11), with the keys and value forms the
// Go client sends.
type PullMessageRequestHeader struct {
	ConsumerGroup        string `ext:"consumerGroup,required"`
	Topic                string `ext:"topic,required"`
	QueueID              int32  `ext:"queueId,required"`
	QueueOffset          int64  `ext:"queueOffset,required"`
	MaxMsgNums           int32  `ext:"maxMsgNums,required"`
	SysFlag              int32  `ext:"sysFlag,required"`
	CommitOffset         int64  `ext:"commitOffset,required"`
	SuspendTimeoutMillis int64  `ext:"suspendTimeoutMillis,required"`
	Subscription         string `ext:"subscription"` // empty unless PullFlagSubscription
	SubVersion           int64  `ext:"subVersion,required"`
	ExpressionType       string `ext:"expressionType"` // "" means TAG
	BrokerName           string `ext:"bname,omitempty"`
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
	SuggestWhichBrokerID int64 `ext:"suggestWhichBrokerId"`
	NextBeginOffset      int64 `ext:"nextBeginOffset,required"`
	MinOffset            int64 `ext:"minOffset,required"`
	MaxOffset            int64 `ext:"maxOffset,required"`
}
