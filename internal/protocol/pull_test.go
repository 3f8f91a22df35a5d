package protocol

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/remoting"
)

func TestPullHeaderWire(t *testing.T) {
	// The keys and value forms of the Go push consumer's pull (docs/protocol.md §5.6).
	h := &PullMessageRequestHeader{ConsumerGroup: "cg", Topic: "T", QueueID: 2, QueueOffset: 15, MaxMsgNums: 32,
		SysFlag: BuildPullSysFlag(true, true, false, false), CommitOffset: 12, SuspendTimeoutMillis: 20000,
		ExpressionType: "TAG", BrokerName: "broker-a"}
	want := map[string]string{"consumerGroup": "cg", "topic": "T", "queueId": "2", "queueOffset": "15",
		"maxMsgNums": "32", "sysFlag": "3", "commitOffset": "12", "suspendTimeoutMillis": "20000",
		"subscription": "", "subVersion": "0", "expressionType": "TAG", "bname": "broker-a"}
	if diff := cmp.Diff(want, remoting.EncodeHeader(h)); diff != "" {
		t.Errorf("ext (-want +got):\n%s", diff)
	}
	if !h.HasCommitOffset() || !h.HasSuspend() || h.HasSubscription() {
		t.Errorf("flags of %d", h.SysFlag)
	}
	if f := BuildPullSysFlag(false, true, true, true); f != 14 {
		t.Errorf("sysFlag %d", f)
	}
	// The pull consumer leaves bname out in older clients; it is optional.
	delete(want, "bname")
	var got PullMessageRequestHeader
	if err := got.Decode(want); err != nil {
		t.Fatal(err)
	}
	resp := remoting.EncodeHeader(&PullMessageResponseHeader{NextBeginOffset: 16, MaxOffset: 16})
	if diff := cmp.Diff(map[string]string{"suggestWhichBrokerId": "0", "nextBeginOffset": "16",
		"minOffset": "0", "maxOffset": "16"}, resp); diff != "" {
		t.Errorf("response ext (-want +got):\n%s", diff)
	}
}

func TestPullHeaderErrors(t *testing.T) {
	full := func() map[string]string {
		return remoting.EncodeHeader(&PullMessageRequestHeader{ConsumerGroup: "g", Topic: "T"})
	}
	for _, key := range []string{"consumerGroup", "topic", "queueId", "queueOffset", "maxMsgNums", "sysFlag",
		"commitOffset", "suspendTimeoutMillis", "subVersion"} {
		t.Run("missing "+key, func(t *testing.T) {
			ext := full()
			delete(ext, key)
			var he *remoting.HeaderError
			if err := new(PullMessageRequestHeader).Decode(ext); !errors.As(err, &he) || he.Field != key {
				t.Errorf("err %v", err)
			}
		})
	}
	ext := full()
	ext["queueOffset"] = "x"
	if err := new(PullMessageRequestHeader).Decode(ext); err == nil {
		t.Error("bad queueOffset accepted")
	}
}
