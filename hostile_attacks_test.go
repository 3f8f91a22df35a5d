package mq_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// The attacks of issue 10, one row each; hostile_test.go runs them and adds the checks every
// row shares.
func hsRows() []hsRow {
	return []hsRow{
		{name: "1-names-from-the-wire", attack: hsAttackNames},
		{name: "2-fake-replication", attack: hsAttackReplication},
		{name: "3-unread-responses", attack: hsAttackUnreadResponses},
		{name: "4-parked-pulls", attack: hsAttackParkedPulls},
		{name: "5-huge-queue-counts", attack: hsAttackQueueCounts},
		{name: "6-huge-binary-header", attack: hsAttackHugeHeader},
		{name: "7-heartbeat-2000-groups", attack: hsAttackManyGroups},
		{name: "8-too-many-connections", attack: hsAttackConnections},
		{name: "9-malformed-frames", attack: hsAttackMalformedFrames},
		{name: "10-rocketmq5-types", attack: hsAttackTypes},
		{name: "11-operator-codes", attack: hsAttackOpsCodes},
		{name: "12-offsets-for-20000-unknown-queues", attack: hsAttackUnknownOffsets},
		{name: "13-groups-past-the-cap", attack: hsAttackGroupCap},
	}
}

// hsBadNames reach a path, an offset-table key or a log line if a broker trusts them.
var hsBadNames = []string{"../../../../x/pwn", "..", "a/b", "%RETRY%../x", "a@b", "a\xff\xfeb"}

// hsNamedRequest is a request that carries a name in one field.
type hsNamedRequest struct {
	what string
	req  *remoting.Command
}

// binaryHeader sends the header in RocketMQ's binary serialization, which carries a name's
// bytes as they are (JSON would turn invalid UTF-8 into U+FFFD).
func binaryHeader(req *remoting.Command) *remoting.Command {
	req.Serialize = remoting.SerializeRocketMQ
	return req
}

// hsTopicRequests are the requests that carry topic, each with valid other names.
func hsTopicRequests(topic string) []hsNamedRequest {
	const group = "hostile_names_cg"
	send := protocol.SendMessageRequestHeader{ProducerGroup: "hostile_pg", Topic: topic, DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1}
	create := &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: 4,
		WriteQueueNums: 4, Perm: route.PermReadWrite, TopicFilterType: route.FilterSingleTag}
	reg := route.BuildRegisterBroker(&route.RegisterBrokerRequest{ClusterName: "HostileCluster",
		BrokerName: "hostile-broker", BrokerAddr: "127.0.0.1:1", HAServerAddr: "127.0.0.1:2",
		Body: route.RegisterBrokerBody{TopicConfigSerializeWrapper: route.TopicConfigSerializeWrapper{
			TopicConfigTable: map[string]route.TopicConfig{topic: {TopicName: topic, ReadQueueNums: 1,
				WriteQueueNums: 1, Perm: route.PermReadWrite}}}}})
	return []hsNamedRequest{
		{"SEND_MESSAGE", binaryHeader(remoting.NewRequest(remoting.SendMessage, remoting.EncodeHeader(&send), []byte("x")))},
		{"SEND_MESSAGE_V2", binaryHeader(remoting.NewRequest(remoting.SendMessageV2,
			remoting.EncodeHeader((*protocol.SendMessageRequestHeaderV2)(&send)), []byte("x")))},
		{"PULL_MESSAGE", binaryHeader(hsPullRequest(group, topic, 0, 0, 0))},
		{"UPDATE_CONSUMER_OFFSET", binaryHeader(remoting.NewRequest(remoting.UpdateConsumerOffset, remoting.EncodeHeader(
			&protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, CommitOffset: 1}), nil))},
		{"QUERY_CONSUMER_OFFSET", binaryHeader(remoting.NewRequest(remoting.QueryConsumerOffset, remoting.EncodeHeader(
			&protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic}), nil))},
		{"UPDATE_AND_CREATE_TOPIC", binaryHeader(remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(create), nil))},
		{"HEART_BEAT", remoting.NewRequest(remoting.HeartBeat, nil, hsHeartbeat("hostile-names", group, topic))},
		{"LOCK_BATCH_MQ", remoting.NewRequest(remoting.LockBatchMQ, nil, hsLockBody(group, topic))},
		{"REGISTER_BROKER", binaryHeader(reg)},
		{"QUERY_CONSUME_QUEUE", binaryHeader(remoting.NewRequest(remoting.QueryConsumeQueue, remoting.EncodeHeader(
			&protocol.QueryConsumeQueueRequestHeader{Topic: topic, Count: 1, ConsumerGroup: group}), nil))},
		{"CLONE_GROUP_OFFSET", binaryHeader(remoting.NewRequest(remoting.CloneGroupOffset, remoting.EncodeHeader(
			&protocol.CloneGroupOffsetRequestHeader{SrcGroup: group, DestGroup: group + "_dst", Topic: topic}), nil))},
	}
}

