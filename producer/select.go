package producer

import (
	"fmt"
	"slices"
	"time"
)

// Step 3 of a send (send.go): the queue of an attempt. Retrying sends go round robin around
// isolated brokers (fault.go) and the brokers that failed this send; ordered sends take the
// caller's selector's queue, moved only by FailoverOrder; SendToQueue takes the caller's queue.

// next picks the queue of a send's next attempt: the caller's, or the round robin's.
func (s *send) next() MessageQueue {
	if s.pi == nil {
		return s.queue
	}
	return s.p.selectQueue(s.pi, s.avoid())
}

// avoid lists the brokers that failed this send, which the round robin skips while others
// are left.
func (s *send) avoid() []string {
	if s.failure == nil {
		return nil
	}
	brokers := make([]string, len(s.failure.Attempts))
	for i, a := range s.failure.Attempts {
		brokers[i] = a.Queue.BrokerName
	}
	return brokers
}

// selectQueue picks the next queue round robin, preferring brokers that are neither isolated
// (with fault tolerance on) nor in avoid (brokers that failed this send). When every broker is
// excluded it takes the least bad queue: not avoided over avoided, then the isolated broker
// that comes back soonest.
func (p *Producer) selectQueue(pi *publishInfo, avoid []string) MessageQueue {
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
		var at time.Time
		if p.cfg.faultTolerance {
			var ok bool
			if ok, at = p.fault.state(q.BrokerName); !ok {
				score = 2
			}
		}
		if len(avoid) > 0 && slices.Contains(avoid, q.BrokerName) {
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
// in list order whose broker is available while the selected one's is isolated. A selector
// that panics or names a queue outside the route is an ErrSelector, not a crash.
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
