package acl

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/mqgo/mq/aclfile"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

const testSecret = "87654321"

var (
	producer = remoting.Credentials{AccessKey: "Producer01", SecretKey: testSecret}
	operator = remoting.Credentials{AccessKey: "operator01", SecretKey: testSecret}
	// scoped is an admin account with perms listed: admin codes, but only the resources it has.
	scoped = remoting.Credentials{AccessKey: "scopedAdmin", SecretKey: "scoped-secret"}
	// v6 needs no signature from 2001:db8::10 to 2001:db8::20.
	v6 = remoting.Credentials{AccessKey: "v6account", SecretKey: "v6-secret-key"}
)

// testChecker is aclfile/testdata/plain_acl.yml and two more accounts.
func testChecker(t testing.TB) *Checker {
	t.Helper()
	cfg, err := aclfile.Load("../../aclfile/testdata/plain_acl.yml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Accounts = append(cfg.Accounts,
		Account{AccessKey: scoped.AccessKey, SecretKey: scoped.SecretKey, Admin: true,
			TopicPerms: []string{"x=SUB", "%RETRY%viaTopic=SUB"}},
		Account{AccessKey: v6.AccessKey, SecretKey: v6.SecretKey, WhiteRemoteAddress: "2001:db8::10-20",
			DefaultTopicPerm: "PUB"},
	)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func signed(c remoting.Credentials, code int32, ext map[string]string, body []byte) *remoting.Command {
	req := remoting.NewRequest(code, ext, body)
	c.Sign(req)
	return req
}

// sendV2 is a SEND_MESSAGE_V2 as the official clients build it, signed by c.
func sendV2(c remoting.Credentials, topic, group string) *remoting.Command {
	h := protocol.SendMessageRequestHeaderV2{ProducerGroup: group, Topic: topic, DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 1, BornTimestamp: 1700000000123,
		Properties: "TAGS\x01a\x02UNIQ_KEY\x01C0A8000100002A9F0000000000000001\x02", BrokerName: "broker-a"}
	return signed(c, remoting.SendMessageV2, remoting.EncodeHeader(&h), []byte("hello, world"))
}

func heartbeat(c remoting.Credentials, groups map[string][]string) *remoting.Command {
	hb := protocol.HeartbeatData{ClientID: "10.0.0.1@1", ProducerDataSet: []protocol.ProducerData{{GroupName: "pg"}}}
	for g, topics := range groups {
		cd := protocol.ConsumerData{GroupName: g, ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING"}
		for _, topic := range topics {
			cd.SubscriptionDataSet = append(cd.SubscriptionDataSet, protocol.SubscriptionData{Topic: topic, SubString: "*"})
		}
		hb.ConsumerDataSet = append(hb.ConsumerDataSet, cd)
	}
	return signed(c, remoting.HeartBeat, nil, hb.Encode())
}

func lockBody(c remoting.Credentials, code int32, group string) *remoting.Command {
	body, _ := json.Marshal(protocol.LockBatchRequestBody{ConsumerGroup: group, ClientID: "10.0.0.1@1",
		MQSet: []protocol.MessageQueue{{Topic: "payments", BrokerName: "broker-a", QueueID: 0}}})
	return signed(c, code, nil, body)
}

func unsigned(code int32, ext map[string]string) *remoting.Command {
	return remoting.NewRequest(code, ext, nil)
}

func withSignature(req *remoting.Command, sig string) *remoting.Command {
	req.ExtFields[remoting.ExtSignature] = sig
	return req
}

func withoutSignature(req *remoting.Command) *remoting.Command {
	delete(req.ExtFields, remoting.ExtSignature)
	return req
}

const elsewhere = "203.0.113.9:50123"

func TestCheck(t *testing.T) {
	c := testChecker(t)
	cases := []struct {
		name   string
		remote string
		req    *remoting.Command
		refuse string // "" allowed, else a part of the remark
	}{
		// White lists and who signs.
		{"global white, unsigned", "10.20.30.5:40000", unsigned(remoting.SendMessageV2, map[string]string{"b": "orders"}), ""},
		{"global white, admin code", "172.16.5.200:1", unsigned(remoting.UpdateAndCreateTopic, nil), ""},
		{"global white, bad signature", "10.20.30.5:1", withSignature(sendV2(producer, "orders", "pg"), "AAAA"), ""},
		{"unsigned", elsewhere, unsigned(remoting.SendMessageV2, map[string]string{"b": "payments"}), "no AccessKey: the request is not signed"},
		{"no ext fields at all", elsewhere, &remoting.Command{Code: remoting.GetMaxOffset}, "no AccessKey"},
		{"unknown account", elsewhere, sendV2(remoting.Credentials{AccessKey: "nobody01", SecretKey: "whatever1"}, "payments", "pg"), "no account AccessKey=nobody01"},
		{"account white, bad signature", "192.168.7.3:1", withSignature(sendV2(operator, "t", "pg"), "AAAA"), ""},
		{"account white needs the AccessKey", "192.168.7.3:1", unsigned(remoting.UpdateAndCreateTopic, nil), "no AccessKey"},
		{"outside account white, bad signature", "192.168.8.3:1", withSignature(sendV2(operator, "t", "pg"), "AAAA"), "signature check failed for AccessKey=operator01"},
		{"missing signature", elsewhere, withoutSignature(sendV2(producer, "payments", "pg")), "signature check failed for AccessKey=Producer01: the request has no Signature"},
		{"wrong secret", elsewhere, sendV2(remoting.Credentials{AccessKey: "Producer01", SecretKey: "12345678"}, "payments", "pg"), "signature check failed for AccessKey=Producer01"},
		{"IPv6 account white", "[2001:db8::15]:9876", withoutSignature(sendV2(v6, "t", "pg")), ""},
		{"IPv6 outside account white", "[2001:db8::21]:9876", withoutSignature(sendV2(v6, "t", "pg")), "no Signature"},
		{"IPv6 signed", "[2001:db8::21]:9876", sendV2(v6, "t", "pg"), ""},

		// Sends.
		{"send PUB|SUB topic", elsewhere, sendV2(producer, "payments", "pg"), ""},
		{"send DENY topic", elsewhere, sendV2(producer, "orders", "pg"), "AccessKey=Producer01 has no PUB permission on topic orders"},
		{"send SUB topic", elsewhere, sendV2(producer, "audit", "pg"), "no PUB permission on topic audit"},
		{"send default DENY topic", elsewhere, sendV2(producer, "misc", "pg"), "no PUB permission on topic misc"},
		{"send V1", elsewhere, signed(producer, remoting.SendMessage, map[string]string{"topic": "payments", "producerGroup": "pg"}, []byte("x")), ""},
		{"send V1 refused", elsewhere, signed(producer, remoting.SendMessage, map[string]string{"topic": "orders", "producerGroup": "pg"}, []byte("x")), "topic orders"},
		{"batch", elsewhere, signed(producer, remoting.SendBatchMessage, map[string]string{"b": "orders", "a": "pg"}, []byte("x")), "topic orders"},
		{"reply", elsewhere, signed(producer, remoting.SendReplyMessage, map[string]string{"topic": "orders"}, nil), "topic orders"},
		{"reply V2", elsewhere, signed(producer, remoting.SendReplyMessageV2, map[string]string{"b": "payments"}, nil), ""},
		{"trace topic without perm", elsewhere, sendV2(producer, "RMQ_SYS_TRACE_TOPIC", "pg"), ""},
		{"trace topic still signed", elsewhere, withSignature(sendV2(producer, "RMQ_SYS_TRACE_TOPIC", "pg"), "AAAA"), "signature check failed"},
		{"trace topic pulled", elsewhere, signed(producer, remoting.PullMessage, map[string]string{"topic": "RMQ_SYS_TRACE_TOPIC", "consumerGroup": "shipping"}, nil), "no SUB permission on topic RMQ_SYS_TRACE_TOPIC"},
		{"retry send", elsewhere, sendV2(producer, "%RETRY%shipping", "pg"), ""},
		{"retry send of DENY group", elsewhere, sendV2(producer, "%RETRY%billing", "pg"), "no SUB permission on group billing"},
		{"retry send naming DENY group", elsewhere, sendV2(producer, "%RETRY%shipping", "billing"), "no SUB permission on group billing"},
		{"send back", elsewhere, signed(producer, remoting.ConsumerSendMsgBack, map[string]string{"group": "shipping", "offset": "1"}, nil), ""},
		{"send back DENY group", elsewhere, signed(producer, remoting.ConsumerSendMsgBack, map[string]string{"group": "billing"}, nil), "group billing"},

		// Consuming.
		{"pull", elsewhere, signed(producer, remoting.PullMessage, map[string]string{"topic": "payments", "consumerGroup": "shipping"}, nil), ""},
		{"pull SUB topic, default SUB group", elsewhere, signed(producer, remoting.PullMessage, map[string]string{"topic": "audit", "consumerGroup": "any"}, nil), ""},
		{"pull DENY group", elsewhere, signed(producer, remoting.PullMessage, map[string]string{"topic": "payments", "consumerGroup": "billing"}, nil), "no SUB permission on group billing"},
		{"pull DENY topic", elsewhere, signed(producer, remoting.PullMessage, map[string]string{"topic": "orders", "consumerGroup": "shipping"}, nil), "no SUB permission on topic orders"},
		{"pull retry topic", elsewhere, signed(producer, remoting.PullMessage, map[string]string{"topic": "%RETRY%shipping", "consumerGroup": "shipping"}, nil), ""},
		{"pull retry topic of DENY group", elsewhere, signed(producer, remoting.PullMessage, map[string]string{"topic": "%RETRY%billing", "consumerGroup": "shipping"}, nil), "group billing"},

		// RocketMQ 5's POP requests: SUB on the topic and the group.
		{"pop", elsewhere, signed(producer, remoting.PopMessage, map[string]string{"topic": "payments", "consumerGroup": "shipping"}, nil), ""},
		{"pop DENY group", elsewhere, signed(producer, remoting.PopMessage, map[string]string{"topic": "payments", "consumerGroup": "billing"}, nil), "no SUB permission on group billing"},
		{"pop DENY topic", elsewhere, signed(producer, remoting.PopMessage, map[string]string{"topic": "orders", "consumerGroup": "shipping"}, nil), "no SUB permission on topic orders"},
		{"peek DENY topic", elsewhere, signed(producer, remoting.PeekMessage, map[string]string{"topic": "orders", "consumerGroup": "shipping"}, nil), "topic orders"},
		{"ack DENY topic", elsewhere, signed(producer, remoting.AckMessage, map[string]string{"topic": "orders", "consumerGroup": "shipping"}, nil), "topic orders"},
		{"change invisible DENY group", elsewhere, signed(producer, remoting.ChangeMessageInvisibleTime, map[string]string{"topic": "payments", "consumerGroup": "billing"}, nil), "group billing"},
		{"notification DENY topic", elsewhere, signed(producer, remoting.Notification, map[string]string{"topic": "orders", "consumerGroup": "shipping"}, nil), "topic orders"},
		{"polling info DENY group", elsewhere, signed(producer, remoting.PollingInfo, map[string]string{"topic": "payments", "consumerGroup": "billing"}, nil), "group billing"},
		{"batch ack", elsewhere, signed(producer, remoting.BatchAckMessage, map[string]string{}, []byte(`{"acks":[{"c":"shipping","t":"payments"}]}`)), ""},
		{"batch ack DENY topic", elsewhere, signed(producer, remoting.BatchAckMessage, map[string]string{}, []byte(`{"acks":[{"c":"shipping","t":"payments"},{"c":"shipping","t":"orders"}]}`)), "topic orders"},
		{"batch ack malformed", elsewhere, signed(producer, remoting.BatchAckMessage, map[string]string{}, []byte(`{"acks":`)), "BATCH_ACK_MESSAGE body is malformed"},
		{"query message", elsewhere, signed(producer, remoting.QueryMessage, map[string]string{"topic": "audit", "key": "k"}, nil), ""},
		{"query consume queue", elsewhere, signed(producer, remoting.QueryConsumeQueue, map[string]string{"topic": "payments", "consumerGroup": "shipping"}, nil), ""},
		{"query consume queue DENY topic", elsewhere, signed(producer, remoting.QueryConsumeQueue, map[string]string{"topic": "orders", "queueId": "0"}, nil), "topic orders"},
		{"query consume queue DENY group", elsewhere, signed(producer, remoting.QueryConsumeQueue, map[string]string{"topic": "payments", "consumerGroup": "billing"}, nil), "group billing"},
		{"query message DENY", elsewhere, signed(producer, remoting.QueryMessage, map[string]string{"topic": "orders", "key": "k"}, nil), "topic orders"},
		{"heartbeat", elsewhere, heartbeat(producer, map[string][]string{"shipping": {"payments", "audit", "%RETRY%shipping"}}), ""},
		{"heartbeat, producers only", elsewhere, heartbeat(producer, nil), ""},
		{"heartbeat DENY topic", elsewhere, heartbeat(producer, map[string][]string{"shipping": {"payments", "orders"}}), "no SUB permission on topic orders"},
		{"heartbeat DENY group", elsewhere, heartbeat(producer, map[string][]string{"billing": {"payments"}}), "group billing"},
		{"heartbeat malformed", elsewhere, signed(producer, remoting.HeartBeat, nil, []byte(`{"consumerDataSet":[{"groupName":`)), "HEART_BEAT body is malformed"},
		{"heartbeat not JSON", elsewhere, signed(producer, remoting.HeartBeat, nil, []byte{0xff, 0x00}), "malformed"},
		{"unregister", elsewhere, signed(producer, remoting.UnregisterClient, map[string]string{"clientID": "c", "consumerGroup": "billing"}, nil), "group billing"},
		{"unregister producer", elsewhere, signed(producer, remoting.UnregisterClient, map[string]string{"clientID": "c", "producerGroup": "billing"}, nil), ""},
		{"consumer list", elsewhere, signed(producer, remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": "billing"}, nil), "group billing"},
		{"update offset", elsewhere, signed(producer, remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "shipping", "topic": "payments"}, nil), ""},
		{"update offset DENY topic", elsewhere, signed(producer, remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "shipping", "topic": "orders"}, nil), "topic orders"},
		{"query offset DENY group", elsewhere, signed(producer, remoting.QueryConsumerOffset, map[string]string{"consumerGroup": "billing", "topic": "payments"}, nil), "group billing"},
		{"lock", elsewhere, lockBody(producer, remoting.LockBatchMQ, "shipping"), ""},
		{"lock DENY group", elsewhere, lockBody(producer, remoting.LockBatchMQ, "billing"), "group billing"},
		{"unlock DENY group", elsewhere, lockBody(producer, remoting.UnlockBatchMQ, "billing"), "group billing"},
		{"lock malformed", elsewhere, signed(producer, remoting.LockBatchMQ, nil, []byte("[")), "lock body is malformed"},

		// Admin and name service.
		{"admin code, not admin", elsewhere, signed(producer, remoting.UpdateAndCreateTopic, map[string]string{"topic": "payments"}, nil), "AccessKey=Producer01 needs admin for request code 17"},
		{"admin code, admin", elsewhere, signed(operator, remoting.UpdateAndCreateTopic, map[string]string{"topic": "new"}, nil), ""},
		{"admin sends anywhere", elsewhere, sendV2(operator, "orders", "pg"), ""},
		{"scoped admin, admin code", elsewhere, signed(scoped, remoting.DeleteTopicInBroker, map[string]string{"topic": "y"}, nil), ""},
		{"scoped admin, unlisted topic", elsewhere, sendV2(scoped, "y", "pg"), "AccessKey=scopedAdmin has no PUB permission on topic y"},
		{"scoped admin, retry topic listed as topic", elsewhere, signed(scoped, remoting.PullMessage, map[string]string{"topic": "x", "consumerGroup": "viaTopic"}, nil), ""},
		{"name-service write, not admin", elsewhere, signed(producer, remoting.RegisterBroker, map[string]string{"brokerName": "b"}, nil), "needs admin for request code 103"},
		{"name-service write, admin", elsewhere, signed(operator, remoting.RegisterBroker, map[string]string{"brokerName": "b"}, nil), ""},
		{"name-service write, unsigned", elsewhere, unsigned(remoting.DeleteTopicInNamesrv, map[string]string{"topic": "t"}), "no AccessKey"},
		{"name-service read, unsigned", elsewhere, unsigned(remoting.GetRouteInfoByTopic, map[string]string{"topic": "orders"}), ""},
		{"name-service read, bad signature", elsewhere, withSignature(signed(producer, remoting.QueryDataVersion, map[string]string{}, nil), "AAAA"), ""},
		{"broker read, unsigned", elsewhere, unsigned(remoting.GetMaxOffset, map[string]string{"topic": "orders", "queueId": "0"}), "no AccessKey"},
		{"broker read, signed", elsewhere, signed(producer, remoting.GetMaxOffset, map[string]string{"topic": "orders", "queueId": "0"}, nil), ""},
		{"unknown code, unsigned", elsewhere, unsigned(999, nil), "no AccessKey"},
		{"unknown code, signed", elsewhere, signed(producer, 999, nil, nil), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.Check(tc.remote, tc.req)
			if tc.refuse == "" {
				if resp != nil {
					t.Fatalf("refused: %q", resp.Remark)
				}
				return
			}
			if resp == nil {
				t.Fatalf("allowed, want a refusal saying %q", tc.refuse)
			}
			if resp.Code != remoting.NoPermission || !resp.IsResponse() {
				t.Errorf("code %d, response %v; want NO_PERMISSION", resp.Code, resp.IsResponse())
			}
			if !strings.Contains(resp.Remark, tc.refuse) {
				t.Errorf("remark %q does not say %q", resp.Remark, tc.refuse)
			}
			for _, secret := range []string{testSecret, scoped.SecretKey, v6.SecretKey} {
				if strings.Contains(resp.Remark, secret) {
					t.Errorf("remark %q shows a secret", resp.Remark)
				}
				if want := remoting.RequestSignature([]byte(secret), tc.req); strings.Contains(resp.Remark, want) {
					t.Errorf("remark %q shows the expected signature", resp.Remark)
				}
			}
		})
	}
}

// TestAdminCodes: every admin code is refused to a signed account that is not admin, and lets
// an admin one through.
func TestAdminCodes(t *testing.T) {
	c := testChecker(t)
	for _, code := range []int32{
		remoting.UpdateAndCreateTopic, remoting.UpdateBrokerConfig, remoting.DeleteTopicInBroker,
		remoting.UpdateAndCreateSubscription, remoting.DeleteSubscriptionGroup,
		remoting.InvokeBrokerToResetOffset, codeCleanExpiredConsumeQueue, codeCleanUnusedTopic,
		codeUpdateAndCreateACLConfig, codeDeleteACLConfig, codeUpdateGlobalWhiteAddrsConfig, codeGetBrokerClusterACLInfo,
		codeGetBrokerClusterACLConfig,
		codeTriggerDeleteFiles, codeCloneGroupOffset, codeDeleteExpiredCommitLog,
		remoting.PutKVConfig, remoting.DeleteKVConfig, remoting.RegisterBroker, remoting.UnregisterBroker,
		remoting.WipeWritePermOfBroker, remoting.DeleteTopicInNamesrv, remoting.RegisterTopicInNamesrv,
		codeUpdateNamesrvConfig, codeAddWritePermOfBroker,
		// Not in RocketMQ: the controller's codes decide masters and where stores are cut.
		remoting.BrokerHeartbeat, remoting.ControllerAlterSyncStateSet, remoting.ControllerElectMaster,
		remoting.ControllerRegisterBroker, remoting.ControllerGetReplicaInfo, remoting.ControllerGetMetadataInfo,
		remoting.ControllerGetSyncStateData, remoting.GetBrokerEpochCache, remoting.CleanBrokerData,
		remoting.ControllerGetNextBrokerID, remoting.ControllerApplyBrokerID,
	} {
		if resp := c.Check(elsewhere, signed(producer, code, map[string]string{"x": "1"}, nil)); resp == nil || !strings.Contains(resp.Remark, "needs admin") {
			t.Errorf("code %d by a non-admin account: %v", code, resp)
		}
		if resp := c.Check(elsewhere, signed(operator, code, map[string]string{"x": "1"}, nil)); resp != nil {
			t.Errorf("code %d by an admin account: %q", code, resp.Remark)
		}
	}
}

// TestSignedByAdmin: what the cluster secret's guard accepts instead of a proof for a
// name-service write: a valid signature of an admin account, nothing less.
func TestSignedByAdmin(t *testing.T) {
	c := testChecker(t)
	del := func() map[string]string { return map[string]string{"topic": "t"} }
	for _, tc := range []struct {
		name string
		req  *remoting.Command
		want bool
	}{
		{"admin", signed(operator, remoting.DeleteTopicInNamesrv, del(), nil), true},
		{"admin with perms listed", signed(scoped, remoting.DeleteTopicInNamesrv, del(), nil), true},
		{"not admin", signed(producer, remoting.DeleteTopicInNamesrv, del(), nil), false},
		{"admin, bad signature", withSignature(signed(operator, remoting.DeleteTopicInNamesrv, del(), nil), "AAAA"), false},
		{"admin, no signature", withoutSignature(signed(operator, remoting.DeleteTopicInNamesrv, del(), nil)), false},
		{"admin's key, wrong secret", signed(remoting.Credentials{AccessKey: operator.AccessKey, SecretKey: "12345678"}, remoting.DeleteTopicInNamesrv, del(), nil), false},
		{"unsigned", unsigned(remoting.DeleteTopicInNamesrv, del()), false},
	} {
		if got := c.SignedByAdmin(tc.req); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	var g Guard
	if g.SignedByAdmin(signed(operator, remoting.DeleteTopicInNamesrv, del(), nil)) {
		t.Error("a guard with ACL off vouched for an admin")
	}
}

// TestNameServiceReadsOpen: RocketMQ's name server checks nothing, and clients fetch routes
// before they have anything to sign with.
func TestNameServiceReadsOpen(t *testing.T) {
	c := testChecker(t)
	for _, code := range []int32{remoting.GetKVConfig, remoting.GetRouteInfoByTopic, remoting.GetBrokerClusterInfo,
		remoting.GetAllTopicListFromNameServer, remoting.GetKVListByNamespace, remoting.GetTopicsByCluster,
		codeGetSystemTopicListFromNS, remoting.GetUnitTopicList, codeGetHasUnitSubTopicList,
		codeGetHasUnitSubUnunitTopicList, codeGetNamesrvConfig, remoting.QueryDataVersion} {
		if resp := c.Check(elsewhere, unsigned(code, nil)); resp != nil {
			t.Errorf("code %d: %q", code, resp.Remark)
		}
	}
}

// TestSignatureCoversEverything: a request signed by remoting.Credentials verifies, and
// changing any byte of any field or of the body, adding a field or dropping one, fails it.
func TestSignatureCoversEverything(t *testing.T) {
	c := testChecker(t)
	fresh := func() *remoting.Command { return sendV2(producer, "payments", "pg") }
	if resp := c.Check(elsewhere, fresh()); resp != nil {
		t.Fatalf("signed request refused: %q", resp.Remark)
	}
	for key := range fresh().ExtFields {
		if key == remoting.ExtAccessKey {
			continue // another account: refused before any signature
		}
		req := fresh()
		v := []byte(req.ExtFields[key])
		if len(v) == 0 {
			v = []byte("x")
		} else {
			v[len(v)/2] ^= 1
		}
		req.ExtFields[key] = string(v)
		if resp := c.Check(elsewhere, req); resp == nil || !strings.Contains(resp.Remark, "signature check failed") {
			t.Errorf("changed %q: %v", key, resp)
		}
	}
	for i := range fresh().Body {
		req := fresh()
		req.Body[i] ^= 0x80
		if resp := c.Check(elsewhere, req); resp == nil {
			t.Errorf("changed body byte %d: allowed", i)
		}
	}
	added := fresh()
	added.ExtFields["z"] = "1"
	dropped := fresh()
	delete(dropped.ExtFields, "c")
	for name, req := range map[string]*remoting.Command{"added field": added, "dropped field": dropped} {
		if resp := c.Check(elsewhere, req); resp == nil {
			t.Errorf("%s: allowed", name)
		}
	}
	// Query-by-key requests get this flag after signing; brokers leave it out of the content.
	flagged := signed(producer, remoting.QueryMessage, map[string]string{"topic": "audit", "key": "k"}, nil)
	flagged.ExtFields["_UNIQUE_KEY_QUERY"] = "true"
	if resp := c.Check(elsewhere, flagged); resp != nil {
		t.Errorf("_UNIQUE_KEY_QUERY added after signing: %q", resp.Remark)
	}
}

// TestCheckDoesNotChangeRequest: the processors see the request as it came.
func TestCheckDoesNotChangeRequest(t *testing.T) {
	c := testChecker(t)
	req := sendV2(producer, "payments", "pg")
	before := make(map[string]string, len(req.ExtFields))
	for k, v := range req.ExtFields {
		before[k] = v
	}
	body := string(req.Body)
	c.Check(elsewhere, req)
	if len(before) != len(req.ExtFields) || string(req.Body) != body {
		t.Fatal("request changed")
	}
	for k, v := range before {
		if req.ExtFields[k] != v {
			t.Fatalf("field %q changed", k)
		}
	}
}

// peer is a channel that only has an address.
type peer struct {
	remoting.Channel
	addr string
}

func (p peer) RemoteAddr() string { return p.addr }

func TestGuard(t *testing.T) {
	var g Guard
	var guard remoting.Guard = g.Check
	req := unsigned(remoting.SendMessageV2, map[string]string{"b": "orders"})
	if resp := guard(peer{addr: elsewhere}, req); resp != nil {
		t.Fatalf("zero Guard refused: %q", resp.Remark)
	}
	g.Store(testChecker(t))
	if resp := guard(peer{addr: elsewhere}, req); resp == nil {
		t.Fatal("Guard with a Checker let an unsigned send through")
	}
	if resp := guard(peer{addr: "10.20.30.1:5"}, req); resp != nil {
		t.Fatalf("global white address refused: %q", resp.Remark)
	}
	g.Store(nil)
	if resp := guard(peer{addr: elsewhere}, req); resp != nil {
		t.Fatalf("Guard after Store(nil) refused: %q", resp.Remark)
	}
}

// TestGuardConcurrent: checks run on every dispatcher goroutine while a reload swaps the
// Checker (run with -race).
func TestGuardConcurrent(t *testing.T) {
	var g Guard
	c := testChecker(t)
	g.Store(c)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if resp := g.Check(peer{addr: elsewhere}, sendV2(producer, "payments", "pg")); resp != nil {
					t.Errorf("refused: %q", resp.Remark)
					return
				}
			}
		}()
	}
	for range 50 {
		g.Store(testChecker(t))
	}
	wg.Wait()
}

