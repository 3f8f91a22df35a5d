package schedule

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/admin"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// schedBroker is a core with the service under test attached.
type schedBroker struct {
	*brokertest.Broker
	s *Service
}

// startIn starts a broker on dir (reuse a dir to test restarts); mutate may change the options.
func startIn(t testing.TB, dir string, mutate func(*broker.Options)) *schedBroker {
	t.Helper()
	tb := &schedBroker{}
	tb.Broker = brokertest.StartIn(t, dir, brokertest.Config{Mutate: mutate, Attach: func(b *broker.Broker) error {
		var err error
		if tb.s, err = New(b); err != nil {
			return err
		}
		b.Attach(tb.s)
		return attachAdmin(b)
	}})
	return tb
}

func start(t testing.TB, mutate func(*broker.Options)) *schedBroker {
	t.Helper()
	return startIn(t, t.TempDir(), mutate)
}

// testDelays are short delay levels, 1 to 5.
var testDelays = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 400 * time.Millisecond,
	500 * time.Millisecond, 600 * time.Millisecond}

func withTestDelays(o *broker.Options) { o.Timers.DelayLevels = testDelays }

var testBornHost = netip.MustParseAddrPort("10.1.2.3:45678")

// sendCmd is a SEND_MESSAGE (long header keys) as the official Go client builds it
// (docs/protocol.md §4.1).
func sendCmd(topic string, queueID int32, props map[string]string, body []byte) *remoting.Command {
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: names.TopicAutoCreate,
		DefaultTopicQueueNums: 4, QueueID: queueID, BornTimestamp: 1700000000123, Flag: 7,
		Properties: message.MarshalProperties(props), BrokerName: "broker-a"}
	ext := make(map[string]string, 16)
	h.Encode(ext)
	return remoting.NewRequest(remoting.SendMessage, ext, body)
}

// addTopic creates a readable and writable topic through UPDATE_AND_CREATE_TOPIC.
func addTopic(t testing.TB, tb *schedBroker, topic string, queues int32) {
	t.Helper()
	wiretest.CreateTopic(t, tb.TCP, tb.Addr, topic, queues)
}

// storedRecord is a decoded copy of a stored record.
type storedRecord struct {
	message.Record
	Props map[string]string
}

// readAt returns the message at a queue offset, waiting until it is dispatched.
func readAt(t *testing.T, tb *schedBroker, topic string, qid int32, off int64) storedRecord {
	t.Helper()
	brokertest.Eventually(t, topic+" message dispatched", func() bool { return tb.Store().MaxOffsetInQueue(topic, qid) > off })
	r := tb.Store().GetMessage("", topic, qid, off, 1, 0, nil)
	defer r.Release()
	if r.Status != storage.Found {
		t.Fatalf("get %s/%d@%d: %v", topic, qid, off, r.Status)
	}
	var rec storedRecord
	if _, err := message.DecodeRecord(bytes.Clone(r.Messages[0]), &rec.Record, true); err != nil {
		t.Fatal(err)
	}
	rec.Props = message.UnmarshalProperties(rec.Properties)
	return rec
}

// attachAdmin attaches the admin service, whose topic admin the tests create topics with.
func attachAdmin(b *broker.Broker) error {
	s, err := admin.New(b, admin.Deps{})
	if err != nil {
		return err
	}
	b.Attach(s)
	return nil
}
