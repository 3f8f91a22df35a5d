package consumer

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mqconfig "github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/node"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// Consume benchmarks: a push consumer on a topic of 8 queues, in-process and over TCP.
//
//	go test -run '^$' -bench . -benchtime 20000x ./consumer

const (
	benchBody   = 1024
	benchQueues = 8
	benchBatch  = 64
)

func startBenchNode(b *testing.B) *node.Node {
	b.Helper()
	l := zerolog.New(zerolog.NewTestWriter(b)).Level(zerolog.ErrorLevel)
	n, err := node.Start(node.Options{Options: mqconfig.Options{Listen: "127.0.0.1:0", Logger: &l, Store: mqconfig.Store{Dir: b.TempDir(), SegmentBytes: 256 << 20}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { n.Close() })
	return n
}

// benchProducer sends in-process; the topic is auto-created with 8 queues.
func benchProducer(b *testing.B, n *node.Node) *producer.Producer {
	b.Helper()
	p, err := producer.New(producer.WithNameServers(n.NameServers()...), producer.WithOwnedTransport(n.NewTransport()),
		producer.WithGroup("bench-pg"), producer.WithDefaultTopicQueueNums(benchQueues),
		producer.WithInstanceName(fmt.Sprintf("bench-p-%d", benchSeq.Add(1))))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

var benchSeq atomic.Int64

// fill stores count 1 KiB messages in topic, in batches.
func fill(b *testing.B, p *producer.Producer, topic string, count int) {
	b.Helper()
	fillBody(b, p, topic, count, bytes.Repeat([]byte("x"), benchBody))
}

func fillBody(b *testing.B, p *producer.Producer, topic string, count int, body []byte) {
	b.Helper()
	ctx := context.Background()
	for sent := 0; sent < count; {
		k := min(benchBatch, count-sent)
		msgs := make([]*producer.Message, k)
		for i := range msgs {
			msgs[i] = producer.NewMessage(topic, body)
		}
		if _, err := p.SendBatch(ctx, msgs...); err != nil {
			b.Fatal(err)
		}
		sent += k
	}
}

func benchConsumer(b *testing.B, n *node.Node, kind, topic string, l Listener, opts ...Option) *PushConsumer {
	b.Helper()
	log := zerolog.New(zerolog.NewTestWriter(b)).Level(zerolog.ErrorLevel)
	seq := benchSeq.Add(1)
	base := []Option{WithNameServers(n.Addr()), WithGroup(fmt.Sprintf("bench-cg-%d", seq)),
		WithInstanceName(fmt.Sprintf("bench-c-%d", seq)), WithConsumeFrom(FromFirstOffset, time.Time{}), WithLogger(&log),
		WithRebalanceInterval(200 * time.Millisecond)}
	if kind == "inproc" {
		base = append(base, WithOwnedTransport(n.NewTransport()))
	}
	pc, err := NewPushConsumer(append(base, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	if err := pc.Subscribe(topic, "*", l); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pc.Close() })
	return pc
}

// BenchmarkPushConsume consumes b.N pre-filled 1 KiB messages with a concurrent listener that
// does nothing; the time runs from Start to the last message.
func BenchmarkPushConsume(b *testing.B) {
	for _, kind := range []string{"tcp", "inproc"} {
		b.Run(kind, func(b *testing.B) {
			n := startBenchNode(b)
			p := benchProducer(b, n)
			topic := fmt.Sprintf("BenchConsume_%d", benchSeq.Add(1))
			fill(b, p, topic, b.N)
			var got atomic.Int64
			done := make(chan struct{})
			target := int64(b.N)
			pc := benchConsumer(b, n, kind, topic, func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
				if got.Add(int64(len(msgs))) == target {
					close(done)
				}
				return ConsumeSuccess, nil
			})
			b.SetBytes(benchBody)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			if err := pc.Start(); err != nil {
				b.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(5*time.Minute + time.Duration(b.N)*time.Millisecond):
				b.Fatalf("consumed %d of %d", got.Load(), b.N)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
		})
	}
}

// BenchmarkEndToEndLatency sends b.N 1 KiB messages at 5,000 a second (so about b.N/5000
// seconds) to a started push consumer; each body starts with its send time, and the consumer
// records receive time minus send time. Reports p50, p90, p99 and max in milliseconds.
func BenchmarkEndToEndLatency(b *testing.B) {
	const rate = 5000
	for _, kind := range []string{"tcp", "inproc"} {
		b.Run(kind, func(b *testing.B) {
			n := startBenchNode(b)
			p := benchProducer(b, n)
			topic := fmt.Sprintf("BenchLatency_%d", benchSeq.Add(1))
			fillBody(b, p, topic, 1, []byte("create")) // the topic and its route
			var mu sync.Mutex
			lat := make([]time.Duration, 0, b.N)
			done := make(chan struct{})
			// The topic-creating message and the warm-up ones, which reach every queue.
			const warmUps = 1 + 4*benchQueues
			var warm atomic.Int64
			warmed := make(chan struct{})
			pc := benchConsumer(b, n, kind, topic, func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
				now := time.Now()
				mu.Lock()
				defer mu.Unlock()
				for _, m := range msgs {
					if len(m.Body) != benchBody {
						if warm.Add(1) == warmUps {
							close(warmed)
						}
						continue
					}
					lat = append(lat, now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(m.Body)))))
					if len(lat) == b.N {
						close(done)
					}
				}
				return ConsumeSuccess, nil
			})
			if err := pc.Start(); err != nil {
				b.Fatal(err)
			}
			eventually(b, "every queue held", func() bool { return len(pc.Assignment()) >= benchQueues })
			// Warm up: the first messages of a new topic take tens of ms (seen at the first
			// offsets of every queue); measure the steady state.
			fillBody(b, p, topic, 4*benchQueues, []byte("warm-up"))
			select {
			case <-warmed:
			case <-time.After(10 * time.Second):
				b.Fatalf("warm-up: %d consumed", warm.Load())
			}
			b.SetBytes(benchBody)
			b.ReportAllocs() // the producer's, the broker's and the consumer's, per message
			b.ResetTimer()
			const workers = 4
			var next atomic.Int64
			errs := make(chan error, workers)
			start := time.Now()
			var wg sync.WaitGroup
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						// Wall time: the send rate is what the benchmark is about.
						time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / rate)))
						body := make([]byte, benchBody)
						binary.BigEndian.PutUint64(body, uint64(time.Now().UnixNano()))
						if _, err := p.SendSync(context.Background(), producer.NewMessage(topic, body)); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(time.Minute):
				b.Fatalf("consumed %d of %d", len(lat), b.N)
			}
			b.StopTimer()
			mu.Lock()
			defer mu.Unlock()
			slices.Sort(lat)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(lat[len(lat)/2]), "p50_ms")
			b.ReportMetric(ms(lat[len(lat)*9/10]), "p90_ms")
			b.ReportMetric(ms(lat[len(lat)*99/100]), "p99_ms")
			b.ReportMetric(ms(lat[len(lat)-1]), "max_ms")
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// BenchmarkPollConsume polls b.N pre-filled 1 KiB messages with a lite pull consumer
// (auto-commit); the time runs from Start to the last message.
func BenchmarkPollConsume(b *testing.B) {
	for _, kind := range []string{"tcp", "inproc"} {
		b.Run(kind, func(b *testing.B) {
			n := startBenchNode(b)
			p := benchProducer(b, n)
			topic := fmt.Sprintf("BenchPoll_%d", benchSeq.Add(1))
			fill(b, p, topic, b.N)
			c := benchPullConsumer(b, n, kind, topic)
			b.SetBytes(benchBody)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			if err := c.Start(); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute+time.Duration(b.N)*time.Millisecond)
			defer cancel()
			for got := 0; got < b.N; {
				msgs, err := c.Poll(ctx)
				if err != nil {
					b.Fatalf("polled %d of %d: %v", got, b.N, err)
				}
				got += len(msgs)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
		})
	}
}

