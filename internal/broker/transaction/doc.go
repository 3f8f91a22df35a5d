// Package transaction is the broker's transactional message service (RocketMQ 4.x
// TransactionalMessageServiceImpl, EndTransactionProcessor, TransactionalMessageCheckService),
// a service of the broker core (internal/broker) in a package of its own.
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
//
// What it owns: the request code END_TRANSACTION (37), the half, op and check-max topics
// (created as system topics when first written), the check loop (Run, on a master only) and the
// CHECK_TRANSACTION_STATE requests it sends. The core's send path calls Prepare for a send whose
// TRAN_MSG is true (broker.Transactions, installed with Seams.SetTransactions); a commit goes back through the
// core's Messages.Schedule, so a
// DELAY level or timer takes effect then. It keeps no file: its two cursors are consumer offsets
// of CID_RMQ_SYS_TRANS, which the core saves in consumerOffset.json, and the decisions taken are
// the op records in the store.
//
// Files: transaction.go (all of it). Locks: Service.mu guards the done, requeued and inflight
// maps and is a leaf: it is never held while calling the core, the store or a transport.
package transaction
