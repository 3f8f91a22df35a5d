package mq_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// Attacks on request-reply (issue 25): replies belong to the connection that sent the request,
// and one requester that never acknowledges its pushes delays nobody else's replies. Run like
// TestHostileClients, against an in-process node and the mqnode binary, with the suite's shared
// checks and its honest producer and consumer, plus an honest requester and replier.

const (
	hsRequestTopic = "HostileRequests"
	hsReplyTopic   = "DefaultCluster_REPLY_TOPIC"
)

func TestHostileReplies(t *testing.T) {
	for _, mode := range []string{"inproc", "binary"} {
		t.Run(mode, func(t *testing.T) {
			e := hsNewEnv(t, mode)
			rr := hsStartRequestReply(t, e)
			for _, row := range []hsRow{
				{name: "1-heartbeat-hijack", attack: rr.attackHijack},
				{name: "2-silent-requester", attack: rr.attackSilentRequester},
			} {
				t.Run(row.name, func(t *testing.T) { e.run(t, row) })
			}
		})
	}
}

// hsRequestReply is an honest requester (our producer, over TCP) and an honest replier (our
// push consumer answering each request with "re: <body>" through our producer).
type hsRequestReply struct {
	e         *hsEnv
	requester *producer.Producer
	seq       atomic.Int64
}

