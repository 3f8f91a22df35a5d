package admin

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/acl"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/stats"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// fakeACL is an ACLAdmin over a configuration in memory, with a check like the node's.
type fakeACL struct {
	mu      sync.Mutex
	cfg     acl.Config
	counter int64
	file    string
}

func (f *fakeACL) Snapshot() (acl.Config, int64, time.Time, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cfg, f.counter, time.UnixMilli(1_700_000_000_000), f.file
}

func (f *fakeACL) Update(change func(*acl.Config) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	cfg := f.cfg
	cfg.Accounts = append([]acl.Account(nil), f.cfg.Accounts...)
	if err := change(&cfg); err != nil {
		return err
	}
	for _, a := range cfg.Accounts {
		if len(a.SecretKey) <= 6 {
			return errors.New("secretKey must be longer than 6 characters")
		}
	}
	f.cfg = cfg
	f.counter++
	return nil
}

func startACL(t *testing.T, f ACLAdmin) *env {
	t.Helper()
	e := &env{}
	e.Broker = brokertest.Start(t, brokertest.Config{Attach: func(b *broker.Broker) error {
		e.stats = stats.New(b)
		b.Attach(e.stats)
		s, err := New(b, Deps{Stats: e.stats, ACL: f})
		if err != nil {
			return err
		}
		b.Attach(s)
		return nil
	}})
	return e
}

