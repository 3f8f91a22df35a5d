package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Broker requests of the consume side (docs/protocol.md §5). Each takes the broker address; the
// caller picks it from the instance's route table.

const requestTimeout = 3 * time.Second

func invoke(ctx context.Context, tr remoting.Transport, addr string, code int32, h remoting.Header, body []byte) (*remoting.Command, error) {
	if addr == "" {
		return nil, ErrNoBroker
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, requestTimeout)
		defer cancel()
	}
	return tr.InvokeSync(ctx, addr, newRequest(tr, code, h, body))
}

// newRequest builds a request of h: its fields written straight into the frame when tr
// takes them (no map per request), else a map.
func newRequest(tr remoting.Transport, code int32, h remoting.Header, body []byte) *remoting.Command {
	if bh, ok := h.(remoting.BinaryHeader); ok {
		if _, ok := tr.(remoting.FieldsTransport); ok {
			return remoting.NewRequestFields(code, bh, body)
		}
	}
	var ext map[string]string
	if h != nil {
		ext = remoting.EncodeHeader(h)
	}
	return remoting.NewRequest(code, ext, body)
}

// queryConsumerOffset asks the group's stored offset of mq; ErrOffsetNotFound for code 22.
func queryConsumerOffset(ctx context.Context, tr remoting.Transport, addr, group string, mq MessageQueue) (int64, error) {
	resp, err := invoke(ctx, tr, addr, remoting.QueryConsumerOffset, &protocol.QueryConsumerOffsetRequestHeader{
		ConsumerGroup: group, Topic: mq.Topic, QueueID: int32(mq.QueueID), BrokerName: mq.BrokerName}, nil)
	if err != nil {
		return 0, err
	}
	if resp.Code == remoting.QueryNotFound {
		return 0, ErrOffsetNotFound
	}
	if err := remoting.ErrorFromResponse(resp); err != nil {
		return 0, err
	}
	var h protocol.OffsetResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return 0, err
	}
	return h.Offset, nil
}

func updateOffsetRequest(group string, mq MessageQueue, offset int64) *remoting.Command {
	h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: mq.Topic,
		QueueID: int32(mq.QueueID), CommitOffset: offset, BrokerName: mq.BrokerName}
	return remoting.NewRequest(remoting.UpdateConsumerOffset, remoting.EncodeHeader(&h), nil)
}

// updateConsumerOffset stores offset as the group's next offset of mq, waiting for the answer
// when sync, else one-way.
func updateConsumerOffset(ctx context.Context, tr remoting.Transport, addr, group string, mq MessageQueue, offset int64, sync bool) error {
	if addr == "" {
		return ErrNoBroker
	}
	req := updateOffsetRequest(group, mq, offset)
	if !sync {
		return tr.InvokeOneway(ctx, addr, req)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, requestTimeout)
		defer cancel()
	}
	resp, err := tr.InvokeSync(ctx, addr, req)
	if err != nil {
		return err
	}
	return remoting.ErrorFromResponse(resp)
}

func offsetAnswer(resp *remoting.Command, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	// The official client does not check the code of these answers, only the offset field.
	var h protocol.OffsetResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return 0, fmt.Errorf("consumer: offset answer (code %d %q): %w", resp.Code, resp.Remark, err)
	}
	return h.Offset, nil
}

// getMaxOffset asks the offset one past the last message of mq.
func getMaxOffset(ctx context.Context, tr remoting.Transport, addr string, mq MessageQueue) (int64, error) {
	return offsetAnswer(invoke(ctx, tr, addr, remoting.GetMaxOffset, &protocol.QueueHeader{
		Topic: mq.Topic, QueueID: int32(mq.QueueID), BrokerName: mq.BrokerName}, nil))
}

// getMinOffset asks the smallest offset of mq still available.
func getMinOffset(ctx context.Context, tr remoting.Transport, addr string, mq MessageQueue) (int64, error) {
	return offsetAnswer(invoke(ctx, tr, addr, remoting.GetMinOffset, &protocol.QueueHeader{
		Topic: mq.Topic, QueueID: int32(mq.QueueID), BrokerName: mq.BrokerName}, nil))
}

// searchOffset asks the offset of the first message of mq stored at or after t.
func searchOffset(ctx context.Context, tr remoting.Transport, addr string, mq MessageQueue, t time.Time) (int64, error) {
	return offsetAnswer(invoke(ctx, tr, addr, remoting.SearchOffsetByTimestamp, &protocol.SearchOffsetRequestHeader{
		Topic: mq.Topic, QueueID: int32(mq.QueueID), Timestamp: t.UnixMilli(), BrokerName: mq.BrokerName}, nil))
}

