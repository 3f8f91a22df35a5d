package mq_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// Rows 12 and 13: the broker's group and offset tables stay bounded whatever names and queue
// ids clients send (hostile_attacks_test.go lists the rows, hostile_test.go runs them).

// hsBoundsConns is the number of connections each of these attacks sends over.
const hsBoundsConns = 8

// hsFanOut sends reqs(i) for i in [0, n) over hsBoundsConns connections of their own to addr,
// one request at a time per connection, and hands each answer to check. It fails the test on
// a connection error and stops after the first 10 failed checks.
func hsFanOut(t *testing.T, addr string, n int, req func(i int) *remoting.Command, check func(i int, resp *remoting.Command) string) {
	t.Helper()
	var mu sync.Mutex
	var bad []string
	var wg sync.WaitGroup
	for w := range hsBoundsConns {
		c := hsDial(t, addr, 0)
		wg.Go(func() {
			defer c.close()
			for i := w; i < n; i += hsBoundsConns {
				resp, err := c.invoke(req(i))
				if err != nil {
					t.Errorf("connection %d, request %d: %v", w, i, err)
					return
				}
				if msg := check(i, resp); msg != "" {
					mu.Lock()
					bad = append(bad, msg)
					stop := len(bad) >= 10
					mu.Unlock()
					if stop {
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for _, msg := range bad {
		t.Error(msg)
	}
}

// hsAnswer is the failure message for resp unless it has code and a remark containing want.
func hsAnswer(what string, resp *remoting.Command, code int32, want string) string {
	if resp.Code == code && strings.Contains(resp.Remark, want) {
		return ""
	}
	return fmt.Sprintf("%s: %s %q, want %s with a remark containing %q", what, remoting.ResponseCodeName(resp.Code),
		resp.Remark, remoting.ResponseCodeName(code), want)
}

// hsGetAll asks a node for one of its whole tables (GET_ALL_*) and decodes the JSON body.
func hsGetAll(t *testing.T, addr string, code int32, into any) {
	t.Helper()
	resp := hsInvoke(t, hsClient(t), addr, remoting.NewRequest(code, nil, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("%s: %s %q", remoting.RequestCodeName(code), remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	if err := json.Unmarshal(resp.Body, into); err != nil {
		t.Fatalf("%s: %v", remoting.RequestCodeName(code), err)
	}
}

// hsGroups are the names in a node's subscription group table.
func hsGroups(t *testing.T, addr string) map[string]json.RawMessage {
	t.Helper()
	var groups struct {
		Table map[string]json.RawMessage `json:"subscriptionGroupTable"`
	}
	hsGetAll(t, addr, remoting.GetAllSubscriptionGroupConfig, &groups)
	return groups.Table
}

// hsOffsets is a node's consumer offset table: topic@group -> queue id -> offset.
func hsOffsets(t *testing.T, addr string) map[string]map[int32]int64 {
	t.Helper()
	resp := hsInvoke(t, hsClient(t), addr, remoting.NewRequest(remoting.GetAllConsumerOffset, nil, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("GET_ALL_CONSUMER_OFFSET: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	w, err := protocol.DecodeConsumerOffsetSerializeWrapper(resp.Body)
	if err != nil {
		t.Fatalf("consumer offset table: %v", err)
	}
	return w.OffsetTable
}

// hsUpdateOffset is an UPDATE_CONSUMER_OFFSET as the Go client writes it.
func hsUpdateOffset(group, topic string, queueID int32, offset int64) *remoting.Command {
	return remoting.NewRequest(remoting.UpdateConsumerOffset, remoting.EncodeHeader(
		&protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queueID,
			CommitOffset: offset}), nil)
}

// Row 12: 20,000 UPDATE_CONSUMER_OFFSETs, each for a queue the broker does not have: a group it
// does not hold, a topic it does not hold, or a queue id past (or below) the honest topic's
// queues. Each is refused as RocketMQ 5 refuses it (the queue id, ours: INVALID_PARAMETER
// naming the count), and neither the offset table nor the group table takes any of them.
func hsAttackUnknownOffsets(t *testing.T, e *hsEnv) func() {
	const n = 20000
	var topics route.TopicConfigSerializeWrapper
	hsGetAll(t, e.main.addr, remoting.GetAllTopicConfig, &topics)
	tc, ok := topics.TopicConfigTable[hsHonestTopic]
	if !ok {
		t.Fatalf("no topic %s on the node", hsHonestTopic)
	}
	queues := max(tc.ReadQueueNums, tc.WriteQueueNums)
	groupsBefore := len(hsGroups(t, e.main.addr))
	req := func(i int) *remoting.Command {
		switch i % 4 {
		case 0:
			return hsUpdateOffset(fmt.Sprintf("hostile_off_g%05d", i), hsHonestTopic, 0, int64(i))
		case 1:
			return hsUpdateOffset(hsHonestCG, fmt.Sprintf("HostileOffT%05d", i), 0, int64(i))
		case 2:
			return hsUpdateOffset(hsHonestCG, hsHonestTopic, queues+int32(i), int64(i))
		default:
			return hsUpdateOffset(hsHonestCG, hsHonestTopic, -int32(i), int64(i))
		}
	}
	hsFanOut(t, e.main.addr, n, req, func(i int, resp *remoting.Command) string {
		what := fmt.Sprintf("commit %d", i)
		switch i % 4 {
		case 0:
			return hsAnswer(what+" (unknown group)", resp, remoting.SubscriptionGroupNotExist,
				fmt.Sprintf("Group hostile_off_g%05d not exist!", i))
		case 1:
			return hsAnswer(what+" (unknown topic)", resp, remoting.TopicNotExist, fmt.Sprintf("Topic HostileOffT%05d not exist!", i))
		default:
			return hsAnswer(what+" (queue id out of range)", resp, remoting.InvalidParameter, fmt.Sprintf("has %d queues", queues))
		}
	})
	var leaked []string
	for key, qs := range hsOffsets(t, e.main.addr) {
		if strings.Contains(key, "hostile_off_") || strings.HasPrefix(key, "HostileOffT") {
			leaked = append(leaked, key)
		}
		if key != hsHonestTopic+"@"+hsHonestCG {
			continue
		}
		for q := range qs {
			if q < 0 || q >= queues {
				leaked = append(leaked, fmt.Sprintf("%s queue %d (of %d)", key, q, queues))
			}
		}
	}
	if len(leaked) > 0 {
		slices.Sort(leaked)
		t.Errorf("the offset table took %d refused commits, e.g. %s", len(leaked), strings.Join(leaked[:min(5, len(leaked))], ", "))
	}
	groups := hsGroups(t, e.main.addr)
	for name := range groups {
		if strings.HasPrefix(name, "hostile_off_") {
			t.Errorf("a refused commit created group %s", name)
		}
	}
	if len(groups) != groupsBefore {
		t.Errorf("the node holds %d groups after the commits, %d before", len(groups), groupsBefore)
	}
	// The honest consumer's own commit is still taken.
	if resp := hsInvoke(t, hsClient(t), e.main.addr, hsUpdateOffset(hsHonestCG, hsHonestTopic, 0, 0)); resp.Code != remoting.Success {
		t.Errorf("the honest group's commit: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	return nil
}

// hsGroupCap is the MaxSubscriptionGroups of row 13's node.
const hsGroupCap = 16

// Row 13: against a node of its own with MaxSubscriptionGroups 16 and honest clients on it,
// 50 heartbeats of 100 new consumer groups each, 2,000 pulls and 500 send-backs each naming a
// new group and 100 admin creations of new groups. The node creates groups up to the cap and
// refuses every request past it with SUBSCRIPTION_GROUP_NOT_EXIST naming the limit; its group
// table holds at most the cap (besides RocketMQ's predefined groups), its topic table no
// %RETRY% topic of a refused group, and the honest producer and consumer, and their group's
// commits, keep working throughout.
func hsAttackGroupCap(t *testing.T, e *hsEnv) func() {
	node := e.start(t, hsNodeConfig{maxGroups: hsGroupCap})
	honest := hsStartHonest(t, node.addr)
	honest.roundTrip(t, "before the groups")
	node.snapshotStore(t)
	before := node.mustMemory(t)
	limit := fmt.Sprintf("MaxSubscriptionGroups (%d)", hsGroupCap)

	const heartbeats, perHeartbeat = 50, 100
	created := 0
	hsFanOut(t, node.addr, heartbeats, func(i int) *remoting.Command {
		hb := protocol.HeartbeatData{ClientID: fmt.Sprintf("127.0.0.1@hostile-cap-%d", i)}
		for j := range perHeartbeat {
			hb.ConsumerDataSet = append(hb.ConsumerDataSet, protocol.ConsumerData{GroupName: fmt.Sprintf("hostile_cap_hb_%02d_%03d", i, j),
				ConsumeType: protocol.ConsumePassively, MessageModel: protocol.Clustering,
				ConsumeFromWhere: protocol.ConsumeFromLastOffset,
				SubscriptionDataSet: []protocol.SubscriptionData{{Topic: hsHonestTopic, SubString: protocol.SubAll,
					ExpressionType: protocol.ExpressionTag}}})
		}
		return remoting.NewRequest(remoting.HeartBeat, nil, hb.Encode())
	}, func(i int, resp *remoting.Command) string {
		return hsAnswer(fmt.Sprintf("heartbeat %d of %d new groups", i, perHeartbeat), resp, remoting.SubscriptionGroupNotExist, limit)
	})
	peak := max(before, node.mustMemory(t))
	hsFanOut(t, node.addr, 2000, func(i int) *remoting.Command {
		return hsPullRequest(fmt.Sprintf("hostile_cap_pull_%04d", i), hsHonestTopic, 0, 0, 0)
	}, func(i int, resp *remoting.Command) string {
		return hsAnswer(fmt.Sprintf("pull %d", i), resp, remoting.SubscriptionGroupNotExist, limit)
	})
	hsFanOut(t, node.addr, 500, func(i int) *remoting.Command {
		back := &protocol.ConsumerSendMsgBackRequestHeader{Group: fmt.Sprintf("hostile_cap_back_%03d", i),
			OriginTopic: hsHonestTopic, MaxReconsumeTimes: 16}
		return remoting.NewRequest(remoting.ConsumerSendMsgBack, remoting.EncodeHeader(back), nil)
	}, func(i int, resp *remoting.Command) string {
		return hsAnswer(fmt.Sprintf("send-back %d", i), resp, remoting.SubscriptionGroupNotExist, limit)
	})
	hsFanOut(t, node.addr, 100, func(i int) *remoting.Command {
		body := fmt.Sprintf(`{"groupName":"hostile_cap_admin_%03d","consumeEnable":true}`, i)
		return remoting.NewRequest(remoting.UpdateAndCreateSubscription, nil, []byte(body))
	}, func(i int, resp *remoting.Command) string {
		return hsAnswer(fmt.Sprintf("admin creation %d", i), resp, remoting.SubscriptionGroupNotExist, limit)
	})
	peak = max(peak, node.mustMemory(t))
	honest.roundTrip(t, "during the groups")

	groups := hsGroups(t, node.addr)
	for name := range groups {
		if strings.HasPrefix(name, "hostile_cap_") {
			created++
		}
	}
	if _, ok := groups[hsHonestCG]; !ok {
		t.Errorf("the honest group %s is not in the table", hsHonestCG)
	}
	// The honest group holds one place; RocketMQ's predefined groups (none here) hold none.
	if created > hsGroupCap-1 {
		t.Errorf("%d of the attack's groups created, above MaxSubscriptionGroups %d less the honest group", created, hsGroupCap)
	}
	if created == 0 {
		t.Error("no group of the attack was created: the heartbeats should have filled the table")
	}
	var topics route.TopicConfigSerializeWrapper
	hsGetAll(t, node.addr, remoting.GetAllTopicConfig, &topics)
	for name := range topics.TopicConfigTable {
		if g, ok := strings.CutPrefix(name, "%RETRY%"); ok && groups[g] == nil {
			t.Errorf("retry topic %s of a group the node does not hold", name)
		}
	}
	if resp := hsInvoke(t, hsClient(t), node.addr, hsUpdateOffset(hsHonestCG, hsHonestTopic, 0, 0)); resp.Code != remoting.Success {
		t.Errorf("the honest group's commit on the full node: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	if peak > before+hsMemBound {
		t.Errorf("memory grew from %d MiB to %d MiB (bound +%d MiB)", before>>20, peak>>20, hsMemBound>>20)
	}
	honest.roundTrip(t, "after the groups")
	node.checkAlive(t)
	node.checkStore(t)
	node.checkNames(t)
	return nil
}
