package producer

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors of the producer; compare with errors.Is.
var (
	// ErrInvalidMessage marks a message refused before any I/O; the text says which rule.
	ErrInvalidMessage = errors.New("producer: invalid message")
	// ErrClosed is a send on a closed producer.
	ErrClosed = errors.New("producer: closed")
	// ErrNoRoute is a topic with no usable route: unknown to the name servers (and no TBW102
	// fallback), no writable queue, or no name server answered. The text names the name
	// servers tried.
	ErrNoRoute = errors.New("producer: no route")
	// ErrSelector is a selector that returned no queue or one not in the topic's route.
	ErrSelector = errors.New("producer: selector")
	// ErrInvalidOption is an option New refuses.
	ErrInvalidOption = errors.New("producer: invalid option")
)

// Attempt is one try of a send on one broker.
type Attempt struct {
	Queue MessageQueue
	Addr  string
	Err   error
}

// SendError is a send that failed on every attempt. errors.Is and errors.As see the error of
// every attempt (a *remoting.ResponseError, remoting.ErrTimeout, ...).
type SendError struct {
	Topic    string
	Attempts []Attempt
	// AllBrokersFailed is set when every broker of the topic's route was tried and failed.
	AllBrokersFailed bool
	// Cause is set when the send stopped for a reason that is no attempt's (time budget spent,
	// no route left).
	Cause error
}

// Error lists the attempts.
func (e *SendError) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "producer: send to topic %s failed after %d attempt(s)", e.Topic, len(e.Attempts))
	if e.AllBrokersFailed {
		sb.WriteString(", every broker of the topic failed")
	}
	if e.Cause != nil {
		fmt.Fprintf(&sb, " (%v)", e.Cause)
	}
	for i, a := range e.Attempts {
		fmt.Fprintf(&sb, "; attempt %d: broker %s (%s) queue %d: %v", i+1, a.Queue.BrokerName, a.Addr, a.Queue.QueueID, a.Err)
	}
	return sb.String()
}

// Unwrap returns the cause and every attempt's error.
func (e *SendError) Unwrap() []error {
	out := make([]error, 0, len(e.Attempts)+1)
	if e.Cause != nil {
		out = append(out, e.Cause)
	}
	for _, a := range e.Attempts {
		out = append(out, a.Err)
	}
	return out
}
