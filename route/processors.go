package route

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// The request processors, one per code (RocketMQ's DefaultRequestProcessor). Each decodes its
// header with the typed headers of internal/protocol; a *remoting.HeaderError returned as is
// makes the dispatcher answer SYSTEM_ERROR naming the field. Nothing here panics on input.

func success() *remoting.Command { return remoting.NewResponse(remoting.Success, "") }

// nameRefused is SYSTEM_ERROR for an invalid name in field (internal/names), the remark naming
// the field.
func nameRefused(field string, err error) error {
	return &remoting.ResponseError{Code: remoting.SystemError, Remark: field + ": " + err.Error()}
}

// KV config limits. RocketMQ has none; the table is rewritten to kvConfig.json on every change
// and its values reach clients in REGISTER_BROKER answers and routes, so a request may not make
// it arbitrarily large, and text that JSON cannot hold as it is (invalid UTF-8) is refused
// rather than silently changed on disk.
const (
	maxKVNameBytes  = names.MaxGroupBytes // a namespace or a key
	maxKVValueBytes = 64 << 10
)

// checkKVText refuses a namespace, key or value over max bytes or not valid UTF-8. An empty
// one was refused by the header decoder already.
func checkKVText(field, s string, max int) error {
	// HeaderError quotes Value (%q: escaped, valid UTF-8); quote only the start of it.
	prefix := s[:min(len(s), 64)]
	if len(s) > max {
		return &remoting.HeaderError{Field: field, Value: prefix,
			Reason: strconv.Itoa(len(s)) + " bytes, longer than " + strconv.Itoa(max)}
	}
	if !utf8.ValidString(s) {
		return &remoting.HeaderError{Field: field, Value: prefix, Reason: "not valid UTF-8"}
	}
	return nil
}

// checkKVKey checks a namespace and key; in ORDER_TOPIC_CONFIG the key is a topic.
func checkKVKey(ns, key string) error {
	if err := checkKVText("namespace", ns, maxKVNameBytes); err != nil {
		return err
	}
	if ns == NamespaceOrderTopicConfig {
		if err := names.CheckTopic(key); err != nil {
			return nameRefused("key", err)
		}
	}
	return checkKVText("key", key, maxKVNameBytes)
}

func withHeader(resp *remoting.Command, h remoting.Header) *remoting.Command {
	if resp.ExtFields == nil {
		resp.ExtFields = make(map[string]string, 4)
	}
	h.Encode(resp.ExtFields)
	return resp
}

// Bounds on a registration's identity. The name server keys its tables by the broker name,
// cluster name and address and copies them into every route and cluster info answer; all it
// needs of them is that they are present, bounded, and come back from JSON as they went in
// (valid UTF-8). Control characters are refused too: no host name or broker configuration holds
// one, and admin tools print these names. Unlike topics they may hold dots and the like: an
// Apache broker's default broker name is its host name.
const (
	maxIdentityBytes = names.MaxGroupBytes // broker and cluster names, RocketMQ's CHARACTER_MAX_LENGTH
	maxAddrBytes     = 261                 // a 255-byte host name, ':' and a five-digit port
)

// checkIdentity refuses an empty (when required), over-long, invalid UTF-8 or control-character
// value of a registration's identity field; the error quotes at most 64 bytes of it.
func checkIdentity(field, s string, max int, required bool) error {
	if s == "" {
		if required {
			return &remoting.HeaderError{Field: field, Reason: "empty"}
		}
		return nil
	}
	if err := checkKVText(field, s, max); err != nil {
		return err
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return &remoting.HeaderError{Field: field, Value: s[:min(len(s), 64)],
				Reason: "not printable (a control character at byte " + strconv.Itoa(i) + ")"}
		}
	}
	return nil
}

