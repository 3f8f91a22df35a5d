package remoting

// Request codes of the RocketMQ 4.x remoting protocol. The values are part of the wire format; do
// not change them. Only the codes this project serves or sends are listed.
const (
	SendMessage                    int32 = 10
	PullMessage                    int32 = 11
	QueryMessage                   int32 = 12
	QueryConsumerOffset            int32 = 14
	UpdateConsumerOffset           int32 = 15
	UpdateAndCreateTopic           int32 = 17
	GetAllTopicConfig              int32 = 21
	GetTopicConfigList             int32 = 22
	GetTopicNameList               int32 = 23
	UpdateBrokerConfig             int32 = 25
	GetBrokerConfig                int32 = 26
	GetBrokerRuntimeInfo           int32 = 28
	SearchOffsetByTimestamp        int32 = 29
	GetMaxOffset                   int32 = 30
	GetMinOffset                   int32 = 31
	GetEarliestMsgStoreTime        int32 = 32
	ViewMessageByID                int32 = 33
	HeartBeat                      int32 = 34
	UnregisterClient               int32 = 35
	ConsumerSendMsgBack            int32 = 36
	EndTransaction                 int32 = 37
	GetConsumerListByGroup         int32 = 38
	CheckTransactionState          int32 = 39
	NotifyConsumerIDsChanged       int32 = 40
	LockBatchMQ                    int32 = 41
	UnlockBatchMQ                  int32 = 42
	GetAllConsumerOffset           int32 = 43
	GetAllDelayOffset              int32 = 45
	CheckClientConfig              int32 = 46
	PutKVConfig                    int32 = 100
	GetKVConfig                    int32 = 101
	DeleteKVConfig                 int32 = 102
	RegisterBroker                 int32 = 103
	UnregisterBroker               int32 = 104
	GetRouteInfoByTopic            int32 = 105
	GetBrokerClusterInfo           int32 = 106
	UpdateAndCreateSubscription    int32 = 200
	GetAllSubscriptionGroupConfig  int32 = 201
	GetTopicStatsInfo              int32 = 202
	GetConsumerConnectionList      int32 = 203
	GetProducerConnectionList      int32 = 204
	WipeWritePermOfBroker          int32 = 205
	GetAllTopicListFromNameServer  int32 = 206
	DeleteSubscriptionGroup        int32 = 207
	GetConsumeStats                int32 = 208
	DeleteTopicInBroker            int32 = 215
	DeleteTopicInNamesrv           int32 = 216
	GetKVListByNamespace           int32 = 219
	ResetConsumerClientOffset      int32 = 220
	GetConsumerStatusFromClient    int32 = 221
	InvokeBrokerToResetOffset      int32 = 222
	InvokeBrokerToGetConsumerStats int32 = 223
	QueryTopicConsumeByWho         int32 = 300
	GetTopicsByCluster             int32 = 224
	RegisterTopicInNamesrv         int32 = 217
	GetConsumerRunningInfo         int32 = 307
	ConsumeMessageDirectly         int32 = 309
	SendMessageV2                  int32 = 310
	GetUnitTopicList               int32 = 311
	SendBatchMessage               int32 = 320
	QueryConsumeQueue              int32 = 321
	SendReplyMessage               int32 = 324
	SendReplyMessageV2             int32 = 325
	PushReplyMessageToClient       int32 = 326
	QueryDataVersion               int32 = 322

	// The operators' admin requests (RocketMQ 4.9's mqadmin and rocketmq-dashboard).
	GetSystemTopicListFromNS int32 = 304
	CleanExpiredConsumeQueue int32 = 306
	CloneGroupOffset         int32 = 314
	ViewBrokerStatsData      int32 = 315
	GetBrokerConsumeStats    int32 = 317
	UpdateNamesrvConfig      int32 = 318
	GetNamesrvConfig         int32 = 319
	AddWritePermOfBroker     int32 = 327
	QueryTopicsByConsumer    int32 = 343
	CleanUnusedTopic         int32 = 316
	DeleteExpiredCommitLog   int32 = 329
	GetBrokerHAStatus        int32 = 907

	// RocketMQ 4.9's plain ACL administration (mqadmin updateAclConfig and the like).
	UpdateAndCreateACLConfig     int32 = 50
	DeleteACLConfig              int32 = 51
	GetBrokerClusterACLInfo      int32 = 52
	UpdateGlobalWhiteAddrsConfig int32 = 53
	GetBrokerClusterACLConfig    int32 = 54

	// RocketMQ 5's controller (automatic failover): brokers in controller mode and admin tools.
	BrokerHeartbeat             int32 = 904
	ControllerAlterSyncStateSet int32 = 1001
	ControllerElectMaster       int32 = 1002
	ControllerRegisterBroker    int32 = 1003
	ControllerGetReplicaInfo    int32 = 1004
	ControllerGetMetadataInfo   int32 = 1005
	ControllerGetSyncStateData  int32 = 1006
	GetBrokerEpochCache         int32 = 1007
	NotifyBrokerRoleChanged     int32 = 1008
	CleanBrokerData             int32 = 1011
	ControllerGetNextBrokerID   int32 = 1012
	ControllerApplyBrokerID     int32 = 1013

	// RocketMQ 5's consumption in the broker: POP and its acknowledgements (codes wider than a
	// short: JSON headers only), the assignment and request modes, lite pull, recall.
	PopMessage                 int32 = 200050
	AckMessage                 int32 = 200051
	PeekMessage                int32 = 200052
	ChangeMessageInvisibleTime int32 = 200053
	Notification               int32 = 200054
	PollingInfo                int32 = 200055
	BatchAckMessage            int32 = 200151
	LitePullMessage            int32 = 361
	RecallMessage              int32 = 370
	QueryAssignment            int32 = 400
	SetMessageRequestMode      int32 = 401
	GetAllMessageRequestMode   int32 = 402
)

