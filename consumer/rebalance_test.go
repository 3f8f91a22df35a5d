package consumer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/route"
)

func TestReadableQueues(t *testing.T) {
	r := &route.TopicRouteData{QueueDatas: []route.QueueData{
		{BrokerName: "b", ReadQueueNums: 2, WriteQueueNums: 4, Perm: route.PermReadWrite},
		{BrokerName: "a", ReadQueueNums: 1, Perm: route.PermRead},
		{BrokerName: "c", ReadQueueNums: 3, Perm: route.PermWrite},
	}}
	want := []MessageQueue{{Topic: "T", BrokerName: "a", QueueID: 0}, {Topic: "T", BrokerName: "b", QueueID: 0},
		{Topic: "T", BrokerName: "b", QueueID: 1}}
	if diff := cmp.Diff(want, readableQueues(r, "T")); diff != "" {
		t.Errorf("queues (-want +got):\n%s", diff)
	}
}

func TestDiffQueues(t *testing.T) {
	q := func(id int) MessageQueue { return MessageQueue{Topic: "T", BrokerName: "b", QueueID: id} }
	add, drop := diffQueues([]MessageQueue{q(3), q(0), q(1)}, []MessageQueue{q(2), q(1), q(4)})
	if diff := cmp.Diff([]MessageQueue{q(2), q(4)}, add); diff != "" {
		t.Errorf("add (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]MessageQueue{q(0), q(3)}, drop); diff != "" {
		t.Errorf("drop (-want +got):\n%s", diff)
	}
	if add, drop := diffQueues(nil, nil); add != nil || drop != nil {
		t.Errorf("empty diff: %v %v", add, drop)
	}
}