// checkRegistrationIdentity checks what a REGISTER_BROKER header says the broker is.
func checkRegistrationIdentity(h *protocol.RegisterBrokerRequestHeader) error {
	if h.BrokerID < 0 {
		return &remoting.HeaderError{Field: "brokerId", Value: strconv.FormatInt(h.BrokerID, 10), Reason: "negative"}
	}
	for _, f := range []struct {
		field, value string
		max          int
		required     bool
	}{
		{"brokerName", h.BrokerName, maxIdentityBytes, true},
		{"clusterName", h.ClusterName, maxIdentityBytes, true},
		{"brokerAddr", h.BrokerAddr, maxAddrBytes, true},
		{"haServerAddr", h.HAServerAddr, maxAddrBytes, false}, // slaves send none
	} {
		if err := checkIdentity(f.field, f.value, f.max, f.required); err != nil {
			return err
		}
	}
	return nil
}

// registerBroker handles REGISTER_BROKER (103). Topics with invalid names are left out and
// queue counts clamped (scrubTopics); the rest registers and the answer is SUCCESS, its remark
// saying what was left out.
func (n *NameServer) registerBroker(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.RegisterBrokerRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := checkRegistrationIdentity(&h); err != nil {
		return nil, err
	}
	if h.BodyCrc32 != 0 && bodyCRC32(req.Body) != h.BodyCrc32 {
		n.regLog.Warn().Str("addr", h.BrokerAddr).Str("remote", remoteAddr(ch)).Msg("register broker: crc32 not match")
		return nil, &remoting.ResponseError{Code: remoting.SystemError, Remark: "crc32 not match"}
	}
	body, err := DecodeRegisterBrokerBody(req.Body, h.Compressed)
	if err != nil {
		return nil, err // wraps ErrMalformed and says what was wrong
	}
	scrub := body.scrubTopics(n.opts.MaxQueueNums)
	w := &body.TopicConfigSerializeWrapper
	reg, err := n.table.register(&registration{
		cluster: h.ClusterName, brokerName: h.BrokerName, brokerAddr: h.BrokerAddr,
		haServerAddr: h.HAServerAddr, brokerID: h.BrokerID, topics: w.TopicConfigTable,
		dataVersion: w.DataVersion, channel: ch,
	}, n.now())
	if err != nil {
		n.regLog.Warn().Str("broker", h.BrokerName).Str("addr", h.BrokerAddr).Str("remote", remoteAddr(ch)).
			Int("max_broker_addrs", n.table.maxAddrs).Msg("register broker refused: broker table full")
		return nil, &remoting.ResponseError{Code: remoting.SystemError,
			Remark: errTooManyBrokers.Error() + " (" + strconv.Itoa(n.table.maxAddrs) + ")"}
	}
	if scrub.skipped > 0 || scrub.clamped > 0 || reg.overCap > 0 {
		e := n.regLog.Warn().Str("broker", h.BrokerName).Str("addr", h.BrokerAddr).Str("remote", remoteAddr(ch)).
			Int("skipped", scrub.skipped).Int("clamped", scrub.clamped).Int("over_cap", reg.overCap)
		if scrub.firstBad != nil {
			e = e.Str("first_bad", scrub.firstBad.Quoted())
		}
		if scrub.clamped > 0 {
			e = e.Str("first_clamped", scrub.firstClamped).Int32("max_queue_nums", n.opts.MaxQueueNums)
		}
		e.Msg("register broker: topics left out or queue counts clamped")
	}
	if reg.isNew {
		n.log.Info().Str("cluster", h.ClusterName).Str("broker", h.BrokerName).Int64("broker_id", h.BrokerID).
			Str("addr", h.BrokerAddr).Str("ha_addr", h.HAServerAddr).Int("topics", len(w.TopicConfigTable)).
			Msg("new broker registered")
	} else if e := n.log.Debug(); e.Enabled() {
		e.Str("broker", h.BrokerName).Str("addr", h.BrokerAddr).Msg("broker registration refreshed")
	}
	resp := withHeader(success(), &protocol.RegisterBrokerResponseHeader{HAServerAddr: reg.masterHA, MasterAddr: reg.masterAddr})
	resp.Remark = scrub.remark(reg.overCap, n.table.maxTopics, n.opts.MaxQueueNums)
	if kv, ok := n.kv.list(NamespaceOrderTopicConfig); ok {
		resp.Body = (&KVTable{Table: kv}).Encode()
	}
	return resp, nil
}

