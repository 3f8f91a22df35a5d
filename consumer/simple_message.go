package consumer

import (
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
)

// MessageView is a message a SimpleConsumer received (5.x's MessageView): the message, and the
// receipt handle that acknowledges it or changes how long it stays invisible. Until one of
// them succeeds or the invisible time runs out, the broker hands the message to nobody else;
// afterwards it hands it out again, with DeliveryAttempt raised.
//
// The embedded Message is the consumer's to the caller: read it, keep it. Ack and
// ChangeInvisibleDuration may be called from any goroutine; the handle a
// ChangeInvisibleDuration gets replaces the one before, which the broker no longer takes.
type MessageView struct {
	*Message
	// wireTopic is the topic popped, as brokers know it (the namespace in front): the topic of
	// acks, whose handle says whether the message came from the group's retry topic instead.
	wireTopic string
	handle    atomic.Pointer[receipt]
}

// receipt is one receipt handle: parsed, and the broker's text of it (POP_CK) when it sent one.
type receipt struct {
	info protocol.ExtraInfo
	text string
}

// newReceipt is the handle info; its text is written when it is first needed (most acks leave
// in batches, which name handles by their fields).
func newReceipt(info protocol.ExtraInfo) *receipt { return &receipt{info: info} }

// String is the handle as brokers read it: the broker's own text when it sent one (POP_CK).
func (r *receipt) String() string {
	if r.text != "" {
		return r.text
	}
	return r.info.String()
}

// ReceiptHandle is the message's current receipt handle: RocketMQ 5's extraInfo (POP_CK), eight
// space-separated fields naming the broker, queue, offsets and pop time.
func (v *MessageView) ReceiptHandle() string { return v.handle.Load().String() }

// MessageGroup is the message's group when a producer sent it as a FIFO message (property
// __SHARDINGKEY), else "".
func (v *MessageView) MessageGroup() string { return v.Properties[message.PropertyMessageGroup] }

// DeliveryAttempt counts the times the message was handed out, this one included: 1 the first
// time, more after it came back unacknowledged (5.x's deliveryAttempt, reconsume times + 1).
func (v *MessageView) DeliveryAttempt() int { return int(v.ReconsumeTimes) + 1 }

// InvisibleUntil is when the broker, by its clock, hands the message out again unless it is
// acknowledged first: the pop (or the last ChangeInvisibleDuration) plus the invisible time.
func (v *MessageView) InvisibleUntil() time.Time {
	i := v.handle.Load().info
	return time.UnixMilli(i.PopTime + i.InvisibleTime)
}
