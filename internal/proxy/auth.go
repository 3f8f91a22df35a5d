package proxy

import (
	"context"
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mqgo/mq/internal/acl"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// The 5.x SDKs' ACL metadata (rocketmq-clients docs/transport.md): every call carries
// "authorization: MQv2-HMAC-SHA1 Credential=<AccessKey>[/...], SignedHeaders=x-mq-date-time,
// Signature=<hex HMAC-SHA1 of the x-mq-date-time value keyed with the SecretKey>".
const (
	authorizationHeader = "authorization"
	dateTimeHeader      = "x-mq-date-time"
	authAlgorithm       = "MQv2-HMAC-SHA1"
)

// The x-mq-date-time value is not checked against the clock: RocketMQ's proxy checks it
// against nothing either, and the SDKs' clocks are the deployment's. A signature is therefore
// a bearer token for as long as the account's secret stays; TLS keeps it from eavesdroppers.

// auth checks calls against the node's ACL. A nil *auth (ACL off) lets every call through.
type auth struct {
	guard *acl.Guard
}

// signerKey is the context key of a call's *callSigner.
type signerKey struct{}

// callSigner holds the signer of the account a call was admitted as. A Telemetry stream's
// handler reads its context once, before any command, so the holder is put in that context
// first and filled as each command is admitted.
type callSigner struct {
	p atomic.Pointer[remoting.Signer]
}

// signRequest signs a broker request made for the call in ctx with the caller's account, so the
// broker's own ACL checks it as that account's request (and its post-read checks on a
// message's own topic run too). Without ACL it does nothing.
func signRequest(ctx context.Context, req *remoting.Command) {
	if h, _ := ctx.Value(signerKey{}).(*callSigner); h != nil {
		if s := h.p.Load(); s != nil {
			s.Sign(req)
		}
	}
}

// caller reads what the call in ctx says about its account. A call without authorization
// metadata names no account; the checker refuses it. A status is an authorization value that
// does not parse.
func caller(ctx context.Context) (*acl.Call, *apiv2.Status) {
	call := &acl.Call{}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		call.Peer = p.Addr.String()
	}
	md, _ := metadata.FromIncomingContext(ctx)
	values := md.Get(authorizationHeader)
	if len(values) == 0 || values[0] == "" {
		return call, nil
	}
	unauthorized := func(why string) (*acl.Call, *apiv2.Status) {
		return nil, status(apiv2.Code_UNAUTHORIZED, "authorization metadata: "+why+
			` (want "`+authAlgorithm+` Credential=<AccessKey>, SignedHeaders=`+dateTimeHeader+`, Signature=<hex>")`)
	}
	if len(values) > 1 {
		return unauthorized("given more than once")
	}
	algorithm, items, ok := strings.Cut(values[0], " ")
	if !ok {
		return unauthorized("no credentials after the algorithm")
	}
	if algorithm != authAlgorithm {
		return unauthorized("algorithm " + names.Quote(algorithm, len(algorithm)) + " is not " + authAlgorithm)
	}
	for _, item := range strings.Split(items, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return unauthorized("item " + names.Quote(item, len(item)) + " is not key=value")
		}
		switch k {
		case "Credential":
			// The Go SDK sends AccessKey/region/service; the AccessKey comes first in every SDK.
			call.AccessKey, _, _ = strings.Cut(v, "/")
		case "Signature":
			sig, err := hex.DecodeString(v)
			if err != nil {
				return unauthorized("Signature is not hexadecimal")
			}
			call.Signature = sig
		}
		// SignedHeaders is x-mq-date-time in every SDK; RocketMQ reads nothing else from it.
	}
	if call.AccessKey == "" {
		return unauthorized("no Credential naming an AccessKey")
	}
	dt := md.Get(dateTimeHeader)
	if len(dt) == 0 || dt[0] == "" {
		return nil, status(apiv2.Code_UNAUTHORIZED, "the call is signed but carries no "+dateTimeHeader+" metadata, the signed content")
	}
	call.Content = []byte(dt[0])
	return call, nil
}

// check authenticates the call in ctx and authorizes req; it returns the context the handler
// runs in (carrying the account's signer) or the status to answer.
func (a *auth) check(ctx context.Context, req proto.Message) (context.Context, *apiv2.Status) {
	if a == nil || !a.guard.On() {
		return ctx, nil
	}
	call, st := caller(ctx)
	if st != nil {
		return nil, st
	}
	h := &callSigner{}
	if st := a.checkCall(h, call, req); st != nil {
		return nil, st
	}
	return context.WithValue(ctx, signerKey{}, h), nil
}

