package consumer

import (
	"context"
	"errors"
	"math"
	"time"
)

const (
	// sendBackTimeout bounds one CONSUMER_SEND_MSG_BACK (DefaultMQPushConsumerImpl's 5 s).
	sendBackTimeout = 5 * time.Second
	// expiredDelayLevel is the delay level a message whose listener call outlived the consume
	// timeout is sent back with (RocketMQ 4.9 ProcessQueue.cleanExpiredMsg).
	expiredDelayLevel = 3
)

// submit implements queueService: it hands newly cached messages to the consume service, in
// batches to the workers' queue (concurrent), or as a nudge to the queue's consume loop
// (orderly). It never blocks: how much a queue pulls ahead of its listeners is its flow
// control's business (pullPause), as in RocketMQ, whose consume executor's queue is unbounded.
func (pc *PushConsumer) submit(qs *queueState, msgs []*Message) {
	if pc.cfg.orderly {
		qs.pq.notify()
		return
	}
	for len(msgs) > 0 {
		var batch []*Message
		batch, msgs = nextBatch(msgs, pc.cfg.consumeBatchSize)
		pc.work.push(consumeRequest{qs: qs, msgs: batch})
	}
}

// nextBatch splits off the run of at most n messages (at least one) at the start of msgs that
// share one (restored) topic, so each listener call gets the messages of one subscription. The
// batch is capped: a listener's append cannot reach the rest.
func nextBatch(msgs []*Message, n int) (batch, rest []*Message) {
	k := 1
	for k < len(msgs) && k < n && msgs[k].Topic == msgs[0].Topic {
		k++
	}
	return msgs[:k:k], msgs[k:]
}

// worker runs listener calls until the work queue closes (at Close, after every loop that
// submits stopped). Requests still queued then are skipped: their messages stay
// unacknowledged and are redelivered to the next owner of the queue.
func (pc *PushConsumer) worker() {
	var stamp consumeStamp
	for {
		req, ok := pc.work.pop()
		if !ok {
			return
		}
		if pc.p.isClosing() {
			continue
		}
		pc.consumeConcurrently(req, &stamp)
	}
}

// consumeConcurrently runs one listener call and acknowledges its messages: on success they
// leave the cache; on failure each is sent back to the broker (clustering) and leaves the cache
// once the broker has it; those that could not be sent back are consumed again later. The
// offset committed is the smallest one still cached (docs/protocol.md §10.4).
// stamp is the calling worker's (markConsumeStart).
func (pc *PushConsumer) consumeConcurrently(req consumeRequest, stamp *consumeStamp) {
	qs, msgs := req.qs, req.msgs
	if qs.pq.isDropped() {
		return
	}
	now := time.Now()
	markConsumeStart(msgs, now, stamp)
	res := ConsumeRetryLater
	var err error
	if sub := pc.p.subscriptionOf(msgs[0].Topic); sub != nil && sub.listener != nil {
		res, err = callListener(pc.consumeCtx, sub.listener, msgs)
		done := time.Now()
		pc.p.stats.consumed(qs.mq.Topic, len(msgs), err == nil && res == ConsumeSuccess, done.Sub(now), done)
	} else {
		pc.log.Warn().Str("topic", msgs[0].Topic).Msg("no listener for the topic; sending messages back")
	}
	if err != nil {
		pc.log.Debug().Str("topic", msgs[0].Topic).Err(err).Msg("listener failed")
		res = ConsumeRetryLater
	}
	if qs.pq.isDropped() {
		return // the queue has a new owner; what was not committed is redelivered there
	}
	acked := msgs
	if res != ConsumeSuccess && pc.p.cfg.model == Clustering {
		var failed []*Message
		acked, failed = pc.sendBackAll(msgs)
		if len(failed) > 0 {
			pc.consumeLater(qs, failed)
		}
	}
	if off := qs.pq.remove(acked); off >= 0 && !qs.pq.isDropped() {
		pc.p.store.update(qs.mq, off, true)
	}
}

