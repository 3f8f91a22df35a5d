package reply

import (
	"testing"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// env is a test broker with the reply service attached.
type env struct {
	*brokertest.Broker
	svc *Service
}

// start starts a broker with the reply service; mutate may change its options.
func start(t testing.TB, mutate func(*broker.Options)) *env {
	t.Helper()
	e := &env{}
	e.Broker = brokertest.Start(t, brokertest.Config{Mutate: mutate, Attach: func(b *broker.Broker) error {
		e.svc = New(b)
		b.Attach(e.svc)
		return nil
	}})
	return e
}

// createTopic creates a topic with queues read and write queues through UPDATE_AND_CREATE_TOPIC.
func createTopic(t testing.TB, tb *env, topic string, queues int32) {
	t.Helper()
	h := protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: names.TopicAutoCreate, ReadQueueNums: queues,
		WriteQueueNums: queues, Perm: 6}
	resp := brokertest.Invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(&h), nil))
	if resp.Code != remoting.Success {
		t.Fatalf("create topic %s: %d %q", topic, resp.Code, resp.Remark)
	}
}
