package broker

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// updateOffset sends UPDATE_CONSUMER_OFFSET and returns the answer.
func updateOffset(t *testing.T, tr remoting.Transport, addr, group, topic string, queueID int32, offset int64) *remoting.Command {
	t.Helper()
	return invoke(t, tr, addr, remoting.NewRequest(remoting.UpdateConsumerOffset,
		remoting.EncodeHeader(&protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic,
			QueueID: queueID, CommitOffset: offset}), nil))
}

// wantAnswer fails the test unless resp has code and a remark containing each of remarks.
func wantAnswer(t *testing.T, what string, resp *remoting.Command, code int32, remarks ...string) {
	t.Helper()
	ok := resp.Code == code
	for _, r := range remarks {
		ok = ok && strings.Contains(resp.Remark, r)
	}
	if !ok {
		t.Errorf("%s: %s %q, want %s with a remark containing %q", what, remoting.ResponseCodeName(resp.Code),
			resp.Remark, remoting.ResponseCodeName(code), remarks)
	}
}

// TestUpdateConsumerOffsetChecks: as RocketMQ 5, a commit for a group the broker does not hold
// is SUBSCRIPTION_GROUP_NOT_EXIST "Group <g> not exist!" and does not create the group, one for
// an unknown topic TOPIC_NOT_EXIST "Topic <t> not exist!"; ours, a queue id outside the topic's
// queues (the larger of its read and write counts) is INVALID_PARAMETER naming the count. None
// of them leaves anything in the offset table; the commits of a consumer that heartbeated, to
// its topic and its retry topic, are stored.
func TestUpdateConsumerOffsetChecks(t *testing.T) {
	tb := startTestBroker(t, nil)
	// A topic whose write queues grew before its read queues: queue 3 is written, not yet read.
	tb.topics.Update(TopicConfig{TopicName: "T", ReadQueueNums: 2, WriteQueueNums: 4, Perm: 6})
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			group := "g-" + name
			ghost := "ghost-" + name
			wantAnswer(t, "unknown group", updateOffset(t, tr, tb.Addr, ghost, "T", 0, 1),
				remoting.SubscriptionGroupNotExist, "Group "+ghost+" not exist!")
			if _, ok := tb.groups.Get(ghost); ok {
				t.Errorf("a commit created group %s", ghost)
			}
			wiretest.Heartbeat(t, tr, tb.Addr, "c@"+name, group, wiretest.Sub("T", "*"))
			wantAnswer(t, "unknown topic", updateOffset(t, tr, tb.Addr, group, "Nope", 0, 1),
				remoting.TopicNotExist, "Topic Nope not exist!")
			for _, q := range []int32{-1, 4, 1 << 30} {
				wantAnswer(t, fmt.Sprintf("queue %d of 4", q), updateOffset(t, tr, tb.Addr, group, "T", q, 1),
					remoting.InvalidParameter, fmt.Sprintf("queueId[%d]", q), "has 4 queues")
			}
			for _, q := range []int32{1, 3} {
				if resp := updateOffset(t, tr, tb.Addr, group, "T", q, 7); resp.Code != remoting.Success {
					t.Errorf("queue %d of 4: %s %q", q, remoting.ResponseCodeName(resp.Code), resp.Remark)
				}
			}
			if resp := updateOffset(t, tr, tb.Addr, group, "%RETRY%"+group, 0, 5); resp.Code != remoting.Success {
				t.Errorf("the group's retry topic: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
			}
			all := tb.offsets.Snapshot()
			if got := all["T@"+group]; len(got) != 2 || got[1] != 7 || got[3] != 7 {
				t.Errorf("offsets of T: %v, want queues 1 and 3 at 7", got)
			}
			if got := all["%RETRY%"+group+"@"+group]; len(got) != 1 || got[0] != 5 {
				t.Errorf("offsets of the retry topic: %v, want queue 0 at 5", got)
			}
			for key := range all {
				if strings.Contains(key, ghost) || strings.HasPrefix(key, "Nope@") {
					t.Errorf("a refused commit left %s in the offset table", key)
				}
			}
		})
	}
}