// hsGroupRequests are the requests that carry group, each with valid other names.
func hsGroupRequests(e *hsEnv, group string) []hsNamedRequest {
	topic := hsHonestTopic
	back := &protocol.ConsumerSendMsgBackRequestHeader{Offset: e.phyOffset, Group: group, DelayLevel: -1,
		OriginTopic: topic, MaxReconsumeTimes: 16}
	return []hsNamedRequest{
		{"CONSUMER_SEND_MSG_BACK", binaryHeader(remoting.NewRequest(remoting.ConsumerSendMsgBack, remoting.EncodeHeader(back), nil))},
		{"PULL_MESSAGE", binaryHeader(hsPullRequest(group, topic, 0, 0, 0))},
		{"UPDATE_CONSUMER_OFFSET", binaryHeader(remoting.NewRequest(remoting.UpdateConsumerOffset, remoting.EncodeHeader(
			&protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, CommitOffset: 1}), nil))},
		{"QUERY_CONSUMER_OFFSET", binaryHeader(remoting.NewRequest(remoting.QueryConsumerOffset, remoting.EncodeHeader(
			&protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic}), nil))},
		{"HEART_BEAT", remoting.NewRequest(remoting.HeartBeat, nil, hsHeartbeat("hostile-names", group, topic))},
		{"LOCK_BATCH_MQ", remoting.NewRequest(remoting.LockBatchMQ, nil, hsLockBody(group, topic))},
		{"QUERY_CONSUME_QUEUE", binaryHeader(remoting.NewRequest(remoting.QueryConsumeQueue, remoting.EncodeHeader(
			&protocol.QueryConsumeQueueRequestHeader{Topic: topic, Count: 1, ConsumerGroup: group}), nil))},
		{"CLONE_GROUP_OFFSET", binaryHeader(remoting.NewRequest(remoting.CloneGroupOffset, remoting.EncodeHeader(
			&protocol.CloneGroupOffsetRequestHeader{SrcGroup: hsHonestCG, DestGroup: group, Topic: topic, Offline: true}), nil))},
	}
}

func hsHeartbeat(clientID, group, topic string) []byte {
	hb := protocol.HeartbeatData{ClientID: clientID, ConsumerDataSet: []protocol.ConsumerData{{
		GroupName: group, ConsumeType: protocol.ConsumePassively, MessageModel: protocol.Clustering,
		ConsumeFromWhere: protocol.ConsumeFromLastOffset,
		SubscriptionDataSet: []protocol.SubscriptionData{{Topic: topic, SubString: protocol.SubAll,
			ExpressionType: protocol.ExpressionTag}},
	}}}
	return hb.Encode()
}

func hsLockBody(group, topic string) []byte {
	b, err := json.Marshal(protocol.LockBatchRequestBody{ConsumerGroup: group, ClientID: "hostile-names",
		MQSet: []protocol.MessageQueue{{Topic: topic, BrokerName: "broker-a"}}})
	if err != nil {
		panic(err)
	}
	return b
}

