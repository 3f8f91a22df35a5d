// Package protocol holds the typed request and response headers of the RocketMQ 4.x remoting
// protocol shared by the broker, the name service and the clients. Each header implements
// remoting.Header: Encode writes its fields into a Command's extFields, Decode reads them back
// and returns a *remoting.HeaderError naming the first missing or invalid required field.
//
// Field names are the Java field names of the RocketMQ 4.x header classes (part of the wire
// format; do not change them).
package protocol

import "github.com/mqgo/mq/remoting"

// Name server headers (RocketMQ 4.x org.apache.rocketmq.common.protocol.header.namesrv).

// RegisterBrokerRequestHeader is the header of REGISTER_BROKER (103). The body is a
// RegisterBrokerBody (JSON, or RocketMQ's compact zlib encoding when Compressed).
type RegisterBrokerRequestHeader struct {
	BrokerName   string
	BrokerAddr   string
	ClusterName  string
	HAServerAddr string // optional here; Java brokers always send it
	BrokerID     int64
	Compressed   bool
	BodyCrc32    int32 // crc32(body) & 0x7fffffff; 0 skips the check
}

// Encode implements remoting.Header.
func (h *RegisterBrokerRequestHeader) Encode(ext map[string]string) {
	ext["brokerName"] = h.BrokerName
	ext["brokerAddr"] = h.BrokerAddr
	ext["clusterName"] = h.ClusterName
	ext["haServerAddr"] = h.HAServerAddr
	remoting.PutInt64(ext, "brokerId", h.BrokerID)
	remoting.PutBool(ext, "compressed", h.Compressed)
	remoting.PutInt32(ext, "bodyCrc32", h.BodyCrc32)
}

// Decode implements remoting.Header.
func (h *RegisterBrokerRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.BrokerName = r.String("brokerName", true)
	h.BrokerAddr = r.String("brokerAddr", true)
	h.ClusterName = r.String("clusterName", true)
	h.HAServerAddr = r.String("haServerAddr", false)
	h.BrokerID = r.Int64("brokerId", true)
	h.Compressed = r.Bool("compressed", false)
	h.BodyCrc32 = r.Int32("bodyCrc32", false)
	return r.Err()
}

// RegisterBrokerResponseHeader answers REGISTER_BROKER. For a slave it names its master's
// address and HA address; both are empty for a master or a slave whose master is unknown.
type RegisterBrokerResponseHeader struct {
	HAServerAddr string
	MasterAddr   string
}

// Encode implements remoting.Header. Empty fields are left out, as Java leaves out nulls.
func (h *RegisterBrokerResponseHeader) Encode(ext map[string]string) {
	putOptional(ext, "haServerAddr", h.HAServerAddr)
	putOptional(ext, "masterAddr", h.MasterAddr)
}

// Decode implements remoting.Header.
func (h *RegisterBrokerResponseHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.HAServerAddr = r.String("haServerAddr", false)
	h.MasterAddr = r.String("masterAddr", false)
	return r.Err()
}

// BrokerIdentityHeader names one broker: the header of UNREGISTER_BROKER (104) and of
// QUERY_DATA_VERSION (322, whose body is the broker's DataVersion JSON).
type BrokerIdentityHeader struct {
	BrokerName  string
	BrokerAddr  string
	ClusterName string
	BrokerID    int64
}

// UnregisterBrokerRequestHeader and QueryDataVersionRequestHeader are RocketMQ's names for it.
type (
	UnregisterBrokerRequestHeader = BrokerIdentityHeader
	QueryDataVersionRequestHeader = BrokerIdentityHeader
)

// Encode implements remoting.Header.
func (h *BrokerIdentityHeader) Encode(ext map[string]string) {
	ext["brokerName"] = h.BrokerName
	ext["brokerAddr"] = h.BrokerAddr
	ext["clusterName"] = h.ClusterName
	remoting.PutInt64(ext, "brokerId", h.BrokerID)
}

// Decode implements remoting.Header.
func (h *BrokerIdentityHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.BrokerName = r.String("brokerName", true)
	h.BrokerAddr = r.String("brokerAddr", true)
	h.ClusterName = r.String("clusterName", true)
	h.BrokerID = r.Int64("brokerId", true)
	return r.Err()
}

// QueryDataVersionResponseHeader answers QUERY_DATA_VERSION: whether the name server's copy of
// the broker's topic configuration differs from the broker's.
type QueryDataVersionResponseHeader struct {
	Changed bool
}

// Encode implements remoting.Header.
func (h *QueryDataVersionResponseHeader) Encode(ext map[string]string) {
	remoting.PutBool(ext, "changed", h.Changed)
}

// Decode implements remoting.Header.
func (h *QueryDataVersionResponseHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Changed = r.Bool("changed", false)
	return r.Err()
}

// GetRouteInfoRequestHeader is the header of GET_ROUTEINFO_BY_TOPIC (105).
type GetRouteInfoRequestHeader struct {
	Topic string
}

// Encode implements remoting.Header.
func (h *GetRouteInfoRequestHeader) Encode(ext map[string]string) { ext["topic"] = h.Topic }

// Decode implements remoting.Header.
func (h *GetRouteInfoRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Topic = r.String("topic", true)
	return r.Err()
}

// DeleteTopicFromNamesrvRequestHeader is the header of DELETE_TOPIC_IN_NAMESRV (216).
type DeleteTopicFromNamesrvRequestHeader struct {
	Topic string
}

