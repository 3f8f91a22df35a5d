package mq_test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// TestPopSurvivesKill pops from the mqnode binary under SYNC_FLUSH, acks half, kills the node
// with SIGKILL and restarts it on the same store: the acked messages never come back, the
// others come back through the group's pop retry topic, and not before their invisible time.
// Hostile POP headers and receipt handles are then refused with RocketMQ 5's codes while the
// node keeps serving.
func TestPopSurvivesKill(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "mqnode")
	if out, err := exec.Command("go", "build", "-o", bin, "./examples/mqnode").CombinedOutput(); err != nil {
		t.Fatalf("build mqnode: %v\n%s", err, out)
	}
	// The flags go through a wrapper that execs the binary, so SIGKILL reaches mqnode itself.
	wrapper := filepath.Join(dir, "mqnode-pop")
	script := fmt.Sprintf("#!/bin/sh\nexec %q -flush sync -pop-revive-interval 50ms \"$@\"\n", bin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "store")
	const topic, group, invisible = "PopKilled", "PopKilledGroup", 3000

	first := hsStartKillable(t, wrapper, store)
	c := hsDial(t, first.addr, 0)
	for i := range 6 {
		if resp, err := c.invoke(hsSendRequest(topic, 0, []byte(fmt.Sprintf("k-%d", i)))); err != nil || resp.Code != remoting.Success {
			t.Fatalf("send %d: %v %v", i, err, resp)
		}
	}
	popReq := func(invisibleMs int64) *remoting.Command { return hsPopRequest(group, topic, invisibleMs) }
	popSome := func(c *hsConn, invisibleMs int64) []hsPopped { return hsPop(t, c, group, topic, invisibleMs) }
	var got []hsPopped
	for deadline := time.Now().Add(hsTimeout); len(got) < 6 && time.Now().Before(deadline); {
		got = append(got, popSome(c, invisible)...)
	}
	if len(got) != 6 {
		t.Fatalf("popped %d of 6", len(got))
	}
	popped, err := protocol.ParseExtraInfo(got[0].handle)
	if err != nil {
		t.Fatal(err)
	}
	acked := map[string]bool{}
	for _, m := range got[:3] {
		h := &protocol.AckMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: m.qid, ExtraInfo: m.handle, Offset: m.offset}
		if resp, err := c.invoke(remoting.NewRequest(remoting.AckMessage, remoting.EncodeHeader(h), nil)); err != nil || resp.Code != remoting.Success {
			t.Fatalf("ack: %v %v", err, resp)
		}
		acked[m.body] = true
	}
	first.kill()

	second := hsStartKillable(t, wrapper, store)
	c = hsDial(t, second.addr, 0)
	visibleAt := time.UnixMilli(popped.PopTime + popped.InvisibleTime)
	back := map[string]int{}
	for deadline := time.Now().Add(hsTimeout + invisible*time.Millisecond); len(back) < 3 && time.Now().Before(deadline); {
		ms := popSome(c, 60_000)
		if len(ms) > 0 && time.Now().Before(visibleAt) {
			t.Fatalf("%s came back before its invisible time ended", ms[0].body)
		}
		for _, m := range ms {
			if acked[m.body] {
				t.Fatalf("acked message %s came back after SIGKILL", m.body)
			}
			back[m.body]++
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, m := range got[3:] {
		if back[m.body] != 1 {
			t.Fatalf("unacked messages came back %v, want each of %s %s %s once", back, got[3].body, got[4].body, got[5].body)
		}
	}

	// Hostile requests to the restarted node.
	for name, c2 := range map[string]struct {
		req  *remoting.Command
		code int32
	}{
		"maxMsgNums 2^31-1": {mutatePop(popReq(1000), "maxMsgNums", fmt.Sprint(math.MaxInt32)), remoting.InvalidParameter},
		"invisibleTime 2^63-1": {mutatePop(popReq(1000), "invisibleTime", fmt.Sprint(int64(math.MaxInt64))),
			remoting.InvalidParameter},
		"invisibleTime -1":   {mutatePop(popReq(1000), "invisibleTime", "-1"), remoting.InvalidParameter},
		"bornTime 0":         {mutatePop(popReq(1000), "bornTime", "0"), remoting.PollingTimeout},
		"maxMsgNums not int": {mutatePop(popReq(1000), "maxMsgNums", "many"), remoting.SystemError},
		"forged handle": {remoting.NewRequest(remoting.AckMessage, remoting.EncodeHeader(&protocol.AckMessageRequestHeader{
			ConsumerGroup: group, Topic: topic, QueueID: 0, ExtraInfo: strings.Repeat("9 ", 7) + "9", Offset: 0}), nil), remoting.InvalidParameter},
		"long handle": {remoting.NewRequest(remoting.AckMessage, remoting.EncodeHeader(&protocol.AckMessageRequestHeader{
			ConsumerGroup: group, Topic: topic, QueueID: 0, ExtraInfo: strings.Repeat("1", 40000), Offset: 0}), nil), remoting.InvalidParameter},
	} {
		resp, err := c.invoke(c2.req)
		if err != nil || resp.Code != c2.code {
			t.Errorf("%s: %v %v, want code %d", name, err, resp, c2.code)
		}
	}
	if resp, err := c.invoke(hsSendRequest(topic, 0, []byte("after"))); err != nil || resp.Code != remoting.Success {
		t.Fatalf("send after the attacks: %v %v", err, resp)
	}
	second.kill()
}

// hsPopRequest is a POP_MESSAGE of up to 32 messages of any queue, from the first offset.
func hsPopRequest(group, topic string, invisibleMs int64) *remoting.Command {
	h := &protocol.PopMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: -1, MaxMsgNums: 32,
		InvisibleTime: invisibleMs, BornTime: time.Now().UnixMilli(), InitMode: protocol.PopInitModeMin}
	return remoting.NewRequest(remoting.PopMessage, remoting.EncodeHeader(h), nil)
}

