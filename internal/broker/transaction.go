package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// Transactional messages (RocketMQ 4.x TransactionalMessageServiceImpl, EndTransactionProcessor,
// TransactionalMessageCheckService).
//
// A prepared send (TRAN_MSG true) is stored in RMQ_SYS_TRANS_HALF_TOPIC queue 0 with its
// destination in REAL_TOPIC / REAL_QID and the transaction bits of its sysFlag cleared, so the
// store indexes it like any message of a topic nobody consumes. END_TRANSACTION commits it (a
// new record in its real topic and queue) or rolls it back; either way an op record goes to
// RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0 whose body is the half message's queue offset, tag "d".
//
// The check service walks the half queue from a cursor kept as the consumer offset of group
// CID_RMQ_SYS_TRANS. An offset with an op record is done. The first message younger than the
// transaction timeout ends a round (the queue is in store order). An older one is re-put at
// the end of the half queue with TRANSACTION_CHECK_TIMES one higher and its producer group is
// asked CHECK_TRANSACTION_STATE about the copy; past TransactionCheckMax checks it moves to
// TRANS_CHECK_MAX_TIME_TOPIC instead. The op queue's cursor (same group) moves past op records
// of offsets behind the half cursor.
//
// Unlike RocketMQ, re-putting and discarding also write an op record for the offset left
// behind: the cursors are saved only every FlushConsumerOffsetInterval, and without the op a
// crash would have the old copy checked (and committed) a second time. A decision for an offset
// already decided is ignored, and one for a copy's predecessor applies to the copy, so that a
// producer answering late or twice cannot commit a message twice.

// Defaults after RocketMQ 4.9's BrokerConfig.
const (
	DefaultTransactionTimeout       = 6 * time.Second  // transactionTimeOut
	DefaultTransactionCheckMax      = 15               // transactionCheckMax
	DefaultTransactionCheckInterval = 60 * time.Second // transactionCheckInterval
)

// transactionGroup is the consumer group whose offsets are the check service's cursors
// (TransactionalMessageUtil.buildConsumerGroup).
const transactionGroup = "CID_RMQ_SYS_TRANS"

// opRemoveTag tags op records (TransactionalMessageUtil.REMOVETAG).
const opRemoveTag = "d"

// transactionCheckBatch is how many half-queue units one read looks at.
const transactionCheckBatch = 32

// halfCopy is where a re-put half message now is.
type halfCopy struct {
	queueOffset, phyOffset int64
}

// txState is the transactional message service. mu guards the maps; an offset in inflight is
// being decided (by END_TRANSACTION or the check service) and nobody else touches it.
type txState struct {
	log zerolog.Logger

	mu       sync.Mutex
	done     map[int64]struct{} // half offsets with an op record, at or past the cursor
	requeued map[int64]halfCopy // half offsets re-put by a check -> their copy
	inflight map[int64]struct{}
}

func (b *Broker) initTransaction() error {
	b.tx = &txState{
		log:      b.opts.Logger.With().Str("component", "transaction").Str("broker", b.opts.BrokerName).Logger(),
		done:     map[int64]struct{}{},
		requeued: map[int64]halfCopy{},
		inflight: map[int64]struct{}{},
	}
	if !b.IsMaster() {
		return nil
	}
	if err := b.loadTransactionOps(); err != nil {
		return err
	}
	b.addRunner(b.runTransactionCheck)
	return nil
}

// registerTransaction installs END_TRANSACTION.
func (b *Broker) registerTransaction(d *remoting.Dispatcher) {
	b.handle(d, remoting.EndTransaction, remoting.ProcessorFunc(b.processEndTransaction), b.sendEx)
}

// halfCursor and opCursor are the check service's positions in the half and op queues.
func (b *Broker) halfCursor() int64 { return b.transactionCursor(names.TopicTransHalf) }
func (b *Broker) opCursor() int64   { return b.transactionCursor(names.TopicTransOpHalf) }

func (b *Broker) transactionCursor(topic string) int64 {
	off := b.offsets.query(transactionGroup, topic, 0)
	return max(off, b.store.MinOffsetInQueue(topic, 0))
}

