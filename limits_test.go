package mq_test

import (
	"encoding/binary"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// The default limits at their edges, through a node with default limits over TCP: the value
// at the limit is served, one byte (or one item) more is refused, and what a refusal leaves
// (the connection, the node) is what the limit promises.

// limitsNode starts a node whose limits are all defaults until the test ends.
func limitsNode(t *testing.T) string {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	n, err := mq.StartNode(mq.Options{
		Listen: "127.0.0.1:0",
		Logger: &l,
		Store:  config.Store{Dir: t.TempDir(), SegmentBytes: 64 << 20},
	}) // a segment holds a 4 MiB message; not a limit under test
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n.Addr()
}

// limitsInvoke sends req on c and fails the test if no answer comes.
func limitsInvoke(t *testing.T, c *hsConn, req *remoting.Command) *remoting.Command {
	t.Helper()
	resp, err := c.invoke(req)
	if err != nil {
		t.Fatalf("request %d: %v", req.Code, err)
	}
	return resp
}

func limitsWant(t *testing.T, what string, resp *remoting.Command, code int32) {
	t.Helper()
	if resp.Code != code {
		t.Errorf("%s: answered %s %q, want %s", what, remoting.ResponseCodeName(resp.Code), resp.Remark,
			remoting.ResponseCodeName(code))
	}
}

// A body of exactly DefaultMaxMessageBytes (4 MiB) is stored; one byte more is
// MESSAGE_ILLEGAL and the connection goes on.
func TestLimitsMessageBody(t *testing.T) {
	c := hsDial(t, limitsNode(t), 0)
	limitsWant(t, "4 MiB body", limitsInvoke(t, c, hsSendRequest("LimitsBody", 0,
		make([]byte, storage.DefaultMaxMessageBytes))), remoting.Success)
	limitsWant(t, "4 MiB + 1 body", limitsInvoke(t, c, hsSendRequest("LimitsBody", 0,
		make([]byte, storage.DefaultMaxMessageBytes+1))), remoting.MessageIllegal)
	limitsWant(t, "send after the refusal, same connection", limitsInvoke(t, c,
		hsSendRequest("LimitsBody", 0, []byte("small"))), remoting.Success)
}

// limitsSendFrame is a SEND_MESSAGE frame whose length word (the bytes after it) is exactly
// frameLen.
func limitsSendFrame(t *testing.T, frameLen int) []byte {
	t.Helper()
	req := hsSendRequest("LimitsFrame", 0, nil)
	headerLen := len(remoting.AppendFrameHeader(nil, req)) - 8
	req.Body = make([]byte, frameLen-4-headerLen)
	frame := remoting.AppendFrame(nil, req)
	if got := int(binary.BigEndian.Uint32(frame)); got != frameLen || len(frame) != 4+frameLen {
		t.Fatalf("built a frame of length %d (%d bytes), want %d", got, len(frame), frameLen)
	}
	return frame
}

// A frame of exactly DefaultMaxFrameBytes (16 MiB, its length word included, as RocketMQ's
// NettyDecoder counts) is read and answered (its body is too large to store) on a connection
// that stays open; one byte more closes the connection, and the node serves others.
func TestLimitsFrameSize(t *testing.T) {
	addr := limitsNode(t)
	c := hsDial(t, addr, 0)
	frame := limitsSendFrame(t, remoting.DefaultMaxFrameBytes-4) // 16 MiB on the wire
	if err := c.write(frame); err != nil {
		t.Fatal(err)
	}
	resp, err := c.read(hsTimeout)
	if err != nil {
		t.Fatalf("16 MiB frame: %v", err)
	}
	limitsWant(t, "16 MiB frame", resp, remoting.MessageIllegal)
	limitsWant(t, "send after the 16 MiB frame, same connection", limitsInvoke(t, c,
		hsSendRequest("LimitsFrame", 0, []byte("small"))), remoting.Success)

	over := hsDial(t, addr, 0)
	end := hsWriteInBackground(t, over, limitsSendFrame(t, remoting.DefaultMaxFrameBytes-3))
	if err := over.waitClosed(10 * time.Second); err != nil {
		t.Errorf("16 MiB + 1 frame: %v", err)
	}
	end()
	limitsWant(t, "send on another connection", limitsInvoke(t, hsDial(t, addr, 0),
		hsSendRequest("LimitsFrame", 0, []byte("small"))), remoting.Success)
}

// A 127-byte topic is served; a 128-byte one is refused with a remark naming the topic.
func TestLimitsTopicLength(t *testing.T) {
	c := hsDial(t, limitsNode(t), 0)
	limitsWant(t, "127-byte topic", limitsInvoke(t, c, hsSendRequest(strings.Repeat("T", 127), 0, []byte("x"))),
		remoting.Success)
	resp := limitsInvoke(t, c, hsSendRequest(strings.Repeat("T", 128), 0, []byte("x")))
	if resp.Code == remoting.Success || !strings.Contains(strings.ToLower(resp.Remark), "topic") {
		t.Errorf("128-byte topic: answered %s %q, want a refusal naming the topic",
			remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
}

// A 255-byte group is served; a 256-byte one is refused with a remark naming the group.
func TestLimitsGroupLength(t *testing.T) {
	c := hsDial(t, limitsNode(t), 0)
	limitsWant(t, "create the topic", limitsInvoke(t, c, hsSendRequest("LimitsGroup", 0, []byte("x"))), remoting.Success)
	update := func(group string) *remoting.Command {
		return limitsInvoke(t, c, remoting.NewRequest(remoting.UpdateConsumerOffset, remoting.EncodeHeader(
			&protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: "LimitsGroup", CommitOffset: 1}), nil))
	}
	// A commit needs its group (RocketMQ 5), so the operator creates it first.
	limitsWant(t, "create the 255-byte group", limitsInvoke(t, c, remoting.NewRequest(remoting.UpdateAndCreateSubscription,
		nil, []byte(`{"groupName":"`+strings.Repeat("g", 255)+`"}`))), remoting.Success)
	limitsWant(t, "255-byte group", update(strings.Repeat("g", 255)), remoting.Success)
	resp := update(strings.Repeat("g", 256))
	if resp.Code == remoting.Success || !strings.Contains(strings.ToLower(resp.Remark), "group") {
		t.Errorf("256-byte group: answered %s %q, want a refusal naming the group",
			remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
}

// A topic may have DefaultMaxQueueNums (1024) read and write queues; one more is refused.
func TestLimitsQueueNums(t *testing.T) {
	c := hsDial(t, limitsNode(t), 0)
	create := func(topic string, queues int32) *remoting.Command {
		h := &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: queues,
			WriteQueueNums: queues, Perm: route.PermReadWrite, TopicFilterType: route.FilterSingleTag}
		return limitsInvoke(t, c, remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil))
	}
	limitsWant(t, "1024 queues", create("LimitsQueuesMax", broker.DefaultMaxQueueNums), remoting.Success)
	if resp := create("LimitsQueuesOver", broker.DefaultMaxQueueNums+1); resp.Code == remoting.Success {
		t.Error("a topic with 1025 queues was created")
	}
}

// limitsRouteRequest asks for TBW102's route with extra ext fields, in serialization st.
func limitsRouteRequest(st remoting.SerializeType, extra map[string]string) *remoting.Command {
	req := route.BuildGetRouteInfo("TBW102")
	maps.Copy(req.ExtFields, extra)
	req.Serialize = st
	return req
}

// A header of exactly DefaultMaxHeaderBytes (64 KiB) or with exactly DefaultMaxExtFields (256)
// fields is served; one byte or one field more closes the connection. Both serializations.
func TestLimitsHeader(t *testing.T) {
	const maxHeader, maxFields = remoting.DefaultMaxHeaderBytes, remoting.DefaultMaxExtFields
	addr := limitsNode(t)
	for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		name := map[remoting.SerializeType]string{remoting.SerializeJSON: "json", remoting.SerializeRocketMQ: "binary"}[st]
		t.Run(name, func(t *testing.T) {
			// The header of GET_ROUTEINFO_BY_TOPIC grows byte for byte with a padding field's value.
			sized := func(headerLen int) *remoting.Command {
				base := len(remoting.AppendFrameHeader(nil, limitsRouteRequest(st, map[string]string{"pad": ""}))) - 8
				req := limitsRouteRequest(st, map[string]string{"pad": strings.Repeat("p", headerLen-base)})
				if got := len(remoting.AppendFrameHeader(nil, req)) - 8; got != headerLen {
					t.Fatalf("built a header of %d bytes, want %d", got, headerLen)
				}
				return req
			}
			counted := func(fields int) *remoting.Command {
				extra := map[string]string{}
				for i := len(route.BuildGetRouteInfo("TBW102").ExtFields); i < fields; i++ {
					extra["f"+strconv.Itoa(i)] = "v"
				}
				return limitsRouteRequest(st, extra)
			}
			for _, tc := range []struct {
				what  string
				req   *remoting.Command
				serve bool
			}{
				{"64 KiB header", sized(maxHeader), true},
				{"64 KiB + 1 header", sized(maxHeader + 1), false},
				{"256 ext fields", counted(maxFields), true},
				{"257 ext fields", counted(maxFields + 1), false},
			} {
				c := hsDial(t, addr, 0)
				if !tc.serve {
					_ = c.write(remoting.AppendFrame(nil, tc.req))
					if err := c.waitClosed(10 * time.Second); err != nil {
						t.Errorf("%s: %v", tc.what, err)
					}
					continue
				}
				resp, err := c.invoke(tc.req)
				if err != nil {
					t.Errorf("%s: %v", tc.what, err)
					continue
				}
				limitsWant(t, tc.what, resp, remoting.Success)
			}
		})
	}
}
