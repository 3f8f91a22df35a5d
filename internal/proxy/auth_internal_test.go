package proxy

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"net"
	"strings"
	"testing"

	pub "github.com/mqgo/mq/acl"
	"github.com/mqgo/mq/internal/acl"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/remoting"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// named fills every Resource the request names (recursively, one element of each list) with
// name, so the request needs a permission on each; a Telemetry command carries settings that
// publish and subscribe.
func named(m protoreflect.Message, name string, depth int) {
	if m.Descriptor().FullName() == "apache.rocketmq.v2.Resource" {
		m.Set(m.Descriptor().Fields().ByName("name"), protoreflect.ValueOfString(name))
		return
	}
	if depth > 4 {
		return
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		if f.Message() == nil || f.IsMap() || f.ContainingOneof() != nil && !f.ContainingOneof().IsSynthetic() {
			continue
		}
		if f.IsList() {
			l := m.Mutable(f).List()
			e := l.NewElement()
			named(e.Message(), name, depth+1)
			l.Append(e)
			continue
		}
		named(m.Mutable(f).Message(), name, depth+1)
	}
}

// Every RPC of MessagingService is in the ACL table: a request naming resources is refused
// to an account that owns nothing and admitted for one that owns PUB|SUB on everything. An RPC
// added to the API without a row fails here.
func TestACLTableCoversEveryRPC(t *testing.T) {
	c, err := acl.New(&pub.Config{Accounts: []pub.Account{
		{AccessKey: "nothing01", SecretKey: "secret0001", DefaultTopicPerm: "DENY", DefaultGroupPerm: "DENY"},
		{AccessKey: "everything", SecretKey: "secret0002", DefaultTopicPerm: "PUB|SUB", DefaultGroupPerm: "PUB|SUB"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var g acl.Guard
	g.Store(c)
	a := &auth{guard: &g}
	svc := apiv2.File_apache_rocketmq_v2_service_proto.Services().ByName("MessagingService")
	if svc.Methods().Len() < 15 {
		t.Fatalf("%d methods", svc.Methods().Len())
	}
	for i := 0; i < svc.Methods().Len(); i++ {
		md := svc.Methods().Get(i)
		mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
		if err != nil {
			t.Fatal(err)
		}
		req := mt.New()
		named(req, "Res", 0)
		switch r := req.Interface().(type) {
		case *apiv2.HeartbeatRequest:
			r.ClientType = apiv2.ClientType_SIMPLE_CONSUMER
		case *apiv2.TelemetryCommand:
			s := &apiv2.Settings{}
			s.PubSub = &apiv2.Settings_Subscription{Subscription: &apiv2.Subscription{Group: &apiv2.Resource{Name: "Res"},
				Subscriptions: []*apiv2.SubscriptionEntry{{Topic: &apiv2.Resource{Name: "Res"}}}}}
			r.Command = &apiv2.TelemetryCommand_Settings{Settings: s}
		}
		for _, who := range []struct {
			ak, sk string
			want   apiv2.Code
		}{{"nothing01", "secret0001", apiv2.Code_FORBIDDEN}, {"everything", "secret0002", apiv2.Code_OK}} {
			h := &callSigner{}
			call := &acl.Call{Peer: "10.1.2.3:5000", AccessKey: who.ak, Content: []byte("20261201T000000Z")}
			call.Signature = mac(who.sk, "20261201T000000Z")
			st := a.checkCall(h, call, req.Interface())
			got := apiv2.Code_OK
			if st != nil {
				got = st.Code
			}
			if got != who.want {
				t.Errorf("%s as %s: %v, want %v", md.Name(), who.ak, st, who.want)
			}
			if got == apiv2.Code_OK && h.p.Load() == nil {
				t.Errorf("%s: admitted without a signer for the broker requests", md.Name())
			}
		}
		// A refused unary call is answered with the method's own response type and status.
		if !md.IsStreamingClient() {
			full := "/" + string(svc.FullName()) + "/" + string(md.Name())
			resp := statusResponse(full, status(apiv2.Code_FORBIDDEN, "no"))
			if resp == nil || resp.ProtoReflect().Descriptor().FullName() != md.Output().FullName() {
				t.Errorf("%s: refusal response %v", md.Name(), resp)
			}
		}
	}
}

func mac(secret, content string) []byte {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(content))
	return m.Sum(nil)
}

// The broker requests of an admitted call carry the caller's account and a signature the
// broker's ACL verifies: the endpoint is not a trusted link.
func TestSignedBrokerRequests(t *testing.T) {
	c, err := acl.New(&pub.Config{Accounts: []pub.Account{
		{AccessKey: "producer01", SecretKey: "secret0001", DefaultTopicPerm: "PUB"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var g acl.Guard
	g.Store(c)
	a := &auth{guard: &g}
	dt := "20261201T101010Z"
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(
		"authorization", "MQv2-HMAC-SHA1 Credential=producer01, SignedHeaders=x-mq-date-time, Signature="+strings.ToUpper(hex.EncodeToString(mac("secret0001", dt))),
		"x-mq-date-time", dt))
	ctx = peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 4000}})
	ctx, st := a.check(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{{Topic: &apiv2.Resource{Name: "T1"}}}})
	if st != nil {
		t.Fatal(st)
	}
	req := remoting.NewRequest(remoting.SendMessageV2, map[string]string{"a": "group", "b": "T1"}, []byte("body"))
	signRequest(ctx, req)
	if req.ExtFields[remoting.ExtAccessKey] != "producer01" {
		t.Fatalf("broker request not signed: %v", req.ExtFields)
	}
	if refused := c.Check("127.0.0.2:9", req); refused != nil {
		t.Fatalf("the broker refuses the signed request: %s", refused.Remark)
	}
	// Without ACL nothing is added.
	plain := remoting.NewRequest(remoting.SendMessageV2, map[string]string{"b": "T1"}, nil)
	signRequest(context.Background(), plain)
	if _, ok := plain.ExtFields[remoting.ExtAccessKey]; ok {
		t.Fatal("signed without a caller")
	}
}
