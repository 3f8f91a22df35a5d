package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/broker/filter"
	"github.com/mqgo/mq/internal/broker/longpoll"
	"github.com/mqgo/mq/internal/broker/reqnames"
	"github.com/mqgo/mq/internal/broker/tables"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// maxPullMsgs caps the messages of one pull (RocketMQ maxTransferCountOnMessageInMemory).
const maxPullMsgs = 32

// masterID is the broker id pull responses suggest (suggestWhichBrokerId).
const masterID = 0

// puller is the pull processor (RocketMQ's PullMessageProcessor with its PullRequestHoldService
// and the offset requests of ConsumerManageProcessor): PULL_MESSAGE, long polling over the
// parked pulls (internal/broker/longpoll's Hold; pull_hold.go answers them), the filters
// (internal/broker/filter) and the offset requests (offset_processor.go).
type puller struct {
	*Broker
	hold *longpoll.Hold
	// d re-dispatches woken pulls onto the pull pool; set by registerPull.
	d atomic.Pointer[remoting.Dispatcher]
	// refused counts pulls answered SYSTEM_BUSY because the hold was full and keeps the
	// warning about them to one a minute.
	refused tables.Refusals
}

func newPuller(b *Broker) *puller {
	pu := &puller{Broker: b, hold: longpoll.New(b.opts.Limits.MaxHeldPullsPerConnection, b.opts.Limits.MaxHeldPulls)}
	b.addRunner(pu.runPullHold)
	return pu
}

// registerPull installs PULL_MESSAGE, LITE_PULL_MESSAGE and the offset requests.
func (pu *puller) registerPull(d *remoting.Dispatcher) {
	pu.d.Store(d)
	pu.handle(d, remoting.PullMessage, remoting.ProcessorFunc(pu.processPull), pu.pullEx)
	// RocketMQ 5 serves LITE_PULL_MESSAGE (its lite pull consumers' code) with the pull
	// processor, the header and answers of PULL_MESSAGE (litePullMessageEnable, on by default).
	// Its own pool there (litePullMessageExecutor) only keeps lite pulls from queueing behind
	// push pulls; one pull pool is kept here, as for every pull.
	fields, _ := reqnames.Fields(remoting.PullMessage)
	pu.handleNamed(d, remoting.LitePullMessage, fields, remoting.ProcessorFunc(pu.processPull), pu.pullEx)
	// A pull has no body; one that carries some is refused before it can wait, parked, with
	// megabytes (the server drops a large one unread).
	d.SetMaxBody(remoting.PullMessage, 0, "PULL_MESSAGE")
	d.SetMaxBody(remoting.LitePullMessage, 0, "LITE_PULL_MESSAGE")
	pu.registerOffsets(d)
}

// onMessageArriving is the store's dispatch hook: it answers the pulls parked on the queue. It
// runs where the store dispatches (storage.Options.OnDispatch) and never blocks.
func (pu *puller) onMessageArriving(ev storage.DispatchEvent) {
	if pu == nil { // the store dispatches nothing to us before New returns, but be safe
		return
	}
	for _, p := range pu.hold.Arrive(longpoll.Queue{Topic: ev.Topic, QueueID: ev.QueueID}, ev.QueueOffset+1, ev.TagsCode) {
		if p.Channel.Closed() {
			continue
		}
		// Answered here, on the goroutine that dispatched the message (its appender's, as a
		// rule), rather than on the pull pool: the read finds the message in memory just
		// written, and waking a worker for it would cost more than the read, in the end-to-end
		// latency of every message a caught-up consumer waits for. RocketMQ hands it to the
		// pull executor.
		if d := pu.d.Load(); d != nil {
			d.ServeHere(wokenChannel{p.Channel, &p.Header}, p.Request)
		}
	}
}

// wokenChannel marks a parked pull re-run after a message arrived or its time ran out: it is
// answered with whatever the fresh read finds and never parked again. ACL checked the pull when
// it arrived; the re-run is not checked again (remoting.Readmitted). It carries the pull's
// header, decoded when the pull arrived: the parked request keeps no extension fields.
type wokenChannel struct {
	remoting.Channel
	h *protocol.PullMessageRequestHeader
}

func (wokenChannel) Readmitted() bool { return true }

// wakePull re-runs a parked pull on the pull pool; the dispatcher writes its response.
func (pu *puller) wakePull(p *longpoll.Pull) {
	if p.Channel.Closed() {
		return
	}
	d := pu.d.Load()
	if d == nil {
		return
	}
	d.Dispatch(wokenChannel{p.Channel, &p.Header}, p.Request)
}

