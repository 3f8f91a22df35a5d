package reply

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// replyTopic is the test broker's reply topic (DefaultCluster_REPLY_TOPIC).
const replyTopic = config.DefaultClusterName + names.ReplyTopicSuffix

// requester is a client registered as a producer whose PUSH_REPLY_MESSAGE_TO_CLIENT handler
// hands each push to the test and answers with code.
type requester struct {
	tr     remoting.Transport
	pushes chan *remoting.Command
}

func newRequester(t *testing.T, tb *env, tr remoting.Transport, clientID string, code int32) *requester {
	t.Helper()
	r := pushRecorder(tr, code, nil)
	heartbeatAs(t, tb, tr, clientID, 1)
	return r
}

// pushRecorder makes tr hand each PUSH_REPLY_MESSAGE_TO_CLIENT to the test and answer it with
// code, once release is closed when it is not nil.
func pushRecorder(tr remoting.Transport, code int32, release <-chan struct{}) *requester {
	r := &requester{tr: tr, pushes: make(chan *remoting.Command, 256)}
	tr.RegisterProcessor(remoting.PushReplyMessageToClient, remoting.ProcessorFunc(
		func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			r.pushes <- req
			if release != nil {
				<-release
			}
			return remoting.NewResponse(code, "requester says so"), nil
		}))
	return r
}

// heartbeatAs registers tr's connection as clientID with producer groups.
func heartbeatAs(t *testing.T, tb *env, tr remoting.Transport, clientID string, groups int) {
	t.Helper()
	hb := protocol.HeartbeatData{ClientID: clientID, ConsumerDataSet: []protocol.ConsumerData{}}
	for i := range groups {
		hb.ProducerDataSet = append(hb.ProducerDataSet, protocol.ProducerData{GroupName: fmt.Sprintf("requesters_%d", i)})
	}
	if resp := brokertest.Invoke(t, tr, tb.Addr, remoting.NewRequest(remoting.HeartBeat, map[string]string{}, hb.Encode())); resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %d %q", resp.Code, resp.Remark)
	}
}

func (r *requester) next(t *testing.T) *remoting.Command {
	t.Helper()
	select {
	case req := <-r.pushes:
		return req
	case <-time.After(10 * time.Second):
		t.Fatal("no PUSH_REPLY_MESSAGE_TO_CLIENT")
		return nil
	}
}

func (r *requester) none(t *testing.T) {
	t.Helper()
	select {
	case req := <-r.pushes:
		t.Fatalf("unexpected push %v", req.ExtFields)
	default:
	}
}

// replyHeader is a reply as consumer.NewReplyMessage and the official clients build it.
func replyHeader(replyTo, correlationID string) protocol.SendMessageRequestHeader {
	props := map[string]string{message.PropertyMsgType: "reply", message.PropertyCorrelationID: correlationID,
		message.PropertyTTL: "3000"}
	if replyTo != "" {
		props[message.PropertyReplyToClient] = replyTo
	}
	return wiretest.SendHeader(replyTopic, -1, props)
}

