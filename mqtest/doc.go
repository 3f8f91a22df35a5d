// Package mqtest starts a whole RocketMQ-compatible cluster inside a Go test: name servers and
// broker groups on 127.0.0.1 with free ports, stores in t.TempDir(), and every period (broker
// registration, expiry, offset flush, delay levels) shortened to milliseconds, so a test gets a
// real multi-broker cluster in milliseconds and leaves nothing behind.
//
// StartCluster returns once every broker is registered with every name server; t.Cleanup closes
// clients and nodes. The Cluster offers the addresses (NameServerAddrs), the nodes (Group,
// Masters, Slaves, NameServerNodes), faults (KillMaster, Kill, Restart), clients with fast
// options (NewProducer, NewPushConsumer, NewPullConsumer), CreateTopic, and Eventually for
// conditions that hold after a while (never time.Sleep to synchronize).
//
// Testing a service against it: point the service at NameServerAddrs (it may use this module's
// clients or any RocketMQ 4.x client over TCP), then produce and consume:
//
//	func TestOrderService(t *testing.T) {
//		c := mqtest.StartCluster(t, mqtest.Config{BrokerGroups: 2})
//		svc := orders.New(orders.Config{NameServers: c.NameServerAddrs()})
//		defer svc.Close()
//
//		var got atomic.Int64
//		cons := c.NewPushConsumer(consumer.WithGroup("billing"))
//		cons.Subscribe("Orders", "*", func(ctx context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
//			got.Add(int64(len(msgs)))
//			return consumer.ConsumeSuccess, nil
//		})
//		if err := cons.Start(); err != nil {
//			t.Fatal(err)
//		}
//		svc.PlaceOrder("o-1")
//		mqtest.Eventually(t, "the order event consumed", func() bool { return got.Load() == 1 })
//	}
//
// Automatic failover (RocketMQ 5's controller mode): Config.Controllers name servers also run a
// controller, one Raft group, and Config.ControllerMode makes every group's brokers peers whose
// master the controllers elect. Master then names the current master; ControllerLeader and
// ControllerGroup show the controllers' view; PullAll and CommitLogPrefix check that a
// failover kept every acknowledged message and one history.
//
// Helpers that take a testing.TB fail the test with t.Fatal: call them from the test's
// goroutine. The Cluster's methods are otherwise safe for concurrent use.
package mqtest