// TestAdminACLAccounts: an account is created, updated field by field as RocketMQ merges an
// update (a field left out keeps its value, admin is always set), refused when the result does
// not check, and deleted; the version and the configuration read back say so.
func TestAdminACLAccounts(t *testing.T) {
	f := &fakeACL{cfg: acl.Config{Accounts: []acl.Account{{AccessKey: "rootAdmin", SecretKey: "rootSecret", Admin: true}}},
		counter: 1, file: "/etc/mq/plain_acl.yml"}
	tb := startACL(t, f)
	// The handlers change f on the broker's goroutines; reads go through its lock.
	cfg := func() acl.Config { c, _, _, _ := f.Snapshot(); return c }
	call := func(code int32, ext map[string]string) *remoting.Command {
		return brokertest.Invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(code, ext, nil))
	}
	wantOK(t, call(remoting.UpdateAndCreateACLConfig, map[string]string{"accessKey": "newUser1", "secretKey": "newSecret1",
		"admin": "false", "defaultTopicPerm": "PUB", "topicPerms": "T1=SUB, T2=DENY", "whiteRemoteAddress": "10.0.0.*"}))
	want := acl.Account{AccessKey: "newUser1", SecretKey: "newSecret1", DefaultTopicPerm: "PUB",
		TopicPerms: []string{"T1=SUB", "T2=DENY"}, WhiteRemoteAddress: "10.0.0.*"}
	if got := cfg().Accounts[1]; !reflect.DeepEqual(got, want) {
		t.Fatalf("created %+v, want %+v", got, want)
	}
	// An update naming only some fields.
	wantOK(t, call(remoting.UpdateAndCreateACLConfig, map[string]string{"accessKey": "newUser1", "admin": "true",
		"groupPerms": "G1=SUB"}))
	want.Admin, want.GroupPerms = true, []string{"G1=SUB"}
	if got := cfg().Accounts[1]; !reflect.DeepEqual(got, want) {
		t.Fatalf("updated %+v, want %+v", got, want)
	}
	for _, ext := range []map[string]string{
		{"accessKey": "other12"},                         // a new account without a secret
		{"accessKey": "newUser1", "secretKey": "short1"}, // fails the check
	} {
		if resp := call(remoting.UpdateAndCreateACLConfig, ext); resp.Code != aclUpdateFailed ||
			!strings.Contains(resp.Remark, "The accesskey["+ext["accessKey"]+"] corresponding to accessConfig has been updated failed") {
			t.Errorf("%v: %d %q", ext, resp.Code, resp.Remark)
		}
	}
	if len(cfg().Accounts) != 2 || cfg().Accounts[1].SecretKey != "newSecret1" {
		t.Fatalf("a refused update changed the ACL: %+v", f.cfg)
	}

	resp := call(remoting.GetBrokerClusterACLInfo, nil)
	wantOK(t, resp)
	var h protocol.GetBrokerAclConfigResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		t.Fatal(err)
	}
	if h.Version != `{"timestamp":1700000000000,"counter":3}` || h.AllAclFileVersion != `{"/etc/mq/plain_acl.yml":{"timestamp":1700000000000,"counter":3}}` ||
		h.BrokerAddr != tb.Options().BrokerAddr || h.BrokerName == "" || h.ClusterName == "" {
		t.Errorf("ACL version header %+v", h)
	}

	wantOK(t, call(remoting.UpdateGlobalWhiteAddrsConfig, map[string]string{"globalWhiteAddrs": "10.1.*,10.2.*"}))
	wantOK(t, call(remoting.UpdateGlobalWhiteAddrsConfig, map[string]string{"globalWhiteAddrs": "10.1.*,10.3.*",
		"aclFileFullPath": "/etc/mq/plain_acl.yml"}))
	if resp := call(remoting.UpdateGlobalWhiteAddrsConfig, map[string]string{"globalWhiteAddrs": "*", "aclFileFullPath": "/tmp/x.yml"}); resp.Code != aclGlobalWhiteUpdateFailed ||
		!strings.Contains(resp.Remark, "not this node's ACL file") {
		t.Errorf("another file: %d %q", resp.Code, resp.Remark)
	}
	if got := cfg().GlobalWhiteRemoteAddresses; !reflect.DeepEqual(got, []string{"10.1.*", "10.3.*"}) {
		t.Errorf("global white addresses %v", got)
	}

	resp = call(remoting.GetBrokerClusterACLConfig, nil)
	wantOK(t, resp)
	var body protocol.AclConfigBody
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.PlainAccessConfigs) != 2 || body.PlainAccessConfigs[1].SecretKey != "newSecret1" ||
		!reflect.DeepEqual(body.PlainAccessConfigs[0].TopicPerms, []string{}) || len(body.GlobalWhiteAddrs) != 2 {
		t.Errorf("ACL config body %s", resp.Body)
	}

	wantOK(t, call(remoting.DeleteACLConfig, map[string]string{"accessKey": "newUser1"}))
	if resp := call(remoting.DeleteACLConfig, map[string]string{"accessKey": "newUser1"}); resp.Code != aclDeleteFailed ||
		!strings.Contains(resp.Remark, "has been deleted failed") {
		t.Errorf("deleting it again: %d %q", resp.Code, resp.Remark)
	}
	if len(cfg().Accounts) != 1 {
		t.Errorf("after the delete: %+v", cfg().Accounts)
	}
	if resp := call(remoting.DeleteACLConfig, nil); resp.Code == remoting.Success {
		t.Error("DELETE_ACL_CONFIG without accessKey answered SUCCESS")
	}
}

// TestAdminACLOff: with ACL off every ACL code says so and nothing is turned on.
func TestAdminACLOff(t *testing.T) {
	tb := start(t, nil, nil)
	for _, code := range []int32{remoting.UpdateAndCreateACLConfig, remoting.DeleteACLConfig, remoting.GetBrokerClusterACLInfo,
		remoting.UpdateGlobalWhiteAddrsConfig, remoting.GetBrokerClusterACLConfig} {
		resp := brokertest.Invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(code, map[string]string{"accessKey": "someUser1",
			"secretKey": "someSecret1", "globalWhiteAddrs": "*"}, nil))
		if resp.Code == remoting.Success || !strings.Contains(resp.Remark, "ACL is off on this node") {
			t.Errorf("code %d: %d %q", code, resp.Code, resp.Remark)
		}
	}
}