// Row 1: every request code that carries a topic or a group refuses names that are not
// RocketMQ's ([%|a-zA-Z0-9_-], at most 127 bytes for a topic and 255 for a group), with a
// remark naming the field. CONSUMER_SEND_MSG_BACK with delayLevel -1 and group
// "../../../../x/pwn" once created a ConsumeQueue file outside the store.
func hsAttackNames(t *testing.T, e *hsEnv) func() {
	c := hsClient(t)
	check := func(field, name string, r hsNamedRequest) {
		resp := hsInvoke(t, c, e.main.addr, r.req)
		// A registration carries a whole topic table: the name service may take the valid
		// topics and leave the bad one out, answering SUCCESS with a remark naming it, rather
		// than cut every route of a broker off for one name; checkNames then finds it in no
		// table.
		refused := resp.Code != remoting.Success || r.req.Code == remoting.RegisterBroker
		if !refused || !strings.Contains(strings.ToLower(resp.Remark), field) {
			t.Errorf("%s with %s %q: answered %s %q, want a refusal naming the %s",
				r.what, field, name, remoting.ResponseCodeName(resp.Code), resp.Remark, field)
		}
	}
	for _, topic := range append(slices.Clone(hsBadNames), strings.Repeat("t", 128)) {
		for _, r := range hsTopicRequests(topic) {
			check("topic", topic, r)
		}
	}
	for _, group := range append(slices.Clone(hsBadNames), strings.Repeat("g", 256)) {
		for _, r := range hsGroupRequests(e, group) {
			check("group", group, r)
		}
	}
	// A registration the name service took must not linger in its routes.
	hsInvoke(t, c, e.main.addr, route.BuildUnregisterBroker("HostileCluster", "hostile-broker", "127.0.0.1:1", 0))
	return nil
}

// Row 2: an HA peer cannot fake replication or read the CommitLog.
func hsAttackReplication(t *testing.T, e *hsEnv) func() {
	t.Run("reports-0-then-MaxInt64", func(t *testing.T) {
		n := e.start(t, hsNodeConfig{syncMaster: true})
		if n.haAddr == "" {
			t.Fatal("the sync master advertised no HA address")
		}
		peer, err := net.DialTimeout("tcp", n.haAddr, hsTimeout)
		if err != nil {
			t.Fatal(err)
		}
		defer peer.Close()
		var reports [16]byte
		binary.BigEndian.PutUint64(reports[8:], math.MaxInt64)
		if _, err := peer.Write(reports[:]); err != nil {
			t.Fatal(err)
		}
		// A master drops a peer whose report passes its log's end; give it that long before
		// the send, reading what it streams meanwhile.
		_ = peer.SetReadDeadline(time.Now().Add(time.Second))
		_, err = io.Copy(io.Discard, peer)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Log("the master kept the peer that reported MaxInt64")
		}
		resp := hsInvoke(t, hsClient(t), n.addr, hsSendRequest("HostileSync", 0, []byte("sync")))
		if resp.Code != remoting.SlaveNotAvailable && resp.Code != remoting.FlushSlaveTimeout {
			t.Errorf("SYNC_MASTER send with no real slave answered %s %q, want SLAVE_NOT_AVAILABLE or FLUSH_SLAVE_TIMEOUT",
				remoting.ResponseCodeName(resp.Code), resp.Remark)
		}
		n.checkAlive(t)
		n.checkStore(t)
	})
	t.Run("peer-without-secret", func(t *testing.T) {
		n := e.start(t, hsNodeConfig{haSecret: "hostile-ha-secret"})
		if n.haAddr == "" {
			t.Fatal("the master advertised no HA address")
		}
		marker := fmt.Appendf(nil, "commitlog-marker-%d", time.Now().UnixNano())
		if resp := hsInvoke(t, hsClient(t), n.addr, hsSendRequest("HostileSecret", 0, marker)); resp.Code != remoting.Success {
			t.Fatalf("send: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
		}
		peer, err := net.DialTimeout("tcp", n.haAddr, hsTimeout)
		if err != nil {
			t.Fatal(err)
		}
		defer peer.Close()
		// A slave without the secret reports that its log ends at 0; the zeros after that
		// make the bytes as long as the handshake's answer, a wrong proof, so a master that
		// checks it drops the peer at once instead of when the handshake times out.
		if _, err := peer.Write(make([]byte, 64)); err != nil {
			t.Logf("write report: %v", err)
		}
		_ = peer.SetReadDeadline(time.Now().Add(time.Second))
		got, _ := io.ReadAll(io.LimitReader(peer, 1<<20))
		if bytes.Contains(got, marker) {
			t.Errorf("a peer without the HA secret received CommitLog bytes (%d bytes, the stored message among them)", len(got))
		}
		n.checkAlive(t)
		n.checkStore(t)
	})
	return nil
}

