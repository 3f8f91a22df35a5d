package broker_test

import (
	"os"
	"testing"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/services"
)

// TestMain gives package broker's test brokers the services a node's broker runs: the core's
// tests of sends, retries and slave syncs see delayed messages delivered and half messages
// kept, as a node serves them.
func TestMain(m *testing.M) {
	broker.AttachServicesForTest = func(b *broker.Broker) error { return services.Attach(b, services.Deps{}) }
	os.Exit(m.Run())
}
