package route

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
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

// TestRegisterBrokerSkipsBadTopics: a registration whose topic table holds a bad name (as key
// or as topicName) registers the broker and its valid topics, leaves the bad one out of every
// route and topic list, and answers SUCCESS with a bounded remark naming it; a 127-byte topic
// is registered.
func TestRegisterBrokerSkipsBadTopics(t *testing.T) {
	long := strings.Repeat("t", 127)
	for name, bad := range badTopics {
		for _, compress := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/compress=%v", name, compress), func(t *testing.T) {
				ns, _ := newTestNameServer(t, Options{})
				register(t, ns, newFakeChannel("10.0.0.1:50001"), brokerA0)
				b := brokerB0
				b.compress = compress
				b.topics = append([]TopicConfig{topic(bad, 4, 6), topic(long, 2, 6)}, b.topics...)
				resp := call(t, ns, newFakeChannel("10.0.0.3:50001"), b.request())
				if resp.Code != remoting.Success {
					t.Fatalf("code %d remark %q, want SUCCESS", resp.Code, resp.Remark)
				}
				if !strings.Contains(resp.Remark, "1 topic(s) with an invalid name left out") ||
					!utf8.ValidString(resp.Remark) || len(resp.Remark) > 512 {
					t.Errorf("remark %q", resp.Remark)
				}
				want := []string{"T1", "T2", "TBW102", long}
				if diff := cmp.Diff(want, ns.Topics()); diff != "" {
					t.Errorf("topics (-want +got):\n%s", diff)
				}
				routeBody(t, ns, "T2", remoting.Success)
				routeBody(t, ns, long, remoting.Success)
				if _, ok := ns.table.topicRoute(bad); ok {
					t.Errorf("the bad topic has a route")
				}
				if _, ok := ns.ClusterInfo().BrokerAddrTable["broker-b"]; !ok {
					t.Errorf("broker-b not registered: %+v", ns.ClusterInfo().BrokerAddrTable)
				}
			})
		}
	}
	t.Run("bad topicName under a good key", func(t *testing.T) {
		ns, _ := newTestNameServer(t, Options{})
		req := BuildRegisterBroker(&RegisterBrokerRequest{ClusterName: "c", BrokerName: "b", BrokerAddr: "10.0.0.9:10911",
			Body: RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
				TopicConfigTable: map[string]TopicConfig{"Good": topic("../x", 1, 6), "T": topic("T", 1, 6)}}}})
		if resp := call(t, ns, newFakeChannel("10.0.0.9:1"), req); resp.Code != remoting.Success {
			t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
		}
		if diff := cmp.Diff([]string{"T"}, ns.Topics()); diff != "" {
			t.Errorf("topics (-want +got):\n%s", diff)
		}
	})
}

// TestRegisterBrokerJavaHostName registers what an Apache broker sends by default: its broker
// name is the host name (dots), and it registers its broker and cluster names as topics. The
// broker and its other topics are served; the dotted topic is not.
func TestRegisterBrokerJavaHostName(t *testing.T) {
	var logs bytes.Buffer
	l := zerolog.New(&logs)
	ns, _ := newTestNameServer(t, Options{Logger: &l})
	const host = "mq-01.prod.example.com"
	b := brokerSpec{cluster: "DefaultCluster", name: host, addr: "10.0.0.7:10911", id: 0, version: v1,
		topics: []TopicConfig{topic(host, 1, 7), topic("DefaultCluster", 16, 7), topic("TBW102", 8, 7),
			topic("Orders", 4, 6), topic("a.b", 1, 6)}}
	for _, compress := range []bool{false, true} {
		b.compress = compress
		b.version.Counter++ // a new version: the topic table is read again
		resp := call(t, ns, newFakeChannel("10.0.0.7:50001"), b.request())
		if resp.Code != remoting.Success {
			t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
		}
		if !strings.Contains(resp.Remark, "2 topic(s)") || !strings.Contains(resp.Remark, `"a.b"`) {
			t.Errorf("remark %q does not name the first bad topic", resp.Remark)
		}
	}
	if diff := cmp.Diff([]string{"DefaultCluster", "Orders", "TBW102"}, ns.Topics()); diff != "" {
		t.Errorf("topics (-want +got):\n%s", diff)
	}
	r, err := DecodeTopicRouteData([]byte(routeBody(t, ns, "Orders", remoting.Success)))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.BrokerDatas) != 1 || r.BrokerDatas[0].BrokerName != host || r.BrokerDatas[0].MasterAddr() != b.addr {
		t.Errorf("route of Orders: %+v", r.BrokerDatas)
	}
	// Two flawed registrations within the rate limit's period: one warning, naming the broker
	// and the least bad name, quoted.
	var warns []map[string]any
	for line := range strings.Lines(logs.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["level"] == "warn" {
			warns = append(warns, m)
		}
	}
	if len(warns) != 1 {
		t.Fatalf("%d warnings, want 1: %v", len(warns), warns)
	}
	if w := warns[0]; w["broker"] != host || w["first_bad"] != `"a.b"` || w["skipped"] != float64(2) ||
		w["component"] != "route" {
		t.Errorf("warning %v", w)
	}
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
