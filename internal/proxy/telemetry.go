package proxy

import (
	"context"
	"errors"
	"io"
	"sort"
	"time"

	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Settings the endpoint answers, named after RocketMQ's ProxyConfig with its values.
const (
	// DefaultGrpcClientProducerMaxAttempts, ...BackoffInitial, ...BackoffMax and
	// ...BackoffMultiplier are a producer's retry policy (grpcClientProducer*).
	DefaultGrpcClientProducerMaxAttempts       = 3
	DefaultGrpcClientProducerBackoffInitial    = 10 * time.Millisecond
	DefaultGrpcClientProducerBackoffMax        = time.Second
	DefaultGrpcClientProducerBackoffMultiplier = 2
	// DefaultGrpcClientConsumerLongPollingBatchSize is a consumer's receive batch size
	// (grpcClientConsumerLongPollingBatchSize).
	DefaultGrpcClientConsumerLongPollingBatchSize = 32
	// DefaultGrpcClientConsumerMaxLongPollingTimeout is a consumer's long polling timeout
	// (grpcClientConsumerMaxLongPollingTimeoutMillis).
	DefaultGrpcClientConsumerMaxLongPollingTimeout = 20 * time.Second
)

// customizedRetryNext is RocketMQ's CustomizedRetryPolicy default: the delays of delay levels 3
// to 18, a consumer group's retry schedule unless it sets its own.
var customizedRetryNext = []time.Duration{
	time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute, 5 * time.Minute, 6 * time.Minute,
	7 * time.Minute, 8 * time.Minute, 9 * time.Minute, 10 * time.Minute, 20 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour,
}

// Heartbeat registers the client with the broker: a producer under each topic it publishes to
// (RocketMQ's proxy names producer groups after topics, so transaction checks find the
// producer of a topic), a consumer under the request's group with the subscriptions of its
// settings.
func (s *service) Heartbeat(ctx context.Context, req *apiv2.HeartbeatRequest) (*apiv2.HeartbeatResponse, error) {
	c, st := s.clients.get(ctx)
	if st != nil {
		return &apiv2.HeartbeatResponse{Status: st}, nil
	}
	return &apiv2.HeartbeatResponse{Status: s.heartbeat(ctx, c, req.GetClientType(), req.GetGroup())}, nil
}

// heartbeat sends the client's HEART_BEAT to the broker.
func (s *service) heartbeat(ctx context.Context, c *client, typ apiv2.ClientType, group *apiv2.Resource) *apiv2.Status {
	hb := protocol.HeartbeatData{ClientID: c.id, ProducerDataSet: []protocol.ProducerData{},
		ConsumerDataSet: []protocol.ConsumerData{}}
	settings := c.Settings()
	switch typ {
	case apiv2.ClientType_PRODUCER:
		for _, t := range settings.GetPublishing().GetTopics() {
			if name, st := resourceName(t, "topic", apiv2.Code_ILLEGAL_TOPIC, names.CheckTopic); st == nil {
				hb.ProducerDataSet = append(hb.ProducerDataSet, protocol.ProducerData{GroupName: name})
			}
		}
	case apiv2.ClientType_PUSH_CONSUMER, apiv2.ClientType_SIMPLE_CONSUMER:
		g, st := resourceName(group, "consumer group", apiv2.Code_ILLEGAL_CONSUMER_GROUP, names.CheckGroup)
		if st != nil {
			return st
		}
		subs, st := subscriptions(settings.GetSubscription())
		if st != nil {
			return st
		}
		hb.ConsumerDataSet = append(hb.ConsumerDataSet, protocol.ConsumerData{GroupName: g,
			ConsumeType: protocol.ConsumePassively, MessageModel: protocol.Clustering,
			ConsumeFromWhere: protocol.ConsumeFromLastOffset, SubscriptionDataSet: subs})
	default:
		return statusf(apiv2.Code_UNRECOGNIZED_CLIENT_TYPE, "heartbeat of client type %v: this endpoint serves PRODUCER, PUSH_CONSUMER and SIMPLE_CONSUMER", typ)
	}
	if len(hb.ProducerDataSet)+len(hb.ConsumerDataSet) == 0 {
		return statusOK // a producer that publishes to no topic yet has nothing to register
	}
	resp, err := s.invoke(ctx, c, remoting.NewRequest(remoting.HeartBeat, nil, hb.Encode()))
	if err != nil {
		return fromError("heartbeat", err)
	}
	if resp.Code != remoting.Success {
		return fromRemoting(resp.Code, resp.Remark)
	}
	return statusOK
}

// maxSubscriptions bounds the subscriptions of one consumer's settings (ours: a consumer
// subscribes to a handful of topics; RocketMQ bounds none).
const maxSubscriptions = 1024

// subscriptions turns a consumer's subscription entries into the broker's subscription data, as
// FilterAPI.build does for a 4.x consumer: tags with their Java hash codes, SQL92 as is.
func subscriptions(sub *apiv2.Subscription) ([]protocol.SubscriptionData, *apiv2.Status) {
	entries := sub.GetSubscriptions()
	if len(entries) > maxSubscriptions {
		return nil, statusf(apiv2.Code_BAD_REQUEST, "%d subscriptions: at most %d", len(entries), maxSubscriptions)
	}
	version := time.Now().UnixMilli()
	out := make([]protocol.SubscriptionData, 0, len(entries))
	for _, e := range entries {
		topic, st := resourceName(e.GetTopic(), "subscribed topic", apiv2.Code_ILLEGAL_TOPIC, names.CheckTopic)
		if st != nil {
			return nil, st
		}
		d := protocol.SubscriptionData{Topic: topic, SubString: e.GetExpression().GetExpression(),
			TagsSet: []string{}, CodeSet: protocol.TagCodes{}, SubVersion: version, ExpressionType: protocol.ExpressionTag}
		switch e.GetExpression().GetType() {
		case apiv2.FilterType_SQL:
			d.ExpressionType = protocol.ExpressionSQL92
		default:
			if d.SubString == "" {
				d.SubString = protocol.SubAll
			}
			if d.SubString != protocol.SubAll {
				for _, tag := range splitTags(d.SubString) {
					d.TagsSet = append(d.TagsSet, tag)
					d.CodeSet = append(d.CodeSet, message.JavaStringHash(tag))
				}
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// splitTags splits "a || b" into its tags, blanks dropped.
func splitTags(expr string) []string {
	var tags []string
	start := 0
	for i := 0; i <= len(expr); i++ {
		if i == len(expr) || (i+1 < len(expr) && expr[i] == '|' && expr[i+1] == '|') {
			if t := trimSpace(expr[start:i]); t != "" {
				tags = append(tags, t)
			}
			if i < len(expr) {
				i++
			}
			start = i + 1
		}
	}
	sort.Strings(tags)
	return tags
}

func trimSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// NotifyClientTermination unregisters the client's groups and forgets it; its connection to the
// broker closes.
func (s *service) NotifyClientTermination(ctx context.Context, req *apiv2.NotifyClientTerminationRequest) (*apiv2.NotifyClientTerminationResponse, error) {
	id, st := clientIDFrom(ctx)
	if st != nil {
		return &apiv2.NotifyClientTerminationResponse{Status: st}, nil
	}
	c := s.clients.lookup(id)
	if c == nil {
		return &apiv2.NotifyClientTerminationResponse{Status: statusOK}, nil // nothing registered
	}
	var groups []protocol.UnregisterClientRequestHeader
	settings := c.Settings()
	for _, t := range settings.GetPublishing().GetTopics() {
		if name, st := resourceName(t, "topic", apiv2.Code_ILLEGAL_TOPIC, names.CheckTopic); st == nil {
			groups = append(groups, protocol.UnregisterClientRequestHeader{ClientID: id, ProducerGroup: name})
		}
	}
	if g, st := resourceName(req.GetGroup(), "consumer group", apiv2.Code_ILLEGAL_CONSUMER_GROUP, names.CheckGroup); st == nil {
		groups = append(groups, protocol.UnregisterClientRequestHeader{ClientID: id, ConsumerGroup: g})
	}
	result := statusOK
	for i := range groups {
		resp, err := s.invoke(ctx, c, remoting.NewRequest(remoting.UnregisterClient, remoting.EncodeHeader(&groups[i]), nil))
		if err != nil {
			result = fromError("unregister client", err)
		} else if resp.Code != remoting.Success {
			result = fromRemoting(resp.Code, resp.Remark)
		}
	}
	s.clients.remove(c)
	return &apiv2.NotifyClientTerminationResponse{Status: result}, nil
}

// Telemetry is the client's command stream. The SDK opens it at start and sends its Settings;
// the endpoint answers with the Settings it should use and registers the client with the
// broker at once (ClientActivity.processAndWriteClientSettings). The stream stays with the
// client (client.Stream) for commands the endpoint sends later, and ends when the client
// closes it or the node closes.
func (s *service) Telemetry(stream grpc.BidiStreamingServer[apiv2.TelemetryCommand, apiv2.TelemetryCommand]) error {
	ctx := stream.Context()
	c, st := s.clients.get(ctx)
	if st != nil {
		return stream.Send(&apiv2.TelemetryCommand{Status: st})
	}
	ts := &telemetryStream{stream: stream}
	c.mu.Lock()
	c.stream = ts
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.stream == ts {
			c.stream = nil
		}
		c.lastSeen = time.Now()
		c.mu.Unlock()
	}()
	for {
		cmd, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err // the client went away or the node is closing
		}
		c.touch()
		switch x := cmd.GetCommand().(type) {
		case *apiv2.TelemetryCommand_Settings:
			reply := s.onSettings(ctx, c, x.Settings)
			if err := ts.send(reply); err != nil {
				return err
			}
		default:
			// Answers to commands the endpoint sends (thread stack traces, message
			// verification) and transaction-recovery results go to their handlers once
			// those commands exist; until then they are dropped.
			s.log.Debug().Str("client", c.id).Msg("telemetry command without a handler dropped")
		}
	}
}

// onSettings stores a client's settings, registers it with the broker and builds the answer.
func (s *service) onSettings(ctx context.Context, c *client, in *apiv2.Settings) *apiv2.TelemetryCommand {
	if in == nil || (in.GetPublishing() == nil && in.GetSubscription() == nil) {
		return &apiv2.TelemetryCommand{Status: status(apiv2.Code_UNRECOGNIZED_CLIENT_TYPE,
			"settings carry neither publishing nor subscription: a producer sends publishing, a consumer subscription")}
	}
	if in.GetPublishing() != nil && len(in.GetPublishing().GetTopics()) > maxSubscriptions {
		return &apiv2.TelemetryCommand{Status: statusf(apiv2.Code_BAD_REQUEST,
			"settings publish to %d topics: at most %d", len(in.GetPublishing().GetTopics()), maxSubscriptions)}
	}
	if _, st := subscriptions(in.GetSubscription()); st != nil {
		return &apiv2.TelemetryCommand{Status: st}
	}
	stored := proto.Clone(in).(*apiv2.Settings)
	c.mu.Lock()
	c.settings = stored
	c.mu.Unlock()
	out := s.answerSettings(stored)
	st := statusOK
	if typ := stored.GetClientType(); typ != apiv2.ClientType_CLIENT_TYPE_UNSPECIFIED {
		st = s.heartbeat(ctx, c, typ, stored.GetSubscription().GetGroup())
	}
	return &apiv2.TelemetryCommand{Status: st, Command: &apiv2.TelemetryCommand_Settings{Settings: out}}
}

// answerSettings is what RocketMQ's GrpcClientSettingsManager answers: a producer's retry
// policy, the largest body and whether message types are checked; a consumer's batch size,
// long polling timeout, FIFO flag and its group's retry policy. Metrics stay off (this node
// collects no client metrics).
func (s *service) answerSettings(in *apiv2.Settings) *apiv2.Settings {
	out := proto.Clone(in).(*apiv2.Settings)
	out.Metric = &apiv2.Metric{On: false}
	b := s.broker()
	if pub := out.GetPublishing(); pub != nil {
		out.BackoffPolicy = &apiv2.RetryPolicy{MaxAttempts: DefaultGrpcClientProducerMaxAttempts,
			Strategy: &apiv2.RetryPolicy_ExponentialBackoff{ExponentialBackoff: &apiv2.ExponentialBackoff{
				Initial:    durationpb.New(DefaultGrpcClientProducerBackoffInitial),
				Max:        durationpb.New(DefaultGrpcClientProducerBackoffMax),
				Multiplier: DefaultGrpcClientProducerBackoffMultiplier,
			}}}
		pub.ValidateMessageType = true
		if b != nil {
			pub.MaxBodySize = int32(b.Options().Limits.MaxMessageBytes)
			pub.ValidateMessageType = !b.Options().Types.DisableTopicMessageTypeCheck
		}
		return out
	}
	sub := out.GetSubscription()
	batch := int32(DefaultGrpcClientConsumerLongPollingBatchSize)
	sub.ReceiveBatchSize = &batch
	sub.LongPollingTimeout = durationpb.New(DefaultGrpcClientConsumerMaxLongPollingTimeout)
	retryMax, fifo := int32(16), false // SubscriptionGroupConfig's defaults
	if group, st := resourceName(sub.GetGroup(), "consumer group", apiv2.Code_ILLEGAL_CONSUMER_GROUP, names.CheckGroup); b != nil && st == nil {
		if g, ok := b.Groups().Find(group); ok {
			retryMax, fifo = g.RetryMaxTimes, g.ConsumeMessageOrderly
		}
	}
	sub.Fifo = &fifo
	next := make([]*durationpb.Duration, len(customizedRetryNext))
	for i, d := range customizedRetryNext {
		next[i] = durationpb.New(d)
	}
	out.BackoffPolicy = &apiv2.RetryPolicy{MaxAttempts: retryMax + 1,
		Strategy: &apiv2.RetryPolicy_CustomizedBackoff{CustomizedBackoff: &apiv2.CustomizedBackoff{Next: next}}}
	return out
}
