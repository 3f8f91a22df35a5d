package interop

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/mqgo/mq"
	mqconsumer "github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// Push consume throughput of the official client against ours, on the same kind of topic: 8
// queues pre-filled with b.N 1 KiB messages, a concurrent listener that does nothing, both
// clients over TCP with their default pull batch (32), consume batch (1) and goroutines (20).
// The time runs from Start to the last message.
//
//	cd interop && go test -run '^$' -bench Consume -benchtime 20000x

const consumeBenchQueues = 8

var consumeBenchSeq atomic.Int64

// prefilledTopic starts a node and stores count 1 KiB messages in a new topic of 8 queues.
func prefilledTopic(b *testing.B, count int) (*mq.Node, string) {
	b.Helper()
	n := startBenchNode(b)
	topic := fmt.Sprintf("ConsumeBench_%d", consumeBenchSeq.Add(1))
	p := newOurProducer(b, n, producer.WithGroup("consume-bench-pg"), producer.WithOwnedTransport(n.NewTransport()),
		producer.WithDefaultTopicQueueNums(consumeBenchQueues))
	body := bytes.Repeat([]byte("x"), benchBody)
	for sent := 0; sent < count; {
		msgs := make([]*producer.Message, min(benchBatch, count-sent))
		for i := range msgs {
			msgs[i] = producer.NewMessage(topic, body)
		}
		if _, err := p.SendBatch(context.Background(), msgs...); err != nil {
			b.Fatal(err)
		}
		sent += len(msgs)
	}
	waitRouteTB(b, n, topic)
	return n, topic
}

// consumeUntil starts the consumer and waits until the listener counted b.N messages, timing
// that and reporting msgs/s.
func consumeUntil(b *testing.B, got *atomic.Int64, done <-chan struct{}, start func() error) {
	b.Helper()
	b.SetBytes(benchBody)
	b.ReportAllocs()
	b.ResetTimer()
	t0 := time.Now()
	if err := start(); err != nil {
		b.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5*time.Minute + time.Duration(b.N)*time.Millisecond):
		b.Fatalf("consumed %d of %d", got.Load(), b.N)
	}
	elapsed := time.Since(t0)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
}

func countTo(got *atomic.Int64, target int64, done chan struct{}, k int) {
	if got.Add(int64(k)) == target {
		close(done)
	}
}

func BenchmarkOfficialPushConsume(b *testing.B) {
	n, topic := prefilledTopic(b, b.N)
	seq := consumeBenchSeq.Add(1)
	var got atomic.Int64
	done := make(chan struct{})
	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(resolver(n)),
		consumer.WithGroupName(fmt.Sprintf("consume-bench-official-%d", seq)),
		consumer.WithInstance(fmt.Sprintf("consume-bench-official-%d", seq)),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithConsumerModel(consumer.Clustering))
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			countTo(&got, int64(b.N), done, len(msgs))
			return consumer.ConsumeSuccess, nil
		}); err != nil {
		b.Fatal(err)
	}
	consumeUntil(b, &got, done, c.Start)
	// Shut down only once the consumed offsets reached the broker (the official client races
	// with itself when it shuts down in the middle of its work).
	deadline := time.Now().Add(20 * time.Second)
	for {
		if d, ok := c.GetOffsetDiffMap()[topic]; ok && d == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Logf("offsets still behind at shutdown: %v", c.GetOffsetDiffMap())
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.Shutdown(); err != nil {
		b.Error(err)
	}
}

func BenchmarkOurPushConsume(b *testing.B) {
	for _, kind := range []string{"tcp", "inproc"} {
		b.Run(kind, func(b *testing.B) {
			n, topic := prefilledTopic(b, b.N)
			seq := consumeBenchSeq.Add(1)
			var got atomic.Int64
			done := make(chan struct{})
			l := zerolog.New(zerolog.NewTestWriter(b)).Level(zerolog.ErrorLevel)
			opts := []mqconsumer.Option{mqconsumer.WithNameServers(n.Addr()),
				mqconsumer.WithGroup(fmt.Sprintf("consume-bench-ours-%d", seq)),
				mqconsumer.WithInstanceName(fmt.Sprintf("consume-bench-ours-%d", seq)),
				mqconsumer.WithConsumeFrom(mqconsumer.FromFirstOffset, time.Time{}), mqconsumer.WithLogger(&l)}
			if kind == "inproc" {
				opts = append(opts, mqconsumer.WithOwnedTransport(n.NewTransport()))
			}
			pc, err := mqconsumer.NewPushConsumer(opts...)
			if err != nil {
				b.Fatal(err)
			}
			if err := pc.Subscribe(topic, "*", func(_ context.Context, msgs []*mqconsumer.Message) (mqconsumer.ConsumeResult, error) {
				countTo(&got, int64(b.N), done, len(msgs))
				return mqconsumer.ConsumeSuccess, nil
			}); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { pc.Close() })
			consumeUntil(b, &got, done, pc.Start)
		})
	}
}

// waitRouteTB is waitRoute for benchmarks.
func waitRouteTB(tb testing.TB, n *mq.Node, topic string) {
	tb.Helper()
	c := remoting.NewClient(remoting.ClientOptions{})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := c.InvokeSync(ctx, n.Addr(), route.BuildGetRouteInfo(topic))
		cancel()
		if err == nil && resp.Code == remoting.Success {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no route for %s", topic)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
