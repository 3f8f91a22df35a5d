// Package services builds the broker's services over a core and attaches them: the one list of
// what a node's broker runs beside its core (the node calls Attach; tests that want a whole
// broker call it through brokertest.Config.Attach).
package services

import (
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/admin"
	"github.com/mqgo/mq/internal/broker/reply"
	"github.com/mqgo/mq/internal/broker/stats"
)

// Deps are what the services need from the node beyond the core.
type Deps struct{}

// Attach builds every service over b, in the order they must start, and attaches it.
func Attach(b *broker.Broker, deps Deps) error {
	st := stats.New(b)
	b.Attach(st)
	b.Attach(reply.New(b))
	// The delay cursors are the core's until the schedule service leaves it.
	b.Attach(admin.New(b, admin.Deps{Stats: st, Delays: b}))
	return nil
}
