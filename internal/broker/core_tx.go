package broker

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// What the core declares for transactions, scheduled delivery and timers, which live in
// internal/broker/transaction and internal/broker/schedule: the two interfaces the send, retry
// and commit paths call (RocketMQ 5 keeps the same seam as PutMessageHook and
// HandleScheduleMessageHook), the setters that install them, and the narrow reads and writes of
// the core those services use.

// Defaults after RocketMQ 4.9's BrokerConfig and RocketMQ 5's MessageStoreConfig, for the
// Options the transaction and schedule services read.
const (
	DefaultTransactionTimeout       = 6 * time.Second  // transactionTimeOut
	DefaultTransactionCheckMax      = 15               // transactionCheckMax
	DefaultTransactionCheckInterval = 60 * time.Second // transactionCheckInterval
	// DefaultTimerPrecision is timerPrecisionMs; RocketMQ's is 1 s, ours 100 ms so that a
	// message arrives within 100 ms of its time.
	DefaultTimerPrecision = 100 * time.Millisecond
	DefaultTimerMaxDelay  = 3 * 24 * time.Hour // timerMaxDelaySec
)

// A Scheduler holds messages until their time: DELAY levels (SCHEDULE_TOPIC_XXXX) and timers
// (rmq_sys_wheel_timer). Without one (SetScheduler never called) a message is stored in its
// topic at once whatever its DELAY or timer properties say, as RocketMQ 5 stores a timer
// message with the timer wheel off; a retry is stored in its retry topic at once.
type Scheduler interface {
	// Schedule moves m, a message about to be stored that is neither a half message nor a
	// rollback, to where it waits when its properties ask for a DELAY level or a future timer
	// time (HookUtils.handleScheduleMessage). It returns the send answer refusing m (a timer
	// out of range), or nil.
	Schedule(m *storage.Message) *remoting.Command
	// Delay moves m to wait the delay of level, capped at the configured levels (the retry
	// path's back-off).
	Delay(m *storage.Message, level int)
	// Stored says that m, moved by Schedule or Delay, is in the store: the scheduler looks at
	// its queues now rather than at its next poll. It must not block.
	Stored(m *storage.Message)
	// DelayOffsets are the delay levels' cursors (GET_ALL_DELAY_OFFSET, runtime info).
	DelayOffsets() protocol.DelayOffsetSerializeWrapper
	// SetDelayOffsets installs a master's cursors on a slave (slave sync).
	SetDelayOffsets(w protocol.DelayOffsetSerializeWrapper) error
}

// Transactions take prepared sends. Without them (SetTransactions never called) a half message
// is refused as with RejectTransactionMessage.
type Transactions interface {
	// Prepare moves m, a send whose TRAN_MSG is true, to the half topic, where it waits for
	// END_TRANSACTION (TransactionalMessageBridge.parseHalfMessageInner).
	Prepare(m *storage.Message)
}

// txHooks are the installed Scheduler and Transactions and the retention floor.
type txHooks struct {
	sched Scheduler
	tx    Transactions
	// floor is the store's RetentionFloor, set by the service that owns pending records
	// (timers): the store asks it from its own goroutine at any time, so it is atomic.
	floor atomic.Pointer[func() int64]
}

// SetScheduler installs the scheduled delivery of DELAY levels and timers. Call it while
// services are built (after New, before Register and Run).
func (b *Broker) SetScheduler(s Scheduler) { b.txh.sched = s }

// SetTransactions installs the transactional message service. Call it while services are
// built.
func (b *Broker) SetTransactions(t Transactions) { b.txh.tx = t }

// SetRetentionFloor installs the store's retention floor: the store deletes no CommitLog
// segment holding an offset at or past f's answer (math.MaxInt64 when nothing is pending).
func (b *Broker) SetRetentionFloor(f func() int64) { b.txh.floor.Store(&f) }

// retentionFloor is the store's RetentionFloor (storage.Options), math.MaxInt64 without one.
func (b *Broker) retentionFloor() int64 {
	if f := b.txh.floor.Load(); f != nil {
		return (*f)()
	}
	return math.MaxInt64
}

// Schedule applies m's DELAY level or timer properties through the Scheduler (see
// Scheduler.Schedule); the send path and a transaction's commit call it.
func (b *Broker) Schedule(m *storage.Message) *remoting.Command {
	if b.txh.sched == nil {
		return nil
	}
	return b.txh.sched.Schedule(m)
}

