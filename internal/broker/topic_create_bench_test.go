package broker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// BenchmarkAutoCreateTopics measures sends that each auto-create a new topic from TBW102, as a
// flood of new names does: 8 concurrent senders over TCP to a broker registered with an
// in-process name server, so each creation pays its registration and its persistence (but not
// the bounds, which the benchmark lifts). Run it
// with a fixed count (-benchtime=2000x): the cost of a creation may depend on the topics
// already there, which is what the benchmark compares.
func BenchmarkAutoCreateTopics(b *testing.B) {
	ns := startRestartableNameServer(b)
	env := startTestBroker(b, func(o *Options) {
		l := zerolog.Nop()
		o.Logger = &l
		ns.withNameServer(o)
		o.Periods.RegisterNameServerPeriod = time.Hour
		o.Periods.RegisterNameServerPeriodMin = time.Hour
		// One connection creates every topic: the per-connection bound would refuse most, and
		// MaxTopics the topics past it.
		o.Limits.AutoCreateTopicBurst = 1 << 30
		o.Limits.MaxTopics = 1 << 30
	})
	<-env.Ready()
	body := []byte("x")
	prefix := fmt.Sprintf("BenchCreate_%d_", time.Now().UnixNano())
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				h := wiretest.SendHeader(fmt.Sprintf("%s%d", prefix, i), 0, nil)
				req := wiretest.SendRequest(remoting.SendMessage, &h, body, remoting.SerializeJSON)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				resp, err := env.TCP.InvokeSync(ctx, env.Addr, req)
				cancel()
				if err == nil && resp.Code != remoting.Success {
					err = fmt.Errorf("send: %d %s", resp.Code, resp.Remark)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "topics/s")
}
