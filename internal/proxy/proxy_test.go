package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/node"
	"github.com/mqgo/mq/internal/protocol"
	iproxy "github.com/mqgo/mq/internal/proxy"
	"github.com/mqgo/mq/proxy"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// wait is the generous bound of every wait for an answer here.
const wait = 30 * time.Second

// startNode runs a node with the gRPC endpoint on port 0.
func startNode(t testing.TB, edit func(*mq.Options)) *mq.Node {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	o := mq.Options{Listen: "127.0.0.1:0", Logger: &l,
		Store: config.Store{Dir: t.TempDir(), SegmentBytes: 8 << 20},
		GRPC:  config.GRPC{Listen: "127.0.0.1:0", Service: proxy.Service()}}
	if edit != nil {
		edit(&o)
	}
	n, err := mq.StartNode(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// dial connects a client generated from proto/ to the node's endpoint.
func dial(t testing.TB, n *mq.Node) apiv2.MessagingServiceClient {
	t.Helper()
	cc, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return apiv2.NewMessagingServiceClient(cc)
}

// as is a call context of the SDK client id.
func as(t testing.TB, clientID string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", clientID)
}

// createTopic creates a topic on the node's broker and waits until QueryRoute sees it.
func createTopic(t testing.TB, n *mq.Node, c apiv2.MessagingServiceClient, topic string, queues int, attrs string) {
	t.Helper()
	a, err := admin.New(admin.Options{NameServers: []string{n.NameServerAddr()}, Transport: n.NewTransport()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := a.CreateTopic(ctx, n.BrokerAddr(), admin.TopicConfig{Topic: topic, ReadQueueNums: queues,
		WriteQueueNums: queues, Attributes: attrs}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(wait)
	for {
		resp, err := c.QueryRoute(as(t, "setup"), &apiv2.QueryRouteRequest{Topic: &apiv2.Resource{Name: topic}})
		if err == nil && resp.Status.Code == apiv2.Code_OK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s not routed: %v %v", topic, resp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestGRPCQueryRoute(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n)
	createTopic(t, n, c, "RouteT", 4, "")
	createTopic(t, n, c, "RouteFifo", 2, "+message.type=FIFO")

	resp, err := c.QueryRoute(as(t, "c1"), &apiv2.QueryRouteRequest{Topic: &apiv2.Resource{Name: "RouteT"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status.Code != apiv2.Code_OK || len(resp.MessageQueues) != 4 {
		t.Fatalf("route of RouteT: %v, %d queues", resp.Status, len(resp.MessageQueues))
	}
	_, port, _ := net.SplitHostPort(n.GRPCAddr())
	bhost, _, _ := net.SplitHostPort(n.BrokerAddr())
	for i, q := range resp.MessageQueues {
		if q.Id != int32(i) || q.Permission != apiv2.Permission_READ_WRITE || q.Topic.GetName() != "RouteT" {
			t.Errorf("queue %d: %v", i, q)
		}
		if len(q.AcceptMessageTypes) != 1 || q.AcceptMessageTypes[0] != apiv2.MessageType_NORMAL {
			t.Errorf("queue %d accepts %v, want NORMAL for a topic without message.type", i, q.AcceptMessageTypes)
		}
		addrs := q.GetBroker().GetEndpoints().GetAddresses()
		if len(addrs) != 1 || addrs[0].Host != bhost || strconv.Itoa(int(addrs[0].Port)) != port {
			t.Errorf("queue %d endpoints %v, want %s:%s (the broker's host, the gRPC port)", i, addrs, bhost, port)
		}
		if q.GetBroker().GetId() != 0 || q.GetBroker().GetName() == "" {
			t.Errorf("queue %d broker %v", i, q.GetBroker())
		}
	}

	resp, err = c.QueryRoute(as(t, "c1"), &apiv2.QueryRouteRequest{Topic: &apiv2.Resource{Name: "RouteFifo"}})
	if err != nil || resp.Status.Code != apiv2.Code_OK || len(resp.MessageQueues) != 2 {
		t.Fatalf("route of RouteFifo: %v %v", resp, err)
	}
	if ts := resp.MessageQueues[0].AcceptMessageTypes; len(ts) != 1 || ts[0] != apiv2.MessageType_FIFO {
		t.Fatalf("FIFO topic accepts %v", ts)
	}

	resp, err = c.QueryRoute(as(t, "c1"), &apiv2.QueryRouteRequest{Topic: &apiv2.Resource{Name: "NoSuchTopic"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status.Code != apiv2.Code_TOPIC_NOT_FOUND || !strings.Contains(resp.Status.Message, "NoSuchTopic") || len(resp.MessageQueues) != 0 {
		t.Fatalf("unknown topic: %v", resp)
	}
	for _, bad := range []*apiv2.Resource{nil, {Name: "bad topic!"}, {Name: strings.Repeat("x", 200)}} {
		resp, err = c.QueryRoute(as(t, "c1"), &apiv2.QueryRouteRequest{Topic: bad})
		if err != nil || resp.Status.Code != apiv2.Code_ILLEGAL_TOPIC {
			t.Fatalf("topic %v: %v %v", bad, resp, err)
		}
	}
}

// openTelemetry opens a Telemetry stream and exchanges settings.
func openTelemetry(t *testing.T, c apiv2.MessagingServiceClient, ctx context.Context, s *apiv2.Settings) (apiv2.MessagingService_TelemetryClient, *apiv2.TelemetryCommand) {
	t.Helper()
	stream, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&apiv2.TelemetryCommand{Command: &apiv2.TelemetryCommand_Settings{Settings: s}}); err != nil {
		t.Fatal(err)
	}
	reply, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return stream, reply
}

func producerSettings(topics ...string) *apiv2.Settings {
	typ := apiv2.ClientType_PRODUCER
	s := &apiv2.Settings{ClientType: &typ, RequestTimeout: durationpb.New(3 * time.Second),
		UserAgent: &apiv2.UA{Language: apiv2.Language_GOLANG, Version: "test"}}
	pub := &apiv2.Publishing{}
	for _, t := range topics {
		pub.Topics = append(pub.Topics, &apiv2.Resource{Name: t})
	}
	s.PubSub = &apiv2.Settings_Publishing{Publishing: pub}
	return s
}

func msg(topic, id, body string) *apiv2.Message {
	return &apiv2.Message{Topic: &apiv2.Resource{Name: topic}, Body: []byte(body),
		SystemProperties: &apiv2.SystemProperties{MessageId: id, MessageType: apiv2.MessageType_NORMAL,
			BornTimestamp: timestamppb.Now(), BornHost: "10.0.0.9", BodyEncoding: apiv2.Encoding_IDENTITY}}
}

// pullAll reads a topic from its first offset with the 4.x-side pull consumer until it has
// want messages.
func pullAll(t *testing.T, n *mq.Node, topic string, want int) []*consumer.Message {
	t.Helper()
	pc, err := n.NewPullConsumer(consumer.WithGroup("readback-"+topic), consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if err := pc.Subscribe(topic, "*"); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	var got []*consumer.Message
	deadline := time.Now().Add(wait)
	for len(got) < want {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		msgs, err := pc.Poll(ctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
		got = append(got, msgs...)
		if time.Now().After(deadline) {
			t.Fatalf("topic %s: %d of %d messages read back", topic, len(got), want)
		}
	}
	return got
}

func TestGRPCSendReadBack(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n)
	createTopic(t, n, c, "SendNormal", 4, "")
	createTopic(t, n, c, "SendFifo", 4, "+message.type=FIFO")
	createTopic(t, n, c, "SendDelay", 2, "+message.type=DELAY")
	ctx := as(t, "producer-1")

	_, reply := openTelemetry(t, c, ctx, producerSettings("SendNormal", "SendFifo", "SendDelay"))
	if reply.GetStatus().GetCode() != apiv2.Code_OK {
		t.Fatalf("settings: %v", reply.GetStatus())
	}
	pub := reply.GetSettings().GetPublishing()
	if pub.GetMaxBodySize() != int32(storage.DefaultMaxMessageBytes) || !pub.GetValidateMessageType() {
		t.Fatalf("publishing settings answered: %v", pub)
	}
	if bp := reply.GetSettings().GetBackoffPolicy(); bp.GetMaxAttempts() != 3 || bp.GetExponentialBackoff().GetMultiplier() != 2 {
		t.Fatalf("producer backoff answered: %v", bp)
	}
	hb, err := c.Heartbeat(ctx, &apiv2.HeartbeatRequest{ClientType: apiv2.ClientType_PRODUCER})
	if err != nil || hb.Status.Code != apiv2.Code_OK {
		t.Fatalf("heartbeat: %v %v", hb, err)
	}

	// Normal: tag, keys and a user property arrive as a 4.x consumer reads them.
	m := msg("SendNormal", "ID-NORMAL-1", "hello")
	tag := "TagA"
	m.SystemProperties.Tag = &tag
	m.SystemProperties.Keys = []string{"k1", "k2"}
	m.UserProperties = map[string]string{"color": "blue"}
	resp, err := c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{m}})
	if err != nil || resp.Status.Code != apiv2.Code_OK || len(resp.Entries) != 1 {
		t.Fatalf("send normal: %v %v", resp, err)
	}
	if e := resp.Entries[0]; e.MessageId != "ID-NORMAL-1" || e.Offset != 0 || e.TransactionId != "ID-NORMAL-1" && e.TransactionId != "" {
		t.Fatalf("entry: %v", e)
	}
	got := pullAll(t, n, "SendNormal", 1)
	if g := got[0]; string(g.Body) != "hello" || g.Tags != "TagA" || strings.Join(g.Keys, ",") != "k1,k2" ||
		g.Properties["color"] != "blue" || g.MsgID != "ID-NORMAL-1" || g.Properties["PGROUP"] != "SendNormal" {
		t.Fatalf("read back: body %q tags %q keys %v props %v id %q", g.Body, g.Tags, g.Keys, g.Properties, g.MsgID)
	}

	// FIFO: a group's messages share one queue, in order.
	for i := range 6 {
		fm := msg("SendFifo", fmt.Sprintf("ID-FIFO-%d", i), fmt.Sprintf("fifo-%d", i))
		fm.SystemProperties.MessageType = apiv2.MessageType_FIFO
		g := fmt.Sprintf("group-%d", i%2)
		fm.SystemProperties.MessageGroup = &g
		resp, err := c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{fm}})
		if err != nil || resp.Status.Code != apiv2.Code_OK {
			t.Fatalf("send fifo %d: %v %v", i, resp, err)
		}
	}
	queueOf := map[string]int{}
	last := map[string]int{}
	for _, g := range pullAll(t, n, "SendFifo", 6) {
		group := g.Properties["__SHARDINGKEY"]
		i, _ := strconv.Atoi(strings.TrimPrefix(string(g.Body), "fifo-"))
		if q, ok := queueOf[group]; ok && q != g.Queue.QueueID {
			t.Fatalf("group %s on queues %d and %d", group, q, g.Queue.QueueID)
		}
		queueOf[group] = g.Queue.QueueID
		if prev, ok := last[group]; ok && prev > i {
			t.Fatalf("group %s: fifo-%d after fifo-%d", group, i, prev)
		}
		last[group] = i
	}
	if len(queueOf) != 2 {
		t.Fatalf("groups read back: %v", queueOf)
	}

	// A normal message to a FIFO topic is refused by the broker's type check.
	resp, err = c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{msg("SendFifo", "ID-WRONG", "x")}})
	if err != nil || resp.Status.Code == apiv2.Code_OK || !strings.Contains(resp.Status.Message, "FIFO") {
		t.Fatalf("normal message to a FIFO topic: %v %v", resp, err)
	}

	// Delay: the message is held until its delivery time.
	dm := msg("SendDelay", "ID-DELAY-1", "later")
	dm.SystemProperties.MessageType = apiv2.MessageType_DELAY
	at := time.Now().Add(1500 * time.Millisecond)
	dm.SystemProperties.DeliveryTimestamp = timestamppb.New(at)
	resp, err = c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{dm}})
	if err != nil || resp.Status.Code != apiv2.Code_OK {
		t.Fatalf("send delay: %v %v", resp, err)
	}
	got = pullAll(t, n, "SendDelay", 1)
	if string(got[0].Body) != "later" || time.Now().Before(at) {
		t.Fatalf("delay message %q read at %v, due %v", got[0].Body, time.Now(), at)
	}

	// Transaction: a half message, answered with a transaction id EndTransaction can use.
	createTopic(t, n, c, "SendTx", 1, "+message.type=TRANSACTION")
	tm := msg("SendTx", "ID-TX-1", "half")
	tm.SystemProperties.MessageType = apiv2.MessageType_TRANSACTION
	tm.SystemProperties.OrphanedTransactionRecoveryDuration = durationpb.New(30 * time.Second)
	resp, err = c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{tm}})
	if err != nil || resp.Status.Code != apiv2.Code_OK {
		t.Fatalf("send half message: %v %v", resp, err)
	}
	if _, _, _, err := iproxy.DecodeTransactionID(resp.Entries[0].TransactionId); err != nil || resp.Entries[0].MessageId != "ID-TX-1" {
		t.Fatalf("half message entry %v: %v", resp.Entries[0], err)
	}
	// The broker took it as a half message: it sits in the half topic, not in SendTx.
	b := node.Of(n).Broker()
	if _, ok := b.Topics().Get(names.TopicTransHalf); !ok {
		t.Fatal("no half topic after a half message")
	}
	if max := b.Store().MaxOffsetInQueue("SendTx", 0); max != 0 {
		t.Fatalf("SendTx holds %d messages after a half message", max)
	}
	tm.SystemProperties.OrphanedTransactionRecoveryDuration = durationpb.New(2 * time.Hour)
	resp, err = c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{tm}})
	if err != nil || resp.Status.Code != apiv2.Code_BAD_REQUEST {
		t.Fatalf("half message with a 2 h recovery: %v %v", resp, err)
	}
}

