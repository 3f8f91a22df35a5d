package consumer_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
)

// A push consumer against a node started in this process, in-process (drop
// WithOwnedTransport to go over TCP).
func Example() {
	dir, _ := os.MkdirTemp("", "mq-example")
	defer os.RemoveAll(dir)
	node, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", Store: config.Store{Dir: dir, SegmentBytes: 4 << 20}})
	if err != nil {
		panic(err)
	}
	defer node.Close()

	p, err := producer.New(producer.WithNameServers(node.Addr()), producer.WithGroup("example-producer"),
		producer.WithOwnedTransport(node.NewTransport()))
	if err != nil {
		panic(err)
	}
	defer p.Close()
	ctx := context.Background()
	if _, err := p.SendSync(ctx, producer.NewMessage("Orders", []byte(`{"id":42}`)).WithTags("created")); err != nil {
		panic(err)
	}

	c, err := consumer.NewPushConsumer(consumer.WithNameServers(node.Addr()), consumer.WithGroup("example"),
		consumer.WithOwnedTransport(node.NewTransport()))
	if err != nil {
		panic(err)
	}
	got := make(chan *consumer.Message, 1)
	c.Subscribe("Orders", "created || paid", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			got <- m
		}
		return consumer.ConsumeSuccess, nil
	})
	if err := c.Start(); err != nil {
		panic(err)
	}
	defer c.Close()
	select {
	case m := <-got:
		fmt.Println(m.Topic, m.Tags, string(m.Body))
	case <-time.After(20 * time.Second):
		fmt.Println("nothing consumed")
	}
	// Output: Orders created {"id":42}
}
