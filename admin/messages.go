package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

const (
	// ToolsConsumerGroup is the group RocketMQ's tools pull with (MixAll.TOOLS_CONSUMER_GROUP).
	ToolsConsumerGroup = "TOOLS_CONSUMER"
	// DefaultQueryMaxNum is how many messages mqadmin queryMsgByKey asks each broker for.
	DefaultQueryMaxNum = 64
	// uniqueKeyQueryMaxNum is what RocketMQ's admin asks for in a query by unique key.
	uniqueKeyQueryMaxNum = 32
)

// ErrMessageNotFound is the error of a query that found no message.
var ErrMessageNotFound = errors.New("admin: message not found")

// QueryMessageByID returns the message an offset message id names (the broker's address and
// the CommitLog offset, docs/protocol.md §9.5), read with VIEW_MESSAGE_BY_ID from that broker.
func (a *Admin) QueryMessageByID(ctx context.Context, msgID string) (*consumer.Message, error) {
	host, offset, err := message.ParseOffsetMsgID(msgID)
	if err == nil && (host.Port() == 0 || host.Addr().IsUnspecified()) {
		err = fmt.Errorf("%w: it names no broker (%s)", message.ErrMsgID, host)
	}
	if err != nil {
		return nil, fmt.Errorf("admin: message %s: %w", msgID, err)
	}
	addr := host.String()
	req := remoting.NewRequest(remoting.ViewMessageByID, remoting.EncodeHeader(&protocol.OffsetHeader{Offset: offset}), nil)
	resp, err := a.invokeOK(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("admin: message %s on broker %s: %w", msgID, addr, err)
	}
	msgs, err := consumer.DecodeMessages(resp.Body, a.brokerNameOf(ctx, addr))
	if err != nil {
		return nil, fmt.Errorf("admin: message %s on broker %s: %w", msgID, addr, err)
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrMessageNotFound, msgID)
	}
	return msgs[0], nil
}

// brokerNameOf finds the broker name of an address in the cluster info, "" when it cannot: a
// message's queue names its broker, but a record only its address.
func (a *Admin) brokerNameOf(ctx context.Context, addr string) string {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return ""
	}
	for name, bd := range ci.BrokerAddrTable {
		for _, ba := range bd.BrokerAddrs {
			if ba == addr {
				return name
			}
		}
	}
	return ""
}

// QueryMessageByKey returns up to max (DefaultQueryMaxNum when max <= 0) messages of topic
// with key among their KEYS, stored between begin and end, asked (QUERY_MESSAGE) of every
// master of the topic; they are sorted by store time. The broker's index matches hashes, so
// the keys of every answer are checked, as RocketMQ's client does.
func (a *Admin) QueryMessageByKey(ctx context.Context, topic, key string, max int, begin, end time.Time) ([]*consumer.Message, error) {
	if max <= 0 {
		max = DefaultQueryMaxNum
	}
	endMs := end.UnixMilli()
	if end.IsZero() {
		endMs = math.MaxInt64
	}
	h := &protocol.QueryMessageRequestHeader{Topic: topic, Key: key, MaxNum: int32(min(max, math.MaxInt32)),
		BeginTimestamp: begin.UnixMilli(), EndTimestamp: endMs}
	if begin.IsZero() {
		h.BeginTimestamp = 0
	}
	msgs, err := a.queryMessage(ctx, h, func(m *consumer.Message) bool { return slices.Contains(m.Keys, key) })
	if err != nil {
		return nil, fmt.Errorf("admin: query topic %s by key %s: %w", topic, key, err)
	}
	if len(msgs) > max {
		msgs = msgs[:max]
	}
	return msgs, nil
}

// QueryMessageByUniqueKey returns the message whose UNIQ_KEY (the message id a producer
// returns) is uniqKey, the earliest stored when a retry stored it twice.
func (a *Admin) QueryMessageByUniqueKey(ctx context.Context, topic, uniqKey string) (*consumer.Message, error) {
	msgs, err := a.QueryMessagesByUniqueKey(ctx, topic, uniqKey)
	if err != nil {
		return nil, err
	}
	return msgs[0], nil
}

