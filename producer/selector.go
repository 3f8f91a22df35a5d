package producer

import (
	"fmt"
	"math/rand/v2"

	"github.com/mqgo/mq/internal/message"
)

// MessageQueueSelector picks the queue of an ordered send. queues are the topic's writable
// queues, sorted by broker name then queue id (the order every RocketMQ client sees), and must
// not be modified. Select must return one of them.
type MessageQueueSelector interface {
	Select(queues []MessageQueue, msg *Message, arg any) MessageQueue
}

// SelectorFunc adapts a function to MessageQueueSelector.
type SelectorFunc func(queues []MessageQueue, msg *Message, arg any) MessageQueue

// Select implements MessageQueueSelector.
func (f SelectorFunc) Select(queues []MessageQueue, msg *Message, arg any) MessageQueue {
	return f(queues, msg, arg)
}

// HashSelector picks queues[|hash(arg)| % len(queues)] with Java's hashCode of arg (String,
// Integer, Long), so Java producers using SelectMessageQueueByHash with the same keys pick the
// same queues. A nil arg hashes the message's SHARDING_KEY property, else its first key, else
// its tags. Other argument types hash their fmt %v text.
func HashSelector() MessageQueueSelector { return SelectorFunc(selectByHash) }

func selectByHash(queues []MessageQueue, msg *Message, arg any) MessageQueue {
	h := javaHash(arg, msg)
	v := int(h) % len(queues)
	if v < 0 {
		v = -v
	}
	return queues[v]
}

func javaHash(arg any, msg *Message) int32 {
	switch a := arg.(type) {
	case nil:
		switch {
		case msg.Property(message.PropertyShardingKey) != "":
			return message.JavaStringHash(msg.Property(message.PropertyShardingKey))
		case len(msg.Keys) > 0:
			return message.JavaStringHash(msg.Keys[0])
		default:
			return message.JavaStringHash(msg.Tags)
		}
	case string:
		return message.JavaStringHash(a)
	case int:
		return longHash(int64(a))
	case int32:
		return a
	case int64:
		return longHash(a)
	case uint32:
		return int32(a)
	case uint64:
		return longHash(int64(a))
	case []byte:
		return message.JavaStringHash(string(a))
	case fmt.Stringer:
		return message.JavaStringHash(a.String())
	default:
		return message.JavaStringHash(fmt.Sprint(a))
	}
}

// longHash is Java's Long.hashCode (an int is an Integer when it fits, as Java boxes it).
func longHash(v int64) int32 {
	if int64(int32(v)) == v {
		return int32(v)
	}
	return int32(v ^ int64(uint64(v)>>32))
}

// RandomSelector picks a random queue.
func RandomSelector() MessageQueueSelector {
	return SelectorFunc(func(queues []MessageQueue, _ *Message, _ any) MessageQueue {
		return queues[rand.IntN(len(queues))]
	})
}

// Ordering says what an ordered send does when its queue's broker is in trouble (RocketMQ's
// kinds of ordered messages).
type Ordering int

const (
	// StrictOrder never leaves the selected queue: a failed send returns its error and is not
	// retried elsewhere, even while the broker is down.
	StrictOrder Ordering = iota
	// FailoverOrder ("ordinarily ordered") keeps the selected queue while its broker works;
	// while the broker is isolated by the fault strategy the message goes to the next writable
	// queue (in list order) whose broker is available, so one key keeps one queue at a time. A
	// failed send is not retried; the next send moves. Isolation needs
	// WithLatencyFaultTolerance(true) (off by default, as in RocketMQ): with it off,
	// FailoverOrder stays on the selected queue like StrictOrder until the route drops the
	// broker.
	FailoverOrder
)

// String names the ordering.
func (o Ordering) String() string {
	if o == FailoverOrder {
		return "FailoverOrder"
	}
	return "StrictOrder"
}
