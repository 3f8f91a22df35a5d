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

// A simple consumer (RocketMQ 5's POP consumption) against a node started in this process,
// in-process (drop WithOwnedTransport to go over TCP): FIFO messages of one message group go
// to one queue, are received with an invisible duration and acknowledged one by one.
func ExampleSimpleConsumer() {
	dir, _ := os.MkdirTemp("", "mq-example")
	defer os.RemoveAll(dir)
	node, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", Store: config.Store{Dir: dir, SegmentBytes: 4 << 20}})
	if err != nil {
		panic(err)
	}
	defer node.Close()
	ctx := context.Background()

	p, err := producer.New(producer.WithNameServers(node.Addr()), producer.WithGroup("example-producer"),
		producer.WithOwnedTransport(node.NewTransport()))
	if err != nil {
		panic(err)
	}
	defer p.Close()
	for _, step := range []string{"created", "paid", "shipped"} {
		msg := producer.NewMessage("Orders", []byte(step)).WithTags(step).WithMessageGroup("order-42")
		if _, err := p.SendSync(ctx, msg); err != nil {
			panic(err)
		}
	}

	sc, err := consumer.NewSimpleConsumer(consumer.WithNameServers(node.Addr()), consumer.WithGroup("billing"),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}), consumer.WithAwaitDuration(time.Second),
		consumer.WithOwnedTransport(node.NewTransport()))
	if err != nil {
		panic(err)
	}
	if err := sc.Subscribe("Orders", consumer.ByTag("*")); err != nil {
		panic(err)
	}
	if err := sc.Start(); err != nil {
		panic(err)
	}
	defer sc.Close()
	for received := 0; received < 3; {
		views, err := sc.Receive(ctx, 16, 30*time.Second)
		if err != nil {
			panic(err)
		}
		for _, v := range views {
			fmt.Println(v.MessageGroup(), string(v.Body), v.DeliveryAttempt())
			// Not acknowledged within 30 s, the message would be handed out again.
			if err := sc.Ack(ctx, v); err != nil {
				panic(err)
			}
			received++
		}
	}
	// Output:
	// order-42 created 1
	// order-42 paid 1
	// order-42 shipped 1
}