// Hostile and malformed sends get a status naming what was wrong and cost nothing else.
func TestGRPCSendRefusals(t *testing.T) {
	n := startNode(t, func(o *mq.Options) { o.Limits.MaxMessageBytes = 1024 })
	c := dial(t, n)
	createTopic(t, n, c, "Refuse", 1, "")
	ctx := as(t, "producer-2")
	sysKey := msg("Refuse", "ID-1", "x")
	sysKey.UserProperties = map[string]string{"UNIQ_KEY": "forged"}
	ctrl := msg("Refuse", "ID-2", "x")
	ctrl.UserProperties = map[string]string{"a": "b\x01c"}
	noID := msg("Refuse", "", "x")
	bigGroup := msg("Refuse", "ID-3", "x")
	g := strings.Repeat("g", 64)
	bigGroup.SystemProperties.MessageGroup = &g
	far := msg("Refuse", "ID-4", "x")
	far.SystemProperties.DeliveryTimestamp = timestamppb.New(time.Now().Add(48 * time.Hour))
	barTag := msg("Refuse", "ID-5", "x")
	tag := "a|b"
	barTag.SystemProperties.Tag = &tag
	for name, tc := range map[string]struct {
		req  *apiv2.SendMessageRequest
		code apiv2.Code
	}{
		"no message":        {&apiv2.SendMessageRequest{}, apiv2.Code_MESSAGE_CORRUPTED},
		"empty body":        {&apiv2.SendMessageRequest{Messages: []*apiv2.Message{msg("Refuse", "ID", "")}}, apiv2.Code_MESSAGE_BODY_EMPTY},
		"body over limit":   {&apiv2.SendMessageRequest{Messages: []*apiv2.Message{msg("Refuse", "ID", strings.Repeat("b", 1025))}}, apiv2.Code_MESSAGE_BODY_TOO_LARGE},
		"system property":   {&apiv2.SendMessageRequest{Messages: []*apiv2.Message{sysKey}}, apiv2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY},
		"control character": {&apiv2.SendMessageRequest{Messages: []*apiv2.Message{ctrl}}, apiv2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY},
		"no message id":     {&apiv2.SendMessageRequest{Messages: []*apiv2.Message{noID}}, apiv2.Code_ILLEGAL_MESSAGE_ID},
		"long group":        {&apiv2.SendMessageRequest{Messages: []*apiv2.Message{bigGroup}}, apiv2.Code_ILLEGAL_MESSAGE_GROUP},
		"delay too far":     {&apiv2.SendMessageRequest{Messages: []*apiv2.Message{far}}, apiv2.Code_ILLEGAL_DELIVERY_TIME},
		"tag with a bar":    {&apiv2.SendMessageRequest{Messages: []*apiv2.Message{barTag}}, apiv2.Code_ILLEGAL_MESSAGE_TAG},
		"unknown topic":     {&apiv2.SendMessageRequest{Messages: []*apiv2.Message{msg("NoSuchTopic", "ID", "x")}}, apiv2.Code_TOPIC_NOT_FOUND},
		"mixed topics":      {&apiv2.SendMessageRequest{Messages: []*apiv2.Message{msg("Refuse", "A", "x"), msg("Other", "B", "x")}}, apiv2.Code_MESSAGE_CORRUPTED},
	} {
		resp, err := c.SendMessage(ctx, tc.req)
		if err != nil || resp.Status.Code != tc.code || resp.Status.Message == "" || len(resp.Entries) != 0 {
			t.Errorf("%s: %v %v; want %v", name, resp, err, tc.code)
		}
	}
	// No client id: the SDKs always send one.
	noClient, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	resp, err := c.SendMessage(noClient, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{msg("Refuse", "ID", "x")}})
	if err != nil || resp.Status.Code != apiv2.Code_CLIENT_ID_REQUIRED {
		t.Fatalf("no client id: %v %v", resp, err)
	}
	// The RPCs of later work answer UNIMPLEMENTED.
	_, err = c.SyncLiteSubscription(ctx, &apiv2.SyncLiteSubscriptionRequest{})
	if grpcstatus.Code(err) != codes.Unimplemented {
		t.Fatalf("SyncLiteSubscription: %v", err)
	}
	// After all that, an honest send still goes through.
	resp, err = c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{msg("Refuse", "ID-OK", "fine")}})
	if err != nil || resp.Status.Code != apiv2.Code_OK {
		t.Fatalf("honest send: %v %v", resp, err)
	}
}

