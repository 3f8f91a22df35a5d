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

	// RocketMQ 5's controller (automatic failover): brokers in controller mode and admin tools.
	BrokerHeartbeat             int16 = 904
	ControllerAlterSyncStateSet int16 = 1001
	ControllerElectMaster       int16 = 1002
	ControllerRegisterBroker    int16 = 1003
	ControllerGetReplicaInfo    int16 = 1004
	ControllerGetMetadataInfo   int16 = 1005
	ControllerGetSyncStateData  int16 = 1006
	GetBrokerEpochCache         int16 = 1007
	NotifyBrokerRoleChanged     int16 = 1008
	CleanBrokerData             int16 = 1011
	ControllerGetNextBrokerID   int16 = 1012
	ControllerApplyBrokerID     int16 = 1013
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

	// RocketMQ 5's controller answers.
	ControllerFencedMasterEpoch          int16 = 2000
	ControllerFencedSyncStateSetEpoch    int16 = 2001
	ControllerInvalidMaster              int16 = 2002
	ControllerInvalidReplicas            int16 = 2003
	ControllerMasterNotAvailable         int16 = 2004
	ControllerInvalidRequest             int16 = 2005
	ControllerBrokerNotAlive             int16 = 2006
	ControllerNotLeader                  int16 = 2007
	ControllerBrokerMetadataNotExist     int16 = 2008
	ControllerInvalidCleanBrokerMetadata int16 = 2009
	ControllerBrokerNeedToBeRegistered   int16 = 2010
	ControllerMasterStillExist           int16 = 2011
	ControllerElectMasterFailed          int16 = 2012
	ControllerAlterSyncStateSetFailed    int16 = 2013
	ControllerBrokerIDInvalid            int16 = 2014
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

	ControllerFencedMasterEpoch:          "CONTROLLER_FENCED_MASTER_EPOCH",
	ControllerFencedSyncStateSetEpoch:    "CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH",
	ControllerInvalidMaster:              "CONTROLLER_INVALID_MASTER",
	ControllerInvalidReplicas:            "CONTROLLER_INVALID_REPLICAS",
	ControllerMasterNotAvailable:         "CONTROLLER_MASTER_NOT_AVAILABLE",
	ControllerInvalidRequest:             "CONTROLLER_INVALID_REQUEST",
	ControllerBrokerNotAlive:             "CONTROLLER_BROKER_NOT_ALIVE",
	ControllerNotLeader:                  "CONTROLLER_NOT_LEADER",
	ControllerBrokerMetadataNotExist:     "CONTROLLER_BROKER_METADATA_NOT_EXIST",
	ControllerInvalidCleanBrokerMetadata: "CONTROLLER_INVALID_CLEAN_BROKER_METADATA",
	ControllerBrokerNeedToBeRegistered:   "CONTROLLER_BROKER_NEED_TO_BE_REGISTERED",
	ControllerMasterStillExist:           "CONTROLLER_MASTER_STILL_EXIST",
	ControllerElectMasterFailed:          "CONTROLLER_ELECT_MASTER_FAILED",
	ControllerAlterSyncStateSetFailed:    "CONTROLLER_ALTER_SYNC_STATE_SET_FAILED",
	ControllerBrokerIDInvalid:            "CONTROLLER_BROKER_ID_INVALID",
}

// ResponseCodeName returns RocketMQ's name for a response code, or "CODE_<n>" for one it lacks.
func ResponseCodeName(code int16) string {
	if s, ok := responseCodeNames[code]; ok {
		return s
	}
	return "CODE_" + itoa(int64(code))
}

