package broker

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/broker/tables"
	"github.com/mqgo/mq/internal/names"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/route"
)

// Limits on what one client can make the broker hold or loop over. RocketMQ has none of them
// (docs/rocketmq-differences.md): its broker trusts the suspend time a pull asks for, parks
// any number of pulls and takes any queue count an admin request carries.
// Their defaults are config's (config.DefaultMaxLongPollingSuspend and the rest).
const (
	// DefaultMaxQueueNums caps a topic's read and write queue counts and a group's
	// retryQueueNums; 1024 is the bound RocketMQ's admin tools and console follow by convention.
	// The name service clamps registrations to the same setting and owns the value, as it
	// cannot import the broker.
	DefaultMaxQueueNums = route.DefaultMaxQueueNums
)

// minMaxQueueNums is the smallest MaxQueueNums allowed: the system topics' own counts
// (SCHEDULE_TOPIC_XXXX has 18 queues, the cluster's topic 16) must fit under it, or clamping
// loaded topics would cut delay levels off.
const minMaxQueueNums = tables.ScheduleTopicQueues

// maxPermValue bounds a topic's perm: PermName.isValid accepts 0 <= perm < PERM_PRIORITY.
const maxPermValue = route.PermPriority - 1

func (o Options) limitDefaults() Options {
	// A connection can never hold more than the whole hold; setting only MaxHeldPulls lower
	// lowers both.
	o.Limits.MaxHeldPullsPerConnection = min(o.Limits.MaxHeldPullsPerConnection, o.Limits.MaxHeldPulls)
	return o
}

func (o Options) limitsValidate() error {
	var errs []error
	if o.Limits.MaxQueueNums < minMaxQueueNums {
		errs = append(errs, fmt.Errorf("broker: Limits.MaxQueueNums %d is below %d, the queues of %s",
			o.Limits.MaxQueueNums, minMaxQueueNums, names.TopicSchedule))
	}
	if o.DefaultTopicQueueNums > o.Limits.MaxQueueNums {
		errs = append(errs, fmt.Errorf("broker: DefaultTopicQueueNums %d is above Limits.MaxQueueNums %d",
			o.DefaultTopicQueueNums, o.Limits.MaxQueueNums))
	}
	return errors.Join(errs...)
}

// suspendTime is how long a pull asking suspendMillis is parked: never negative, never past
// MaxLongPollingSuspend. Clamped rather than refused, so a client asking for two minutes still
// long-polls; the multiplication happens only below the cap, where it cannot overflow.
func (pu *puller) suspendTime(suspendMillis int64) time.Duration {
	limit := pu.opts.Limits.MaxLongPollingSuspend
	switch {
	case suspendMillis <= 0:
		return 0
	case suspendMillis >= int64(limit/time.Millisecond):
		return limit
	}
	return time.Duration(suspendMillis) * time.Millisecond
}

// queueNumsRemark returns the remark refusing n as the value of field (a queue count that
// must lie in [lowest, MaxQueueNums]), or "" when n is fine.
func (b *Broker) queueNumsRemark(field string, n, lowest int32) string {
	if n >= lowest && n <= b.opts.Limits.MaxQueueNums {
		return ""
	}
	return fmt.Sprintf("%s %d is out of range [%d, %d] (MaxQueueNums)", field, n, lowest, b.opts.Limits.MaxQueueNums)
}

// queueLoopBound is the number of queues an admin read may visit for a stored count n: the
// stored configs are capped when written and loaded, and this keeps a loop bounded even if a
// path that installs configs (slave sync) let a larger one in.
func (b *Broker) queueLoopBound(n int32) int32 {
	return max(0, min(n, b.opts.Limits.MaxQueueNums))
}

// heldPullSlotBytes is what one slot of the parked-pull caps stands for: a parked pull takes
// one slot per started KiB it keeps, so MaxHeldPulls (65,536 slots: 64 MiB) bounds the bytes
// parked pulls hold, not only their number. An honest pull, filtered by its group's heartbeat
// subscription, keeps a few hundred bytes and takes one slot.
const heldPullSlotBytes = 1 << 10

// What a parked pull keeps, besides the strings of its header (TestParkedPullRetainsItsSlots
// measures it against what heldPullSlots charges): heldPullBaseBytes, the heldPull with its
// request (no extension fields) and decoded header and its places in the hold's indexes; and
// for a subscription compiled from the pull's own header, heldSubBaseBytes (the subscription
// with its tag and code maps), heldTagBytes a tag, and what a SQL92 expression compiles to
// (sql92.Expr.Size).
const (
	heldPullBaseBytes = 512
	heldSubBaseBytes  = 768
	heldTagBytes      = 128
)

// heldPullSlots is the number of slots a parked pull with header h and subscription sub takes.
func heldPullSlots(h *protocol.PullMessageRequestHeader, sub *subscription) int {
	n := heldPullBaseBytes + len(h.ConsumerGroup) + len(h.Topic) + len(h.Subscription) + len(h.ExpressionType) +
		len(h.BrokerName)
	if h.HasSubscription() && sub != nil && sub != subAll {
		// Compiled from this header for this pull alone (a heartbeat's is shared, and so is
		// the "*" of pulls that carry it).
		n += heldSubBaseBytes + len(sub.data.SubString) + heldTagBytes*max(len(sub.data.TagsSet), len(sub.tags))
		if sub.sql != nil {
			n += sub.sql.Size()
		}
	}
	return (n + heldPullSlotBytes - 1) / heldPullSlotBytes
}

// logLimiter lets a repeating warning through at most once per period, so a client hammering
// a limit cannot flood the log from a hot path.
type logLimiter struct{ next atomic.Int64 }

// allow reports whether a warning may be logged now; concurrent callers race for one pass.
func (l *logLimiter) allow(now time.Time, every time.Duration) bool {
	n := l.next.Load()
	if now.UnixNano() < n {
		return false
	}
	return l.next.CompareAndSwap(n, now.Add(every).UnixNano())
}
