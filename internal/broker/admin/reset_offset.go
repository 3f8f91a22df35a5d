package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mqgo/mq/internal/broker/clients"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Admin requests the broker relays to a group's consumers (RocketMQ Broker2Client):
// INVOKE_BROKER_TO_RESET_OFFSET (222), answered by telling each consumer with
// RESET_CONSUMER_CLIENT_OFFSET (220), INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223), answered
// by asking each with GET_CONSUMER_STATUS_FROM_CLIENT (221), and GET_CONSUMER_RUNNING_INFO
// (307), passed on to the one client it names.

const (
	// minResetClientVersion is MQVersion.V3_0_7_SNAPSHOT's ordinal: older clients do not
	// understand 220 and 221, and RocketMQ refuses to act for them.
	minResetClientVersion int16 = 28
	// minRunningInfoClientVersion is MQVersion.V3_1_8_SNAPSHOT's ordinal, the first client
	// version RocketMQ relays GET_CONSUMER_RUNNING_INFO to.
	minRunningInfoClientVersion int16 = 77
	// clientRequestTimeout is RocketMQ's timeout for the requests Broker2Client sends.
	clientRequestTimeout = 5 * time.Second
	// callClientTimeout is RocketMQ's timeout for a request relayed to one client (callClient).
	callClientTimeout = 10 * time.Second
)

// resetOffsetTable computes where each queue of topic on this broker moves: the first message
// stored at or after timestamp (the end of the queue for -1), taken when force is set or when
// it is behind the group's committed offset (RocketMQ never moves a group forward unforced). A
// queue the group never committed means the group does not consume the topic here.
func (s *Service) resetOffsetTable(topic, group string, timestamp int64, force bool) (map[protocol.MessageQueue]int64, *remoting.Command) {
	tc, ok := s.core.Topics().Get(topic)
	if !ok {
		return nil, remoting.NewResponse(remoting.SystemError,
			"[reset-offset] reset offset failed, no topic in this broker. topic="+topic)
	}
	table := make(map[protocol.MessageQueue]int64, tc.WriteQueueNums)
	for q := range tc.WriteQueueNums {
		committed := s.core.Offsets().Query(group, topic, q)
		if committed == -1 {
			return nil, remoting.NewResponse(remoting.SystemError, fmt.Sprintf("THe consumer group <%s> not exist", group))
		}
		var target int64
		if timestamp == -1 {
			target = s.core.Store().MaxOffsetInQueue(topic, q)
		} else {
			target = s.core.Store().GetOffsetInQueueByTime(topic, q, timestamp)
		}
		target = max(target, 0)
		if !force && target >= committed {
			target = committed
		}
		table[protocol.MessageQueue{Topic: topic, BrokerName: s.core.Options().Broker.Name, QueueID: int(q)}] = target
	}
	return table, nil
}

