package producer

import (
	"fmt"
	"time"
)

// Step 3 of a send (send.go): the queue of an attempt. Retrying sends go round robin, away
// from the broker the attempt before failed on and, with latency fault tolerance on, around
// isolated brokers (fault.go); ordered sends take the caller's selector's queue, moved only by
// FailoverOrder; SendToQueue takes the caller's queue; a message group takes its queue.

// next picks the queue of a send's next attempt: the caller's, or the round robin's.
func (s *send) next() MessageQueue {
	if q := s.first; q != nil {
		s.first = nil
		return *q
	}
	if s.pi == nil {
		return s.queue
	}
	return s.p.selectQueue(s.pi, s.lastFailed())
}

// pinGroup makes every attempt of a send with a message group go to the group's queue
// (message_group.go), retries included, as 5.x's producers retry a FIFO message: another queue
// would put it out of its group's order. A send without a group is left as it is.
func (s *send) pinGroup(group string) {
	if group == "" {
		return
	}
	s.pi, s.queue = nil, groupQueue(s.pi.queues, group)
}

// lastFailed is the broker of the send's last failed attempt, "" before any: RocketMQ's
// selectOneMessageQueue(lastBrokerName) avoids only that one, so with three brokers a third
// attempt may return to the first.
func (s *send) lastFailed() string {
	if s.failure == nil || len(s.failure.Attempts) == 0 {
		return ""
	}
	return s.failure.Attempts[len(s.failure.Attempts)-1].Queue.BrokerName
}

// selectQueue picks the next queue round robin, preferring brokers that are neither isolated
// (fault.go; never with fault tolerance off) nor avoid (the broker that just failed this
// send). When every broker is excluded it takes the least bad queue: not avoided over
// avoided, then the isolated broker that comes back soonest.
func (p *Producer) selectQueue(pi *publishInfo, avoid string) MessageQueue {
	n := len(pi.queues)
	start := int(pi.counter.Add(1) % uint32(n))
	best, bestScore := start, 4
	var bestAt time.Time
	for i := 0; i < n; i++ {
		k := start + i
		if k >= n {
			k -= n
		}
		q := pi.queues[k]
		score := 0
		ok, at := p.fault.state(q.BrokerName)
		if !ok {
			score = 2
		}
		if avoid != "" && q.BrokerName == avoid {
			score++
		}
		if score == 0 {
			return q
		}
		if score < bestScore || score == bestScore && at.Before(bestAt) {
			best, bestScore, bestAt = k, score, at
		}
	}
	return pi.queues[best]
}

// selectOrdered asks sel for the queue of arg and, with FailoverOrder, moves to the next queue
// in list order whose broker is available while the selected one's is isolated (which needs
// fault tolerance on). A selector that panics or names a queue outside the route is an
// ErrSelector, not a crash. Time the selector takes counts against the send timeout
// (runSync checks it before sending, as RocketMQ's sendSelectImpl does after selecting).
func (p *Producer) selectOrdered(pi *publishInfo, msg *Message, sel MessageQueueSelector, arg any, ord Ordering) (q MessageQueue, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: panic: %v", ErrSelector, r)
		}
	}()
	q = sel.Select(pi.queues, msg, arg)
	idx := indexOf(pi.queues, q)
	if idx < 0 {
		return q, fmt.Errorf("%w: selected queue %s is not a writable queue of topic %s", ErrSelector, q, msg.Topic)
	}
	q = pi.queues[idx]
	if ord != FailoverOrder || p.fault.available(q.BrokerName) {
		return q, nil
	}
	n := len(pi.queues)
	for i := 1; i < n; i++ {
		alt := pi.queues[(idx+i)%n]
		if p.fault.available(alt.BrokerName) {
			return alt, nil
		}
	}
	return q, nil
}

// indexOf returns q's position in queues, or -1.
func indexOf(queues []MessageQueue, q MessageQueue) int {
	for i, x := range queues {
		if x.QueueID == q.QueueID && x.BrokerName == q.BrokerName &&
			(q.Topic == "" || q.Topic == x.Topic) {
			return i
		}
	}
	return -1
}