// A reply is pushed to the requester with its send header, the replier's and the broker's
// addresses and PUSH_REPLY_TIME, answered SUCCESS, and stored in the reply topic as sent.
func TestReplyPushedAndStored(t *testing.T) {
	tb := start(t, nil)
	for trName, tr := range tb.Transports() {
		for _, code := range []int32{remoting.SendReplyMessage, remoting.SendReplyMessageV2} {
			t.Run(fmt.Sprintf("%s/%d", trName, code), func(t *testing.T) {
				clientID := fmt.Sprintf("10.0.0.1@%s-%d", trName, code)
				req := newRequester(t, tb, tr, clientID, remoting.Success)
				corr := "corr-" + t.Name()
				h := replyHeader(clientID, corr)
				body := []byte("answer to " + t.Name())
				replier := wiretest.NewTCPClient(t)
				before := time.Now().UnixMilli()
				resp := brokertest.Invoke(t, replier, tb.Addr, wiretest.SendRequest(code, &h, body, remoting.SerializeJSON))
				rh := wiretest.WantSendOK(t, resp)

				push := req.next(t)
				var ph protocol.ReplyMessageRequestHeader
				if err := ph.Decode(push.ExtFields); err != nil {
					t.Fatalf("push header: %v (%v)", err, push.ExtFields)
				}
				pushed := message.UnmarshalProperties([]byte(ph.Properties))
				if !bytes.Equal(push.Body, body) || ph.Topic != replyTopic || ph.ProducerGroup != "pg" || ph.Flag != 7 ||
					ph.BornTimestamp != 1700000000123 || ph.StoreHost != tb.Addr || !strings.HasPrefix(ph.BornHost, "127.0.0.1:") ||
					ph.StoreTimestamp < before || pushed[message.PropertyCorrelationID] != corr ||
					pushed[message.PropertyReplyToClient] != clientID || pushed[propertyPushReplyTime] == "" {
					t.Fatalf("pushed %+v body %q properties %v", ph, push.Body, pushed)
				}

				rec := wiretest.StoredRecord(t, tb.Store(), replyTopic, rh.QueueID, rh.QueueOffset)
				wiretest.CheckMsgID(t, tb.Addr, rh.MsgID, rec.PhysicalOffset)
				stored := message.UnmarshalProperties(rec.Properties)
				if !bytes.Equal(rec.Body, body) || stored[message.PropertyCorrelationID] != corr {
					t.Fatalf("stored body %q properties %v", rec.Body, stored)
				}
				if _, ok := stored[propertyPushReplyTime]; ok {
					t.Errorf("stored %s: only the pushed copy carries it", propertyPushReplyTime)
				}
			})
		}
	}
}

// Without a requester to push to, the answer is RocketMQ's SYSTEM_ERROR with its reason, and the
// reply is still stored: a consumer of the reply topic can find it.
func TestReplyWithoutRequester(t *testing.T) {
	tb := start(t, nil)
	cases := []struct {
		name, requesterID, replyTo, remark string
		requesterCode                      int32
	}{
		{"no REPLY_TO_CLIENT", "a@1", "", "reply message has no REPLY_TO_CLIENT property to push it by", remoting.Success},
		{"unknown client", "b@1", "nobody@1", "push reply message fail, channel of <nobody@1> not found.", remoting.Success},
		{"requester refuses", "refuser@1", "refuser@1", "push reply message to refuser@1 fail.", remoting.SystemError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := newRequester(t, tb, wiretest.NewTCPClient(t), c.requesterID, c.requesterCode)
			maxOffset := tb.Store().MaxOffsetInQueue(replyTopic, 0)
			h := replyHeader(c.replyTo, "c1")
			resp := brokertest.Invoke(t, wiretest.NewTCPClient(t), tb.Addr, wiretest.SendRequest(remoting.SendReplyMessageV2, &h, []byte("b"), remoting.SerializeRocketMQ))
			if resp.Code != remoting.SystemError || resp.Remark != c.remark {
				t.Fatalf("answer %d %q, want SYSTEM_ERROR %q", resp.Code, resp.Remark, c.remark)
			}
			if c.replyTo == c.requesterID {
				req.next(t)
			} else {
				req.none(t)
			}
			var rh protocol.SendMessageResponseHeader
			if err := rh.Decode(resp.ExtFields); err != nil || rh.QueueOffset != maxOffset {
				t.Fatalf("header %+v (%v), want the stored reply at offset %d", rh, err, maxOffset)
			}
			wiretest.StoredRecord(t, tb.Store(), replyTopic, 0, maxOffset)
		})
	}
}

