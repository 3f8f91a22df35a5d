package reply

import (
	"testing"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
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

// createTopic creates a readable and writable topic through UPDATE_AND_CREATE_TOPIC.
func createTopic(t testing.TB, tb *env, topic string, queues int32) {
	t.Helper()
	wiretest.CreateTopic(t, tb.TCP, tb.Addr, topic, queues)
}
