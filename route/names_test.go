package route

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// badTopics are names no route may carry, with what makes each bad.
var badTopics = map[string]string{
	"slash":        "a/b",
	"dotdot":       "..",
	"traversal":    "../../../../x/pwn",
	"at":           "T@g",
	"128 bytes":    strings.Repeat("t", 128),
	"invalid utf8": "T\xff\xfe",
}

// TestRegisterBrokerRefusesBadTopic: a registration whose topic table holds one bad name is
// refused as a whole (SYSTEM_ERROR naming the table) and leaves the route table as it was;
// a 127-byte topic is accepted.
func TestRegisterBrokerRefusesBadTopic(t *testing.T) {
	ns, _ := newTestNameServer(t, Options{})
	register(t, ns, newFakeChannel("10.0.0.1:50001"), brokerA0)
	before := ns.Topics()
	for name, bad := range badTopics {
		for _, compress := range []bool{false, true} {
			t.Run(name, func(t *testing.T) {
				b := brokerB0
				b.compress = compress
				b.topics = append([]TopicConfig{topic(bad, 4, 6)}, b.topics...)
				resp := call(t, ns, newFakeChannel("10.0.0.3:50001"), b.request())
				if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "topicConfigTable") {
					t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
				}
				if !utf8.ValidString(resp.Remark) || len(resp.Remark) > 512 {
					t.Errorf("remark %q", resp.Remark)
				}
				if diff := cmp.Diff(before, ns.Topics()); diff != "" {
					t.Errorf("topics changed (-before +after):\n%s", diff)
				}
				if len(ns.ClusterInfo().BrokerAddrTable) != 1 {
					t.Errorf("refused broker registered: %+v", ns.ClusterInfo().BrokerAddrTable)
				}
			})
		}
	}
	long := strings.Repeat("t", 127)
	b := brokerB0
	b.topics = append([]TopicConfig{topic(long, 4, 6)}, b.topics...)
	register(t, ns, newFakeChannel("10.0.0.3:50001"), b)
	routeBody(t, ns, long, remoting.Success)
}

func TestTopicRequestsRefuseBadNames(t *testing.T) {
	ns, _ := newTestNameServer(t, Options{})
	register(t, ns, newFakeChannel("10.0.0.1:50001"), brokerA0)
	before := ns.Topics()
	ch := newFakeChannel("admin:1")
	for name, bad := range badTopics {
		t.Run(name, func(t *testing.T) {
			resp := call(t, ns, ch, BuildGetRouteInfo(bad))
			if resp.Code != remoting.TopicNotExist || !strings.HasPrefix(resp.Remark, "topic: ") {
				t.Errorf("route: code %d remark %q", resp.Code, resp.Remark)
			}
			resp = call(t, ns, ch, BuildDeleteTopic(bad))
			if resp.Code != remoting.SystemError || !strings.HasPrefix(resp.Remark, "topic: ") {
				t.Errorf("delete: code %d remark %q", resp.Code, resp.Remark)
			}
			body := (&TopicRouteData{QueueDatas: []QueueData{{BrokerName: "broker-a", ReadQueueNums: 1,
				WriteQueueNums: 1, Perm: 6}}}).Encode()
			resp = call(t, ns, ch, remoting.NewRequest(remoting.RegisterTopicInNamesrv,
				remoting.EncodeHeader(&protocol.RegisterTopicRequestHeader{Topic: bad}), body))
			if resp.Code != remoting.SystemError || !strings.HasPrefix(resp.Remark, "topic: ") {
				t.Errorf("register topic: code %d remark %q", resp.Code, resp.Remark)
			}
			if !utf8.ValidString(resp.Remark) {
				t.Errorf("remark is not valid UTF-8: %q", resp.Remark)
			}
		})
	}
	if diff := cmp.Diff(before, ns.Topics()); diff != "" {
		t.Errorf("topics changed (-before +after):\n%s", diff)
	}
}

// TestKVConfigBounds: namespaces and keys are bounded, values too, and text JSON would change
// (invalid UTF-8) is refused; nothing refused reaches the table or the file, and a huge key
// does not come back as a huge remark.
func TestKVConfigBounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	ns, _ := newTestNameServer(t, Options{KVConfigPath: path})
	ch := newFakeChannel("admin:1")
	put := func(namespace, key, value string) *remoting.Command {
		return call(t, ns, ch, remoting.NewRequest(remoting.PutKVConfig, remoting.EncodeHeader(
			&protocol.PutKVConfigRequestHeader{Namespace: namespace, Key: key, Value: value}), nil))
	}
	if resp := put("ns", strings.Repeat("k", maxKVNameBytes), strings.Repeat("v", maxKVValueBytes)); resp.Code != remoting.Success {
		t.Fatalf("put at the limits: %d %s", resp.Code, resp.Remark)
	}
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("k", 1<<20)
	cases := []struct{ name, ns, key, value, field string }{
		{"namespace too long", strings.Repeat("n", maxKVNameBytes+1), "k", "v", "<namespace>"},
		{"key too long", "ns", huge, "v", "<key>"},
		{"value too long", "ns", "k", strings.Repeat("v", maxKVValueBytes+1), "<value>"},
		{"namespace invalid utf8", "ns\xff", "k", "v", "<namespace>"},
		{"key invalid utf8", "ns", "k\xc3", "v", "<key>"},
		{"value invalid utf8", "ns", "k", "v\xff", "<value>"},
		{"order topic key", NamespaceOrderTopicConfig, "../x", "broker-a:4", "key: topic"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := put(c.ns, c.key, c.value)
			if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, c.field) {
				t.Errorf("code %d remark %q", resp.Code, resp.Remark)
			}
			if !utf8.ValidString(resp.Remark) || len(resp.Remark) > 512 {
				t.Errorf("remark of %d bytes: %.200q", len(resp.Remark), resp.Remark)
			}
		})
	}
	get := call(t, ns, ch, remoting.NewRequest(remoting.GetKVConfig, remoting.EncodeHeader(
		&protocol.GetKVConfigRequestHeader{Namespace: "ns", Key: huge}), nil))
	if get.Code != remoting.SystemError || len(get.Remark) > 512 {
		t.Errorf("get with a 1 MiB key: code %d, remark of %d bytes", get.Code, len(get.Remark))
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != string(saved) {
		t.Errorf("kv file changed by refused puts (err %v)", err)
	}
	if kv, _ := ns.kv.list("ns"); len(kv) != 1 {
		t.Errorf("namespace holds %d keys, want 1", len(kv))
	}
}
