package transaction

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

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/reqnames"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// transactionGroup is the consumer group whose offsets are the check service's cursors
// (TransactionalMessageUtil.buildConsumerGroup).
const transactionGroup = "CID_RMQ_SYS_TRANS"

// opRemoveTag tags op records (TransactionalMessageUtil.REMOVETAG).
const opRemoveTag = "d"

// transactionCheckBatch is how many half-queue units one read looks at.
const transactionCheckBatch = 32

// transactionBits masks both transaction-type bits of a sysFlag.
const transactionBits = message.TransactionRollbackType

// The remarks of an END_TRANSACTION whose header names no half message of its producer group
// (EndTransactionProcessor's); the gRPC endpoint tells them from a store failure.
const (
	RemarkHalfNotFound         = "Find prepared transaction message failed"
	RemarkGroupWrong           = "The producer group wrong"
	RemarkQueueOffsetWrong     = "The transaction state table offset wrong"
	RemarkCommitLogOffsetWrong = "The commit log offset wrong"
)

// halfCopy is where a re-put half message now is.
type halfCopy struct {
	queueOffset, phyOffset int64
}

// Service is the transactional message service: the half and op topics, END_TRANSACTION and
// the check loop. mu guards the maps; an offset in inflight is being decided (by
// END_TRANSACTION or the check loop) and nobody else touches it.
type Service struct {
	b    *broker.Broker
	opts *broker.Options
	log  zerolog.Logger

	mu       sync.Mutex
	done     map[int64]struct{} // half offsets with an op record, at or past the cursor
	requeued map[int64]halfCopy // half offsets re-put by a check -> their copy
	inflight map[int64]struct{}
}

// New builds the service over b and installs it as b's Transactions. A master reads the op
// records past its cursor, so that decisions taken before a restart are honoured.
func New(b *broker.Broker) (*Service, error) {
	s := &Service{
		b:        b,
		opts:     b.Options(),
		log:      b.Logger().With().Str("component", "transaction").Str("broker", b.Options().Broker.Name).Logger(),
		done:     map[int64]struct{}{},
		requeued: map[int64]halfCopy{},
		inflight: map[int64]struct{}{},
	}
	if b.IsMaster() {
		if err := s.loadOps(); err != nil {
			return nil, err
		}
	}
	b.Seams().SetTransactions(s)
	return s, nil
}

// Handlers serve END_TRANSACTION on the send pool, as RocketMQ's EndTransactionProcessor runs
// on the send executor.
func (s *Service) Handlers() []broker.Handler {
	return []broker.Handler{{Code: remoting.EndTransaction, Names: []reqnames.Field{reqnames.GroupField("producerGroup")},
		Proc: remoting.ProcessorFunc(s.processEndTransaction), Pool: s.b.Pools().Send}}
}

// Run runs the check loop on a master until ctx ends; a slave decides nothing.
func (s *Service) Run(ctx context.Context) error {
	if !s.b.IsMaster() {
		return nil
	}
	return s.runCheck(ctx)
}

// Close has nothing to write: the cursors are consumer offsets, saved by the core.
func (s *Service) Close() error { return nil }

// halfCursor and opCursor are the check service's positions in the half and op queues.
func (s *Service) halfCursor() int64 { return s.transactionCursor(names.TopicTransHalf) }
func (s *Service) opCursor() int64   { return s.transactionCursor(names.TopicTransOpHalf) }

func (s *Service) transactionCursor(topic string) int64 {
	off := s.b.Offsets().Query(transactionGroup, topic, 0)
	return max(off, s.b.Store().MinOffsetInQueue(topic, 0))
}

// loadOps reads the op records past the op cursor, so that decisions taken before
// a restart are honoured and not taken again.
func (s *Service) loadOps() error {
	halfCur := s.halfCursor()
	end := s.b.Store().MaxOffsetInQueue(names.TopicTransOpHalf, 0)
	for off := s.opCursor(); off < end; {
		units, err := s.b.Store().ConsumeQueueUnits(names.TopicTransOpHalf, 0, off, transactionCheckBatch)
		if err != nil {
			return fmt.Errorf("broker: read transaction op queue at %d: %w", off, err)
		}
		if len(units) == 0 {
			break
		}
		for _, u := range units {
			for _, h := range s.opHalfOffsets(u) {
				if h >= halfCur {
					s.done[h] = struct{}{}
				}
			}
			off++
		}
	}
	return nil
}

