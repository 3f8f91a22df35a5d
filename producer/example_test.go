package producer_test

import (
	"context"
	"fmt"
	"os"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/producer"
)

// A producer against a node started in this process: over TCP with WithNameServers alone, or
// in-process by adding WithOwnedTransport(node.NewTransport()).
func Example() {
	dir, _ := os.MkdirTemp("", "mq-example")
	defer os.RemoveAll(dir)
	node, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", Store: config.Store{Dir: dir, SegmentBytes: 4 << 20}})
	if err != nil {
		panic(err)
	}
	defer node.Close()

	p, err := producer.New(producer.WithNameServers(node.Addr()), producer.WithGroup("example"),
		producer.WithOwnedTransport(node.NewTransport()))
	if err != nil {
		panic(err)
	}
	defer p.Close()

	ctx := context.Background()
	msg := producer.NewMessage("Orders", []byte(`{"id":42}`)).WithTags("created").WithKeys("order-42")
	res, err := p.SendSync(ctx, msg)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Queue.Topic, len(res.MsgID))

	// Messages with the same order id keep their order in one queue.
	for _, step := range []string{"paid", "shipped"} {
		m := producer.NewMessage("Orders", []byte(step)).WithTags(step)
		if _, err := p.SendOrdered(ctx, m, producer.HashSelector(), "order-42", producer.StrictOrder); err != nil {
			panic(err)
		}
	}
	// Output: SEND_OK Orders 32
}
