package client

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

func pushReplyCmd(correlationID string, body string) *remoting.Command {
	h := protocol.ReplyMessageRequestHeader{Topic: "DefaultCluster_REPLY_TOPIC", BornHost: "127.0.0.1:1",
		StoreHost: "127.0.0.1:2", StoreTimestamp: 5, BornTimestamp: 4,
		Properties: message.MarshalProperties(map[string]string{message.PropertyCorrelationID: correlationID})}
	return remoting.NewRequest(remoting.PushReplyMessageToClient, remoting.EncodeHeader(&h), []byte(body))
}

// brokerChannel stands for the broker's connection; the processor only names it in logs.
type brokerChannel struct{ remoting.Channel }

func (brokerChannel) RemoteAddr() string { return "127.0.0.1:10911" }

// A pushed reply reaches the request of its correlation id on its own instance, once; a
// reply nobody waits for is acknowledged; a bad header is refused.
func TestPushReplyDelivery(t *testing.T) {
	a, b := &Instance{log: zerolog.Nop()}, &Instance{log: zerolog.Nop()}
	got := make(chan *Reply, 2)
	cancelA, err := a.AwaitReply("c1", func(r *Reply) { got <- r })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AwaitReply("c1", func(*Reply) {}); err == nil {
		t.Fatal("a second request with the same correlation id was accepted")
	}
	cancelB, err := b.AwaitReply("c1", func(*Reply) { t.Error("instance b got a's reply") })
	if err != nil {
		t.Fatal(err)
	}
	defer cancelB()

	for range 2 { // the second push finds nobody waiting
		resp, err := a.processPushReply(context.Background(), brokerChannel{}, pushReplyCmd("c1", "answer"))
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("push answered %v %v", resp, err)
		}
	}
	r := <-got
	if string(r.Body) != "answer" || r.Header.StoreHost != "127.0.0.1:2" || r.Header.StoreTimestamp != 5 {
		t.Fatalf("reply %+v", r)
	}
	if len(got) != 0 {
		t.Fatal("reply delivered twice")
	}
	if cancelA() {
		t.Fatal("cancel after delivery reports the request still waiting")
	}

	bad := pushReplyCmd("c2", "x")
	delete(bad.ExtFields, "storeHost")
	if resp, _ := a.processPushReply(context.Background(), brokerChannel{}, bad); resp.Code != remoting.SystemError {
		t.Fatalf("push without storeHost answered %d", resp.Code)
	}
}

// The table of one instance is bounded, and cancelling frees places.
func TestAwaitReplyBounded(t *testing.T) {
	i := &Instance{log: zerolog.Nop()}
	cancels := make([]func() bool, 0, MaxPendingReplies)
	for n := range MaxPendingReplies {
		c, err := i.AwaitReply(strconv.Itoa(n), func(*Reply) {})
		if err != nil {
			t.Fatalf("request %d: %v", n, err)
		}
		cancels = append(cancels, c)
	}
	if _, err := i.AwaitReply("one more", func(*Reply) {}); !errors.Is(err, ErrTooManyPendingReplies) {
		t.Fatalf("past the bound: %v", err)
	}
	for _, c := range cancels {
		if !c() {
			t.Fatal("cancel of a waiting request reports it was not waiting")
		}
	}
	i.replies.mu.Lock()
	left := len(i.replies.m)
	i.replies.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d requests still waiting after every cancel", left)
	}
}