// opHalfOffsets returns the half offsets an op record names (one in 4.x; later releases join
// several with commas). An unreadable record names none.
func (s *Service) opHalfOffsets(u storage.CQUnit) []int64 {
	var rec message.Record
	if err := s.b.Messages().Read(u.PhyOffset, &rec); err != nil {
		s.log.Warn().Err(err).Int64("phy_offset", u.PhyOffset).Msg("unreadable transaction op record skipped")
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

// Prepare turns a prepared send into a half message (TransactionalMessageBridge
// parseHalfMessageInner).
func (s *Service) Prepare(m *storage.Message) {
	props := message.SetProperty(m.Properties, message.PropertyRealTopic, m.Topic)
	m.Properties = message.SetProperty(props, message.PropertyRealQueueID, strconv.Itoa(int(m.QueueID)))
	m.SysFlag &^= transactionBits
	m.Topic = names.TopicTransHalf
	m.QueueID = 0
	s.b.Topics().AddSystem(names.TopicTransHalf, 1)
}

// processEndTransaction serves END_TRANSACTION (37). Producers send it one-way; the answer
// matters only to a caller that waits for it.
func (s *Service) processEndTransaction(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.EndTransactionRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if !s.b.IsMaster() {
		return remoting.NewResponse(remoting.SlaveNotAvailable,
			"Message store is slave mode, so end transaction is forbidden. "), nil
	}
	switch h.CommitOrRollback {
	case message.TransactionCommitType, message.TransactionRollbackType:
	default:
		return nil, nil // unknown: the check service asks again later
	}
	var check func(*message.Record) *remoting.Command
	if s.opts.WriteCheck != nil {
		check = func(rec *message.Record) *remoting.Command { return s.opts.WriteCheck(ch, req, broker.OwnTopic(rec)) }
	}
	return s.endTransaction(&h, check), nil
}

// endTransaction applies a commit or rollback to the half message the header names; check,
// when not nil, may refuse the request once the half message is read (ACL, WriteCheck).
func (s *Service) endTransaction(h *protocol.EndTransactionRequestHeader, check func(*message.Record) *remoting.Command) *remoting.Command {
	queueOffset, phyOffset := h.TranStateTableOffset, h.CommitLogOffset
	var original int64 = -1
	s.mu.Lock()
	for c, ok := s.requeued[queueOffset]; ok; c, ok = s.requeued[queueOffset] {
		if original < 0 {
			original = queueOffset
		}
		queueOffset, phyOffset = c.queueOffset, c.phyOffset
	}
	_, done := s.done[queueOffset]
	_, busy := s.inflight[queueOffset]
	if !done && !busy {
		s.inflight[queueOffset] = struct{}{}
	}
	s.mu.Unlock()
	if done || busy {
		// Decided already (or being decided): a second decision would deliver twice. One that
		// arrives while the check loop holds the offset is not applied; the loop re-puts the
		// message and asks the producer again, whose answer decides it.
		return remoting.NewResponse(remoting.Success, "")
	}
	if original < 0 && queueOffset < s.halfCursor() {
		s.releaseHalf(queueOffset, false)
		return remoting.NewResponse(remoting.Success, "")
	}
	resp, decided := s.decide(h, queueOffset, phyOffset, original >= 0, check)
	s.releaseHalf(queueOffset, decided)
	return resp
}

// releaseHalf ends a decision on a half offset; decided marks it done.
func (s *Service) releaseHalf(queueOffset int64, decided bool) {
	s.mu.Lock()
	delete(s.inflight, queueOffset)
	if decided {
		s.done[queueOffset] = struct{}{}
	}
	s.mu.Unlock()
}

// decide checks the half message as EndTransactionProcessor.checkPrepareMessage does, stores
// the committed message, and writes the op record. redirected says the header named the
// message's predecessor, whose offsets the stored copy does not carry.
func (s *Service) decide(h *protocol.EndTransactionRequestHeader, queueOffset, phyOffset int64, redirected bool,
	check func(*message.Record) *remoting.Command) (*remoting.Command, bool) {
	var rec message.Record
	if err := s.b.Messages().Read(phyOffset, &rec); err != nil || string(rec.Topic) != names.TopicTransHalf {
		return remoting.NewResponse(remoting.SystemError, RemarkHalfNotFound), false
	}
	props := message.UnmarshalProperties(rec.Properties)
	switch {
	case props[message.PropertyProducerGroup] != h.ProducerGroup:
		return remoting.NewResponse(remoting.SystemError, RemarkGroupWrong), false
	case !redirected && rec.QueueOffset != queueOffset:
		return remoting.NewResponse(remoting.SystemError, RemarkQueueOffsetWrong), false
	case rec.PhysicalOffset != phyOffset:
		return remoting.NewResponse(remoting.SystemError, RemarkCommitLogOffsetWrong), false
	}
	if check != nil {
		if resp := check(&rec); resp != nil {
			return resp, false
		}
	}
	if h.CommitOrRollback == message.TransactionCommitType {
		m, err := s.committedMessage(&rec, props)
		if err != nil {
			return remoting.NewResponse(remoting.SystemError, err.Error()), false
		}
		if !s.committedBefore(m, props[message.PropertyUniqKey]) {
			r, err := s.b.Messages().Put(m)
			if !broker.PutStored(r.Status) {
				s.log.Error().Err(err).Str("status", r.Status.String()).Msg("committed transaction message not stored")
				return s.b.Messages().Refusal(r.Status), false
			}
			s.b.Messages().CountPut(m.Topic, 1, r.WroteBytes)
		}
	}
	if err := s.putOp(queueOffset); err != nil {
		// The message stays undecided: the check service asks the producer again.
		s.log.Error().Err(err).Int64("half_offset", queueOffset).Msg("transaction op record not stored")
		return remoting.NewResponse(remoting.SystemError, err.Error()), false
	}
	return remoting.NewResponse(remoting.Success, ""), true
}

// committedBefore reports whether the commit of the half message rec was stored already: a
// broker that died after storing a commit and before its op record checks the message again
// after the restart (from a re-put copy of the half message), and the producer commits it
// again. The committed record keeps the half message's UNIQ_KEY, which the index finds, and the
// commit type; RocketMQ stores such a commit twice.
func (s *Service) committedBefore(m *storage.Message, uniqKey string) bool {
	if uniqKey == "" {
		return false
	}
	// From the beginning of time: rec may be a re-put copy stored after the commit it looks for.
	res, err := s.b.Store().QueryMessage(m.Topic, uniqKey, 16, 0, math.MaxInt64)
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
func (s *Service) committedMessage(rec *message.Record, props map[string]string) (*storage.Message, error) {
	topic := props[message.PropertyRealTopic]
	qid, err := strconv.ParseInt(props[message.PropertyRealQueueID], 10, 32)
	if topic == "" || err != nil || qid < 0 {
		return nil, errors.New("the prepared message names no real topic and queue")
	}
	raw := string(rec.Properties)
	raw = message.RemoveProperty(raw, message.PropertyRealTopic)
	raw = message.RemoveProperty(raw, message.PropertyRealQueueID)
	raw = message.RemoveProperty(raw, message.PropertyTransactionPrepared)
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
	// A timer property takes effect at the commit too. One the timer refuses (malformed, too
	// far ahead) came with a half message that was accepted: it is delivered now rather than
	// lost.
	_ = s.b.Messages().Schedule(m)
	return m, nil
}

// putOp writes the op record that marks a half offset decided
// (TransactionalMessageBridge.addRemoveTagInTransactionOp).
func (s *Service) putOp(halfOffset int64) error {
	s.b.Topics().AddSystem(names.TopicTransOpHalf, 1)
	props := message.SetProperty("", message.PropertyTags, opRemoveTag)
	props = message.SetProperty(props, message.PropertyWaitStoreMsgOK, "true")
	m := &storage.Message{
		Topic:         names.TopicTransOpHalf,
		Body:          strconv.AppendInt(nil, halfOffset, 10),
		Properties:    props,
		BornTimestamp: time.Now().UnixMilli(),
		BornHost:      s.b.Messages().StoreHost(),
		StoreHost:     s.b.Messages().StoreHost(),
	}
	r, err := s.b.Messages().Put(m)
	if !broker.PutStored(r.Status) {
		return fmt.Errorf("broker: put transaction op: %s: %w", r.Status, err)
	}
	return nil
}

// runCheck checks the half queue every TransactionCheckInterval until ctx ends.
func (s *Service) runCheck(ctx context.Context) error {
	t := time.NewTicker(s.opts.Transactions.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			s.checkTransactions(ctx, now)
		}
	}
}

// checkTransactions runs one round of the check service (TransactionalMessageServiceImpl.check).
// Messages stored after the round began, the copies it re-puts among them, wait for the next.
func (s *Service) checkTransactions(ctx context.Context, now time.Time) {
	end := s.b.Store().MaxOffsetInQueue(names.TopicTransHalf, 0)
	off := s.halfCursor()
	start := off
	defer func() {
		if off != start {
			s.b.Offsets().Commit(transactionGroup, names.TopicTransHalf, 0, off)
		}
		s.advanceOpCursor(off)
	}()
	for off < end && ctx.Err() == nil {
		units, err := s.b.Store().ConsumeQueueUnits(names.TopicTransHalf, 0, off, transactionCheckBatch)
		if err != nil || len(units) == 0 {
			s.log.Warn().Err(err).Int64("offset", off).Msg("half queue unreadable, check round ended")
			return
		}
		for _, u := range units {
			if off >= end || !s.checkHalf(ctx, off, u, now) {
				return
			}
			off++
		}
	}
}

// checkHalf looks at the half message at off and reports whether the round may move past it.
func (s *Service) checkHalf(ctx context.Context, off int64, u storage.CQUnit, now time.Time) bool {
	s.mu.Lock()
	if _, busy := s.inflight[off]; busy {
		s.mu.Unlock()
		return false
	}
	if _, done := s.done[off]; done {
		delete(s.done, off)
		s.mu.Unlock()
		return true
	}
	s.inflight[off] = struct{}{}
	s.mu.Unlock()
	moved := s.checkUndecided(ctx, off, u, now)
	s.mu.Lock()
	delete(s.inflight, off)
	s.mu.Unlock()
	return moved
}

func (s *Service) checkUndecided(ctx context.Context, off int64, u storage.CQUnit, now time.Time) bool {
	var rec message.Record
	if err := s.b.Messages().Read(u.PhyOffset, &rec); err != nil {
		s.log.Error().Err(err).Int64("offset", off).Msg("unreadable half message skipped")
		return true
	}
	props := message.UnmarshalProperties(rec.Properties)
	immunity := s.opts.Transactions.Timeout
	if v, err := strconv.ParseInt(props[message.PropertyCheckImmunityTimeInSeconds], 10, 64); err == nil && v > 0 {
		immunity = time.Duration(v) * time.Second
	}
	if age := now.UnixMilli() - rec.BornTimestamp; age >= 0 && age < immunity.Milliseconds() {
		return false
	}
	checks, _ := strconv.Atoi(props[message.PropertyTransactionCheckTimes])
	if checks >= s.opts.Transactions.CheckMax {
		return s.discardHalf(off, &rec)
	}
	raw := message.SetProperty(string(rec.Properties), message.PropertyTransactionCheckTimes, strconv.Itoa(checks+1))
	c := (*storage.Message)(rec.Copy(names.TopicTransHalf, 0, raw))
	r, err := s.b.Messages().Put(c)
	if !broker.PutStored(r.Status) {
		s.log.Warn().Err(err).Str("status", r.Status.String()).Int64("offset", off).Msg("half message not re-put, check round ended")
		return false
	}
	s.mu.Lock()
	s.requeued[off] = halfCopy{queueOffset: r.QueueOffset, phyOffset: r.PhyOffset}
	s.mu.Unlock()
	if err := s.putOp(off); err != nil {
		s.log.Warn().Err(err).Int64("offset", off).Msg("op record of a re-put half message not stored")
	}
	s.sendCheck(ctx, c, props, r)
	return true
}

// discardHalf moves a half message checked TransactionCheckMax times to
// TRANS_CHECK_MAX_TIME_TOPIC (DefaultTransactionalMessageCheckListener.resolveDiscardMsg).
func (s *Service) discardHalf(off int64, rec *message.Record) bool {
	s.b.Topics().AddSystem(names.TopicTransCheckMaxTime, 1)
	m := (*storage.Message)(rec.Copy(names.TopicTransCheckMaxTime, 0, string(rec.Properties)))
	r, err := s.b.Messages().Put(m)
	if !broker.PutStored(r.Status) {
		s.log.Warn().Err(err).Str("status", r.Status.String()).Int64("offset", off).Msg("half message not discarded, check round ended")
		return false
	}
	s.log.Info().Int64("offset", off).Int("checks", s.opts.Transactions.CheckMax).Msg("transaction never decided, half message discarded")
	if err := s.putOp(off); err != nil {
		s.log.Warn().Err(err).Int64("offset", off).Msg("op record of a discarded half message not stored")
	}
	return true
}

// sendCheck sends CHECK_TRANSACTION_STATE for the re-put copy c to a live connection of its
// producer group, one-way (AbstractTransactionalMessageCheckListener.sendCheckMessage). The
// body is the message under its real topic and queue.
func (s *Service) sendCheck(_ context.Context, c *storage.Message, props map[string]string, r storage.PutResult) {
	group := props[message.PropertyProducerGroup]
	chans := s.checkableProducers(group, props[message.PropertyRealTopic])
	if len(chans) == 0 {
		s.log.Warn().Str("producer_group", group).Int64("offset", r.QueueOffset).Msg("no producer to check a transaction with")
		return
	}
	qid, _ := strconv.ParseInt(props[message.PropertyRealQueueID], 10, 32)
	m := *c
	m.Topic = props[message.PropertyRealTopic]
	m.QueueID = int32(qid)
	rm := (*message.Message)(&m)
	size, err := message.RecordSize(rm)
	if err != nil {
		s.log.Error().Err(err).Int64("offset", r.QueueOffset).Msg("half message not encodable for a check")
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
		s.log.Warn().Err(err).Str("producer_group", group).Msg("transaction check not sent")
	}
}

// checkableProducers are the live connections of a producer group that may be sent a check of
// a half message bound for topic: the check carries the message's body, and a producer group
// needs no permission in the plain ACL, so with ACL on only members whose heartbeat was signed
// by an account with PUB on the topic (what sending the half message needed) are asked.
func (s *Service) checkableProducers(group, topic string) []remoting.Channel {
	conns := s.b.Clients().ProducerConns(group)
	out := make([]remoting.Channel, 0, len(conns))
	for _, c := range conns {
		if s.opts.WriteCheck != nil {
			as := &remoting.Command{ExtFields: map[string]string{remoting.ExtAccessKey: c.AccessKey}}
			if s.opts.WriteCheck(c.Ch, as, topic) != nil {
				continue
			}
		}
		out = append(out, c.Ch)
	}
	return out
}

// advanceOpCursor moves the op queue's cursor past op records that only name offsets behind
// the half cursor, and forgets the copies and decisions the half cursor has passed.
func (s *Service) advanceOpCursor(halfCur int64) {
	s.mu.Lock()
	for old, c := range s.requeued {
		if c.queueOffset < halfCur {
			delete(s.requeued, old)
		}
	}
	for off := range s.done {
		if off < halfCur {
			delete(s.done, off)
		}
	}
	s.mu.Unlock()
	start := s.opCursor()
	off := start
	end := s.b.Store().MaxOffsetInQueue(names.TopicTransOpHalf, 0)
scan:
	for off < end {
		units, err := s.b.Store().ConsumeQueueUnits(names.TopicTransOpHalf, 0, off, transactionCheckBatch)
		if err != nil || len(units) == 0 {
			break
		}
		for _, u := range units {
			for _, h := range s.opHalfOffsets(u) {
				if h >= halfCur {
					break scan
				}
			}
			off++
		}
	}
	if off != start {
		s.b.Offsets().Commit(transactionGroup, names.TopicTransOpHalf, 0, off)
	}
}
