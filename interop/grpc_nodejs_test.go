package interop

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// TestNodeSDK runs the Node.js SDK's producer and consumers against one node, each case on
// topics and groups of its own, side by side: most of a case is waiting (invisible times,
// the push consumer's start), so running them together keeps the suite short.
func TestNodeSDK(t *testing.T) {
	t.Parallel()
	nodeJS(t)
	n := startGRPCNode(t)

	t.Run("NormalSimpleConsumer", func(t *testing.T) {
		t.Parallel()
		n.topic(t, "NodeNormal", "NORMAL")
		c := startScript(t, n, "simple_consumer", "--topic", "NodeNormal", "--group", "node-normal-cg",
			"--mode", "receive", "--count", "6")
		events := consumeAfterWarmUp(t, n, c, "acked",
			func() { runScript(t, n, "producer", "--topic", "NodeNormal", "--count", "1", "--prefix", "warm") },
			func() {
				sent := runScript(t, n, "producer", "--topic", "NodeNormal", "--count", "5", "--prefix", "normal")
				for _, e := range eventsOf(sent, "sent") {
					if e.str("messageId") == "" {
						t.Errorf("send receipt without a message id: %v", e)
					}
				}
			})
		received := withoutWarmUp(eventsOf(events, "received"))
		wantBodies(t, "received", sortedBodies(received), seqBodies("normal", 5)...)
		for _, e := range received {
			if e.str("tag") != "nodejs5" || e["corrupted"] != nil || e.num("deliveryAttempt") != 1 {
				t.Errorf("received %v: want tag nodejs5, an intact body (body_digest) and delivery attempt 1", e)
			}
			if keys, _ := e["keys"].([]any); len(keys) != 1 || keys[0] != e.str("body") {
				t.Errorf("received %v: want the body as its one key", e)
			}
		}
	})

	t.Run("FIFO", func(t *testing.T) {
		t.Parallel()
		n.topic(t, "NodeFifo", "FIFO")
		n.orderlyGroup(t, "node-fifo-cg")
		c := startScript(t, n, "simple_consumer", "--topic", "NodeFifo", "--group", "node-fifo-cg",
			"--mode", "receive", "--count", "9")
		events := consumeAfterWarmUp(t, n, c, "acked",
			func() {
				runScript(t, n, "producer", "--topic", "NodeFifo", "--mode", "fifo", "--count", "1", "--prefix", "warm")
			},
			func() {
				runScript(t, n, "producer", "--topic", "NodeFifo", "--mode", "fifo", "--count", "8", "--prefix", "fifo")
			})
		received := withoutWarmUp(eventsOf(events, "received"))
		wantBodies(t, "FIFO received, in order", bodiesOf(received), seqBodies("fifo", 8)...)
		for _, e := range received {
			if e.str("messageGroup") != "group-a" {
				t.Errorf("received %v: want message group group-a", e)
			}
		}
	})

	t.Run("Delay", func(t *testing.T) {
		t.Parallel()
		n.topic(t, "NodeDelay", "DELAY")
		c := startScript(t, n, "simple_consumer", "--topic", "NodeDelay", "--group", "node-delay-cg",
			"--mode", "receive", "--count", "3")
		var sent []nodeEvent
		events := consumeAfterWarmUp(t, n, c, "acked",
			func() {
				runScript(t, n, "producer", "--topic", "NodeDelay", "--mode", "delay", "--delay", "1000", "--count", "1", "--prefix", "warm")
			},
			func() {
				sent = eventsOf(runScript(t, n, "producer", "--topic", "NodeDelay", "--mode", "delay", "--delay", "3000",
					"--count", "2", "--prefix", "delay"), "sent")
			})
		received := withoutWarmUp(eventsOf(events, "received"))
		wantBodies(t, "delayed messages", sortedBodies(received), seqBodies("delay", 2)...)
		sentAt := map[string]int64{}
		for _, e := range sent {
			sentAt[e.str("body")] = e.num("sentAt")
		}
		for _, e := range received {
			// Delivered no earlier than asked: the timer wheel's unit is a second, and the two
			// processes' clocks are one.
			if due := sentAt[e.str("body")] + 3000; e.num("at") < due-1000 {
				t.Errorf("%s delivered at %d, due at %d", e.str("body"), e.num("at"), due)
			}
			if e.num("deliveryTimestamp") == 0 {
				t.Errorf("received %v: want its delivery timestamp", e)
			}
		}
	})

	t.Run("Transaction", func(t *testing.T) {
		t.Parallel()
		n.topic(t, "NodeTx", "TRANSACTION")
		c := startScript(t, n, "simple_consumer", "--topic", "NodeTx", "--group", "node-tx-cg",
			"--mode", "receive", "--count", "3")
		var produced []nodeEvent
		events := consumeAfterWarmUp(t, n, c, "acked",
			func() {
				runScript(t, n, "producer", "--topic", "NodeTx", "--mode", "transaction", "--resolutions", "commit", "--prefix", "warm")
			},
			func() {
				produced = runScript(t, n, "producer", "--topic", "NodeTx", "--mode", "transaction",
					"--resolutions", "commit,rollback,check", "--prefix", "tx")
			})
		// The check comes through Telemetry as a RecoverOrphanedTransactionCommand; the
		// checker's COMMIT goes back as EndTransaction.
		checked := eventsOf(produced, "checked")
		if len(checked) == 0 || checked[0].str("body") != "tx-2-check" {
			t.Fatalf("checks %v, want one of tx-2-check", checked)
		}
		for _, e := range checked {
			if e["expected"] != true {
				t.Errorf("the server checked %v, which was already decided", e)
			}
		}
		received := withoutWarmUp(eventsOf(events, "received"))
		wantBodies(t, "committed and checked messages", sortedBodies(received), "tx-0-commit", "tx-2-check")
	})

	t.Run("InvisibleTime", func(t *testing.T) {
		t.Parallel()
		n.topic(t, "NodeInvisible", "NORMAL")
		// 10 s is the shortest invisible time a receive may ask for (RocketMQ's proxy
		// minInvisibleTimeMillsForRecv, proxy.DefaultMinInvisibleTimeForRecv).
		c := startScript(t, n, "simple_consumer", "--topic", "NodeInvisible", "--group", "node-invisible-cg",
			"--mode", "redeliver", "--invisible-ms", "10000")
		c.waitEvent(n, "the consumer's start", func(e nodeEvent) bool { return e.str("event") == "started" })
		runScript(t, n, "producer", "--topic", "NodeInvisible", "--count", "1", "--prefix", "warm")
		events := c.wait(n)
		r := eventsOf(events, "redelivered")
		if len(r) != 1 || r[0].num("firstAttempt") != 1 || r[0].num("deliveryAttempt") != 2 {
			t.Fatalf("redelivery %v, want the message again with delivery attempt 2", r)
		}
	})

	t.Run("ChangeInvisibleDuration", func(t *testing.T) {
		t.Parallel()
		n.topic(t, "NodeChange", "NORMAL")
		// Received invisible for 5 minutes, changed to 2 s: it comes back within the script's
		// 60 s only through the change.
		c := startScript(t, n, "simple_consumer", "--topic", "NodeChange", "--group", "node-change-cg",
			"--mode", "change", "--invisible-ms", "300000", "--change-ms", "2000", "--timeout-ms", "60000")
		c.waitEvent(n, "the consumer's start", func(e nodeEvent) bool { return e.str("event") == "started" })
		runScript(t, n, "producer", "--topic", "NodeChange", "--count", "1", "--prefix", "warm")
		events := c.wait(n)
		if len(eventsOf(events, "changed")) != 1 || len(eventsOf(events, "redelivered")) != 1 || len(eventsOf(events, "acked")) != 1 {
			t.Fatalf("events %v, want changed, redelivered and acked once", events)
		}
	})

	t.Run("Filters", func(t *testing.T) {
		t.Parallel()
		// One group selects tag b, another SQL92 over the seq property; the warm-up message
		// (tag b, seq 0) passes both.
		n.topic(t, "NodeFilter", "NORMAL")
		byTag := startScript(t, n, "simple_consumer", "--topic", "NodeFilter", "--group", "node-filter-tag-cg",
			"--mode", "receive", "--count", "4", "--filter", "b")
		bySQL := startScript(t, n, "simple_consumer", "--topic", "NodeFilter", "--group", "node-filter-sql-cg",
			"--mode", "receive", "--count", "3", "--filter-type", "sql", "--filter", "seq IN ('0', '3')")
		for _, c := range []*nodeScript{byTag, bySQL} {
			c.waitEvent(n, "the consumer's start", func(e nodeEvent) bool { return e.str("event") == "started" })
		}
		runScript(t, n, "producer", "--topic", "NodeFilter", "--count", "1", "--prefix", "warm", "--tag", "b")
		for _, c := range []*nodeScript{byTag, bySQL} {
			c.waitEvent(n, "the warm-up message", func(e nodeEvent) bool { return e.str("event") == "acked" && e.str("body") == "warm-0" })
		}
		// Tags a, b, a, b, a, b; seq 0 to 5.
		runScript(t, n, "producer", "--topic", "NodeFilter", "--count", "6", "--prefix", "filt", "--tag", "a,b")
		wantBodies(t, "tag b", sortedBodies(withoutWarmUp(eventsOf(byTag.wait(n), "received"))), "filt-1", "filt-3", "filt-5")
		wantBodies(t, "seq IN ('0', '3')", sortedBodies(withoutWarmUp(eventsOf(bySQL.wait(n), "received"))), "filt-0", "filt-3")
	})

	t.Run("UnknownTopic", func(t *testing.T) {
		t.Parallel()
		// The SDK creates no topics: its startup fails with the server's TOPIC_NOT_FOUND.
		e := runScriptFailing(t, n, "producer", "--topic", "NodeNoSuchTopic", "--count", "1")
		const topicNotFound = 40402 // apache.rocketmq.v2.Code
		if !slices.Contains(causeCodes(e), topicNotFound) {
			t.Fatalf("error %v, want code %d (TOPIC_NOT_FOUND) among its causes", e, topicNotFound)
		}
	})

	t.Run("PushConsumer", func(t *testing.T) {
		t.Parallel()
		n.topic(t, "NodePush", "NORMAL")
		c := startScript(t, n, "push_consumer", "--topic", "NodePush", "--group", "node-push-cg", "--count", "5")
		events := consumeAfterWarmUp(t, n, c, "consumed",
			func() { runScript(t, n, "producer", "--topic", "NodePush", "--count", "1", "--prefix", "warm") },
			func() { runScript(t, n, "producer", "--topic", "NodePush", "--count", "4", "--prefix", "push") })
		got := map[string]bool{}
		for _, e := range withoutWarmUp(eventsOf(events, "consumed")) {
			got[e.str("body")] = true
		}
		for _, b := range seqBodies("push", 4) {
			if !got[b] {
				t.Errorf("push consumer did not get %s; got %v", b, got)
			}
		}
	})
}