var requestCodeNames = map[int16]string{
	SendMessage:                    "SEND_MESSAGE",
	PullMessage:                    "PULL_MESSAGE",
	QueryMessage:                   "QUERY_MESSAGE",
	QueryConsumerOffset:            "QUERY_CONSUMER_OFFSET",
	UpdateConsumerOffset:           "UPDATE_CONSUMER_OFFSET",
	UpdateAndCreateTopic:           "UPDATE_AND_CREATE_TOPIC",
	GetAllTopicConfig:              "GET_ALL_TOPIC_CONFIG",
	GetTopicConfigList:             "GET_TOPIC_CONFIG_LIST",
	GetTopicNameList:               "GET_TOPIC_NAME_LIST",
	UpdateBrokerConfig:             "UPDATE_BROKER_CONFIG",
	GetBrokerConfig:                "GET_BROKER_CONFIG",
	GetBrokerRuntimeInfo:           "GET_BROKER_RUNTIME_INFO",
	SearchOffsetByTimestamp:        "SEARCH_OFFSET_BY_TIMESTAMP",
	GetMaxOffset:                   "GET_MAX_OFFSET",
	GetMinOffset:                   "GET_MIN_OFFSET",
	GetEarliestMsgStoreTime:        "GET_EARLIEST_MSG_STORETIME",
	ViewMessageByID:                "VIEW_MESSAGE_BY_ID",
	HeartBeat:                      "HEART_BEAT",
	UnregisterClient:               "UNREGISTER_CLIENT",
	ConsumerSendMsgBack:            "CONSUMER_SEND_MSG_BACK",
	EndTransaction:                 "END_TRANSACTION",
	GetConsumerListByGroup:         "GET_CONSUMER_LIST_BY_GROUP",
	CheckTransactionState:          "CHECK_TRANSACTION_STATE",
	NotifyConsumerIDsChanged:       "NOTIFY_CONSUMER_IDS_CHANGED",
	LockBatchMQ:                    "LOCK_BATCH_MQ",
	UnlockBatchMQ:                  "UNLOCK_BATCH_MQ",
	GetAllConsumerOffset:           "GET_ALL_CONSUMER_OFFSET",
	GetAllDelayOffset:              "GET_ALL_DELAY_OFFSET",
	CheckClientConfig:              "CHECK_CLIENT_CONFIG",
	PutKVConfig:                    "PUT_KV_CONFIG",
	GetKVConfig:                    "GET_KV_CONFIG",
	DeleteKVConfig:                 "DELETE_KV_CONFIG",
	RegisterBroker:                 "REGISTER_BROKER",
	UnregisterBroker:               "UNREGISTER_BROKER",
	GetRouteInfoByTopic:            "GET_ROUTEINFO_BY_TOPIC",
	GetBrokerClusterInfo:           "GET_BROKER_CLUSTER_INFO",
	UpdateAndCreateSubscription:    "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
	GetAllSubscriptionGroupConfig:  "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
	GetTopicStatsInfo:              "GET_TOPIC_STATS_INFO",
	GetConsumerConnectionList:      "GET_CONSUMER_CONNECTION_LIST",
	GetProducerConnectionList:      "GET_PRODUCER_CONNECTION_LIST",
	WipeWritePermOfBroker:          "WIPE_WRITE_PERM_OF_BROKER",
	GetAllTopicListFromNameServer:  "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
	DeleteSubscriptionGroup:        "DELETE_SUBSCRIPTIONGROUP",
	GetConsumeStats:                "GET_CONSUME_STATS",
	DeleteTopicInBroker:            "DELETE_TOPIC_IN_BROKER",
	DeleteTopicInNamesrv:           "DELETE_TOPIC_IN_NAMESRV",
	GetKVListByNamespace:           "GET_KVLIST_BY_NAMESPACE",
	ResetConsumerClientOffset:      "RESET_CONSUMER_CLIENT_OFFSET",
	GetConsumerStatusFromClient:    "GET_CONSUMER_STATUS_FROM_CLIENT",
	InvokeBrokerToResetOffset:      "INVOKE_BROKER_TO_RESET_OFFSET",
	InvokeBrokerToGetConsumerStats: "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
	QueryTopicConsumeByWho:         "QUERY_TOPIC_CONSUME_BY_WHO",
	GetTopicsByCluster:             "GET_TOPICS_BY_CLUSTER",
	RegisterTopicInNamesrv:         "REGISTER_TOPIC_IN_NAMESRV",
	GetConsumerRunningInfo:         "GET_CONSUMER_RUNNING_INFO",
	ConsumeMessageDirectly:         "CONSUME_MESSAGE_DIRECTLY",
	SendMessageV2:                  "SEND_MESSAGE_V2",
	GetUnitTopicList:               "GET_UNIT_TOPIC_LIST",
	SendBatchMessage:               "SEND_BATCH_MESSAGE",
	QueryConsumeQueue:              "QUERY_CONSUME_QUEUE",
	SendReplyMessage:               "SEND_REPLY_MESSAGE",
	SendReplyMessageV2:             "SEND_REPLY_MESSAGE_V2",
	PushReplyMessageToClient:       "PUSH_REPLY_MESSAGE_TO_CLIENT",
	QueryDataVersion:               "QUERY_DATA_VERSION",

	BrokerHeartbeat:             "BROKER_HEARTBEAT",
	ControllerAlterSyncStateSet: "CONTROLLER_ALTER_SYNC_STATE_SET",
	ControllerElectMaster:       "CONTROLLER_ELECT_MASTER",
	ControllerRegisterBroker:    "CONTROLLER_REGISTER_BROKER",
	ControllerGetReplicaInfo:    "CONTROLLER_GET_REPLICA_INFO",
	ControllerGetMetadataInfo:   "CONTROLLER_GET_METADATA_INFO",
	ControllerGetSyncStateData:  "CONTROLLER_GET_SYNC_STATE_DATA",
	GetBrokerEpochCache:         "GET_BROKER_EPOCH_CACHE",
	NotifyBrokerRoleChanged:     "NOTIFY_BROKER_ROLE_CHANGED",
	CleanBrokerData:             "CLEAN_BROKER_DATA",
	ControllerGetNextBrokerID:   "CONTROLLER_GET_NEXT_BROKER_ID",
	ControllerApplyBrokerID:     "CONTROLLER_APPLY_BROKER_ID",
}

// RequestCodeName returns RocketMQ's name for a request code (RequestCode's field name, as
// RemotingHelper.getRequestCodeDesc gives it), or "CODE_<n>" for one it lacks.
func RequestCodeName(code int16) string {
	if s, ok := requestCodeNames[code]; ok {
		return s
	}
	return "CODE_" + itoa(int64(code))
}
