package interop

import (
	"bytes"
	"compress/zlib"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmqproducer "github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// Both directions of the send wire format: our producer's messages read by the official push
// consumer, and the official producer's messages read by a raw PULL_MESSAGE decoded with
// internal/message.

func newOurProducer(t testing.TB, n *mq.Node, opts ...producer.Option) *producer.Producer {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	base := []producer.Option{producer.WithNameServers(n.Addr()), producer.WithGroup("our-pg"), producer.WithLogger(&l),
		producer.WithInstanceName(strings.ReplaceAll(t.Name(), "/", "_"))}
	p, err := producer.New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestOurProducerOfficialPushConsumer(t *testing.T) {
	n := startNode(t)
	const topic = "OursToOfficial"
	createTopic(t, n, topic, 4)
	p := newOurProducer(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	type sentMsg struct {
		id, tags, keys, prop string
		body                 []byte
	}
	sent := map[string]sentMsg{} // body (first 16 bytes) -> what was sent
	record := func(m *producer.Message, id string) {
		sent[string(m.Body[:min(16, len(m.Body))])] = sentMsg{id: id, tags: m.Tags, keys: strings.Join(m.Keys, " "),
			prop: m.Property("color"), body: m.Body}
	}
	for i := 0; i < 4; i++ {
		m := producer.NewMessage(topic, []byte(fmt.Sprintf("sync-%d", i))).WithTags(fmt.Sprintf("Tag%d", i%2)).
			WithKeys(fmt.Sprintf("key-%d", i), "shared").WithProperty("color", "blue")
		res, err := p.SendSync(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		record(m, res.MsgID)
	}
	big := producer.NewMessage(topic, bytes.Repeat([]byte("compressed-body "), 1024)).WithTags("Big").WithProperty("color", "red")
	res, err := p.SendSync(ctx, big)
	if err != nil {
		t.Fatal(err)
	}
	record(big, res.MsgID)
	done := make(chan error, 1)
	am := producer.NewMessage(topic, []byte("async-0")).WithTags("Async").WithKeys("ak")
	if err := p.SendAsync(ctx, am, func(r *producer.SendResult, err error) {
		if err == nil {
			record(am, r.MsgID)
		}
		done <- err
	}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	batch := []*producer.Message{
		producer.NewMessage(topic, []byte("batch-0")).WithTags("Batch").WithKeys("bk0").WithProperty("color", "green"),
		producer.NewMessage(topic, []byte("batch-1")).WithTags("Batch").WithKeys("bk1").WithProperty("color", "green"),
	}
	bres, err := p.SendBatch(ctx, batch...)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range strings.Split(bres.MsgID, ",") {
		record(batch[i], id)
	}
	ordered := producer.NewMessage(topic, []byte("ordered-0")).WithTags("Ord")
	ores, err := p.SendOrdered(ctx, ordered, producer.HashSelector(), "order-7", producer.StrictOrder)
	if err != nil {
		t.Fatal(err)
	}
	record(ordered, ores.MsgID)

	got := newCollector()
	c := startConsumer(t, n, "cg-ours", "ours", topic, "*", func(m *primitive.MessageExt) consumer.ConsumeResult {
		got.add(m)
		return consumer.ConsumeSuccess
	})
	defer c.Shutdown()
	msgs := got.waitFor(t, "every message", func(m []*primitive.MessageExt) bool { return len(m) >= len(sent) })
	for _, m := range msgs {
		s, ok := sent[string(m.Body[:min(16, len(m.Body))])]
		if !ok {
			t.Errorf("unexpected message %q", m.Body)
			continue
		}
		if !bytes.Equal(m.Body, s.body) {
			t.Errorf("body of %s: %d bytes, want %d", s.id, len(m.Body), len(s.body))
		}
		if m.MsgId != s.id || m.GetProperty("UNIQ_KEY") != s.id {
			t.Errorf("message %q: MsgId %q UNIQ_KEY %q, want %q", m.Body[:min(16, len(m.Body))], m.MsgId,
				m.GetProperty("UNIQ_KEY"), s.id)
		}
		if m.GetTags() != s.tags || m.GetKeys() != s.keys || m.GetProperty("color") != s.prop {
			t.Errorf("message %s: tags %q keys %q color %q, want %q %q %q", s.id, m.GetTags(), m.GetKeys(),
				m.GetProperty("color"), s.tags, s.keys, s.prop)
		}
		if m.Topic != topic {
			t.Errorf("topic %q", m.Topic)
		}
	}
}

func TestOfficialProducerOurPull(t *testing.T) {
	n := startNode(t)
	const topic = "OfficialToOurs"
	createTopic(t, n, topic, 1)
	op := newProducer(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type sentMsg struct {
		id    string
		tags  string
		keys  string
		color string
		body  []byte
	}
	var sent []sentMsg
	for i := 0; i < 3; i++ {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("official-%d", i)))
		m.WithTag("TagO")
		m.WithKeys([]string{fmt.Sprintf("ok-%d", i), "x"})
		m.WithProperty("color", "yellow")
		res, err := op.SendSync(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, sentMsg{res.MsgID, "TagO", fmt.Sprintf("ok-%d x", i), "yellow", m.Body})
	}
	big := primitive.NewMessage(topic, bytes.Repeat([]byte("official big "), 1000)) // compressed by the client
	res, err := op.SendSync(ctx, big)
	if err != nil {
		t.Fatal(err)
	}
	sent = append(sent, sentMsg{id: res.MsgID, body: big.Body})

	// Pull until every message is there: the broker dispatches to the consume queue
	// asynchronously, so a pull right after the send may find nothing yet.
	c := remoting.NewClient(remoting.ClientOptions{})
	defer c.Close()
	var got []message.Record
	deadline := time.Now().Add(10 * time.Second)
	for offset := int64(0); len(got) < len(sent); {
		h := &protocol.PullMessageRequestHeader{ConsumerGroup: "our-pull", Topic: topic, QueueID: 0, QueueOffset: offset,
			MaxMsgNums: 32, SysFlag: protocol.BuildPullSysFlag(false, false, true, false), Subscription: "*",
			ExpressionType: protocol.ExpressionTag}
		resp, err := c.InvokeSync(ctx, n.BrokerAddr(), remoting.NewRequest(remoting.PullMessage, remoting.EncodeHeader(h), nil))
		if err != nil {
			t.Fatal(err)
		}
		switch resp.Code {
		case remoting.Success:
		case remoting.PullNotFound, remoting.PullRetryImmediately:
			if time.Now().After(deadline) {
				t.Fatalf("pulled %d of %d messages: code %d %s", len(got), len(sent), resp.Code, resp.Remark)
			}
			time.Sleep(10 * time.Millisecond)
			continue
		default:
			t.Fatalf("pull: code %d %s", resp.Code, resp.Remark)
		}
		var rh protocol.PullMessageResponseHeader
		if err := rh.Decode(resp.ExtFields); err != nil {
			t.Fatal(err)
		}
		for b := resp.Body; len(b) > 0; {
			var r message.Record
			size, err := message.DecodeRecord(b, &r, true)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r)
			b = b[size:]
		}
		offset = rh.NextBeginOffset
	}
	if len(got) != len(sent) {
		t.Fatalf("pulled %d records, sent %d", len(got), len(sent))
	}
	for i, r := range got {
		s := sent[i]
		props := message.UnmarshalProperties(r.Properties)
		body := r.Body
		if r.SysFlag&message.FlagCompressed != 0 {
			zr, err := zlib.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		} else if len(s.body) >= 4096 {
			t.Errorf("record %d: a %d-byte body from the official client should be compressed", i, len(s.body))
		}
		if string(r.Topic) != topic || r.QueueOffset != int64(i) || !bytes.Equal(body, s.body) {
			t.Errorf("record %d: topic %q offset %d body %d bytes", i, r.Topic, r.QueueOffset, len(body))
		}
		if props["UNIQ_KEY"] != s.id || props["TAGS"] != s.tags || props["KEYS"] != s.keys || props["color"] != s.color {
			t.Errorf("record %d properties %v, want id %s tags %q keys %q color %q", i, props, s.id, s.tags, s.keys, s.color)
		}
	}
}

// Benchmarks: our producer over TCP and in-process against the official Go client's producer
// over TCP, on one node in one run, 1 KiB bodies, 1 and 16 goroutines. Each reports msgs/s and
// the p99 latency of one send (for Batch: one batch of benchBatch messages).
//
//	cd interop && go test -run '^$' -bench BenchmarkProducer -benchtime 2s

const (
	benchBody  = 1024
	benchBatch = 32
	// benchWindow bounds the async sends in flight per goroutine.
	benchWindow = 64
)

func startBenchNode(b *testing.B) *mq.Node {
	b.Helper()
	l := zerolog.New(zerolog.NewTestWriter(b)).Level(zerolog.ErrorLevel)
	n, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", Logger: &l, Store: config.Store{Dir: b.TempDir(), SegmentBytes: 256 << 20}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { n.Close() })
	return n
}

// benchSender is one client under test: sync, async (done called once per send) and batch.
type benchSender struct {
	sync  func(ctx context.Context, topic string, body []byte) error
	async func(ctx context.Context, topic string, body []byte, done func(error)) error
	batch func(ctx context.Context, topic string, body []byte) error
}

func ourSender(b *testing.B, n *mq.Node, inproc bool) benchSender {
	opts := []producer.Option{producer.WithGroup("bench-ours")}
	if inproc {
		opts = append(opts, producer.WithOwnedTransport(n.NewTransport()))
	}
	p := newOurProducer(b, n, opts...)
	return benchSender{
		sync: func(ctx context.Context, topic string, body []byte) error {
			_, err := p.SendSync(ctx, producer.NewMessage(topic, body))
			return err
		},
		async: func(ctx context.Context, topic string, body []byte, done func(error)) error {
			return p.SendAsync(ctx, producer.NewMessage(topic, body), func(_ *producer.SendResult, err error) { done(err) })
		},
		batch: func(ctx context.Context, topic string, body []byte) error {
			msgs := make([]*producer.Message, benchBatch)
			for i := range msgs {
				msgs[i] = producer.NewMessage(topic, body)
			}
			_, err := p.SendBatch(ctx, msgs...)
			return err
		},
	}
}

func officialSender(b *testing.B, n *mq.Node) benchSender {
	p, err := rocketmq.NewProducer(rmqproducer.WithNsResolver(resolver(n)), rmqproducer.WithGroupName("bench-official"),
		rmqproducer.WithInstanceName(strings.ReplaceAll(b.Name(), "/", "_")+"-official"), rmqproducer.WithRetry(2))
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Shutdown() })
	return benchSender{
		sync: func(ctx context.Context, topic string, body []byte) error {
			_, err := p.SendSync(ctx, primitive.NewMessage(topic, body))
			return err
		},
		async: func(ctx context.Context, topic string, body []byte, done func(error)) error {
			return p.SendAsync(ctx, func(_ context.Context, _ *primitive.SendResult, err error) { done(err) },
				primitive.NewMessage(topic, body))
		},
		batch: func(ctx context.Context, topic string, body []byte) error {
			msgs := make([]*primitive.Message, benchBatch)
			for i := range msgs {
				msgs[i] = primitive.NewMessage(topic, body)
			}
			_, err := p.SendSync(ctx, msgs...)
			return err
		},
	}
}

type benchClient struct {
	name string
	make func(b *testing.B, n *mq.Node) benchSender
}

var benchClients = []benchClient{
	{"ours-tcp", func(b *testing.B, n *mq.Node) benchSender { return ourSender(b, n, false) }},
	{"ours-inproc", func(b *testing.B, n *mq.Node) benchSender { return ourSender(b, n, true) }},
	{"official-tcp", officialSender},
}

// runBench runs op b.N times over g goroutines and reports msgs/s and p99 (ms) of op.
func runBench(b *testing.B, g, msgsPerOp int, op func(ctx context.Context, done func(error)) error, async bool) {
	ctx := context.Background()
	var next atomic.Int64
	lat := make([][]time.Duration, g)
	errs := make(chan error, g)
	b.SetBytes(int64(benchBody * msgsPerOp))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			window := make(chan struct{}, benchWindow)
			var mu sync.Mutex
			var inflight sync.WaitGroup
			var firstErr error
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if !async {
					if err := op(ctx, nil); err != nil {
						errs <- err
						return
					}
					lat[w] = append(lat[w], time.Since(t0))
					continue
				}
				window <- struct{}{}
				inflight.Add(1)
				err := op(ctx, func(err error) {
					d := time.Since(t0)
					mu.Lock()
					lat[w] = append(lat[w], d)
					if err != nil && firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					<-window
					inflight.Done()
				})
				if err != nil {
					<-window
					inflight.Done()
					errs <- err
					return
				}
			}
			inflight.Wait()
			if firstErr != nil {
				errs <- firstErr
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99_ms")
	}
	b.ReportMetric(float64(b.N*msgsPerOp)/elapsed.Seconds(), "msgs/s")
}