// hsPopped is a popped message with its receipt handle.
type hsPopped struct {
	body, handle string
	qid          int32
	offset       int64
}

// hsPop pops on c; none when the broker has none now.
func hsPop(t *testing.T, c *hsConn, group, topic string, invisibleMs int64) []hsPopped {
	t.Helper()
	resp, err := c.invoke(hsPopRequest(group, topic, invisibleMs))
	if err != nil {
		t.Fatalf("pop: %v", err)
	}
	if resp.Code == remoting.PollingTimeout {
		return nil
	}
	if resp.Code != remoting.Success {
		t.Fatalf("pop: %d %q", resp.Code, resp.Remark)
	}
	var h protocol.PopMessageResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		t.Fatalf("pop answer: %v", err)
	}
	var out []hsPopped
	for b := resp.Body; len(b) > 0; {
		var rec message.Record
		n, err := message.DecodeRecord(b, &rec, true)
		if err != nil {
			t.Fatalf("pop body: %v", err)
		}
		ck, ok := message.PropertyValue(rec.Properties, protocol.PropertyPopCK)
		if !ok {
			// A message of the topic itself comes as stored: its handle is built from the
			// answer's header, as 5.x's clients build it.
			ck = []byte(popHandleFromHeader(t, &h, rec.QueueID, rec.QueueOffset))
		}
		out = append(out, hsPopped{string(rec.Body), string(ck), rec.QueueID, rec.QueueOffset})
		b = b[n:]
	}
	return out
}

// hsAck acknowledges m, popped for group from topic, and fails on a refusal.
func hsAck(t *testing.T, c *hsConn, group, topic string, m hsPopped) {
	t.Helper()
	h := &protocol.AckMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: m.qid, ExtraInfo: m.handle, Offset: m.offset}
	if resp, err := c.invoke(remoting.NewRequest(remoting.AckMessage, remoting.EncodeHeader(h), nil)); err != nil || resp.Code != remoting.Success {
		t.Fatalf("ack of %s: %v %v", m.body, err, resp)
	}
}

// popHandleFromHeader is the receipt handle of the message at offset of queue qid of a pop
// answer's topic, as a 5.x client builds it from the answer's header.
func popHandleFromHeader(t *testing.T, h *protocol.PopMessageResponseHeader, qid int32, offset int64) string {
	t.Helper()
	for _, entry := range strings.Split(h.StartOffsetInfo, ";") {
		if f := strings.Fields(entry); len(f) == 3 && f[0] == protocol.PopRetryNone && f[1] == fmt.Sprint(qid) {
			var start int64
			if _, err := fmt.Sscan(f[2], &start); err != nil {
				t.Fatalf("startOffsetInfo %q: %v", h.StartOffsetInfo, err)
			}
			return protocol.ExtraInfo{CkQueueOffset: start, PopTime: h.PopTime, InvisibleTime: h.InvisibleTime,
				ReviveQid: h.ReviveQid, Retry: protocol.PopRetryNone, BrokerName: mq.DefaultBrokerName, QueueID: qid, QueueOffset: offset}.String()
		}
	}
	t.Fatalf("startOffsetInfo %q names no offset of queue %d", h.StartOffsetInfo, qid)
	return ""
}

// mutatePop sets one extension field of a POP request as a hostile client writes it.
func mutatePop(req *remoting.Command, key, value string) *remoting.Command {
	req.ExtFields[key] = value
	return req
}
