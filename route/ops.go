package route

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// The name service's operator requests (issue 31): draining a broker by wiping its write
// permission, the system and unit topic lists, and the name service's configuration.

// topicSysFlagUnit is TopicSysFlag.FLAG_UNIT: the topic belongs to a unit (RocketMQ's
// unitization, which GET_UNIT_TOPIC_LIST lists).
const topicSysFlagUnit int32 = 1

// operateWritePerm is RouteInfoManager.operateWritePermOfBroker: wipe takes the write bit off
// every queue data of brokerName, add sets them to read-write, as RocketMQ does (a topic that
// was read-only before the wipe comes back read-write). It returns how many topics it changed.
// The change holds until the broker registers a new data version, e.g. after a topic change
// or a restart, as in RocketMQ.
func (t *table) operateWritePerm(brokerName string, wipe bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, m := range t.topicQueue {
		qd, ok := m[brokerName]
		if !ok {
			continue
		}
		if wipe {
			qd.Perm &^= PermWrite
		} else {
			qd.Perm = PermReadWrite
		}
		m[brokerName] = qd
		n++
	}
	return n
}

// systemTopics is RouteInfoManager.getSystemTopicList: every cluster name and broker name
// (RocketMQ's topics named after them), with one broker address to ask.
func (t *table) systemTopics() *TopicList {
	t.mu.RLock()
	defer t.mu.RUnlock()
	l := &TopicList{TopicList: []string{}}
	for c := range t.clusterAddr {
		l.TopicList = append(l.TopicList, c)
		for b := range t.clusterAddr[c] {
			l.TopicList = append(l.TopicList, b)
		}
	}
	slices.Sort(l.TopicList)
	l.TopicList = slices.Compact(l.TopicList)
	for _, name := range slices.Sorted(maps.Keys(t.brokerAddr)) {
		bd := t.brokerAddr[name]
		for _, id := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
			l.BrokerAddr = bd.BrokerAddrs[id]
			return l
		}
	}
	return l
}

// unitTopics is RouteInfoManager.getUnitTopics: topics whose queue data carries the unit flag.
func (t *table) unitTopics() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := []string{}
	for topic, m := range t.topicQueue {
		for _, qd := range m {
			if qd.TopicSynFlag&topicSysFlagUnit != 0 {
				out = append(out, topic)
			}
			break // RocketMQ looks at the first queue data only
		}
	}
	slices.Sort(out)
	return out
}

// wipeWritePerm handles WIPE_WRITE_PERM_OF_BROKER (205): producers stop choosing the broker's
// queues at their next route refresh, so the broker drains before maintenance.
func (n *NameServer) wipeWritePerm(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	return n.operateWritePerm(ch, req, true)
}

// addWritePerm handles ADD_WRITE_PERM_OF_BROKER (327), which undoes a wipe.
func (n *NameServer) addWritePerm(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	return n.operateWritePerm(ch, req, false)
}

func (n *NameServer) operateWritePerm(ch remoting.Channel, req *remoting.Command, wipe bool) (*remoting.Command, error) {
	var h protocol.WipeWritePermOfBrokerRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := checkIdentity("brokerName", h.BrokerName, maxIdentityBytes, true); err != nil {
		return nil, err
	}
	count := int32(n.table.operateWritePerm(h.BrokerName, wipe))
	var rh remoting.Header
	what := "add"
	if wipe {
		what = "wipe"
		rh = &protocol.WipeWritePermOfBrokerResponseHeader{WipeTopicCount: count}
	} else {
		rh = &protocol.AddWritePermOfBrokerResponseHeader{AddTopicCount: count}
	}
	n.log.Info().Str("broker", h.BrokerName).Str("client", remoteAddr(ch)).Int32("topics", count).
		Msg(what + " write perm of broker")
	return withHeader(success(), rh), nil
}

// getSystemTopicList handles GET_SYSTEM_TOPIC_LIST_FROM_NS (304).
func (n *NameServer) getSystemTopicList(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	resp := success()
	resp.Body = n.table.systemTopics().Encode()
	return resp, nil
}

// getUnitTopicList handles GET_UNIT_TOPIC_LIST (311).
func (n *NameServer) getUnitTopicList(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	resp := success()
	resp.Body = (&TopicList{TopicList: n.table.unitTopics()}).Encode()
	return resp, nil
}

// Keys of the name service's configuration (NamesrvConfig's fields) in GET_NAMESRV_CONFIG.
const (
	namesrvKeyKVConfigPath       = "kvConfigPath"
	namesrvKeyScanNotActive      = "scanNotActiveBrokerInterval"
	namesrvKeyOrderMessageEnable = "orderMessageEnable"
)

// maxConfigBody bounds an UPDATE_*_CONFIG body: RocketMQ's whole broker configuration is a
// few kilobytes.
const maxConfigBody = 64 << 10

// config is the name service's configuration as RocketMQ's properties text, keys sorted.
func (n *NameServer) config() string {
	kv := map[string]string{
		namesrvKeyKVConfigPath:       n.opts.KVConfigPath,
		namesrvKeyScanNotActive:      strconv.FormatInt(n.opts.ScanInterval.Milliseconds(), 10),
		namesrvKeyOrderMessageEnable: strconv.FormatBool(!n.orderConfOff.Load()),
	}
	return FormatProperties(kv)
}

// getConfig handles GET_NAMESRV_CONFIG (319): the body is the configuration as properties text.
func (n *NameServer) getConfig(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	resp := success()
	resp.Body = []byte(n.config())
	return resp, nil
}

// updateConfig handles UPDATE_NAMESRV_CONFIG (318). Only orderMessageEnable changes at run
// time (as in RocketMQ, where it is read on every route request); every other key is refused
// with NO_PERMISSION and a remark naming it, and nothing is changed then. The change lives in
// memory, as the name service has no configuration file (RocketMQ writes namesrv.properties).
func (n *NameServer) updateConfig(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if len(req.Body) > maxConfigBody {
		return nil, &remoting.ResponseError{Code: remoting.SystemError,
			Remark: fmt.Sprintf("config body is %d bytes; at most %d are taken", len(req.Body), maxConfigBody)}
	}
	props, err := ParseProperties(string(req.Body))
	if err != nil {
		return nil, &remoting.ResponseError{Code: remoting.SystemError, Remark: "string2Properties error: " + err.Error()}
	}
	var refused []string
	var order *bool
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if k != namesrvKeyOrderMessageEnable {
			refused = append(refused, names.Quote(k, len(k)))
			continue
		}
		b, err := strconv.ParseBool(strings.TrimSpace(props[k]))
		if err != nil {
			return nil, &remoting.ResponseError{Code: remoting.SystemError,
				Remark: fmt.Sprintf("%s must be true or false, not %s", k, names.Quote(props[k], len(props[k])))}
		}
		order = &b
	}
	if len(refused) > 0 {
		return nil, &remoting.ResponseError{Code: remoting.NoPermission, Remark: fmt.Sprintf(
			"cannot change %s at run time: the name service changes only %s (set the others when starting the node)",
			listSome(refused), namesrvKeyOrderMessageEnable)}
	}
	if order != nil {
		n.orderConfOff.Store(!*order)
		n.log.Info().Str("client", remoteAddr(ch)).Bool(namesrvKeyOrderMessageEnable, *order).Msg("name service config updated")
	}
	return success(), nil
}