// Response codes of the RocketMQ 4.x remoting protocol (part of the wire format).
const (
	Success                    int32 = 0
	SystemError                int32 = 1
	SystemBusy                 int32 = 2
	RequestCodeNotSupported    int32 = 3
	TransactionFailed          int32 = 4
	FlushDiskTimeout           int32 = 10
	SlaveNotAvailable          int32 = 11
	FlushSlaveTimeout          int32 = 12
	MessageIllegal             int32 = 13
	ServiceNotAvailable        int32 = 14
	VersionNotSupported        int32 = 15
	NoPermission               int32 = 16
	TopicNotExist              int32 = 17
	TopicExistAlready          int32 = 18
	PullNotFound               int32 = 19
	PullRetryImmediately       int32 = 20
	PullOffsetMoved            int32 = 21
	QueryNotFound              int32 = 22
	SubscriptionParseFailed    int32 = 23
	SubscriptionNotExist       int32 = 24
	SubscriptionNotLatest      int32 = 25
	SubscriptionGroupNotExist  int32 = 26
	FilterDataNotExist         int32 = 27
	FilterDataNotLatest        int32 = 28
	TransactionShouldCommit    int32 = 200
	TransactionShouldRollback  int32 = 201
	TransactionStateUnknow     int32 = 202
	TransactionStateGroupWrong int32 = 203
	NoBuyerID                  int32 = 204
	NotInCurrentUnit           int32 = 205
	ConsumerNotOnline          int32 = 206
	ConsumeMsgTimeout          int32 = 207
	NoMessage                  int32 = 208
	PollingFull                int32 = 209
	PollingTimeout             int32 = 210
	InvalidParameter           int32 = 29
	IllegalOperation           int32 = 604

	// RocketMQ 5's controller answers.
	ControllerFencedMasterEpoch          int32 = 2000
	ControllerFencedSyncStateSetEpoch    int32 = 2001
	ControllerInvalidMaster              int32 = 2002
	ControllerInvalidReplicas            int32 = 2003
	ControllerMasterNotAvailable         int32 = 2004
	ControllerInvalidRequest             int32 = 2005
	ControllerBrokerNotAlive             int32 = 2006
	ControllerNotLeader                  int32 = 2007
	ControllerBrokerMetadataNotExist     int32 = 2008
	ControllerInvalidCleanBrokerMetadata int32 = 2009
	ControllerBrokerNeedToBeRegistered   int32 = 2010
	ControllerMasterStillExist           int32 = 2011
	ControllerElectMasterFailed          int32 = 2012
	ControllerAlterSyncStateSetFailed    int32 = 2013
	ControllerBrokerIDInvalid            int32 = 2014
)

