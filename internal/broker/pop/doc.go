// Package pop is RocketMQ 5's POP consumption as a broker service: POP_MESSAGE hands a group
// messages and hides them for an invisible time, ACK_MESSAGE / BATCH_ACK_MESSAGE take them for
// good, CHANGE_MESSAGE_INVISIBLETIME moves their deadline, and a message not acknowledged in
// time goes back to the group's pop retry topic "%RETRY%<group>_<topic>" (KeyBuilder's V1
// name) with RECONSUME_TIME raised, or to "%DLQ%<group>" past the group's retryMaxTimes.
// PEEK_MESSAGE, NOTIFICATION and POLLING_INFO read without popping.
//
// # Durability
//
// Every pop appends a checkpoint record ("ck": the group, topic, queue, start offset, pop
// time, invisible time and the popped offsets) to the revive topic rmq_sys_REVIVE_LOG_<cluster>
// (8 queues, reviveQueueNum) through the core's store before it is answered, and acks append
// ack records ("ack" for one message; "bAck", 5.x's BatchAckMsg, for several of one
// checkpoint). Under SYNC_FLUSH or SYNC_MASTER, or with Pop.DisableBufferMerge, an ack's record
// is stored before the ack is answered (on disk, under SYNC_FLUSH). Otherwise acks are merged
// in memory against their checkpoint and written as one record per checkpoint within
// Pop.CkStayBufferTime (buffer.go): a kill -9 loses the acks of the last stay time, whose
// messages come back after their invisible time. A pop's consumer offset in the consumer
// offset table moves only after its checkpoint is written. The live checkpoints are held in
// memory (popCkMaxBufferSize caps them; past it pops answer SYSTEM_BUSY). On start the service
// replays each revive queue from its revive offset (a consumer offset of
// CID_RMQ_SYS_REVIVE_GROUP on the revive topic): checkpoints come back, acks after them cross
// messages off, and a group's pop offset is raised past every replayed checkpoint, so a crash
// between the checkpoint and the offset flush hands nothing out twice.
//
// A pop's answer is the topic's records as stored, lent from the store as a pull's are
// (body.go); clients build their receipt handles from the answer's header. Records of the pop
// retry topic and of FIFO pops carry their handle as POP_CK.
//
// # Revive
//
// Run ticks every reviveInterval: a checkpoint whose popTime+invisibleTime passed is taken out
// of the table, its merged acks are written, its unacknowledged messages are re-put, and each
// revive queue's offset moves to its oldest live checkpoint record (or its end). A crash after
// a re-put but before the offset flush re-puts again on restart: delivery is at least once, as
// in RocketMQ.
//
// Files: service.go (the service, its checks and the checkpoint table), popmsg.go
// (POP_MESSAGE and PEEK_MESSAGE), body.go (a pop answer's body), ack.go (ACK_MESSAGE,
// BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME), buffer.go (acks merged in memory),
// records.go (the revive topic's records), revive.go (the replay and the revive loop), poll.go
// (parked pops and notifications, POLLING_INFO), order.go (FIFO pops, order=true: one batch of
// a queue at a time, consumerOrderInfo.json).
package pop
