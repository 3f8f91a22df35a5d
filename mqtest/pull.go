package mqtest

import (
	"context"
	"fmt"
	"time"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// pullBatch is how many messages PullAll asks for at a time (RocketMQ's pullBatchSize).
const pullBatch = 32

// PullAll reads every message of topic's first queues queues from broker n itself, over TCP
// with PULL_MESSAGE, bypassing routes and consumer offsets: what that broker holds, whatever
// its role. Tests check with it that a broker has every acknowledged message.
func (c *Cluster) PullAll(n *Node, topic string, queues int) ([]*consumer.Message, error) {
	tr := remoting.NewClient(remoting.ClientOptions{Logger: &c.log})
	defer tr.Close()
	var out []*consumer.Message
	for q := range int32(queues) {
		for offset := int64(0); ; {
			h := &protocol.PullMessageRequestHeader{ConsumerGroup: "mqtest-pull-all", Topic: topic, QueueID: q,
				QueueOffset: offset, MaxMsgNums: pullBatch, SysFlag: protocol.PullFlagSubscription, Subscription: "*"}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := tr.InvokeSync(ctx, n.Addr(), remoting.NewRequest(remoting.PullMessage, remoting.EncodeHeader(h), nil))
			cancel()
			if err != nil {
				return out, fmt.Errorf("mqtest: pull %s queue %d at %d from %s: %w", topic, q, offset, n, err)
			}
			if resp.Code == remoting.PullNotFound || resp.Code == remoting.PullOffsetMoved {
				break // nothing at or after offset
			}
			if resp.Code != remoting.Success {
				return out, fmt.Errorf("mqtest: pull %s queue %d at %d from %s: %w", topic, q, offset, n, remoting.ErrorFromResponse(resp))
			}
			var rh protocol.PullMessageResponseHeader
			if err := rh.Decode(resp.ExtFields); err != nil {
				return out, fmt.Errorf("mqtest: pull answer of %s: %w", n, err)
			}
			msgs, err := consumer.DecodeMessages(resp.Body, n.BrokerName)
			if err != nil {
				return out, fmt.Errorf("mqtest: pulled records of %s: %w", n, err)
			}
			out = append(out, msgs...)
			if rh.NextBeginOffset <= offset {
				return out, fmt.Errorf("mqtest: %s answered queue %d at %d with next offset %d", n, q, offset, rh.NextBeginOffset)
			}
			offset = rh.NextBeginOffset
			if offset >= rh.MaxOffset {
				break
			}
		}
	}
	return out, nil
}