// Row 3: one connection that never reads sends 300 pulls of a 1 MiB message. The node stops
// reading a connection whose unsent responses pass a cap, so it holds a few MiB, not 300.
func hsAttackUnreadResponses(t *testing.T, e *hsEnv) func() {
	const group = "hostile_reader"
	// The pull the attack repeats answers the whole message.
	resp := hsInvoke(t, hsClient(t), e.main.addr, hsPullRequest(group, hsBigTopic, e.bigQueue, e.bigOffset, 0))
	if resp.Code != remoting.Success || len(resp.Body) < 1<<20 {
		t.Fatalf("pull of the 1 MiB message: %s %q, %d bytes", remoting.ResponseCodeName(resp.Code), resp.Remark, len(resp.Body))
	}
	c := hsDial(t, e.main.addr, 4096)
	var frames []byte
	for range 300 {
		frames = remoting.AppendFrame(frames, hsPullRequest(group, hsBigTopic, e.bigQueue, e.bigOffset, 0))
	}
	return hsWriteInBackground(t, c, frames)
}

// hsWriteInBackground writes bufs on c without waiting: a node that stops reading c must not
// stall the test. The returned function closes c and waits for the writer.
func hsWriteInBackground(t *testing.T, c *hsConn, bufs ...[]byte) func() {
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.write(bufs...) })
	end := func() {
		c.close()
		wg.Wait()
	}
	t.Cleanup(end)
	return end
}

// Row 4: 40 long-poll pulls asking suspendTimeoutMillis 2^50 with 8 MiB bodies on one
// connection: a pull takes no body, so each is refused as its header arrives and its body is
// dropped unread (hostile_flood_test.go has them on 40 connections). Then 4,097 bodiless ones on another connection: the
// per-connection cap (DefaultMaxHeldPullsPerConnection, 4,096) answers at least one at once
// instead of parking it. In-process, where the suspend cap is a second, a pull asking 2^50 ms
// is answered once the cap passes (the binary's default 60 s is too long to wait for).
func hsAttackParkedPulls(t *testing.T, e *hsEnv) func() {
	const group = "hostile_parker"
	next := e.bigOffset + 1 // nothing there yet: the pull parks
	var probe *hsConn
	if e.mode == "inproc" {
		probe = hsDial(t, e.main.addr, 0)
		if err := probe.write(remoting.AppendFrame(nil, hsPullRequest(group, hsBigTopic, e.bigQueue, next, 1<<50))); err != nil {
			t.Fatal(err)
		}
	}
	c := hsDial(t, e.main.addr, 0)
	body := make([]byte, 8<<20)
	wrote := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 40 {
			req := hsPullRequest(group, hsBigTopic, e.bigQueue, next, 1<<50)
			req.Body = body
			if err := c.write(remoting.AppendFrameHeader(nil, req), body); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	})
	select {
	case err := <-wrote:
		if err != nil {
			t.Errorf("writing the 40 pulls: %v", err)
		}
	case <-time.After(hsTimeout):
		t.Errorf("the node read no more of the 40 pulls after %v", hsTimeout)
	}

	many := hsDial(t, e.main.addr, 0)
	var frames []byte
	for range config.DefaultMaxHeldPullsPerConnection + 1 {
		frames = remoting.AppendFrame(frames, hsPullRequest(group, hsBigTopic, e.bigQueue, next, 1<<50))
	}
	endMany := hsWriteInBackground(t, many, frames)
	if _, err := many.read(10 * time.Second); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("none of 4,097 parked pulls on one connection was answered within 10 s: no per-connection cap")
		}
		// else the node closed the connection: a cap too
	}
	if probe != nil {
		if _, err := probe.read(hsTimeout); err != nil {
			t.Errorf("a pull asking to be held 2^50 ms, with a suspend cap of 1 s: %v", err)
		}
	}
	end := func() {
		c.close()
		wg.Wait()
		endMany()
	}
	t.Cleanup(end)
	return end
}