// Encode implements remoting.Header.
func (h *DeleteTopicFromNamesrvRequestHeader) Encode(ext map[string]string) {
	ext["topic"] = h.Topic
}

// Decode implements remoting.Header.
func (h *DeleteTopicFromNamesrvRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Topic = r.String("topic", true)
	return r.Err()
}

// RegisterTopicRequestHeader is the header of REGISTER_TOPIC_IN_NAMESRV (217); the body is a
// TopicRouteData whose queue datas are registered for the topic.
type RegisterTopicRequestHeader struct {
	Topic string
}

// Encode implements remoting.Header.
func (h *RegisterTopicRequestHeader) Encode(ext map[string]string) { ext["topic"] = h.Topic }

// Decode implements remoting.Header.
func (h *RegisterTopicRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Topic = r.String("topic", true)
	return r.Err()
}

// GetTopicsByClusterRequestHeader is the header of GET_TOPICS_BY_CLUSTER (224).
type GetTopicsByClusterRequestHeader struct {
	Cluster string
}

// Encode implements remoting.Header.
func (h *GetTopicsByClusterRequestHeader) Encode(ext map[string]string) {
	ext["cluster"] = h.Cluster
}

// Decode implements remoting.Header.
func (h *GetTopicsByClusterRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Cluster = r.String("cluster", true)
	return r.Err()
}

// PutKVConfigRequestHeader is the header of PUT_KV_CONFIG (100).
type PutKVConfigRequestHeader struct {
	Namespace string
	Key       string
	Value     string
}

// Encode implements remoting.Header.
func (h *PutKVConfigRequestHeader) Encode(ext map[string]string) {
	ext["namespace"] = h.Namespace
	ext["key"] = h.Key
	ext["value"] = h.Value
}

// Decode implements remoting.Header.
func (h *PutKVConfigRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Namespace = r.String("namespace", true)
	h.Key = r.String("key", true)
	h.Value = r.String("value", true)
	return r.Err()
}

// GetKVConfigRequestHeader is the header of GET_KV_CONFIG (101).
type GetKVConfigRequestHeader struct {
	Namespace string
	Key       string
}

// Encode implements remoting.Header.
func (h *GetKVConfigRequestHeader) Encode(ext map[string]string) {
	ext["namespace"] = h.Namespace
	ext["key"] = h.Key
}

// Decode implements remoting.Header.
func (h *GetKVConfigRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Namespace = r.String("namespace", true)
	h.Key = r.String("key", true)
	return r.Err()
}

// GetKVConfigResponseHeader answers GET_KV_CONFIG.
type GetKVConfigResponseHeader struct {
	Value string
}

// Encode implements remoting.Header.
func (h *GetKVConfigResponseHeader) Encode(ext map[string]string) {
	putOptional(ext, "value", h.Value)
}

// Decode implements remoting.Header.
func (h *GetKVConfigResponseHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Value = r.String("value", false)
	return r.Err()
}

// DeleteKVConfigRequestHeader is the header of DELETE_KV_CONFIG (102).
type DeleteKVConfigRequestHeader struct {
	Namespace string
	Key       string
}

// Encode implements remoting.Header.
func (h *DeleteKVConfigRequestHeader) Encode(ext map[string]string) {
	ext["namespace"] = h.Namespace
	ext["key"] = h.Key
}

// Decode implements remoting.Header.
func (h *DeleteKVConfigRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Namespace = r.String("namespace", true)
	h.Key = r.String("key", true)
	return r.Err()
}

// GetKVListByNamespaceRequestHeader is the header of GET_KV_LIST_BY_NAMESPACE (219).
type GetKVListByNamespaceRequestHeader struct {
	Namespace string
}

// Encode implements remoting.Header.
func (h *GetKVListByNamespaceRequestHeader) Encode(ext map[string]string) {
	ext["namespace"] = h.Namespace
}

// Decode implements remoting.Header.
func (h *GetKVListByNamespaceRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Namespace = r.String("namespace", true)
	return r.Err()
}

// putOptional stores v under key unless it is empty (Java omits null header fields).
func putOptional(ext map[string]string, key, v string) {
	if v != "" {
		ext[key] = v
	}
}

// Compile-time checks that every header implements remoting.Header.
var (
	_ remoting.Header = (*RegisterBrokerRequestHeader)(nil)
	_ remoting.Header = (*RegisterBrokerResponseHeader)(nil)
	_ remoting.Header = (*UnregisterBrokerRequestHeader)(nil)
	_ remoting.Header = (*QueryDataVersionRequestHeader)(nil)
	_ remoting.Header = (*QueryDataVersionResponseHeader)(nil)
	_ remoting.Header = (*GetRouteInfoRequestHeader)(nil)
	_ remoting.Header = (*DeleteTopicFromNamesrvRequestHeader)(nil)
	_ remoting.Header = (*RegisterTopicRequestHeader)(nil)
	_ remoting.Header = (*GetTopicsByClusterRequestHeader)(nil)
	_ remoting.Header = (*PutKVConfigRequestHeader)(nil)
	_ remoting.Header = (*GetKVConfigRequestHeader)(nil)
	_ remoting.Header = (*GetKVConfigResponseHeader)(nil)
	_ remoting.Header = (*DeleteKVConfigRequestHeader)(nil)
	_ remoting.Header = (*GetKVListByNamespaceRequestHeader)(nil)
)
