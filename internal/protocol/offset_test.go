package protocol

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/remoting"
)

func TestOffsetHeadersWire(t *testing.T) {
	got := remoting.EncodeHeader(&UpdateConsumerOffsetRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: 1, CommitOffset: 42})
	want := map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "1", "commitOffset": "42"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("update (-want +got):\n%s", diff)
	}
	got = remoting.EncodeHeader(&SearchOffsetRequestHeader{Topic: "T", QueueID: 1, Timestamp: 5, BrokerName: "b"})
	want = map[string]string{"topic": "T", "queueId": "1", "timestamp": "5", "bname": "b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("search (-want +got):\n%s", diff)
	}
}

func TestSearchOffsetOldGoClientKeys(t *testing.T) {
	var h SearchOffsetRequestHeader
	if err := h.Decode(map[string]string{"Topic": "T", "QueueId": "3", "timestamp": "9"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(SearchOffsetRequestHeader{Topic: "T", QueueID: 3, Timestamp: 9}, h); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := new(QueueHeader).Decode(map[string]string{"topic": "T"}); err == nil {
		t.Error("missing queueId accepted")
	}
}

// TestSearchOffsetDecodeLeavesRequestAlone: an in-process request's extFields are the sender's
// map, so reading the old spellings must not write the new ones into it.
func TestSearchOffsetDecodeLeavesRequestAlone(t *testing.T) {
	ext := map[string]string{"Topic": "T", "QueueId": "3", "timestamp": "9"}
	var h SearchOffsetRequestHeader
	if err := h.Decode(ext); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"Topic": "T", "QueueId": "3", "timestamp": "9"}, ext); diff != "" {
		t.Errorf("Decode changed the request's extFields (-want +got):\n%s", diff)
	}
}
