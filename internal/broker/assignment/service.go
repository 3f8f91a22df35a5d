package assignment

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// Pool sizes of the service's requests: RocketMQ's loadBalanceProcessorThreadPoolNums (32)
// workers, and room for loadBalanceQueueCapacity waiting requests, ours smaller than its
// 100,000 as the reply service's.
const (
	loadBalanceThreads       = 32
	loadBalanceQueueCapacity = 10000
)

// maxBodyBytes bounds the bodies of QUERY_ASSIGNMENT and SET_MESSAGE_REQUEST_MODE (ours): two
// names, a client id and a few words fit in far less.
const maxBodyBytes = 64 << 10

// Service serves the assignment codes over a broker core.
type Service struct {
	core   *broker.Broker
	log    zerolog.Logger
	modes  *modes
	routes *routeCache
	pool   *remoting.Executor
}

// New builds the service over core, reading messageRequestMode.json. Attach it to core before
// Register.
func New(core *broker.Broker) (*Service, error) {
	opts := core.Options()
	log := core.Logger().With().Str("component", "assignment").Str("broker", opts.Broker.Name).Logger()
	m, err := loadModes(core.Store().ConfigPath(modesFile), log)
	if err != nil {
		return nil, err
	}
	return &Service{core: core, log: log, modes: m, routes: newRouteCache(core, DefaultRoutePollInterval),
		pool: remoting.NewExecutor("assignment", loadBalanceThreads, loadBalanceQueueCapacity)}, nil
}

// Handlers are QUERY_ASSIGNMENT, SET_MESSAGE_REQUEST_MODE and GET_ALL_MESSAGE_REQUEST_MODE.
// Their names travel in bodies, which the processors check.
func (s *Service) Handlers() []broker.Handler {
	return []broker.Handler{
		{Code: remoting.QueryAssignment, Proc: remoting.ProcessorFunc(s.queryAssignment), Pool: s.pool, MaxBody: maxBodyBytes},
		{Code: remoting.SetMessageRequestMode, Proc: remoting.ProcessorFunc(s.setMessageRequestMode), Pool: s.pool,
			MaxBody: maxBodyBytes},
		{Code: remoting.GetAllMessageRequestMode, Proc: remoting.ProcessorFunc(s.getAllMessageRequestMode),
			Pool: s.core.Pools().Admin},
	}
}

// Run has no loop: routes are fetched when a query needs them.
func (s *Service) Run(context.Context) error { return nil }

// Close has nothing left to write: every change was written before it was answered.
func (s *Service) Close() error { return nil }

// decodeBody decodes a bounded JSON body, or answers why it cannot. The dispatcher refuses a
// longer body first (Handler.MaxBody); the check here keeps the bound where the body is read.
func decodeBody(what string, req *remoting.Command, v any) error {
	if len(req.Body) > maxBodyBytes {
		return &remoting.ResponseError{Code: remoting.SystemError,
			Remark: fmt.Sprintf("%s takes at most %d bytes of body; this request carried %d", what, maxBodyBytes, len(req.Body))}
	}
	if err := protocol.DecodeJSONBody(what, req.Body, v); err != nil {
		return &remoting.ResponseError{Code: remoting.SystemError, Remark: err.Error()}
	}
	return nil
}

// checkNames refuses a body's topic or group that no request may carry.
func checkNames(topic, group string) error {
	if err := names.CheckTopic(topic); err != nil {
		return &remoting.ResponseError{Code: remoting.SystemError, Remark: "topic: " + err.Error()}
	}
	return checkGroup(group)
}

func checkGroup(group string) error {
	if err := names.CheckGroup(group); err != nil {
		return &remoting.ResponseError{Code: remoting.SystemError, Remark: "consumerGroup: " + err.Error()}
	}
	return nil
}

// setMessageRequestMode serves SET_MESSAGE_REQUEST_MODE (QueryAssignmentProcessor
// .setMessageRequestMode): the topic must exist and not be a retry topic, the group must exist
// (or be auto-created); the mode is written before the answer.
func (s *Service) setMessageRequestMode(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var b protocol.SetMessageRequestModeRequestBody
	if err := decodeBody("SET_MESSAGE_REQUEST_MODE", req, &b); err != nil {
		return nil, err
	}
	if err := checkNames(b.Topic, b.ConsumerGroup); err != nil {
		return nil, err
	}
	switch b.Mode {
	case "":
		b.Mode = config.MessageRequestModePull // Java's field default
	case config.MessageRequestModePull, config.MessageRequestModePop:
	default:
		return nil, &remoting.ResponseError{Code: remoting.SystemError, Remark: fmt.Sprintf(
			"mode %s is neither %s nor %s", names.Quote(b.Mode, len(b.Mode)), config.MessageRequestModePull, config.MessageRequestModePop)}
	}
	if names.IsRetryTopic(b.Topic) {
		return nil, &remoting.ResponseError{Code: remoting.NoPermission, Remark: "retry topic is not allowed to set mode"}
	}
	if _, ok := s.core.Topics().Get(b.Topic); !ok {
		return nil, &remoting.ResponseError{Code: remoting.TopicNotExist, Remark: "topic[" + b.Topic + "] not exist"}
	}
	if _, err := s.core.Groups().Lookup(b.ConsumerGroup); err != nil {
		return nil, &remoting.ResponseError{Code: remoting.SubscriptionGroupNotExist,
			Remark: broker.GroupRemark(err, "subscription group does not exist")}
	}
	if err := s.modes.set(b); err != nil {
		return nil, &remoting.ResponseError{Code: remoting.SystemError, Remark: err.Error()}
	}
	s.log.Info().Str("topic", b.Topic).Str("group", b.ConsumerGroup).Str("mode", b.Mode).
		Int("pop_share_queue_num", b.PopShareQueueNum).Str("addr", ch.RemoteAddr()).Msg("message request mode set")
	return remoting.NewResponse(remoting.Success, ""), nil
}

// InstallMaster replaces the mode table with the master's GET_ALL_MESSAGE_REQUEST_MODE body,
// on a slave (internal/broker/ha's metadata sync calls it).
func (s *Service) InstallMaster(body []byte) error {
	var w protocol.MessageRequestModeSerializeWrapper
	if len(body) > 0 {
		if err := json.Unmarshal(body, &w); err != nil {
			return fmt.Errorf("%w: message request modes: %v", protocol.ErrMalformedBody, err)
		}
	}
	dropped, err := s.modes.installMaster(w)
	if dropped > 0 {
		s.log.Warn().Int("dropped", dropped).
			Msg("slave sync: master's message request modes with invalid names or modes, or beyond the table's bound, left out")
	}
	return err
}

// getAllMessageRequestMode serves GET_ALL_MESSAGE_REQUEST_MODE: the mode table, as
// messageRequestMode.json holds it.
func (s *Service) getAllMessageRequestMode(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	body, err := json.Marshal(s.modes.snapshot())
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp, nil
}