// Row 5: UPDATE_AND_CREATE_TOPIC with 2^31-1 queues is refused (a topic's queue counts are
// capped, 1024 by default), and GET_TOPIC_STATS_INFO, which walks every queue, answers.
func hsAttackQueueCounts(t *testing.T, e *hsEnv) func() {
	c := hsClient(t)
	const topic = "HostileHugeQueues"
	for _, q := range []struct{ read, write int32 }{{8, math.MaxInt32}, {math.MaxInt32, 8}, {math.MaxInt32, math.MaxInt32}} {
		h := &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: q.read,
			WriteQueueNums: q.write, Perm: route.PermReadWrite, TopicFilterType: route.FilterSingleTag}
		resp := hsInvoke(t, c, e.main.addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil))
		if resp.Code == remoting.Success {
			t.Errorf("topic with %d read and %d write queues created", q.read, q.write)
			// Walking its queues would take the node (and this test) down: remove it.
			del := remoting.EncodeHeader(&protocol.DeleteTopicRequestHeader{Topic: topic})
			hsInvoke(t, c, e.main.addr, remoting.NewRequest(remoting.DeleteTopicInBroker, del, nil))
			hsInvoke(t, c, e.main.addr, route.BuildDeleteTopic(topic))
		}
	}
	for _, tp := range []string{topic, hsHonestTopic} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req := remoting.NewRequest(remoting.GetTopicStatsInfo,
			remoting.EncodeHeader(&protocol.GetTopicStatsInfoRequestHeader{Topic: tp}), nil)
		resp, err := c.InvokeSync(ctx, e.main.addr, req)
		cancel()
		switch {
		case err != nil:
			t.Errorf("GET_TOPIC_STATS_INFO %s: %v", tp, err)
		case tp == hsHonestTopic && resp.Code != remoting.Success:
			t.Errorf("GET_TOPIC_STATS_INFO %s: %s %q", tp, remoting.ResponseCodeName(resp.Code), resp.Remark)
		}
	}
	return nil
}

// hsHugeBinaryHeader is a frame whose binary (type 1) header of about size bytes is nothing
// but distinct empty ext fields of 3-byte keys.
func hsHugeBinaryHeader(size int) []byte {
	const entry = 2 + 3 + 4
	n := (size - 21) / entry
	hl := 21 + n*entry
	b := make([]byte, 8+hl)
	binary.BigEndian.PutUint32(b, uint32(4+hl))
	binary.BigEndian.PutUint32(b[4:], uint32(remoting.SerializeRocketMQ)<<24|uint32(hl))
	h := b[8:]
	binary.BigEndian.PutUint16(h, uint16(remoting.GetAllTopicConfig))
	h[2] = byte(remoting.LanguageGo)
	binary.BigEndian.PutUint16(h[3:], uint16(remoting.ProtocolVersion))
	binary.BigEndian.PutUint32(h[5:], uint32(remoting.NextOpaque()))
	binary.BigEndian.PutUint32(h[17:], uint32(n*entry)) // flag and remark length stay 0
	for i, p := 0, 21; i < n; i, p = i+1, p+entry {
		binary.BigEndian.PutUint16(h[p:], 3)
		h[p+2], h[p+3], h[p+4] = byte(i>>16), byte(i>>8), byte(i)
	}
	return b
}

// Row 6: a 15 MiB binary header of tiny ext fields (1.7 million of them decoded to 75 MiB)
// closes the connection: the header size (64 KiB) and ext field count (256) limits come
// before decoding.
func hsAttackHugeHeader(t *testing.T, e *hsEnv) func() {
	c := hsDial(t, e.main.addr, 0)
	end := hsWriteInBackground(t, c, hsHugeBinaryHeader(15<<20))
	if err := c.waitClosed(10 * time.Second); err != nil {
		t.Errorf("15 MiB binary header: %v", err)
	}
	return end
}

