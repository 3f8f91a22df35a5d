package broker

import (
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// What the core declares for transactions, scheduled delivery and timers, which live in
// internal/broker/transaction and internal/broker/schedule: the two interfaces the send, retry
// and commit paths call (RocketMQ 5 keeps the same seam as PutMessageHook and
// HandleScheduleMessageHook; Seams installs them) and the record helpers those services share.
// What they read and write of the core is on the views (Messages, Topics, Offsets, Clients).

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
	// RecallHandle is the recall handle (RECALL_MESSAGE) the answer to the send of m carries:
	// m is a single message Schedule moved to the timer topic, now stored. "" when m cannot be
	// recalled.
	RecallHandle(m *storage.Message) string
}

// Transactions take prepared sends. Without them (SetTransactions never called) a half message
// is refused as with RejectTransactionMessage.
type Transactions interface {
	// Prepare moves m, a send whose TRAN_MSG is true, to the half topic, where it waits for
	// END_TRANSACTION (TransactionalMessageBridge.parseHalfMessageInner).
	Prepare(m *storage.Message)
}

// PutStored reports whether a put status means the message was written.
func PutStored(st storage.PutStatus) bool { return putStored(st) }

// OwnTopic is the topic a stored record belongs to: its REAL_TOPIC when it waits in a topic that
// holds other topics' messages (delayed, timer, half), else its topic (what ACL checks name).
func OwnTopic(rec *message.Record) string { return ownTopic(rec) }
