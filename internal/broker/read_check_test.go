package broker

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/acl"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// Accounts of the read-check tests: reader may read topic Mine and group shipping only; wide
// reads every topic by default; scoped is an admin with perms listed (the schedule topic and
// Mine); admin owns everything.
var (
	rcReader = remoting.Credentials{AccessKey: "reader01", SecretKey: "reader-secret"}
	rcWide   = remoting.Credentials{AccessKey: "wide0001", SecretKey: "wide-secret"}
	rcScoped = remoting.Credentials{AccessKey: "scoped01", SecretKey: "scoped-secret"}
	rcAdmin  = remoting.Credentials{AccessKey: "admin001", SecretKey: "admin-secret"}
)

// rcBroker is a broker behind a real ACL: the guard on its dispatcher and its ReadCheck, as
// the node wires them. Delays are an hour, so messages put in the schedule topic stay there.
func rcBroker(t *testing.T) *testBroker {
	t.Helper()
	c, err := acl.New(&acl.Config{Accounts: []acl.Account{
		{AccessKey: rcReader.AccessKey, SecretKey: rcReader.SecretKey, TopicPerms: []string{"Mine=SUB", "Pub=PUB"},
			GroupPerms: []string{"shipping=SUB"}},
		{AccessKey: rcWide.AccessKey, SecretKey: rcWide.SecretKey, DefaultTopicPerm: "SUB", DefaultGroupPerm: "SUB"},
		{AccessKey: rcScoped.AccessKey, SecretKey: rcScoped.SecretKey, Admin: true,
			TopicPerms: []string{names.TopicSchedule + "=SUB", "Mine=SUB"}},
		{AccessKey: rcAdmin.AccessKey, SecretKey: rcAdmin.SecretKey, Admin: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	g := new(acl.Guard)
	g.Store(c)
	tb := startTestBroker(t, func(o *Options) {
		o.ReadCheck = g.CheckRead
		o.Timers.DelayLevels = []time.Duration{time.Hour, time.Hour, time.Hour}
	})
	tb.d.SetGuard(g.Check)
	return tb
}

// signedClient is a TCP client signing every request with c.
func signedClient(t *testing.T, c remoting.Credentials) *remoting.Client {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{ScanInterval: 20 * time.Millisecond,
		Hooks: []remoting.RPCHook{remoting.SigningHook(c)}})
	t.Cleanup(func() { cl.Close() })
	return cl
}

// rcMessages are the stored messages the tests read, all with key "k".
type rcMessages struct {
	mine, theirs           storage.PutResult
	heldMine, heldTheirs   storage.PutResult // waiting in the schedule topic for Mine, Theirs
	heldNowhere            storage.PutResult // in the schedule topic without REAL_TOPIC
	mineBody, heldMineBody string
}

func rcPut(t *testing.T, tb *testBroker) rcMessages {
	t.Helper()
	// Level 1 is an hour away: the schedule service leaves the held messages where they are.
	held := func(keys, real string) map[string]string {
		p := map[string]string{message.PropertyKeys: keys, message.PropertyDelayTimeLevel: "1"}
		if real != "" {
			p[message.PropertyRealTopic], p[message.PropertyRealQueueID] = real, "0"
		}
		return p
	}
	m := rcMessages{mineBody: "mine", heldMineBody: "held for Mine"}
	m.mine = sbPut(t, tb, "Mine", 0, m.mineBody, map[string]string{message.PropertyKeys: "k"}, 0)
	m.theirs = sbPut(t, tb, "Theirs", 0, "theirs", map[string]string{message.PropertyKeys: "k t-only"}, 0)
	m.heldMine = sbPut(t, tb, names.TopicSchedule, 0, m.heldMineBody, held("k", "Mine"), 0)
	m.heldTheirs = sbPut(t, tb, names.TopicSchedule, 0, "held for Theirs", held("k t-only", "Theirs"), 0)
	m.heldNowhere = sbPut(t, tb, names.TopicSchedule, 0, "held for nobody", held("k", ""), 0)
	eventually(t, "index", func() bool { return tb.Store().DispatchedPhyOffset() == tb.Store().MaxPhyOffset() })
	return m
}

func viewCmd(off int64) *remoting.Command {
	h := protocol.ViewMessageRequestHeader{Offset: off}
	return remoting.NewRequest(remoting.ViewMessageByID, remoting.EncodeHeader(&h), nil)
}

// wantNoRead fails unless resp is NO_PERMISSION saying remark, with no body.
func wantNoRead(t *testing.T, what string, resp *remoting.Command, remark string) {
	t.Helper()
	if resp.Code != remoting.NoPermission || !strings.Contains(resp.Remark, remark) || len(resp.Body) != 0 {
		t.Errorf("%s: code %d remark %q body %d bytes; want NO_PERMISSION saying %q and no body",
			what, resp.Code, resp.Remark, len(resp.Body), remark)
	}
}

// VIEW_MESSAGE_BY_ID names only an offset: the broker checks the topic of the record it read,
// and the real topic of one waiting in the schedule topic.
func TestReadCheckViewMessage(t *testing.T) {
	tb := rcBroker(t)
	m := rcPut(t, tb)
	reader, admin := signedClient(t, rcReader), signedClient(t, rcAdmin)

	for _, c := range []struct {
		name   string
		r      storage.PutResult
		refuse string // "" served
	}{
		{"own topic", m.mine, ""},
		{"another topic", m.theirs, "AccessKey=reader01 has no SUB permission on topic Theirs"},
		{"delayed for its topic", m.heldMine, ""},
		{"delayed for another topic", m.heldTheirs, "no SUB permission on topic Theirs"},
		{"held without a real topic", m.heldNowhere, "needs admin to read topic SCHEDULE_TOPIC_XXXX"},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, err := tb.Store().LookMessageByOffset(c.r.PhyOffset)
			if err != nil {
				t.Fatal(err)
			}
			resp := invoke(t, reader, tb.Addr, viewCmd(c.r.PhyOffset))
			if c.refuse != "" {
				wantNoRead(t, "reader", resp, c.refuse)
			} else if resp.Code != remoting.Success || !bytes.Equal(resp.Body, want) {
				t.Errorf("reader: code %d %q, want the record", resp.Code, resp.Remark)
			}
			if resp := invoke(t, admin, tb.Addr, viewCmd(c.r.PhyOffset)); resp.Code != remoting.Success || !bytes.Equal(resp.Body, want) {
				t.Errorf("admin: code %d %q, want the record", resp.Code, resp.Remark)
			}
		})
	}

	// Walking the log byte by byte serves the reader its own two records and nothing else.
	served := 0
	for off := int64(0); off < tb.Store().MaxPhyOffset(); off++ {
		resp := invoke(t, reader, tb.Addr, viewCmd(off))
		switch {
		case resp.Code == remoting.Success && (off == m.mine.PhyOffset || off == m.heldMine.PhyOffset):
			served++
		case resp.Code == remoting.Success:
			t.Fatalf("offset %d served to the reader: %d bytes", off, len(resp.Body))
		case len(resp.Body) != 0:
			t.Fatalf("offset %d: code %d with a %d-byte body", off, resp.Code, len(resp.Body))
		}
	}
	if served != 2 {
		t.Errorf("the walk served %d of the reader's 2 records", served)
	}
	wantNoRead(t, "unsigned", invoke(t, tb.TCP, tb.Addr, viewCmd(m.mine.PhyOffset)), "no AccessKey")
	if n := tb.Store().MaxPhyOffset(); n == 0 {
		t.Fatal("nothing stored")
	}
}

// QUERY_MESSAGE is checked on the topic it names before the read, and each record found on
// its own topic after: records the account may not read are left out, and a query that finds
// only such records is refused.
func TestReadCheckQueryMessage(t *testing.T) {
	tb := rcBroker(t)
	m := rcPut(t, tb)
	query := func(c *remoting.Client, topic, key string) *remoting.Command {
		h := protocol.QueryMessageRequestHeader{Topic: topic, Key: key, MaxNum: 32,
			EndTimestamp: time.Now().UnixMilli() + 60_000}
		return invoke(t, c, tb.Addr, remoting.NewRequest(remoting.QueryMessage, remoting.EncodeHeader(&h), nil))
	}
	bodies := func(resp *remoting.Command) []string {
		var out []string
		for _, r := range decodeRecords(t, resp.Body) {
			out = append(out, string(r.Body))
		}
		return out
	}
	reader, wide, scoped, admin := signedClient(t, rcReader), signedClient(t, rcWide), signedClient(t, rcScoped), signedClient(t, rcAdmin)

	if resp := query(reader, "Mine", "k"); resp.Code != remoting.Success || strings.Join(bodies(resp), ",") != m.mineBody {
		t.Errorf("reader, own topic: code %d %q %q", resp.Code, resp.Remark, bodies(resp))
	}
	wantNoRead(t, "reader, another topic", query(reader, "Theirs", "k"), "no SUB permission on topic Theirs")
	wantNoRead(t, "wide, the schedule topic", query(wide, names.TopicSchedule, "k"), "needs admin to read topic SCHEDULE_TOPIC_XXXX")
	// The scoped admin may query the schedule topic (SUB on it), but of what waits there for
	// other topics it reads only what waits for Mine.
	if resp := query(scoped, names.TopicSchedule, "k"); resp.Code != remoting.Success ||
		strings.Join(slices.Sorted(slices.Values(bodies(resp))), ",") != "held for Mine,held for nobody" {
		t.Errorf("scoped admin, schedule topic: code %d %q %q, want what waits for Mine and nobody", resp.Code, resp.Remark, bodies(resp))
	}
	wantNoRead(t, "scoped admin, only another topic's", query(scoped, names.TopicSchedule, "t-only"), "no SUB permission on topic Theirs")
	if resp := query(admin, names.TopicSchedule, "k"); resp.Code != remoting.Success || len(bodies(resp)) != 3 {
		t.Errorf("admin, schedule topic: code %d %q, %d records, want 3", resp.Code, resp.Remark, len(bodies(resp)))
	}
	if resp := query(reader, "Mine", "nothing"); resp.Code != remoting.QueryNotFound {
		t.Errorf("no match: code %d %q", resp.Code, resp.Remark)
	}
}

// CONSUMER_SEND_MSG_BACK copies a message where every account of the group may pull it: only
// a message the sender may read is copied.
func TestReadCheckSendBack(t *testing.T) {
	tb := rcBroker(t)
	m := rcPut(t, tb)
	reader := signedClient(t, rcReader)
	sendBack := func(r storage.PutResult) *remoting.Command {
		return sbSendBack(t, reader, tb, protocol.ConsumerSendMsgBackRequestHeader{Group: "shipping",
			Offset: r.PhyOffset, MaxReconsumeTimes: 16})
	}
	before := tb.Store().MaxPhyOffset()
	wantNoRead(t, "another topic", sendBack(m.theirs), "no SUB permission on topic Theirs")
	wantNoRead(t, "held without a real topic", sendBack(m.heldNowhere), "needs admin")
	if after := tb.Store().MaxPhyOffset(); after != before {
		t.Fatalf("refused send-backs stored %d bytes", after-before)
	}
	if resp := sendBack(m.mine); resp.Code != remoting.Success {
		t.Fatalf("own topic: code %d %q", resp.Code, resp.Remark)
	}
	if after := tb.Store().MaxPhyOffset(); after <= before {
		t.Error("the allowed send-back stored nothing")
	}
}

// A pull of a topic holding other topics' messages needs admin, whatever the default perm.
func TestReadCheckPullHeldTopic(t *testing.T) {
	tb := rcBroker(t)
	rcPut(t, tb)
	h := pullHeader("anyGroup", names.TopicSchedule, 0, 0)
	h.Subscription, h.SysFlag = "*", protocol.BuildPullSysFlag(false, false, true, false)
	wantNoRead(t, "wide", invoke(t, signedClient(t, rcWide), tb.Addr, pullCmd(h)), "needs admin to read topic SCHEDULE_TOPIC_XXXX")
	if resp := invoke(t, signedClient(t, rcAdmin), tb.Addr, pullCmd(h)); resp.Code != remoting.Success {
		t.Errorf("admin: code %d %q", resp.Code, resp.Remark)
	}
}

// The timer topic (internal/broker/schedule writes names.TopicTimer) is one names.HoldsOthers
// knows.
func TestTimerTopicIsHeld(t *testing.T) {
	if !names.HoldsOthers(names.TopicTimer) {
		t.Fatalf("names.HoldsOthers(%q) is false", names.TopicTimer)
	}
}

// END_TRANSACTION names a producer group and offsets, which plain ACL does not check: once the
// half message is read, the request needs PUB on its real topic, so a signed account that
// learned the offsets can neither commit nor roll back another producer's transaction.
func TestEndTransactionNeedsPubOnTheRealTopic(t *testing.T) {
	owner := remoting.Credentials{AccessKey: "txowner1", SecretKey: "txowner-secret"}
	c, err := acl.New(&acl.Config{Accounts: []acl.Account{
		{AccessKey: owner.AccessKey, SecretKey: owner.SecretKey, TopicPerms: []string{"Tx=PUB|SUB"}, DefaultGroupPerm: "SUB"},
		{AccessKey: rcReader.AccessKey, SecretKey: rcReader.SecretKey, TopicPerms: []string{"Pub=PUB"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	g := new(acl.Guard)
	g.Store(c)
	tb := startTestBroker(t, func(o *Options) { o.WriteCheck = g.CheckWrite })
	tb.d.SetGuard(g.Check)
	oc, intruder := signedClient(t, owner), signedClient(t, rcReader)

	h := wiretest.SendHeader("Tx", 0, map[string]string{"TRAN_MSG": "true", "PGROUP": "pg", "UNIQ_KEY": "u1"})
	rh := wiretest.WantSendOK(t, invoke(t, oc, tb.Addr, wiretest.SendRequest(remoting.SendMessageV2, &h, []byte("u1"), remoting.SerializeJSON)))
	_, phy, err := message.ParseOffsetMsgID(rh.MsgID)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []int32{message.TransactionRollbackType, message.TransactionCommitType} {
		resp := invoke(t, intruder, tb.Addr, endTxCmd(rh.QueueOffset, phy, d, false))
		wantNoRead(t, "intruder's END_TRANSACTION", resp, "AccessKey=reader01 has no PUB permission on topic Tx")
	}
	// Neither decision took: the owner's commit is the first and delivers the message.
	if resp := invoke(t, oc, tb.Addr, endTxCmd(rh.QueueOffset, phy, message.TransactionCommitType, false)); resp.Code != remoting.Success {
		t.Fatalf("owner's commit: %d %q", resp.Code, resp.Remark)
	}
	eventually(t, "dispatched", func() bool { return tb.Store().DispatchedPhyOffset() >= tb.Store().MaxPhyOffset() })
	p := pullHeader("g", "Tx", 0, 0)
	p.SysFlag, p.Subscription = protocol.PullFlagSubscription, "*"
	if r := pull(t, oc, tb.Addr, p); r.code != remoting.Success || len(r.msgs) != 1 || string(r.msgs[0].Body) != "u1" {
		t.Fatalf("pull after the owner's commit: code %d, %d messages", r.code, len(r.msgs))
	}
}

// CHECK_TRANSACTION_STATE carries the half message's body, and a producer group needs no
// permission in the plain ACL: checks go only to members whose heartbeat was signed by an
// account with PUB on the message's real topic, never to a connection that joined the group.
func TestTransactionChecksGoOnlyToPublishers(t *testing.T) {
	owner := remoting.Credentials{AccessKey: "txowner1", SecretKey: "txowner-secret"}
	c, err := acl.New(&acl.Config{Accounts: []acl.Account{
		{AccessKey: owner.AccessKey, SecretKey: owner.SecretKey, TopicPerms: []string{"Tx=PUB"}},
		{AccessKey: rcReader.AccessKey, SecretKey: rcReader.SecretKey, TopicPerms: []string{"Pub=PUB"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	g := new(acl.Guard)
	g.Store(c)
	tb := startTestBroker(t, func(o *Options) {
		checkOptions(o)
		o.WriteCheck = g.CheckWrite
	})
	tb.d.SetGuard(g.Check)
	addTopic(tb, "Tx", 1)
	recorder := func(creds remoting.Credentials, id string) chan *remoting.Command {
		checks := make(chan *remoting.Command, 1000)
		cl := signedClient(t, creds)
		cl.RegisterProcessor(remoting.CheckTransactionState, remoting.ProcessorFunc(
			func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
				checks <- req
				return nil, nil
			}))
		hb := protocol.HeartbeatData{ClientID: id, ProducerDataSet: []protocol.ProducerData{{GroupName: "pg"}},
			ConsumerDataSet: []protocol.ConsumerData{}}
		if resp := invoke(t, cl, tb.Addr, remoting.NewRequest(remoting.HeartBeat, map[string]string{}, hb.Encode())); resp.Code != remoting.Success {
			t.Fatalf("heartbeat of %s: %d %q", id, resp.Code, resp.Remark)
		}
		return checks
	}
	intruder := recorder(rcReader, "intruder@1")
	ownerChecks := recorder(owner, "owner@1")

	h := wiretest.SendHeader("Tx", 0, map[string]string{"TRAN_MSG": "true", "PGROUP": "pg", "UNIQ_KEY": "u1"})
	wiretest.WantSendOK(t, invoke(t, signedClient(t, owner), tb.Addr, wiretest.SendRequest(remoting.SendMessageV2, &h, []byte("u1"), remoting.SerializeJSON)))
	// Unanswered, the message is checked again every interval: with the intruder a candidate,
	// it would get about half of them.
	for range 4 {
		select {
		case <-ownerChecks:
		case <-time.After(10 * time.Second):
			t.Fatal("the owner got no CHECK_TRANSACTION_STATE")
		}
	}
	if n := len(intruder); n != 0 {
		t.Fatalf("the intruder got %d checks with the half message's body", n)
	}
}
