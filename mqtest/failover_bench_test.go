package mqtest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
)

// defaultPeriodsEnv, set to anything, makes BenchmarkFailover run with RocketMQ's default
// controller-mode periods (controller heartbeat timeout 10 s, scan 5 s, broker heartbeat 1 s,
// metadata sync 5 s, Raft 1 s) instead of mqtest's milliseconds: a failover then takes
// seconds, so make test leaves it off.
const defaultPeriodsEnv = "MQTEST_FAILOVER_DEFAULT_PERIODS"

// BenchmarkFailover measures, per failover, the time from the master's death (Kill) to the
// first acknowledged send (all-ack, three controllers, three peers), reported as ms/failover.
// Each iteration then restarts the old master and waits until the group is whole again,
// outside the measurement.
func BenchmarkFailover(b *testing.B) {
	cfg := failoverConfig()
	if os.Getenv(defaultPeriodsEnv) != "" {
		cfg.Options = func(o *mq.Options) {
			// Zero: the node's defaults, RocketMQ's values.
			o.Controller.ScanInterval, o.Controller.BrokerHeartbeatTimeout, o.Controller.RaftTimeout = 0, 0, 0
			o.ControllerMode.HeartbeatInterval, o.ControllerMode.SyncBrokerMetadataPeriod = 0, 0
			o.ControllerMode.CheckSyncStateSetPeriod, o.ControllerMode.HAMaxTimeSlaveNotCatchup = 0, 0
		}
	}
	c := mqtest.StartCluster(b, cfg)
	waitInSync(b, c, 3)
	const topic = "FailoverBench"
	c.CreateTopic(topic, 2)
	p := c.NewProducer(producer.WithRetries(0))
	acked := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*mqtest.ControllerModeSyncFlushTimeout)
		defer cancel()
		res, err := p.SendSync(ctx, producer.NewMessage(topic, []byte("x")))
		return err == nil && res.Status == producer.SendOK
	}
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		mqtest.Eventually(b, "a send acknowledged before the kill", acked)
		old := c.Master(0)
		b.StartTimer()
		killed := time.Now()
		if err := c.Kill(old); err != nil {
			b.Fatal(err)
		}
		mqtest.Eventually(b, "a send acknowledged after the kill", acked)
		took := time.Since(killed)
		b.StopTimer()
		total += took
		b.Logf("failover %v", took)
		if err := c.Restart(old); err != nil {
			b.Fatal(err)
		}
		waitInSync(b, c, 3)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/failover")
}
