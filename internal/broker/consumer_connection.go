package broker

import (
	"context"
	"slices"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// GET_CONSUMER_CONNECTION_LIST (203) and GET_PRODUCER_CONNECTION_LIST (204): who is online in
// a group, as mqadmin consumerConnection / producerConnection and the dashboard ask it
// (RocketMQ AdminBrokerProcessor).

func init() {
	requestNames[remoting.GetConsumerConnectionList] = []NameField{{"consumerGroup", "consumerGroup", GroupName}}
	requestNames[remoting.GetProducerConnectionList] = []NameField{{"producerGroup", "producerGroup", GroupName}}
}

// connectionBody is one member of a group in RocketMQ's Connection JSON form.
type connectionBody struct {
	ClientAddr string `json:"clientAddr"`
	ClientID   string `json:"clientId"`
	Language   string `json:"language"`
	Version    int    `json:"version"`
}

// consumerConnectionBody is the body answering 203 (RocketMQ ConsumerConnection).
type consumerConnectionBody struct {
	ConnectionSet     []connectionBody                     `json:"connectionSet"`
	ConsumeFromWhere  string                               `json:"consumeFromWhere"`
	ConsumeType       string                               `json:"consumeType"`
	MessageModel      string                               `json:"messageModel"`
	SubscriptionTable map[string]protocol.SubscriptionData `json:"subscriptionTable"`
}

// producerConnectionBody is the body answering 204 (RocketMQ ProducerConnection).
type producerConnectionBody struct {
	ConnectionSet []connectionBody `json:"connectionSet"`
}

// registerConnectionLists installs 203 and 204 as admin requests.
func (b *Broker) registerConnectionLists(d *remoting.Dispatcher) {
	b.handle(d, remoting.GetConsumerConnectionList, remoting.ProcessorFunc(b.processConsumerConnectionList), b.adminEx)
	b.handle(d, remoting.GetProducerConnectionList, remoting.ProcessorFunc(b.processProducerConnectionList), b.adminEx)
}

// processConsumerConnectionList answers a group's members and subscriptions, or
// CONSUMER_NOT_ONLINE when no member is registered, with RocketMQ's remark.
func (b *Broker) processConsumerConnectionList(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ConsumerGroupHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	st, ok := b.clients.consumerGroupState(h.ConsumerGroup)
	if !ok || len(st.Connections) == 0 {
		return remoting.NewResponse(remoting.ConsumerNotOnline, "the consumer group["+h.ConsumerGroup+"] not online"), nil
	}
	body := consumerConnectionBody{ConsumeFromWhere: st.ConsumeFromWhere, ConsumeType: st.ConsumeType,
		MessageModel: st.MessageModel, SubscriptionTable: make(map[string]protocol.SubscriptionData, len(st.Subscriptions)),
		ConnectionSet: make([]connectionBody, 0, len(st.Connections))}
	for _, c := range st.Connections {
		body.ConnectionSet = append(body.ConnectionSet, connectionBody{ClientAddr: c.ClientAddr, ClientID: c.ClientID,
			Language: c.Language.String(), Version: int(c.Version)})
	}
	for _, s := range st.Subscriptions {
		body.SubscriptionTable[s.Topic] = s
	}
	return jsonResponse(body)
}

// processProducerConnectionList answers a producer group's members; a group nobody registered
// is SYSTEM_ERROR with RocketMQ's remark.
func (b *Broker) processProducerConnectionList(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	r := remoting.NewFieldReader(req.ExtFields)
	group := r.String("producerGroup", true)
	if err := r.Err(); err != nil {
		return nil, err
	}
	conns := b.clients.consumers.producerConnections(group)
	if conns == nil {
		return remoting.NewResponse(remoting.SystemError, "the producer group["+group+"] not exist"), nil
	}
	return jsonResponse(producerConnectionBody{ConnectionSet: conns})
}

// producerConnections returns a producer group's live members sorted by client id, nil when
// the group is unknown.
func (m *consumerManager) producerConnections(group string) []connectionBody {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.producers[group]
	if !ok {
		return nil
	}
	out := make([]connectionBody, 0, len(p))
	for _, c := range p {
		if !c.ch.Closed() {
			out = append(out, connectionBody{ClientAddr: c.ch.RemoteAddr(), ClientID: c.clientID,
				Language: c.language.String(), Version: int(c.version)})
		}
	}
	slices.SortFunc(out, func(a, b connectionBody) int {
		if a.ClientID != b.ClientID {
			if a.ClientID < b.ClientID {
				return -1
			}
			return 1
		}
		if a.ClientAddr < b.ClientAddr {
			return -1
		}
		if a.ClientAddr > b.ClientAddr {
			return 1
		}
		return 0
	})
	return out
}
