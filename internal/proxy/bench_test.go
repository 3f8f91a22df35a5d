package proxy_test

import (
	"fmt"
	"testing"

	"github.com/mqgo/mq/internal/grpcapi/apiv2"
)

// BenchmarkGRPCSend sends 1 KiB messages through the endpoint, one SendMessage per message
// from one caller, as a 5.x SDK's sync send: the gRPC path's round trip beside remoting's
// (bench/'s mq-grpc column runs the same against the other peers).
func BenchmarkGRPCSend(b *testing.B) {
	n := startNode(b, nil)
	c := dial(b, n)
	createTopic(b, n, c, "BenchGRPCSend", 4, "")
	ctx := as(b, "bench-send")
	body := make([]byte, 1024)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		m := msg("BenchGRPCSend", fmt.Sprintf("bench-%d", i), "")
		m.Body = body
		resp, err := c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{m}})
		if err != nil || resp.Status.Code != apiv2.Code_OK {
			b.Fatalf("send %d: %v %v", i, resp, err)
		}
	}
}
