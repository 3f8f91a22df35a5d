package consumer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// The simple consumer's wire (docs/protocol.md Appendix F): POP_MESSAGE with queueId -1,
// ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME, with the headers of internal/protocol/pop.go.
// What a POP answer means is RocketMQ 5's client's (MQClientAPIImpl.processPopResponse); the
// code here is ours.

// lateRemark is in the remark of a POLLING_TIMEOUT that RocketMQ's brokers (and ours) answer at
// once to a pop whose born time plus poll time is over 500 ms past (isTimeoutTooMuch).
const lateRemark = "pop message is timeout too much"

// errLatePop is a POLLING_TIMEOUT answered at once to a late pop (lateRemark): the broker's
// clock runs ahead of this client's by more than the poll time plus 500 ms, or the request
// took that long to arrive (a loaded broker). Receive reads it as no messages, as RocketMQ's
// clients do, and warns, since clock skew would otherwise empty every receive in silence.
var errLatePop = errors.New("the broker refused the pop as late (its clock runs ahead of this client's by more than the poll time plus 500 ms, or the request took that long to arrive)")

// readPopAnswer turns a POP_MESSAGE answer from brokerName into views of topic (as the caller
// subscribed it; wireTopic is the same as brokers know it) with receipt handles. SUCCESS
// carries messages; POLLING_TIMEOUT and PULL_NOT_FOUND mean none (nil, nil), except a
// POLLING_TIMEOUT for a late pop (lateRemark), errLatePop; any other code is the broker's error
// (POLLING_FULL among them: too many pops parked there).
func readPopAnswer(resp *remoting.Command, brokerName, topic, wireTopic string, order bool) ([]*MessageView, error) {
	switch resp.Code {
	case remoting.Success:
	case remoting.PollingTimeout:
		if strings.Contains(resp.Remark, lateRemark) {
			return nil, fmt.Errorf("%w: broker %s: %w", errLatePop, brokerName, remoting.ErrorFromResponse(resp))
		}
		return nil, nil
	case remoting.PullNotFound:
		return nil, nil
	default:
		return nil, remoting.ErrorFromResponse(resp)
	}
	var h protocol.PopMessageResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return nil, fmt.Errorf("consumer: POP answer from broker %s: %w", brokerName, err)
	}
	msgs, err := decodeMessages(resp.Body, MessageQueue{BrokerName: brokerName})
	if err != nil {
		return nil, fmt.Errorf("consumer: POP answer from broker %s: %w", brokerName, err)
	}
	starts, err := parseOffsetInfo(h.StartOffsetInfo, "startOffsetInfo")
	if err != nil {
		return nil, fmt.Errorf("consumer: POP answer from broker %s: %w", brokerName, err)
	}
	var counts map[string]int64
	if order {
		counts = parseOrderCounts(h.OrderCountInfo)
	}
	// A broker that sends no startOffsetInfo checkpoints each queue's batch at its first
	// message, which is where RocketMQ 5's client then puts the handles' checkpoint too.
	first := map[string]int64{}
	for _, m := range msgs {
		key := queueIDKey(protocol.PopRetryMarker(m.Queue.Topic), m.Queue.QueueID)
		if _, ok := first[key]; !ok {
			first[key] = m.QueueOffset
		}
	}
	views := make([]*MessageView, 0, len(msgs))
	for _, m := range msgs {
		info, text, ok := handleOf(m, &h, brokerName, starts, first)
		if !ok {
			return nil, fmt.Errorf("consumer: POP answer from broker %s: no checkpoint offset for queue %d of %s", brokerName, m.Queue.QueueID, m.Queue.Topic)
		}
		if order {
			// A FIFO message handed out again counts its attempts here, not in the record.
			n, ok := counts[queueKey(info.Retry, "qo"+strconv.Itoa(int(info.QueueID))+"%"+strconv.FormatInt(info.QueueOffset, 10))]
			if !ok {
				n = counts[queueIDKey(info.Retry, int(info.QueueID))]
			}
			if n > 0 {
				m.ReconsumeTimes = int32(min(n, 1<<30))
			}
		}
		// A message from the group's retry topic shows the topic it was subscribed by, as
		// a 5.x broker shows it unless popResponseReturnActualRetryTopic.
		m.Topic = topic
		v := &MessageView{Message: m, wireTopic: wireTopic}
		v.handle.Store(&receipt{info: info, text: text})
		views = append(views, v)
	}
	return views, nil
}

// handleOf is m's receipt handle: the POP_CK property a broker sets (5.x does on messages
// from a retry topic) when it reads, with its text, else one built from the answer's header as
// 5.x's client builds it, with no text. ok is false when the header names no checkpoint offset
// for m's queue.
func handleOf(m *Message, h *protocol.PopMessageResponseHeader, brokerName string, starts, first map[string]int64) (protocol.ExtraInfo, string, bool) {
	if ck := m.Properties[protocol.PropertyPopCK]; ck != "" {
		if info, err := protocol.ParseExtraInfo(ck); err == nil {
			return info, ck, true
		}
	}
	retry := protocol.PopRetryMarker(m.Queue.Topic)
	key := queueIDKey(retry, m.Queue.QueueID)
	ck, ok := starts[key]
	if starts == nil {
		ck, ok = first[key]
	}
	return protocol.ExtraInfo{CkQueueOffset: ck, PopTime: h.PopTime, InvisibleTime: h.InvisibleTime,
		ReviveQid: h.ReviveQid, Retry: retry, BrokerName: brokerName, QueueID: int32(m.Queue.QueueID),
		QueueOffset: m.QueueOffset}, "", ok
}

