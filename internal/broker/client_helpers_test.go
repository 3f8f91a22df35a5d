package broker

import (
	"context"
	"encoding/json"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Helpers for the consume-side tests: heartbeats, pulls, stored messages.

// consumerList asks GET_CONSUMER_LIST_BY_GROUP.
func consumerList(t *testing.T, tr remoting.Transport, addr, group string) (int32, []string) {
	t.Helper()
	resp := invoke(t, tr, addr, remoting.NewRequest(remoting.GetConsumerListByGroup,
		remoting.EncodeHeader(&protocol.ConsumerGroupHeader{ConsumerGroup: group}), nil))
	var body protocol.GetConsumerListByGroupResponseBody
	if len(resp.Body) > 0 {
		if err := json.Unmarshal(resp.Body, &body); err != nil {
			t.Fatalf("consumer list body %q: %v", resp.Body, err)
		}
	}
	return resp.Code, body.ConsumerIDList
}

// pullHeader is a push consumer's pull: suspend set, subscription from the heartbeat.
func pullHeader(group, topic string, queueID int32, offset int64) *protocol.PullMessageRequestHeader {
	return &protocol.PullMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queueID,
		QueueOffset: offset, MaxMsgNums: 32, SysFlag: protocol.PullFlagSuspend, SuspendTimeoutMillis: 20000,
		ExpressionType: protocol.ExpressionTag, BrokerName: "broker-a"}
}

func pullCmd(h *protocol.PullMessageRequestHeader) *remoting.Command {
	return remoting.NewRequest(remoting.PullMessage, remoting.EncodeHeader(h), nil)
}

// pullResult is a decoded pull response.
type pullResult struct {
	code   int32
	remark string
	hdr    protocol.PullMessageResponseHeader
	msgs   []message.Record
	bodies []string
}

func decodePull(t *testing.T, resp *remoting.Command) pullResult {
	t.Helper()
	r := pullResult{code: resp.Code, remark: resp.Remark}
	switch resp.Code {
	case remoting.Success, remoting.PullNotFound, remoting.PullRetryImmediately, remoting.PullOffsetMoved:
		if err := r.hdr.Decode(resp.ExtFields); err != nil {
			t.Fatalf("pull response header %v: %v", resp.ExtFields, err)
		}
	}
	for b := resp.Body; len(b) > 0; {
		var rec message.Record
		n, err := message.DecodeRecord(b, &rec, true)
		if err != nil {
			t.Fatalf("pull body record %d: %v", len(r.msgs), err)
		}
		r.msgs = append(r.msgs, rec)
		r.bodies = append(r.bodies, string(rec.Body))
		b = b[n:]
	}
	return r
}

// pull sends a pull and decodes the answer.
func pull(t *testing.T, tr remoting.Transport, addr string, h *protocol.PullMessageRequestHeader) pullResult {
	t.Helper()
	return decodePull(t, invoke(t, tr, addr, pullCmd(h)))
}

var consumeTestBornHost = netip.MustParseAddrPort("127.0.0.1:40000")

// putMsgs stores n messages in a queue with the given tag ("" for none) and waits until they
// are dispatched. Bodies are "<prefix>-<i>".
func putMsgs(t *testing.T, tb *testBroker, topic string, queueID int32, n int, tag, prefix string) {
	t.Helper()
	wiretest.PutMsgs(t, tb.Store(), tb.storeHost, topic, queueID, n, tag, prefix)
}

// addTopic creates a readable and writable topic.
func addTopic(tb *testBroker, topic string, queues int32) {
	tb.topics.Update(TopicConfig{TopicName: topic, ReadQueueNums: queues, WriteQueueNums: queues, Perm: 6})
}

// notifyRecorder counts NOTIFY_CONSUMER_IDS_CHANGED per group received by one client.
type notifyRecorder struct {
	mu      sync.Mutex
	groups  map[string]int
	ch      chan string
	pending map[string]int // received for a group no wait has taken yet
}

func recordNotifies(tr remoting.Transport) *notifyRecorder {
	r := &notifyRecorder{groups: map[string]int{}, ch: make(chan string, 100), pending: map[string]int{}}
	tr.RegisterProcessor(remoting.NotifyConsumerIDsChanged, remoting.ProcessorFunc(
		func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			g := req.Ext("consumerGroup")
			r.mu.Lock()
			r.groups[g]++
			r.mu.Unlock()
			r.ch <- g
			return nil, nil
		}))
	return r
}

// waitNotify waits for one notification of group. Notifications of other groups are kept for
// their own waits: the broker sends them concurrently, so they may arrive in any order.
func (r *notifyRecorder) waitNotify(t *testing.T, group string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		if r.pending[group] > 0 {
			r.pending[group]--
			return
		}
		select {
		case g := <-r.ch:
			r.pending[g]++
		case <-timeout:
			t.Fatalf("no NOTIFY_CONSUMER_IDS_CHANGED for %s", group)
		}
	}
}

// noNotify checks that no notification arrives for a short while.
func (r *notifyRecorder) noNotify(t *testing.T, group string) {
	t.Helper()
	timeout := time.After(200 * time.Millisecond)
	for {
		select {
		case g := <-r.ch:
			if g == group {
				t.Fatalf("unexpected NOTIFY_CONSUMER_IDS_CHANGED for %s", group)
			}
			r.pending[g]++
		case <-timeout:
			return
		}
	}
}

// newTCPClient is a second TCP client (a second connection) closed at cleanup.
func newTCPClient(t *testing.T) *remoting.Client {
	c := remoting.NewClient(remoting.ClientOptions{ScanInterval: 20 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	return c
}
