// Command cluster runs a whole RocketMQ-compatible cluster inside one process — a name service
// and two brokers, each a node on a free port with its own store — then sends messages with an
// in-process producer and reads them back with an in-process push consumer. It is the shape of
// an integration test that needs a real cluster: no sockets between the clients and the nodes,
// yet every node also listens on TCP for other clients.
//
//	go run ./examples/cluster
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	dir, err := os.MkdirTemp("", "mq-cluster-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// Short periods so the example is quick; RocketMQ's defaults suit production.
	base := mq.Options{Listen: "127.0.0.1:0", SegmentBytes: 8 << 20, RegisterNameServerPeriod: time.Second}
	nsOpts := base
	nsOpts.DisableBroker, nsOpts.StoreDir = true, dir+"/namesrv"
	ns, err := mq.StartNode(nsOpts)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ns.Close()) }()

	var brokers []*mq.Node
	for _, name := range []string{"broker-a", "broker-b"} {
		o := base
		o.DisableNameServer, o.NameServers = true, []string{ns.Addr()}
		o.BrokerName, o.StoreDir = name, dir+"/"+name
		b, err := mq.StartNode(o)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, b.Close()) }()
		brokers = append(brokers, b)
		fmt.Printf("%s listening on %s\n", name, b.BrokerAddr())
	}

	p, err := brokers[0].NewProducer(producer.WithGroup("example"))
	if err != nil {
		return err
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 20
	for i := range n {
		res, err := p.SendSync(ctx, producer.NewMessage("ClusterDemo", fmt.Appendf(nil, "message %d", i)))
		if err != nil {
			return err
		}
		fmt.Printf("sent %2d to %s\n", i, res.Queue)
	}

	var mu sync.Mutex
	got := map[string]int{}
	done := make(chan struct{})
	c, err := brokers[1].NewPushConsumer(consumer.WithGroup("example-consumers"),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}))
	if err != nil {
		return err
	}
	err = c.Subscribe("ClusterDemo", "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[m.Queue.BrokerName]++
			if sum(got) == n {
				close(done)
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	defer c.Close()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("consumed %v of %d", got, n)
	}
	fmt.Printf("consumed all %d: %v per broker\n", n, got)
	return nil
}

func sum(m map[string]int) (s int) {
	for _, v := range m {
		s += v
	}
	return s
}