func benchPullConsumer(b *testing.B, n *node.Node, kind, topic string) *PullConsumer {
	b.Helper()
	log := zerolog.New(zerolog.NewTestWriter(b)).Level(zerolog.ErrorLevel)
	seq := benchSeq.Add(1)
	opts := []Option{WithNameServers(n.Addr()), WithGroup(fmt.Sprintf("bench-pull-%d", seq)),
		WithInstanceName(fmt.Sprintf("bench-pull-%d", seq)), WithConsumeFrom(FromFirstOffset, time.Time{}), WithLogger(&log),
		WithRebalanceInterval(200 * time.Millisecond)}
	if kind == "inproc" {
		opts = append(opts, WithOwnedTransport(n.NewTransport()))
	}
	c, err := NewPullConsumer(opts...)
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Subscribe(topic, "*"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkDecodePull decodes a pull answer of 32 1 KiB records with a producer's usual
// properties, as the pull loop does with every answer; per message.
func BenchmarkDecodePull(b *testing.B) {
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	var body []byte
	for i := range 32 {
		props := message.MarshalProperties(map[string]string{message.PropertyUniqKey: fmt.Sprintf("7F0000010001%020X", i),
			message.PropertyWaitStoreMsgOK: "true", message.PropertyTags: "TagA"})
		m := &message.Message{Topic: "BenchTopic", QueueID: 3, Body: bytes.Repeat([]byte("x"), benchBody),
			Properties: props, BornHost: host, StoreHost: host, BornTimestamp: time.Now().UnixMilli()}
		size, err := message.RecordSize(m)
		if err != nil {
			b.Fatal(err)
		}
		rec := make([]byte, size)
		message.EncodeRecord(rec, size, m, int64(i), int64(i*size), time.Now().UnixMilli())
		body = append(body, rec...)
	}
	mq := MessageQueue{Topic: "BenchTopic", BrokerName: "broker-a", QueueID: 3}
	b.ReportAllocs()
	for b.Loop() {
		msgs, err := decodeMessages(body, mq)
		if err != nil || len(msgs) != 32 {
			b.Fatal(len(msgs), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*32), "ns/msg")
}

// BenchmarkPullCycle is one turn of a queue's pull loop and one listener call: pullOnce,
// handlePull, the hand-off to the work queue and the concurrent consume service's call, against
// a transport that answers at once with one new 1 KiB message (the shape of a pull at the e2e
// row's rate). What the consumer itself spends per message, without the network or a
// goroutine switch.
func BenchmarkPullCycle(b *testing.B) {
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	rec := &message.Message{Topic: "T", QueueID: 0, Body: bytes.Repeat([]byte("x"), benchBody), BornHost: host, StoreHost: host,
		Properties: message.MarshalProperties(map[string]string{message.PropertyUniqKey: "7F00000100010000000000000001",
			message.PropertyWaitStoreMsgOK: "true"})}
	size, err := message.RecordSize(rec)
	if err != nil {
		b.Fatal(err)
	}
	tr := &benchPullTransport{body: make([]byte, size)}
	message.EncodeRecord(tr.body, size, rec, 0, 0, time.Now().UnixMilli())
	tr.resp = remoting.NewResponse(remoting.Success, "")
	tr.resp.ExtFields = remoting.EncodeHeader(&protocol.PullMessageResponseHeader{NextBeginOffset: 1, MinOffset: 1000, MaxOffset: 1001})
	tr.resp.Body = tr.body
	nop := zerolog.Nop()
	pc, err := NewPushConsumer(WithGroup("g"), WithNameServers("127.0.0.1:9876"), WithLogger(&nop))
	if err != nil {
		b.Fatal(err)
	}
	var consumed int
	if err := pc.Subscribe("T", "*", func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
		consumed += len(msgs)
		return ConsumeSuccess, nil
	}); err != nil {
		b.Fatal(err)
	}
	p := pc.p
	p.inst, p.clientID = benchInstance{fakeInstance{tr: tr}}, "1.2.3.4@bench"
	p.store = newRemoteOffsetStore(p.cfg.group, p.inst, false, nop)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	defer p.cancel()
	mq := MessageQueue{Topic: "T", BrokerName: "b"}
	qs := &queueState{mq: mq, pq: newProcessQueue(mq)}
	var stamp consumeStamp
	b.ReportAllocs()
	for b.Loop() {
		res, _, err := p.pullOnce(qs)
		if err != nil {
			b.Fatal(err)
		}
		if found, _ := p.handlePull(qs, &res); !found {
			b.Fatal("the answer's message was not found")
		}
		req, _ := pc.work.pop()
		pc.consumeConcurrently(req, &stamp)
		tr.off++
		binary.BigEndian.PutUint64(tr.body[message.OffQueueOffset:], uint64(tr.off))
		// The queue grows by the message each answer brings (one allocation, the fake's).
		tr.resp.ExtFields["maxOffset"] = strconv.FormatInt(1001+tr.off, 10)
	}
	if consumed != b.N {
		b.Fatalf("consumed %d of %d", consumed, b.N)
	}
}

// benchPullTransport answers every pull with resp, whose body is one record.
type benchPullTransport struct {
	fakeTransport
	resp *remoting.Command
	body []byte
	off  int64
}

func (f *benchPullTransport) InvokeSync(context.Context, string, *remoting.Command) (*remoting.Command, error) {
	return f.resp, nil
}

// benchInstance has the route of broker "b" cached.
type benchInstance struct{ fakeInstance }

var benchRoute = &route.TopicRouteData{BrokerDatas: []route.BrokerData{{BrokerName: "b", BrokerAddrs: map[int64]string{0: "m"}}}}

func (benchInstance) TopicRoute(context.Context, string) (*route.TopicRouteData, error) {
	return benchRoute, nil
}
func (benchInstance) CachedTopicRoute(string) *route.TopicRouteData { return benchRoute }
