package producer_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/producer"
	"github.com/rs/zerolog"
)

// Send benchmarks through the whole producer against one node on port 0, in-process and over
// TCP, with 1 KiB bodies (under the compression threshold). Allocations include the node's,
// which runs in the same process.
//
//	go test -run '^$' -bench 'ProducerSend' -count 6 ./producer

const sendBenchBody = 1024

var sendBenchSeq atomic.Int64

// sendBenchProducer starts a node and a producer reaching it by kind ("inproc" or "tcp") with
// extra options, and sends once so the topic exists and its route is cached before the timer
// starts.
func sendBenchProducer(b *testing.B, kind string, extra ...producer.Option) (*producer.Producer, string) {
	b.Helper()
	return sendBenchProducerOn(b, mq.Options{}, kind, extra...)
}

// sendBenchProducerOn is sendBenchProducer with a node of the given options (ACL, TLS); its
// listener, store and logger are the benchmark's.
func sendBenchProducerOn(b *testing.B, nodeOpts mq.Options, kind string, extra ...producer.Option) (*producer.Producer, string) {
	b.Helper()
	l := zerolog.New(zerolog.NewTestWriter(b)).Level(zerolog.ErrorLevel)
	nodeOpts.Listen, nodeOpts.Store.Dir, nodeOpts.Logger, nodeOpts.Store.SegmentBytes = "127.0.0.1:0", b.TempDir(), &l, 256<<20
	n, err := mq.StartNode(nodeOpts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { n.Close() })
	seq := sendBenchSeq.Add(1)
	opts := []producer.Option{producer.WithNameServers(n.Addr()), producer.WithGroup("bench-send-pg"),
		producer.WithInstanceName(fmt.Sprintf("bench-send-%d", seq)), producer.WithLogger(&l)}
	if kind == "inproc" {
		opts = append(opts, producer.WithOwnedTransport(n.NewTransport()))
	}
	p, err := producer.New(append(opts, extra...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	topic := fmt.Sprintf("BenchSend_%d", seq)
	if _, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte("warmup"))); err != nil {
		b.Fatal(err)
	}
	return p, topic
}

// BenchmarkProducerSendSync sends b.N messages one after the other, each waiting for its answer.
func BenchmarkProducerSendSync(b *testing.B) {
	for _, kind := range []string{"inproc", "tcp"} {
		b.Run(kind, func(b *testing.B) {
			p, topic := sendBenchProducer(b, kind)
			benchSendSync(b, p, topic)
		})
	}
}

// benchSendSync sends b.N messages of sendBenchBody bytes to topic, one after the other.
func benchSendSync(b *testing.B, p *producer.Producer, topic string) {
	msg := producer.NewMessage(topic, bytes.Repeat([]byte("x"), sendBenchBody)).WithTags("bench")
	ctx := context.Background()
	b.SetBytes(sendBenchBody)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := p.SendSync(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProducerSendAsync starts b.N sends without waiting (at most the default number in
// flight) and stops when the last callback ran.
func BenchmarkProducerSendAsync(b *testing.B) {
	for _, kind := range []string{"inproc", "tcp"} {
		b.Run(kind, func(b *testing.B) { benchSendAsync(b, kind) })
	}
}

// BenchmarkProducerSendAsyncBatched is BenchmarkProducerSendAsync with WithAsyncBatching: its
// defaults (RocketMQ 5's autoBatch: 10 ms linger, 32 KiB batches), and batches of up to 1 MiB
// (about kgo's ProducerBatchMaxBytes).
func BenchmarkProducerSendAsyncBatched(b *testing.B) {
	for _, kind := range []string{"inproc", "tcp"} {
		for _, maxBytes := range []int{producer.DefaultAsyncBatchMaxBytes, 1 << 20} {
			b.Run(fmt.Sprintf("%s/max=%dKiB", kind, maxBytes>>10), func(b *testing.B) {
				benchSendAsync(b, kind, producer.WithAsyncBatching(producer.DefaultAsyncBatchLinger, maxBytes))
			})
		}
	}
}

func benchSendAsync(b *testing.B, kind string, opts ...producer.Option) {
	p, topic := sendBenchProducer(b, kind, opts...)
	msg := producer.NewMessage(topic, bytes.Repeat([]byte("x"), sendBenchBody)).WithTags("bench")
	ctx := context.Background()
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	cb := func(_ *producer.SendResult, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
		}
		wg.Done()
	}
	b.SetBytes(sendBenchBody)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		wg.Add(1)
		if err := p.SendAsync(ctx, msg, cb); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
}
