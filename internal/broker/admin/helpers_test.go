package admin

import (
	"net/netip"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/broker/stats"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// env is a test broker with the statistics and admin services attached.
type env struct {
	*brokertest.Broker
	stats *stats.Service
}

// start starts a broker with the statistics and admin services; delays, when not nil, are the
// schedule cursors the admin reports.
func start(t testing.TB, mutate func(*broker.Options), delays DelayOffsets) *env {
	t.Helper()
	e := &env{}
	e.Broker = brokertest.Start(t, brokertest.Config{Mutate: mutate, Attach: func(b *broker.Broker) error {
		e.stats = stats.New(b)
		b.Attach(e.stats)
		s, err := New(b, Deps{Stats: e.stats, Delays: delays})
		if err != nil {
			return err
		}
		b.Attach(s)
		return nil
	}})
	return e
}

func adminCall(t *testing.T, tr remoting.Transport, tb *env, code int32, h remoting.Header, body []byte) *remoting.Command {
	t.Helper()
	var ext map[string]string
	if h != nil {
		ext = remoting.EncodeHeader(h)
	}
	return brokertest.Invoke(t, tr, tb.Addr, remoting.NewRequest(code, ext, body))
}

func wantOK(t *testing.T, resp *remoting.Command) {
	t.Helper()
	if resp.Code != remoting.Success {
		t.Fatalf("response %d %q", resp.Code, resp.Remark)
	}
}

// addTopic creates a readable and writable topic through UPDATE_AND_CREATE_TOPIC.
func addTopic(t testing.TB, tb *env, topic string, queues int32) {
	t.Helper()
	wiretest.CreateTopic(t, tb.TCP, tb.Addr, topic, queues)
}

var testBornHost = netip.MustParseAddrPort("127.0.0.1:40000")

// put stores one message straight into the store.
func put(t *testing.T, tb *env, topic string, queueID int32, body string) storage.PutResult {
	t.Helper()
	m := &storage.Message{Topic: topic, QueueID: queueID, Body: []byte(body), Flag: 7,
		Properties:    message.MarshalProperties(map[string]string{message.PropertyUniqKey: body}),
		BornTimestamp: time.Now().UnixMilli() - 1000, BornHost: testBornHost, StoreHost: tb.Messages().StoreHost()}
	res, err := tb.Store().PutMessage(m)
	if err != nil {
		t.Fatalf("put %s: %v", topic, err)
	}
	return res
}

// putMsgs stores n messages in a queue and waits until they are dispatched.
func putMsgs(t *testing.T, tb *env, topic string, queueID int32, n int, tag, prefix string) {
	t.Helper()
	wiretest.PutMsgs(t, tb.Store(), tb.Messages().StoreHost(), topic, queueID, n, tag, prefix)
}

// delays is a fixed set of schedule cursors.
type delays map[int32]int64

func (d delays) DelayOffsets() protocol.DelayOffsetSerializeWrapper {
	return protocol.DelayOffsetSerializeWrapper{OffsetTable: d}
}
