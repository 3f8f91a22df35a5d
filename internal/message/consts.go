package message

// Magic codes of the CommitLog record. Part of the format; do not change.
const (
	// MagicCode is the RocketMQ 4.x "v1" record magic (0xDAA320A7, -626843481).
	MagicCode int32 = -626843481
	// BlankMagicCode marks the blank record that pads the tail of a CommitLog segment
	// (0xCBD43194, -875286124). Its TOTALSIZE is the number of bytes left in the segment.
	BlankMagicCode int32 = -875286124
	// BlankMinBytes is the room a blank record needs (TOTALSIZE and MAGICCODE).
	BlankMinBytes = 8
)

// Message sysFlag bits (§9.2). Part of the format; do not change.
const (
	FlagCompressed int32 = 0x1
	FlagMultiTags  int32 = 0x2
	// TransactionNotType .. TransactionRollbackType are the two transaction-type bits (2–3).
	TransactionNotType      int32 = 0x0
	TransactionPreparedType int32 = 0x4
	TransactionCommitType   int32 = 0x8
	TransactionRollbackType int32 = 0xC
	transactionMask         int32 = 0xC
	FlagBornHostV6          int32 = 0x10
	FlagStoreHostV6         int32 = 0x20
)

// TransactionType returns the transaction type bits of sysFlag (one of the Transaction*Type
// constants).
func TransactionType(sysFlag int32) int32 { return sysFlag & transactionMask }

// Well-known property keys (§9.4).
const (
	PropertyTags                       = "TAGS"
	PropertyKeys                       = "KEYS"
	PropertyUniqKey                    = "UNIQ_KEY"
	PropertyWaitStoreMsgOK             = "WAIT"
	PropertyDelayTimeLevel             = "DELAY"
	PropertyTimerDeliverMS             = "TIMER_DELIVER_MS"
	PropertyRetryTopic                 = "RETRY_TOPIC"
	PropertyRealTopic                  = "REAL_TOPIC"
	PropertyRealQueueID                = "REAL_QID"
	PropertyTransactionPrepared        = "TRAN_MSG"
	PropertyProducerGroup              = "PGROUP"
	PropertyMinOffset                  = "MIN_OFFSET"
	PropertyMaxOffset                  = "MAX_OFFSET"
	PropertyBuyerID                    = "BUYER_ID"
	PropertyOriginMessageID            = "ORIGIN_MESSAGE_ID"
	PropertyTransferFlag               = "TRANSFER_FLAG"
	PropertyCorrectionFlag             = "CORRECTION_FLAG"
	PropertyMQ2Flag                    = "MQ2_FLAG"
	PropertyReconsumeTime              = "RECONSUME_TIME"
	PropertyMsgRegion                  = "MSG_REGION"
	PropertyTraceSwitch                = "TRACE_ON"
	PropertyMaxReconsumeTimes          = "MAX_RECONSUME_TIMES"
	PropertyConsumeStartTimestamp      = "CONSUME_START_TIME"
	PropertyTransactionPreparedQOffset = "TRAN_PREPARED_QUEUE_OFFSET"
	PropertyTransactionCheckTimes      = "TRANSACTION_CHECK_TIMES"
	PropertyCheckImmunityTimeInSeconds = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	PropertyTransactionID              = "__transactionId__"
	PropertyShardingKey                = "SHARDING_KEY"
	// PropertyMessageGroup is RocketMQ 5's PROPERTY_SHARDING_KEY: a FIFO message's group, by
	// which 5.x's clients pick its queue and its broker checks a FIFO topic's sends.
	PropertyMessageGroup = "__SHARDINGKEY"
	// PropertyTimerDelaySec and PropertyTimerDelayMS are RocketMQ 5's timer delays, relative
	// to the send (PropertyTimerDeliverMS is the absolute time).
	PropertyTimerDelaySec = "TIMER_DELAY_SEC"
	PropertyTimerDelayMS  = "TIMER_DELAY_MS"
	PropertyCluster       = "CLUSTER"
	PropertyCorrelationID = "CORRELATION_ID"
	PropertyReplyToClient = "REPLY_TO_CLIENT"
	PropertyTTL           = "TTL"
	PropertyArriveTime    = "ARRIVE_TIME"
	PropertyMsgType       = "MSG_TYPE"
)

// Property separators (§9.3). Part of the format; do not change.
const (
	NameValueSeparator = '\x01'
	PropertySeparator  = '\x02'
)
