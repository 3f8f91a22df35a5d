package proxy_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/acl"
	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/proxy"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// BenchmarkGRPCSend is one SendMessage of a 1 KiB body through the endpoint, plaintext: without
// ACL, and (ACL) signed by an account the node checks, whose broker request is signed in turn.
func BenchmarkGRPCSend(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchSend(b, nil) })
	b.Run("ACL", func(b *testing.B) {
		benchSend(b, &acl.Config{Accounts: []acl.Account{
			{AccessKey: "benchAdmin", SecretKey: "benchAdminSecret", Admin: true},
			{AccessKey: "benchProducer", SecretKey: "benchProducerSecret", TopicPerms: []string{"BenchTopic=PUB"}},
		}})
	})
}

func benchSend(b *testing.B, cfg *acl.Config) {
	l := zerolog.Nop()
	n, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", Logger: &l,
		Store:    config.Store{Dir: b.TempDir(), SegmentBytes: 64 << 20},
		GRPC:     config.GRPC{Listen: "127.0.0.1:0", Service: proxy.Service()},
		Security: config.Security{ACL: cfg}})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	a, err := admin.New(admin.Options{NameServers: []string{n.NameServerAddr()}, Transport: n.NewTransport(),
		Credentials: remoting.Credentials{AccessKey: "benchAdmin", SecretKey: "benchAdminSecret"}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.CreateTopic(ctx, n.BrokerAddr(), admin.TopicConfig{Topic: "BenchTopic", ReadQueueNums: 4, WriteQueueNums: 4}); err != nil {
		b.Fatal(err)
	}
	a.Close()
	cc, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	c := apiv2.NewMessagingServiceClient(cc)
	ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "bench")
	if cfg != nil {
		dt := time.Now().UTC().Format("20060102T150405Z")
		m := hmac.New(sha1.New, []byte("benchProducerSecret"))
		m.Write([]byte(dt))
		ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-date-time", dt, "authorization",
			"MQv2-HMAC-SHA1 Credential=benchProducer, SignedHeaders=x-mq-date-time, Signature="+hex.EncodeToString(m.Sum(nil)))
	}
	req := &apiv2.SendMessageRequest{Messages: []*apiv2.Message{{Topic: &apiv2.Resource{Name: "BenchTopic"}, Body: make([]byte, 1024),
		SystemProperties: &apiv2.SystemProperties{MessageId: "BENCH", MessageType: apiv2.MessageType_NORMAL,
			BornTimestamp: timestamppb.Now(), BornHost: "10.0.0.9", BodyEncoding: apiv2.Encoding_IDENTITY}}}}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		resp, err := c.SendMessage(ctx, req)
		if err == nil && resp.Status.Code == apiv2.Code_OK {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal(resp, err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := c.SendMessage(ctx, req)
		if err != nil || resp.Status.Code != apiv2.Code_OK {
			b.Fatal(resp, err)
		}
	}
}
