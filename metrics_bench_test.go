package mq_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/metrics"
	"github.com/mqgo/mq/producer"
	"github.com/rs/zerolog"
)

// BenchmarkSendTCPMetrics is a synchronous 1 KiB send over TCP to a node with its request
// metrics observed (on, as every node runs) and not (off), in one binary so that benchstat
// compares like with like: `go test -bench SendTCPMetrics -count 10 | benchstat -col /metrics -`.
// The per-topic counters are on in both: they are the broker's (GET_BROKER_RUNTIME_INFO).
func BenchmarkSendTCPMetrics(b *testing.B) {
	for _, mode := range []string{"on", "off"} {
		b.Run("metrics="+mode, func(b *testing.B) {
			l := zerolog.Nop()
			n, err := mq.StartNode(mq.Options{
				Listen: "127.0.0.1:0",
				Logger: &l,
				Store:  config.Store{Dir: b.TempDir(), SegmentBytes: 128 << 20},
				HTTP:   config.HTTP{Metrics: metrics.Prometheus()},
			})
			if err != nil {
				b.Fatal(err)
			}
			defer n.Close()
			if mode == "off" {
				n.WithoutRequestMetrics()
			}
			p, err := producer.New(producer.WithNameServers(n.Addr()), producer.WithLogger(&l))
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			msg := producer.NewMessage("BenchMetrics", bytes.Repeat([]byte("x"), 1024))
			ctx := context.Background()
			if _, err := p.SendSync(ctx, msg); err != nil { // route, connection, topic
				b.Fatal(err)
			}
			b.SetBytes(1024)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := p.SendSync(ctx, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