// QueryMessagesByUniqueKey returns every stored copy (at most 32 per broker, as RocketMQ's
// admin asks) of the message whose UNIQ_KEY is uniqKey, sorted by store time: a send retried
// after a timeout may have stored it more than once. None is ErrMessageNotFound.
func (a *Admin) QueryMessagesByUniqueKey(ctx context.Context, topic, uniqKey string) ([]*consumer.Message, error) {
	h := &protocol.QueryMessageRequestHeader{Topic: topic, Key: uniqKey, MaxNum: uniqueKeyQueryMaxNum,
		EndTimestamp: math.MaxInt64, UniqueKeyQuery: true}
	msgs, err := a.queryMessage(ctx, h, func(m *consumer.Message) bool {
		return m.Properties[message.PropertyUniqKey] == uniqKey
	})
	if err == nil && len(msgs) == 0 {
		err = ErrMessageNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("admin: query topic %s by unique key %s: %w", topic, uniqKey, err)
	}
	return msgs, nil
}

// queryMessage asks every master of h.Topic and keeps the messages keep accepts, sorted by
// store time. QUERY_NOT_FOUND from a broker means none there.
func (a *Admin) queryMessage(ctx context.Context, h *protocol.QueryMessageRequestHeader, keep func(*consumer.Message) bool) ([]*consumer.Message, error) {
	r, err := a.TopicRoute(ctx, h.Topic)
	if err != nil {
		return nil, err
	}
	ms := masters(r)
	if len(ms) == 0 {
		return nil, fmt.Errorf("topic %s has no master broker", h.Topic)
	}
	var out []*consumer.Message
	for _, m := range ms {
		resp, err := a.invokeOK(ctx, m.addr, remoting.NewRequest(remoting.QueryMessage, remoting.EncodeHeader(h), nil),
			remoting.Success, remoting.QueryNotFound)
		if err != nil {
			return nil, fmt.Errorf("broker %s: %w", m.addr, err)
		}
		if resp.Code == remoting.QueryNotFound {
			continue
		}
		msgs, err := consumer.DecodeMessages(resp.Body, m.name)
		if err != nil {
			return nil, fmt.Errorf("broker %s: %w", m.addr, err)
		}
		for _, msg := range msgs {
			if msg.Topic == h.Topic && keep(msg) {
				out = append(out, msg)
			}
		}
	}
	slices.SortStableFunc(out, func(x, y *consumer.Message) int { return x.StoreTime.Compare(y.StoreTime) })
	return out, nil
}

// MaxPullNums is the most messages one PullMessages asks for (RocketMQ's pull batch limit,
// maxTransferCountOnMessageInMemory).
const MaxPullNums = 32

// QueryMessageByOffset returns the message at offset of mq: a PULL_MESSAGE of one message by
// the group ToolsConsumerGroup from mq's master, committing nothing.
func (a *Admin) QueryMessageByOffset(ctx context.Context, mq MessageQueue, offset int64) (*consumer.Message, error) {
	msgs, _, err := a.PullMessages(ctx, mq, offset, 1)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if m.QueueOffset == offset {
			return m, nil
		}
	}
	return nil, fmt.Errorf("admin: message at offset %d of %s: %w", offset, mq, ErrMessageNotFound)
}

// PullMessages reads up to maxNums (at most MaxPullNums) messages of mq from offset on, as the
// group ToolsConsumerGroup, committing nothing, and returns them with the offset to read next.
// No message there (the end of the queue, or an offset out of its range) is no error: the
// messages are then nil and next is where the broker suggests reading.
func (a *Admin) PullMessages(ctx context.Context, mq MessageQueue, offset int64, maxNums int) (msgs []*consumer.Message, next int64, err error) {
	r, err := a.Pull(ctx, mq, protocol.SubAll, offset, maxNums)
	if err != nil {
		return nil, 0, err
	}
	return r.Messages, r.NextBeginOffset, nil
}

// Pull statuses, as RocketMQ's PullStatus names them.
const (
	PullFound         = "FOUND"
	PullNoNewMsg      = "NO_NEW_MSG"
	PullNoMatchedMsg  = "NO_MATCHED_MSG"
	PullOffsetIllegal = "OFFSET_ILLEGAL"
)

// PullResult is one pull's answer: its status (PullFound, ...), the messages found and where
// to read next.
type PullResult struct {
	Status          string
	Messages        []*consumer.Message
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
}

