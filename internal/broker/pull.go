package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// maxPullMsgs caps the messages of one pull (RocketMQ maxTransferCountOnMessageInMemory).
const maxPullMsgs = 32

// masterID is the broker id pull responses suggest (suggestWhichBrokerId).
const masterID = 0

// pullState holds parked long-poll pulls (owned by pull.go and pull_hold.go).
type pullState struct {
	hold *pullHold
	// d re-dispatches woken pulls onto the pull pool; set by registerPull.
	d atomic.Pointer[remoting.Dispatcher]
}

func (b *Broker) initPull() {
	b.pull = &pullState{hold: newPullHold()}
	b.addRunner(b.runPullHold)
}

// registerPull installs PULL_MESSAGE and the offset requests.
func (b *Broker) registerPull(d *remoting.Dispatcher) {
	b.pull.d.Store(d)
	b.handle(d, remoting.PullMessage, remoting.ProcessorFunc(b.processPull), b.pullEx)
	b.registerOffsets(d)
}

// onMessageArriving is the store's dispatch hook: it wakes pulls parked on the queue. It runs on
// the store's dispatcher goroutine and never blocks: woken pulls are handed to the pull pool.
func (b *Broker) onMessageArriving(ev storage.DispatchEvent) {
	if b.pull == nil { // the store dispatches nothing to us before New returns, but be safe
		return
	}
	for _, p := range b.pull.hold.arrive(queueKey{topic: ev.Topic, queueID: ev.QueueID}, ev.QueueOffset+1, ev.TagsCode) {
		b.wakePull(p)
	}
}

// wokenChannel marks a parked pull re-run after a message arrived or its time ran out: it is
// answered with whatever the fresh read finds and never parked again.
type wokenChannel struct{ remoting.Channel }

// wakePull re-runs a parked pull on the pull pool; the dispatcher writes its response.
func (b *Broker) wakePull(p *heldPull) {
	if p.ch.Closed() {
		return
	}
	d := b.pull.d.Load()
	if d == nil {
		return
	}
	d.Dispatch(wokenChannel{p.ch}, p.req)
}

// processPull serves PULL_MESSAGE (RocketMQ PullMessageProcessor).
func (b *Broker) processPull(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	allowSuspend := true
	if w, ok := ch.(wokenChannel); ok {
		ch, allowSuspend = w.Channel, false
	}
	var h protocol.PullMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	return b.pullMessage(ch, req, &h, allowSuspend), nil
}

// pullError is a pull refused before reading the store.
func pullError(code int16, format string, args ...any) *remoting.Command {
	return remoting.NewResponse(code, fmt.Sprintf(format, args...))
}

// pullSubscription finds the subscription a pull filters with: the header's when it carries
// one, else the one the group registered by heartbeat for the topic. A nil response means ok.
func (b *Broker) pullSubscription(h *protocol.PullMessageRequestHeader, cfg SubscriptionGroupConfig) (*subscription, *remoting.Command) {
	if h.HasSubscription() {
		return parseSubscription(h.Topic, h.Subscription, h.ExpressionType), nil
	}
	sub, known, model := b.clients.consumers.findSubscription(h.ConsumerGroup, h.Topic)
	switch {
	case !known:
		return nil, pullError(remoting.SubscriptionNotExist, "the consumer's group info not exist")
	case !cfg.ConsumeBroadcastEnable && model == protocol.Broadcasting:
		return nil, pullError(remoting.NoPermission, "the consumer group[%s] can not consume by broadcast way", h.ConsumerGroup)
	case sub == nil:
		return nil, pullError(remoting.SubscriptionNotExist, "the consumer's subscription not exist")
	case sub.data.SubVersion < h.SubVersion:
		return nil, pullError(remoting.SubscriptionNotLatest, "the consumer's subscription not latest")
	}
	return sub, nil
}