// remark tells the broker what its registration lost ("" when nothing): Apache brokers ignore
// the remark of a SUCCESS, but a person reading the answer learns why a topic has no route.
func (s *topicScrub) remark(overCap, maxTopics int, maxQ int32) string {
	var parts []string
	if s.skipped > 0 && s.firstBad != nil {
		parts = append(parts, strconv.Itoa(s.skipped)+" topic(s) with an invalid name left out, first: "+s.firstBad.Error())
	}
	if s.clamped > 0 {
		parts = append(parts, strconv.Itoa(s.clamped)+" topic(s) with queue counts clamped to [0, "+
			strconv.Itoa(int(maxQ))+"], first: "+s.firstClamped)
	}
	if overCap > 0 {
		parts = append(parts, strconv.Itoa(overCap)+" topic(s) left out: the broker holds "+
			strconv.Itoa(maxTopics)+" topics, the most the name server takes")
	}
	return strings.Join(parts, "; ")
}

// unregisterBroker handles UNREGISTER_BROKER (104).
func (n *NameServer) unregisterBroker(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.UnregisterBrokerRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	rb := n.table.unregister(h.BrokerName, h.BrokerAddr, h.BrokerID)
	n.log.Info().Str("cluster", h.ClusterName).Str("broker", h.BrokerName).Int64("broker_id", h.BrokerID).
		Str("addr", h.BrokerAddr).Bool("name_removed", rb.nameGone).Msg("broker unregistered")
	return success(), nil
}

// queryDataVersion handles QUERY_DATA_VERSION (322): a broker asks whether the name server holds
// its current topic configuration; an unchanged answer counts as a heartbeat.
func (n *NameServer) queryDataVersion(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueryDataVersionRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	var dv DataVersion
	if err := json.Unmarshal(req.Body, &dv); err != nil {
		return nil, fmt.Errorf("%w: data version: %v", ErrMalformed, err)
	}
	changed, held, ok := n.table.queryDataVersion(h.BrokerAddr, dv, n.now())
	resp := withHeader(success(), &protocol.QueryDataVersionResponseHeader{Changed: changed})
	if ok {
		resp.Body, _ = json.Marshal(held)
	}
	return resp, nil
}

// getRouteInfoByTopic handles GET_ROUTEINFO_BY_TOPIC (105).
func (n *NameServer) getRouteInfoByTopic(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetRouteInfoRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := names.CheckTopic(h.Topic); err != nil {
		// No route can exist for it: answered like an unknown topic, so clients react as to one.
		return remoting.NewResponse(remoting.TopicNotExist, "topic: "+err.Error()), nil
	}
	r, ok := n.TopicRoute(h.Topic)
	if !ok {
		return remoting.NewResponse(remoting.TopicNotExist,
			"No topic route info in name server for the topic: "+h.Topic), nil
	}
	resp := success()
	resp.Body = r.Encode()
	return resp, nil
}

// getBrokerClusterInfo handles GET_BROKER_CLUSTER_INFO (106).
func (n *NameServer) getBrokerClusterInfo(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	resp := success()
	resp.Body = n.table.clusterInfo().Encode()
	return resp, nil
}

// getAllTopicList handles GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206).
func (n *NameServer) getAllTopicList(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	resp := success()
	resp.Body = (&TopicList{TopicList: n.table.topics()}).Encode()
	return resp, nil
}

// deleteTopic handles DELETE_TOPIC_IN_NAMESRV (216).
func (n *NameServer) deleteTopic(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.DeleteTopicFromNamesrvRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := names.CheckTopic(h.Topic); err != nil {
		return nil, nameRefused("topic", err)
	}
	n.table.deleteTopic(h.Topic)
	n.log.Info().Str("topic", h.Topic).Msg("topic deleted")
	return success(), nil
}

