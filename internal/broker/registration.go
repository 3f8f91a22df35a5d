package broker

import (
	"github.com/mqgo/mq/internal/broker/registrar"
	"github.com/mqgo/mq/internal/broker/tickets"
	"github.com/mqgo/mq/route"
)

// Registration with the name servers is internal/broker/registrar's; the core builds it over
// the broker's identity and topic table and runs it (Run: RegisterFirst, then Run).

// registerTimeout bounds one REGISTER_BROKER (registrar.Timeout); the topic table sizes its
// waits for the metadata writer after it.
const registerTimeout = registrar.Timeout

// coreRegistrar is the broker's registrar. registerChanged is the name the topic table calls
// after a change (topic_config.go); reg are the registrar's rounds, which the core's tests
// count.
type coreRegistrar struct {
	*registrar.Registrar
	reg *tickets.Rounds
}

// registerChanged returns once a registration round carrying the caller's topic change has
// ended (registrar.RegisterChanged).
func (r coreRegistrar) registerChanged() { r.RegisterChanged() }

// newRegistrar builds the registrar over b. The topic table does not exist yet (New loads it
// after), so it is reached through b at each round.
func newRegistrar(b *Broker) coreRegistrar {
	o := b.opts
	r := registrar.New(registrar.Config{
		ClusterName: o.Broker.ClusterName, BrokerName: o.Broker.Name, BrokerAddr: o.BrokerAddr,
		BrokerID:             o.Broker.ID,
		NameServers:          o.NameServers,
		Transport:            o.Transport,
		Schedule:             o.registerSchedule(),
		DisableForceRegister: o.Broker.DisableForceRegister,
		Log:                  b.log,
		WholeTopics:          func() route.TopicConfigSerializeWrapper { return b.topics.registrationWhole() },
		TakePendingTopics:    func() []string { return b.topics.takeRegistrationPending() },
		IncrementTopics: func(names []string) route.TopicConfigSerializeWrapper {
			return b.topics.registrationIncrement(names)
		},
		HAAddr:     b.HAAddr,
		Registered: b.seams.onRegistered,
	})
	return coreRegistrar{Registrar: r, reg: r.Rounds()}
}

// registerSchedule is when the periodic rounds run (registrar.NewSchedule: RocketMQ's
// BrokerController.start schedule over Periods).
func (o Options) registerSchedule() registrar.Schedule {
	return registrar.NewSchedule(o.Periods.RegisterNameServerPeriodMin, o.Periods.RegisterNameServerPeriod)
}
