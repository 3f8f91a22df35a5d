package broker

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// BenchmarkPullTCP pulls 32-message batches over TCP from a queue already in the store, one
// pull at a time (a consumer catching up), and reports messages per second and the p99 pull
// latency.
func BenchmarkPullTCP(b *testing.B) {
	for _, size := range []int{128, 1024} {
		b.Run(fmt.Sprintf("body=%d", size), func(b *testing.B) {
			env := benchBroker(b)
			br, addr, c := env.Broker, env.Addr, env.TCP
			br.topics.Update(TopicConfig{TopicName: "B", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6})
			const n = 32 * 256
			body := make([]byte, size)
			props := message.MarshalProperties(map[string]string{message.PropertyTags: "t"})
			for range n {
				if _, err := br.Store().PutMessage(&storage.Message{Topic: "B", Body: body, Properties: props,
					BornHost: consumeTestBornHost, StoreHost: br.storeHost}); err != nil {
					b.Fatal(err)
				}
			}
			for br.Store().MaxOffsetInQueue("B", 0) < n {
				time.Sleep(time.Millisecond)
			}
			h := &protocol.PullMessageRequestHeader{ConsumerGroup: "g", Topic: "B", MaxMsgNums: 32,
				SysFlag: protocol.PullFlagSubscription, Subscription: "*", ExpressionType: protocol.ExpressionTag}
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			msgs, bytes := 0, 0
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				resp, err := c.InvokeSync(ctx, addr, remoting.NewRequest(remoting.PullMessage, remoting.EncodeHeader(h), nil))
				if err != nil || resp.Code != remoting.Success {
					b.Fatalf("pull at %d: %v %v", h.QueueOffset, err, resp)
				}
				lat = append(lat, time.Since(start))
				msgs += 32
				bytes += len(resp.Body)
				h.QueueOffset = (h.QueueOffset + 32) % n
			}
			b.StopTimer()
			b.SetBytes(int64(bytes / b.N))
			slices.Sort(lat)
			b.ReportMetric(float64(msgs)/b.Elapsed().Seconds(), "msgs/s")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkLongPollWake is a caught-up consumer's round: a pull asking for the next offset
// parks (long polling), one message is put, and the store's dispatcher wakes the pull (the
// hold's Park and Arrive, the re-run on the dispatcher's goroutine); it ends when the pull is
// answered with the message.
func BenchmarkLongPollWake(b *testing.B) {
	env := benchBroker(b)
	br, addr, c := env.Broker, env.Addr, env.InProc
	br.topics.Update(TopicConfig{TopicName: "B", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6})
	props := message.MarshalProperties(map[string]string{message.PropertyTags: "t"})
	h := &protocol.PullMessageRequestHeader{ConsumerGroup: "g", Topic: "B", MaxMsgNums: 32,
		SysFlag: protocol.PullFlagSubscription | protocol.PullFlagSuspend, SuspendTimeoutMillis: 20000,
		Subscription: "*", ExpressionType: protocol.ExpressionTag}
	ctx := context.Background()
	done := make(chan *remoting.Command, 1)
	b.ReportAllocs()
	for b.Loop() {
		err := c.InvokeAsync(ctx, addr, remoting.NewRequest(remoting.PullMessage, remoting.EncodeHeader(h), nil),
			func(resp *remoting.Command, err error) {
				if err != nil {
					resp = remoting.NewResponse(-1, err.Error())
				}
				done <- resp
			})
		if err != nil {
			b.Fatal(err)
		}
		for br.pull.hold.Count() == 0 {
			runtime.Gosched()
		}
		if _, err := br.Store().PutMessage(&storage.Message{Topic: "B", Body: []byte("m"), Properties: props,
			BornHost: consumeTestBornHost, StoreHost: br.storeHost}); err != nil {
			b.Fatal(err)
		}
		if resp := <-done; resp.Code != remoting.Success {
			b.Fatalf("pull at %d: %d %s", h.QueueOffset, resp.Code, resp.Remark)
		}
		h.QueueOffset++
	}
}