// processPull serves PULL_MESSAGE (RocketMQ PullMessageProcessor).
func (pu *puller) processPull(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if w, ok := ch.(wokenChannel); ok {
		return pu.pullMessage(w.Channel, req, w.h, false), nil
	}
	var h protocol.PullMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	return pu.pullMessage(ch, req, &h, true), nil
}

// pullError is a pull refused before reading the store.
func pullError(code int32, format string, args ...any) *remoting.Command {
	return remoting.NewResponse(code, fmt.Sprintf(format, args...))
}

// pullSubscription finds the subscription a pull filters with: the header's when it carries
// one, else the one the group registered by heartbeat for the topic. A nil response means ok;
// a subscription the broker cannot evaluate is refused (filter's expression.go).
func (pu *puller) pullSubscription(h *protocol.PullMessageRequestHeader, cfg SubscriptionGroupConfig) (*filter.Subscription, *remoting.Command) {
	if h.HasSubscription() {
		if resp := filter.RefuseHeader(h.Subscription, h.ExpressionType); resp != nil {
			return nil, resp
		}
		return filter.Parse(h.Topic, h.Subscription, h.ExpressionType), nil
	}
	sub, known, model := pu.clients.consumers.FindSubscription(h.ConsumerGroup, h.Topic)
	switch {
	case !known:
		return nil, pullError(remoting.SubscriptionNotExist, "the consumer's group info not exist")
	case !cfg.ConsumeBroadcastEnable && model == protocol.Broadcasting:
		return nil, pullError(remoting.NoPermission, "the consumer group[%s] can not consume by broadcast way", h.ConsumerGroup)
	case sub == nil:
		return nil, pullError(remoting.SubscriptionNotExist, "the consumer's subscription not exist")
	case sub.SubVersion() < h.SubVersion:
		return nil, pullError(remoting.SubscriptionNotLatest, "the consumer's subscription not latest")
	}
	if resp := filter.RefuseRegistered(sub); resp != nil {
		return nil, resp
	}
	return sub, nil
}

// pullMessage checks a pull, reads the store and answers, or parks the pull when it may wait
// for messages. It returns nil when the pull was parked.
func (pu *puller) pullMessage(ch remoting.Channel, req *remoting.Command, h *protocol.PullMessageRequestHeader, allowSuspend bool) *remoting.Command {
	cfg, err := pu.groups.Lookup(h.ConsumerGroup)
	if err != nil {
		return pullError(remoting.SubscriptionGroupNotExist, "%s",
			GroupRemark(err, "subscription group ["+h.ConsumerGroup+"] does not exist"))
	}
	if !cfg.ConsumeEnable {
		return pullError(remoting.NoPermission, "subscription group no permission, %s", h.ConsumerGroup)
	}
	tc, ok := pu.topics.Get(h.Topic)
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
	sub, errResp := pu.pullSubscription(h, cfg)
	if errResp != nil {
		return errResp
	}
	maxMsgs := int(h.MaxMsgNums)
	if maxMsgs <= 0 {
		maxMsgs = 1
	}
	maxMsgs = min(maxMsgs, maxPullMsgs)

	r := pu.store.GetMessage(h.ConsumerGroup, h.Topic, h.QueueID, h.QueueOffset, maxMsgs, 0, sub.Filter())
	code := pullCode(r.Status, h.QueueOffset)
	suggest := pu.suggestBroker(r, cfg)
	if code == remoting.PullOffsetMoved && !pu.IsMaster() && !pu.opts.Store.OffsetCheckInSlave {
		// A slave does not correct offsets: the consumer retries (at the master).
		code = remoting.PullRetryImmediately
		suggest = masterID
	}
	if allowSuspend && h.HasCommitOffset() && pu.IsMaster() {
		pu.offsets.Commit(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset)
	}
	if code == remoting.PullNotFound && allowSuspend && h.HasSuspend() {
		switch res := pu.parkPull(ch, req, h, sub); res {
		case longpoll.Parked:
			r.Release()
			return nil
		case longpoll.ChannelFull, longpoll.HoldFull:
			r.Release()
			return pu.holdFullResponse(ch, res)
		}
	}
	resp := remoting.NewResponse(code, r.Status.String())
	setPullHeader(ch, resp, protocol.PullMessageResponseHeader{SuggestWhichBrokerID: suggest,
		NextBeginOffset: r.NextBeginOffset, MinOffset: r.MinOffset, MaxOffset: r.MaxOffset})
	if code == remoting.Success {
		pu.seams.countGet(h.Topic, h.ConsumerGroup, len(r.Messages), r.TotalBytes)
		setPullBody(resp, r)
	} else {
		r.Release()
	}
	return resp
}