// Row 7: one HEART_BEAT with 2,000 new consumer groups is answered (the group and topic
// tables are persisted off the request path), and every group's %RETRY% topic is routable.
func hsAttackManyGroups(t *testing.T, e *hsEnv) func() {
	const groups = 2000
	hb := protocol.HeartbeatData{ClientID: "127.0.0.1@hostile-heartbeat"}
	retry := make([]string, groups)
	for i := range groups {
		g := fmt.Sprintf("hostile_hb_%04d", i)
		retry[i] = "%RETRY%" + g
		hb.ConsumerDataSet = append(hb.ConsumerDataSet, protocol.ConsumerData{GroupName: g,
			ConsumeType: protocol.ConsumePassively, MessageModel: protocol.Clustering,
			ConsumeFromWhere: protocol.ConsumeFromLastOffset,
			SubscriptionDataSet: []protocol.SubscriptionData{{Topic: hsHonestTopic, SubString: protocol.SubAll,
				ExpressionType: protocol.ExpressionTag}}})
	}
	c := hsClient(t)
	// Generous: the row asserts an answer, never its speed.
	ctx, cancel := context.WithTimeout(context.Background(), 2*hsTimeout)
	defer cancel()
	resp, err := c.InvokeSync(ctx, e.main.addr, remoting.NewRequest(remoting.HeartBeat, nil, hb.Encode()))
	if err != nil {
		t.Fatalf("heartbeat with %d groups: %v", groups, err)
	}
	if resp.Code != remoting.Success {
		t.Fatalf("heartbeat with %d groups: %s %q", groups, remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	// Registration with the name service follows the creation; wait for every route.
	missing := slices.Clone(retry)
	deadline := time.Now().Add(hsTimeout)
	for len(missing) > 0 {
		missing = hsUnroutable(c, e.main.addr, missing)
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d retry topics have no route after %v, e.g. %s", len(missing), groups, hsTimeout, missing[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// hsUnroutable returns the topics the name service at addr has no route for, asking eight at
// a time.
func hsUnroutable(c *remoting.Client, addr string, topics []string) []string {
	var mu sync.Mutex
	var missing []string
	var wg sync.WaitGroup
	work := make(chan string)
	for range 8 {
		wg.Go(func() {
			for topic := range work {
				ctx, cancel := context.WithTimeout(context.Background(), hsTimeout)
				resp, err := c.InvokeSync(ctx, addr, route.BuildGetRouteInfo(topic))
				cancel()
				if err != nil || resp.Code != remoting.Success {
					mu.Lock()
					missing = append(missing, topic)
					mu.Unlock()
				}
			}
		})
	}
	for _, topic := range topics {
		work <- topic
	}
	close(work)
	wg.Wait()
	slices.Sort(missing)
	return missing
}

// Row 8: connections beyond MaxConnections are closed, and the node serves new ones once
// the others went.
func hsAttackConnections(t *testing.T, e *hsEnv) func() {
	const maxConns, extra = 8, 5
	n := e.start(t, hsNodeConfig{maxConns: maxConns})
	var conns []*hsConn
	answered, closed := 0, 0
	for i := range maxConns + extra {
		c := hsDial(t, n.addr, 0)
		conns = append(conns, c)
		req := route.BuildGetRouteInfo("TBW102")
		if err := c.write(remoting.AppendFrame(nil, req)); err != nil {
			closed++
			continue
		}
		_, err := c.read(10 * time.Second)
		var ne net.Error
		switch {
		case err == nil:
			answered++
		case errors.As(err, &ne) && ne.Timeout():
			t.Errorf("connection %d neither answered nor closed", i+1)
		default:
			closed++
		}
	}
	if answered > maxConns || closed < extra {
		t.Errorf("with MaxConnections %d, %d connections: %d answered, %d closed", maxConns, maxConns+extra, answered, closed)
	}
	for _, c := range conns {
		c.close()
	}
	// The node learns of the closes asynchronously: a new connection is served eventually.
	deadline := time.Now().Add(hsTimeout)
	for {
		c := hsDial(t, n.addr, 0)
		_, err := c.invoke(route.BuildGetRouteInfo("TBW102"))
		c.close()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new connection served after the others closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	n.checkAlive(t)
	n.checkStore(t)
	return nil
}

// Row 9: a malformed frame closes its connection; the others go on (the shared checks).
func hsAttackMalformedFrames(t *testing.T, e *hsEnv) func() {
	over := make([]byte, 4, 4+64)
	binary.BigEndian.PutUint32(over, remoting.DefaultMaxFrameBytes+1)
	over = append(over, make([]byte, 64)...)
	for _, f := range []struct {
		name  string
		bytes []byte
	}{
		{"length under 4", []byte{0, 0, 0, 2, 0, 0}},
		{"negative length", []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}},
		{"header longer than the frame", []byte{0, 0, 0, 8, 0, 0, 0, 100, '{', '}', ' ', ' '}},
		{"unknown serialize type", []byte{0, 0, 0, 6, 5, 0, 0, 2, '{', '}'}},
		{"truncated JSON header", append([]byte{0, 0, 0, 12, 0, 0, 0, 8}, `{"code":`...)},
		{"16 MiB + 1", over},
	} {
		c := hsDial(t, e.main.addr, 0)
		_ = c.write(f.bytes) // the node may close before reading it all
		if err := c.waitClosed(10 * time.Second); err != nil {
			t.Errorf("%s: %v", f.name, err)
		}
		c.close()
	}
	return nil
}