// loadTransactionOps reads the op records past the op cursor, so that decisions taken before
// a restart are honoured and not taken again.
func (b *Broker) loadTransactionOps() error {
	halfCur := b.halfCursor()
	end := b.store.MaxOffsetInQueue(names.TopicTransOpHalf, 0)
	for off := b.opCursor(); off < end; {
		units, err := b.store.ConsumeQueueUnits(names.TopicTransOpHalf, 0, off, transactionCheckBatch)
		if err != nil {
			return fmt.Errorf("broker: read transaction op queue at %d: %w", off, err)
		}
		if len(units) == 0 {
			break
		}
		for _, u := range units {
			for _, h := range b.opHalfOffsets(u) {
				if h >= halfCur {
					b.tx.done[h] = struct{}{}
				}
			}
			off++
		}
	}
	return nil
}

// opHalfOffsets returns the half offsets an op record names (one in 4.x; later releases join
// several with commas). An unreadable record names none.
func (b *Broker) opHalfOffsets(u storage.CQUnit) []int64 {
	var rec message.Record
	if err := b.readRecord(u.PhyOffset, &rec); err != nil {
		b.tx.log.Warn().Err(err).Int64("phy_offset", u.PhyOffset).Msg("unreadable transaction op record skipped")
		return nil
	}
	var out []int64
	for f := range strings.SplitSeq(string(rec.Body), ",") {
		if n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func (b *Broker) readRecord(phyOffset int64, rec *message.Record) error {
	raw, err := b.store.LookMessageByOffset(phyOffset)
	if err != nil {
		return err
	}
	_, err = message.DecodeRecord(raw, rec, false)
	return err
}

// toHalfTopic turns a prepared send into a half message (TransactionalMessageBridge
// parseHalfMessageInner).
func (b *Broker) toHalfTopic(m *storage.Message) {
	props := setProperty(m.Properties, message.PropertyRealTopic, m.Topic)
	m.Properties = setProperty(props, message.PropertyRealQueueID, strconv.Itoa(int(m.QueueID)))
	m.SysFlag &^= transactionBits
	m.Topic = names.TopicTransHalf
	m.QueueID = 0
	b.topics.addSystemTopic(names.TopicTransHalf, 1)
}

// processEndTransaction serves END_TRANSACTION (37). Producers send it one-way; the answer
// matters only to a caller that waits for it.
func (b *Broker) processEndTransaction(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.EndTransactionRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if !b.IsMaster() {
		return remoting.NewResponse(remoting.SlaveNotAvailable,
			"Message store is slave mode, so end transaction is forbidden. "), nil
	}
	switch h.CommitOrRollback {
	case message.TransactionCommitType, message.TransactionRollbackType:
	default:
		return nil, nil // unknown: the check service asks again later
	}
	var check func(*message.Record) *remoting.Command
	if b.opts.WriteCheck != nil {
		check = func(rec *message.Record) *remoting.Command { return b.opts.WriteCheck(ch, req, ownTopic(rec)) }
	}
	return b.endTransaction(&h, check), nil
}

// endTransaction applies a commit or rollback to the half message the header names; check,
// when not nil, may refuse the request once the half message is read (ACL, WriteCheck).
func (b *Broker) endTransaction(h *protocol.EndTransactionRequestHeader, check func(*message.Record) *remoting.Command) *remoting.Command {
	queueOffset, phyOffset := h.TranStateTableOffset, h.CommitLogOffset
	var original int64 = -1
	b.tx.mu.Lock()
	for c, ok := b.tx.requeued[queueOffset]; ok; c, ok = b.tx.requeued[queueOffset] {
		if original < 0 {
			original = queueOffset
		}
		queueOffset, phyOffset = c.queueOffset, c.phyOffset
	}
	_, done := b.tx.done[queueOffset]
	_, busy := b.tx.inflight[queueOffset]
	if !done && !busy {
		b.tx.inflight[queueOffset] = struct{}{}
	}
	b.tx.mu.Unlock()
	if done || busy {
		// Decided already (or being decided): a second decision would deliver twice.
		return remoting.NewResponse(remoting.Success, "")
	}
	if original < 0 && queueOffset < b.halfCursor() {
		b.releaseHalf(queueOffset, false)
		return remoting.NewResponse(remoting.Success, "")
	}
	resp, decided := b.decide(h, queueOffset, phyOffset, original >= 0, check)
	b.releaseHalf(queueOffset, decided)
	return resp
}

// releaseHalf ends a decision on a half offset; decided marks it done.
func (b *Broker) releaseHalf(queueOffset int64, decided bool) {
	b.tx.mu.Lock()
	delete(b.tx.inflight, queueOffset)
	if decided {
		b.tx.done[queueOffset] = struct{}{}
	}
	b.tx.mu.Unlock()
}

// decide checks the half message as EndTransactionProcessor.checkPrepareMessage does, stores
// the committed message, and writes the op record. redirected says the header named the
// message's predecessor, whose offsets the stored copy does not carry.
func (b *Broker) decide(h *protocol.EndTransactionRequestHeader, queueOffset, phyOffset int64, redirected bool,
	check func(*message.Record) *remoting.Command) (*remoting.Command, bool) {
	var rec message.Record
	if err := b.readRecord(phyOffset, &rec); err != nil || string(rec.Topic) != names.TopicTransHalf {
		return remoting.NewResponse(remoting.SystemError, "Find prepared transaction message failed"), false
	}
	props := message.UnmarshalProperties(rec.Properties)
	switch {
	case props[message.PropertyProducerGroup] != h.ProducerGroup:
		return remoting.NewResponse(remoting.SystemError, "The producer group wrong"), false
	case !redirected && rec.QueueOffset != queueOffset:
		return remoting.NewResponse(remoting.SystemError, "The transaction state table offset wrong"), false
	case rec.PhysicalOffset != phyOffset:
		return remoting.NewResponse(remoting.SystemError, "The commit log offset wrong"), false
	}
	if check != nil {
		if resp := check(&rec); resp != nil {
			return resp, false
		}
	}
	if h.CommitOrRollback == message.TransactionCommitType {
		m, err := b.committedMessage(&rec, props)
		if err != nil {
			return remoting.NewResponse(remoting.SystemError, err.Error()), false
		}
		if !b.committedBefore(m, props[message.PropertyUniqKey]) {
			r, err := b.store.PutMessage(m)
			if !putStored(r.Status) {
				b.tx.log.Error().Err(err).Str("status", r.Status.String()).Msg("committed transaction message not stored")
				code, remark := putStatusCode(r.Status, b.send.illegalRemark)
				return remoting.NewResponse(code, remark), false
			}
			b.send.afterPut(m, &r)
			b.countPut(m.Topic, 1, r.WroteBytes)
		}
	}
	if err := b.putOp(queueOffset); err != nil {
		// The message stays undecided: the check service asks the producer again.
		b.tx.log.Error().Err(err).Int64("half_offset", queueOffset).Msg("transaction op record not stored")
		return remoting.NewResponse(remoting.SystemError, err.Error()), false
	}
	return remoting.NewResponse(remoting.Success, ""), true
}

// committedBefore reports whether the commit of the half message rec was stored already: a
// broker that died after storing a commit and before its op record checks the message again
// after the restart (from a re-put copy of the half message), and the producer commits it
// again. The committed record keeps the half message's UNIQ_KEY, which the index finds, and the
// commit type; RocketMQ stores such a commit twice.
func (b *Broker) committedBefore(m *storage.Message, uniqKey string) bool {
	if uniqKey == "" {
		return false
	}
	// From the beginning of time: rec may be a re-put copy stored after the commit it looks for.
	res, err := b.store.QueryMessage(m.Topic, uniqKey, 16, 0, math.MaxInt64)
	if err != nil {
		return false
	}
	for _, raw := range res.Messages {
		var c message.Record
		if _, err := message.DecodeRecord(raw, &c, false); err != nil ||
			message.TransactionType(c.SysFlag) != message.TransactionCommitType {
			continue
		}
		if v, ok := message.PropertyValue(c.Properties, message.PropertyUniqKey); ok && string(v) == uniqKey {
			return true
		}
	}
	return false
}

// committedMessage is the message a commit stores (EndTransactionProcessor.endMessageTransaction):
// the half message in its real topic and queue, without REAL_TOPIC, REAL_QID and TRAN_MSG,
// sysFlag of the commit type, PreparedTransactionOffset naming the half message. A DELAY level
// or a timer property takes effect now, as RocketMQ's store delays committed messages.
func (b *Broker) committedMessage(rec *message.Record, props map[string]string) (*storage.Message, error) {
	topic := props[message.PropertyRealTopic]
	qid, err := strconv.ParseInt(props[message.PropertyRealQueueID], 10, 32)
	if topic == "" || err != nil || qid < 0 {
		return nil, errors.New("the prepared message names no real topic and queue")
	}
	raw := string(rec.Properties)
	raw = removeProperty(raw, message.PropertyRealTopic)
	raw = removeProperty(raw, message.PropertyRealQueueID)
	raw = removeProperty(raw, message.PropertyTransactionPrepared)
	m := &storage.Message{
		Topic:                     topic,
		QueueID:                   int32(qid),
		Flag:                      rec.Flag,
		Body:                      rec.Body,
		Properties:                raw,
		SysFlag:                   rec.SysFlag&^transactionBits | message.TransactionCommitType,
		BornTimestamp:             rec.BornTimestamp,
		BornHost:                  rec.BornHost,
		StoreHost:                 rec.StoreHost,
		ReconsumeTimes:            rec.ReconsumeTimes,
		PreparedTransactionOffset: rec.PhysicalOffset,
	}
	if level := delayLevel(raw); level > 0 {
		b.toScheduleTopic(m, level)
	} else {
		// A timer property takes effect at the commit too. One the timer refuses (malformed,
		// too far ahead) came with a half message that was accepted: it is delivered now
		// rather than lost.
		_ = b.toTimerTopic(m)
	}
	return m, nil
}

// putOp writes the op record that marks a half offset decided
// (TransactionalMessageBridge.addRemoveTagInTransactionOp).
func (b *Broker) putOp(halfOffset int64) error {
	b.topics.addSystemTopic(names.TopicTransOpHalf, 1)
	props := setProperty("", message.PropertyTags, opRemoveTag)
	props = setProperty(props, message.PropertyWaitStoreMsgOK, "true")
	m := &storage.Message{
		Topic:         names.TopicTransOpHalf,
		Body:          strconv.AppendInt(nil, halfOffset, 10),
		Properties:    props,
		BornTimestamp: time.Now().UnixMilli(),
		BornHost:      b.storeHost,
		StoreHost:     b.storeHost,
	}
	r, err := b.store.PutMessage(m)
	if !putStored(r.Status) {
		return fmt.Errorf("broker: put transaction op: %s: %w", r.Status, err)
	}
	return nil
}

// runTransactionCheck checks the half queue every TransactionCheckInterval until ctx ends.
func (b *Broker) runTransactionCheck(ctx context.Context) error {
	t := time.NewTicker(b.opts.TransactionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			b.checkTransactions(ctx, now)
		}
	}
}

// checkTransactions runs one round of the check service (TransactionalMessageServiceImpl.check).
// Messages stored after the round began, the copies it re-puts among them, wait for the next.
func (b *Broker) checkTransactions(ctx context.Context, now time.Time) {
	end := b.store.MaxOffsetInQueue(names.TopicTransHalf, 0)
	off := b.halfCursor()
	start := off
	defer func() {
		if off != start {
			b.offsets.commit(transactionGroup, names.TopicTransHalf, 0, off)
		}
		b.advanceOpCursor(off)
	}()
	for off < end && ctx.Err() == nil {
		units, err := b.store.ConsumeQueueUnits(names.TopicTransHalf, 0, off, transactionCheckBatch)
		if err != nil || len(units) == 0 {
			b.tx.log.Warn().Err(err).Int64("offset", off).Msg("half queue unreadable, check round ended")
			return
		}
		for _, u := range units {
			if off >= end || !b.checkHalf(ctx, off, u, now) {
				return
			}
			off++
		}
	}
}

// checkHalf looks at the half message at off and reports whether the round may move past it.
func (b *Broker) checkHalf(ctx context.Context, off int64, u storage.CQUnit, now time.Time) bool {
	b.tx.mu.Lock()
	if _, busy := b.tx.inflight[off]; busy {
		b.tx.mu.Unlock()
		return false
	}
	if _, done := b.tx.done[off]; done {
		delete(b.tx.done, off)
		b.tx.mu.Unlock()
		return true
	}
	b.tx.inflight[off] = struct{}{}
	b.tx.mu.Unlock()
	moved := b.checkUndecided(ctx, off, u, now)
	b.tx.mu.Lock()
	delete(b.tx.inflight, off)
	b.tx.mu.Unlock()
	return moved
}

func (b *Broker) checkUndecided(ctx context.Context, off int64, u storage.CQUnit, now time.Time) bool {
	var rec message.Record
	if err := b.readRecord(u.PhyOffset, &rec); err != nil {
		b.tx.log.Error().Err(err).Int64("offset", off).Msg("unreadable half message skipped")
		return true
	}
	props := message.UnmarshalProperties(rec.Properties)
	immunity := b.opts.TransactionTimeout
	if v, err := strconv.ParseInt(props[message.PropertyCheckImmunityTimeInSeconds], 10, 64); err == nil && v > 0 {
		immunity = time.Duration(v) * time.Second
	}
	if age := now.UnixMilli() - rec.BornTimestamp; age >= 0 && age < immunity.Milliseconds() {
		return false
	}
	checks, _ := strconv.Atoi(props[message.PropertyTransactionCheckTimes])
	if checks >= b.opts.TransactionCheckMax {
		return b.discardHalf(off, &rec)
	}
	raw := setProperty(string(rec.Properties), message.PropertyTransactionCheckTimes, strconv.Itoa(checks+1))
	c := storedCopy(&rec, names.TopicTransHalf, 0, raw)
	r, err := b.store.PutMessage(c)
	if !putStored(r.Status) {
		b.tx.log.Warn().Err(err).Str("status", r.Status.String()).Int64("offset", off).Msg("half message not re-put, check round ended")
		return false
	}
	b.tx.mu.Lock()
	b.tx.requeued[off] = halfCopy{queueOffset: r.QueueOffset, phyOffset: r.PhyOffset}
	b.tx.mu.Unlock()
	if err := b.putOp(off); err != nil {
		b.tx.log.Warn().Err(err).Int64("offset", off).Msg("op record of a re-put half message not stored")
	}
	b.sendCheck(ctx, c, props, r)
	return true
}

// discardHalf moves a half message checked TransactionCheckMax times to
// TRANS_CHECK_MAX_TIME_TOPIC (DefaultTransactionalMessageCheckListener.resolveDiscardMsg).
func (b *Broker) discardHalf(off int64, rec *message.Record) bool {
	b.topics.addSystemTopic(names.TopicTransCheckMaxTime, 1)
	m := storedCopy(rec, names.TopicTransCheckMaxTime, 0, string(rec.Properties))
	r, err := b.store.PutMessage(m)
	if !putStored(r.Status) {
		b.tx.log.Warn().Err(err).Str("status", r.Status.String()).Int64("offset", off).Msg("half message not discarded, check round ended")
		return false
	}
	b.tx.log.Info().Int64("offset", off).Int("checks", b.opts.TransactionCheckMax).Msg("transaction never decided, half message discarded")
	if err := b.putOp(off); err != nil {
		b.tx.log.Warn().Err(err).Int64("offset", off).Msg("op record of a discarded half message not stored")
	}
	return true
}

// storedCopy is rec stored again under topic and queue with the properties props.
func storedCopy(rec *message.Record, topic string, queueID int32, props string) *storage.Message {
	return &storage.Message{
		Topic:                     topic,
		QueueID:                   queueID,
		Flag:                      rec.Flag,
		Body:                      rec.Body,
		Properties:                props,
		SysFlag:                   rec.SysFlag,
		BornTimestamp:             rec.BornTimestamp,
		BornHost:                  rec.BornHost,
		StoreHost:                 rec.StoreHost,
		ReconsumeTimes:            rec.ReconsumeTimes,
		PreparedTransactionOffset: rec.PreparedTransactionOffset,
	}
}

// sendCheck sends CHECK_TRANSACTION_STATE for the re-put copy c to a live connection of its
// producer group, one-way (AbstractTransactionalMessageCheckListener.sendCheckMessage). The
// body is the message under its real topic and queue.
func (b *Broker) sendCheck(_ context.Context, c *storage.Message, props map[string]string, r storage.PutResult) {
	group := props[message.PropertyProducerGroup]
	chans := b.checkableProducers(group, props[message.PropertyRealTopic])
	if len(chans) == 0 {
		b.tx.log.Warn().Str("producer_group", group).Int64("offset", r.QueueOffset).Msg("no producer to check a transaction with")
		return
	}
	qid, _ := strconv.ParseInt(props[message.PropertyRealQueueID], 10, 32)
	m := *c
	m.Topic = props[message.PropertyRealTopic]
	m.QueueID = int32(qid)
	rm := (*message.Message)(&m)
	size, err := message.RecordSize(rm)
	if err != nil {
		b.tx.log.Error().Err(err).Int64("offset", r.QueueOffset).Msg("half message not encodable for a check")
		return
	}
	body := make([]byte, size)
	rm.BodyCRC = message.BodyCRC(rm.Body)
	message.EncodeRecord(body, size, rm, r.QueueOffset, r.PhyOffset, time.Now().UnixMilli())
	uniq := props[message.PropertyUniqKey]
	h := protocol.CheckTransactionStateRequestHeader{TranStateTableOffset: r.QueueOffset, CommitLogOffset: r.PhyOffset,
		MsgID: uniq, TransactionID: uniq, OffsetMsgID: r.MsgID()}
	ext := make(map[string]string, 5)
	h.Encode(ext)
	req := remoting.NewRequest(remoting.CheckTransactionState, ext, body)
	req.MarkOneway()
	if err := chans[rand.IntN(len(chans))].InvokeOneway(req); err != nil {
		b.tx.log.Warn().Err(err).Str("producer_group", group).Msg("transaction check not sent")
	}
}

// checkableProducers are the live connections of a producer group that may be sent a check of
// a half message bound for topic: the check carries the message's body, and a producer group
// needs no permission in the plain ACL, so with ACL on only members whose heartbeat was signed
// by an account with PUB on the topic (what sending the half message needed) are asked.
func (b *Broker) checkableProducers(group, topic string) []remoting.Channel {
	clients := b.clients.consumers.producerClients(group)
	out := make([]remoting.Channel, 0, len(clients))
	for _, c := range clients {
		if b.opts.WriteCheck != nil {
			as := &remoting.Command{ExtFields: map[string]string{remoting.ExtAccessKey: c.accessKey}}
			if b.opts.WriteCheck(c.ch, as, topic) != nil {
				continue
			}
		}
		out = append(out, c.ch)
	}
	return out
}

// advanceOpCursor moves the op queue's cursor past op records that only name offsets behind
// the half cursor, and forgets the copies and decisions the half cursor has passed.
func (b *Broker) advanceOpCursor(halfCur int64) {
	b.tx.mu.Lock()
	for old, c := range b.tx.requeued {
		if c.queueOffset < halfCur {
			delete(b.tx.requeued, old)
		}
	}
	for off := range b.tx.done {
		if off < halfCur {
			delete(b.tx.done, off)
		}
	}
	b.tx.mu.Unlock()
	start := b.opCursor()
	off := start
	end := b.store.MaxOffsetInQueue(names.TopicTransOpHalf, 0)
scan:
	for off < end {
		units, err := b.store.ConsumeQueueUnits(names.TopicTransOpHalf, 0, off, transactionCheckBatch)
		if err != nil || len(units) == 0 {
			break
		}
		for _, u := range units {
			for _, h := range b.opHalfOffsets(u) {
				if h >= halfCur {
					break scan
				}
			}
			off++
		}
	}
	if off != start {
		b.offsets.commit(transactionGroup, names.TopicTransOpHalf, 0, off)
	}
}