// sendBackAll sends msgs back to their broker with delay level 0 and splits them into those
// the broker took and those it did not.
func (pc *PushConsumer) sendBackAll(msgs []*Message) (ok, failed []*Message) {
	for _, m := range msgs {
		if err := pc.sendBackOne(m, 0); err != nil {
			pc.log.Warn().Str("topic", m.Topic).Str("msg_id", m.MsgID).Err(err).Msg("send back failed; will consume again")
			failed = append(failed, m)
			continue
		}
		ok = append(ok, m)
	}
	return ok, failed
}

// sendBackOne sends one message back and, when the broker does not take it, resends it to the
// retry topic itself (resend.go), as RocketMQ's push consumer does; the error is that of both.
// A delay level below 0 asks for the DLQ. It is not tied to the consumer's lifetime, so a
// listener call that Close lets finish can still hand its failures to the broker.
func (pc *PushConsumer) sendBackOne(m *Message, delayLevel int32) error {
	ctx, cancel := context.WithTimeout(context.Background(), sendBackTimeout)
	defer cancel()
	addr := pc.p.inst.MasterAddr(m.Queue.BrokerName)
	if addr == "" && m.StoreHost.IsValid() {
		addr = m.StoreHost.String()
	}
	err := sendBack(ctx, pc.p.inst.Transport(), addr, pc.p.cfg.group, m, delayLevel, pc.maxReconsumeTimes())
	if err == nil {
		return nil
	}
	pc.log.Debug().Str("msg_id", m.MsgID).Err(err).Msg("send back failed; resending to the retry topic")
	rctx, rcancel := context.WithTimeout(context.Background(), resendTimeout)
	defer rcancel()
	if rerr := pc.resendToRetry(rctx, m, delayLevel < 0); rerr != nil {
		return errors.Join(err, rerr)
	}
	return nil
}

// maxReconsumeTimes is the reconsume limit in force: the one set, else RocketMQ's default for
// the consume mode (each consume service's getMaxReconsumeTimes): 16 concurrent, unlimited
// (Integer.MAX_VALUE) orderly.
func (pc *PushConsumer) maxReconsumeTimes() int32 {
	switch {
	case pc.cfg.maxReconsumeTimes >= 0:
		return pc.cfg.maxReconsumeTimes
	case pc.cfg.orderly:
		return math.MaxInt32
	default:
		return DefaultMaxReconsumeTimes
	}
}

// consumeLater resubmits messages whose send-back and resend failed after the send-back retry
// delay.
// They stay cached meanwhile, so the queue's committed offset cannot pass them. Unlike the
// official client, ReconsumeTimes is left as the broker stored it: the expiry scan may read it
// concurrently, and the broker decides retries and the DLQ by its own count.
func (pc *PushConsumer) consumeLater(qs *queueState, msgs []*Message) {
	pc.p.goLoop(func() {
		if sleep(pc.p.ctx, qs.pq.done, pc.cfg.sendBackRetryDelay) {
			pc.submit(qs, msgs)
		}
	})
}

// expiryLoop sends back messages whose listener call has run longer than the consume timeout
// (the official client's cleanExpiredMsg), so one stuck call cannot pin a queue's offset.
func (pc *PushConsumer) expiryLoop() {
	t := time.NewTicker(pc.cfg.consumeTimeout)
	defer t.Stop()
	for {
		select {
		case <-pc.p.ctx.Done():
			return
		case <-t.C:
		}
		for _, qs := range pc.p.states() {
			pc.cleanExpired(qs)
		}
	}
}

func (pc *PushConsumer) cleanExpired(qs *queueState) {
	for _, m := range qs.pq.expired(time.Now(), pc.cfg.consumeTimeout, 16) {
		if pc.p.isClosing() || qs.pq.isDropped() {
			return
		}
		if pc.p.cfg.model == Clustering {
			// A fixed level 3, as RocketMQ 4.9's cleanExpiredMsg: the broker's 3 + reconsume
			// times applies to level 0 only.
			if err := pc.sendBackOne(m, expiredDelayLevel); err != nil {
				pc.log.Warn().Str("msg_id", m.MsgID).Err(err).Msg("send back of an expired message failed")
				continue
			}
		}
		pc.log.Info().Str("topic", m.Topic).Str("msg_id", m.MsgID).Msg("consume timed out; message sent back")
		if off := qs.pq.remove([]*Message{m}); off >= 0 {
			pc.p.store.update(qs.mq, off, true)
		}
	}
}
