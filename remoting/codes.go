package remoting

// Request codes of the RocketMQ 4.x remoting protocol. The values are part of the wire format; do
// not change them. Only the codes this project serves or sends are listed.
const (
	SendMessage                    int16 = 10
	PullMessage                    int16 = 11
	QueryMessage                   int16 = 12
	QueryConsumerOffset            int16 = 14
	UpdateConsumerOffset           int16 = 15
	UpdateAndCreateTopic           int16 = 17
	GetAllTopicConfig              int16 = 21
	GetTopicConfigList             int16 = 22
	GetTopicNameList               int16 = 23
	UpdateBrokerConfig             int16 = 25
	GetBrokerConfig                int16 = 26
	GetBrokerRuntimeInfo           int16 = 28
	SearchOffsetByTimestamp        int16 = 29
	GetMaxOffset                   int16 = 30
	GetMinOffset                   int16 = 31
	GetEarliestMsgStoreTime        int16 = 32
	ViewMessageByID                int16 = 33
	HeartBeat                      int16 = 34
	UnregisterClient               int16 = 35
	ConsumerSendMsgBack            int16 = 36
	EndTransaction                 int16 = 37
	GetConsumerListByGroup         int16 = 38
	CheckTransactionState          int16 = 39
	NotifyConsumerIDsChanged       int16 = 40
	LockBatchMQ                    int16 = 41
	UnlockBatchMQ                  int16 = 42
	GetAllConsumerOffset           int16 = 43
	GetAllDelayOffset              int16 = 45
	CheckClientConfig              int16 = 46
	PutKVConfig                    int16 = 100
	GetKVConfig                    int16 = 101
	DeleteKVConfig                 int16 = 102
	RegisterBroker                 int16 = 103
	UnregisterBroker               int16 = 104
	GetRouteInfoByTopic            int16 = 105
	GetBrokerClusterInfo           int16 = 106
	UpdateAndCreateSubscription    int16 = 200
	GetAllSubscriptionGroupConfig  int16 = 201
	GetTopicStatsInfo              int16 = 202
	GetConsumerConnectionList      int16 = 203
	GetProducerConnectionList      int16 = 204
	WipeWritePermOfBroker          int16 = 205
	GetAllTopicListFromNameServer  int16 = 206
	DeleteSubscriptionGroup        int16 = 207
	GetConsumeStats                int16 = 208
	DeleteTopicInBroker            int16 = 215
	DeleteTopicInNamesrv           int16 = 216
	GetKVListByNamespace           int16 = 219
	ResetConsumerClientOffset      int16 = 220
	GetConsumerStatusFromClient    int16 = 221
	InvokeBrokerToResetOffset      int16 = 222
	InvokeBrokerToGetConsumerStats int16 = 223
	QueryTopicConsumeByWho         int16 = 300
	GetTopicsByCluster             int16 = 224
	RegisterTopicInNamesrv         int16 = 217
	GetConsumerRunningInfo         int16 = 307
	ConsumeMessageDirectly         int16 = 309
	SendMessageV2                  int16 = 310
	GetUnitTopicList               int16 = 311
	SendBatchMessage               int16 = 320
	QueryConsumeQueue              int16 = 321
	SendReplyMessage               int16 = 324
	SendReplyMessageV2             int16 = 325
	PushReplyMessageToClient       int16 = 326
	QueryDataVersion               int16 = 322
)

// Response codes of the RocketMQ 4.x remoting protocol (part of the wire format).
const (
	Success                    int16 = 0
	SystemError                int16 = 1
	SystemBusy                 int16 = 2
	RequestCodeNotSupported    int16 = 3
	TransactionFailed          int16 = 4
	FlushDiskTimeout           int16 = 10
	SlaveNotAvailable          int16 = 11
	FlushSlaveTimeout          int16 = 12
	MessageIllegal             int16 = 13
	ServiceNotAvailable        int16 = 14
	VersionNotSupported        int16 = 15
	NoPermission               int16 = 16
	TopicNotExist              int16 = 17
	TopicExistAlready          int16 = 18
	PullNotFound               int16 = 19
	PullRetryImmediately       int16 = 20
	PullOffsetMoved            int16 = 21
	QueryNotFound              int16 = 22
	SubscriptionParseFailed    int16 = 23
	SubscriptionNotExist       int16 = 24
	SubscriptionNotLatest      int16 = 25
	SubscriptionGroupNotExist  int16 = 26
	FilterDataNotExist         int16 = 27
	FilterDataNotLatest        int16 = 28
	TransactionShouldCommit    int16 = 200
	TransactionShouldRollback  int16 = 201
	TransactionStateUnknow     int16 = 202
	TransactionStateGroupWrong int16 = 203
	NoBuyerID                  int16 = 204
	NotInCurrentUnit           int16 = 205
	ConsumerNotOnline          int16 = 206
	ConsumeMsgTimeout          int16 = 207
	NoMessage                  int16 = 208
)

var responseCodeNames = map[int16]string{
	Success:                   "SUCCESS",
	SystemError:               "SYSTEM_ERROR",
	SystemBusy:                "SYSTEM_BUSY",
	RequestCodeNotSupported:   "REQUEST_CODE_NOT_SUPPORTED",
	TransactionFailed:         "TRANSACTION_FAILED",
	FlushDiskTimeout:          "FLUSH_DISK_TIMEOUT",
	SlaveNotAvailable:         "SLAVE_NOT_AVAILABLE",
	FlushSlaveTimeout:         "FLUSH_SLAVE_TIMEOUT",
	MessageIllegal:            "MESSAGE_ILLEGAL",
	ServiceNotAvailable:       "SERVICE_NOT_AVAILABLE",
	VersionNotSupported:       "VERSION_NOT_SUPPORTED",
	NoPermission:              "NO_PERMISSION",
	TopicNotExist:             "TOPIC_NOT_EXIST",
	TopicExistAlready:         "TOPIC_EXIST_ALREADY",
	PullNotFound:              "PULL_NOT_FOUND",
	PullRetryImmediately:      "PULL_RETRY_IMMEDIATELY",
	PullOffsetMoved:           "PULL_OFFSET_MOVED",
	QueryNotFound:             "QUERY_NOT_FOUND",
	SubscriptionParseFailed:   "SUBSCRIPTION_PARSE_FAILED",
	SubscriptionNotExist:      "SUBSCRIPTION_NOT_EXIST",
	SubscriptionNotLatest:     "SUBSCRIPTION_NOT_LATEST",
	SubscriptionGroupNotExist: "SUBSCRIPTION_GROUP_NOT_EXIST",
	FilterDataNotExist:        "FILTER_DATA_NOT_EXIST",
	FilterDataNotLatest:       "FILTER_DATA_NOT_LATEST",
	ConsumerNotOnline:         "CONSUMER_NOT_ONLINE",
	ConsumeMsgTimeout:         "CONSUME_MSG_TIMEOUT",
	NoMessage:                 "NO_MESSAGE",
}

// ResponseCodeName returns RocketMQ's name for a response code, or "CODE_<n>" for one it lacks.
func ResponseCodeName(code int16) string {
	if s, ok := responseCodeNames[code]; ok {
		return s
	}
	return "CODE_" + itoa(int64(code))
}
