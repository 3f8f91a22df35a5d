package proxy_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/acl"
	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/node"
	"github.com/mqgo/mq/remoting"
	"google.golang.org/grpc/metadata"
)

// The accounts of the ACL tests: an admin, a producer of AclTopic and a consumer of AclTopic in
// AclGroup. Every other topic and group is DENY for the latter two.
const (
	adminAK, adminSK = "aclAdmin01", "aclAdminSecret01"
	pubAK, pubSK     = "aclProducer1", "aclProducerSecret1"
	subAK, subSK     = "aclConsumer1", "aclConsumerSecret1"
)

func aclConfig() *acl.Config {
	return &acl.Config{Accounts: []acl.Account{
		{AccessKey: adminAK, SecretKey: adminSK, Admin: true},
		{AccessKey: pubAK, SecretKey: pubSK, DefaultTopicPerm: "DENY", DefaultGroupPerm: "DENY",
			TopicPerms: []string{"AclTopic=PUB"}},
		{AccessKey: subAK, SecretKey: subSK, DefaultTopicPerm: "DENY", DefaultGroupPerm: "DENY",
			TopicPerms: []string{"AclTopic=SUB"}, GroupPerms: []string{"AclGroup=SUB"}},
	}}
}

// startACLNode runs a node with ACL on and AclTopic and OtherTopic created by the admin account.
func startACLNode(t *testing.T) *mq.Node {
	t.Helper()
	n := startNode(t, func(o *mq.Options) { o.Security.ACL = aclConfig() })
	a, err := admin.New(admin.Options{NameServers: []string{n.NameServerAddr()}, Transport: n.NewTransport(),
		Credentials: remoting.Credentials{AccessKey: adminAK, SecretKey: adminSK}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	c := dial(t, n)
	for _, topic := range []string{"AclTopic", "OtherTopic"} {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		err := a.CreateTopic(ctx, n.BrokerAddr(), admin.TopicConfig{Topic: topic, ReadQueueNums: 2, WriteQueueNums: 2})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(wait)
		for {
			resp, err := c.QueryRoute(signedNode(t, "setup", adminAK, adminSK), &apiv2.QueryRouteRequest{Topic: &apiv2.Resource{Name: topic}})
			if err == nil && resp.Status.Code == apiv2.Code_OK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("topic %s not routed: %v %v", topic, resp, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return n
}

// dateTime is the SDKs' x-mq-date-time format, yyyyMMdd'T'HHmmss'Z' in UTC.
func dateTime() string { return time.Now().UTC().Format("20060102T150405Z") }

// signedNode is a call context signed as the Node.js SDK signs: uppercase hex, a bare AccessKey.
func signedNode(t *testing.T, clientID, ak, sk string) context.Context {
	dt := dateTime()
	sig := strings.ToUpper(hmacHex(sk, dt))
	return withAuth(as(t, clientID), dt, "MQv2-HMAC-SHA1 Credential="+ak+", SignedHeaders=x-mq-date-time, Signature="+sig)
}

// signedGo is a call context signed as the Go SDK signs: lowercase hex, AccessKey//Rocketmq.
func signedGo(t *testing.T, clientID, ak, sk string) context.Context {
	dt := dateTime()
	return withAuth(as(t, clientID), dt, "MQv2-HMAC-SHA1 Credential="+ak+"//Rocketmq, SignedHeaders=x-mq-date-time, Signature="+hmacHex(sk, dt))
}

func withAuth(ctx context.Context, dt, authorization string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-mq-date-time", dt, "authorization", authorization)
}

func hmacHex(secret, content string) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(content))
	return hex.EncodeToString(m.Sum(nil))
}

func consumerSettings(group string, topics ...string) *apiv2.Settings {
	typ := apiv2.ClientType_SIMPLE_CONSUMER
	sub := &apiv2.Subscription{Group: &apiv2.Resource{Name: group}}
	for _, t := range topics {
		sub.Subscriptions = append(sub.Subscriptions, &apiv2.SubscriptionEntry{Topic: &apiv2.Resource{Name: t},
			Expression: &apiv2.FilterExpression{Type: apiv2.FilterType_TAG, Expression: "*"}})
	}
	return &apiv2.Settings{ClientType: &typ, PubSub: &apiv2.Settings_Subscription{Subscription: sub}}
}

func wantCode(t *testing.T, what string, st *apiv2.Status, err error, code apiv2.Code, mentions ...string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if st.GetCode() != code {
		t.Fatalf("%s: %v, want %v", what, st, code)
	}
	for _, m := range mentions {
		if !strings.Contains(st.GetMessage(), m) {
			t.Fatalf("%s: message %q does not mention %q", what, st.GetMessage(), m)
		}
	}
}

// With ACL on, a signed producer's sends reach the broker (which checks the endpoint's requests
// as the caller's account's, not as trusted ones), in both SDK spellings of the metadata.
func TestGRPCACLSignedProducer(t *testing.T) {
	n := startACLNode(t)
	c := dial(t, n)
	for i, ctx := range []context.Context{signedNode(t, "acl-producer-node", pubAK, pubSK), signedGo(t, "acl-producer-go", pubAK, pubSK)} {
		_, reply := openTelemetry(t, c, ctx, producerSettings("AclTopic"))
		wantCode(t, "settings", reply.GetStatus(), nil, apiv2.Code_OK)
		route, err := c.QueryRoute(ctx, &apiv2.QueryRouteRequest{Topic: &apiv2.Resource{Name: "AclTopic"}})
		wantCode(t, "route", route.GetStatus(), err, apiv2.Code_OK)
		hb, err := c.Heartbeat(ctx, &apiv2.HeartbeatRequest{ClientType: apiv2.ClientType_PRODUCER})
		wantCode(t, "producer heartbeat", hb.GetStatus(), err, apiv2.Code_OK)
		resp, err := c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{msg("AclTopic", "ACL-ID-"+string(rune('A'+i)), "hello")}})
		wantCode(t, "send", resp.GetStatus(), err, apiv2.Code_OK)
		if len(resp.Entries) != 1 || resp.Entries[0].Status.GetCode() != apiv2.Code_OK {
			t.Fatalf("send entries: %v", resp.Entries)
		}
		end, err := c.NotifyClientTermination(ctx, &apiv2.NotifyClientTerminationRequest{})
		wantCode(t, "termination", end.GetStatus(), err, apiv2.Code_OK)
	}
	// Both sends are stored: the broker answered two offsets of AclTopic's queues.
	if got := node.Of(n).ACLRefusals(); got != 0 {
		t.Fatalf("%d refusals for an honest producer", got)
	}
}

// With ACL on, a signed consumer receives, acknowledges and pulls: the endpoint's POP and PULL
// requests reach the broker signed as the consumer's account, as its other requests do.
func TestGRPCACLSignedConsumer(t *testing.T) {
	n := startACLNode(t)
	c := dial(t, n)
	pub := signedNode(t, "acl-producer", pubAK, pubSK)
	resp, err := c.SendMessage(pub, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{msg("AclTopic", "ACL-CONSUME-1", "hello")}})
	wantCode(t, "send", resp.GetStatus(), err, apiv2.Code_OK)
	sub := signedNode(t, "acl-consumer", subAK, subSK)
	_, reply := openTelemetry(t, c, sub, consumerSettings("AclGroup", "AclTopic"))
	wantCode(t, "settings", reply.GetStatus(), nil, apiv2.Code_OK)
	got := receiveUntil(t, c, sub, receiveReq("AclGroup", "AclTopic", nil, time.Minute), 1)
	if string(got[0].Body) != "hello" {
		t.Fatalf("received %q", got[0].Body)
	}
	a := ack(t, c, sub, "AclGroup", "AclTopic", got...)
	wantCode(t, "ack", a.GetStatus(), nil, apiv2.Code_OK)
	pull, err := c.PullMessage(sub, &apiv2.PullMessageRequest{Group: &apiv2.Resource{Name: "AclGroup"},
		MessageQueue: &apiv2.MessageQueue{Topic: &apiv2.Resource{Name: "AclTopic"}, Id: got[0].SystemProperties.GetQueueId()},
		Offset:       got[0].SystemProperties.GetQueueOffset(), BatchSize: 1,
		FilterExpression: &apiv2.FilterExpression{Type: apiv2.FilterType_TAG, Expression: "*"}})
	if err != nil {
		t.Fatal(err)
	}
	var pulled int
	for {
		r, err := pull.Recv()
		if err != nil {
			break
		}
		switch x := r.Content.(type) {
		case *apiv2.PullMessageResponse_Status:
			wantCode(t, "pull", x.Status, nil, apiv2.Code_OK)
		case *apiv2.PullMessageResponse_Message:
			pulled++
		}
	}
	if pulled != 1 {
		t.Fatalf("pulled %d messages, want 1", pulled)
	}
	if got := node.Of(n).ACLRefusals(); got != 0 {
		t.Fatalf("%d refusals for an honest consumer", got)
	}
}

