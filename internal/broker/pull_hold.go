package broker

import (
	"context"
	"time"

	"github.com/mqgo/mq/internal/broker/longpoll"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// The parked pulls themselves are internal/broker/longpoll's Hold; the goroutine that answers
// them when their time runs out, and at shutdown, is the core's, as answering is.

// runPullHold answers parked pulls when their deadline passes, with a fresh read, and answers
// every parked pull when ctx ends.
func (pu *puller) runPullHold(ctx context.Context) error {
	h := pu.hold
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		wait := time.Hour
		if next := h.Next(); next != nil {
			wait = time.Until(next.Deadline)
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			for _, p := range h.CloseAll() {
				pu.answerHeldNow(p)
			}
			return nil
		case <-h.Kick():
		case <-t.C:
			for _, p := range h.Expired(time.Now()) {
				pu.wakePull(p)
			}
		}
	}
}

// answerHeldNow answers a parked pull at shutdown with "nothing new" at its own offset, without
// going through the (closing) pools.
func (pu *puller) answerHeldNow(p *longpoll.Pull) {
	if p.Channel.Closed() || p.Request.IsOneway() {
		return
	}
	resp := remoting.NewResponseFor(p.Request, remoting.PullNotFound, "OFFSET_OVERFLOW_ONE")
	resp.ExtFields = remoting.EncodeHeader(&protocol.PullMessageResponseHeader{SuggestWhichBrokerID: masterID,
		NextBeginOffset: p.Offset, MinOffset: pu.store.MinOffsetInQueue(p.Queue.Topic, p.Queue.QueueID),
		MaxOffset: pu.store.MaxOffsetInQueue(p.Queue.Topic, p.Queue.QueueID)})
	_ = p.Channel.WriteResponse(resp)
}
