package admin

import (
	"context"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// GET_CONSUMER_CONNECTION_LIST (203) and GET_PRODUCER_CONNECTION_LIST (204): who is online in
// a group, as mqadmin consumerConnection / producerConnection and the dashboard ask it
// (RocketMQ AdminBrokerProcessor).

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

// processConsumerConnectionList answers a group's members and subscriptions, or
// CONSUMER_NOT_ONLINE when no member is registered, with RocketMQ's remark.
func (s *Service) processConsumerConnectionList(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ConsumerGroupHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	st, ok := s.core.Clients().ConsumerGroup(h.ConsumerGroup)
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
func (s *Service) processProducerConnectionList(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	r := remoting.NewFieldReader(req.ExtFields)
	group := r.String("producerGroup", true)
	if err := r.Err(); err != nil {
		return nil, err
	}
	conns, ok := s.core.Clients().Producers(group)
	if !ok {
		return remoting.NewResponse(remoting.SystemError, "the producer group["+group+"] not exist"), nil
	}
	body := producerConnectionBody{ConnectionSet: make([]connectionBody, 0, len(conns))}
	for _, c := range conns {
		body.ConnectionSet = append(body.ConnectionSet, connectionBody{ClientAddr: c.Channel.RemoteAddr(),
			ClientID: c.ClientID, Language: c.Language.String(), Version: int(c.Version)})
	}
	return jsonResponse(body)
}
