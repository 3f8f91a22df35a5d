// Package services builds the broker's services over a core and attaches them: the one list of
// what a node's broker runs beside its core (the node calls Attach; tests that want a whole
// broker call it through brokertest.Config.Attach).
package services

import (
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/admin"
	"github.com/mqgo/mq/internal/broker/assignment"
	"github.com/mqgo/mq/internal/broker/ha"
	"github.com/mqgo/mq/internal/broker/locks"
	"github.com/mqgo/mq/internal/broker/pop"
	"github.com/mqgo/mq/internal/broker/reply"
	"github.com/mqgo/mq/internal/broker/schedule"
	"github.com/mqgo/mq/internal/broker/stats"
	"github.com/mqgo/mq/internal/broker/transaction"
)

// Deps are what the services need from the node beyond the core.
type Deps struct {
	// ACL is the node's ACL, which the admin service's ACL codes administer; nil with ACL off.
	ACL admin.ACLAdmin
}

// Attach builds every service over b, in the order they must start, and attaches it.
func Attach(b *broker.Broker, deps Deps) error {
	// Scheduled delivery first: a commit of the transaction service goes through it.
	sched, err := schedule.New(b)
	if err != nil {
		return err
	}
	b.Attach(sched)
	tx, err := transaction.New(b)
	if err != nil {
		return err
	}
	b.Attach(tx)
	st := stats.New(b)
	b.Attach(st)
	b.Attach(reply.New(b))
	b.Attach(locks.New(b))
	// Before HA: a slave's metadata sync installs the master's request modes in it.
	as, err := assignment.New(b)
	if err != nil {
		return err
	}
	b.Attach(as)
	h, err := ha.New(b, ha.Deps{DelayOffsets: sched, RequestModes: as})
	if err != nil {
		return err
	}
	b.Attach(h)
	ad, err := admin.New(b, admin.Deps{Stats: st, Delays: sched, ACL: deps.ACL})
	if err != nil {
		return err
	}
	b.Attach(ad)
	p, err := pop.New(b)
	if err != nil {
		return err
	}
	b.Attach(p)
	return nil
}