// BenchmarkCheckSendV2 is the hot path: a signed SEND_MESSAGE_V2 of a 1 KiB message from an
// account with topic perms and no white address.
func BenchmarkCheckSendV2(b *testing.B) {
	c := testChecker(b)
	req := sendV2(producer, "payments", "pg")
	req.Body = make([]byte, 1024)
	producer.Sign(req)
	if resp := c.Check(elsewhere, req); resp != nil {
		b.Fatal(resp.Remark)
	}
	b.ReportAllocs()
	for b.Loop() {
		if c.Check(elsewhere, req) != nil {
			b.Fatal("refused")
		}
	}
}

// BenchmarkRequestSignatureSendV2 is the signature alone on the same request: what Check
// adds is the difference.
func BenchmarkRequestSignatureSendV2(b *testing.B) {
	req := sendV2(producer, "payments", "pg")
	req.Body = make([]byte, 1024)
	producer.Sign(req)
	secret := []byte(testSecret)
	b.ReportAllocs()
	for b.Loop() {
		if !remoting.SignatureEqual(req.ExtFields[remoting.ExtSignature], remoting.RequestSignature(secret, req)) {
			b.Fatal("signature")
		}
	}
}

// TestGuardVersion: a configuration other than the one in effect counts a new version; the
// same one again (a file read twice) does not; Snapshot copies.
func TestGuardVersion(t *testing.T) {
	var g Guard
	if _, _, _, ok := g.Snapshot(); ok {
		t.Fatal("a Guard with no Checker reports a configuration")
	}
	cfg := Config{GlobalWhiteRemoteAddresses: []string{"10.0.0.*"}, Accounts: []Account{{AccessKey: "admin12",
		SecretKey: "secret12", Admin: true, TopicPerms: []string{"T=PUB"}}}}
	store := func(cfg Config) {
		c, err := New(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		g.Store(c)
	}
	store(cfg)
	got, n, at, ok := g.Snapshot()
	if !ok || n != 1 || at.IsZero() || got.Accounts[0].TopicPerms[0] != "T=PUB" {
		t.Fatalf("first: %+v %d %v %v", got, n, at, ok)
	}
	got.Accounts[0].TopicPerms[0] = "changed"
	store(cfg)
	if again, n, _, _ := g.Snapshot(); n != 1 || again.Accounts[0].TopicPerms[0] != "T=PUB" {
		t.Errorf("the same configuration again: version %d, %+v", n, again)
	}
	cfg.Accounts[0].DefaultTopicPerm = "SUB"
	store(cfg)
	if _, n, _, _ := g.Snapshot(); n != 2 {
		t.Errorf("a changed configuration: version %d, want 2", n)
	}
}