// consumerIDs lists a group's clients as the broker knows them.
func consumerIDs(t *testing.T, n *mq.Node, group string) []string {
	t.Helper()
	tr := n.NewTransport()
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	resp, err := tr.InvokeSync(ctx, n.BrokerAddr(), remoting.NewRequest(remoting.GetConsumerListByGroup,
		remoting.EncodeHeader(&protocol.ConsumerGroupHeader{ConsumerGroup: group}), nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != remoting.Success {
		return nil
	}
	var body protocol.GetConsumerListByGroupResponseBody
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		t.Fatal(err)
	}
	return body.ConsumerIDList
}

func TestGRPCConsumerSettingsHeartbeatTermination(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n)
	createTopic(t, n, c, "SubT", 2, "")
	ctx := as(t, "consumer-1")
	typ := apiv2.ClientType_SIMPLE_CONSUMER
	group := &apiv2.Resource{Name: "GroupS"}
	s := &apiv2.Settings{ClientType: &typ, PubSub: &apiv2.Settings_Subscription{Subscription: &apiv2.Subscription{
		Group: group, Subscriptions: []*apiv2.SubscriptionEntry{{Topic: &apiv2.Resource{Name: "SubT"},
			Expression: &apiv2.FilterExpression{Type: apiv2.FilterType_TAG, Expression: "a || b"}}}}}}
	stream, reply := openTelemetry(t, c, ctx, s)
	if reply.GetStatus().GetCode() != apiv2.Code_OK {
		t.Fatalf("settings: %v", reply.GetStatus())
	}
	sub := reply.GetSettings().GetSubscription()
	if sub.GetReceiveBatchSize() != 32 || sub.GetLongPollingTimeout().AsDuration() != 20*time.Second || sub.GetFifo() {
		t.Fatalf("subscription settings answered: %v", sub)
	}
	bp := reply.GetSettings().GetBackoffPolicy()
	if bp.GetMaxAttempts() != 17 || len(bp.GetCustomizedBackoff().GetNext()) != 18 || bp.GetCustomizedBackoff().GetNext()[0].AsDuration() != time.Second {
		t.Fatalf("consumer backoff answered: %v", bp)
	}
	// The settings registered the consumer; a heartbeat keeps it.
	if ids := consumerIDs(t, n, "GroupS"); len(ids) != 1 || ids[0] != "consumer-1" {
		t.Fatalf("group members after settings: %v", ids)
	}
	hb, err := c.Heartbeat(ctx, &apiv2.HeartbeatRequest{ClientType: typ, Group: group})
	if err != nil || hb.Status.Code != apiv2.Code_OK {
		t.Fatalf("heartbeat: %v %v", hb, err)
	}
	hb, err = c.Heartbeat(ctx, &apiv2.HeartbeatRequest{ClientType: apiv2.ClientType_CLIENT_TYPE_UNSPECIFIED})
	if err != nil || hb.Status.Code != apiv2.Code_UNRECOGNIZED_CLIENT_TYPE {
		t.Fatalf("heartbeat of no type: %v %v", hb, err)
	}
	stream.CloseSend()
	nt, err := c.NotifyClientTermination(ctx, &apiv2.NotifyClientTerminationRequest{Group: group})
	if err != nil || nt.Status.Code != apiv2.Code_OK {
		t.Fatalf("termination: %v %v", nt, err)
	}
	if ids := consumerIDs(t, n, "GroupS"); len(ids) != 0 {
		t.Fatalf("group members after termination: %v", ids)
	}
}

