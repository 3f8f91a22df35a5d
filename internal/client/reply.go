package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Request-reply on the requester's side (RocketMQ ClientRemotingProcessor.receiveReplyMessage):
// a producer registers the correlation id of each request it sends, and the broker that gets
// the reply pushes it here with PUSH_REPLY_MESSAGE_TO_CLIENT (326); the reply goes to the
// request with its CORRELATION_ID.

// MaxPendingReplies bounds the requests one instance waits for at a time, so that a caller
// who never stops sending requests nobody answers runs out of places, not of memory. RocketMQ
// has no bound; every entry lives at most its request's timeout.
const MaxPendingReplies = 1 << 16

// ErrTooManyPendingReplies refuses a request while MaxPendingReplies requests wait.
var ErrTooManyPendingReplies = errors.New("client: too many requests waiting for their reply")

// Reply is a reply as the broker pushed it: its send header with where and when it was born
// and stored, its body as sent (still compressed when SysFlag says so), and when it arrived.
type Reply struct {
	Header     protocol.ReplyMessageRequestHeader
	Body       []byte
	ArriveTime time.Time
}

// replyWaiters are the requests of one instance waiting for their reply, by correlation id.
type replyWaiters struct {
	mu sync.Mutex
	m  map[string]func(*Reply)
}

// AwaitReply registers the request with correlationID: deliver receives its reply, at most
// once, on the goroutine serving the push (it must not block). cancel unregisters it and
// reports whether it was still waiting, so that a false says deliver has run or is running.
func (i *Instance) AwaitReply(correlationID string, deliver func(*Reply)) (cancel func() bool, err error) {
	w := &i.replies
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.m) >= MaxPendingReplies {
		return nil, ErrTooManyPendingReplies
	}
	if _, dup := w.m[correlationID]; dup {
		return nil, errors.New("client: a request with correlation id " + correlationID + " is already waiting")
	}
	if w.m == nil {
		w.m = make(map[string]func(*Reply))
	}
	w.m[correlationID] = deliver
	return func() bool { return i.CancelReply(correlationID) }, nil
}

// CancelReply unregisters the request with correlationID, as AwaitReply's cancel does, for a
// caller that must have its cancel function ready before it registers.
func (i *Instance) CancelReply(correlationID string) bool {
	return i.takeReplyWaiter(correlationID) != nil
}

// takeReplyWaiter removes and returns the waiter of correlationID, nil when none waits.
func (i *Instance) takeReplyWaiter(correlationID string) func(*Reply) {
	w := &i.replies
	w.mu.Lock()
	defer w.mu.Unlock()
	deliver, ok := w.m[correlationID]
	if !ok {
		return nil
	}
	delete(w.m, correlationID)
	return deliver
}

// processPushReply answers PUSH_REPLY_MESSAGE_TO_CLIENT. A reply nobody waits for any more (its
// request timed out) is acknowledged all the same, as the official clients do: the broker
// has delivered it, and its replier is told so.
func (i *Instance) processPushReply(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	arrived := time.Now()
	var h protocol.ReplyMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		i.log.Debug().Err(err).Str("addr", ch.RemoteAddr()).Msg("PUSH_REPLY_MESSAGE_TO_CLIENT with a bad header")
		return remoting.NewResponse(remoting.SystemError, err.Error()), nil
	}
	correlationID, _ := message.PropertyValueString(h.Properties, message.PropertyCorrelationID)
	deliver := i.takeReplyWaiter(correlationID)
	if deliver == nil {
		i.log.Debug().Str("correlation_id", correlationID).Str("addr", ch.RemoteAddr()).
			Msg("reply for no waiting request")
		return remoting.NewResponse(remoting.Success, ""), nil
	}
	deliver(&Reply{Header: h, Body: req.Body, ArriveTime: arrived})
	return remoting.NewResponse(remoting.Success, ""), nil
}
