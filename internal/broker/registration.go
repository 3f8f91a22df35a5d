package broker

import (
	"fmt"

	"github.com/mqgo/mq/internal/broker/registrar"
	"github.com/mqgo/mq/route"
)

// Registration with the name servers is internal/broker/registrar's; the core builds it over
// the broker's identity, topic table and permission and runs it (Run: RegisterFirst, then Run).

// newRegistrar builds the registrar over b. The topic table does not exist yet (New loads it
// after), so it is reached through b at each round.
func newRegistrar(b *Broker) *registrar.Registrar {
	o := b.opts
	return registrar.New(registrar.Config{
		ClusterName: o.Broker.ClusterName, BrokerName: o.Broker.Name, BrokerAddr: o.BrokerAddr,
		BrokerID:             o.Broker.ID,
		NameServers:          o.NameServers,
		Transport:            o.Transport,
		Schedule:             o.registerSchedule(),
		DisableForceRegister: o.Broker.DisableForceRegister,
		Log:                  b.log,
		WholeTopics:          func() route.TopicConfigSerializeWrapper { return b.topics.RegistrationWhole() },
		TakePendingTopics:    func() []string { return b.topics.TakeRegistrationPending() },
		IncrementTopics: func(names []string) route.TopicConfigSerializeWrapper {
			return b.topics.RegistrationIncrement(names)
		},
		Permission: b.perm.Load,
		HAAddr:     b.HAAddr,
		Registered: b.seams.onRegistered,
	})
}

// registerSchedule is when the periodic rounds run (registrar.NewSchedule: RocketMQ's
// BrokerController.start schedule over Periods).
func (o Options) registerSchedule() registrar.Schedule {
	return registrar.NewSchedule(o.Periods.RegisterNameServerPeriodMin, o.Periods.RegisterNameServerPeriod)
}

// The broker's permission (RocketMQ's brokerPermission), the one setting UPDATE_BROKER_CONFIG
// changes at run time: a broker that is not both readable and writable registers every topic
// with that permission instead of its own (the registrar's withPermission). The admin service
// persists it and sets it again at start (internal/broker/admin's config_file.go).

// Permission is the broker's permission (route.PermReadWrite unless changed).
func (b *Broker) Permission() int32 { return b.perm.Load() }

// CheckPermission reports whether p is a permission a broker may take: read, write or both
// (RocketMQ takes any integer; a broker with the inherit or priority bit would hand them to
// every topic).
func CheckPermission(p int32) error {
	if p&^route.PermReadWrite != 0 {
		return fmt.Errorf("brokerPermission %d is not 0, 2 (write), 4 (read) or 6 (read and write)", p)
	}
	return nil
}

// SetPermission changes the broker's permission and returns once a registration round has
// carried it to the name servers (or the round's wait ran out; before Run, at once: the first
// round carries it). The topics' registered form changes, so every topic is registered again
// under a new data version.
func (b *Broker) SetPermission(p int32) error {
	if err := CheckPermission(p); err != nil {
		return err
	}
	if old := b.perm.Swap(p); old != p {
		b.log.Info().Int32("from", old).Int32("to", p).Msg("broker permission changed")
		b.topics.PendAll()
		b.registrar.RegisterChanged()
	}
	return nil
}
