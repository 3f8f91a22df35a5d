package acl

import (
	"strings"
	"testing"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
)

// Accounts of the read tests.
var (
	// narrow reads payments and the shipping group, nothing by default.
	narrow = remoting.Credentials{AccessKey: "narrow01", SecretKey: "narrow-secret"}
	// wide reads every topic but secrets by default, and no group holds anything from it.
	wide = remoting.Credentials{AccessKey: "wide0001", SecretKey: "wide-secret"}
)

func readChecker(t *testing.T) *Checker {
	t.Helper()
	cfg := &Config{
		GlobalWhiteRemoteAddresses: []string{"10.20.30.*"},
		Accounts: []Account{
			{AccessKey: narrow.AccessKey, SecretKey: narrow.SecretKey, WhiteRemoteAddress: "192.168.7.*",
				TopicPerms: []string{"payments=SUB", "audit=PUB"}, GroupPerms: []string{"shipping=SUB", "billing=DENY"}},
			{AccessKey: wide.AccessKey, SecretKey: wide.SecretKey, DefaultTopicPerm: "SUB", DefaultGroupPerm: "SUB",
				TopicPerms: []string{"secrets=DENY"}},
			{AccessKey: operator.AccessKey, SecretKey: operator.SecretKey, Admin: true},
			{AccessKey: scoped.AccessKey, SecretKey: scoped.SecretKey, Admin: true, TopicPerms: []string{"x=SUB"}},
		},
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// view is a VIEW_MESSAGE_BY_ID signed by c: it names no topic at all.
func view(c remoting.Credentials) *remoting.Command {
	return signed(c, remoting.ViewMessageByID, map[string]string{"offset": "0"}, nil)
}

// CheckRead decides on the topic of the message read, whatever the request named: SUB on it,
// a retry topic standing for its group, and admin for a topic holding others' messages.
func TestCheckRead(t *testing.T) {
	c := readChecker(t)
	cases := []struct {
		name   string
		remote string
		req    *remoting.Command
		topic  string
		refuse string // "" allowed, else a part of the remark
	}{
		{"SUB topic", elsewhere, view(narrow), "payments", ""},
		{"topic not listed, default DENY", elsewhere, view(narrow), "orders", "AccessKey=narrow01 has no SUB permission on topic orders"},
		{"PUB only", elsewhere, view(narrow), "audit", "AccessKey=narrow01 has no SUB permission on topic audit"},
		{"retry topic of a SUB group", elsewhere, view(narrow), "%RETRY%shipping", ""},
		{"retry topic of a DENY group", elsewhere, view(narrow), "%RETRY%billing", "no SUB permission on group billing"},
		{"dead-letter topic is a topic", elsewhere, view(narrow), "%DLQ%shipping", "no SUB permission on topic %DLQ%shipping"},
		{"default SUB", elsewhere, view(wide), "anything", ""},
		{"default SUB, topic DENY", elsewhere, view(wide), "secrets", "AccessKey=wide0001 has no SUB permission on topic secrets"},
		{"schedule topic needs admin", elsewhere, view(wide), names.TopicSchedule, "AccessKey=wide0001 needs admin to read topic SCHEDULE_TOPIC_XXXX"},
		{"timer topic needs admin", elsewhere, view(wide), names.TopicTimer, "needs admin to read topic rmq_sys_wheel_timer"},
		{"half topic needs admin", elsewhere, view(wide), names.TopicTransHalf, "needs admin"},
		{"half messages checked too often", elsewhere, view(wide), names.TopicTransCheckMaxTime, "needs admin"},
		{"the trace topic is a topic", elsewhere, view(wide), names.TopicTrace, ""},
		{"admin reads anything", elsewhere, view(operator), "secrets", ""},
		{"admin reads held messages", elsewhere, view(operator), names.TopicSchedule, ""},
		{"scoped admin, its topic", elsewhere, view(scoped), "x", ""},
		{"scoped admin, another topic", elsewhere, view(scoped), "y", "AccessKey=scopedAdmin has no SUB permission on topic y"},
		{"scoped admin, held topic: its perms", elsewhere, view(scoped), names.TopicSchedule, "no SUB permission on topic SCHEDULE_TOPIC_XXXX"},
		{"global white", "10.20.30.4:1", unsigned(remoting.ViewMessageByID, nil), "secrets", ""},
		{"account white", "192.168.7.9:1", withoutSignature(view(narrow)), "orders", ""},
		{"unsigned", elsewhere, unsigned(remoting.ViewMessageByID, map[string]string{"offset": "0"}), "payments", "no AccessKey: the request is not signed"},
		{"account gone since Check", elsewhere, view(remoting.Credentials{AccessKey: "removed01", SecretKey: "whatever1"}), "payments", "no account AccessKey=removed01"},
		{"no topic", elsewhere, view(wide), "", "may not read a message without a topic"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.CheckRead(tc.remote, tc.req, tc.topic)
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
		})
	}
}

// Requests that name a topic holding other topics' messages need admin before the processor
// runs; CONSUME_MESSAGE_DIRECTLY needs SUB on the group and on the topic it names.
func TestCheckReadsBeforeProcessing(t *testing.T) {
	c := readChecker(t)
	pull := func(cr remoting.Credentials, topic, group string) *remoting.Command {
		return signed(cr, remoting.PullMessage, map[string]string{"topic": topic, "consumerGroup": group}, nil)
	}
	direct := func(cr remoting.Credentials, ext map[string]string) *remoting.Command {
		return signed(cr, remoting.ConsumeMessageDirectly, ext, nil)
	}
	cases := []struct {
		name   string
		req    *remoting.Command
		refuse string
	}{
		{"pull schedule topic, default SUB", pull(wide, names.TopicSchedule, "g"), "AccessKey=wide0001 needs admin to read topic SCHEDULE_TOPIC_XXXX: it holds the messages of other topics"},
		{"pull half topic", pull(wide, names.TopicTransHalf, "g"), "needs admin to read topic RMQ_SYS_TRANS_HALF_TOPIC"},
		{"pull timer topic", pull(wide, names.TopicTimer, "g"), "needs admin"},
		{"query schedule topic", signed(wide, remoting.QueryMessage, map[string]string{"topic": names.TopicSchedule, "key": "k"}, nil), "needs admin"},
		{"subscribe to the timer topic", heartbeat(wide, map[string][]string{"g": {names.TopicTimer}}), "needs admin"},
		{"pull an ordinary topic", pull(wide, "orders", "g"), ""},
		{"admin pulls the schedule topic", pull(operator, names.TopicSchedule, "g"), ""},
		{"scoped admin: held rule passed, perms still apply", pull(scoped, names.TopicSchedule, "g"), "no SUB permission on topic SCHEDULE_TOPIC_XXXX"},
		{"consume directly", direct(narrow, map[string]string{"consumerGroup": "shipping", "topic": "payments", "msgId": "x"}), ""},
		{"consume directly without a topic", direct(narrow, map[string]string{"consumerGroup": "shipping", "msgId": "x"}), ""},
		{"consume directly, DENY group", direct(narrow, map[string]string{"consumerGroup": "billing", "msgId": "x"}), "no SUB permission on group billing"},
		{"consume directly, topic not readable", direct(narrow, map[string]string{"consumerGroup": "shipping", "topic": "orders"}), "no SUB permission on topic orders"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.Check(elsewhere, tc.req)
			switch {
			case tc.refuse == "" && resp != nil:
				t.Fatalf("refused: %q", resp.Remark)
			case tc.refuse != "" && resp == nil:
				t.Fatalf("allowed, want a refusal saying %q", tc.refuse)
			case tc.refuse != "" && (resp.Code != remoting.NoPermission || !strings.Contains(resp.Remark, tc.refuse)):
				t.Fatalf("%d %q, want NO_PERMISSION saying %q", resp.Code, resp.Remark, tc.refuse)
			}
		})
	}
}

// readmitted is a channel the dispatcher's guard does not check.
type readmitted struct{ peer }

func (readmitted) Readmitted() bool { return true }

func TestGuardCheckRead(t *testing.T) {
	var g Guard
	req := view(narrow)
	if resp := g.CheckRead(peer{addr: elsewhere}, req, "orders"); resp != nil {
		t.Fatalf("Guard without ACL refused a read: %q", resp.Remark)
	}
	g.Store(readChecker(t))
	if resp := g.CheckRead(peer{addr: elsewhere}, req, "payments"); resp != nil {
		t.Fatalf("allowed read refused: %q", resp.Remark)
	}
	if resp := g.CheckRead(peer{addr: elsewhere}, req, "orders"); resp == nil || resp.Code != remoting.NoPermission {
		t.Fatalf("read of a DENY topic: %+v", resp)
	}
	if n := g.Refused(); n != 1 {
		t.Errorf("Refused() = %d after one refused read, want 1", n)
	}
	if resp := g.CheckRead(readmitted{peer{addr: elsewhere}}, unsigned(remoting.ViewMessageByID, nil), "orders"); resp != nil {
		t.Fatalf("a trusted channel's read refused: %q", resp.Remark)
	}
}
