package interop

import (
	"bytes"
	"compress/zlib"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/mqgo/mq"
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

	c := remoting.NewClient(remoting.ClientOptions{})
	defer c.Close()
	h := &protocol.PullMessageRequestHeader{ConsumerGroup: "our-pull", Topic: topic, QueueID: 0, QueueOffset: 0,
		MaxMsgNums: 32, SysFlag: protocol.BuildPullSysFlag(false, false, true, false), Subscription: "*",
		ExpressionType: protocol.ExpressionTag}
	resp, err := c.InvokeSync(ctx, n.BrokerAddr(), remoting.NewRequest(remoting.PullMessage, remoting.EncodeHeader(h), nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != remoting.Success {
		t.Fatalf("pull: code %d %s", resp.Code, resp.Remark)
	}
	var got []message.Record
	for b := resp.Body; len(b) > 0; {
		var r message.Record
		size, err := message.DecodeRecord(b, &r, true)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
		b = b[size:]
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