// Pull reads up to maxNums (at most MaxPullNums) messages of mq from offset on that match a tag
// expression ("*" or "TagA || TagB"), from mq's master, as the group ToolsConsumerGroup,
// committing nothing (RocketMQ's DefaultMQPullConsumer.pull, which mqadmin printMsg uses). The
// broker filters by tag hash; as RocketMQ's client, the tags of what it returns are checked
// again, so a hash collision is not printed.
func (a *Admin) Pull(ctx context.Context, mq MessageQueue, expression string, offset int64, maxNums int) (*PullResult, error) {
	what := fmt.Sprintf("pull at offset %d of %s", offset, mq)
	tags, err := tagSet(expression)
	if err != nil {
		return nil, fmt.Errorf("admin: %s: %w", what, err)
	}
	r, err := a.TopicRoute(ctx, mq.Topic)
	if err != nil {
		return nil, fmt.Errorf("admin: %s: %w", what, err)
	}
	var addr string
	for _, m := range masters(r) {
		if m.name == mq.BrokerName {
			addr = m.addr
		}
	}
	if addr == "" {
		return nil, fmt.Errorf("admin: %s: broker %s has no master in the topic's route", what, mq.BrokerName)
	}
	if tags == nil {
		expression = protocol.SubAll
	}
	h := &protocol.PullMessageRequestHeader{ConsumerGroup: ToolsConsumerGroup, Topic: mq.Topic, QueueID: int32(mq.QueueID),
		QueueOffset: offset, MaxMsgNums: int32(min(max(maxNums, 1), MaxPullNums)),
		SysFlag: protocol.BuildPullSysFlag(false, false, true, false), Subscription: expression,
		ExpressionType: protocol.ExpressionTag, BrokerName: mq.BrokerName}
	resp, err := a.invokeOK(ctx, addr, remoting.NewRequest(remoting.PullMessage, remoting.EncodeHeader(h), nil),
		remoting.Success, remoting.PullNotFound, remoting.PullRetryImmediately, remoting.PullOffsetMoved)
	if err != nil {
		return nil, fmt.Errorf("admin: %s: %w", what, err)
	}
	var rh protocol.PullMessageResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		return nil, fmt.Errorf("admin: %s: %w", what, err)
	}
	res := &PullResult{NextBeginOffset: rh.NextBeginOffset, MinOffset: rh.MinOffset, MaxOffset: rh.MaxOffset}
	switch resp.Code {
	case remoting.PullNotFound:
		res.Status = PullNoNewMsg
		return res, nil
	case remoting.PullRetryImmediately:
		res.Status = PullNoMatchedMsg
		return res, nil
	case remoting.PullOffsetMoved:
		res.Status = PullOffsetIllegal
		return res, nil
	}
	msgs, err := consumer.DecodeMessages(resp.Body, mq.BrokerName)
	if err != nil {
		return nil, fmt.Errorf("admin: %s: %w", what, err)
	}
	if tags != nil {
		msgs = slices.DeleteFunc(msgs, func(m *consumer.Message) bool { return !slices.Contains(tags, m.Tags) })
	}
	res.Status, res.Messages = PullFound, msgs
	return res, nil
}

// tagSet reads a tag expression: nil for "*" or "", else its tags ("TagA || TagB").
func tagSet(expression string) ([]string, error) {
	expression = strings.TrimSpace(expression)
	if expression == "" || expression == protocol.SubAll {
		return nil, nil
	}
	var tags []string
	for t := range strings.SplitSeq(expression, "||") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	if len(tags) == 0 {
		return nil, fmt.Errorf("tag expression %q names no tag", expression)
	}
	return tags, nil
}

// SearchOffset returns the offset of the first message of mq stored at or after t, asked of
// mq's master (SEARCH_OFFSET_BY_TIMESTAMP); a time past every message gives the queue's end.
func (a *Admin) SearchOffset(ctx context.Context, mq MessageQueue, t time.Time) (int64, error) {
	what := fmt.Sprintf("search offset of %s at %d", mq, t.UnixMilli())
	r, err := a.TopicRoute(ctx, mq.Topic)
	if err != nil {
		return 0, fmt.Errorf("admin: %s: %w", what, err)
	}
	var addr string
	for _, m := range masters(r) {
		if m.name == mq.BrokerName {
			addr = m.addr
		}
	}
	if addr == "" {
		return 0, fmt.Errorf("admin: %s: broker %s has no master in the topic's route", what, mq.BrokerName)
	}
	req := remoting.NewRequest(remoting.SearchOffsetByTimestamp, remoting.EncodeHeader(&protocol.SearchOffsetRequestHeader{
		Topic: mq.Topic, QueueID: int32(mq.QueueID), Timestamp: t.UnixMilli()}), nil)
	resp, err := a.invokeOK(ctx, addr, req)
	if err != nil {
		return 0, fmt.Errorf("admin: %s: %w", what, err)
	}
	var h protocol.OffsetHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return 0, fmt.Errorf("admin: %s: %w", what, err)
	}
	return h.Offset, nil
}