func hsStartRequestReply(t *testing.T, e *hsEnv) *hsRequestReply {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	name := "hostile-rr-" + e.mode
	// The topic exists before the replier looks for its route.
	ctx, cancel := context.WithTimeout(context.Background(), hsTimeout)
	defer cancel()
	if _, err := e.honest.p.SendSync(ctx, producer.NewMessage(hsRequestTopic, []byte("create"))); err != nil {
		t.Fatal(err)
	}
	replier, err := producer.New(producer.WithNameServers(e.main.addr), producer.WithGroup("hostile_replier_pg"),
		producer.WithInstanceName(name+"-replier"), producer.WithLogger(&l), producer.WithSendTimeout(hsTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { replier.Close() })
	c, err := consumer.NewPushConsumer(consumer.WithNameServers(e.main.addr), consumer.WithGroup("hostile_replier_cg"),
		consumer.WithInstanceName(name+"-replier"), consumer.WithLogger(&l),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}),
		consumer.WithRebalanceInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(hsRequestTopic, "*", func(ctx context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			if m.Properties[message.PropertyCorrelationID] == "" {
				continue // not a request
			}
			reply, err := consumer.NewReplyMessage(m, append([]byte("re: "), m.Body...))
			if err == nil {
				_, _ = replier.SendReply(ctx, reply)
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// Started here, used by the rows: the hijack row calls Request right away.
	rr := &hsRequestReply{e: e}
	rr.requester, err = producer.New(producer.WithNameServers(e.main.addr), producer.WithGroup("hostile_requester_pg"),
		producer.WithInstanceName(name+"-requester"), producer.WithLogger(&l), producer.WithSendTimeout(hsTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rr.requester.Close() })
	return rr
}

// request asks once and checks the reply; the wait is generous, never a speed.
func (rr *hsRequestReply) request(t *testing.T, what string) {
	t.Helper()
	body := fmt.Sprintf("question-%d-%s", rr.seq.Add(1), what)
	ctx, cancel := context.WithTimeout(context.Background(), hsTimeout)
	defer cancel()
	reply, err := rr.requester.Request(ctx, producer.NewMessage(hsRequestTopic, []byte(body)))
	if err != nil {
		t.Fatalf("honest request %s: %v", what, err)
	}
	if string(reply.Body) != "re: "+body {
		t.Fatalf("honest request %s: reply %q", what, reply.Body)
	}
}

// hsPeer is a raw connection that answers the node's requests: pushes of replies are counted
// and acknowledged, answers to its own requests go to the test.
type hsPeer struct {
	c       *hsConn
	wmu     sync.Mutex
	answers chan *remoting.Command
	pushes  atomic.Int64
	done    chan struct{}
}

func hsStartPeer(t *testing.T, addr string) *hsPeer {
	t.Helper()
	p := &hsPeer{c: hsDial(t, addr, 0), answers: make(chan *remoting.Command, 16), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			cmd, err := p.c.read(time.Hour)
			if err != nil {
				return // closed
			}
			if cmd.IsResponse() {
				p.answers <- cmd
				continue
			}
			if cmd.Code == remoting.PushReplyMessageToClient {
				p.pushes.Add(1)
			}
			_ = p.write(remoting.NewResponseFor(cmd, remoting.Success, ""))
		}
	}()
	t.Cleanup(func() {
		p.c.close()
		<-p.done
	})
	return p
}

func (p *hsPeer) write(cmd *remoting.Command) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return p.c.write(remoting.AppendFrame(nil, cmd))
}

func (p *hsPeer) invoke(t *testing.T, req *remoting.Command) *remoting.Command {
	t.Helper()
	if err := p.write(req); err != nil {
		t.Fatalf("write: %v", err)
	}
	select {
	case resp := <-p.answers:
		return resp
	case <-time.After(hsTimeout):
		t.Fatalf("no answer to request %d", req.Code)
		return nil
	}
}

// hsProducerHeartbeat is a heartbeat of clientID with producer groups only.
func hsProducerHeartbeat(clientID string, groups int) *remoting.Command {
	hb := protocol.HeartbeatData{ClientID: clientID, ConsumerDataSet: []protocol.ConsumerData{}}
	for i := range groups {
		hb.ProducerDataSet = append(hb.ProducerDataSet, protocol.ProducerData{GroupName: fmt.Sprintf("hostile_hijack_pg_%02d", i)})
	}
	return remoting.NewRequest(remoting.HeartBeat, nil, hb.Encode())
}

// Row 1: a raw connection heartbeats with the honest requester's client id and 32 producer
// groups, before the requester's first request and between all the others. It answers every
// push, as the requester would. It gets none of the 30 replies; the requester gets each.
func (rr *hsRequestReply) attackHijack(t *testing.T, e *hsEnv) func() {
	attacker := hsStartPeer(t, e.main.addr)
	victim := rr.requester.ClientID()
	hijack := func() {
		if resp := attacker.invoke(t, hsProducerHeartbeat(victim, 32)); resp.Code != remoting.Success {
			t.Fatalf("hijacking heartbeat: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
		}
	}
	hijack()
	for i := range 30 {
		rr.request(t, fmt.Sprintf("hijack-%d", i))
		hijack()
	}
	if n := attacker.pushes.Load(); n != 0 {
		t.Fatalf("the hijacking connection got %d of the requester's replies", n)
	}
	return attacker.c.close
}

// Row 2: a raw connection heartbeats as a requester and never reads again; 400 replies
// addressed to it arrive at once. Those over the per-connection bound are refused at once,
// the others fail with the push timeout, and meanwhile the honest requester's requests each
// get their reply.
func (rr *hsRequestReply) attackSilentRequester(t *testing.T, e *hsEnv) func() {
	const silentID, replies = "127.0.0.1@hostile-silent", 400
	silent := hsDial(t, e.main.addr, 4096)
	if resp, err := silent.invoke(hsProducerHeartbeat(silentID, 1)); err != nil || resp.Code != remoting.Success {
		t.Fatalf("silent heartbeat: %v %v", resp, err)
	}
	replier := hsDial(t, e.main.addr, 0)
	frames := make([]byte, 0, replies*512)
	for i := range replies {
		h := protocol.SendMessageRequestHeader{ProducerGroup: "hostile_reply_pg", Topic: hsReplyTopic,
			DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: -1, BornTimestamp: time.Now().UnixMilli(),
			Properties: message.MarshalProperties(map[string]string{message.PropertyMsgType: "reply",
				message.PropertyCorrelationID: fmt.Sprintf("silent-%d", i), message.PropertyReplyToClient: silentID,
				message.PropertyTTL: "3000"})}
		frames = remoting.AppendFrame(frames, remoting.NewRequest(remoting.SendReplyMessageV2,
			remoting.EncodeHeader((*protocol.SendMessageRequestHeaderV2)(&h)), []byte("unwanted")))
	}
	if err := replier.write(frames); err != nil {
		t.Fatalf("write %d replies: %v", replies, err)
	}
	var refused, timedOut, other atomic.Int64
	var otherRemark atomic.Value
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		for range replies {
			resp, err := replier.read(2 * hsTimeout)
			if err != nil {
				otherRemark.Store(err.Error())
				return
			}
			switch {
			case resp.Code == remoting.SystemError && strings.Contains(resp.Remark, "still wait for its acknowledgement"):
				refused.Add(1)
			case resp.Code == remoting.SystemError && resp.Remark == "push reply message to "+silentID+" fail.":
				timedOut.Add(1)
			default:
				other.Add(1)
				otherRemark.Store(fmt.Sprintf("%s %q", remoting.ResponseCodeName(resp.Code), resp.Remark))
			}
		}
	}()
	for i := range 5 {
		rr.request(t, fmt.Sprintf("beside-silent-%d", i))
	}
	return func() {
		select {
		case <-answered:
		case <-time.After(2 * hsTimeout):
			t.Errorf("not every reply to the silent requester was answered")
		}
		total := refused.Load() + timedOut.Load()
		if total != replies || refused.Load() < replies-64 {
			t.Errorf("of %d replies to the silent requester: %d refused at once, %d timed out, %d else (%v)",
				replies, refused.Load(), timedOut.Load(), other.Load(), otherRemark.Load())
		}
		silent.close()
		replier.close()
	}
}