// Calls that do not prove an account are UNAUTHORIZED, saying what to fix; none reaches the
// broker.
func TestGRPCACLUnauthenticated(t *testing.T) {
	n := startACLNode(t)
	c := dial(t, n)
	dt := dateTime()
	good := strings.ToUpper(hmacHex(pubSK, dt))
	cases := []struct {
		name    string
		ctx     context.Context
		mention string
	}{
		{"unsigned", as(t, "anon"), "not signed"},
		{"unknown account", withAuth(as(t, "x"), dt, "MQv2-HMAC-SHA1 Credential=noSuchKey1, SignedHeaders=x-mq-date-time, Signature="+good), "no account AccessKey=noSuchKey1"},
		{"wrong secret", withAuth(as(t, "x"), dt, "MQv2-HMAC-SHA1 Credential="+pubAK+", SignedHeaders=x-mq-date-time, Signature="+hmacHex("notTheSecret", dt)), "signature check failed for AccessKey=" + pubAK},
		{"other date", withAuth(as(t, "x"), "20200101T000000Z", "MQv2-HMAC-SHA1 Credential="+pubAK+", SignedHeaders=x-mq-date-time, Signature="+good), "signature check failed"},
		{"no signature", withAuth(as(t, "x"), dt, "MQv2-HMAC-SHA1 Credential="+pubAK+", SignedHeaders=x-mq-date-time"), "no Signature"},
		{"not hex", withAuth(as(t, "x"), dt, "MQv2-HMAC-SHA1 Credential="+pubAK+", Signature=zz"), "not hexadecimal"},
		{"other algorithm", withAuth(as(t, "x"), dt, "AWS4-HMAC-SHA256 Credential="+pubAK+", Signature="+good), "is not MQv2-HMAC-SHA1"},
		{"no credentials", withAuth(as(t, "x"), dt, "MQv2-HMAC-SHA1"), "no credentials"},
		{"no credential", withAuth(as(t, "x"), dt, "MQv2-HMAC-SHA1 Signature="+good), "no Credential"},
		{"bad item", withAuth(as(t, "x"), dt, "MQv2-HMAC-SHA1 Credential"), "not key=value"},
		{"no date", metadata.AppendToOutgoingContext(as(t, "x"), "authorization", "MQv2-HMAC-SHA1 Credential="+pubAK+", Signature="+good), "no x-mq-date-time"},
	}
	for _, tc := range cases {
		resp, err := c.SendMessage(tc.ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{msg("AclTopic", "ACL-UNAUTH", "x")}})
		wantCode(t, tc.name+": send", resp.GetStatus(), err, apiv2.Code_UNAUTHORIZED, tc.mention)
		route, err := c.QueryRoute(tc.ctx, &apiv2.QueryRouteRequest{Topic: &apiv2.Resource{Name: "AclTopic"}})
		wantCode(t, tc.name+": route", route.GetStatus(), err, apiv2.Code_UNAUTHORIZED, tc.mention)
	}
	// A Telemetry stream that proves no account is told so and closed.
	stream, err := c.Telemetry(as(t, "anon-stream"))
	if err != nil {
		t.Fatal(err)
	}
	// The server may end the stream before Send returns: grpc-go then answers io.EOF and the
	// stream's status comes from Recv.
	if err := stream.Send(&apiv2.TelemetryCommand{Command: &apiv2.TelemetryCommand_Settings{Settings: producerSettings("AclTopic")}}); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	reply, err := stream.Recv()
	wantCode(t, "unsigned telemetry", reply.GetStatus(), err, apiv2.Code_UNAUTHORIZED, "not signed")
	if _, err := stream.Recv(); err == nil {
		t.Fatal("unsigned telemetry stream stays open")
	}
	// Nothing was stored: the honest producer's first send lands at offset 0 of its queue.
	ctx := signedNode(t, "after", pubAK, pubSK)
	for i := 0; i < 2; i++ {
		resp, err := c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{msg("AclTopic", "ACL-AFTER", "x")}})
		wantCode(t, "honest send", resp.GetStatus(), err, apiv2.Code_OK)
		if resp.Entries[0].Offset != 0 {
			t.Fatalf("a refused send was stored: honest send at offset %d", resp.Entries[0].Offset)
		}
	}
}

