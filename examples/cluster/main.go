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
	"maps"
	"os"
	"sync"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
)

func main() {
	if _, err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

// run starts the cluster, sends 20 messages and consumes them; it returns the distinct bodies
// consumed, once every one sent has been.
func run() (consumed map[string]bool, err error) {
	dir, err := os.MkdirTemp("", "mq-cluster-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	// Short periods so the example is quick; RocketMQ's defaults suit production.
	base := mq.Options{Listen: "127.0.0.1:0", Store: config.Store{SegmentBytes: 8 << 20}, Periods: config.Periods{RegisterNameServerPeriod: time.Second}}
	nsOpts := base
	nsOpts.DisableBroker, nsOpts.Store.Dir = true, dir+"/namesrv"
	ns, err := mq.StartNode(nsOpts)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, ns.Close()) }()

	var brokers []*mq.Node
	for _, name := range []string{"broker-a", "broker-b"} {
		o := base
		o.DisableNameServer, o.NameServers = true, []string{ns.Addr()}
		o.Broker.Name, o.Store.Dir = name, dir+"/"+name
		b, err := mq.StartNode(o)
		if err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, b.Close()) }()
		brokers = append(brokers, b)
		fmt.Printf("%s listening on %s\n", name, b.BrokerAddr())
	}

	p, err := brokers[0].NewProducer(producer.WithGroup("example"))
	if err != nil {
		return nil, err
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 20
	sent := map[string]bool{}
	for i := range n {
		body := fmt.Sprintf("message %d", i)
		res, err := p.SendSync(ctx, producer.NewMessage("ClusterDemo", []byte(body)))
		if err != nil {
			return nil, err
		}
		sent[body] = true
		fmt.Printf("sent %2d to %s\n", i, res.Queue)
	}

	// Delivery is at least once: a message may come twice, so count distinct bodies.
	var mu sync.Mutex
	consumed = map[string]bool{}
	perBroker := map[string]int{}
	left := n // sent bodies not consumed yet
	done := make(chan struct{})
	c, err := brokers[1].NewPushConsumer(consumer.WithGroup("example-consumers"),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}))
	if err != nil {
		return nil, err
	}
	err = c.Subscribe("ClusterDemo", "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			body := string(m.Body)
			if consumed[body] {
				continue
			}
			consumed[body] = true
			perBroker[m.Queue.BrokerName]++
			if sent[body] {
				left--
				if left == 0 {
					close(done)
				}
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	defer c.Close()
	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		return nil, fmt.Errorf("consumed %d distinct of %d sent", n-left, n)
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Printf("consumed all %d: %v per broker\n", n, perBroker)
	return maps.Clone(consumed), nil
}