// pullMessage checks a pull, reads the store and answers, or parks the pull when it may wait
// for messages. It returns nil when the pull was parked.
func (b *Broker) pullMessage(ch remoting.Channel, req *remoting.Command, h *protocol.PullMessageRequestHeader, allowSuspend bool) *remoting.Command {
	cfg, ok := b.groups.find(h.ConsumerGroup)
	if !ok {
		return pullError(remoting.SubscriptionGroupNotExist, "subscription group [%s] does not exist", h.ConsumerGroup)
	}
	if !cfg.ConsumeEnable {
		return pullError(remoting.NoPermission, "subscription group no permission, %s", h.ConsumerGroup)
	}
	tc, ok := b.topics.get(h.Topic)
	if !ok {
		return pullError(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", h.Topic)
	}
	if !route.IsReadable(tc.Perm) {
		return pullError(remoting.NoPermission, "the topic[%s] pulling message is forbidden", h.Topic)
	}
	if h.QueueID < 0 || h.QueueID >= tc.ReadQueueNums {
		return pullError(remoting.SystemError, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			h.QueueID, h.Topic, tc.ReadQueueNums, ch.RemoteAddr())
	}
	sub, errResp := b.pullSubscription(h, cfg)
	if errResp != nil {
		return errResp
	}
	maxMsgs := int(h.MaxMsgNums)
	if maxMsgs <= 0 {
		maxMsgs = 1
	}
	maxMsgs = min(maxMsgs, maxPullMsgs)

	r := b.store.GetMessage(h.ConsumerGroup, h.Topic, h.QueueID, h.QueueOffset, maxMsgs, 0, sub.filter())
	code := pullCode(r.Status, h.QueueOffset)
	suggest := b.suggestBroker(r, cfg)
	if code == remoting.PullOffsetMoved && !b.IsMaster() && !b.opts.Store.OffsetCheckInSlave {
		// A slave does not correct offsets: the consumer retries (at the master).
		code = remoting.PullRetryImmediately
		suggest = masterID
	}
	if allowSuspend && h.HasCommitOffset() && b.IsMaster() {
		b.offsets.commit(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset)
	}
	if code == remoting.PullNotFound && allowSuspend && h.HasSuspend() && b.parkPull(ch, req, h, sub) {
		r.Release()
		return nil
	}
	resp := remoting.NewResponse(code, r.Status.String())
	resp.ExtFields = make(map[string]string, 4)
	(&protocol.PullMessageResponseHeader{SuggestWhichBrokerID: suggest, NextBeginOffset: r.NextBeginOffset,
		MinOffset: r.MinOffset, MaxOffset: r.MaxOffset}).Encode(resp.ExtFields)
	if code == remoting.Success {
		b.countGet(len(r.Messages))
		setPullBody(resp, r)
	} else {
		r.Release()
	}
	return resp
}

// pullCode maps a store result to a pull response code (REMOTING.md §5.6).
func pullCode(st storage.GetStatus, offset int64) int16 {
	switch st {
	case storage.Found:
		return remoting.Success
	case storage.MessageWasRemoving, storage.NoMatchedMessage:
		return remoting.PullRetryImmediately
	case storage.NoMatchedLogicQueue, storage.NoMessageInQueue:
		if offset != 0 {
			return remoting.PullOffsetMoved
		}
		return remoting.PullNotFound
	case storage.OffsetFoundNull, storage.OffsetOverflowOne:
		return remoting.PullNotFound
	case storage.OffsetOverflowBadly, storage.OffsetTooSmall:
		return remoting.PullOffsetMoved
	}
	return remoting.SystemError
}

// parkPull holds a pull until a message arrives for its queue or its suspend time runs out
// (LongPollingDisable: ShortPollingTime). It reports false when the pull must be answered now
// (the hold is shut down).
func (b *Broker) parkPull(ch remoting.Channel, req *remoting.Command, h *protocol.PullMessageRequestHeader, sub *subscription) bool {
	wait := time.Duration(max(h.SuspendTimeoutMillis, 0)) * time.Millisecond
	if b.opts.LongPollingDisable {
		wait = b.opts.ShortPollingTime
	}
	p := &heldPull{ch: ch, req: req, key: queueKey{topic: h.Topic, queueID: h.QueueID}, offset: h.QueueOffset,
		sub: sub, deadline: time.Now().Add(wait)}
	if !b.pull.hold.park(p) {
		return false
	}
	// The connection may have closed while the pull waited for a worker, after its close
	// event dropped the channel's parked pulls: drop this one too.
	if ch.Closed() {
		b.pull.hold.take(p)
		return true
	}
	// A message dispatched between our read and park found nothing to wake: look again.
	if b.store.MaxOffsetInQueue(h.Topic, h.QueueID) > h.QueueOffset && b.pull.hold.take(p) {
		b.wakePull(p)
	}
	return true
}