// A proven account without the permission an RPC needs is FORBIDDEN, naming the account, the
// permission and the resource, as RocketMQ maps each RPC.
func TestGRPCACLForbidden(t *testing.T) {
	n := startACLNode(t)
	c := dial(t, n)
	pub := signedNode(t, "acl-pub", pubAK, pubSK)
	sub := signedNode(t, "acl-sub", subAK, subSK)

	send := func(ctx context.Context, topic string) (*apiv2.Status, error) {
		resp, err := c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{msg(topic, "ACL-F", "x")}})
		return resp.GetStatus(), err
	}
	st, err := send(pub, "OtherTopic")
	wantCode(t, "send to a DENY topic", st, err, apiv2.Code_FORBIDDEN, "AccessKey="+pubAK, "PUB", "topic OtherTopic")
	st, err = send(sub, "AclTopic")
	wantCode(t, "send with SUB only", st, err, apiv2.Code_FORBIDDEN, "AccessKey="+subAK, "PUB", "topic AclTopic")

	// Routes need PUB or SUB (RocketMQ's Permission.ANY).
	route, err := c.QueryRoute(sub, &apiv2.QueryRouteRequest{Topic: &apiv2.Resource{Name: "AclTopic"}})
	wantCode(t, "route with SUB", route.GetStatus(), err, apiv2.Code_OK)
	route, err = c.QueryRoute(pub, &apiv2.QueryRouteRequest{Topic: &apiv2.Resource{Name: "OtherTopic"}})
	wantCode(t, "route of a DENY topic", route.GetStatus(), err, apiv2.Code_FORBIDDEN, "topic OtherTopic")

	// A consumer's heartbeat needs SUB on its group; a producer's needs nothing.
	hb, err := c.Heartbeat(sub, &apiv2.HeartbeatRequest{ClientType: apiv2.ClientType_SIMPLE_CONSUMER, Group: &apiv2.Resource{Name: "AclGroup"}})
	wantCode(t, "consumer heartbeat", hb.GetStatus(), err, apiv2.Code_OK)
	hb, err = c.Heartbeat(sub, &apiv2.HeartbeatRequest{ClientType: apiv2.ClientType_PUSH_CONSUMER, Group: &apiv2.Resource{Name: "OtherGroup"}})
	wantCode(t, "heartbeat of a DENY group", hb.GetStatus(), err, apiv2.Code_FORBIDDEN, "group OtherGroup")
	hb, err = c.Heartbeat(pub, &apiv2.HeartbeatRequest{ClientType: apiv2.ClientType_PRODUCER})
	wantCode(t, "producer heartbeat", hb.GetStatus(), err, apiv2.Code_OK)
	end, err := c.NotifyClientTermination(pub, &apiv2.NotifyClientTerminationRequest{Group: &apiv2.Resource{Name: "OtherGroup"}})
	wantCode(t, "termination naming a DENY group", end.GetStatus(), err, apiv2.Code_FORBIDDEN, "group OtherGroup")

	// A hostile name is checked as the handler checks it before it is echoed.
	long := strings.Repeat("x", 100000)
	st, err = send(pub, long)
	wantCode(t, "send to an illegal topic", st, err, apiv2.Code_ILLEGAL_TOPIC)
	if len(st.GetMessage()) > 1000 {
		t.Fatalf("refusal echoes %d bytes", len(st.GetMessage()))
	}

	// Telemetry: each settings command is checked; a refused one is answered with its status
	// and the stream stays for the next.
	stream, err := c.Telemetry(sub)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s    *apiv2.Settings
		code apiv2.Code
		says string
	}{
		{consumerSettings("OtherGroup", "AclTopic"), apiv2.Code_FORBIDDEN, "group OtherGroup"},
		{consumerSettings("AclGroup", "OtherTopic"), apiv2.Code_FORBIDDEN, "topic OtherTopic"},
		{producerSettings("AclTopic"), apiv2.Code_FORBIDDEN, "PUB permission on topic AclTopic"},
		{consumerSettings("AclGroup", "AclTopic"), apiv2.Code_OK, ""},
	} {
		if err := stream.Send(&apiv2.TelemetryCommand{Command: &apiv2.TelemetryCommand_Settings{Settings: tc.s}}); err != nil {
			t.Fatal(err)
		}
		reply, err := stream.Recv()
		wantCode(t, "settings", reply.GetStatus(), err, tc.code, tc.says)
		if tc.code == apiv2.Code_OK && reply.GetSettings() == nil {
			t.Fatalf("admitted settings answered without settings: %v", reply)
		}
	}
	stream.CloseSend()

	if node.Of(n).ACLRefusals() == 0 {
		t.Fatal("refusals are not counted")
	}
}

// UpdateACL applies to the gRPC port at once: a permission taken away refuses the next call.
func TestGRPCACLReload(t *testing.T) {
	n := startACLNode(t)
	c := dial(t, n)
	ctx := signedNode(t, "acl-reload", pubAK, pubSK)
	resp, err := c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{msg("AclTopic", "ACL-R1", "x")}})
	wantCode(t, "send before", resp.GetStatus(), err, apiv2.Code_OK)
	cfg := aclConfig()
	cfg.Accounts[1].TopicPerms = nil
	if err := n.UpdateACL(cfg); err != nil {
		t.Fatal(err)
	}
	resp, err = c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{msg("AclTopic", "ACL-R2", "x")}})
	wantCode(t, "send after", resp.GetStatus(), err, apiv2.Code_FORBIDDEN, "topic AclTopic")
}
