package broker

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// replyTopic is the test broker's reply topic (DefaultCluster_REPLY_TOPIC).
const replyTopic = DefaultClusterName + names.ReplyTopicSuffix

// requester is a client registered as a producer whose PUSH_REPLY_MESSAGE_TO_CLIENT handler
// hands each push to the test and answers with code.
type requester struct {
	tr     remoting.Transport
	pushes chan *remoting.Command
}

func newRequester(t *testing.T, tb *testBroker, tr remoting.Transport, clientID string, code int16) *requester {
	t.Helper()
	r := &requester{tr: tr, pushes: make(chan *remoting.Command, 16)}
	tr.RegisterProcessor(remoting.PushReplyMessageToClient, remoting.ProcessorFunc(
		func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			r.pushes <- req
			return remoting.NewResponse(code, "requester says so"), nil
		}))
	hb := protocol.HeartbeatData{ClientID: clientID, ProducerDataSet: []protocol.ProducerData{{GroupName: "requesters"}},
		ConsumerDataSet: []protocol.ConsumerData{}}
	if resp := invoke(t, tr, tb.Addr, remoting.NewRequest(remoting.HeartBeat, map[string]string{}, hb.Encode())); resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %d %q", resp.Code, resp.Remark)
	}
	return r
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
	return goSendHeader(replyTopic, -1, props)
}

// A reply is pushed to the requester with its send header, the replier's and the broker's
// addresses and PUSH_REPLY_TIME, answered SUCCESS, and stored in the reply topic as sent.
func TestReplyPushedAndStored(t *testing.T) {
	tb := startTestBroker(t, nil)
	for trName, tr := range tb.Transports() {
		for _, code := range []int16{remoting.SendReplyMessage, remoting.SendReplyMessageV2} {
			t.Run(fmt.Sprintf("%s/%d", trName, code), func(t *testing.T) {
				clientID := fmt.Sprintf("10.0.0.1@%s-%d", trName, code)
				req := newRequester(t, tb, tr, clientID, remoting.Success)
				corr := "corr-" + t.Name()
				h := replyHeader(clientID, corr)
				body := []byte("answer to " + t.Name())
				replier := newTCPClient(t)
				before := time.Now().UnixMilli()
				resp := invoke(t, replier, tb.Addr, sendRequest(code, &h, body, remoting.SerializeJSON))
				rh := wantSendOK(t, resp)

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

				rec := storedRecord(t, tb, replyTopic, rh.QueueID, rh.QueueOffset)
				checkMsgID(t, tb, rh.MsgID, rec.PhysicalOffset)
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
	tb := startTestBroker(t, nil)
	cases := []struct {
		name, requesterID, replyTo, remark string
		requesterCode                      int16
	}{
		{"no REPLY_TO_CLIENT", "a@1", "", "reply message has no REPLY_TO_CLIENT property to push it by", remoting.Success},
		{"unknown client", "b@1", "nobody@1", "push reply message fail, channel of <nobody@1> not found.", remoting.Success},
		{"requester refuses", "refuser@1", "refuser@1", "push reply message to refuser@1 fail.", remoting.SystemError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := newRequester(t, tb, newTCPClient(t), c.requesterID, c.requesterCode)
			maxOffset := tb.Store().MaxOffsetInQueue(replyTopic, 0)
			h := replyHeader(c.replyTo, "c1")
			resp := invoke(t, newTCPClient(t), tb.Addr, sendRequest(remoting.SendReplyMessageV2, &h, []byte("b"), remoting.SerializeRocketMQ))
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
			storedRecord(t, tb, replyTopic, 0, maxOffset)
		})
	}
}

// What the broker could not store is refused before anything is pushed.
func TestReplyTooLargeNotPushed(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.MaxMessageBytes = 1024 })
	req := newRequester(t, tb, tb.TCP, "big@1", remoting.Success)
	maxPhy := tb.Store().MaxPhyOffset()
	h := replyHeader("big@1", "c1")
	resp := invoke(t, newTCPClient(t), tb.Addr, sendRequest(remoting.SendReplyMessage, &h, make([]byte, 1025), remoting.SerializeJSON))
	wantRefused(t, tb, resp, remoting.MessageIllegal, tb.send.illegalRemark, maxPhy)
	req.none(t)
}
