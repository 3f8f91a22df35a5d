package broker

import (
	"github.com/mqgo/mq/internal/broker/registrar"
	"github.com/mqgo/mq/route"
)

// Registration with the name servers is internal/broker/registrar's; the core builds it over
// the broker's identity and topic table and runs it (Run: RegisterFirst, then Run).

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
		WholeTopics:          func() route.TopicConfigSerializeWrapper { return b.withPermission(b.topics.RegistrationWhole()) },
		TakePendingTopics:    func() []string { return b.topics.TakeRegistrationPending() },
		IncrementTopics: func(names []string) route.TopicConfigSerializeWrapper {
			return b.withPermission(b.topics.RegistrationIncrement(names))
		},
		HAAddr:     b.HAAddr,
		Registered: b.seams.onRegistered,
	})
}

// registerSchedule is when the periodic rounds run (registrar.NewSchedule: RocketMQ's
// BrokerController.start schedule over Periods).
func (o Options) registerSchedule() registrar.Schedule {
	return registrar.NewSchedule(o.Periods.RegisterNameServerPeriodMin, o.Periods.RegisterNameServerPeriod)
}
