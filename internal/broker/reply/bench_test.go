package reply

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// BenchmarkRequestReplyTCP measures the broker's side of one request-reply round over TCP: the
// requester's SEND_MESSAGE carrying CORRELATION_ID and REPLY_TO_CLIENT, the replier's
// SEND_REPLY_MESSAGE_V2, and the push of the reply to the requester, which the round waits
// for together with the replier's answer. No consumer runs: the replier answers the request as
// soon as it is stored, so the numbers are the broker's and the transport's. It reports
// rounds/s and the p99 of one round.
func BenchmarkRequestReplyTCP(b *testing.B) {
	for _, concurrent := range []int{1, 16} {
		b.Run(fmt.Sprintf("concurrent=%d", concurrent), func(b *testing.B) {
			// Silent, with segments large enough that the run measures appends, and RocketMQ's channel expiry: the test harness expires a
			// registration after a second and closes its connection.
			env := start(b, func(o *broker.Options) {
				l := zerolog.Nop()
				o.Logger = &l
				o.Store.SegmentBytes = 128 << 20
				o.Store.ConsumeQueueUnits = 0
				o.Periods.ClientChannelExpiredTime = config.DefaultChannelExpiredTimeout
			})
			createTopic(b, env, "BenchRequests", 4)
			const clientID = "127.0.0.1@bench-requester"
			requester := remoting.NewClient(remoting.ClientOptions{})
			replier := remoting.NewClient(remoting.ClientOptions{})
			b.Cleanup(func() { requester.Close(); replier.Close() })
			var waiting sync.Map // correlation id -> chan struct{}
			requester.RegisterProcessor(remoting.PushReplyMessageToClient, remoting.ProcessorFunc(
				func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
					props := req.ExtFields["properties"]
					corr, _ := message.PropertyValueString(props, message.PropertyCorrelationID)
					if ch, ok := waiting.LoadAndDelete(corr); ok {
						close(ch.(chan struct{}))
					}
					return remoting.NewResponse(remoting.Success, ""), nil
				}))
			ctx := context.Background()
			// The heartbeat makes the requester known by its client id, which is all a broker
			// without a correlation table can push by.
			hb := protocol.HeartbeatData{ClientID: clientID, ProducerDataSet: []protocol.ProducerData{{GroupName: "bench-requesters"}},
				ConsumerDataSet: []protocol.ConsumerData{}}
			if resp, err := requester.InvokeSync(ctx, env.Addr, remoting.NewRequest(remoting.HeartBeat, map[string]string{}, hb.Encode())); err != nil || resp.Code != remoting.Success {
				b.Fatalf("heartbeat: %v %v", resp, err)
			}
			body := make([]byte, 256)
			round := func(i int64) (time.Duration, error) {
				corr := "bench-" + strconv.FormatInt(i, 10)
				done := make(chan struct{})
				waiting.Store(corr, done)
				props := map[string]string{message.PropertyCorrelationID: corr, message.PropertyReplyToClient: clientID,
					message.PropertyTTL: "3000", "UNIQ_KEY": "C0A8000100002A9F00000000" + fmt.Sprintf("%08x", i)}
				h := wiretest.SendHeader("BenchRequests", int32(i%4), props)
				t0 := time.Now()
				resp, err := requester.InvokeSync(ctx, env.Addr, wiretest.SendRequest(remoting.SendMessage, &h, body, remoting.SerializeJSON))
				if err == nil && resp.Code != remoting.Success {
					err = fmt.Errorf("request: %d %s", resp.Code, resp.Remark)
				}
				if err != nil {
					return 0, err
				}
				rh := replyHeader(clientID, corr)
				resp, err = replier.InvokeSync(ctx, env.Addr, wiretest.SendRequest(remoting.SendReplyMessageV2, &rh, body, remoting.SerializeRocketMQ))
				if err == nil && resp.Code != remoting.Success {
					err = fmt.Errorf("reply: %d %s", resp.Code, resp.Remark)
				}
				if err != nil {
					return 0, err
				}
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					return 0, fmt.Errorf("no push for %s", corr)
				}
				return time.Since(t0), nil
			}
			wiretest.BenchRounds(b, concurrent, "rounds/s", round)
		})
	}
}
