package transaction

import (
	"testing"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/admin"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/broker/schedule"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// txBroker is a core with the schedule service (a commit goes through it) and the service
// under test.
type txBroker struct {
	*brokertest.Broker
	tx *Service
}

// startIn starts a broker on dir; mutate may change the options.
func startIn(t *testing.T, dir string, mutate func(*broker.Options)) *txBroker {
	t.Helper()
	tb := &txBroker{}
	tb.Broker = brokertest.StartIn(t, dir, brokertest.Config{Mutate: mutate, Attach: func(b *broker.Broker) error {
		sched, err := schedule.New(b)
		if err != nil {
			return err
		}
		b.Attach(sched)
		if tb.tx, err = New(b); err != nil {
			return err
		}
		b.Attach(tb.tx)
		return attachAdmin(b)
	}})
	return tb
}

func start(t *testing.T, mutate func(*broker.Options)) *txBroker {
	t.Helper()
	return startIn(t, t.TempDir(), mutate)
}

// sendCmd is a SEND_MESSAGE_V2 as the official Go client builds it (docs/protocol.md §4.1).
func sendCmd(topic string, queueID int32, props map[string]string, body []byte) *remoting.Command {
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: names.TopicAutoCreate,
		DefaultTopicQueueNums: 4, QueueID: queueID, BornTimestamp: 1700000000123, Flag: 7,
		Properties: message.MarshalProperties(props), BrokerName: "broker-a"}
	ext := make(map[string]string, 16)
	(*protocol.SendMessageRequestHeaderV2)(&h).Encode(ext)
	return remoting.NewRequest(remoting.SendMessageV2, ext, body)
}

// addTopic creates a readable and writable topic through UPDATE_AND_CREATE_TOPIC.
func addTopic(t *testing.T, tb *txBroker, topic string, queues int32) {
	t.Helper()
	wiretest.CreateTopic(t, tb.TCP, tb.Addr, topic, queues)
}

// records returns every record of a queue once the store dispatched what it holds, bodies
// copied.
func records(t *testing.T, tb *txBroker, topic string, queueID int32) []message.Record {
	t.Helper()
	st := tb.Store()
	brokertest.Eventually(t, "dispatched", func() bool { return st.DispatchedPhyOffset() >= st.MaxPhyOffset() })
	end := st.MaxOffsetInQueue(topic, queueID)
	var out []message.Record
	for off := st.MinOffsetInQueue(topic, queueID); off < end; off++ {
		units, err := st.ConsumeQueueUnits(topic, queueID, off, 1)
		if err != nil || len(units) != 1 {
			t.Fatalf("%s/%d@%d: %v", topic, queueID, off, err)
		}
		out = append(out, wiretest.RecordAt(t, tb.Store(), units[0].PhyOffset))
	}
	return out
}

// bodies are the bodies of a queue's records, in queue order.
func bodies(t *testing.T, tb *txBroker, topic string, queueID int32) []string {
	t.Helper()
	var out []string
	for _, r := range records(t, tb, topic, queueID) {
		out = append(out, string(r.Body))
	}
	return out
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
