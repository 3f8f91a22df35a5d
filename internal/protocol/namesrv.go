package protocol

// Name server headers (RocketMQ 4.x org.apache.rocketmq.common.protocol.header.namesrv). The
// requests that name only a topic share TopicHeader (topic.go).

// RegisterBrokerRequestHeader is the header of REGISTER_BROKER (103). The body is a
// RegisterBrokerBody (JSON, or RocketMQ's compact zlib encoding when Compressed).
type RegisterBrokerRequestHeader struct {
	BrokerName   string `ext:"brokerName,required"`
	BrokerAddr   string `ext:"brokerAddr,required"`
	ClusterName  string `ext:"clusterName,required"`
	HAServerAddr string `ext:"haServerAddr"` // optional here; Java brokers always send it
	BrokerID     int64  `ext:"brokerId,required"`
	Compressed   bool   `ext:"compressed"`
	BodyCrc32    int32  `ext:"bodyCrc32"` // crc32(body) & 0x7fffffff; 0 skips the check
}

// RegisterBrokerResponseHeader answers REGISTER_BROKER. For a slave it names its master's
// address and HA address; both are empty for a master or a slave whose master is unknown, and
// then left out, as Java leaves out nulls.
type RegisterBrokerResponseHeader struct {
	HAServerAddr string `ext:"haServerAddr,omitempty"`
	MasterAddr   string `ext:"masterAddr,omitempty"`
}

// BrokerIdentityHeader names one broker: the header of UNREGISTER_BROKER (104) and of
// QUERY_DATA_VERSION (322, whose body is the broker's DataVersion JSON).
type BrokerIdentityHeader struct {
	BrokerName  string `ext:"brokerName,required"`
	BrokerAddr  string `ext:"brokerAddr,required"`
	ClusterName string `ext:"clusterName,required"`
	BrokerID    int64  `ext:"brokerId,required"`
}

// UnregisterBrokerRequestHeader and QueryDataVersionRequestHeader are RocketMQ's names for it.
type (
	UnregisterBrokerRequestHeader = BrokerIdentityHeader
	QueryDataVersionRequestHeader = BrokerIdentityHeader
)

// QueryDataVersionResponseHeader answers QUERY_DATA_VERSION: whether the name server's copy of
// the broker's topic configuration differs from the broker's.
type QueryDataVersionResponseHeader struct {
	Changed bool `ext:"changed"`
}

// GetTopicsByClusterRequestHeader is the header of GET_TOPICS_BY_CLUSTER (224).
type GetTopicsByClusterRequestHeader struct {
	Cluster string `ext:"cluster,required"`
}

// PutKVConfigRequestHeader is the header of PUT_KV_CONFIG (100).
type PutKVConfigRequestHeader struct {
	Namespace string `ext:"namespace,required"`
	Key       string `ext:"key,required"`
	Value     string `ext:"value,required"`
}

// KVConfigKeyHeader names one KV config entry.
type KVConfigKeyHeader struct {
	Namespace string `ext:"namespace,required"`
	Key       string `ext:"key,required"`
}

// GetKVConfigRequestHeader (GET_KV_CONFIG, 101) and DeleteKVConfigRequestHeader
// (DELETE_KV_CONFIG, 102) are RocketMQ's names for KVConfigKeyHeader.
type (
	GetKVConfigRequestHeader    = KVConfigKeyHeader
	DeleteKVConfigRequestHeader = KVConfigKeyHeader
)

// GetKVConfigResponseHeader answers GET_KV_CONFIG.
type GetKVConfigResponseHeader struct {
	Value string `ext:"value,omitempty"`
}

// GetKVListByNamespaceRequestHeader is the header of GET_KV_LIST_BY_NAMESPACE (219).
type GetKVListByNamespaceRequestHeader struct {
	Namespace string `ext:"namespace,required"`
}