// What the broker could not store is refused before anything is pushed.
func TestReplyTooLargeNotPushed(t *testing.T) {
	tb := start(t, func(o *broker.Options) { o.Limits.MaxMessageBytes = 1024 })
	req := newRequester(t, tb, tb.TCP, "big@1", remoting.Success)
	maxPhy := tb.Store().MaxPhyOffset()
	h := replyHeader("big@1", "c1")
	resp := brokertest.Invoke(t, wiretest.NewTCPClient(t), tb.Addr, wiretest.SendRequest(remoting.SendReplyMessage, &h, make([]byte, 1025), remoting.SerializeJSON))
	wiretest.WantRefused(t, tb.Store(), resp, remoting.MessageIllegal, "the message is illegal, maybe msg body or properties length not matched", maxPhy)
	req.none(t)
}

// requestsTopic is where the tests' requests go.
const requestsTopic = "Requests"

// sendRequestMessage stores a request as the official producers send one: a plain send with
// CORRELATION_ID, REPLY_TO_CLIENT and TTL.
func sendRequestMessage(t *testing.T, tb *env, tr remoting.Transport, clientID, corr string) {
	t.Helper()
	if _, ok := tb.Topics().Get(requestsTopic); !ok {
		createTopic(t, tb, requestsTopic, 1)
	}
	h := wiretest.SendHeader(requestsTopic, 0, map[string]string{message.PropertyCorrelationID: corr,
		message.PropertyReplyToClient: clientID, message.PropertyTTL: "3000"})
	wiretest.WantSendOK(t, brokertest.Invoke(t, tr, tb.Addr, wiretest.SendRequest(remoting.SendMessage, &h, []byte("question"), remoting.SerializeJSON)))
}

// sendReply sends the reply to (clientID, corr) from replier and returns the answer.
func sendReply(t *testing.T, tb *env, replier remoting.Transport, clientID, corr string) *remoting.Command {
	t.Helper()
	h := replyHeader(clientID, corr)
	return brokertest.Invoke(t, replier, tb.Addr, wiretest.SendRequest(remoting.SendReplyMessageV2, &h, []byte("answer"), remoting.SerializeRocketMQ))
}

// pushedCorrelation is the CORRELATION_ID of a push.
func pushedCorrelation(t *testing.T, push *remoting.Command) string {
	t.Helper()
	var ph protocol.ReplyMessageRequestHeader
	if err := ph.Decode(push.ExtFields); err != nil {
		t.Fatalf("push header: %v", err)
	}
	corr, _ := message.PropertyValueString(ph.Properties, message.PropertyCorrelationID)
	return corr
}

// A requester that never heartbeated gets the reply to its request, pushed on the connection
// the request came on (the official Go client's first Request right after its start).
func TestReplyGoesToRequestConnection(t *testing.T) {
	tb := start(t, nil)
	for name, tr := range map[string]remoting.Transport{"tcp": wiretest.NewTCPClient(t), "inproc": tb.NewInProc(t)} {
		t.Run(name, func(t *testing.T) {
			clientID := "10.0.0.2@fresh-" + name
			req := pushRecorder(tr, remoting.Success, nil)
			sendRequestMessage(t, tb, tr, clientID, "c-"+name)
			wiretest.WantSendOK(t, sendReply(t, tb, wiretest.NewTCPClient(t), clientID, "c-"+name))
			if got := pushedCorrelation(t, req.next(t)); got != "c-"+name {
				t.Fatalf("pushed correlation id %q", got)
			}
		})
	}
}