// consumerIDs asks a broker for the client ids of group. A failed request is an error; an
// answer without a body is an empty list, as the official client reads it.
func consumerIDs(ctx context.Context, tr remoting.Transport, addr, group string) ([]string, error) {
	resp, err := invoke(ctx, tr, addr, remoting.GetConsumerListByGroup,
		&protocol.ConsumerGroupHeader{ConsumerGroup: group}, nil)
	if err != nil {
		return nil, err
	}
	if resp.Code != remoting.Success {
		return nil, remoting.ErrorFromResponse(resp)
	}
	var body protocol.GetConsumerListByGroupResponseBody
	if len(resp.Body) > 0 {
		if err := json.Unmarshal(resp.Body, &body); err != nil {
			return nil, fmt.Errorf("consumer: consumer list body: %w", err)
		}
	}
	return body.ConsumerIDList, nil
}

// lockBatch asks the broker to lock mqs for (group, clientID) and returns those it locked.
func lockBatch(ctx context.Context, tr remoting.Transport, addr, group, clientID string, mqs []MessageQueue) ([]MessageQueue, error) {
	body, _ := json.Marshal(protocol.LockBatchRequestBody{ConsumerGroup: group, ClientID: clientID, MQSet: mqs})
	resp, err := invoke(ctx, tr, addr, remoting.LockBatchMQ, nil, body)
	if err != nil {
		return nil, err
	}
	if resp.Code != remoting.Success {
		return nil, remoting.ErrorFromResponse(resp)
	}
	var r protocol.LockBatchResponseBody
	if len(resp.Body) > 0 {
		if err := json.Unmarshal(resp.Body, &r); err != nil {
			return nil, fmt.Errorf("consumer: lock answer: %w", err)
		}
	}
	return r.LockOKMQSet, nil
}

// unlockBatch releases the locks of mqs held by (group, clientID).
func unlockBatch(ctx context.Context, tr remoting.Transport, addr, group, clientID string, mqs []MessageQueue) error {
	body, _ := json.Marshal(protocol.LockBatchRequestBody{ConsumerGroup: group, ClientID: clientID, MQSet: mqs})
	resp, err := invoke(ctx, tr, addr, remoting.UnlockBatchMQ, nil, body)
	if err != nil {
		return err
	}
	return remoting.ErrorFromResponse(resp)
}

// sendBack hands a message the listener failed on back to the broker
// (CONSUMER_SEND_MSG_BACK): into the retry topic with delayLevel (0 = the broker's choice) or,
// with -1, straight to the dead-letter topic.
func sendBack(ctx context.Context, tr remoting.Transport, addr, group string, m *Message, delayLevel, maxReconsume int32) error {
	resp, err := invoke(ctx, tr, addr, remoting.ConsumerSendMsgBack, &protocol.ConsumerSendMsgBackRequestHeader{
		Offset: m.CommitLogOffset, Group: group, DelayLevel: delayLevel, OriginMsgID: m.MsgID,
		OriginTopic: originTopic(m), MaxReconsumeTimes: maxReconsume, BrokerName: m.Queue.BrokerName}, nil)
	if err != nil {
		return err
	}
	return remoting.ErrorFromResponse(resp)
}

// originTopic is m's topic as brokers know it, with the namespace Message.Topic leaves out:
// the topic of the queue it came from, or, from a retry queue, the topic it was first sent to.
func originTopic(m *Message) string {
	q := m.Queue.Topic
	if isRetryTopic(q) {
		if t := m.Properties[message.PropertyRetryTopic]; t != "" {
			return t
		}
		return m.Topic
	}
	if q == "" {
		return m.Topic
	}
	return q
}

// checkClientConfig asks the broker at addr whether it can serve sub for group
// (CHECK_CLIENT_CONFIG, no header); nil when it answers SUCCESS.
func checkClientConfig(ctx context.Context, tr remoting.Transport, addr, group, clientID string, sub protocol.SubscriptionData) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	body := (&protocol.CheckClientRequestBody{ClientID: clientID, Group: group, SubscriptionData: sub}).Encode()
	resp, err := invoke(ctx, tr, addr, remoting.CheckClientConfig, nil, body)
	if err != nil {
		return err
	}
	return remoting.ErrorFromResponse(resp)
}

// pullResult is a decoded PULL_MESSAGE answer.
type pullResult struct {
	code   int32
	header protocol.PullMessageResponseHeader
	body   []byte
}

// pullMessage sends one pull and waits up to timeout for the answer, the broker's suspend
// included.
func pullMessage(ctx context.Context, tr remoting.Transport, addr string, h *protocol.PullMessageRequestHeader, timeout time.Duration) (pullResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := newRequest(tr, remoting.PullMessage, h, nil)
	// The binary header is cheaper to write and read than JSON at both ends, and the broker
	// answers in the request's serialization.
	req.Serialize = remoting.SerializeRocketMQ
	resp, err := tr.InvokeSync(ctx, addr, req)
	if err != nil {
		return pullResult{}, err
	}
	switch resp.Code {
	case remoting.Success, remoting.PullNotFound, remoting.PullRetryImmediately, remoting.PullOffsetMoved:
	default:
		return pullResult{}, remoting.ErrorFromResponse(resp)
	}
	r := pullResult{code: resp.Code, body: resp.Body}
	if err := r.header.Decode(resp.ExtFields); err != nil {
		return pullResult{}, fmt.Errorf("consumer: pull answer: %w", err)
	}
	return r, nil
}
