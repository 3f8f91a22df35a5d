package reply

import (
	"testing"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/admin"
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
		return attachAdmin(b)
	}})
	return e
}

// createTopic creates a readable and writable topic through UPDATE_AND_CREATE_TOPIC.
func createTopic(t testing.TB, tb *env, topic string, queues int32) {
	t.Helper()
	wiretest.CreateTopic(t, tb.TCP, tb.Addr, topic, queues)
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
