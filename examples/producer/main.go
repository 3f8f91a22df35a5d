// Command producer sends messages to a RocketMQ-compatible name service and broker — an mq node
// (go run ./examples/mqnode) or an Apache RocketMQ cluster.
//
//	go run ./examples/producer -namesrv 127.0.0.1:9876 -topic Demo -n 10
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mqgo/mq/producer"
)

func main() {
	namesrv := flag.String("namesrv", "127.0.0.1:9876", "name servers, `ADDR[;ADDR]`")
	topic := flag.String("topic", "Demo", "topic (created on first send when the broker allows it)")
	tag := flag.String("tag", "demo", "tag of every message")
	n := flag.Int("n", 10, "messages to send")
	flag.Parse()
	if err := run(strings.Split(*namesrv, ";"), *topic, *tag, *n); err != nil {
		fmt.Fprintln(os.Stderr, "producer:", err)
		os.Exit(1)
	}
}

func run(nameServers []string, topic, tag string, n int) error {
	p, err := producer.New(producer.WithNameServers(nameServers...), producer.WithGroup("example-producer"))
	if err != nil {
		return err
	}
	defer p.Close()
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		msg := producer.NewMessage(topic, fmt.Appendf(nil, "message %d", i)).WithTags(tag).WithKeys(fmt.Sprint("key-", i))
		res, err := p.SendSync(ctx, msg)
		cancel()
		if err != nil {
			return err
		}
		fmt.Printf("%s queue=%s offset=%d id=%s\n", res.Status, res.Queue, res.QueueOffset, res.MsgID)
	}
	return nil
}