var responseCodeNames = map[int32]string{
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
	PollingFull:               "POLLING_FULL",
	PollingTimeout:            "POLLING_TIMEOUT",
	InvalidParameter:          "INVALID_PARAMETER",
	IllegalOperation:          "ILLEGAL_OPERATION",

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
func ResponseCodeName(code int32) string {
	if s, ok := responseCodeNames[code]; ok {
		return s
	}
	return "CODE_" + itoa(int64(code))
}

var requestCodeNames = map[int32]string{
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
	GetSystemTopicListFromNS:       "GET_SYSTEM_TOPIC_LIST_FROM_NS",
	CleanExpiredConsumeQueue:       "CLEAN_EXPIRED_CONSUMEQUEUE",
	CloneGroupOffset:               "CLONE_GROUP_OFFSET",
	ViewBrokerStatsData:            "VIEW_BROKER_STATS_DATA",
	GetBrokerConsumeStats:          "GET_BROKER_CONSUME_STATS",
	UpdateNamesrvConfig:            "UPDATE_NAMESRV_CONFIG",
	GetNamesrvConfig:               "GET_NAMESRV_CONFIG",
	AddWritePermOfBroker:           "ADD_WRITE_PERM_OF_BROKER",
	QueryTopicsByConsumer:          "QUERY_TOPICS_BY_CONSUMER",
	CleanUnusedTopic:               "CLEAN_UNUSED_TOPIC",
	DeleteExpiredCommitLog:         "DELETE_EXPIRED_COMMITLOG",
	GetBrokerHAStatus:              "GET_BROKER_HA_STATUS",
	UpdateAndCreateACLConfig:       "UPDATE_AND_CREATE_ACL_CONFIG",
	DeleteACLConfig:                "DELETE_ACL_CONFIG",
	GetBrokerClusterACLInfo:        "GET_BROKER_CLUSTER_ACL_INFO",
	UpdateGlobalWhiteAddrsConfig:   "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG",
	GetBrokerClusterACLConfig:      "GET_BROKER_CLUSTER_ACL_CONFIG",

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

	PopMessage:                 "POP_MESSAGE",
	AckMessage:                 "ACK_MESSAGE",
	PeekMessage:                "PEEK_MESSAGE",
	ChangeMessageInvisibleTime: "CHANGE_MESSAGE_INVISIBLETIME",
	Notification:               "NOTIFICATION",
	PollingInfo:                "POLLING_INFO",
	BatchAckMessage:            "BATCH_ACK_MESSAGE",
	LitePullMessage:            "LITE_PULL_MESSAGE",
	RecallMessage:              "RECALL_MESSAGE",
	QueryAssignment:            "QUERY_ASSIGNMENT",
	SetMessageRequestMode:      "SET_MESSAGE_REQUEST_MODE",
	GetAllMessageRequestMode:   "GET_ALL_MESSAGE_REQUEST_MODE",
}

// RequestCodeName returns RocketMQ's name for a request code (RequestCode's field name, as
// RemotingHelper.getRequestCodeDesc gives it), or "CODE_<n>" for one it lacks.
func RequestCodeName(code int32) string {
	if s, ok := requestCodeNames[code]; ok {
		return s
	}
	return "CODE_" + itoa(int64(code))
}
