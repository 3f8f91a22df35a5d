package protocol

// EndTransactionRequestHeader is the header of END_TRANSACTION (37): a producer tells the broker
// that stored a half message whether to commit it (8), roll it back (12) or leave it for a
// check (0), after its local transaction or when answering CHECK_TRANSACTION_STATE. The
// producer sends it one-way. The offsets name the half message as the send answer or the check
// gave them.
type EndTransactionRequestHeader struct {
	ProducerGroup string `ext:"producerGroup,required"`
	// TranStateTableOffset is the half message's offset in RMQ_SYS_TRANS_HALF_TOPIC queue 0.
	TranStateTableOffset int64 `ext:"tranStateTableOffset,required"`
	// CommitLogOffset is the half message's physical offset.
	CommitLogOffset int64 `ext:"commitLogOffset,required"`
	// CommitOrRollback is a transaction sysFlag type: 0 unknown, 8 commit, 12 rollback.
	CommitOrRollback int32 `ext:"commitOrRollback,required"`
	// FromTransactionCheck marks the answer to a CHECK_TRANSACTION_STATE.
	FromTransactionCheck bool   `ext:"fromTransactionCheck"`
	MsgID                string `ext:"msgId,required"`
	TransactionID        string `ext:"transactionId,omitempty"`
	// BrokerName ("bname") is sent by the Go client.
	BrokerName string `ext:"bname,omitempty"`
}

// CheckTransactionStateRequestHeader is the header of CHECK_TRANSACTION_STATE (39), which a
// broker sends one-way to a producer of the half message's group when the message has waited
// longer than the transaction timeout without a decision. The body is the half message,
// encoded as stored but under its real topic and queue.
type CheckTransactionStateRequestHeader struct {
	TranStateTableOffset int64  `ext:"tranStateTableOffset,required"`
	CommitLogOffset      int64  `ext:"commitLogOffset,required"`
	MsgID                string `ext:"msgId,omitempty"`
	TransactionID        string `ext:"transactionId,omitempty"`
	OffsetMsgID          string `ext:"offsetMsgId,omitempty"`
}
