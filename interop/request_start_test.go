package interop

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/mqgo/mq"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Issue 25: the official producer's first Request, called right after Start, gets its reply.
// The official Go client heartbeats a second after it starts and then every 30 s; a broker
// that finds the requester only by the client id of heartbeats answers the replier "channel
// not found" until then. Ours pushes the reply to the connection the request came on. Then a
// raw client heartbeating with the requester's client id and 32 producer groups, before every
// request, gets none of the replies, and the requester gets each.
func TestOfficialRequestRightAfterStart(t *testing.T) {
	for name, replier := range map[string]func(*testing.T, *mq.Node, string){"our replier": ourReplier, "official replier": officialReplier} {
		t.Run(name, func(t *testing.T) {
			n := startNode(t)
			const topic = "FirstRequests"
			createTopic(t, n, topic, 2)
			replier(t, n, topic)
			p, err := rocketmq.NewProducer(producer.WithNsResolver(resolver(n)), producer.WithGroupName("first-requester-pg"),
				producer.WithInstanceName(uniqueInstance(t.Name()+"-requester")))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Shutdown() })

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			// The request may wait for the replier's first rebalance, never for a heartbeat.
			reply, err := p.Request(ctx, 20*time.Second, primitive.NewMessage(topic, []byte("first")))
			if err != nil {
				t.Fatalf("first request: %v", err)
			}
			if string(reply.Body) != "re: first" {
				t.Fatalf("first reply %q", reply.Body)
			}
			victim := reply.GetProperty(primitive.PropertyMessageReplyToClient)
			if victim == "" {
				t.Fatalf("reply without %s: %v", primitive.PropertyMessageReplyToClient, reply)
			}

			attacker := remoting.NewClient(remoting.ClientOptions{})
			t.Cleanup(func() { attacker.Close() })
			var stolen atomic.Int64
			attacker.RegisterProcessor(remoting.PushReplyMessageToClient, remoting.ProcessorFunc(
				func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
					stolen.Add(1)
					return remoting.NewResponse(remoting.Success, ""), nil
				}))
			hb := protocol.HeartbeatData{ClientID: victim, ConsumerDataSet: []protocol.ConsumerData{}}
			for i := range 32 {
				hb.ProducerDataSet = append(hb.ProducerDataSet, protocol.ProducerData{GroupName: fmt.Sprintf("hijack-pg-%02d", i)})
			}
			for i := range 10 {
				resp, err := attacker.InvokeSync(ctx, n.Addr(), remoting.NewRequest(remoting.HeartBeat, nil, hb.Encode()))
				if err != nil || resp.Code != remoting.Success {
					t.Fatalf("hijacking heartbeat: %v %v", resp, err)
				}
				body := fmt.Sprintf("q-%d", i)
				reply, err := p.Request(ctx, 20*time.Second, primitive.NewMessage(topic, []byte(body)))
				if err != nil {
					t.Fatalf("request %s beside the hijacker: %v", body, err)
				}
				if string(reply.Body) != "re: "+body {
					t.Fatalf("reply %q to %s", reply.Body, body)
				}
			}
			if n := stolen.Load(); n != 0 {
				t.Fatalf("the hijacking client got %d replies", n)
			}
		})
	}
}