// checkCall authorizes req for call and puts the account's signer in h.
func (a *auth) checkCall(h *callSigner, call *acl.Call, req proto.Message) *apiv2.Status {
	needs, st := callNeeds(req)
	if st != nil {
		return st
	}
	signer, refused := a.guard.CheckCall(call, needs)
	if refused != nil {
		code := apiv2.Code_FORBIDDEN
		if refused.Unauthenticated {
			code = apiv2.Code_UNAUTHORIZED
		}
		return status(code, refused.Reason)
	}
	h.p.Store(signer) // nil when ACL was turned off since: nothing to sign
	return nil
}

// callNeeds maps a request to the resources it needs, as RocketMQ's GrpcRequestAclParser and
// ACL 2.0's DefaultAuthorizationContextBuilder do. Names are checked as the handlers check
// them before they go anywhere (a bad one is answered as the handler would); a missing one
// needs nothing here, and the handler refuses it.
func callNeeds(req proto.Message) (*acl.Needs, *apiv2.Status) {
	n := &acl.Needs{}
	var st *apiv2.Status
	topic := func(r *apiv2.Resource, p acl.Perm) {
		if st == nil && r.GetName() != "" {
			var name string
			if name, st = resourceName(r, "topic", apiv2.Code_ILLEGAL_TOPIC, names.CheckTopic); st == nil {
				n.Topic(name, p)
			}
		}
	}
	group := func(r *apiv2.Resource) {
		if st == nil && r.GetName() != "" {
			var name string
			if name, st = resourceName(r, "consumer group", apiv2.Code_ILLEGAL_CONSUMER_GROUP, names.CheckGroup); st == nil {
				n.Group(name, acl.PermSub)
			}
		}
	}
	switch r := req.(type) {
	case *apiv2.QueryRouteRequest:
		topic(r.GetTopic(), acl.PermAny)
	case *apiv2.HeartbeatRequest:
		switch r.GetClientType() {
		case apiv2.ClientType_PUSH_CONSUMER, apiv2.ClientType_SIMPLE_CONSUMER, apiv2.ClientType_PULL_CONSUMER:
			group(r.GetGroup())
		}
	case *apiv2.SendMessageRequest:
		// The handler refuses messages of different topics in one request.
		if len(r.GetMessages()) > 0 {
			topic(r.GetMessages()[0].GetTopic(), acl.PermPub)
		}
	case *apiv2.QueryAssignmentRequest:
		group(r.GetGroup())
		topic(r.GetTopic(), acl.PermSub)
	case *apiv2.ReceiveMessageRequest:
		group(r.GetGroup())
		topic(r.GetMessageQueue().GetTopic(), acl.PermSub)
	case *apiv2.AckMessageRequest:
		group(r.GetGroup())
		topic(r.GetTopic(), acl.PermSub)
	case *apiv2.ForwardMessageToDeadLetterQueueRequest:
		group(r.GetGroup())
		topic(r.GetTopic(), acl.PermSub)
	case *apiv2.ChangeInvisibleDurationRequest:
		// RocketMQ 5.3 needs the group only; 5.1 and the broker's own
		// CHANGE_MESSAGE_INVISIBLETIME need the topic too.
		group(r.GetGroup())
		topic(r.GetTopic(), acl.PermSub)
	case *apiv2.EndTransactionRequest:
		topic(r.GetTopic(), acl.PermPub)
	case *apiv2.RecallMessageRequest:
		topic(r.GetTopic(), acl.PermPub)
	case *apiv2.NotifyClientTerminationRequest:
		group(r.GetGroup()) // a producer names none
	// RPCs RocketMQ's proxy does not map (it does not serve them): as the broker requests
	// they stand for (PULL_MESSAGE, UPDATE/QUERY_CONSUMER_OFFSET, GET_MAX/MIN_OFFSET).
	case *apiv2.PullMessageRequest:
		group(r.GetGroup())
		topic(r.GetMessageQueue().GetTopic(), acl.PermSub)
	case *apiv2.UpdateOffsetRequest:
		group(r.GetGroup())
		topic(r.GetMessageQueue().GetTopic(), acl.PermSub)
	case *apiv2.GetOffsetRequest:
		group(r.GetGroup())
		topic(r.GetMessageQueue().GetTopic(), acl.PermSub)
	case *apiv2.QueryOffsetRequest:
		topic(r.GetMessageQueue().GetTopic(), acl.PermSub)
	case *apiv2.SyncLiteSubscriptionRequest:
		group(r.GetGroup())
		topic(r.GetTopic(), acl.PermSub)
	case *apiv2.TelemetryCommand:
		settingsNeeds(r.GetSettings(), topic, group)
	}
	if st != nil {
		return nil, st
	}
	return n, nil
}