// A heartbeat carrying another live client's id (with 32 producer groups, so that a lookup by
// client id would likely find it first) gets none of that client's replies: neither those
// routed by their request nor those found by the client id. Once the victim's connection
// closes, its id is free again: a client reconnecting takes it with its heartbeat.
func TestReplyHeartbeatCannotHijack(t *testing.T) {
	tb := start(t, nil)
	const victimID = "10.0.0.3@victim"
	victimTr := wiretest.NewTCPClient(t)
	victim := pushRecorder(victimTr, remoting.Success, nil)
	attackerTr := wiretest.NewTCPClient(t)
	attacker := pushRecorder(attackerTr, remoting.Success, nil)
	replier := wiretest.NewTCPClient(t)

	// The attacker heartbeats before the victim ever requests anything: the requests' own
	// routes still win.
	heartbeatAs(t, tb, attackerTr, victimID, 32)
	for i := range 10 {
		corr := fmt.Sprintf("routed-%d", i)
		sendRequestMessage(t, tb, victimTr, victimID, corr)
		heartbeatAs(t, tb, attackerTr, victimID, 32)
		// The attacker also sends a request under the victim's id and correlation id.
		sendRequestMessage(t, tb, attackerTr, victimID, corr)
		wiretest.WantSendOK(t, sendReply(t, tb, replier, victimID, corr))
		if got := pushedCorrelation(t, victim.next(t)); got != corr {
			t.Fatalf("victim got the reply to %q, want %q", got, corr)
		}
	}
	attacker.none(t)

	// A victim that holds its id (it heartbeated first) gets the replies without a route too.
	const holderID = "10.0.0.3@holder"
	heartbeatAs(t, tb, victimTr, holderID, 1)
	heartbeatAs(t, tb, attackerTr, holderID, 32)
	for i := range 5 {
		heartbeatAs(t, tb, attackerTr, holderID, 32)
		corr := fmt.Sprintf("elsewhere-%d", i) // its request went through another broker
		wiretest.WantSendOK(t, sendReply(t, tb, replier, holderID, corr))
		if got := pushedCorrelation(t, victim.next(t)); got != corr {
			t.Fatalf("victim got the reply to %q, want %q", got, corr)
		}
	}
	attacker.none(t)

	// The holder's connection closes: the next heartbeat under its id takes it.
	victimTr.Close()
	brokertest.Eventually(t, "the closed holder's id taken by a new heartbeat", func() bool {
		heartbeatAs(t, tb, attackerTr, holderID, 1)
		return sendReply(t, tb, replier, holderID, "after-close").Code == remoting.Success
	})
	if got := pushedCorrelation(t, attacker.next(t)); got != "after-close" {
		t.Fatalf("new holder got %q", got)
	}
}

// setReplyBounds lowers the push bounds (under the table's mutex: the broker reads them there).
func setReplyBounds(tb *env, maxPushes int, timeout time.Duration) {
	r := tb.svc.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	r.maxPushesPerConn = maxPushes
	if timeout > 0 {
		r.pushTimeout = timeout
	}
}