// TestGroupsPastMaxSubscriptionGroups: with MaxSubscriptionGroups 2, every request that would
// create a third group is answered SUBSCRIPTION_GROUP_NOT_EXIST naming the limit and creates
// nothing: a heartbeat (its groups within the limit are registered, with their retry topics;
// the others are not), a pull, a pop, a send-back, a send to a new group's retry topic,
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP and CLONE_GROUP_OFFSET. The groups held keep working, and the operator's tools
// (TOOLS_CONSUMER) still pull. Offsets cloned to a new group (CLONE_GROUP_OFFSET) are refused
// alike; to a held group they are cloned.
func TestGroupsPastMaxSubscriptionGroups(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Limits.MaxSubscriptionGroups = 2 })
	addTopic(tb, "T", 2)
	putMsgs(t, tb, "T", 0, 1, "", "m")
	const limit = "MaxSubscriptionGroups (2)"

	hb := protocol.HeartbeatData{ClientID: "c@1"}
	for _, g := range []string{"a", "b", "c", "d"} {
		hb.ConsumerDataSet = append(hb.ConsumerDataSet, protocol.ConsumerData{GroupName: g,
			ConsumeType: protocol.ConsumePassively, MessageModel: protocol.Clustering,
			ConsumeFromWhere: protocol.ConsumeFromLastOffset, SubscriptionDataSet: []protocol.SubscriptionData{wiretest.Sub("T", "*")}})
	}
	resp := invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.HeartBeat, nil, hb.Encode()))
	wantAnswer(t, "heartbeat with 4 new groups", resp, remoting.SubscriptionGroupNotExist, limit, "[c]", "and 1 more")
	for _, g := range []string{"a", "b"} {
		if code, ids := consumerList(t, tb.TCP, tb.Addr, g); code != remoting.Success || len(ids) != 1 {
			t.Errorf("members of %s, created by the heartbeat: %d %v", g, code, ids)
		}
		if _, ok := tb.topics.Get("%RETRY%" + g); !ok {
			t.Errorf("no retry topic for %s", g)
		}
	}
	for _, g := range []string{"c", "d"} {
		if code, ids := consumerList(t, tb.TCP, tb.Addr, g); code == remoting.Success {
			t.Errorf("members of %s, refused: %v", g, ids)
		}
		if _, ok := tb.topics.Get("%RETRY%" + g); ok {
			t.Errorf("retry topic of refused group %s created", g)
		}
	}

	wantAnswer(t, "pull", invoke(t, tb.TCP, tb.Addr, pullCmd(pullHeader("new-pull", "T", 0, 0))),
		remoting.SubscriptionGroupNotExist, limit, "new-pull")
	pop := &protocol.PopMessageRequestHeader{ConsumerGroup: "new-pop", Topic: "T", QueueID: -1, MaxMsgNums: 1,
		InvisibleTime: 60_000, BornTime: time.Now().UnixMilli()}
	wantAnswer(t, "pop", invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.PopMessage, remoting.EncodeHeader(pop), nil)),
		remoting.SubscriptionGroupNotExist, limit, "new-pop")
	back := &protocol.ConsumerSendMsgBackRequestHeader{Group: "new-back", Offset: 0, OriginTopic: "T", MaxReconsumeTimes: 16}
	wantAnswer(t, "send-back", invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.ConsumerSendMsgBack, remoting.EncodeHeader(back), nil)),
		remoting.SubscriptionGroupNotExist, limit, "new-back")
	send := wiretest.SendHeader("%RETRY%new-retry", 0, nil)
	wantAnswer(t, "send to a new group's retry topic", invoke(t, tb.TCP, tb.Addr,
		wiretest.SendRequest(remoting.SendMessageV2, &send, []byte("x"), remoting.SerializeJSON)),
		remoting.SubscriptionGroupNotExist, limit, "new-retry")
	body, err := json.Marshal(NewSubscriptionGroupConfig("new-admin"))
	if err != nil {
		t.Fatal(err)
	}
	wantAnswer(t, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP", invoke(t, tb.TCP, tb.Addr,
		remoting.NewRequest(remoting.UpdateAndCreateSubscription, nil, body)),
		remoting.SubscriptionGroupNotExist, limit, "new-admin")
	wantAnswer(t, "commit of a refused group", updateOffset(t, tb.TCP, tb.Addr, "c", "T", 0, 1),
		remoting.SubscriptionGroupNotExist, "Group c not exist!")
	clone := func(dest string) *remoting.Command {
		return invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.CloneGroupOffset, remoting.EncodeHeader(
			&protocol.CloneGroupOffsetRequestHeader{SrcGroup: "a", DestGroup: dest, Topic: "T", Offline: true}), nil))
	}
	wantAnswer(t, "offsets cloned to a new group", clone("new-clone"), remoting.SubscriptionGroupNotExist, limit, "new-clone")

	// What the broker holds keeps working: a held group pulls and commits, an admin update of
	// it is taken, and the tools' group is never refused.
	if r := pull(t, tb.TCP, tb.Addr, pullHeader("a", "T", 0, 0)); r.code != remoting.Success || len(r.bodies) != 1 {
		t.Errorf("pull of held group a: %d %q %v", r.code, r.remark, r.bodies)
	}
	if resp := updateOffset(t, tb.TCP, tb.Addr, "a", "T", 0, 1); resp.Code != remoting.Success {
		t.Errorf("commit of held group a: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	if resp := clone("b"); resp.Code != remoting.Success || tb.offsets.Query("b", "T", 0) != 1 {
		t.Errorf("offsets of a cloned to held group b: %s %q, b's offset %d", remoting.ResponseCodeName(resp.Code),
			resp.Remark, tb.offsets.Query("b", "T", 0))
	}
	upd := NewSubscriptionGroupConfig("b")
	upd.RetryMaxTimes = 3
	if body, err = json.Marshal(upd); err != nil {
		t.Fatal(err)
	}
	if resp := invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.UpdateAndCreateSubscription, nil, body)); resp.Code != remoting.Success {
		t.Errorf("admin update of held group b: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	if r := pull(t, tb.TCP, tb.Addr, pullHeader("TOOLS_CONSUMER", "T", 0, 0)); r.code == remoting.SubscriptionGroupNotExist {
		t.Errorf("the tools' pull refused: %q", r.remark)
	}
	held := slices.Sorted(maps.Keys(tb.groups.Snapshot().SubscriptionGroupTable))
	if want := []string{"TOOLS_CONSUMER", "a", "b"}; !slices.Equal(held, want) {
		t.Errorf("groups held %v, want %v", held, want)
	}
	for _, topic := range []string{"%RETRY%new-back", "%RETRY%c"} {
		if _, ok := tb.topics.Get(topic); ok {
			t.Errorf("%s created for a refused group", topic)
		}
	}
}
