// Command consumer prints the messages of a topic as a push consumer of a group — against an mq
// node (go run ./examples/mqnode) or an Apache RocketMQ cluster. Ctrl-C stops it; its offsets
// stay with the broker, so a restart goes on where it stopped.
//
//	go run ./examples/consumer -namesrv 127.0.0.1:9876 -topic Demo -group demo-consumers
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mqgo/mq/consumer"
)

func main() {
	namesrv := flag.String("namesrv", "127.0.0.1:9876", "name servers, `ADDR[;ADDR]`")
	topic := flag.String("topic", "Demo", "topic to consume (it must exist)")
	expr := flag.String("tags", "*", "tag expression: * or TagA || TagB")
	group := flag.String("group", "demo-consumers", "consumer group")
	first := flag.Bool("from-first", true, "a new group starts at the first message (else the last)")
	flag.Parse()
	if err := run(strings.Split(*namesrv, ";"), *topic, *expr, *group, *first); err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
}

func run(nameServers []string, topic, expr, group string, fromFirst bool) error {
	from := consumer.FromLastOffset
	if fromFirst {
		from = consumer.FromFirstOffset
	}
	c, err := consumer.NewPushConsumer(consumer.WithNameServers(nameServers...), consumer.WithGroup(group),
		consumer.WithConsumeFrom(from, time.Time{}))
	if err != nil {
		return err
	}
	err = c.Subscribe(topic, expr, func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			fmt.Printf("%s queue=%d offset=%d tags=%q keys=%q body=%q\n", m.Topic, m.Queue.QueueID, m.QueueOffset,
				m.Tags, m.Keys, m.Body)
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	if err := c.Start(); err != nil {
		return err
	}
	<-sig
	return c.Close()
}