// Node.Close returns while a client holds a Telemetry stream open, the stream ends, and no
// goroutine of the endpoint stays.
func TestGRPCCloseWithOpenTelemetry(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n)
	createTopic(t, n, c, "CloseT", 1, "")
	stream, reply := openTelemetry(t, c, as(t, "closer"), producerSettings("CloseT"))
	if reply.GetStatus().GetCode() != apiv2.Code_OK {
		t.Fatalf("settings: %v", reply.GetStatus())
	}
	// A second connection that never sends a byte sits in the listener's first-byte wait.
	raw, err := net.Dial("tcp", n.GRPCAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	closed := make(chan error, 1)
	go func() { closed <- n.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait):
		t.Fatal("Node.Close did not return with a Telemetry stream open")
	}
	if _, err := stream.Recv(); err == nil {
		t.Fatal("the Telemetry stream still delivers after Close")
	}
	deadline := time.Now().Add(wait)
	for {
		left := serverGoroutines()
		if left == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines of the endpoint after Close:\n%s", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serverGoroutines are the stacks of goroutines of the endpoint or its gRPC server.
func serverGoroutines() string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var keep []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "mq/internal/proxy.") || strings.Contains(g, "grpc.(*Server)") ||
			strings.Contains(g, "transport.(*http2Server)") {
			keep = append(keep, g)
		}
	}
	return strings.Join(keep, "\n\n")
}

// A node given GRPC.Listen without the service refuses to start, naming the package.
func TestGRPCListenNeedsService(t *testing.T) {
	l := zerolog.Nop()
	_, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", Logger: &l, Store: config.Store{Dir: t.TempDir()},
		GRPC: config.GRPC{Listen: "127.0.0.1:0"}})
	if err == nil || !strings.Contains(err.Error(), "github.com/mqgo/mq/proxy") {
		t.Fatalf("StartNode: %v", err)
	}
}

// Connections that send garbage, a TLS handshake to a plaintext port, or half a preface cost an
// honest client nothing.
func TestGRPCGarbageConnections(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n)
	for _, junk := range [][]byte{
		{0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5},
		[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		[]byte("PRI * HTTP/2.0\r\n"),
		make([]byte, 1<<16),
	} {
		raw, err := net.Dial("tcp", n.GRPCAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if _, err := raw.Write(junk); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := c.QueryRoute(as(t, "honest"), &apiv2.QueryRouteRequest{Topic: &apiv2.Resource{Name: "NoSuchTopic"}})
	if err != nil || resp.Status.Code != apiv2.Code_TOPIC_NOT_FOUND {
		t.Fatalf("honest client after garbage: %v %v", resp, err)
	}
}