// A requester that does not acknowledge its pushes holds no reply worker (there is one here):
// its first replies wait for it, the ones over the bound are refused at once with a remark
// saying why, and another requester's reply is pushed and answered meanwhile.
func TestReplySilentRequesterHoldsNoWorker(t *testing.T) {
	tb := start(t, func(o *broker.Options) { o.SendThreads = 1 })
	const maxPushes, replies = 4, 10
	setReplyBounds(tb, maxPushes, 0)
	silentTr := wiretest.NewTCPClient(t)
	release := make(chan struct{})
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(release) }) }
	t.Cleanup(releaseAll) // before the client closes: it waits for its handlers
	silent := pushRecorder(silentTr, remoting.Success, release)
	heartbeatAs(t, tb, silentTr, "silent@1", 1)
	honestTr := wiretest.NewTCPClient(t)
	honest := newRequester(t, tb, honestTr, "honest@1", remoting.Success)
	replier := wiretest.NewTCPClient(t)

	answers := make(chan *remoting.Command, replies+2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	send := func(corr string) {
		h := replyHeader("silent@1", corr)
		err := replier.InvokeAsync(ctx, tb.Addr, wiretest.SendRequest(remoting.SendReplyMessageV2, &h, []byte("x"), remoting.SerializeRocketMQ),
			func(resp *remoting.Command, err error) {
				if err != nil {
					resp = remoting.NewResponse(-1, err.Error())
				}
				answers <- resp
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range replies {
		send(fmt.Sprintf("s-%d", i))
	}
	for range replies - maxPushes {
		resp := <-answers
		if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "4 replies pushed to its connection still wait for its acknowledgement") {
			t.Fatalf("reply over the bound: %d %q", resp.Code, resp.Remark)
		}
	}
	for range maxPushes {
		silent.next(t)
	}
	wiretest.WantSendOK(t, sendReply(t, tb, replier, "honest@1", "h-1"))
	if got := pushedCorrelation(t, honest.next(t)); got != "h-1" {
		t.Fatalf("honest requester got %q", got)
	}
	select {
	case resp := <-answers:
		t.Fatalf("a reply waiting for the silent requester was answered: %d %q", resp.Code, resp.Remark)
	default:
	}
	release <- struct{}{} // one acknowledgement frees one slot
	if resp := <-answers; resp.Code != remoting.Success {
		t.Fatalf("acknowledged push answered %d %q", resp.Code, resp.Remark)
	}
	send("s-next")
	silent.next(t) // took the slot
	send("s-over")
	if resp := <-answers; resp.Code != remoting.SystemError {
		t.Fatalf("reply over the bound again: %d %q", resp.Code, resp.Remark)
	}
	releaseAll()
	for range maxPushes {
		if resp := <-answers; resp.Code != remoting.Success {
			t.Fatalf("acknowledged push answered %d %q", resp.Code, resp.Remark)
		}
	}
}

// A push the requester never answers ends with the push timeout: the replier gets RocketMQ's
// SYSTEM_ERROR, the reply is stored all the same, and the slot is free for the next reply.
func TestReplyPushTimeout(t *testing.T) {
	tb := start(t, nil)
	setReplyBounds(tb, 1, 200*time.Millisecond)
	silentTr := wiretest.NewTCPClient(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	silent := pushRecorder(silentTr, remoting.Success, release)
	heartbeatAs(t, tb, silentTr, "mute@1", 1)
	replier := wiretest.NewTCPClient(t)
	for i := range 2 {
		maxOffset := tb.Store().MaxOffsetInQueue(replyTopic, 0)
		resp := sendReply(t, tb, replier, "mute@1", fmt.Sprintf("m-%d", i))
		if resp.Code != remoting.SystemError || resp.Remark != "push reply message to mute@1 fail." {
			t.Fatalf("unacknowledged push: %d %q", resp.Code, resp.Remark)
		}
		silent.next(t)
		var rh protocol.SendMessageResponseHeader
		if err := rh.Decode(resp.ExtFields); err != nil || rh.QueueOffset != maxOffset {
			t.Fatalf("header %+v (%v), want the stored reply at offset %d", rh, err, maxOffset)
		}
	}
}

// The names a reply's header carries are checked before the processor runs, with a send's
// remarks, and a refused reply pushes nothing.
func TestReplyNamesGuarded(t *testing.T) {
	tb := start(t, nil)
	req := newRequester(t, tb, tb.TCP, "names@1", remoting.Success)
	for _, c := range []struct {
		code     int32
		key, bad string
		remark   string
	}{
		{remoting.SendReplyMessage, "topic", "a/b", "topic"},
		{remoting.SendReplyMessage, "producerGroup", "../g", "producerGroup"},
		{remoting.SendReplyMessageV2, "b", strings.Repeat("t", 128), "topic"},
		{remoting.SendReplyMessageV2, "a", "g@x", "producerGroup"},
		{remoting.SendReplyMessageV2, "c", "d/t", "defaultTopic"},
	} {
		h := replyHeader("names@1", "c-"+c.key)
		r := wiretest.SendRequest(c.code, &h, []byte("answer"), remoting.SerializeJSON)
		r.ExtFields[c.key] = c.bad
		resp := brokertest.Invoke(t, wiretest.NewTCPClient(t), tb.Addr, r)
		if resp.Code == remoting.Success || !strings.Contains(resp.Remark, c.remark) || resp.ExtFields["MSG_REGION"] == "" {
			t.Errorf("%d %s=%q: %d %q %v, want a send refusal naming %s", c.code, c.key, c.bad, resp.Code, resp.Remark,
				resp.ExtFields, c.remark)
		}
	}
	req.none(t)
}