func benchProducer(b *testing.B, kind string) {
	n := startBenchNode(b)
	body := bytes.Repeat([]byte("x"), benchBody)
	for _, c := range benchClients {
		s := c.make(b, n)
		topic := "Bench_" + strings.ReplaceAll(c.name, "-", "_") + "_" + kind
		// Warm up: route, auto-created topic, connections.
		for range 20 {
			if err := s.sync(context.Background(), topic, body); err != nil {
				b.Fatal(err)
			}
		}
		for _, g := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/g=%d", c.name, g), func(b *testing.B) {
				switch kind {
				case "sync":
					runBench(b, g, 1, func(ctx context.Context, _ func(error)) error { return s.sync(ctx, topic, body) }, false)
				case "async":
					runBench(b, g, 1, func(ctx context.Context, done func(error)) error {
						return s.async(ctx, topic, body, done)
					}, true)
				case "batch":
					runBench(b, g, benchBatch, func(ctx context.Context, _ func(error)) error { return s.batch(ctx, topic, body) }, false)
				}
			})
		}
	}
}

func BenchmarkProducerSync(b *testing.B)  { benchProducer(b, "sync") }
func BenchmarkProducerAsync(b *testing.B) { benchProducer(b, "async") }
func BenchmarkProducerBatch(b *testing.B) { benchProducer(b, "batch") }
