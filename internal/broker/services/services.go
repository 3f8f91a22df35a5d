// Package services builds the broker's services over a core and attaches them: the one list of
// what a node's broker runs beside its core (the node calls Attach; tests that want a whole
// broker call it through brokertest.Config.Attach).
package services

import (
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/ha"
)

// Deps are what the services need from the node beyond the core.
type Deps struct{}

// Attach builds every service over b, in the order they must start, and attaches it.
func Attach(b *broker.Broker, deps Deps) error {
	// The schedule's delay offsets are still the core's (ReplaceDelayOffsets).
	h, err := ha.New(b, ha.Deps{DelayOffsets: b})
	if err != nil {
		return err
	}
	b.Attach(h)
	return nil
}