// queueKey is the key of a queue in an offset-info string, "retry@queue", as 5.x's
// ExtraInfoUtil keys them; queue is a queue id, or "qo<queueId>%<offset>" for one message.
func queueKey(retry, queue string) string { return retry + "@" + queue }

// queueIDKey is queueKey of a queue id.
func queueIDKey(retry string, queueID int) string { return queueKey(retry, strconv.Itoa(queueID)) }

// maxOffsetInfoEntries bounds the entries of one offset-info string: a POP answer covers at
// most MaxReceiveMessageNum messages, each of one queue.
const maxOffsetInfoEntries = 4 * MaxReceiveMessageNum

// parseOffsetInfo reads the startOffsetInfo of a POP answer: ";"-separated entries "retry
// queueId offset" with a decimal offset, into offsets by queueKey. "" is nil. A malformed or
// repeated entry is an error naming the field, as 5.x's client refuses it: the offsets are
// what acks name.
func parseOffsetInfo(s, field string) (map[string]int64, error) {
	if s == "" {
		return nil, nil
	}
	entries := strings.Split(s, ";")
	if len(entries) > maxOffsetInfoEntries {
		return nil, fmt.Errorf("%s has %d entries, over %d", field, len(entries), maxOffsetInfoEntries)
	}
	out := make(map[string]int64, len(entries))
	for _, e := range entries {
		f := strings.Split(e, " ")
		if len(f) != 3 || f[0] == "" || f[1] == "" {
			return nil, fmt.Errorf("%s entry %q is not \"retry queue value\"", field, e)
		}
		v, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s entry %q: value is not a decimal", field, e)
		}
		key := queueKey(f[0], f[1])
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%s repeats queue %s", field, key)
		}
		out[key] = v
	}
	return out, nil
}

// parseOrderCounts reads the orderCountInfo of a FIFO POP answer: ";"-separated entries
// "retry qo<queueId>%<offset> count" for a message and "retry queueId count" for a queue, into
// counts by queueKey. The counts only tell a view's delivery attempt, so unlike the checkpoint
// offsets an entry that does not read so is passed over (5.x's client fails the whole answer,
// which would leave a FIFO queue's batch hidden until its invisible time); a repeated key
// keeps its first count above 0.
func parseOrderCounts(s string) map[string]int64 {
	if s == "" {
		return nil
	}
	entries := strings.Split(s, ";")
	out := make(map[string]int64, min(len(entries), maxOffsetInfoEntries))
	for i, e := range entries {
		if i == maxOffsetInfoEntries {
			break
		}
		f := strings.Split(e, " ")
		if len(f) != 3 || f[0] == "" || f[1] == "" {
			continue
		}
		v, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || v < 0 {
			continue
		}
		if key := queueKey(f[0], f[1]); out[key] == 0 {
			out[key] = v
		}
	}
	return out
}

// ackHeader is the ACK_MESSAGE header of the handle r of a message popped from wireTopic by
// group: the topic is the retry topic when the handle says the message came from there.
func ackHeader(group, wireTopic string, r *receipt) *protocol.AckMessageRequestHeader {
	return &protocol.AckMessageRequestHeader{ConsumerGroup: group, Topic: r.info.RealTopic(wireTopic, group),
		QueueID: r.info.QueueID, ExtraInfo: r.String(), Offset: r.info.QueueOffset, BrokerName: r.info.BrokerName}
}

// changeInvisibleHeader is the CHANGE_MESSAGE_INVISIBLETIME header that hides the message of
// handle r for invisibleMs from now.
func changeInvisibleHeader(group, wireTopic string, r *receipt, invisibleMs int64) *protocol.ChangeInvisibleTimeRequestHeader {
	return &protocol.ChangeInvisibleTimeRequestHeader{ConsumerGroup: group, Topic: r.info.RealTopic(wireTopic, group),
		QueueID: r.info.QueueID, ExtraInfo: r.String(), Offset: r.info.QueueOffset, InvisibleTime: invisibleMs,
		BrokerName: r.info.BrokerName}
}

// changedReceipt is the handle a CHANGE_MESSAGE_INVISIBLETIME answer gives the message of old:
// the broker checkpointed the message alone, at its own offset, with a new pop time (5.x's
// client builds it so from the answer).
func changedReceipt(old *receipt, h *protocol.ChangeInvisibleTimeResponseHeader) *receipt {
	info := old.info
	info.CkQueueOffset = info.QueueOffset
	info.PopTime, info.InvisibleTime, info.ReviveQid = h.PopTime, h.InvisibleTime, h.ReviveQid
	return newReceipt(info)
}
