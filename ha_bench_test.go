package mq_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
)

// BenchmarkReplication sends 1 KiB messages from 16 goroutines to a SYNC_MASTER (each send waits
// for the slave: group transfer must batch) and to an ASYNC_MASTER in the same run, and reports
// msgs/s; for the async master it also samples how far the slave trails (bytes, p99).
func BenchmarkReplication(b *testing.B) {
	for _, role := range []mq.BrokerRole{mqtest.AsyncMaster, mqtest.SyncMaster} {
		b.Run(string(role), func(b *testing.B) {
			c := mqtest.StartCluster(b, mqtest.Config{NameServers: 1, BrokerGroups: 1, SlavesPerGroup: 1,
				Role: role, InProcess: true})
			c.CreateTopic("Repl", 8)
			p := c.NewProducer()
			master := c.Master(0).Current().Broker().Store()
			slave := c.Slaves()[0].Current().Broker().Store()
			body := make([]byte, 1024)
			var lags []int64
			stop := make(chan struct{})
			var sampler sync.WaitGroup
			sampler.Add(1)
			go func() {
				defer sampler.Done()
				t := time.NewTicker(time.Millisecond)
				defer t.Stop()
				for {
					select {
					case <-stop:
						return
					case <-t.C:
						lags = append(lags, master.MaxPhyOffset()-slave.MaxPhyOffset())
					}
				}
			}()
			var left atomic.Int64
			left.Store(int64(b.N))
			ctx := context.Background()
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for left.Add(-1) >= 0 {
						if _, err := p.SendSync(ctx, producer.NewMessage("Repl", body)); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			close(stop)
			sampler.Wait()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
			if len(lags) > 0 {
				slices.Sort(lags)
				b.ReportMetric(float64(lags[len(lags)*99/100]), "lag-p99-bytes")
			}
		})
	}
}