// processResetOffset handles INVOKE_BROKER_TO_RESET_OFFSET (222): it commits the new offsets,
// tells every online consumer of the group where to resume (220, one-way) and answers the
// table. Without an online consumer it answers CONSUMER_NOT_ONLINE and moves nothing, so that
// mqadmin falls back to committing the offsets itself, as it does against RocketMQ.
func (s *Service) processResetOffset(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ResetOffsetRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	log := s.log.With().Str("service", "reset-offset").Str("topic", h.Topic).Str("group", h.Group).
		Int64("timestamp", h.Timestamp).Logger()
	log.Info().Bool("force", h.IsForce).Str("by", ch.RemoteAddr()).Msg("reset offset requested")
	table, refusal := s.resetOffsetTable(h.Topic, h.Group, h.Timestamp, h.IsForce)
	if refusal != nil {
		return refusal, nil
	}
	members := s.core.Clients().Members(h.Group)
	if len(members) == 0 {
		return remoting.NewResponse(remoting.ConsumerNotOnline, fmt.Sprintf(
			"Consumer not online, so can not reset offset, Group: %s Topic: %s Timestamp: %d", h.Group, h.Topic, h.Timestamp)), nil
	}
	for _, m := range members {
		if m.Version < minResetClientVersion {
			return remoting.NewResponse(remoting.SystemError,
				fmt.Sprintf("the client does not support this feature. version=%d", m.Version)), nil
		}
	}
	for mq, off := range table {
		s.core.Offsets().Commit(h.Group, h.Topic, int32(mq.QueueID), off)
	}
	notice := &protocol.ResetOffsetRequestHeader{Topic: h.Topic, Group: h.Group, Timestamp: h.Timestamp}
	for _, m := range members {
		// RocketMQ picks the C++ form by the language of the tool asking, so that a C++ tool
		// resets C++ consumers only; by the consumer's, every member can read what it gets.
		body := protocol.EncodeResetOffsetBody(table)
		if m.Language == remoting.LanguageCPP {
			body = protocol.EncodeResetOffsetBodyForC(table)
		}
		if err := m.Channel.InvokeOneway(remoting.NewRequest(remoting.ResetConsumerClientOffset, remoting.EncodeHeader(notice), body)); err != nil {
			log.Warn().Err(err).Str("client", m.ClientID).Msg("reset offset not delivered")
			continue
		}
		log.Info().Str("client", m.ClientID).Msg("consumer told to reset offset")
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = protocol.EncodeResetOffsetBody(table)
	return resp, nil
}

// processGetConsumerStatus handles INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223): it asks each
// online consumer of the group (or only the client whose id is clientAddr, RocketMQ's use of
// that field) for its offsets of the topic with 221 and answers them by client id. A client
// that fails to answer is left out, as in RocketMQ.
func (s *Service) processGetConsumerStatus(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetConsumerStatusRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	members := s.core.Clients().Members(h.Group)
	if len(members) == 0 {
		return remoting.NewResponse(remoting.SystemError,
			fmt.Sprintf("No Any Consumer online in the consumer group: [%s]", h.Group)), nil
	}
	status := &protocol.ConsumerStatusBody{ConsumerTable: map[string]map[protocol.MessageQueue]int64{}}
	ask := &protocol.GetConsumerStatusRequestHeader{Topic: h.Topic, Group: h.Group}
	for _, m := range members {
		if m.Version < minResetClientVersion {
			return remoting.NewResponse(remoting.SystemError, fmt.Sprintf(
				"The Consumer <%s> Version <%d> too low to finish, please upgrade it to V3_0_7_SNAPSHOT", m.ClientID, m.Version)), nil
		}
		if h.ClientAddr != "" && h.ClientAddr != m.ClientID {
			continue
		}
		if _, seen := status.ConsumerTable[m.ClientID]; !seen {
			if offsets, ok := s.askConsumerStatus(ctx, m, ask); ok {
				status.ConsumerTable[m.ClientID] = offsets
			}
		}
		if h.ClientAddr != "" {
			break
		}
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = protocol.EncodeConsumerStatusBody(status)
	return resp, nil
}

// askConsumerStatus sends 221 to one consumer and returns its offsets.
func (s *Service) askConsumerStatus(ctx context.Context, m clients.Conn, ask *protocol.GetConsumerStatusRequestHeader) (map[protocol.MessageQueue]int64, bool) {
	ctx, cancel := context.WithTimeout(ctx, clientRequestTimeout)
	defer cancel()
	resp, err := m.Channel.InvokeSync(ctx, remoting.NewRequest(remoting.GetConsumerStatusFromClient, remoting.EncodeHeader(ask), nil))
	if err != nil || resp.Code != remoting.Success || resp.Body == nil {
		s.log.Debug().Str("service", "consumer-status").Str("client", m.ClientID).Err(err).Msg("consumer status not answered")
		return nil, false
	}
	body, err := protocol.DecodeConsumerStatusBody(resp.Body)
	if err != nil {
		s.log.Debug().Str("service", "consumer-status").Str("client", m.ClientID).Err(err).Msg("consumer status unreadable")
		return nil, false
	}
	return body.MessageQueueTable, true
}

// processConsumerRunningInfo relays GET_CONSUMER_RUNNING_INFO (307) to the consumer it names
// and answers what the consumer answered, as RocketMQ's AdminBrokerProcessor does.
func (s *Service) processConsumerRunningInfo(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetConsumerRunningInfoRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	return s.callConsumer(ctx, req, h.ConsumerGroup, h.ClientID), nil
}

// callConsumer sends req, header and body unchanged, to one client of a group and returns its
// answer (RocketMQ's callConsumer).
func (s *Service) callConsumer(ctx context.Context, req *remoting.Command, group, clientID string) *remoting.Command {
	m, ok := s.core.Clients().Member(group, clientID)
	if !ok {
		return remoting.NewResponse(remoting.SystemError, fmt.Sprintf("The Consumer <%s> <%s> not online", group, clientID))
	}
	if m.Version < minRunningInfoClientVersion {
		return remoting.NewResponse(remoting.SystemError, fmt.Sprintf(
			"The Consumer <%s> Version <%d> too low to finish, please upgrade it to V3_1_8_SNAPSHOT", clientID, m.Version))
	}
	ctx, cancel := context.WithTimeout(ctx, callClientTimeout)
	defer cancel()
	answer, err := m.Channel.InvokeSync(ctx, remoting.NewRequest(req.Code, req.ExtFields, req.Body))
	if errors.Is(err, remoting.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return remoting.NewResponse(remoting.ConsumeMsgTimeout, fmt.Sprintf("consumer <%s> <%s> Timeout: %v", group, clientID, err))
	}
	if err != nil {
		return remoting.NewResponse(remoting.SystemError, fmt.Sprintf("invoke consumer <%s> <%s> Exception: %v", group, clientID, err))
	}
	resp := remoting.NewResponse(answer.Code, answer.Remark)
	resp.ExtFields, resp.Body = answer.ExtFields, answer.Body
	return resp
}