// delay has m wait level's delay before it reaches its topic (the retry path).
func (b *Broker) delay(m *storage.Message, level int) {
	if b.txh.sched != nil {
		b.txh.sched.Delay(m, level)
	}
}

// prepareHalf turns a prepared send into a half message, or refuses it without Transactions.
func (b *Broker) prepareHalf(m *storage.Message) *remoting.Command {
	if b.txh.tx == nil {
		return sendResponse(remoting.NoPermission, b.send.rejectTxRemark)
	}
	b.txh.tx.Prepare(m)
	return nil
}

// afterPut tells the Scheduler a message it redirected was stored.
func (b *Broker) afterPut(m *storage.Message, r *storage.PutResult) {
	if b.txh.sched != nil && putStored(r.Status) {
		b.txh.sched.Stored(m)
	}
}

// delayOffsets are the Scheduler's delay cursors, an empty table without one.
func (b *Broker) delayOffsets() protocol.DelayOffsetSerializeWrapper {
	if b.txh.sched == nil {
		return protocol.DelayOffsetSerializeWrapper{OffsetTable: map[int32]int64{}}
	}
	return b.txh.sched.DelayOffsets()
}

// updateDelayOffsets installs a master's delay cursors (slave sync through GET_ALL_DELAY_OFFSET);
// without a Scheduler there is nothing to keep them in.
func (b *Broker) updateDelayOffsets(w protocol.DelayOffsetSerializeWrapper) error {
	if b.txh.sched == nil {
		return nil
	}
	return b.txh.sched.SetDelayOffsets(w)
}

// PutMessage stores m as a service's own write (a commit, a delivery, an op record) and tells
// the Scheduler when m went to one of its topics. Counting it in the statistics is the
// caller's (CountPut): op records are not counted.
func (b *Broker) PutMessage(m *storage.Message) (storage.PutResult, error) {
	r, err := b.store.PutMessage(m)
	b.afterPut(m, &r)
	return r, err
}

// PutStored reports whether a put status means the message was written.
func PutStored(st storage.PutStatus) bool { return putStored(st) }

// PutRefusal is the send answer RocketMQ gives a put that ended with st.
func (b *Broker) PutRefusal(st storage.PutStatus) *remoting.Command {
	code, remark := putStatusCode(st, b.send.illegalRemark)
	return remoting.NewResponse(code, remark)
}

// AddSystemTopic adds a topic the broker's services write (half, op, timer topics) unless it
// exists; MaxTopics never refuses it.
func (b *Broker) AddSystemTopic(topic string, queueNums int32) {
	b.topics.addSystemTopic(topic, queueNums)
}

// ProducerConn is a live connection of a producer group's member.
type ProducerConn struct {
	Ch remoting.Channel
	// AccessKey is the ACL account its heartbeat was signed with, "" without ACL.
	AccessKey string
}

// ProducerConns are the live connections of a producer group's members.
func (b *Broker) ProducerConns(group string) []ProducerConn {
	clients := b.clients.consumers.producerClients(group)
	out := make([]ProducerConn, len(clients))
	for i, c := range clients {
		out[i] = ProducerConn{Ch: c.ch, AccessKey: c.accessKey}
	}
	return out
}

// RemoveProperty returns the encoded properties props without the pieces named key.
func RemoveProperty(props, key string) string { return removeProperty(props, key) }

// RecordCopy is the stored record rec to be stored again under topic and queue with the
// encoded properties props: same body, flags, times, hosts and reconsume times.
func RecordCopy(rec *message.Record, topic string, queueID int32, props string) *storage.Message {
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

// ReadRecord decodes the record stored at a CommitLog offset; rec points into the store's
// memory until the segment goes.
func (b *Broker) ReadRecord(phyOffset int64, rec *message.Record) error {
	raw, err := b.store.LookMessageByOffset(phyOffset)
	if err != nil {
		return err
	}
	_, err = message.DecodeRecord(raw, rec, false)
	return err
}

// OwnTopic is the topic a stored record belongs to: its REAL_TOPIC when it waits in a topic that
// holds other topics' messages (delayed, timer, half), else its topic (what ACL checks name).
func OwnTopic(rec *message.Record) string { return ownTopic(rec) }

// DelayLevel is a message's DELAY property as a level, 0 when absent or not a number.
func DelayLevel(props string) int { return delayLevel(props) }