// settingsNeeds adds what a client's settings need: PUB on each topic it publishes to, SUB on
// its group and on each topic it subscribes to. Settings over the handler's bounds are
// answered here as the handler would.
func settingsNeeds(s *apiv2.Settings, topic func(*apiv2.Resource, acl.Perm), group func(*apiv2.Resource)) {
	if s == nil {
		return
	}
	if p := s.GetPublishing(); p != nil && len(p.GetTopics()) <= maxSubscriptions {
		for _, t := range p.GetTopics() {
			topic(t, acl.PermPub)
		}
	}
	if sub := s.GetSubscription(); sub != nil {
		group(sub.GetGroup())
		if len(sub.GetSubscriptions()) <= maxSubscriptions {
			for _, e := range sub.GetSubscriptions() {
				topic(e.GetTopic(), acl.PermSub)
			}
		}
	}
}

// unaryInterceptor checks each unary call before its handler; a refused call is answered with
// the method's response carrying the status, as RocketMQ's proxy answers (its Status field),
// so the SDKs report the reason.
func (a *auth) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	m, ok := req.(proto.Message)
	if !ok {
		return handler(ctx, req)
	}
	ctx2, st := a.check(ctx, m)
	if st == nil {
		return handler(ctx2, req)
	}
	if resp := statusResponse(info.FullMethod, st); resp != nil {
		return resp, nil
	}
	return nil, grpcStatusOf(st)
}

// statusResponse builds the response message of a MessagingService method with only its status
// set; nil for a method it does not know.
func statusResponse(fullMethod string, st *apiv2.Status) proto.Message {
	out := responseTypes()[fullMethod]
	if out == nil {
		return nil
	}
	resp := out.New()
	f := resp.Descriptor().Fields().ByName("status")
	if f == nil || f.Message() == nil || f.Message().FullName() != st.ProtoReflect().Descriptor().FullName() {
		return nil
	}
	resp.Set(f, protoreflect.ValueOfMessage(st.ProtoReflect()))
	return resp.Interface()
}

// responseTypes maps each MessagingService method's full name to its response type.
var responseTypes = sync.OnceValue(func() map[string]protoreflect.MessageType {
	m := make(map[string]protoreflect.MessageType)
	svc := apiv2.File_apache_rocketmq_v2_service_proto.Services().ByName("MessagingService")
	for i := 0; i < svc.Methods().Len(); i++ {
		md := svc.Methods().Get(i)
		mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
		if err == nil {
			m["/"+string(svc.FullName())+"/"+string(md.Name())] = mt
		}
	}
	return m
})

// streamInterceptor checks a Telemetry stream: the caller's account once (the metadata comes
// once), each command's resources as it arrives (RocketMQ's proxy checks every command). A
// refused command is answered on the stream with its status and not handed to the handler.
func (a *auth) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if a == nil || !a.guard.On() {
		return handler(srv, ss)
	}
	call, st := caller(ss.Context())
	h := &callSigner{}
	if st == nil {
		st = a.checkCall(h, call, &apiv2.TelemetryCommand{}) // the account alone
	}
	if st != nil {
		// A stream that proves no account ends; the SDKs wait for an answer to their
		// settings, and the status tells them why.
		return ss.SendMsg(&apiv2.TelemetryCommand{Status: st})
	}
	ctx := context.WithValue(ss.Context(), signerKey{}, h)
	return handler(srv, &authedStream{ServerStream: ss, a: a, call: call, ctx: ctx, signer: h})
}

// authedStream is a Telemetry stream whose commands are checked as they are read. Its writes
// are serialized, since a refusal is written from the reading goroutine while the handler may
// write from others.
type authedStream struct {
	grpc.ServerStream
	a      *auth
	call   *acl.Call
	ctx    context.Context
	signer *callSigner

	mu sync.Mutex // writes
}

func (s *authedStream) Context() context.Context { return s.ctx }

func (s *authedStream) SendMsg(m any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ServerStream.SendMsg(m)
}

func (s *authedStream) RecvMsg(m any) error {
	for {
		if err := s.ServerStream.RecvMsg(m); err != nil {
			return err
		}
		pm, ok := m.(proto.Message)
		if !ok {
			return nil
		}
		st := s.a.checkCall(s.signer, s.call, pm)
		if st == nil {
			return nil
		}
		if err := s.SendMsg(&apiv2.TelemetryCommand{Status: st}); err != nil {
			return err
		}
	}
}

// grpcStatusOf is a refusal as a gRPC error, for a method whose response has no status.
func grpcStatusOf(st *apiv2.Status) error {
	code := codes.PermissionDenied
	if st.GetCode() == apiv2.Code_UNAUTHORIZED {
		code = codes.Unauthenticated
	}
	return grpcstatus.Error(code, st.GetMessage())
}
