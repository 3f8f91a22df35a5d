package broker

import (
	"errors"
	"fmt"
	"time"

	"github.com/mqgo/mq/internal/broker/tables"
	"github.com/mqgo/mq/internal/names"
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