// registerTopic handles REGISTER_TOPIC_IN_NAMESRV (217): the body is a TopicRouteData whose queue
// datas become the topic's (RocketMQ 5.x semantics; every broker name must be registered).
func (n *NameServer) registerTopic(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.RegisterTopicRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := names.CheckTopic(h.Topic); err != nil {
		return nil, nameRefused("topic", err)
	}
	if len(req.Body) == 0 {
		return success(), nil
	}
	r, err := DecodeTopicRouteData(req.Body)
	if err != nil {
		return nil, err
	}
	if len(r.QueueDatas) == 0 {
		return success(), nil
	}
	unknown, overCap := n.table.registerTopic(h.Topic, r.QueueDatas, n.opts.MaxQueueNums)
	if unknown != "" {
		return nil, &remoting.ResponseError{Code: remoting.SystemError,
			Remark: fmt.Sprintf("register topic %s: broker %s is not registered", h.Topic, names.Quote(unknown, len(unknown)))}
	}
	if overCap > 0 {
		return nil, &remoting.ResponseError{Code: remoting.SystemError, Remark: fmt.Sprintf(
			"register topic %s: %d broker(s) already hold %d topics", h.Topic, overCap, n.table.maxTopics)}
	}
	return success(), nil
}

// getTopicsByCluster handles GET_TOPICS_BY_CLUSTER (224).
func (n *NameServer) getTopicsByCluster(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetTopicsByClusterRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	resp := success()
	resp.Body = (&TopicList{TopicList: n.table.topicsByCluster(h.Cluster)}).Encode()
	return resp, nil
}

// putKVConfig handles PUT_KV_CONFIG (100). Values in ORDER_TOPIC_CONFIG must be well formed, as
// they reach clients' producers unchecked.
func (n *NameServer) putKVConfig(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.PutKVConfigRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := checkKVKey(h.Namespace, h.Key); err != nil {
		return nil, err
	}
	if err := checkKVText("value", h.Value, maxKVValueBytes); err != nil {
		return nil, err
	}
	if h.Namespace == NamespaceOrderTopicConfig && !validOrderTopicConf(h.Value) {
		return nil, &remoting.HeaderError{Field: "value", Value: h.Value,
			Reason: "not an order topic config (brokerName:queueCount;...)"}
	}
	n.kv.put(h.Namespace, h.Key, h.Value)
	n.log.Info().Str("namespace", h.Namespace).Str("key", h.Key).Msg("kv config put")
	return success(), nil
}

// getKVConfig handles GET_KV_CONFIG (101).
func (n *NameServer) getKVConfig(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetKVConfigRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := checkKVKey(h.Namespace, h.Key); err != nil {
		return nil, err
	}
	v, ok := n.kv.get(h.Namespace, h.Key)
	if !ok {
		return remoting.NewResponse(remoting.QueryNotFound,
			"No config item, Namespace: "+h.Namespace+" Key: "+h.Key), nil
	}
	return withHeader(success(), &protocol.GetKVConfigResponseHeader{Value: v}), nil
}

// deleteKVConfig handles DELETE_KV_CONFIG (102).
func (n *NameServer) deleteKVConfig(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.DeleteKVConfigRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := checkKVKey(h.Namespace, h.Key); err != nil {
		return nil, err
	}
	n.kv.delete(h.Namespace, h.Key)
	return success(), nil
}

// getKVListByNamespace handles GET_KV_LIST_BY_NAMESPACE (219).
func (n *NameServer) getKVListByNamespace(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetKVListByNamespaceRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := checkKVText("namespace", h.Namespace, maxKVNameBytes); err != nil {
		return nil, err
	}
	kv, ok := n.kv.list(h.Namespace)
	if !ok {
		return remoting.NewResponse(remoting.QueryNotFound, "No config item, Namespace: "+h.Namespace), nil
	}
	resp := success()
	resp.Body = (&KVTable{Table: kv}).Encode()
	return resp, nil
}

func remoteAddr(ch remoting.Channel) string {
	if ch == nil {
		return ""
	}
	return ch.RemoteAddr()
}