// TestNodeSDKWithOfficialGoClient exchanges messages between the 4.x official Go client
// (remoting) and the 5.x Node.js SDK (gRPC) through one node, both ways, with tags, keys and
// user properties.
func TestNodeSDKWithOfficialGoClient(t *testing.T) {
	t.Parallel()
	nodeJS(t)
	n := startGRPCNode(t)
	ns := primitive.NewPassthroughResolver([]string{n.addr})

	t.Run("GoToNode", func(t *testing.T) {
		n.topic(t, "GoToNode", "NORMAL")
		p, err := rocketmq.NewProducer(producer.WithNsResolver(ns), producer.WithGroupName("go-to-node-pg"),
			producer.WithInstanceName(t.Name()), producer.WithRetry(1), producer.WithSendMsgTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Shutdown() })
		send := func(body string) {
			m := primitive.NewMessage("GoToNode", []byte(body))
			m.WithTag("from-go")
			m.WithKeys([]string{body})
			m.WithProperty("origin", "official-go")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if res, err := p.SendSync(ctx, m); err != nil || res.Status != primitive.SendOK {
				t.Fatalf("official Go send %s: %v %v", body, res, err)
			}
		}
		c := startScript(t, n, "simple_consumer", "--topic", "GoToNode", "--group", "go-to-node-cg",
			"--mode", "receive", "--count", "4", "--filter", "from-go")
		events := consumeAfterWarmUp(t, n, c, "acked", func() { send("warm") }, func() {
			for _, b := range seqBodies("go", 3) {
				send(b)
			}
		})
		received := withoutWarmUp(eventsOf(events, "received"))
		wantBodies(t, "received by the Node SDK", sortedBodies(received), seqBodies("go", 3)...)
		for _, e := range received {
			props, _ := e["properties"].(map[string]any)
			keys, _ := e["keys"].([]any)
			if e.str("tag") != "from-go" || props["origin"] != "official-go" || len(keys) != 1 || keys[0] != e.str("body") || e["corrupted"] != nil {
				t.Errorf("received %v: want tag from-go, key = body, property origin=official-go, an intact body", e)
			}
		}
	})

	t.Run("NodeToGo", func(t *testing.T) {
		n.topic(t, "NodeToGo", "NORMAL")
		runScript(t, n, "producer", "--topic", "NodeToGo", "--count", "3", "--prefix", "node", "--tag", "from-node")
		c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(ns), consumer.WithGroupName("node-to-go-cg"),
			consumer.WithInstance(t.Name()), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
		if err != nil {
			t.Fatal(err)
		}
		got := newCollector()
		if err := c.Subscribe("NodeToGo", consumer.MessageSelector{Type: consumer.TAG, Expression: "from-node"},
			func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				got.add(msgs...)
				return consumer.ConsumeSuccess, nil
			}); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Shutdown() })
		msgs := got.waitFor(t, "the Node SDK's 3 messages", func(m []*primitive.MessageExt) bool { return len(m) >= 3 })
		seen := map[string]bool{}
		for _, m := range msgs {
			body := string(m.Body)
			seen[body] = true
			if m.GetTags() != "from-node" || m.GetKeys() != body || m.GetProperty("seq") == "" {
				t.Errorf("official Go client got %s with tag %q keys %q seq %q: want tag from-node, key = body, a seq property",
					body, m.GetTags(), m.GetKeys(), m.GetProperty("seq"))
			}
		}
		for _, b := range seqBodies("node", 3) {
			if !seen[b] {
				t.Errorf("official Go client did not get %s; got %v", b, bodies(msgs))
			}
		}
	})
}