// setPullHeader puts h in resp: written straight into the frame on a network connection (no
// map per pull), as a map on an in-process channel, which hands the Command over.
func setPullHeader(ch remoting.Channel, resp *remoting.Command, h protocol.PullMessageResponseHeader) {
	if _, ok := ch.(remoting.FieldsChannel); ok {
		resp.Fields = &h
		return
	}
	resp.ExtFields = make(map[string]string, 4)
	h.Encode(resp.ExtFields)
}

// pullCode maps a store result to a pull response code (docs/protocol.md §5.6).
func pullCode(st storage.GetStatus, offset int64) int32 {
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

// parkPull holds a pull until a message arrives for its queue or its suspend time (capped by
// MaxLongPollingSuspend; LongPollingDisable: ShortPollingTime) runs out. Unless it reports
// parked, the caller answers the pull now.
func (pu *puller) parkPull(ch remoting.Channel, req *remoting.Command, h *protocol.PullMessageRequestHeader, sub *filter.Subscription) longpoll.ParkResult {
	wait := pu.suspendTime(h.SuspendTimeoutMillis)
	if pu.opts.LongPollingDisable {
		wait = pu.opts.ShortPollingTime
	}
	p := &longpoll.Pull{Channel: ch, Request: heldRequest(req), Header: *h,
		Queue: longpoll.Queue{Topic: h.Topic, QueueID: h.QueueID}, Offset: h.QueueOffset, Sub: sub,
		Deadline: time.Now().Add(wait), Slots: longpoll.Slots(h, sub)}
	if res := pu.hold.Park(p); res != longpoll.Parked {
		return res
	}
	// The connection may have closed while the pull waited for a worker, after its close
	// event dropped the channel's parked pulls: drop this one too.
	if ch.Closed() {
		pu.hold.Take(p)
		return longpoll.Parked
	}
	// A message dispatched between our read and park found nothing to wake: look again.
	if pu.store.MaxOffsetInQueue(h.Topic, h.QueueID) > h.QueueOffset && pu.hold.Take(p) {
		pu.wakePull(p)
	}
	return longpoll.Parked
}

// heldRequest is what a parked pull keeps of req: what re-running it through the dispatcher
// and addressing its answer need. The body (a pull has none, and the dispatcher refuses one),
// the remark and the extension fields are left behind: the parked pull keeps its decoded
// header instead (longpoll.Pull.Header), so what it retains is its header's own fields, which
// longpoll.Slots charges against the caps. The decoder copies header strings out of the frame,
// so they pin nothing else.
func heldRequest(req *remoting.Command) *remoting.Command {
	return &remoting.Command{Code: req.Code, Language: req.Language, Version: req.Version, Opaque: req.Opaque,
		Flag: req.Flag, Serialize: req.Serialize}
}

// holdFullResponse answers a pull the full hold could not park.
//
// SYSTEM_BUSY rather than PULL_NOT_FOUND: clients re-pull at once after PULL_NOT_FOUND (the
// official Go client's push consumer loops straight back, the Java one too), so answering it
// without waiting would turn every parked-pull slot we refuse into a busy loop of pulls. Any
// other code is an error to the clients, and they wait before pulling that queue again (Go
// client: _PullDelayTimeWhenError 3 s; Java 4.9 and ours: pullTimeDelayMillsWhenException
// 1 s), which is the back-off a full hold needs. The remark names the limit.
func (pu *puller) holdFullResponse(ch remoting.Channel, res longpoll.ParkResult) *remoting.Command {
	limit, value := "MaxHeldPulls", pu.opts.Limits.MaxHeldPulls
	if res == longpoll.ChannelFull {
		limit, value = "MaxHeldPullsPerConnection", pu.opts.Limits.MaxHeldPullsPerConnection
	}
	if refused, logIt := pu.refused.Note(time.Now()); logIt {
		pu.log.Warn().Str("addr", ch.RemoteAddr()).Str("limit", limit).Int("max", value).Int64("refused_total", refused).
			Msg("parked pulls at their limit; answering pulls SYSTEM_BUSY")
	}
	return remoting.NewResponse(remoting.SystemBusy,
		fmt.Sprintf("[PULL_HOLD_FULL]too many parked pulls (%s %d), pull again later", limit, value))
}
