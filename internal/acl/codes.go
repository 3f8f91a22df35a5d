package acl

import (
	"encoding/json"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Request codes remoting/codes.go does not list (RocketMQ's RequestCode.java).
const (
	codeTriggerDeleteFiles           int32 = 27
	codeUpdateAndCreateACLConfig     int32 = 50
	codeDeleteACLConfig              int32 = 51
	codeGetBrokerClusterACLInfo      int32 = 52
	codeUpdateGlobalWhiteAddrsConfig int32 = 53
	codeGetBrokerClusterACLConfig    int32 = 54
	codeGetSystemTopicListFromNS     int32 = 304
	codeCleanExpiredConsumeQueue     int32 = 306
	codeGetHasUnitSubTopicList       int32 = 312
	codeGetHasUnitSubUnunitTopicList int32 = 313
	codeCloneGroupOffset             int32 = 314
	codeCleanUnusedTopic             int32 = 316
	codeUpdateNamesrvConfig          int32 = 318
	codeGetNamesrvConfig             int32 = 319
	codeAddWritePermOfBroker         int32 = 327
	codeDeleteExpiredCommitLog       int32 = 329
	// CONTROLLER_ALTER_SYNC_STATE_SET to CONTROLLER_APPLY_BROKER_ID.
	codeFirstController int32 = 1001
	codeLastController  int32 = 1013
)

// codeClass is what Check asks of a request code.
type codeClass uint8

const (
	// classSigned: a broker request. Signed by a known account (or from a white address), with
	// the permissions its resources need.
	classSigned codeClass = iota
	// classAdmin: signed by an admin account (or from a white address).
	classAdmin
	// classOpen: not checked at all.
	classOpen
)

// classify sorts request codes. Every code not listed is a broker code, so a code this
// package has not heard of still needs a signature.
func classify(code int32) codeClass {
	// RocketMQ 5's controller codes (GET_BROKER_EPOCH_CACHE, which brokers serve, among them)
	// and BROKER_HEARTBEAT: only the deployment's brokers and its operators make them, and
	// they decide which replica is master and where a store is cut. Not in RocketMQ, whose ACL
	// leaves them to any signed account.
	if code == remoting.BrokerHeartbeat || code >= codeFirstController && code <= codeLastController {
		return classAdmin
	}
	switch code {
	// Name-service reads. RocketMQ's name server has no ACL at all: clients without
	// credentials fetch routes from it, and so may they here.
	case remoting.GetKVConfig, remoting.GetRouteInfoByTopic, remoting.GetBrokerClusterInfo,
		remoting.GetAllTopicListFromNameServer, remoting.GetKVListByNamespace, remoting.GetTopicsByCluster,
		codeGetSystemTopicListFromNS, remoting.GetUnitTopicList, codeGetHasUnitSubTopicList,
		codeGetHasUnitSubUnunitTopicList, codeGetNamesrvConfig, remoting.QueryDataVersion:
		return classOpen

	// Name-service writes: not in RocketMQ 4.9 (whose name server checks nothing); with ACL
	// on, only an admin account may change routes, brokers and the KV config.
	case remoting.PutKVConfig, remoting.DeleteKVConfig, remoting.RegisterBroker, remoting.UnregisterBroker,
		remoting.WipeWritePermOfBroker, remoting.DeleteTopicInNamesrv, remoting.RegisterTopicInNamesrv,
		codeUpdateNamesrvConfig, codeAddWritePermOfBroker:
		return classAdmin

	// RocketMQ 4.9's Permission.ADMIN_CODE.
	case remoting.UpdateAndCreateTopic, remoting.UpdateBrokerConfig, remoting.DeleteTopicInBroker,
		remoting.UpdateAndCreateSubscription, remoting.DeleteSubscriptionGroup:
		return classAdmin

	// Not in RocketMQ 4.9: broker requests that change what other clients see (offsets reset
	// or cloned, files and topics cleaned, the ACL itself) or read the ACL configuration
	// (RocketMQ 5's GET_BROKER_CLUSTER_ACL_CONFIG answers every account's secret key).
	case remoting.InvokeBrokerToResetOffset, codeCleanExpiredConsumeQueue, codeCleanUnusedTopic,
		codeUpdateAndCreateACLConfig, codeDeleteACLConfig, codeUpdateGlobalWhiteAddrsConfig,
		codeGetBrokerClusterACLInfo, codeGetBrokerClusterACLConfig, codeTriggerDeleteFiles, codeCloneGroupOffset,
		codeDeleteExpiredCommitLog:
		return classAdmin
	}
	return classSigned
}

// need is one resource a request needs a permission on (PlainAccessResource's
// resourcePermMap entry): a topic, or a consumer group (RocketMQ keys a group as its retry
// topic %RETRY%<group>; here the group's name is kept and group is set).
type need struct {
	name  string
	group bool
	perm  perm
}

// needsTopic adds the permission on topic; a retry topic stands for its group, as in RocketMQ
// where both share the key %RETRY%<group>. An empty name needs nothing (RocketMQ skips a
// missing field).
func needsTopic(dst []need, topic string, p perm) []need {
	if topic == "" {
		return dst
	}
	if names.IsRetryTopic(topic) {
		return needsGroup(dst, topic[len(names.RetryPrefix):], p)
	}
	return append(dst, need{name: topic, perm: p})
}

// needsGroup adds the permission on group; an empty name needs nothing (RocketMQ would key it
// "%RETRY%null" or skip it).
func needsGroup(dst []need, group string, p perm) []need {
	if group == "" {
		return dst
	}
	return append(dst, need{name: group, group: true, perm: p})
}

// Remarks of requests whose body names the resources and does not decode.
const (
	remarkBadHeartbeat = "HEART_BEAT body is malformed: cannot tell which groups and topics it needs"
	remarkBadLockBody  = "lock body is malformed: cannot tell which group it needs"
	remarkBadBatchAck  = "BATCH_ACK_MESSAGE body is malformed: cannot tell which groups and topics it needs"
)

// appendNeeds adds the resources req needs to dst, as RocketMQ's PlainAccessValidator.parse.
// A body that does not decode returns a refusal remark.
func appendNeeds(dst []need, req *remoting.Command) ([]need, string) {
	ext := req.ExtFields
	switch req.Code {
	case remoting.SendMessage, remoting.SendReplyMessage:
		// SEND_REPLY_MESSAGE: not in RocketMQ 4.9, checked as the send it is.
		return needsSend(dst, ext["topic"], ext["producerGroup"]), ""
	case remoting.SendMessageV2, remoting.SendBatchMessage, remoting.SendReplyMessageV2:
		// SEND_BATCH_MESSAGE and SEND_REPLY_MESSAGE_V2: not in RocketMQ 4.9, checked as the
		// sends they are (both carry the V2 header's short names).
		return needsSend(dst, ext["b"], ext["a"]), ""
	case remoting.ConsumerSendMsgBack:
		return needsGroup(dst, ext["group"], permSub), ""
	case remoting.PullMessage, remoting.LitePullMessage:
		// LITE_PULL_MESSAGE: not in RocketMQ 4.9; RocketMQ 5 checks it as the pull it is.
		dst = needsTopic(dst, ext["topic"], permSub)
		return needsGroup(dst, ext["consumerGroup"], permSub), ""
	case remoting.QueryMessage:
		return needsTopic(dst, ext["topic"], permSub), ""
	case remoting.QueryConsumeQueue:
		// Not in RocketMQ 4.9 (5's ACL 2.0 names both): a queue's index is read as its messages
		// are, and the group's subscription comes with it.
		dst = needsTopic(dst, ext["topic"], permSub)
		return needsGroup(dst, ext["consumerGroup"], permSub), ""
	case remoting.RecallMessage:
		// Not in RocketMQ 4.9; RocketMQ 5 checks it as a send to the topic.
		return needsTopic(dst, ext["topic"], permPub), ""
	case remoting.ConsumeMessageDirectly:
		// Not in RocketMQ 4.9 (5's ACL 2.0: SUB on both): the request has one of the group's
		// consumers consume a message, and the broker checks the message's own topic once it
		// has read it (CheckRead).
		dst = needsGroup(dst, ext["consumerGroup"], permSub)
		return needsTopic(dst, ext["topic"], permSub), ""
	case remoting.HeartBeat:
		hb, err := protocol.DecodeHeartbeatData(req.Body)
		if err != nil {
			return dst, remarkBadHeartbeat
		}
		for _, c := range hb.ConsumerDataSet {
			dst = needsGroup(dst, c.GroupName, permSub)
			for _, s := range c.SubscriptionDataSet {
				dst = needsTopic(dst, s.Topic, permSub)
			}
		}
		return dst, ""
	case remoting.PopMessage, remoting.PeekMessage, remoting.AckMessage, remoting.ChangeMessageInvisibleTime,
		remoting.Notification, remoting.PollingInfo:
		// RocketMQ 5's POP requests: SUB on the topic and the group (its ACL classifies them
		// as consumer reads).
		dst = needsTopic(dst, ext["topic"], permSub)
		return needsGroup(dst, ext["consumerGroup"], permSub), ""
	case remoting.BatchAckMessage:
		var body protocol.BatchAckMessageRequestBody
		if err := json.Unmarshal(req.Body, &body); err != nil {
			return dst, remarkBadBatchAck
		}
		for _, a := range body.Acks {
			dst = needsTopic(dst, a.Topic, permSub)
			dst = needsGroup(dst, a.ConsumerGroup, permSub)
		}
		return dst, ""
	case remoting.UnregisterClient, remoting.GetConsumerListByGroup:
		return needsGroup(dst, ext["consumerGroup"], permSub), ""
	case remoting.UpdateConsumerOffset, remoting.QueryConsumerOffset:
		// QUERY_CONSUMER_OFFSET: not in RocketMQ 4.9; a group's progress is its members'.
		dst = needsGroup(dst, ext["consumerGroup"], permSub)
		return needsTopic(dst, ext["topic"], permSub), ""
	case remoting.LockBatchMQ, remoting.UnlockBatchMQ:
		// Not in RocketMQ 4.9: without it anyone could take a group's orderly locks.
		var body struct {
			ConsumerGroup string `json:"consumerGroup"`
		}
		if err := json.Unmarshal(req.Body, &body); err != nil {
			return dst, remarkBadLockBody
		}
		return needsGroup(dst, body.ConsumerGroup, permSub), ""
	}
	return dst, ""
}

// needsSend is a send's resource: PUB on its topic, or for a retry topic SUB on the producer
// group the header names (RocketMQ; its SEND_MESSAGE reads a "group" field the header lacks, so
// there it checks nothing) and, not in RocketMQ 4.9, SUB on the group whose retry topic it is.
func needsSend(dst []need, topic, producerGroup string) []need {
	if !names.IsRetryTopic(topic) {
		return needsTopic(dst, topic, permPub)
	}
	owner := topic[len(names.RetryPrefix):]
	dst = needsGroup(dst, owner, permSub)
	if producerGroup != owner {
		dst = needsGroup(dst, producerGroup, permSub)
	}
	return dst
}

// isTraceSend reports RocketMQ's shortcut: a request that only publishes to the trace topic
// needs no permission, so that any signed client may trace.
func isTraceSend(needs []need) bool {
	return len(needs) == 1 && !needs[0].group && needs[0].name == names.TopicTrace && needs[0].perm == permPub
}
